// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

namespace sg {

/// A fixed-size pool of worker threads (a Boost.Asio thread pool) that runs the nodes of a
/// superstep concurrently. The thread that drives a run also runs tasks (while it streams, it
/// starts a thread for a task the pool does not start), so a pool of any size, even one busy
/// with other runs, never deadlocks a run. Thread-safe; the destructor waits for posted work to
/// finish.
class ThreadPool {
 public:
  /// A pool of `threads` workers (at least 1).
  explicit ThreadPool(std::size_t threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// The number of worker threads.
  [[nodiscard]] std::size_t size() const noexcept;

  /// Runs `work` on a worker thread. `work` must not throw (exceptions terminate).
  void post(std::function<void()> work);

  /// The process-wide pool used by graphs compiled without one: one worker per hardware thread
  /// (at least 2), created on first use.
  [[nodiscard]] static std::shared_ptr<ThreadPool> shared();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sg
