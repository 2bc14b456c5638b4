// SPDX-License-Identifier: MIT
#pragma once

// The run queue behind RunManager (internal): a run as the server holds it while it is active,
// the execution slots of a process, and RunQueue, the interface of the two queues: LocalRunQueue
// (local_run_queue.hpp: this process) and PostgresRunQueue (cluster.hpp: every process on one
// database). RunManager parses requests and executes runs; a queue decides which run starts,
// records how it ended, and answers what clients read and steer (docs/architecture.md, "The
// server's run path").

// clang-format off
#include <utility>  // before Boost.Asio's awaitable headers (Boost 1.74 omits it)
// clang-format on

#include <stategraph/core/thread_pool.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "api.hpp"
#include "io_threads.hpp"

namespace sg::server {

/// A run while it is active (pending or running). Set up before it is queued; afterwards
/// `record` and the cancel action change under `mu` only.
struct Run {
  std::string run_id;
  std::string thread_id;
  bool stateless = false;
  bool delete_thread_after = false;
  const GraphEntry* graph = nullptr;
  nlohmann::json thread_metadata;  // graph_id and assistant_id: merged into its thread's
  nlohmann::json thread_record;    // the thread's record as the request read it (null: unread)
  nlohmann::json input;
  nlohmann::json command;
  RunConfig config;
  std::vector<std::string> modes;
  bool cancel_on_disconnect = false;
  bool resumable = false;  // stream_resumable: every event is kept for a join with Last-Event-ID
  bool streamed = false;   // created by a stream request (a cluster forwards its events)
  CancellationToken token = CancellationToken::create();
  std::shared_ptr<RunChannel> channel = std::make_shared<RunChannel>();
  std::shared_ptr<void> keep_events;  // a resumable run's own listener registration
  int attempt = 1;                    // the cluster's attempt (a re-queued run's next is 2, ...)
  std::string webhook;                // POSTed the run's end (webhook.hpp); empty: none
  std::chrono::steady_clock::time_point start_at{};  // after_seconds: not started before
  std::string started_at;                            // when it began executing (ISO 8601)
  std::chrono::steady_clock::time_point began{};     // the same, for its duration
  bool running = false;  // LocalRunQueue's: it holds a slot (guarded by the queue's lock)

  mutable std::mutex mu;
  nlohmann::json record;      // the Run object (guarded by mu once queued)
  std::string cancel_action;  // "", "interrupt" or "rollback" (guarded by mu)

  /// The Run object now. Thread-safe.
  [[nodiscard]] nlohmann::json record_now() const {
    std::lock_guard lock(mu);
    return record;
  }
  /// How a client cancelled it ("" when none did). Thread-safe.
  [[nodiscard]] std::string cancelled_with() const {
    std::lock_guard lock(mu);
    return cancel_action;
  }
  /// Records that a client cancels it with `action`; `stop` also cancels its token (a run that
  /// executes). Thread-safe.
  void cancel(std::string action, bool stop) {
    {
      std::lock_guard lock(mu);
      cancel_action = std::move(action);
    }
    if (stop) token.cancel();  // outside the lock: it runs the run's cancel callbacks
  }
};

/// The execution slots of one process: at most max_runs runs execute at once. Thread-safe.
class RunSlots {
 public:
  explicit RunSlots(std::size_t max_runs) : max_(std::max<std::size_t>(max_runs, 1)) {}

