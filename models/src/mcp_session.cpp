// SPDX-License-Identifier: MIT
#include "mcp_session.hpp"

#include <stategraph/core/log.hpp>
#include <stategraph/core/version.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <set>

#include "http_call.hpp"

// g++ 12 wrongly reports awaitable frames freed by the frame's own operator delete as mismatched
// (GCC bug 109224).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace sg::detail {
namespace net = boost::asio;
using nlohmann::json;

const std::vector<std::string> kMcpProtocolVersions = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                       "2024-11-05"};

namespace mcp_session_impl {

constexpr int kMethodNotFound = -32601;

std::string joined_versions() {
  std::string out;
  for (const auto& v : kMcpProtocolVersions) out += (out.empty() ? "" : ", ") + v;
  return out;
}

std::string describe_ms(std::chrono::milliseconds d) {
  return std::to_string(d.count()) + " ms";
}

LogLevel log_level_of(const std::string& level) {
  if (level == "debug") return LogLevel::debug;
  if (level == "info" || level == "notice") return LogLevel::info;
  if (level == "warning") return LogLevel::warn;
  return LogLevel::error;
}

}  // namespace mcp_session_impl

std::shared_ptr<McpLink> make_mcp_transport(McpRuntime& runtime, const std::string& server,
                                            const McpServerConfig& config,
                                            McpTransportEvents events) {
  switch (config.transport) {
    case McpTransport::stdio:
      return make_stdio_transport(runtime, server, config, std::move(events));
    case McpTransport::streamable_http:
      return make_http_transport(runtime, server, config, std::move(events));
    case McpTransport::sse:
      return make_sse_transport(runtime, server, config, std::move(events));
  }
  throw McpError(errc::kMcpConnection, "MCP server '" + server + "': unknown transport", server);
}

std::string mcp_dump(const json& message) {
  return message.dump(-1, ' ', false, json::error_handler_t::replace);
}

McpSession::McpSession(McpRuntime& runtime, std::string name, McpServerConfig config,
                       std::shared_ptr<const McpClientOptions> options)
    : runtime_(runtime),
      name_(std::move(name)),
      config_(std::move(config)),
      options_(std::move(options)) {}

net::awaitable<void> McpSession::ensure_ready() {
  for (;;) {
    if (state_ == State::closed) {
      throw McpError(errc::kMcpConnection, who() + ": the MCP client was closed", name_);
    }
    if (state_ == State::ready) co_return;
    if (state_ == State::connecting) {
      const std::shared_ptr<Attempt> attempt = attempt_;
      co_await attempt->done.wait();
      if (attempt->error) std::rethrow_exception(attempt->error);
      continue;
    }
    state_ = State::connecting;
    auto attempt = std::make_shared<Attempt>(runtime_.io());
    attempt_ = attempt;
    std::exception_ptr failure;
    try {
      co_await connect();
    } catch (...) {
      failure = std::current_exception();
    }
    // The attempt is over: only its waiters keep it (and its error, so that the error is
    // released by the callers it reaches, not held here).
    attempt_.reset();
    if (failure) {
      drop_connection();
      if (state_ != State::closed) state_ = State::idle;
      attempt->error = failure;
      attempt->done.set();
      std::rethrow_exception(failure);
    }
    if (state_ == State::closed) {  // closed while connecting
      attempt->error = std::make_exception_ptr(
          McpError(errc::kMcpConnection, who() + ": the MCP client was closed", name_));
      attempt->done.set();
      continue;
    }
    state_ = State::ready;
    attempt->done.set();
    co_return;
  }
}

