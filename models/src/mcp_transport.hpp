// SPDX-License-Identifier: MIT
#pragma once
// The MCP client's transports (stdio, Streamable HTTP, legacy HTTP+SSE) and what they share: the
// client's I/O thread (McpRuntime), a one-shot event for coroutines on it, and the interface the
// session drives. Everything here runs on the I/O thread, so nothing in it is synchronized.

#include <stategraph/models/mcp.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sg::detail {

/// The thread a client's connections run on: one io_context, run by one thread that blocks
/// SIGPIPE (a write to a server that exited fails with EPIPE instead of killing the process).
/// `active` counts the coroutines of the connections, so that shutting down waits for them.
class McpRuntime {
 public:
  McpRuntime();
  ~McpRuntime();
  McpRuntime(const McpRuntime&) = delete;
  McpRuntime& operator=(const McpRuntime&) = delete;

  [[nodiscard]] boost::asio::io_context& io() noexcept { return io_; }
  /// True on the I/O thread (false once it was joined).
  [[nodiscard]] bool on_io_thread() const noexcept {
    return std::this_thread::get_id() == thread_id_.load();
  }
  /// Waits (up to `limit`) for the counted coroutines to end, then stops and joins the thread.
  /// Not on the I/O thread. Idempotent; a second caller waits for the first.
  void stop(std::chrono::milliseconds limit);

  std::atomic<int> active{0};

 private:
  boost::asio::io_context io_{1};
  std::unique_ptr<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::thread thread_;
  std::atomic<std::thread::id> thread_id_{};
  std::mutex stop_mu_;
  bool stopped_ = false;  // guarded by stop_mu_
};

/// Counts a coroutine in McpRuntime::active while it lives.
class ActiveGuard {
 public:
  explicit ActiveGuard(McpRuntime& runtime) noexcept : runtime_(&runtime) {
    runtime_->active.fetch_add(1, std::memory_order_relaxed);
  }
  ~ActiveGuard() { runtime_->active.fetch_sub(1, std::memory_order_release); }
  ActiveGuard(const ActiveGuard&) = delete;
  ActiveGuard& operator=(const ActiveGuard&) = delete;

 private:
  McpRuntime* runtime_;
};

/// A one-shot event coroutines on the I/O thread wait for, with a timeout.
class McpEvent {
 public:
  explicit McpEvent(boost::asio::io_context& io) : io_(&io) {}
  /// Wakes every waiter, now and later.
  void set() {
    set_ = true;
    for (auto* t : waiters_) t->cancel();
  }
  [[nodiscard]] bool is_set() const noexcept { return set_; }
  /// Returns once set() was called or `timeout` passed (0: no timeout); true when set.
  boost::asio::awaitable<bool> wait(std::chrono::milliseconds timeout = {}) {
    if (set_) co_return true;
    boost::asio::steady_timer timer(*io_);
    if (timeout.count() > 0) {
      timer.expires_after(timeout);
    } else {
      timer.expires_at(boost::asio::steady_timer::time_point::max());
    }
    waiters_.push_back(&timer);
    boost::system::error_code ignored;
    co_await timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ignored));
    std::erase(waiters_, &timer);
    co_return set_;
  }

 private:
  boost::asio::io_context* io_;
  bool set_ = false;
  std::vector<boost::asio::steady_timer*> waiters_{};
};

/// What a transport reports to its session (on the I/O thread).
struct McpTransportEvents {
  /// A JSON value received (a message; the session checks its shape).
  std::function<void(nlohmann::json)> message{};
  /// Something received that is not JSON (the text says what); the connection goes on.
  std::function<void(std::string)> malformed{};
  /// The connection ended on its own (the server exited, the stream broke): the error says why.
  std::function<void(std::exception_ptr)> closed{};
};

/// A failure of one message that a new session may fix: an HTTP server answered 404 to a request
/// carrying its session id (the session expired).
class McpSessionExpired : public McpError {
 public:
  using McpError::McpError;
};

/// One connection to a server over its transport. Used on the I/O thread only.
class McpLink {
 public:
  virtual ~McpLink() = default;
  /// Starts the connection (spawns the process; the legacy transport waits for its endpoint).
  /// Throws McpError.
  virtual boost::asio::awaitable<void> start() = 0;
  /// Sends a message. A failure of this message alone (an HTTP error status, a reply that is not
  /// JSON-RPC) goes to `failed`; a broken connection goes to events.closed.
  virtual void send(const nlohmann::json& message,
                    std::function<void(std::exception_ptr)> failed) = 0;
  /// After initialize: the negotiated version (HTTP sends it in a header).
  virtual void set_protocol_version(const std::string& /*version*/) {}
  /// After notifications/initialized (Streamable HTTP opens its GET stream).
  virtual void initialized() {}
  /// The request `id` was given up (timeout, cancellation): HTTP stops reading its reply.
  virtual void forget(const nlohmann::json& /*id*/) {}
  /// Ends the connection as the specification says for the transport. Never throws.
  virtual boost::asio::awaitable<void> close() = 0;
};

/// The transport of `config` (its `transport`). Throws McpError (errc::kMcpConnection) for a
/// configuration it cannot use.
std::shared_ptr<McpLink> make_mcp_transport(McpRuntime& runtime, const std::string& server,
                                            const McpServerConfig& config,
                                            McpTransportEvents events);

std::shared_ptr<McpLink> make_stdio_transport(McpRuntime& runtime, const std::string& server,
                                              const McpServerConfig& config,
                                              McpTransportEvents events);
std::shared_ptr<McpLink> make_http_transport(McpRuntime& runtime, const std::string& server,
                                             const McpServerConfig& config,
                                             McpTransportEvents events);
std::shared_ptr<McpLink> make_sse_transport(McpRuntime& runtime, const std::string& server,
                                            const McpServerConfig& config,
                                            McpTransportEvents events);

/// JSON as one line (invalid UTF-8 replaced), as the transports send it.
std::string mcp_dump(const nlohmann::json& message);

}  // namespace sg::detail
