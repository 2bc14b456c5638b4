#pragma once

// RunManager's state (internal): a run as the manager holds it, and the per-thread queues. Shared
// by runs.cpp (create, execute, finish) and run_access.cpp (list, get, join, cancel, delete).

#include <stategraph/core/thread_pool.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>  // before Boost.Asio's awaitable headers (Boost 1.74 omits it)

#include "api.hpp"

namespace sg::server {

struct RunManager::Run {
  std::string run_id;
  std::string thread_id;
  bool stateless = false;
  bool delete_thread_after = false;
  const GraphEntry* graph = nullptr;
  nlohmann::json record;
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
  std::string started_at;                            // when a worker began it (ISO 8601)
  // Guarded by State::mu:
  bool running = false;       // handed to a worker (it is the thread's active run)
  std::string cancel_action;  // "", "interrupt" or "rollback"
};

struct RunManager::State {
  explicit State(const RunLimits& limits)
      : max_runs(std::max<std::size_t>(limits.max_runs, 1)),
        plain_nodes(std::make_shared<ThreadPool>(std::max<std::size_t>(limits.sync_workers, 1))) {
    if (limits.executor) {
      executor = *limits.executor;
      return;
    }
    own_io = std::make_unique<boost::asio::io_context>();
    work.emplace(own_io->get_executor());
    executor = own_io->get_executor();
    const unsigned cores = std::max(1U, std::thread::hardware_concurrency());
    for (unsigned i = 0; i < cores; ++i) io_threads.emplace_back([this] { own_io->run(); });
  }
  ~State() {
    if (!own_io) return;
    work.reset();
    own_io->stop();
    for (auto& t : io_threads) t.join();
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  std::mutex mu;
  std::map<std::string, std::deque<std::shared_ptr<Run>>> queues;  // by thread: active first
  std::map<std::string, std::shared_ptr<Run>> active;              // pending or running, by id
  std::condition_variable drained;
  std::size_t executing = 0;
  std::size_t finishing = 0;  // a cluster's runs past their slot, still claiming the next ones
  bool stopping = false;
  // The channels of the last kEndedResumable resumable runs that ended, by run id: a client
  // whose stream broke as its run ended still reads the rest with Last-Event-ID.
  static constexpr std::size_t kEndedResumable = 256;
  std::map<std::string, std::shared_ptr<RunChannel>> ended_resumable;
  std::deque<std::string> ended_resumable_order;
  // Runs at the front of their thread's queue that wait for their after_seconds (the timer
  // thread starts them when due; made at the first such run).
  std::multimap<std::chrono::steady_clock::time_point, std::weak_ptr<Run>> delayed;
  std::condition_variable delayed_changed;
  std::thread timer;
  // At most max_runs execute at once; the runs past it (fronts of their threads' queues) wait
  // here in order.
  const std::size_t max_runs;
  std::deque<std::weak_ptr<Run>> ready;
  // Runs execute as coroutines on `executor`: the server's, or `own_io` (one thread per core)
  // without a server; their plain nodes, and the blocking database work of a cluster's runs, on
  // `plain_nodes`.
  boost::asio::any_io_executor executor;
  std::unique_ptr<boost::asio::io_context> own_io;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work;
  std::vector<std::thread> io_threads;
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

/// An SSE response with no events: the stream of a run that has ended (or of none).
[[nodiscard]] ApiResponse ended_stream();

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