net::awaitable<void> McpSession::connect() {
  const std::uint64_t generation = ++generation_;
  const std::weak_ptr<McpSession> weak = weak_from_this();
  McpTransportEvents events;
  events.message = [weak, generation](json message) {
    if (auto self = weak.lock()) self->on_message(generation, std::move(message));
  };
  events.malformed = [weak, generation](std::string what) {
    if (auto self = weak.lock()) self->on_malformed(generation, what);
  };
  events.closed = [weak, generation](std::exception_ptr error) {
    if (auto self = weak.lock()) self->on_closed(generation, std::move(error));
  };
  transport_ = make_mcp_transport(runtime_, name_, config_, std::move(events));
  const std::shared_ptr<McpLink> transport = transport_;
  co_await transport->start();

  json params = {{"protocolVersion", kMcpProtocolVersions.front()},
                 {"capabilities", json::object()},
                 {"clientInfo",
                  {{"name", options_->client_name},
                   {"version", options_->client_version.empty() ? std::string(kVersion)
                                                                : options_->client_version}}}};
  net::awaitable<json> initialize =
      exchange("initialize", std::move(params), config_.connect_timeout, nullptr);
  const json result = co_await std::move(initialize);
  if (!result.is_object() || !result.contains("protocolVersion") ||
      !result["protocolVersion"].is_string()) {
    throw McpError(
        errc::kMcpProtocol,
        who() + ": the initialize result has no protocolVersion: " + excerpt(result.dump(), 200),
        name_);
  }
  const std::string version = result["protocolVersion"].get<std::string>();
  if (std::find(kMcpProtocolVersions.begin(), kMcpProtocolVersions.end(), version) ==
      kMcpProtocolVersions.end()) {
    throw McpError(errc::kMcpProtocol,
                   who() + " answered protocol version '" + version +
                       "', which this client does not support (it supports " +
                       mcp_session_impl::joined_versions() + ")",
                   name_);
  }
  info_.protocol_version = version;
  info_.server_info = result.value("serverInfo", json::object());
  info_.capabilities = result.contains("capabilities") && result["capabilities"].is_object()
                           ? result["capabilities"]
                           : json::object();
  info_.instructions = result.contains("instructions") && result["instructions"].is_string()
                           ? result["instructions"].get<std::string>()
                           : std::string();
  transport->set_protocol_version(version);
  notify("notifications/initialized", nullptr);
  transport->initialized();
  log(LogLevel::debug, "MCP server connected",
      {{"server", name_}, {"protocol_version", version}, {"server_info", info_.server_info}});
}

net::awaitable<json> McpSession::request(std::string method, json params,
                                         std::chrono::milliseconds timeout,
                                         std::shared_ptr<McpCallControl> control) {
  for (int attempt = 0;; ++attempt) {
    co_await ensure_ready();
    if (control && control->cancel_requested) {
      throw CancelledError("the MCP request " + method + " to " + who() + " was cancelled");
    }
    bool expired = false;
    try {
      net::awaitable<json> sent = exchange(method, params, timeout, control);
      json result = co_await std::move(sent);
      co_return result;
    } catch (const McpSessionExpired&) {
      if (attempt > 0) throw;
      expired = true;
    }
    if (expired) {
      // The specification: a 404 to a request carrying the session id means the session is
      // gone; start a new one (initialize again) and send the request there.
      log(LogLevel::info, "MCP session expired, initializing again", {{"server", name_}});
      fail_all(std::make_exception_ptr(
          McpSessionExpired(errc::kMcpHttpStatus, who() + ": the session expired", name_, 404)));
      drop_connection();
      if (state_ != State::closed) state_ = State::idle;
    }
  }
}

