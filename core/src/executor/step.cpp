// SPDX-License-Identifier: MIT
// Running a superstep's tasks: on the calling thread, or on the pool with the calling thread
// helping, or delivering stream events; failures in task order.

#include <stategraph/core/detail/executor_core.hpp>
#include <stategraph/core/error.hpp>
#include <stategraph/core/thread_pool.hpp>

#include <algorithm>
#include <thread>

#include "async_writer.hpp"
#include "loop_parts.hpp"

namespace sg::detail {

namespace {

/// Claims the batch's tasks one at a time until none is left, running each with `run`.
template <class Run>
void claim_all(Batch& batch, Run&& run) {
  for (std::size_t k = batch.next.fetch_add(1); k < batch.count; k = batch.next.fetch_add(1)) {
    run(k);
  }
}

}  // namespace

bool ExecutorCore::is_timed(const Task& t) const {
  return graph_->node_options[static_cast<std::size_t>(t.node)].timeout.count() > 0;
}

/// Runs one task to completion (with its retries) on the calling thread.
void ExecutorCore::run_task(Task& t) {
  start_node_span(t.info);
  const NodeOptions& options = graph_->node_options[static_cast<std::size_t>(t.node)];
  std::optional<std::string> cache_key;
  if (options.cache_policy && graph_->options.cache) {
    cache_key = cache_key_of(t, *options.cache_policy);
    if (take_cached(t, *cache_key)) return;
  }
  for (int attempt = 1;; ++attempt) {
    t.info.attempt = attempt;
    t.info.interrupts_seen = 0;
    t.info.pushed.clear();
    t.info.more_updates.reset();
    t.info.subgraph_calls = 0;
    try {
      Context ctx(*shared_, t.info);
      CurrentContextGuard guard(&ctx);
      call_node(t, ctx);
      t.ran = true;
      if (cache_key) put_cached(t, *cache_key, *options.cache_policy);
      return;
    } catch (GraphInterrupt& gi) {
      t.interrupts = std::move(gi.interrupts);
      t.interrupted = true;
      t.ran = true;
      return;
    } catch (ParentCommand& pc) {
      // A subgraph run by this node sent a Command to its parent: this node's output.
      t.ran = true;
      if (take_parent_command(t, pc)) return;
      t.error = std::make_exception_ptr(
          Error(errc::kInvalidRun,
                "a Command to the parent graph with an update needs the parent's state type"));
      shared_->step_failed.store(true);
      return;
    } catch (...) {
      auto error = std::current_exception();
      if (!should_retry(options.retry, attempt, error)) {
        t.error = error;
        t.ran = true;
        shared_->step_failed.store(true);
        return;
      }
      report_retry(t.info, error, attempt + 1);
      if (shared_->cfg.cancellation.wait_for(retry_interval(*options.retry, attempt))) {
        t.error = std::make_exception_ptr(CancelledError());
        t.ran = true;
        return;
      }
    }
  }
}

/// Whether a task of this step may run for kAsyncWriteDelay or more (or was never timed).
bool ExecutorCore::step_may_be_long() const {
  constexpr auto kLong =
      std::chrono::duration_cast<std::chrono::nanoseconds>(kAsyncWriteDelay).count();
  return std::any_of(tasks_.begin(), tasks_.end(), [&](const Task& t) {
    if (t.restored) return false;
    const std::uint32_t cost =
        graph_->cost_ns[static_cast<std::size_t>(t.node)].load(std::memory_order_relaxed);
    return cost == kUnknownCost || cost >= kLong;
  });
}

/// Folds a run time of `node` into its moving average.
void ExecutorCore::record_cost(int node, std::chrono::steady_clock::duration took) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(took).count();
  auto& cost = graph_->cost_ns[static_cast<std::size_t>(node)];
  const std::uint32_t sample =
      static_cast<std::uint32_t>(std::min<std::int64_t>(ns, kUnknownCost - 1));
  const std::uint32_t old = cost.load(std::memory_order_relaxed);
  cost.store(old == kUnknownCost ? sample : old - old / 4 + sample / 4, std::memory_order_relaxed);
}

void ExecutorCore::execute_tasks() {
  begin_tasks();
  if (run_single_task()) return;
  start_batch();
  wait_for_batch(deliver_promptly_ ? batch_.get() : nullptr);
  end_batch();
}

ThreadPool* ExecutorCore::plain_node_pool() const {
  return async_ ? shared_->cfg.plain_node_pool.get() : nullptr;
}