  /// Takes a slot: false when all are taken or the server stops.
  [[nodiscard]] bool take() {
    std::lock_guard lock(mu_);
    if (stopping_ || executing_ >= max_) return false;
    ++executing_;
    return true;
  }
  /// Gives back a slot taken for a run that did not start.
  void give_back() {
    std::lock_guard lock(mu_);
    --executing_;
    changed_.notify_all();
  }
  /// Keeps drain() waiting while a run that gave its slot back is being finished.
  struct EndFinishing {
    void operator()(RunSlots* slots) const {
      std::lock_guard lock(slots->mu_);
      --slots->finishing_;
      slots->changed_.notify_all();
    }
  };
  using Finishing = std::unique_ptr<RunSlots, EndFinishing>;
  /// Gives back an executed run's slot; drain() waits until the handle is released.
  [[nodiscard]] Finishing release() {
    std::lock_guard lock(mu_);
    --executing_;
    ++finishing_;
    return Finishing(this);
  }
  /// From now on take() refuses.
  void stop() {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  [[nodiscard]] bool stopping() const {
    std::lock_guard lock(mu_);
    return stopping_;
  }
  /// Waits until no run executes and none is being finished.
  void drain() {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return drained(); });
  }
  /// drain(), for at most `limit`; whether the runs drained.
  bool drain_for(std::chrono::milliseconds limit) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, limit, [&] { return drained(); });
  }

 private:
  /// No run executes and none is being finished (mu_ held).
  [[nodiscard]] bool drained() const { return executing_ == 0 && finishing_ == 0; }

  const std::size_t max_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::size_t executing_ = 0;
  std::size_t finishing_ = 0;
  bool stopping_ = false;
};

/// The channels of the last kKept resumable runs that ended here, by run id: a client whose
/// stream broke as its run ended still reads the rest with Last-Event-ID. Thread-safe.
class EndedStreams {
 public:
  static constexpr std::size_t kKept = 256;
  void keep(const Run& run) {
    std::lock_guard lock(mu_);
    channels_[run.run_id] = run.channel;
    order_.push_back(run.run_id);
    if (order_.size() > kKept) {
      channels_.erase(order_.front());
      order_.pop_front();
    }
  }
  /// The channel of run `run_id`, or null.
  [[nodiscard]] std::shared_ptr<RunChannel> find(const std::string& run_id) const {
    std::lock_guard lock(mu_);
    const auto it = channels_.find(run_id);
    return it == channels_.end() ? nullptr : it->second;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<RunChannel>> channels_;
  std::deque<std::string> order_;
};

/// Where runs wait and who executes them: multitask strategies, one active run per thread, the
/// runs' records, and what clients read and steer. Thread-safe.
class RunQueue {
 public:
  /// What a queue uses of the RunManager that owns it (which outlives the queue).
  struct Host {
    const Api& api;
    ThreadRegistry& threads;
    Store& records;
    RunSlots& slots;
    EndedStreams& ended;
    /// Executes a claimed run (its slot taken); it ends with finish().
    std::function<void(std::shared_ptr<Run>)> launch;
    /// POSTs an executed run's end to its webhook (when it has one).
    std::function<void(const Run&, std::string_view, const nlohmann::json&)> webhook;
  };

  explicit RunQueue(Host host) : host_(std::move(host)) {}
  virtual ~RunQueue() = default;
  RunQueue(const RunQueue&) = delete;
  RunQueue& operator=(const RunQueue&) = delete;

  /// Runs waiting to start and runs executing (a cluster's: on every process), for the metrics.
  using Counts = RunCounts;
  [[nodiscard]] virtual Counts counts() = 0;

  /// Queues a new run with its thread's multitask `strategy` (reject, interrupt, rollback,
  /// enqueue), marks its thread busy, and starts it when its thread and a slot are free. Throws
  /// ApiError 409 (reject on a busy thread) or 503 (the server stops).
  virtual void create(const std::shared_ptr<Run>& run, const std::string& strategy) = 0;
  /// The next run that may start, marked running with a slot taken; null when none may. The
  /// caller launches it.
  [[nodiscard]] virtual std::shared_ptr<Run> claim() = 0;
  /// Records how an executed or cancelled pending run ended ("" for a rolled-back run: deleted),
  /// ends its channel, and starts the runs that may start now.
  virtual void finish(const std::shared_ptr<Run>& run, std::string_view status,
                      const nlohmann::json& result) = 0;

