// SPDX-License-Identifier: MIT
// The HTTP transports on curl's multi interface (curl_multi.hpp), driven by the client's I/O
// thread:
// - Streamable HTTP: every message is a POST to the endpoint; a request's reply is either JSON
//   or an SSE stream carrying the response and, before it, the server's notifications and
//   requests. The server's Mcp-Session-Id is kept and sent, and so is MCP-Protocol-Version once
//   negotiated. After initialization a GET opens the stream of the server's own messages (405:
//   it has none). A stream that ends after an event id but before the response is resumed with
//   a GET carrying Last-Event-ID, after the server's `retry` time. A stream ends once its request
//   is answered, even when the server keeps it open. close() sends DELETE.
// - The legacy HTTP+SSE transport (protocol 2024-11-05): a GET stream whose first event,
//   `endpoint`, says where to POST; every reply arrives on that stream.

#include <stategraph/core/log.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include "curl_multi.hpp"
#include "http_call.hpp"
#include "mcp_transport.hpp"
#include "sse.hpp"
#include "text.hpp"

// g++ 12 wrongly reports awaitable frames freed by the frame's own operator delete as mismatched
// (GCC bug 109224).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace sg::detail {
namespace net = boost::asio;
using nlohmann::json;

namespace mcp_http_impl {

/// The most of a JSON reply kept (larger replies fail); of an error reply, for its message.
constexpr std::size_t kMaxBody = std::size_t{64} << 20;
constexpr std::size_t kMaxErrorBody = 64 * 1024;

/// What one exchange got.
struct Exchange {
  int status = 0;
  std::string content_type{};  // lower case, without parameters
  std::string body{};          // when not an event stream
  bool stream = false;         // a 2xx text/event-stream
  bool answered = false;       // the awaited response arrived
  TransferEnd end = TransferEnd::none;
  std::string error{};
  std::string last_event_id{};
  std::optional<long> retry_ms{};
};

std::string header(const std::vector<std::pair<std::string, std::string>>& headers,
                   std::string_view name) {
  for (const auto& [n, v] : headers)
    if (n == name) return v;
  return {};
}

/// True when `message` answers the request with id `id`.
bool answers(const json& message, const json& id) {
  return message.is_object() && !message.contains("method") && message.contains("id") &&
         message["id"] == id && (message.contains("result") || message.contains("error"));
}

/// The text of a JSON-RPC error body, else an excerpt of the body.
std::string error_text(const std::string& body) {
  const json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_object() &&
      parsed["error"].contains("message") && parsed["error"]["message"].is_string())
    return parsed["error"]["message"].get<std::string>();
  return excerpt(body, 300);
}

/// scheme://host[:port] of `url`.
std::string origin_of(const std::string& url) {
  const std::size_t scheme = url.find("://");
  const std::size_t path = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  return path == std::string::npos ? url : url.substr(0, path);
}

/// `reference` (the legacy endpoint event) resolved against `base`.
std::string resolve_url(const std::string& base, const std::string& reference) {
  if (reference.starts_with("http://") || reference.starts_with("https://")) return reference;
  if (reference.starts_with("/")) return origin_of(base) + reference;
  std::string dir = base.substr(0, base.find_first_of("?#"));
  const std::size_t slash = dir.rfind('/');
  if (slash != std::string::npos && slash > dir.find("://") + 2) dir.resize(slash + 1);
  return dir + reference;
}

/// What both HTTP transports share: request specs with the configured headers, exchanges that
/// read an SSE stream as it arrives, and the transfers in flight (cancelled by close()).
class HttpBase : public McpLink {
 public:
  HttpBase(McpRuntime& runtime, std::string server, McpServerConfig config,
           McpTransportEvents events)
      : runtime_(runtime),
        server_(std::move(server)),
        config_(std::move(config)),
        events_(std::move(events)) {}

 protected:
  [[nodiscard]] std::string who() const {
    return "MCP server '" + server_ + "' (" + url_for_log(config_.url) + ")";
  }

  [[nodiscard]] std::shared_ptr<CurlMulti> multi() {
    if (!multi_) multi_ = CurlMulti::of(runtime_.io());
    return multi_;
  }

