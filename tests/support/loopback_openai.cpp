// SPDX-License-Identifier: MIT
#include "support/loopback_openai.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <deque>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>  // before Boost.Asio's awaitable headers (Boost 1.74 omits it)

// g++ 12 wrongly reports awaitable frames freed by the frame's own operator delete as mismatched
// (GCC bug 109224).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace sg::testing {
namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// The text of an OpenAI message's content (a string or a list of text parts).
std::string content_text(const nlohmann::json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (content.is_array()) {
    for (const auto& part : content) {
      if (part.is_object() && part.value("type", "") == "text") text += part.value("text", "");
    }
  }
  return text;
}

std::size_t count_words(const std::string& text) {
  std::istringstream in(text);
  std::size_t n = 0;
  for (std::string w; in >> w;) ++n;
  return n;
}

std::string last_user_text(const nlohmann::json& request) {
  std::string text;
  if (request.contains("messages") && request["messages"].is_array()) {
    for (const auto& m : request["messages"]) {
      if (m.is_object() && m.value("role", "") == "user")
        text = content_text(m.value("content", nlohmann::json()));
    }
  }
  return text;
}

/// Whether the request offers a tool named `name`.
bool offers_tool(const nlohmann::json& request, const std::string& name) {
  if (!request.contains("tools") || !request["tools"].is_array()) return false;
  for (const auto& tool : request["tools"]) {
    if (tool.is_object() && tool.contains("function") && tool["function"].is_object() &&
        tool["function"].value("name", "") == name) {
      return true;
    }
  }
  return false;
}

/// Whether a tool result follows the request's last user message.
bool tool_result_after_last_user(const nlohmann::json& request) {
  bool result = false;
  if (request.contains("messages") && request["messages"].is_array()) {
    for (const auto& m : request["messages"]) {
      if (!m.is_object()) continue;
      const std::string role = m.value("role", "");
      if (role == "user") result = false;
      if (role == "tool") result = true;
    }
  }
  return result;
}

std::size_t prompt_words(const nlohmann::json& request) {
  std::size_t n = 0;
  if (request.contains("messages") && request["messages"].is_array()) {
    for (const auto& m : request["messages"]) {
      if (m.is_object()) n += count_words(content_text(m.value("content", nlohmann::json())));
    }
  }
  return n;
}

/// The pieces a default reply streams: the words of the echo (each with its trailing space), or
/// `chunks` tokens.
std::vector<std::string> reply_pieces(const nlohmann::json& request, int chunks) {
  std::vector<std::string> pieces;
  if (chunks > 0) {
    for (int i = 1; i <= chunks; ++i) pieces.push_back("tok" + std::to_string(i) + " ");
    return pieces;
  }
  const std::string text = "echo: " + last_user_text(request);
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    end = end == std::string::npos ? text.size() : end + 1;
    pieces.push_back(text.substr(start, end - start));
    start = end;
  }
  return pieces;
}

std::string model_of(const nlohmann::json& request) {
  return request.is_object() ? request.value("model", "loopback") : "loopback";
}

nlohmann::json usage_of(const nlohmann::json& request, std::size_t completion) {
  const std::size_t prompt = prompt_words(request);
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion}};
}

/// A chat completion answering `request` with `message`, `completion` tokens long.
nlohmann::json completion_of(const nlohmann::json& request, const std::string& id,
                             nlohmann::json message, const char* finish_reason,
                             std::size_t completion) {
  return {{"id", id},
          {"object", "chat.completion"},
          {"created", 1700000000},
          {"model", model_of(request)},
          {"choices",
           {{{"index", 0}, {"message", std::move(message)}, {"finish_reason", finish_reason}}}},
          {"usage", usage_of(request, completion)}};
}

nlohmann::json completion_from_pieces(const nlohmann::json& request, const std::string& id,
                                      const std::vector<std::string>& pieces) {
  std::string text;
  for (const auto& p : pieces) text += p;
  return completion_of(request, id, {{"role", "assistant"}, {"content", text}}, "stop",
                       pieces.size());
}