/// Starts the step's tasks: attempts (timed nodes, and coroutine nodes of an asynchronous run)
/// on their own, the others claimed by the pool and by this thread, which runs what it claims
/// (an asynchronous run with a plain_node_pool leaves them all to that pool).
void ExecutorCore::start_batch() {
  claimable_.clear();
  attempts_.clear();
  for (std::size_t i = 0; i < tasks_.size(); ++i) {
    if (tasks_[i].restored) continue;
    if (is_timed(tasks_[i]) || spawns(tasks_[i])) {
      attempts_.emplace_back(i);
    } else {
      claimable_.push_back(i);
    }
  }
  batch_ = std::make_shared<Batch>();
  batch_->count = claimable_.size();
  {
    std::lock_guard lock(shared_->mu);
    shared_->remaining = claimable_.size();
    shared_->finished.clear();
  }
  ThreadPool* const offload = plain_node_pool();
  ThreadPool& pool = offload != nullptr ? *offload : *graph_->pool;
  // Offloaded, every task goes to the pool: this thread runs none.
  const std::size_t self = offload != nullptr ? 0 : 1;
  std::size_t helpers = claimable_.size() < self ? 0 : claimable_.size() - self;
  helpers = std::min(helpers, pool.size());
  if (shared_->cfg.max_concurrency > 0)
    helpers = std::min(helpers, shared_->cfg.max_concurrency - self);
  std::uint64_t predicted_ns = 0;
  for (std::size_t index : claimable_) {
    const std::uint32_t cost = graph_->cost_ns[static_cast<std::size_t>(tasks_[index].node)].load(
        std::memory_order_relaxed);
    predicted_ns += cost == kUnknownCost ? kInlineStepBudgetNs : cost;
  }
  auto post_helpers = [&, batch = batch_] {
    for (std::size_t h = 0; h < helpers; ++h) {
      pool.post([batch, shared = shared_, this] {
        claim_all(*batch, [&](std::size_t k) { run_claimed(k, *shared); });
      });
    }
    helpers = 0;
  };
  // While a stream is read, the calling thread delivers events as tasks finish (LangGraph
  // streams each task's output when it completes) instead of running a task itself; tasks the
  // pool does not start get a thread of their own (a busy pool cannot stall the run). An
  // asynchronous run delivers them when its tasks settle.
  deliver_promptly_ = !async_ && stream_ != nullptr && claimable_.size() > 1;
  if (offload != nullptr) {
    post_helpers();
  } else if (deliver_promptly_) {
    helpers = std::min(claimable_.size(), pool.size());
    if (shared_->cfg.max_concurrency > 0) helpers = std::min(helpers, shared_->cfg.max_concurrency);
    post_helpers();
  } else if (predicted_ns >= kInlineStepBudgetNs) {
    post_helpers();
  }
  for (auto& slot : attempts_) start_attempt(slot, 1);
  const auto began = std::chrono::steady_clock::now();
  if (!deliver_promptly_ && offload == nullptr) {
    claim_all(*batch_, [&](std::size_t k) {
      run_claimed(k, *shared_);
      drain();
      // Tasks turned out slower than predicted: let the pool take the rest.
      if (helpers > 0 && std::chrono::steady_clock::now() - began >
                             std::chrono::nanoseconds(kInlineStepBudgetNs)) {
        post_helpers();
      }
    });
  }
}

bool ExecutorCore::batch_settled(std::chrono::steady_clock::time_point& wake) {
  drain();
  wake = service_timed();
  if (shared_->cfg.cancellation.cancelled()) abandon_timed();
  const bool open =
      std::any_of(attempts_.begin(), attempts_.end(), [](const AttemptSlot& s) { return !s.done; });
  std::lock_guard lock(shared_->mu);
  if (!shared_->deliveries.empty() || !shared_->finished.empty()) {
    wake = std::chrono::steady_clock::now();
    return false;
  }
  return shared_->remaining == 0 && !open;
}

void ExecutorCore::end_batch() {
  batch_.reset();
  if (!attempts_.empty()) release_snapshot();
}

/// Runs the k-th claimable task (any thread) and reports it finished. Once `remaining` drops,
/// the run may end: after that only `shared` (kept alive by the caller) may be touched.
void ExecutorCore::run_claimed(std::size_t k, RunShared& shared) {
  const std::size_t index = claimable_[k];
  if (!shared.cfg.cancellation.cancelled()) {
    const auto began = std::chrono::steady_clock::now();
    run_task(tasks_[index]);
    record_cost(tasks_[index].node, std::chrono::steady_clock::now() - began);
  }
  {
    std::lock_guard lock(shared.mu);
    shared.finished.push_back(index);
    --shared.remaining;
  }
  shared.notify();
}