  [[nodiscard]] HttpRequestSpec spec(std::string url, std::string method, std::string body,
                                     const char* accept) const {
    HttpRequestSpec s;
    s.url = std::move(url);
    s.method = std::move(method);
    s.body = std::move(body);
    s.headers = {std::string("Accept: ") + accept, "User-Agent: stategraph", "Expect:"};
    if (!s.body.empty()) s.headers.emplace_back("Content-Type: application/json");
    if (!session_id_.empty()) s.headers.push_back("Mcp-Session-Id: " + session_id_);
    if (!protocol_version_.empty())
      s.headers.push_back("MCP-Protocol-Version: " + protocol_version_);
    for (const auto& [name, value] : config_.headers) s.headers.push_back(name + ": " + value);
    s.connect_timeout = config_.connect_timeout;
    return s;
  }

  /// Runs one request: an event stream's messages are delivered as they arrive (`awaited`, when
  /// given, is the id of the request whose response ends the stream: the transfer ends there,
  /// as TransferEnd::complete); any other body is collected. `key` (non-empty) lets forget()
  /// cancel it.
  net::awaitable<Exchange> exchange(HttpRequestSpec request, const json* awaited,
                                    std::string key = {}) {
    Exchange out;
    auto transfer = std::make_shared<HttpTransfer>(request);
    live_.push_back(transfer);
    if (!key.empty()) by_request_[key] = transfer;
    multi()->start(transfer, std::chrono::milliseconds(0));
    SseParser parser;
    std::vector<SseEvent> events;
    bool headers_seen = false;
    for (;;) {
      co_await transfer->wait();
      HttpProgress p = transfer->take();
      if (p.headers_complete && !headers_seen) {
        headers_seen = true;
        out.status = p.status;
        std::string type = models_detail::lower(header(p.headers, "content-type"));
        out.content_type = std::string(models_detail::trim(type.substr(0, type.find(';'))));
        out.stream =
            out.status >= 200 && out.status < 300 && out.content_type == "text/event-stream";
        if (const std::string id = header(p.headers, "mcp-session-id"); !id.empty()) {
          session_id_ = id;
        }
      }
      if (!p.data.empty()) {
        if (out.stream) {
          parser.feed(p.data, events);
          for (auto& event : events) on_event(event, awaited, out);
          events.clear();
          if (out.answered && p.end == TransferEnd::none) {
            // The stream's request is answered: it is over, though a server may keep it open
            // (the specification says it SHOULD close it), which would hold the transfer and its
            // connection until close().
            multi()->cancel(transfer);
            out.end = TransferEnd::complete;
            break;
          }
        } else {
          const std::size_t cap = out.status >= 200 && out.status < 300 ? kMaxBody : kMaxErrorBody;
          if (out.body.size() < cap) out.body.append(p.data.substr(0, cap - out.body.size()));
        }
      }
      if (p.end != TransferEnd::none) {
        if (!headers_seen) out.status = p.status;
        out.end = p.end;
        out.error = p.error;
        break;
      }
    }
    std::erase(live_, transfer);
    if (!key.empty()) by_request_.erase(key);
    out.last_event_id = parser.last_event_id();
    out.retry_ms = parser.retry_ms();
    if (out.retry_ms) retry_ms_ = out.retry_ms;
    co_return out;
  }

  /// An event of a stream: a message, or (the legacy transport) its endpoint.
  virtual void on_event(const SseEvent& event, const json* awaited, Exchange& out) {
    if (!event.type.empty() && event.type != "message") return;
    if (event.data.empty()) return;  // a priming event or a keep-alive
    json message = json::parse(event.data, nullptr, /*allow_exceptions=*/false);
    if (message.is_discarded()) {
      events_.malformed("an event that is not JSON: " + excerpt(event.data, 200));
      return;
    }
    if (awaited != nullptr && answers(message, *awaited)) out.answered = true;
    events_.message(std::move(message));
  }

  void cancel_all() {
    closing_ = true;
    const auto live = live_;
    for (const auto& t : live) multi()->cancel(t);
  }