/// The chat.completion.chunk events of one streamed reply to `request`: add() one per delta,
/// then take() them with the closing usage event.
class ChunkEvents {
 public:
  ChunkEvents(const nlohmann::json& request, const std::string& id)
      : request_(request),
        base_{{"id", id},
              {"object", "chat.completion.chunk"},
              {"created", 1700000000},
              {"model", model_of(request)}} {}

  void add(nlohmann::json delta, nlohmann::json finish) {
    nlohmann::json e = base_;
    e["choices"] = {
        {{"index", 0}, {"delta", std::move(delta)}, {"finish_reason", std::move(finish)}}};
    events_.push_back(std::move(e));
  }

  /// The events, the last one the usage of a reply of `completion` tokens.
  std::vector<nlohmann::json> take(std::size_t completion) {
    nlohmann::json usage = base_;
    usage["choices"] = nlohmann::json::array();
    usage["usage"] = usage_of(request_, completion);
    events_.push_back(std::move(usage));
    return std::move(events_);
  }

 private:
  const nlohmann::json& request_;
  nlohmann::json base_;
  std::vector<nlohmann::json> events_;
};

std::vector<nlohmann::json> chunks_from_pieces(const nlohmann::json& request, const std::string& id,
                                               const std::vector<std::string>& pieces) {
  ChunkEvents events(request, id);
  events.add({{"role", "assistant"}, {"content", ""}}, nullptr);
  for (const auto& p : pieces) events.add({{"content", p}}, nullptr);
  events.add(nlohmann::json::object(), "stop");
  return events.take(pieces.size());
}

bool wants_stream(const nlohmann::json& request) {
  return request.is_object() && request.value("stream", false);
}

std::string reason_phrase(int status) {
  const auto reason = http::obsolete_reason(static_cast<http::status>(status));
  return reason.empty() ? "Status" : std::string(reason);
}

char hex_digit(unsigned v) {
  return "0123456789abcdef"[v & 15U];
}

std::string chunk_frame(const std::string& data) {
  std::string size;
  std::size_t n = data.size();
  do {
    size.insert(size.begin(), hex_digit(static_cast<unsigned>(n & 15U)));
    n >>= 4U;
  } while (n != 0);
  return size + "\r\n" + data + "\r\n";
}

}  // namespace

std::string LoopbackRequest::header(std::string_view name) const {
  const std::string key = lower(name);
  for (const auto& [k, v] : headers) {
    if (k == key) return v;
  }
  return {};
}

nlohmann::json LoopbackRequest::json() const {
  return nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
}

LoopbackReply LoopbackReply::json(const nlohmann::json& body, int status) {
  LoopbackReply r;
  r.status = status;
  r.body = body.dump();
  return r;
}

namespace {

// Each reply gets its own id: a client makes the message id from it.
nlohmann::json completion(const std::string& finish_reason, nlohmann::json message) {
  static std::atomic<int> next{0};
  return {{"id", "chatcmpl-loopback-" + std::to_string(++next)},
          {"object", "chat.completion"},
          {"model", "loopback"},
          {"choices",
           {{{"index", 0}, {"finish_reason", finish_reason}, {"message", std::move(message)}}}}};
}

}  // namespace

LoopbackReply LoopbackReply::text(const std::string& content) {
  return json(completion("stop", {{"role", "assistant"}, {"content", content}}));
}