  /// GET /threads/{id}/runs.
  [[nodiscard]] virtual ApiResponse list(const std::string& thread_id,
                                         const ApiRequest& request) = 0;
  /// GET /threads/{id}/runs/{run_id}.
  [[nodiscard]] virtual ApiResponse get(const std::string& thread_id,
                                        const std::string& run_id) = 0;
  /// GET .../join and .../stream.
  [[nodiscard]] virtual ApiResponse join(const std::string& thread_id, const std::string& run_id,
                                         const ApiRequest& request, RunFollow::Kind kind) = 0;
  /// The id of the thread's active run (its queue's front), or "".
  [[nodiscard]] virtual std::string active_run(const std::string& thread_id) = 0;
  /// The (thread_id, run_id) of the active runs of `thread_id` ("" for any) in `status`
  /// (pending, running, or "" for both).
  [[nodiscard]] virtual std::vector<std::pair<std::string, std::string>> active_runs(
      const std::string& thread_id, const std::string& status) = 0;
  /// POST .../cancel: cancels with `action` (interrupt or rollback); a pending run ends now.
  /// Returns the run's channel, its end to follow when `wait` (null for a run followed from
  /// another process without `wait`). Throws ApiError 404 or 409 (ended).
  virtual std::shared_ptr<RunChannel> cancel(const std::string& thread_id,
                                             const std::string& run_id, const std::string& action,
                                             bool wait) = 0;
  /// DELETE /threads/{id}/runs/{run_id}. Throws ApiError 404 or 409 (active).
  virtual void remove(const std::string& thread_id, const std::string& run_id) = 0;
  /// Whether the thread has a pending or running run.
  [[nodiscard]] virtual bool busy(const std::string& thread_id) = 0;
  /// Forgets a deleted thread's runs. Throws ApiError 409 while it has an active one.
  virtual void remove_thread(const std::string& thread_id) = 0;
  /// Holds a lock of `key` that every server process on the queue shares, until the handle is
  /// released; null when the queue is this process's alone.
  [[nodiscard]] virtual std::shared_ptr<void> lock_shared(const std::string& /*key*/) {
    return nullptr;
  }
  /// The server is stopping (slots refuse already): refuses new runs that only this process
  /// would execute; executing runs go on.
  virtual void close() {}
  /// The server stops (slots refuse already): cancels what executes here.
  virtual void stop() = 0;
  /// After the runs drained: stops the queue's own threads.
  virtual void shutdown() {}

 protected:
  /// Claims and launches runs while a slot is free and a run may start.
  void start_claimable() {
    while (auto run = claim()) host_.launch(std::move(run));
  }

  Host host_;
};

/// Where RunManager executes runs: the server's io_contexts, or its own (one per core), each run
/// by one thread; the plain nodes of every run (and a cluster's blocking database work around a
/// run) on a pool of their own.
struct RunRuntime {
  using IoExecutor = IoThreads::Executor;

  explicit RunRuntime(const RunLimits& limits)
      : executors(limits.executors),
        plain_nodes(std::make_shared<ThreadPool>(std::max<std::size_t>(limits.sync_workers, 1))) {
    if (!executors.empty()) return;
    own = std::make_unique<IoThreads>(std::max(1U, std::thread::hardware_concurrency()));
    own->start();
    executors = own->executors();
  }
  RunRuntime(const RunRuntime&) = delete;
  RunRuntime& operator=(const RunRuntime&) = delete;

  /// The executor of the io_context the calling thread runs, so that a run and the request that
  /// created it share a thread (no hand-over between threads); from any other thread, each in
  /// turn. Thread-safe.
  [[nodiscard]] IoExecutor pick() {
    for (const auto& e : executors) {
      if (e.running_in_this_thread()) return e;
    }
    return executors[next.fetch_add(1, std::memory_order_relaxed) % executors.size()];
  }