net::awaitable<json> McpSession::exchange(std::string method, json params,
                                          std::chrono::milliseconds timeout,
                                          std::shared_ptr<McpCallControl> control) {
  const std::shared_ptr<McpLink> transport = transport_;
  if (!transport) {
    throw McpError(errc::kMcpConnection, who() + ": not connected", name_);
  }
  const std::int64_t id = ++next_id_;
  json message = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (control && control->on_progress) {
    if (!params.is_object()) params = json::object();
    params["_meta"]["progressToken"] = id;
  }
  if (!params.is_null()) message["params"] = std::move(params);
  Pending& entry = pending_[id];
  entry.method = method;
  entry.control = control;
  entry.wake = std::make_unique<net::steady_timer>(runtime_.io());
  if (timeout.count() > 0) {
    entry.wake->expires_after(timeout);
  } else {
    entry.wake->expires_at(net::steady_timer::time_point::max());
  }
  if (control) control->id = id;
  const std::weak_ptr<McpSession> weak = weak_from_this();
  transport->send(message, [weak, id](std::exception_ptr error) {
    if (auto self = weak.lock()) self->fail(id, std::move(error));
  });
  if (!entry.done()) {
    boost::system::error_code ignored;
    co_await entry.wake->async_wait(net::redirect_error(net::use_awaitable, ignored));
  }
  const auto it = pending_.find(id);
  Pending done = std::move(it->second);
  pending_.erase(it);
  if (done.result) co_return std::move(*done.result);
  if (done.error) std::rethrow_exception(done.error);
  // Timed out: tell the server, stop reading the reply.
  notify("notifications/cancelled", {{"requestId", id}, {"reason", "Request timed out"}});
  transport->forget(id);
  std::string text =
      who() + ": " + method + " got no answer within " + mcp_session_impl::describe_ms(timeout);
  if (!last_malformed_.empty())
    text += " (the server sent malformed JSON-RPC: " + last_malformed_ + ")";
  throw McpError(errc::kMcpTimeout, text, name_);
}

void McpSession::cancel(const std::shared_ptr<McpCallControl>& control, const std::string& reason) {
  control->cancel_requested = true;
  const auto it = control->id != 0 ? pending_.find(control->id) : pending_.end();
  if (it == pending_.end() || it->second.done() || it->second.control != control) return;
  notify("notifications/cancelled", {{"requestId", control->id}, {"reason", reason}});
  if (transport_) transport_->forget(control->id);
  it->second.error = std::make_exception_ptr(
      CancelledError("the MCP request " + it->second.method + " to " + who() + " was cancelled"));
  finish(it->second);
}

void McpSession::fail(std::int64_t id, std::exception_ptr error) {
  const auto it = pending_.find(id);
  if (it == pending_.end() || it->second.done()) return;
  it->second.error = std::move(error);
  finish(it->second);
}

void McpSession::finish(Pending& pending) {
  if (pending.wake) pending.wake->cancel();
}

void McpSession::fail_all(const std::exception_ptr& error) {
  for (auto& [id, pending] : pending_) {
    if (pending.done()) continue;
    pending.error = error;
    finish(pending);
  }
}

void McpSession::drop_connection() {
  ++generation_;
  if (!transport_) return;
  std::shared_ptr<McpLink> transport = std::move(transport_);
  net::co_spawn(
      runtime_.io(),
      [](McpRuntime* runtime, std::shared_ptr<McpLink> t) -> net::awaitable<void> {
        ActiveGuard active(*runtime);
        co_await t->close();
      }(&runtime_, std::move(transport)),
      net::detached);
}

void McpSession::send(const json& message) {
  if (!transport_) return;
  transport_->send(message, nullptr);
}

void McpSession::notify(const std::string& method, json params) {
  json message = {{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) message["params"] = std::move(params);
  send(message);
}

void McpSession::on_malformed(std::uint64_t generation, const std::string& what) {
  if (generation != generation_) return;
  last_malformed_ = what;
  log(LogLevel::warn, "MCP server sent malformed JSON-RPC", {{"server", name_}, {"what", what}});
}

void McpSession::on_closed(std::uint64_t generation, std::exception_ptr error) {
  if (generation != generation_) return;
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    log(LogLevel::warn, "MCP server connection lost", {{"server", name_}, {"error", e.what()}});
  }
  fail_all(error);
  drop_connection();
  tools_current_ = false;
  if (state_ != State::closed && state_ != State::connecting) state_ = State::idle;
}

