// SPDX-License-Identifier: MIT
#pragma once
// Writing memories in the background: a write per conversation thread runs once the
// thread has gone quiet for a while; new messages cancel the pending write and schedule it again
// (debounce), so one write sees the whole exchange, and the reply never waits for it (LangMem's
// ReflectionExecutor with after_seconds).
//
//   auto writer = std::make_shared<sg::MemoryWriter>(
//       [&](const sg::MemoryWriteJob& job) {
//         sg::manage_memories(*model, *store, job.configurable, job.messages);
//       },
//       sg::MemoryWriterOptions{.delay = std::chrono::seconds(30)});
//   graph.add_node("remember", sg::schedule_memory_write<State>(writer));  // returns at once

#include <stategraph/core/context.hpp>
#include <stategraph/core/graph_types.hpp>
#include <stategraph/core/message.hpp>
#include <stategraph/core/update.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sg {

/// One background write: a thread's conversation as of its last submission.
struct MemoryWriteJob {
  /// The conversation thread ("" for a submission without one).
  std::string thread_id{};
  /// The messages of the last submission (each submission carries the conversation so far).
  std::vector<Message> messages{};
  /// The run's configurable values of the last submission (e.g. {"user_id": ...}).
  nlohmann::json configurable{};
  /// How many submissions this write stands for (the others were superseded).
  std::size_t submissions = 1;
  /// Cancelled when new messages for the thread arrive while this write runs, or when the
  /// writer is closed without running pending writes. Pass it to model calls
  /// (ChatOptions::cancellation) so that a superseded write stops early.
  CancellationToken cancellation{};
};

/// Options of MemoryWriter.
struct MemoryWriterOptions {
  /// How long a thread must stay quiet (no submission) before its write runs.
  std::chrono::milliseconds delay{std::chrono::seconds(30)};
  /// Called on the writer's thread with a write that threw (the writer carries on). Default:
  /// the error is only counted (Stats::failed) and kept (last_error()).
  std::function<void(const MemoryWriteJob&, std::exception_ptr)> on_error{};
};

/// Runs memory writes on a thread of its own, at most one write per conversation thread: a
/// submission replaces the thread's pending write (which then never runs) and restarts its delay;
/// a submission while the thread's write is running cancels that write's token and schedules a
/// new one, which runs after it. Writes run one at a time, in deadline order. Submitting never
/// blocks on a write. The destructor closes the writer (running pending writes). All members
/// are thread-safe; the write function must not call the writer's flush() or close().
class MemoryWriter {
 public:
  using Write = std::function<void(const MemoryWriteJob&)>;

  /// Counts since construction.
  struct Stats {
    std::size_t submitted = 0;
    /// Writes that ran to the end without throwing.
    std::size_t written = 0;
    /// Pending writes replaced by a newer submission before they ran.
    std::size_t superseded = 0;
    /// Running writes whose token was cancelled by a newer submission (or by close).
    std::size_t interrupted = 0;
    std::size_t failed = 0;
    /// Pending writes dropped by close(false).
    std::size_t discarded = 0;
  };

  /// Throws sg::Error (errc::kInvalidArgument) for no write function or a negative delay.
  explicit MemoryWriter(Write write, MemoryWriterOptions options = {});
  ~MemoryWriter();
  MemoryWriter(const MemoryWriter&) = delete;
  MemoryWriter& operator=(const MemoryWriter&) = delete;

  /// Schedules a write of `messages` for `thread_id` after the writer's delay (or `delay`),
  /// superseding the thread's pending write. An empty thread_id is never debounced: each such
  /// submission is its own write. Throws sg::Error (errc::kInvalidArgument) once the writer is
  /// closed.
  void submit(std::string thread_id, std::vector<Message> messages,
              nlohmann::json configurable = {});
  void submit(std::string thread_id, std::vector<Message> messages, nlohmann::json configurable,
              std::chrono::milliseconds delay);

  /// Runs every pending write now (in deadline order) and returns once none is pending or
  /// running. Use it before reading what the writes stored (tests, the end of a batch job).
  void flush();
  /// Stops the writer: with `run_pending`, flushes first; without, cancels the running write's
  /// token and drops the pending ones. Waits for the running write. Later submits throw;
  /// calling close again does nothing.
  void close(bool run_pending = true);

  /// Writes scheduled and not started.
  [[nodiscard]] std::size_t pending() const;
  [[nodiscard]] Stats stats() const;
  /// The error of the last write that threw, if any.
  [[nodiscard]] std::exception_ptr last_error() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Pending {
    Clock::time_point due{};
    MemoryWriteJob job{};
  };

  void run();
  [[nodiscard]] bool idle() const;

  Write write_;
  MemoryWriterOptions options_;
  mutable std::mutex mu_;
  std::condition_variable wake_;  // the worker: a new deadline, a flush, close
  std::condition_variable done_;  // flush() and close(): a write finished
  std::map<std::string, Pending> pending_;
  std::string running_key_;
  bool running_ = false;
  CancellationToken running_token_;
  std::size_t flushers_ = 0;  // flush() or close() calls waiting: run writes now
  bool closed_ = false;
  std::size_t anonymous_ = 0;
  Stats stats_{};
  std::exception_ptr last_error_;
  std::mutex join_mu_;
  std::thread worker_;
};

/// A node handing state.*Messages to `writer` for the run's thread (config().thread_id) with
/// its configurable values, and returning at once with no update: the reply does not wait for
/// the write. Throws sg::Error (errc::kInvalidArgument) at construction for a null writer; the
/// node throws when the writer is closed. Thread-safe.
template <class S, auto Messages = &S::messages>
[[nodiscard]] auto schedule_memory_write(std::shared_ptr<MemoryWriter> writer) {
  if (!writer) throw Error(errc::kInvalidArgument, "schedule_memory_write: the writer is null");
  return [writer = std::move(writer)](const S& state, Context& ctx) {
    writer->submit(ctx.config().thread_id, state.*Messages, ctx.config().configurable);
    return Update<S>{};
  };
}

}  // namespace sg
