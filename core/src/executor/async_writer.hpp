// SPDX-License-Identifier: MIT
#pragma once

// The background writer of durability "async". Private to the executor.

#include <stategraph/core/checkpointer.hpp>
#include <stategraph/core/detail/executor_core.hpp>
#include <stategraph/core/thread_pool.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <variant>
#include <vector>

namespace sg::detail {

/// Stores checkpoints and writes in submission order (durability "async"). Jobs queue up until
/// start_if_due() finds them due: before a step that may be long (a model call) they go to the
/// graph's thread pool (one drain task at a time), so the write overlaps the step; between short
/// steps, once kAsyncWriteDelay or kAsyncWriteBatch is reached, they are stored on the calling
/// thread, which costs less than a hand-off to another thread (and keeps step times steady).
/// wait() stores the rest on the calling thread. Consecutive checkpoints go in one put_all().
/// The first failure drops the queue and is rethrown by wait(). Thread-safe.
class AsyncWriter {
 public:
  AsyncWriter(ThreadPool& pool, Checkpointer& saver);
  AsyncWriter(const AsyncWriter&) = delete;
  AsyncWriter& operator=(const AsyncWriter&) = delete;
  /// Stores what is queued (failures are dropped: wait() reports them).
  ~AsyncWriter();

  /// Queues checkpoints to store.
  void submit(std::vector<CheckpointPut> puts);
  /// Queues other work (task writes).
  void submit(std::function<void()> work);

  /// Stores the queue if it is due (see the class comment); `long_step`: the next step may be
  /// long. A short step waits for a background write still storing a full batch (back-pressure:
  /// steps never run ahead of the writes by much more than kAsyncWriteBatch checkpoints).
  void start_if_due(bool long_step);

  /// Stores the rest; rethrows the first failure of the queue.
  void wait();

  /// Reports the checkpoint writes to a traced run's callbacks (before the first submit).
  void set_trace(std::shared_ptr<const RunTrace> trace);

 private:
  using Job = std::variant<std::vector<CheckpointPut>, std::function<void()>>;
  struct State;

  void enqueue(Job job);

  ThreadPool& pool_;
  std::shared_ptr<State> state_;
};

}  // namespace sg::detail