void McpSession::on_message(std::uint64_t generation, json message) {
  if (generation != generation_) return;
  if (message.is_array()) {  // a batch (protocol 2025-03-26)
    for (auto& m : message) on_message(generation, std::move(m));
    return;
  }
  const bool valid = message.is_object() && message.value("jsonrpc", json()) == "2.0";
  const bool has_method = valid && message.contains("method") && message["method"].is_string();
  const bool has_id = valid && message.contains("id") &&
                      (message["id"].is_number_integer() || message["id"].is_string());
  if (has_method && has_id) {
    on_request(message);
  } else if (has_method) {
    on_notification(message);
  } else if (has_id) {
    on_response(message);
  } else {
    // Not JSON-RPC. When it carries the id of a waiting request, that request fails with it.
    if (message.is_object() && message.contains("id") && message["id"].is_number_integer()) {
      const std::int64_t id = message["id"].get<std::int64_t>();
      if (pending_.contains(id)) {
        fail(id, std::make_exception_ptr(McpError(
                     errc::kMcpProtocol,
                     who() + " sent an invalid JSON-RPC response: " + excerpt(message.dump(), 200),
                     name_)));
        return;
      }
    }
    on_malformed(generation, "a message that is not JSON-RPC 2.0: " + excerpt(message.dump(), 200));
  }
}

void McpSession::on_response(const json& message) {
  const json& raw_id = message["id"];
  const std::int64_t id = raw_id.is_number_integer() ? raw_id.get<std::int64_t>() : -1;
  const auto it = pending_.find(id);
  if (it == pending_.end() || it->second.done()) {
    log(LogLevel::debug, "MCP response to no waiting request", {{"server", name_}, {"id", raw_id}});
    return;
  }
  Pending& pending = it->second;
  if (message.contains("result")) {
    pending.result = message["result"];
  } else if (message.contains("error") && message["error"].is_object()) {
    const json& error = message["error"];
    const int code =
        error.contains("code") && error["code"].is_number_integer() ? error["code"].get<int>() : 0;
    const std::string text = error.contains("message") && error["message"].is_string()
                                 ? error["message"].get<std::string>()
                                 : excerpt(error.dump(), 200);
    pending.error =
        std::make_exception_ptr(McpError(errc::kMcpServerError,
                                         who() + ": " + pending.method + ": " + text +
                                             " (JSON-RPC error " + std::to_string(code) + ")",
                                         name_, 0, code));
  } else {
    pending.error = std::make_exception_ptr(McpError(
        errc::kMcpProtocol,
        who() + " sent a response with neither result nor error: " + excerpt(message.dump(), 200),
        name_));
  }
  finish(pending);
}

void McpSession::on_request(const json& message) {
  const std::string method = message["method"].get<std::string>();
  if (method == "ping") {
    send({{"jsonrpc", "2.0"}, {"id", message["id"]}, {"result", json::object()}});
    return;
  }
  // This client offers no roots, sampling or elicitation: every other request is unknown.
  log(LogLevel::debug, "MCP server request answered as unknown",
      {{"server", name_}, {"method", method}});
  send({{"jsonrpc", "2.0"},
        {"id", message["id"]},
        {"error",
         {{"code", mcp_session_impl::kMethodNotFound},
          {"message", "Method not found: " + method}}}});
}

void McpSession::on_notification(const json& message) {
  const std::string method = message["method"].get<std::string>();
  const json params = message.value("params", json::object());
  if (method == "notifications/progress") {
    if (!params.is_object() || !params.contains("progressToken")) return;
    const json& token = params["progressToken"];
    std::int64_t id = -1;
    if (token.is_number_integer()) {
      id = token.get<std::int64_t>();
    } else if (token.is_string()) {
      try {
        id = std::stoll(token.get<std::string>());
      } catch (const std::exception&) {
        return;
      }
    }
    const auto it = pending_.find(id);
    if (it == pending_.end() || it->second.done() || !it->second.control ||
        !it->second.control->on_progress)
      return;
    McpProgress progress = it->second.control->about;
    if (params.contains("progress") && params["progress"].is_number())
      progress.progress = params["progress"].get<double>();
    if (params.contains("total") && params["total"].is_number())
      progress.total = params["total"].get<double>();
    if (params.contains("message") && params["message"].is_string())
      progress.message = params["message"].get<std::string>();
    try {
      it->second.control->on_progress(progress);
    } catch (const std::exception& e) {
      log(LogLevel::warn, "MCP progress callback threw", {{"server", name_}, {"error", e.what()}});
    }
  } else if (method == "notifications/tools/list_changed") {
    ++tool_changes_;
    tools_current_ = false;
    if (!refreshing_) {
      refreshing_ = true;
      net::co_spawn(runtime_.io(), shared_from_this()->refresh_tools(), net::detached);
    }
  } else if (method == "notifications/message") {
    const std::string level = params.value("level", std::string("info"));
    log(mcp_session_impl::log_level_of(level), "MCP server log",
        {{"server", name_},
         {"level", level},
         {"logger", params.value("logger", json())},
         {"data", params.value("data", json())}});
  }
  // notifications/cancelled (of a request of the server: this client answers them at once) and
  // the other notifications need nothing.
}

