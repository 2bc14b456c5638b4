// SPDX-License-Identifier: MIT
#include "async_writer.hpp"

#include <iterator>
#include <limits>
#include <utility>

namespace sg::detail {

struct AsyncWriter::State {
  explicit State(Checkpointer& s) : saver(s) {}
  Checkpointer& saver;
  std::mutex mu;
  std::condition_variable idle;
  std::deque<Job> jobs;
  std::exception_ptr error;
  std::chrono::steady_clock::time_point oldest;  // when the first queued job came
  bool running = false;                          // a thread is draining
  bool scheduled = false;                        // a drain task is posted and has not started
  std::size_t queued_puts = 0;                   // checkpoints in `jobs`
  std::shared_ptr<const RunTrace> trace;         // set before the first job

  /// Runs the queued jobs unless another thread already does: a posted drain those queued when
  /// it starts (later ones wait until they are due), the caller's until none is left.
  void drain(bool posted) noexcept {
    std::unique_lock lock(mu);
    if (posted) scheduled = false;
    if (running) return;
    running = true;
    std::size_t budget = posted ? jobs.size() : std::numeric_limits<std::size_t>::max();
    while (!jobs.empty() && budget > 0) {
      // Consecutive checkpoints go in one put_all().
      std::vector<CheckpointPut> puts;
      std::function<void()> work;
      while (!jobs.empty() && budget > 0 && jobs.front().index() == 0) {
        auto& more = std::get<0>(jobs.front());
        if (puts.empty()) {
          puts = std::move(more);
          puts.reserve(queued_puts);
        } else {
          std::move(more.begin(), more.end(), std::back_inserter(puts));
        }
        jobs.pop_front();
        --budget;
      }
      if (puts.empty()) {
        work = std::move(std::get<1>(jobs.front()));
        jobs.pop_front();
        --budget;
      }
      queued_puts -= puts.size();
      lock.unlock();
      std::exception_ptr failure;
      try {
        if (!puts.empty()) {
          put_checkpoints(saver, puts, trace.get());
        } else {
          work();
        }
      } catch (...) {
        failure = std::current_exception();
      }
      lock.lock();
      if (failure && !error) {
        error = failure;
        jobs.clear();
        queued_puts = 0;
      }
    }
    running = false;
    idle.notify_all();
  }

  void drain_and_wait() noexcept {
    std::unique_lock lock(mu);
    while (true) {
      lock.unlock();
      drain(false);
      lock.lock();
      idle.wait(lock, [&] { return !running; });
      if (jobs.empty()) return;
    }
  }
};

AsyncWriter::AsyncWriter(ThreadPool& pool, Checkpointer& saver)
    : pool_(pool), state_(std::make_shared<State>(saver)) {}

AsyncWriter::~AsyncWriter() {
  state_->drain_and_wait();
}

void AsyncWriter::submit(std::vector<CheckpointPut> puts) {
  enqueue(Job{std::move(puts)});
}

void AsyncWriter::submit(std::function<void()> work) {
  enqueue(Job{std::move(work)});
}

void AsyncWriter::start_if_due(bool long_step) {
  enum class Do { nothing, post, drain_here, wait_then_drain } action = Do::nothing;
  {
    std::lock_guard lock(state_->mu);
    const bool busy = state_->running || state_->scheduled;
    const bool full = state_->queued_puts >= kAsyncWriteBatch;
    if (state_->jobs.empty()) {
      action = Do::nothing;
    } else if (busy) {
      action = !long_step && full ? Do::wait_then_drain : Do::nothing;
    } else if (long_step) {
      action = Do::post;
      state_->scheduled = true;
    } else if (full || std::chrono::steady_clock::now() - state_->oldest >= kAsyncWriteDelay) {
      action = Do::drain_here;
    }
  }
  switch (action) {
    case Do::nothing:
      break;
    case Do::post:
      pool_.post([state = state_] { state->drain(true); });
      break;
    case Do::drain_here:
      state_->drain(false);
      break;
    case Do::wait_then_drain:
      state_->drain_and_wait();
      break;
  }
}

void AsyncWriter::set_trace(std::shared_ptr<const RunTrace> trace) {
  std::lock_guard lock(state_->mu);
  state_->trace = std::move(trace);
}

void AsyncWriter::wait() {
  state_->drain_and_wait();
  std::lock_guard lock(state_->mu);
  if (auto error = std::exchange(state_->error, nullptr)) std::rethrow_exception(error);
}

void AsyncWriter::enqueue(Job job) {
  std::lock_guard lock(state_->mu);
  if (state_->error) return;  // the first failure stops the queue; wait() reports it
  if (state_->jobs.empty()) state_->oldest = std::chrono::steady_clock::now();
  if (job.index() == 0) state_->queued_puts += std::get<0>(job).size();
  state_->jobs.push_back(std::move(job));
}

}  // namespace sg::detail