LoopbackReply LoopbackReply::tool_calls(
    const std::vector<std::pair<std::string, nlohmann::json>>& calls) {
  nlohmann::json tool_calls = nlohmann::json::array();
  for (std::size_t i = 0; i < calls.size(); ++i) {
    tool_calls.push_back(
        {{"id", "call_" + std::to_string(i)},
         {"type", "function"},
         {"function", {{"name", calls[i].first}, {"arguments", calls[i].second.dump()}}}});
  }
  return json(completion(
      "tool_calls", {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", tool_calls}}));
}

LoopbackReply LoopbackReply::error(int status, const std::string& message,
                                   std::vector<std::pair<std::string, std::string>> headers) {
  LoopbackReply r =
      json({{"error",
             {{"message", message},
              {"type", status == 429 ? "rate_limit_exceeded" : "invalid_request_error"},
              {"code", nullptr}}}},
           status);
  r.headers = std::move(headers);
  return r;
}

LoopbackReply LoopbackReply::sse(const std::vector<nlohmann::json>& events, bool done) {
  LoopbackReply r;
  r.stream = true;
  for (const auto& e : events) r.chunks.push_back("data: " + e.dump() + "\n\n");
  if (done) r.chunks.emplace_back("data: [DONE]\n\n");
  return r;
}

LoopbackReply LoopbackReply::raw_stream(std::vector<std::string> chunks) {
  LoopbackReply r;
  r.stream = true;
  r.chunks = std::move(chunks);
  return r;
}

LoopbackReply LoopbackReply::dropped() {
  LoopbackReply r;
  r.drop_before_answer = true;
  return r;
}

nlohmann::json echo_completion(const nlohmann::json& request, const std::string& id) {
  return completion_from_pieces(request, id, reply_pieces(request, 0));
}

std::vector<nlohmann::json> echo_completion_chunks(const nlohmann::json& request,
                                                   const std::string& id) {
  return chunks_from_pieces(request, id, reply_pieces(request, 0));
}

nlohmann::json tool_call_completion(const nlohmann::json& request, const std::string& id,
                                    const std::string& name, const nlohmann::json& args) {
  const nlohmann::json call = {{"id", "call_" + id},
                               {"type", "function"},
                               {"function", {{"name", name}, {"arguments", args.dump()}}}};
  return completion_of(request, id,
                       {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", {call}}},
                       "tool_calls", 1);
}

std::vector<nlohmann::json> tool_call_chunks(const nlohmann::json& request, const std::string& id,
                                             const std::string& name, const nlohmann::json& args) {
  ChunkEvents events(request, id);
  events.add({{"role", "assistant"}, {"content", nullptr}}, nullptr);
  // As OpenAI streams a call: its id and name first, then the arguments a few characters a chunk.
  events.add({{"tool_calls",
               {{{"index", 0},
                 {"id", "call_" + id},
                 {"type", "function"},
                 {"function", {{"name", name}, {"arguments", ""}}}}}}},
             nullptr);
  const std::string text = args.dump();
  constexpr std::size_t kPiece = 4;
  for (std::size_t at = 0; at < text.size(); at += kPiece) {
    events.add(
        {{"tool_calls", {{{"index", 0}, {"function", {{"arguments", text.substr(at, kPiece)}}}}}}},
        nullptr);
  }
  events.add(nlohmann::json::object(), "tool_calls");
  return events.take(1);
}

std::vector<float> loopback_embedding(std::string_view text, std::size_t dims) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  std::vector<float> v(dims);
  double norm = 0;
  for (std::size_t i = 0; i < dims; ++i) {
    h = h * 6364136223846793005ULL + 1442695040888963407ULL;
    v[i] =
        static_cast<float>(static_cast<double>(h >> 40U) / static_cast<double>(1ULL << 24U) - 0.5);
    norm += static_cast<double>(v[i]) * v[i];
  }
  norm = std::sqrt(norm);
  if (norm > 0) {
    for (auto& x : v) x = static_cast<float>(x / norm);
  }
  return v;
}

struct LoopbackOpenAI::Impl {
  LoopbackOptions options;
  // Before io: the sessions that io's destructor ends still count themselves out (InFlight).
  mutable std::mutex mu;
  std::size_t request_total = 0;  // guarded by mu, as are the two below
  std::size_t in_flight = 0;
  std::size_t max_in_flight = 0;
  std::size_t aborted = 0;
  net::io_context io;
  tcp::acceptor acceptor{io};
  std::vector<std::thread> threads;
  std::deque<LoopbackReply> queue;
  LoopbackHandler handler;
  std::vector<LoopbackRequest> requests;
  std::atomic<std::uint64_t> next_id{0};
  std::atomic<std::size_t> connections{0};

  explicit Impl(LoopbackOptions o) : options(o) {}

  [[nodiscard]] LoopbackStats stats() const {
    std::lock_guard lock(mu);
    return {request_total, in_flight, max_in_flight, aborted};
  }

  /// The answer to GET .../stats or POST .../stats/reset; nullopt for any other request.
  std::optional<LoopbackReply> stats_reply(const http::request<http::string_body>& req) {
    const std::string_view target(req.target().data(), req.target().size());
    const bool reset = req.method() == http::verb::post && target.ends_with("/stats/reset");
    if (!reset && !(req.method() == http::verb::get && target.ends_with("/stats"))) {
      return std::nullopt;
    }
    if (reset) {
      std::lock_guard lock(mu);
      max_in_flight = in_flight;
    }
    const LoopbackStats now = stats();
    return LoopbackReply::json({{"requests", now.requests},
                                {"in_flight", now.in_flight},
                                {"max_in_flight", now.max_in_flight},
                                {"aborted", now.aborted}});
  }

  /// Counts a request in flight from construction to destruction (its answer written, or the
  /// connection gone).
  struct InFlight {
    explicit InFlight(Impl& i) : impl(i) {
      std::lock_guard lock(impl.mu);
      ++impl.request_total;
      impl.max_in_flight = std::max(impl.max_in_flight, ++impl.in_flight);
    }
    ~InFlight() {
      std::lock_guard lock(impl.mu);
      --impl.in_flight;
    }
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;
    Impl& impl;
  };

  LoopbackReply choose(const LoopbackRequest& request, const LoopbackOpenAI& self) {
    LoopbackHandler h;
    {
      std::lock_guard lock(mu);
      if (options.record_requests) requests.push_back(request);
      if (!queue.empty()) {
        LoopbackReply r = std::move(queue.front());
        queue.pop_front();
        return r;
      }
      h = handler;
    }
    if (h) {
      if (auto r = h(request)) return std::move(*r);
    }
    return self.default_reply(request);
  }

  net::awaitable<void> session(tcp::socket sock, const LoopbackOpenAI* self) {
    boost::beast::flat_buffer buffer;
    boost::system::error_code ec;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(64U << 20U);
      co_await http::async_read(sock, buffer, parser, net::redirect_error(net::use_awaitable, ec));
      if (ec) co_return;
      http::request<http::string_body> req = parser.release();
      LoopbackRequest rec;
      rec.method = std::string(req.method_string());
      rec.target = std::string(req.target());
      for (const auto& field : req) {
        const auto name = field.name_string();
        rec.headers.emplace_back(lower(std::string_view(name.data(), name.size())),
                                 std::string(field.value()));
      }
      rec.body = req.body();
      std::optional<InFlight> counted;
      std::optional<LoopbackReply> stats = stats_reply(req);
      if (!stats) counted.emplace(*this);
      const LoopbackReply reply = stats ? *std::move(stats) : choose(rec, *self);

      if (reply.delay.count() > 0) {
        // A client that closes the connection during the delay (a cancelled call) ends the wait:
        // counted as aborted, and nothing is answered.
        struct Wait {
          net::steady_timer timer;
          bool readable = false;
        };
        const auto deadline = std::chrono::steady_clock::now() + reply.delay;
        auto wait = std::make_shared<Wait>(Wait{net::steady_timer(sock.get_executor(), deadline)});
        sock.async_wait(tcp::socket::wait_read, [wait](const boost::system::error_code& e) {
          if (e == net::error::operation_aborted) return;
          wait->readable = true;
          wait->timer.cancel();
        });
        co_await wait->timer.async_wait(net::redirect_error(net::use_awaitable, ec));
        boost::system::error_code unused;
        if (wait->readable && sock.available(unused) == 0) {
          std::lock_guard lock(mu);
          ++aborted;
          co_return;
        }
        sock.cancel(unused);   // stops watching
        if (wait->readable) {  // a pipelined request, not a close: the rest of the delay
          net::steady_timer rest(sock.get_executor(), deadline);
          co_await rest.async_wait(net::redirect_error(net::use_awaitable, ec));
        }
      }
      if (reply.drop_before_answer) {
        sock.shutdown(tcp::socket::shutdown_both, ec);
        sock.close(ec);
        co_return;
      }
      if (!reply.stream) {
        http::response<http::string_body> res{static_cast<http::status>(reply.status),
                                              req.version()};
        bool typed = false;
        for (const auto& [k, v] : reply.headers) {
          res.insert(k, v);
          if (lower(k) == "content-type") typed = true;
        }
        if (!typed) res.set(http::field::content_type, "application/json");
        res.body() = reply.body;
        res.keep_alive(req.keep_alive());
        res.prepare_payload();
        co_await http::async_write(sock, res, net::redirect_error(net::use_awaitable, ec));
        if (ec || !req.keep_alive()) co_return;
        continue;
      }

      std::string head = "HTTP/1.1 " + std::to_string(reply.status) + " " +
                         reason_phrase(reply.status) +
                         "\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                         "Transfer-Encoding: chunked\r\n";
      for (const auto& [k, v] : reply.headers) head += k + ": " + v + "\r\n";
      head += "\r\n";
      const std::size_t n = reply.chunks.size();
      const std::size_t drop_at =
          reply.drop_after_chunks < 0 ? n + 1 : static_cast<std::size_t>(reply.drop_after_chunks);
      if (reply.gap.count() == 0) {
        std::string all = head;
        for (std::size_t i = 0; i < n && i < drop_at; ++i) all += chunk_frame(reply.chunks[i]);
        if (drop_at > n) all += "0\r\n\r\n";
        co_await net::async_write(sock, net::buffer(all),
                                  net::redirect_error(net::use_awaitable, ec));
        if (ec) co_return;
      } else {
        co_await net::async_write(sock, net::buffer(head),
                                  net::redirect_error(net::use_awaitable, ec));
        if (ec) co_return;
        for (std::size_t i = 0; i < n && i < drop_at; ++i) {
          if (i > 0) {
            net::steady_timer timer(sock.get_executor(), reply.gap);
            co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
          }
          const std::string frame = chunk_frame(reply.chunks[i]);
          co_await net::async_write(sock, net::buffer(frame),
                                    net::redirect_error(net::use_awaitable, ec));
          if (ec) co_return;
        }
        if (drop_at > n) {
          co_await net::async_write(sock, net::buffer(std::string_view("0\r\n\r\n")),
                                    net::redirect_error(net::use_awaitable, ec));
          if (ec) co_return;
        }
      }
      if (drop_at <= n) {
        sock.shutdown(tcp::socket::shutdown_both, ec);
        sock.close(ec);
        co_return;
      }
      if (!req.keep_alive()) co_return;
    }
  }

  net::awaitable<void> accept_loop(const LoopbackOpenAI* self) {
    for (;;) {
      boost::system::error_code ec;
      tcp::socket sock = co_await acceptor.async_accept(
          net::make_strand(io), net::redirect_error(net::use_awaitable, ec));
      if (ec == net::error::operation_aborted || !acceptor.is_open()) co_return;
      if (ec) {
        net::steady_timer timer(io, std::chrono::milliseconds(10));
        co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
        continue;
      }
      ++connections;
      sock.set_option(tcp::no_delay(true), ec);
      auto executor = sock.get_executor();
      net::co_spawn(executor, session(std::move(sock), self), net::detached);
    }
  }
};

LoopbackOpenAI::LoopbackOpenAI() : LoopbackOpenAI(LoopbackOptions{}) {}

LoopbackOpenAI::LoopbackOpenAI(LoopbackOptions options) : impl_(std::make_unique<Impl>(options)) {
  const tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), options.port);
  impl_->acceptor.open(endpoint.protocol());
  impl_->acceptor.set_option(tcp::acceptor::reuse_address(true));
  impl_->acceptor.bind(endpoint);
  impl_->acceptor.listen(net::socket_base::max_listen_connections);
  net::co_spawn(impl_->io, impl_->accept_loop(this), net::detached);
  const int threads = options.threads < 1 ? 1 : options.threads;
  for (int i = 0; i < threads; ++i) impl_->threads.emplace_back([this] { impl_->io.run(); });
}

