// SPDX-License-Identifier: MIT
// McpClient: the servers' sessions on one I/O thread, the bridge from callers (any thread or
// executor) to it, and the MCP tools as sg::Tools.

#include <stategraph/core/log.hpp>
#include <stategraph/models/mcp.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/execution.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/require.hpp>
#include <boost/asio/this_coro.hpp>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <system_error>
#include <thread>
#include <type_traits>

#include "mcp_config.hpp"
#include "mcp_result.hpp"
#include "mcp_session.hpp"

// g++ 12 wrongly reports awaitable frames freed by the frame's own operator delete as mismatched
// (GCC bug 109224).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace sg {
namespace net = boost::asio;
using nlohmann::json;

namespace detail {

McpRuntime::McpRuntime()
    : work_(std::make_unique<net::executor_work_guard<net::io_context::executor_type>>(
          io_.get_executor())) {
  thread_ = std::thread([this] {
    // A write to a server that exited fails with EPIPE here instead of killing the process.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    io_.run();
  });
  thread_id_.store(thread_.get_id());
}

McpRuntime::~McpRuntime() {
  stop(std::chrono::milliseconds(1000));
}

void McpRuntime::stop(std::chrono::milliseconds limit) {
  std::lock_guard lock(stop_mu_);
  if (stopped_) return;
  stopped_ = true;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (active.load(std::memory_order_acquire) > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  work_.reset();
  io_.stop();
  if (thread_.joinable()) thread_.join();
  thread_id_.store(std::thread::id());  // a later thread may get the same id
}

/// Runs `count` coroutines made by `make(i)` side by side on the I/O thread; returns each one's
/// error (null: it succeeded).
template <class Make>
net::awaitable<std::vector<std::exception_ptr>> mcp_all_of(McpRuntime& runtime, std::size_t count,
                                                           Make make) {
  struct Shared {
    explicit Shared(net::io_context& io, std::size_t n) : done(io), errors(n), left(n) {}
    McpEvent done;
    std::vector<std::exception_ptr> errors;
    std::size_t left;
  };
  auto shared = std::make_shared<Shared>(runtime.io(), count);
  if (count == 0) co_return shared->errors;
  for (std::size_t i = 0; i < count; ++i) {
    net::co_spawn(runtime.io(), make(i), [shared, i](std::exception_ptr e) {
      shared->errors[i] = e;
      if (--shared->left == 0) shared->done.set();
    });
  }
  co_await shared->done.wait();
  co_return shared->errors;
}

// The bridge from a caller's coroutine (any executor) to work on the I/O thread and back. The
// caller's executor may belong to an execution context that is destroyed as soon as the caller
// has resumed and finished (an io_context destroyed right after run() returns), so the I/O thread
// must never hold a copy of it (nor of the caller's handler) past the moment the caller can
// resume: Asio's co_spawn keeps one in its frame (its handler's work guard), destroyed on the
// spawning context after the handler was dispatched, which is too late. Instead the handler and
// its executor live in one McpCallerWait, owned by one thread at a time, and travel back to the
// caller inside the one function object posted there (McpResume).

/// How work on the I/O thread ended: its value, or what it threw. The work's exception is caught
/// on the I/O thread and travels in here, so that once the caller has it the I/O thread holds no
/// reference to it (co_spawn would still hold one, inside its catch block, while the caller
/// resumes): the exception object is then released on the caller's side.
template <class T>
struct McpOutcome {
  std::exception_ptr error{};
  T value{};
};

/// A caller suspended until its work on the I/O thread ends: its completion handler and the
/// handler's executor, made never-blocking (the handler always runs later, on the caller's side)
/// and counting outstanding work where the executor can (so that the caller's io_context does not
/// run out of work while the caller waits).
template <class T, class Handler>
struct McpCallerWait {
  static auto caller_executor(const Handler& handler) {
    return net::prefer(
        net::require(net::get_associated_executor(handler), net::execution::blocking.never),
        net::execution::outstanding_work.tracked);
  }
  using Executor = std::decay_t<decltype(caller_executor(std::declval<const Handler&>()))>;

  explicit McpCallerWait(Handler h) : executor(caller_executor(h)), handler(std::move(h)) {}

  Executor executor;
  Handler handler;
  /// Held by the thread handing the wait over to `executor`, for as long as it touches the wait
  /// (and copies of the executor of its own): McpResume waits for it before it runs or is
  /// destroyed.
  std::mutex handing_over;
};

/// The function object posted to the caller's executor: it owns the wait and the outcome, and
/// runs the handler there. Destroyed without running (the caller's io_context destroyed with it
/// queued), it destroys the wait there, as Asio destroys a handler it will not run.
template <class T, class Handler>
class McpResume {
 public:
  McpResume(std::unique_ptr<McpCallerWait<T, Handler>> wait, std::exception_ptr error,
            T value) noexcept(std::is_nothrow_move_constructible_v<T>)
      : wait_(std::move(wait)), error_(std::move(error)), value_(std::move(value)) {}
  McpResume(McpResume&&) noexcept(std::is_nothrow_move_constructible_v<T>) = default;
  McpResume& operator=(McpResume&&) = delete;
  McpResume(const McpResume&) = delete;
  McpResume& operator=(const McpResume&) = delete;
  ~McpResume() {
    if (wait_) handed_over();
  }

  void operator()() {
    handed_over();
    std::unique_ptr<McpCallerWait<T, Handler>> wait = std::move(wait_);
    Handler handler = std::move(wait->handler);
    // The work is released after the handler ran, on this side, as the rest of the wait.
    auto work = std::move(wait->executor);
    wait.reset();
    handler(std::move(error_), std::move(value_));
  }

 private:
  /// Returns once the thread that posted this is done with the wait.
  void handed_over() { std::lock_guard done(wait_->handing_over); }

  std::unique_ptr<McpCallerWait<T, Handler>> wait_;
  std::exception_ptr error_;
  T value_;
};

/// Resumes the caller of `wait` with `error` or `value`, from any thread: posts one McpResume to
/// the caller's executor. This thread keeps no copy of the executor or of the handler once the
/// caller can run. An allocation failure ends the process (noexcept): the caller could never be
/// resumed.
template <class T, class Handler>
void mcp_resume(std::unique_ptr<McpCallerWait<T, Handler>> wait, std::exception_ptr error,
                T value) noexcept {
  McpCallerWait<T, Handler>& waiting = *wait;
  std::unique_lock handing(waiting.handing_over);
  net::execution::execute(
      waiting.executor, McpResume<T, Handler>(std::move(wait), std::move(error), std::move(value)));
  handing.unlock();  // the last touch of `waiting` on this thread
}

/// The completion of a caller's work spawned on the I/O thread: hands the outcome to the caller
/// (mcp_resume). Destroyed without being called (the I/O thread's io_context destroyed with the
/// work unfinished), it resumes the caller with McpError (errc::kMcpConnection).
template <class T, class Handler>
class McpIoDone {
 public:
  explicit McpIoDone(std::unique_ptr<McpCallerWait<T, Handler>> wait) noexcept
      : wait_(std::move(wait)) {}
  McpIoDone(McpIoDone&&) noexcept = default;
  McpIoDone& operator=(McpIoDone&&) = delete;
  McpIoDone(const McpIoDone&) = delete;
  McpIoDone& operator=(const McpIoDone&) = delete;
  ~McpIoDone() {
    if (!wait_) return;
    mcp_resume(std::move(wait_),
               std::make_exception_ptr(McpError(errc::kMcpConnection,
                                                "the MCP client was closed before the call ended")),
               T{});
  }

  /// `error`: the spawn itself failed; otherwise the work's outcome.
  void operator()(std::exception_ptr error, McpOutcome<T> outcome) {
    if (!error) error = std::move(outcome.error);
    mcp_resume(std::move(wait_), std::move(error), std::move(outcome.value));
  }

 private:
  std::unique_ptr<McpCallerWait<T, Handler>> wait_;
};

/// Everything a client and its tools share; destroyed (closing the sessions) with the last of
/// them.
class McpClientCore : public std::enable_shared_from_this<McpClientCore> {
 public:
  /// A new core. Its destructor closes the sessions and joins the I/O thread, which cannot join
  /// itself: a last reference dropped on that thread (a callback of the client dropping the
  /// client or its last tool) hands the destruction to a new thread. Throws as check_mcp_server.
  static std::shared_ptr<McpClientCore> create(std::map<std::string, McpServerConfig> servers,
                                               McpClientOptions options) {
    return std::shared_ptr<McpClientCore>(new McpClientCore(std::move(servers), std::move(options)),
                                          &McpClientCore::destroy);
  }

  ~McpClientCore() { shutdown(); }  // never on the I/O thread (destroy)

  McpClientCore(const McpClientCore&) = delete;
  McpClientCore& operator=(const McpClientCore&) = delete;

  [[nodiscard]] const McpClientOptions& options() const noexcept { return *options_; }
  [[nodiscard]] const std::vector<std::string>& order() const noexcept { return order_; }

  /// The session of `server`. Throws sg::Error (errc::kInvalidArgument) for an unknown name,
  /// McpError (errc::kMcpConnection) once the client is closed.
  [[nodiscard]] std::shared_ptr<McpSession> session(const std::string& server) const {
    const auto it = sessions_.find(server);
    if (it == sessions_.end()) {
      std::string names;
      for (const auto& n : order_) names += (names.empty() ? "" : ", ") + n;
      throw Error(errc::kInvalidArgument,
                  "no MCP server is named '" + server + "' (configured: " + names + ")");
    }
    if (closed_.load()) throw closed_error(server);
    return it->second;
  }

  /// Runs `work` on the I/O thread and waits for it on this one.
  template <class T>
  T block(net::awaitable<T> work) {
    if (runtime_.on_io_thread()) {
      throw Error(errc::kInvalidArgument,
                  "a blocking McpClient function was called on the client's I/O thread (from "
                  "one of its callbacks); use the asynchronous ones");
    }
    // The outcome is moved to this thread under the mutex: the I/O thread keeps no reference to
    // it (nor to what it threw) once this thread can go on. (std::promise::set_exception would
    // keep one, in its argument, after waking this thread.)
    struct Handoff {
      std::mutex mu;
      std::condition_variable cv;
      std::optional<McpOutcome<T>> outcome;
    } handoff;
    {
      std::shared_lock lock(gate_);
      if (closed_.load()) throw closed_error({});
      runtime_.active.fetch_add(1);
      net::co_spawn(runtime_.io(), counted(&runtime_, std::move(work)),
                    [&handoff](std::exception_ptr e, McpOutcome<T> outcome) {
                      if (e) outcome.error = std::move(e);
                      std::lock_guard done(handoff.mu);
                      handoff.outcome.emplace(std::move(outcome));
                      handoff.cv.notify_one();
                    });
    }
    std::unique_lock wait(handoff.mu);
    handoff.cv.wait(wait, [&] { return handoff.outcome.has_value(); });
    McpOutcome<T> outcome = std::move(*handoff.outcome);
    handoff.outcome.reset();
    if (outcome.error) std::rethrow_exception(std::move(outcome.error));
    return std::move(outcome.value);
  }

  /// Runs `work` on the I/O thread; the caller resumes on its own executor (see McpCallerWait).
  /// Throws what `work` throws; McpError (errc::kMcpConnection) once the client is closed.
  template <class T>
  static net::awaitable<T> on_io(std::shared_ptr<McpClientCore> self, net::awaitable<T> work) {
    McpClientCore* core = self.get();  // kept alive by `self` until this coroutine ends
    auto initiate = [core](auto handler, net::awaitable<T> w) {
      core->start_on_io<T>(std::move(handler), std::move(w));
    };
    net::awaitable<T> op =
        net::async_initiate<const net::use_awaitable_t<>&, void(std::exception_ptr, T)>(
            std::move(initiate), net::use_awaitable, std::move(work));
    T result = co_await std::move(op);
    co_return result;
  }

  /// The tools of `servers` (all when empty), on the I/O thread. (It keeps no reference to the
  /// core: its frame ends on the I/O thread, and a last reference dropped there costs a thread,
  /// see create.)
  net::awaitable<std::vector<Tool>> tools_io(std::vector<std::string> servers) {
    ActiveGuard active(runtime_);
    if (servers.empty()) servers = order_;
    std::vector<std::shared_ptr<McpSession>> chosen;
    for (const auto& name : servers) chosen.push_back(session(name));
    std::vector<std::vector<json>> listed(chosen.size());
    auto list = [&](std::size_t i) -> net::awaitable<void> {
      return [](std::shared_ptr<McpSession> s, std::vector<json>* out) -> net::awaitable<void> {
        *out = co_await s->tools();
      }(chosen[i], &listed[i]);
    };
    net::awaitable<std::vector<std::exception_ptr>> listing =
        mcp_all_of(runtime_, chosen.size(), list);
    const std::vector<std::exception_ptr> errors = co_await std::move(listing);
    std::vector<Tool> out;
    for (std::size_t i = 0; i < chosen.size(); ++i) {
      if (errors[i]) {
        if (!options_->ignore_connection_errors) std::rethrow_exception(errors[i]);
        try {
          std::rethrow_exception(errors[i]);
        } catch (const std::exception& e) {
          log(LogLevel::warn, "MCP server skipped", {{"server", servers[i]}, {"error", e.what()}});
        }
        continue;
      }
      for (const auto& t : listed[i]) out.push_back(make_tool(servers[i], t));
    }
    co_return out;
  }

  /// One tools/call from a caller: on the I/O thread, following `options.cancellation` and the
  /// run of `context` (may be null), its progress to the callbacks and the run's stream.
  static net::awaitable<json> call(std::shared_ptr<McpClientCore> self, std::string server,
                                   std::string tool, json args, McpCallOptions options,
                                   Context* context) {
    const std::shared_ptr<McpSession> session = self->session(server);
    if (context != nullptr && context->cancelled()) {
      throw CancelledError("the MCP tool call " + tool + " was cancelled");
    }
    auto control = std::make_shared<McpCallControl>();
    control->about.server = server;
    control->about.tool = tool;
    control->about.args = args;
    const McpClientOptions& client = *self->options_;
    const bool to_stream = client.stream_progress && context != nullptr;
    if (options.on_progress || client.on_progress || to_stream) {
      control->on_progress = [call_progress = options.on_progress, options = self->options_,
                              context = to_stream ? context : nullptr](const McpProgress& p) {
        if (call_progress) call_progress(p);
        if (options->on_progress) options->on_progress(p);
        if (context != nullptr) {
          json event = {{"type", "mcp_progress"}, {"server", p.server},
                        {"tool", p.tool},         {"progress", p.progress},
                        {"total", json(nullptr)}, {"message", json(nullptr)}};
          if (p.total) event["total"] = *p.total;
          if (!p.message.empty()) event["message"] = p.message;
          context->write(std::move(event));
        }
      };
    }
    const McpServerConfig& config = session->config();
    std::chrono::milliseconds timeout = options.timeout;
    if (timeout.count() <= 0) timeout = config.tool_timeout;
    if (timeout.count() <= 0) timeout = client.tool_timeout;
    if (timeout.count() <= 0) timeout = config.request_timeout;

    net::io_context& io = self->runtime_.io();
    auto cancel = [&io, session, control] {
      net::post(io, [session, control] { session->cancel(control, "cancelled by the client"); });
    };
    CancellationToken::Subscription by_call = options.cancellation.on_cancel(cancel);
    CancellationToken::Subscription by_run;
    if (context != nullptr) by_run = context->config().cancellation.on_cancel(cancel);

    if (!args.is_object()) args = args.is_null() ? json::object() : args;
    json params = {{"name", tool}, {"arguments", std::move(args)}};
    // On the I/O thread, keeping no reference to the core (see tools_io); the caller keeps it.
    net::awaitable<json> work = [](std::shared_ptr<McpSession> s, json p,
                                   std::chrono::milliseconds t,
                                   std::shared_ptr<McpCallControl> c) -> net::awaitable<json> {
      net::awaitable<json> sent = s->request("tools/call", std::move(p), t, std::move(c));
      json result = co_await std::move(sent);
      co_return result;
    }(session, std::move(params), timeout, control);
    // The callbacks (the caller's, and the run's Context) end on this side once the call did:
    // nothing of the caller stays with the I/O thread.
    struct DropProgress {
      McpCallControl& control;
      ~DropProgress() { control.on_progress = nullptr; }
    } drop_progress{*control};
    net::awaitable<json> op = on_io(self, std::move(work));
    json result = co_await std::move(op);
    co_return result;
  }

  /// Ends every session, then the I/O thread, and waits for both. Idempotent; not on the I/O
  /// thread (it would wait for itself).
  void shutdown() {
    begin_shutdown();
    std::shared_future<void> sessions_closed;
    {
      std::shared_lock lock(gate_);
      sessions_closed = sessions_closed_;
    }
    sessions_closed.wait();
    std::chrono::milliseconds longest{0};
    for (const auto& [name, s] : sessions_)
      longest = std::max(longest, s->config().shutdown_timeout);
    runtime_.stop(longest * 3 + std::chrono::milliseconds(1000));
  }

  /// Starts ending every session; no call starts any more. Returns at once. Idempotent; any
  /// thread.
  void begin_shutdown() {
    std::unique_lock lock(gate_);
    if (closed_.load()) return;
    closed_ = true;
    std::vector<std::shared_ptr<McpSession>> all;
    for (const auto& name : order_) all.push_back(sessions_.at(name));
    auto done = std::make_shared<std::promise<void>>();
    sessions_closed_ = done->get_future().share();
    // Spawned, not run here: on the I/O thread (a callback) the sessions close after it returns.
    net::co_spawn(runtime_.io(), close_all(std::move(all)),
                  [done](std::exception_ptr, bool) { done->set_value(); });
  }

  /// What destroying a client does: shutdown(); on the I/O thread (a callback destroying the
  /// client), begin_shutdown(), and the I/O thread ends with the last reference (see create).
  void end() {
    if (runtime_.on_io_thread()) {
      begin_shutdown();
    } else {
      shutdown();
    }
  }

  /// McpClient::close(): shutdown(); on the I/O thread, sg::Error (errc::kInvalidArgument) as
  /// every blocking function, unless already closed.
  void close() {
    if (runtime_.on_io_thread()) {
      if (closed_.load()) return;
      throw Error(errc::kInvalidArgument,
                  "McpClient::close() was called on the client's I/O thread (from one of its "
                  "callbacks); destroy the client there instead");
    }
    shutdown();
  }

 private:
  McpClientCore(std::map<std::string, McpServerConfig> servers, McpClientOptions options)
      : options_(std::make_shared<const McpClientOptions>(std::move(options))) {
    if (servers.empty())
      throw Error(errc::kInvalidArgument, "mcpServers: no MCP servers are configured");
    for (auto& [name, config] : servers) {
      check_mcp_server(name, config);
      order_.push_back(name);
      sessions_[name] = std::make_shared<McpSession>(runtime_, name, std::move(config), options_);
    }
  }

  /// The deleter of create(): on the I/O thread, a new (detached) thread destroys the core.
  static void destroy(McpClientCore* core) noexcept {
    if (core->runtime_.on_io_thread()) {
      try {
        std::thread([core] { delete core; }).detach();
      } catch (const std::system_error& e) {
        // No thread: the core is left (its sessions end with the process) rather than ended
        // by a thread joining itself.
        log(LogLevel::error, "MCP client left open: no thread could close it",
            {{"error", e.what()}});
      }
      return;
    }
    delete core;
  }

  static McpError closed_error(const std::string& server) {
    return McpError(errc::kMcpConnection,
                    (server.empty() ? std::string() : "MCP server '" + server + "': ") +
                        "the MCP client was closed",
                    server);
  }

  /// `work`, counted in the runtime's active coroutines from before it was spawned (the count
  /// was taken by the spawner) to its end; its outcome, what it threw included (McpOutcome).
  template <class T>
  static net::awaitable<McpOutcome<T>> counted(McpRuntime* runtime, net::awaitable<T> work) {
    struct Release {
      McpRuntime* runtime;
      ~Release() { runtime->active.fetch_sub(1, std::memory_order_release); }
    } release{runtime};
    McpOutcome<T> outcome;
    try {
      T value = co_await std::move(work);
      outcome.value = std::move(value);
    } catch (...) {
      outcome.error = std::current_exception();
    }
    co_return outcome;
  }

  /// `work` spawned on the I/O thread for the caller of `handler`, who is resumed with its
  /// outcome (or McpError once the client is closed) on its own executor. Runs in the caller's
  /// co_await, where nothing may throw: an allocation failure ends the process.
  template <class T, class Handler>
  void start_on_io(Handler handler, net::awaitable<T> work) noexcept {
    auto wait = std::make_unique<McpCallerWait<T, Handler>>(std::move(handler));
    {
      std::shared_lock lock(gate_);
      if (!closed_.load()) {
        runtime_.active.fetch_add(1);
        net::co_spawn(runtime_.io(), counted(&runtime_, std::move(work)),
                      McpIoDone<T, Handler>(std::move(wait)));
        return;
      }
    }
    mcp_resume(std::move(wait), std::make_exception_ptr(closed_error({})), T{});
  }

  net::awaitable<bool> close_all(std::vector<std::shared_ptr<McpSession>> all) {
    ActiveGuard active(runtime_);
    auto close_one = [&](std::size_t i) { return all[i]->close(); };
    net::awaitable<std::vector<std::exception_ptr>> closing =
        mcp_all_of(runtime_, all.size(), close_one);
    (void)co_await std::move(closing);
    co_return true;
  }

  Tool make_tool(const std::string& server, const json& spec) {
    const std::string mcp_name = spec["name"].get<std::string>();
    std::string prefix;
    if (!options_->additional_tool_name_prefix.empty())
      prefix += options_->additional_tool_name_prefix + "__";
    if (options_->prefix_tool_name_with_server_name) prefix += server + "__";
    std::string description = spec.contains("description") && spec["description"].is_string()
                                  ? spec["description"].get<std::string>()
                                  : std::string();
    json schema = mcp_tool_schema(spec.value("inputSchema", json::object()));
    Tool::AsyncFn fn = [core = shared_from_this(), server, mcp_name](json args,
                                                                     ToolRuntime runtime) {
      return run_tool(core, server, mcp_name, std::move(args), runtime);
    };
    return Tool(prefix + mcp_name, std::move(description), std::move(schema), std::move(fn));
  }

  static net::awaitable<ToolResult> run_tool(std::shared_ptr<McpClientCore> core,
                                             std::string server, std::string tool, json args,
                                             ToolRuntime runtime) {
    McpCallOptions options;
    net::awaitable<json> called =
        call(core, server, tool, std::move(args), options, runtime.context);
    const json result = co_await std::move(called);
    ToolResult out;
    out.message = mcp_tool_message(result, server, tool, *core->options_);
    co_return out;
  }

  McpRuntime runtime_;  // first: destroyed last, after everything that uses its io_context
  std::shared_ptr<const McpClientOptions> options_;
  std::vector<std::string> order_;
  std::map<std::string, std::shared_ptr<McpSession>> sessions_;
  std::shared_mutex gate_;  // shared: a call being spawned; unique: closing
  std::atomic<bool> closed_{false};
  std::shared_future<void> sessions_closed_{};  // set with closed_
};

}  // namespace detail

McpClient::McpClient(std::map<std::string, McpServerConfig> servers, McpClientOptions options)
    : core_(detail::McpClientCore::create(std::move(servers), std::move(options))) {}

McpClient::McpClient(const nlohmann::json& config) : McpClient(parse_mcp_config(config)) {}

McpClient::McpClient(McpConfig config)
    : McpClient(std::move(config.servers), std::move(config.options)) {}

McpClient::~McpClient() {
  if (core_) core_->end();
}

McpClient::McpClient(McpClient&&) noexcept = default;

McpClient& McpClient::operator=(McpClient&& other) noexcept {
  if (this != &other) {
    if (core_) core_->end();
    core_ = std::move(other.core_);
  }
  return *this;
}

std::vector<Tool> McpClient::get_tools(const std::vector<std::string>& servers) {
  return core_->block(core_->tools_io(servers));
}

net::awaitable<std::vector<Tool>> McpClient::aget_tools(std::vector<std::string> servers) {
  const std::shared_ptr<detail::McpClientCore> core = core_;
  net::awaitable<std::vector<Tool>> work = core->tools_io(std::move(servers));
  net::awaitable<std::vector<Tool>> op = detail::McpClientCore::on_io(core, std::move(work));
  std::vector<Tool> tools = co_await std::move(op);
  co_return tools;
}

std::vector<nlohmann::json> McpClient::list_tools(const std::string& server) {
  const std::shared_ptr<detail::McpSession> session = core_->session(server);
  return core_->block(session->tools());
}

nlohmann::json McpClient::call_tool(const std::string& server, const std::string& tool,
                                    const nlohmann::json& args, const McpCallOptions& options) {
  (void)core_->session(server);  // an unknown or closed server: said before anything starts
  return core_->block(
      detail::McpClientCore::call(core_, server, tool, args, options, /*context=*/nullptr));
}

net::awaitable<nlohmann::json> McpClient::acall_tool(std::string server, std::string tool,
                                                     nlohmann::json args, McpCallOptions options) {
  const std::shared_ptr<detail::McpClientCore> core = core_;
  net::awaitable<json> op = detail::McpClientCore::call(
      core, std::move(server), std::move(tool), std::move(args), std::move(options), nullptr);
  json result = co_await std::move(op);
  co_return result;
}

void McpClient::ping(const std::string& server) {
  const std::shared_ptr<detail::McpSession> session = core_->session(server);
  (void)core_->block(session->request("ping", nullptr, session->config().request_timeout, nullptr));
}

McpServerInfo McpClient::server_info(const std::string& server) {
  const std::shared_ptr<detail::McpSession> session = core_->session(server);
  return core_->block(session->info());
}

std::vector<std::string> McpClient::servers() const {
  return core_->order();
}

void McpClient::close() {
  core_->close();
}

std::vector<Tool> load_mcp_tools(const nlohmann::json& config) {
  McpConfig parsed = parse_mcp_config(config);
  auto core = detail::McpClientCore::create(std::move(parsed.servers), std::move(parsed.options));
  return core->block(core->tools_io({}));
}

}  // namespace sg