  std::vector<IoExecutor> executors;
  std::atomic<std::size_t> next{0};
  std::unique_ptr<IoThreads> own;  // without a server
  std::shared_ptr<ThreadPool> plain_nodes;
};

/// `f()` on `pool`, awaited: the calling coroutine holds no thread meanwhile and goes on on its
/// own executor. Throws what `f` throws.
template <class F>
boost::asio::awaitable<std::invoke_result_t<F>> on_pool(ThreadPool& pool, F f) {
  using R = std::invoke_result_t<F>;
  using Value = std::conditional_t<std::is_void_v<R>, bool, R>;
  auto executor = co_await boost::asio::this_coro::executor;
  auto initiate = [&pool, &f, executor](auto handler) {
    // ThreadPool takes copyable work: the handler and the function are shared.
    auto shared = std::make_shared<decltype(handler)>(std::move(handler));
    auto work = std::make_shared<F>(std::move(f));
    pool.post([shared, work, executor] {
      std::exception_ptr error;
      Value value{};
      try {
        if constexpr (std::is_void_v<R>) {
          (*work)();
        } else {
          value = (*work)();
        }
      } catch (...) {
        error = std::current_exception();
      }
      boost::asio::post(executor, [shared, error, value = std::move(value)]() mutable {
        (*shared)(error, std::move(value));
      });
    });
  };
  if constexpr (std::is_void_v<R>) {
    (void)co_await boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&,
                                               void(std::exception_ptr, Value)>(
        initiate, boost::asio::use_awaitable);
  } else {
    Value value = co_await boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&,
                                                       void(std::exception_ptr, Value)>(
        initiate, boost::asio::use_awaitable);
    co_return value;
  }
}

/// Whether a run of status `status` has ended (not pending, not running).
[[nodiscard]] inline bool run_ended(std::string_view status) {
  return status != "pending" && status != "running";
}

/// The thread's status once its last active run ended with `status` (cancelled by a client:
/// `token_cancelled`).
[[nodiscard]] inline std::string_view thread_status_after(std::string_view status,
                                                          bool token_cancelled) {
  if (status == "error") return "error";
  return status == "interrupted" && !token_cancelled ? "interrupted" : "idle";
}

/// An SSE response with no events: the stream of a run that has ended (or of none).
[[nodiscard]] ApiResponse ended_stream();

/// What a join of an ended run answers: the thread's values (`result`), or an ended stream.
[[nodiscard]] ApiResponse ended_run_follow(const Api& api, const nlohmann::json& thread,
                                           RunFollow::Kind kind);

/// GET .../runs query: limit (default 10), offset, status ("" for any). Throws ApiError 422.
struct RunListQuery {
  std::int64_t limit = 10;
  std::int64_t offset = 0;
  std::string status;
};
[[nodiscard]] RunListQuery run_list_query(const ApiRequest& request);

/// The `action` query of a cancel: interrupt (default) or rollback. Throws ApiError 422.
[[nodiscard]] std::string cancel_action(const ApiRequest& request);

/// A run's durability by its API name ("sync", "async", "exit"; nullopt for "" or another), and
/// back ("" for none).
[[nodiscard]] std::optional<Durability> durability_named(std::string_view name);
[[nodiscard]] std::string_view durability_name(const std::optional<Durability>& durability);

/// The position a resumed stream continues from: its Last-Event-ID + 1 (nullopt: not a resumed
/// stream). Throws ApiError 422 for an id this server never sent.
[[nodiscard]] std::optional<std::size_t> resume_position(const ApiRequest& request,
                                                         RunFollow::Kind kind);

/// The response of a join of `kind` on a run's `channel`: a stream listens when `listen`,
/// starts at `from` (a resumed stream of a replayable run) or at the events published from now
/// on, and keeps the request's stream_mode values. The caller adds on_disconnect.
[[nodiscard]] ApiResponse join_response(const ApiRequest& request, RunFollow::Kind kind,
                                        std::shared_ptr<RunChannel> channel, bool listen,
                                        std::optional<std::size_t> from);

}  // namespace sg::server