/// Waits until the batch's claimed tasks and its timed tasks are settled, delivering stream
/// events as they come. Cancellation abandons timed tasks; claimed tasks always finish.
/// `help`: the batch's unclaimed tasks; when the pool has not started one for kHelpAfter, a
/// thread of its own takes them (this thread keeps delivering the others' events).
void ExecutorCore::wait_for_batch(Batch* help) {
  constexpr auto kHelpAfter = std::chrono::milliseconds(2);
  std::size_t last_claimed = help ? help->next.load() : 0;
  std::size_t threads_started = 0;
  auto since = std::chrono::steady_clock::now();
  for (;;) {
    drain();
    auto wake = service_timed();
    if (help) {
      const std::size_t claimed = help->next.load();
      const auto now = std::chrono::steady_clock::now();
      // At most one thread per unclaimed task.
      auto may_start = [&] {
        return claimed < help->count && threads_started < help->count - claimed;
      };
      if (claimed != last_claimed) {
        last_claimed = claimed;
        since = now;
      } else if (may_start() && now - since >= kHelpAfter) {
        // Like a pool helper, it keeps only `batch` and `shared` alive: the run waits for the
        // tasks it claims, and it touches nothing else after the last one.
        std::thread([batch = batch_, shared = shared_, this] {
          claim_all(*batch, [&](std::size_t k) { run_claimed(k, *shared); });
        }).detach();
        ++threads_started;
        since = now;
      }
      if (may_start()) wake = std::min(wake, since + kHelpAfter);
    }
    if (shared_->cfg.cancellation.cancelled()) abandon_timed();
    const bool attempts_open = std::any_of(attempts_.begin(), attempts_.end(),
                                           [](const AttemptSlot& s) { return !s.done; });
    std::unique_lock lock(shared_->mu);
    const bool pending = !shared_->deliveries.empty() || !shared_->finished.empty();
    if (shared_->remaining == 0 && !attempts_open && !pending) return;
    if (pending) continue;
    const std::size_t seen = shared_->timed_finished;
    shared_->cv.wait_until(lock, wake, [&] {
      return !shared_->deliveries.empty() || !shared_->finished.empty() ||
             shared_->timed_finished != seen || (shared_->remaining == 0 && !attempts_open);
    });
  }
}

/// Delivers stream events queued by other threads and the completion of finished tasks
/// (orchestrator thread).
void ExecutorCore::drain() {
  std::vector<std::function<void()>> deliveries;
  std::vector<std::size_t> finished;
  {
    std::lock_guard lock(shared_->mu);
    deliveries.swap(shared_->deliveries);
    shared_->queued.store(false, std::memory_order_relaxed);
    finished.swap(shared_->finished);
  }
  for (auto& d : deliveries) d();
  for (std::size_t i : finished) {
    emit_task_finished(tasks_[i]);
    if (tasks_[i].ran) save_task_outcome(tasks_[i]);
  }
}

/// Cancellation first of all. A task's own failure comes before the cancellations it caused in
/// its siblings (which see Context::cancelled() and may throw CancelledError).
std::optional<std::size_t> ExecutorCore::first_error_now() {
  if (shared_->cfg.cancellation.cancelled()) return tasks_.size();
  std::optional<std::size_t> cancelled;
  for (std::size_t i = 0; i < tasks_.size(); ++i) {
    if (!tasks_[i].error) continue;
    try {
      std::rethrow_exception(tasks_[i].error);
    } catch (const CancelledError&) {
      if (!cancelled) cancelled = i;
      continue;
    } catch (...) {
    }
    return i;
  }
  return cancelled;
}

/// Throws task `index`'s failure: CancelledError, NodeTimeoutError, or NodeError wrapping what
/// the node threw (index == tasks_.size(): the run was cancelled).
void ExecutorCore::raise(std::size_t index) {
  if (index >= tasks_.size()) throw CancelledError();
  const Task& t = tasks_[index];
  try {
    std::rethrow_exception(t.error);
  } catch (const CancelledError&) {
    throw;
  } catch (const NodeTimeoutError&) {
    throw;
  } catch (const std::exception& e) {
    throw NodeError(
        "node '" + name_of(t.node) + "' failed at step " + std::to_string(step_) + ": " + e.what(),
        name_of(t.node), step_);
  } catch (...) {
    throw NodeError("node '" + name_of(t.node) + "' failed at step " + std::to_string(step_) +
                        ": an exception not derived from std::exception",
                    name_of(t.node), step_);
  }
}

std::vector<Interrupt> ExecutorCore::interrupts_of_step() const {
  std::vector<Interrupt> out;
  for (const Task& t : tasks_) out.insert(out.end(), t.interrupts.begin(), t.interrupts.end());
  return out;
}

}  // namespace sg::detail