net::awaitable<std::vector<json>> McpSession::list_tools() {
  if (!info_.capabilities.contains("tools")) co_return std::vector<json>{};
  std::vector<json> out;
  std::set<std::string> cursors;
  json params = json::object();
  for (;;) {
    net::awaitable<json> page = exchange("tools/list", params, config_.request_timeout, nullptr);
    const json result = co_await std::move(page);
    if (!result.is_object() || !result.contains("tools") || !result["tools"].is_array()) {
      throw McpError(
          errc::kMcpProtocol,
          who() + ": the tools/list result has no `tools` array: " + excerpt(result.dump(), 200),
          name_);
    }
    for (const auto& tool : result["tools"]) {
      if (tool.is_object() && tool.contains("name") && tool["name"].is_string() &&
          !tool["name"].get<std::string>().empty())
        out.push_back(tool);
    }
    if (!result.contains("nextCursor") || !result["nextCursor"].is_string()) break;
    const std::string cursor = result["nextCursor"].get<std::string>();
    if (cursor.empty()) break;
    if (!cursors.insert(cursor).second) {
      throw McpError(errc::kMcpProtocol,
                     who() + ": tools/list gave the cursor '" + cursor + "' twice", name_);
    }
    params = {{"cursor", cursor}};
  }
  co_return out;
}

net::awaitable<std::vector<json>> McpSession::tools() {
  for (;;) {
    co_await ensure_ready();
    if (tools_current_) co_return tools_;
    const std::uint64_t changes = tool_changes_;
    const std::uint64_t generation = generation_;
    std::vector<json> listed = co_await list_tools();
    if (generation != generation_) continue;  // reconnected meanwhile
    tools_ = std::move(listed);
    tools_current_ = changes == tool_changes_;
    co_return tools_;
  }
}

net::awaitable<void> McpSession::refresh_tools() {
  ActiveGuard active(runtime_);
  auto self = shared_from_this();
  std::string error;
  try {
    (void)co_await tools();
  } catch (const std::exception& e) {
    error = e.what();
  }
  refreshing_ = false;
  if (!error.empty()) {
    log(LogLevel::warn, "MCP tool list refresh failed", {{"server", name_}, {"error", error}});
    co_return;
  }
  if (!tools_current_ && state_ == State::ready) {  // changed again meanwhile
    refreshing_ = true;
    net::co_spawn(runtime_.io(), shared_from_this()->refresh_tools(), net::detached);
    co_return;
  }
  log(LogLevel::debug, "MCP tool list changed", {{"server", name_}, {"tools", tools_.size()}});
  if (options_->on_tools_changed) {
    try {
      options_->on_tools_changed(name_);
    } catch (const std::exception& e) {
      log(LogLevel::warn, "MCP on_tools_changed threw", {{"server", name_}, {"error", e.what()}});
    }
  }
}

net::awaitable<McpServerInfo> McpSession::info() {
  co_await ensure_ready();
  co_return info_;
}

net::awaitable<void> McpSession::close() {
  auto self = shared_from_this();
  state_ = State::closed;
  fail_all(std::make_exception_ptr(
      McpError(errc::kMcpConnection, who() + ": the MCP client was closed", name_)));
  ++generation_;
  if (transport_) {
    const std::shared_ptr<McpLink> transport = std::move(transport_);
    co_await transport->close();
  }
}

}  // namespace sg::detail