LoopbackOpenAI::~LoopbackOpenAI() {
  impl_->io.stop();
  for (auto& t : impl_->threads) t.join();
}

std::uint16_t LoopbackOpenAI::port() const {
  return impl_->acceptor.local_endpoint().port();
}

std::string LoopbackOpenAI::base_url() const {
  return "http://127.0.0.1:" + std::to_string(port()) + "/v1";
}

void LoopbackOpenAI::push(LoopbackReply reply) {
  std::lock_guard lock(impl_->mu);
  impl_->queue.push_back(std::move(reply));
}

void LoopbackOpenAI::set_handler(LoopbackHandler handler) {
  std::lock_guard lock(impl_->mu);
  impl_->handler = std::move(handler);
}

std::vector<LoopbackRequest> LoopbackOpenAI::requests() const {
  std::lock_guard lock(impl_->mu);
  return impl_->requests;
}

std::size_t LoopbackOpenAI::request_count() const {
  return impl_->stats().requests;
}

LoopbackStats LoopbackOpenAI::stats() const {
  return impl_->stats();
}

void LoopbackOpenAI::reset_max_in_flight() {
  std::lock_guard lock(impl_->mu);
  impl_->max_in_flight = impl_->in_flight;
}

std::size_t LoopbackOpenAI::connection_count() const {
  return impl_->connections.load();
}

