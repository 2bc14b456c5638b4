// SPDX-License-Identifier: MIT
#pragma once
// One server of an MCP client: its transport, the JSON-RPC exchange on it (requests with their
// timeouts, cancellation and progress; answers to the server's pings and other requests), the
// initialize handshake and the tool list. Runs on the client's I/O thread only.

#include <stategraph/models/mcp.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "mcp_transport.hpp"

namespace sg::detail {

/// The protocol versions this client speaks, newest first (the first is what it asks for).
extern const std::vector<std::string> kMcpProtocolVersions;

/// What a caller's request shares with the I/O thread. Filled by the caller before the request
/// starts; then touched on the I/O thread only, until the request ended (the caller then drops
/// on_progress, so that its callbacks are destroyed on its side).
struct McpCallControl {
  /// Called with each progress notification of the request (the request then asks for them).
  std::function<void(const McpProgress&)> on_progress{};
  /// Copied into each progress notification (server, tool, args).
  McpProgress about{};
  bool cancel_requested = false;
  std::int64_t id = 0;  // the id of the request sent last (0: none yet)
};

/// A connection to one server, connected on first use and again after it was lost.
class McpSession : public std::enable_shared_from_this<McpSession> {
 public:
  McpSession(McpRuntime& runtime, std::string name, McpServerConfig config,
             std::shared_ptr<const McpClientOptions> options);
  McpSession(const McpSession&) = delete;
  McpSession& operator=(const McpSession&) = delete;

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] const McpServerConfig& config() const noexcept { return config_; }

  /// Sends a request (connecting first) and returns its result. A request whose HTTP session
  /// expired is sent once more on a new session. `timeout` 0: none. Throws McpError,
  /// CancelledError.
  boost::asio::awaitable<nlohmann::json> request(std::string method, nlohmann::json params,
                                                 std::chrono::milliseconds timeout,
                                                 std::shared_ptr<McpCallControl> control);
  /// The server's tools (all pages), read again after a list change. Throws McpError.
  boost::asio::awaitable<std::vector<nlohmann::json>> tools();
  /// What initialize returned (connecting first). Throws McpError.
  boost::asio::awaitable<McpServerInfo> info();
  /// Cancels the request of `control` (or keeps it from starting): the server is told with
  /// notifications/cancelled and the request ends with CancelledError.
  void cancel(const std::shared_ptr<McpCallControl>& control, const std::string& reason);
  /// Ends the connection; later requests fail. Never throws.
  boost::asio::awaitable<void> close();

 private:
  struct Pending {
    std::string method{};
    std::unique_ptr<boost::asio::steady_timer> wake{};  // the waiting request sleeps on it
    std::optional<nlohmann::json> result{};
    std::exception_ptr error{};
    std::shared_ptr<McpCallControl> control{};
    [[nodiscard]] bool done() const noexcept { return result.has_value() || error != nullptr; }
  };
  struct Attempt {
    explicit Attempt(boost::asio::io_context& io) : done(io) {}
    McpEvent done;
    std::exception_ptr error{};
  };
  enum class State : std::uint8_t { idle, connecting, ready, closed };

  boost::asio::awaitable<void> ensure_ready();
  boost::asio::awaitable<void> connect();
  /// One request on the current connection.
  boost::asio::awaitable<nlohmann::json> exchange(std::string method, nlohmann::json params,
                                                  std::chrono::milliseconds timeout,
                                                  std::shared_ptr<McpCallControl> control);
  boost::asio::awaitable<std::vector<nlohmann::json>> list_tools();
  boost::asio::awaitable<void> refresh_tools();

  void on_message(std::uint64_t generation, nlohmann::json message);
  void on_malformed(std::uint64_t generation, const std::string& what);
  void on_closed(std::uint64_t generation, std::exception_ptr error);
  void on_request(const nlohmann::json& message);
  void on_notification(const nlohmann::json& message);
  void on_response(const nlohmann::json& message);

  void send(const nlohmann::json& message);
  void notify(const std::string& method, nlohmann::json params);
  /// Ends request `id` with `error` (when it is still waiting).
  void fail(std::int64_t id, std::exception_ptr error);
  void finish(Pending& pending);
  void fail_all(const std::exception_ptr& error);
  /// Drops the current connection (closing its transport in the background).
  void drop_connection();
  [[nodiscard]] std::string who() const { return "MCP server '" + name_ + "'"; }

  McpRuntime& runtime_;
  std::string name_;
  McpServerConfig config_;
  std::shared_ptr<const McpClientOptions> options_;
  std::shared_ptr<McpLink> transport_{};
  std::uint64_t generation_ = 0;
  State state_ = State::idle;
  std::shared_ptr<Attempt> attempt_{};
  McpServerInfo info_{};
  std::unordered_map<std::int64_t, Pending> pending_{};
  std::int64_t next_id_ = 0;
  std::vector<nlohmann::json> tools_{};
  bool tools_current_ = false;
  std::uint64_t tool_changes_ = 0;  // list_changed notifications seen
  bool refreshing_ = false;
  std::string last_malformed_{};
};

}  // namespace sg::detail
