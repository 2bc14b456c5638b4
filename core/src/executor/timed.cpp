// SPDX-License-Identifier: MIT
// Retries and node timeouts: a timed attempt runs on a thread of its own, so the run can
// abandon it when it is late.

#include <stategraph/core/detail/executor_core.hpp>
#include <stategraph/core/error.hpp>

#include <algorithm>
#include <random>

namespace sg::detail {

bool should_retry(const std::optional<RetryPolicy>& policy, int attempt, std::exception_ptr error) {
  if (!policy || attempt >= policy->max_attempts) return false;
  try {
    std::rethrow_exception(error);
  } catch (const CancelledError&) {
    return false;
  } catch (const std::exception& e) {
    return policy->retry_on ? policy->retry_on(e) : default_retry_on(e);
  } catch (...) {
    return false;
  }
}

std::chrono::duration<double> retry_interval(const RetryPolicy& policy, int attempt) {
  double seconds = policy.initial_interval.count();
  for (int i = 1; i < attempt; ++i) seconds *= policy.backoff_factor;
  seconds = std::min(seconds, policy.max_interval.count());
  if (policy.jitter) {
    thread_local std::mt19937 rng{std::random_device{}()};
    seconds += std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  }
  return std::chrono::duration<double>(seconds);
}

void ExecutorCore::AttemptSlot::release_worker() {
  if (!worker.joinable()) return;
  int running = 0;
  if (attempt && !attempt->status.compare_exchange_strong(running, 2) &&
      attempt->status.load() == 1) {
    worker.join();
  } else {
    worker.detach();
  }
}

void NodeAttempt::end(std::exception_ptr thrown, RunShared& shared) {
  if (!thrown) {
    returned = true;
  } else {
    try {
      std::rethrow_exception(thrown);
    } catch (GraphInterrupt& gi) {
      interrupts = std::move(gi.interrupts);
      interrupted = true;
    } catch (ParentCommand& pc) {
      if (take_parent_command(pc)) {
        returned = true;
      } else {
        error = std::make_exception_ptr(
            Error(errc::kInvalidRun,
                  "a Command to the parent graph with an update needs the parent's state type"));
      }
    } catch (...) {
      error = std::current_exception();
    }
  }
  int running = 0;
  if (!status.compare_exchange_strong(running, 1)) return;  // abandoned
  {
    std::lock_guard lock(shared.mu);
    ++shared.timed_finished;
  }
  shared.notify();
}

namespace {

/// The body of an attempt's thread: it touches only what it owns.
void run_attempt(const std::shared_ptr<NodeAttempt>& attempt,
                 const std::shared_ptr<RunShared>& shared) {
  std::exception_ptr thrown;
  try {
    Context ctx(*shared, attempt->info);
    CurrentContextGuard guard(&ctx);
    attempt->call(ctx);
  } catch (...) {
    thrown = std::current_exception();
  }
  attempt->end(thrown, *shared);
}

}  // namespace

void ExecutorCore::start_attempt(AttemptSlot& slot, int attempt_no) {
  Task& t = tasks_[slot.task];
  if (attempt_no == 1) start_node_span(t.info);
  std::shared_ptr<NodeAttempt> attempt = make_attempt(t);
  attempt->arg = t.arg;
  attempt->info = t.info;
  attempt->info.attempt = attempt_no;
  if (is_timed(t)) {
    attempt->deadline = std::chrono::steady_clock::now() +
                        graph_->node_options[static_cast<std::size_t>(t.node)].timeout;
  }
  slot.release_worker();
  slot.attempt = attempt;
  slot.attempt_no = attempt_no;
  slot.retry_at.reset();
  if (spawns(t)) {
    spawn_attempt(attempt);
    return;
  }
  // A thread of its own: an abandoned attempt that never returns must not hold a pool thread
  // that other runs need. The attempt keeps the graph alive.
  slot.worker = std::thread([attempt, shared = shared_] { run_attempt(attempt, shared); });
}

/// Settles timed attempts: takes finished results, abandons late ones, schedules retries.
/// Returns the earliest time the orchestrator must look again.
std::chrono::steady_clock::time_point ExecutorCore::service_timed() {
  const auto now = std::chrono::steady_clock::now();
  auto wake = now + std::chrono::milliseconds(50);
  for (auto& slot : attempts_) {
    if (slot.done) continue;
    Task& t = tasks_[slot.task];
    const NodeOptions& options = graph_->node_options[static_cast<std::size_t>(t.node)];
    if (slot.retry_at) {
      if (now >= *slot.retry_at) {
        start_attempt(slot, slot.attempt_no + 1);
      } else {
        wake = std::min(wake, *slot.retry_at);
        continue;
      }
    }
    auto& a = *slot.attempt;
    std::exception_ptr error;
    if (a.status.load() == 1) {
      slot.release_worker();
      if (!a.error) {
        t.interrupts = std::move(a.interrupts);
        t.interrupted = a.interrupted;
        t.info.resume = std::move(a.info.resume);
        t.info.parts = std::move(a.info.parts);
        try {
          take_attempt_output(t, a);
        } catch (...) {
          t.has_output = false;
          t.error = std::current_exception();
          shared_->step_failed.store(true);
        }
        t.ran = true;
        slot.done = true;
        emit_task_finished(t);
        // A coroutine task alone in its step: its writes go with the step's checkpoint, as a
        // task that runs inline.
        save_task_outcome(t, /*with_checkpoint=*/tasks_.size() == 1 && !is_timed(t));
        continue;
      }
      error = a.error;
    } else if (now >= a.deadline) {
      int running = 0;
      if (!a.status.compare_exchange_strong(running, 2)) continue;  // it just finished
      slot.release_worker();
      error = std::make_exception_ptr(NodeTimeoutError(
          "node '" + name_of(t.node) + "' timed out after " +
          std::to_string(options.timeout.count()) + " ms at step " + std::to_string(step_) +
          " (attempt " + std::to_string(slot.attempt_no) + ")"));
    } else {
      wake = std::min(wake, a.deadline);
      continue;
    }
    if (should_retry(options.retry, slot.attempt_no, error) &&
        !shared_->cfg.cancellation.cancelled()) {
      report_retry(t.info, error, slot.attempt_no + 1);
      slot.retry_at = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                retry_interval(*options.retry, slot.attempt_no));
      wake = std::min(wake, *slot.retry_at);
    } else {
      t.error = error;
      t.ran = true;
      slot.done = true;
      shared_->step_failed.store(true);
      emit_task_finished(t);
      save_task_outcome(t);
    }
  }
  return wake;
}

void ExecutorCore::abandon_timed() {
  for (auto& slot : attempts_) {
    // Coroutine nodes without a timeout finish, as tasks on the pool do.
    if (slot.done || !is_timed(tasks_[slot.task])) continue;
    slot.release_worker();
    tasks_[slot.task].error = std::make_exception_ptr(CancelledError());
    slot.done = true;
  }
}

}  // namespace sg::detail