  void forget(const json& id) override {
    const auto it = by_request_.find(id.dump());
    if (it != by_request_.end()) multi()->cancel(it->second);
  }

  McpRuntime& runtime_;
  std::string server_;
  McpServerConfig config_;
  McpTransportEvents events_;
  std::shared_ptr<CurlMulti> multi_{};
  std::vector<std::shared_ptr<HttpTransfer>> live_{};
  std::map<std::string, std::shared_ptr<HttpTransfer>> by_request_{};
  std::string session_id_{};
  std::string protocol_version_{};
  std::optional<long> retry_ms_{};
  bool closing_ = false;
};

/// A failure of one message: to its callback (as its own type), else to the log.
template <class E>
void fail_message(const std::function<void(std::exception_ptr)>& failed, const E& error) {
  if (failed) {
    failed(std::make_exception_ptr(error));
  } else {
    log(LogLevel::warn, "MCP message failed",
        {{"server", error.server()}, {"error", error.what()}});
  }
}

class StreamableHttpTransport final : public HttpBase,
                                      public std::enable_shared_from_this<StreamableHttpTransport> {
 public:
  using HttpBase::HttpBase;

  net::awaitable<void> start() override {
    (void)multi();
    co_return;
  }

  void send(const json& message, std::function<void(std::exception_ptr)> failed) override {
    if (closing_) {
      fail_message(failed,
                   McpError(errc::kMcpConnection, who() + ": the connection is closed", server_));
      return;
    }
    net::co_spawn(runtime_.io(), shared_from_this()->post(message, std::move(failed)),
                  net::detached);
  }

  void set_protocol_version(const std::string& version) override { protocol_version_ = version; }

  void initialized() override {
    net::co_spawn(runtime_.io(), shared_from_this()->listen({}, json(), nullptr, 0), net::detached);
  }

  net::awaitable<void> close() override {
    auto self = shared_from_this();
    if (closing_) co_return;
    cancel_all();
    if (session_id_.empty()) co_return;
    // The specification's end of a session: DELETE with its id (405: the server does not let
    // clients end sessions).
    HttpRequestSpec request =
        spec(config_.url, "DELETE", {}, "application/json, text/event-stream");
    request.total_timeout = config_.shutdown_timeout;
    net::awaitable<Exchange> deleting = exchange(std::move(request), nullptr);
    const Exchange r = co_await std::move(deleting);
    if (r.status != 405 && (r.status < 200 || r.status >= 300)) {
      log(LogLevel::debug, "MCP session DELETE failed",
          {{"server", server_}, {"status", r.status}, {"error", r.error}});
    }
  }

 private:
  net::awaitable<void> post(json message, std::function<void(std::exception_ptr)> failed) {
    ActiveGuard active(runtime_);
    auto self = shared_from_this();
    const bool request = message.contains("method") && message.contains("id");
    const json id = request ? message["id"] : json();
    const bool had_session = !session_id_.empty();
    const std::string what = message.value("method", std::string("a response"));
    net::awaitable<Exchange> posting =
        exchange(spec(config_.url, {}, mcp_dump(message), "application/json, text/event-stream"),
                 request ? &id : nullptr, request ? id.dump() : std::string());
    Exchange r = co_await std::move(posting);
    if (closing_ || r.end == TransferEnd::cancelled) co_return;
    const std::string where = who() + ": " + what;
    if (r.status == 0) {
      fail_message(failed, McpError(errc::kMcpConnection, where + ": " + r.error, server_));
      co_return;
    }
    if (r.status == 404 && had_session) {
      fail_message(
          failed, McpSessionExpired(errc::kMcpHttpStatus, where + ": HTTP 404: the session expired",
                                    server_, 404));
      co_return;
    }
    if (r.status < 200 || r.status >= 300) {
      fail_message(
          failed, McpError(errc::kMcpHttpStatus,
                           where + ": HTTP " + std::to_string(r.status) + ": " + error_text(r.body),
                           server_, r.status));
      co_return;
    }
    if (!request || r.status == 202) co_return;
    if (r.stream) {
      if (r.answered) co_return;
      if (!r.last_event_id.empty()) {  // resumable: the answer comes on a GET stream
        const long delay = r.retry_ms.value_or(retry_ms_.value_or(1000));
        net::co_spawn(runtime_.io(), listen(r.last_event_id, id, failed, delay), net::detached);
        co_return;
      }
      fail_message(failed, McpError(errc::kMcpConnection,
                                    where + ": the event stream ended before the answer" +
                                        (r.end == TransferEnd::complete ? "" : ": " + r.error),
                                    server_));
      co_return;
    }
    if (r.end != TransferEnd::complete) {
      fail_message(failed, McpError(errc::kMcpConnection, where + ": " + r.error, server_));
      co_return;
    }
    if (r.content_type != "application/json") {
      fail_message(failed, McpError(errc::kMcpProtocol,
                                    where + ": unexpected content type '" + r.content_type +
                                        "' (expected application/json or text/event-stream)",
                                    server_));
      co_return;
    }
    json body = json::parse(r.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) {
      fail_message(failed,
                   McpError(errc::kMcpProtocol,
                            where + ": the reply is not JSON: " + excerpt(r.body, 200), server_));
      co_return;
    }
    bool answered = false;
    if (body.is_array()) {
      for (auto& m : body) {
        answered = answered || answers(m, id);
        events_.message(std::move(m));
      }
    } else {
      answered = answers(body, id);
      events_.message(std::move(body));
    }
    if (!answered) {
      fail_message(
          failed,
          McpError(errc::kMcpProtocol,
                   where + ": the reply does not answer the request: " + excerpt(r.body, 200),
                   server_));
    }
  }

  /// A GET stream: the server's own messages (awaited null), or the resumption of a request's
  /// stream. Reconnects after the server's retry time, or a backoff (1 s, x1.5, at most 30 s)
  /// when it broke, as the official SDK does; stops after three failures in a row.
  net::awaitable<void> listen(std::string last_id, json awaited,
                              std::function<void(std::exception_ptr)> failed, long delay_ms) {
    ActiveGuard active(runtime_);
    auto self = shared_from_this();
    int failures = 0;
    for (;;) {
      if (delay_ms > 0) {
        net::steady_timer timer(runtime_.io(), std::chrono::milliseconds(delay_ms));
        boost::system::error_code ignored;
        co_await timer.async_wait(net::redirect_error(net::use_awaitable, ignored));
      }
      if (closing_) co_return;
      HttpRequestSpec request = spec(config_.url, {}, {}, "text/event-stream");
      if (!last_id.empty()) request.headers.push_back("Last-Event-ID: " + last_id);
      net::awaitable<Exchange> getting =
          exchange(std::move(request), awaited.is_null() ? nullptr : &awaited,
                   awaited.is_null() ? std::string() : awaited.dump());
      const Exchange r = co_await std::move(getting);
      if (closing_ || r.answered || r.end == TransferEnd::cancelled) co_return;
      if (!r.last_event_id.empty()) last_id = r.last_event_id;
      if (r.status != 0 && !r.stream) {
        // 405: the server offers no such stream. Anything else: it will not give one.
        if (r.status != 405) {
          log(LogLevel::debug, "MCP GET stream refused",
              {{"server", server_}, {"status", r.status}, {"body", excerpt(r.body, 200)}});
        }
        if (!awaited.is_null()) {
          fail_message(failed, McpError(errc::kMcpHttpStatus,
                                        who() + ": resuming the answer's stream: HTTP " +
                                            std::to_string(r.status),
                                        server_, r.status));
        }
        co_return;
      }
      failures = r.end == TransferEnd::complete ? 0 : failures + 1;
      if (failures > 2) {
        if (!awaited.is_null()) {
          fail_message(failed,
                       McpError(errc::kMcpConnection,
                                who() + ": the answer's stream broke: " + r.error, server_));
        }
        co_return;
      }
      delay_ms = retry_ms_.value_or(
          static_cast<long>(std::min(30'000.0, 1000.0 * std::pow(1.5, failures))));
    }
  }
};

class LegacySseTransport final : public HttpBase,
                                 public std::enable_shared_from_this<LegacySseTransport> {
 public:
  LegacySseTransport(McpRuntime& runtime, std::string server, McpServerConfig config,
                     McpTransportEvents events)
      : HttpBase(runtime, std::move(server), std::move(config), std::move(events)),
        endpoint_ready_(runtime.io()) {}

  net::awaitable<void> start() override {
    auto self = shared_from_this();
    net::co_spawn(runtime_.io(), self->listen(), net::detached);
    const bool ready = co_await endpoint_ready_.wait(config_.connect_timeout);
    if (!ready || endpoint_.empty()) {
      cancel_all();
      throw McpError(errc::kMcpConnection,
                     who() + ": no endpoint event on the SSE stream" +
                         (start_error_.empty() ? std::string() : ": " + start_error_),
                     server_);
    }
  }

  void send(const json& message, std::function<void(std::exception_ptr)> failed) override {
    if (closing_ || endpoint_.empty()) {
      fail_message(failed,
                   McpError(errc::kMcpConnection, who() + ": the connection is closed", server_));
      return;
    }
    net::co_spawn(runtime_.io(), shared_from_this()->post(message, std::move(failed)),
                  net::detached);
  }

  net::awaitable<void> close() override {
    cancel_all();
    co_return;
  }

 private:
  void on_event(const SseEvent& event, const json* awaited, Exchange& out) override {
    if (event.type == "endpoint") {
      endpoint_ = resolve_url(config_.url, std::string(models_detail::trim(event.data)));
      endpoint_ready_.set();
      return;
    }
    HttpBase::on_event(event, awaited, out);
  }

  net::awaitable<void> listen() {
    ActiveGuard active(runtime_);
    auto self = shared_from_this();
    net::awaitable<Exchange> getting =
        exchange(spec(config_.url, {}, {}, "text/event-stream"), nullptr);
    const Exchange r = co_await std::move(getting);
    if (closing_) co_return;
    std::string why = r.status == 0 ? r.error
                      : !r.stream   ? "HTTP " + std::to_string(r.status) + ": " + error_text(r.body)
                      : r.end == TransferEnd::complete ? "the server ended the event stream"
                                                       : r.error;
    if (!endpoint_ready_.is_set()) {
      start_error_ = why;
      endpoint_ready_.set();
      co_return;
    }
    if (events_.closed) {
      events_.closed(std::make_exception_ptr(
          McpError(errc::kMcpConnection, who() + ": " + why, server_, r.stream ? 0 : r.status)));
    }
  }

  net::awaitable<void> post(json message, std::function<void(std::exception_ptr)> failed) {
    ActiveGuard active(runtime_);
    auto self = shared_from_this();
    const std::string what = message.value("method", std::string("a response"));
    net::awaitable<Exchange> posting =
        exchange(spec(endpoint_, {}, mcp_dump(message), "application/json"), nullptr);
    const Exchange r = co_await std::move(posting);
    if (closing_ || r.end == TransferEnd::cancelled) co_return;
    if (r.status == 0) {
      fail_message(failed,
                   McpError(errc::kMcpConnection, who() + ": " + what + ": " + r.error, server_));
    } else if (r.status < 200 || r.status >= 300) {
      fail_message(failed, McpError(errc::kMcpHttpStatus,
                                    who() + ": " + what + ": HTTP " + std::to_string(r.status) +
                                        ": " + error_text(r.body),
                                    server_, r.status));
    }
  }

  McpEvent endpoint_ready_;
  std::string endpoint_{};
  std::string start_error_{};
};

}  // namespace mcp_http_impl

std::shared_ptr<McpLink> make_http_transport(McpRuntime& runtime, const std::string& server,
                                             const McpServerConfig& config,
                                             McpTransportEvents events) {
  return std::make_shared<mcp_http_impl::StreamableHttpTransport>(runtime, server, config,
                                                                  std::move(events));
}

std::shared_ptr<McpLink> make_sse_transport(McpRuntime& runtime, const std::string& server,
                                            const McpServerConfig& config,
                                            McpTransportEvents events) {
  return std::make_shared<mcp_http_impl::LegacySseTransport>(runtime, server, config,
                                                             std::move(events));
}

}  // namespace sg::detail