LoopbackReply LoopbackOpenAI::default_reply(const LoopbackRequest& request) const {
  const nlohmann::json body = request.json();
  const std::string id = "chatcmpl-loopback-" + std::to_string(++impl_->next_id);
  if (request.target.find("/embeddings") != std::string::npos) {
    std::vector<std::string> inputs;
    if (body.is_object() && body.contains("input")) {
      if (body["input"].is_string()) {
        inputs.push_back(body["input"].get<std::string>());
      } else if (body["input"].is_array()) {
        for (const auto& t : body["input"])
          inputs.push_back(t.is_string() ? t.get<std::string>() : t.dump());
      }
    }
    const std::size_t dims = body.is_object() && body.contains("dimensions")
                                 ? body["dimensions"].get<std::size_t>()
                                 : 1536;
    nlohmann::json data = nlohmann::json::array();
    std::size_t tokens = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      data.push_back({{"object", "embedding"},
                      {"index", i},
                      {"embedding", loopback_embedding(inputs[i], dims)}});
      tokens += count_words(inputs[i]);
    }
    return LoopbackReply::json(
        {{"object", "list"},
         {"data", data},
         {"model", body.is_object() ? body.value("model", "loopback") : "loopback"},
         {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}});
  }
  if (request.target.find("/chat/completions") == std::string::npos) {
    return LoopbackReply::error(404, "unknown path " + request.target);
  }
  if (!body.is_object()) return LoopbackReply::error(400, "the body is not JSON");
  const LoopbackOptions& options = impl_->options;
  if (!options.call_tool.empty() && offers_tool(body, options.call_tool) &&
      !tool_result_after_last_user(body)) {
    const std::string& tool = options.call_tool;
    LoopbackReply reply =
        wants_stream(body)
            ? LoopbackReply::sse(tool_call_chunks(body, id, tool, options.tool_args))
            : LoopbackReply::json(tool_call_completion(body, id, tool, options.tool_args));
    reply.delay = options.delay;
    return reply;
  }
  const auto pieces = reply_pieces(body, impl_->options.chunks);
  LoopbackReply reply = wants_stream(body)
                            ? LoopbackReply::sse(chunks_from_pieces(body, id, pieces))
                            : LoopbackReply::json(completion_from_pieces(body, id, pieces));
  reply.delay = impl_->options.delay;
  return reply;
}

}  // namespace sg::testing
