// SPDX-License-Identifier: MIT
// sg::Server: the network side (Boost.Beast on Boost.Asio coroutines); the endpoints are in
// api.cpp.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/core/error.hpp>
#include <stategraph/core/time.hpp>
#include <stategraph/server/auth.hpp>
#include <stategraph/server/server.hpp>
#include <stategraph/store/memory_store.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_cat.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/uuid/name_generator_sha1.hpp>
#include <boost/uuid/string_generator.hpp>
#include <boost/uuid/uuid_io.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>  // before Boost.Asio's awaitable headers (Boost 1.74 omits it)

#include "api.hpp"
#include "cors.hpp"
#include "io_threads.hpp"
#include "request_log.hpp"
#include "run_queue.hpp"
#include "telemetry.hpp"

// g++ 12 wrongly reports awaitable frames freed by the frame's own operator delete as mismatched
// (GCC bug 109224).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace sg {

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

/// How often a wait or join response that is still waiting sends a newline.
constexpr std::chrono::seconds kKeepAliveInterval{10};
/// How long a wait response holds its header back, so that a run that ends sooner is answered
/// in one write.
constexpr std::chrono::milliseconds kHeaderDelay{20};

/// Compares without an early exit, so that the time taken does not tell how much of a key
/// matched.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

bool is_loopback(const std::string& host) {
  boost::system::error_code ec;
  const auto address = net::ip::make_address(host, ec);
  return !ec && address.is_loopback();
}

/// "http://HOST:PORT", an IPv6 host in brackets.
std::string http_url(const std::string& host, std::uint16_t port) {
  return fmt::format("http://{}:{}", host.find(':') != std::string::npos ? "[" + host + "]" : host,
                     port);
}

}  // namespace

std::string system_assistant_id(const std::string& graph_id) {
  // LangGraph's NAMESPACE_GRAPH (not one of RFC 4122's namespaces).
  static const boost::uuids::uuid kGraphNamespace =
      boost::uuids::string_generator()("6ba7b821-9dad-11d1-80b4-00c04fd430c8");
  return boost::uuids::to_string(boost::uuids::name_generator_sha1(kGraphNamespace)(graph_id));
}

struct Server::Impl {
  ServerOptions options;
  std::vector<server::GraphEntry> graphs;
  std::unique_ptr<server::Api> api;
  // One io_context per thread: a connection, its requests and the runs they start stay on one
  // thread (a run handed between threads cost about a third more CPU in bench/server's echo runs).
  std::unique_ptr<server::IoThreads> ios;
  std::unique_ptr<tcp::acceptor> acceptor;
  std::size_t next_io = 0;  // the io_context of the next connection (accept_loop only)
  std::atomic<std::size_t> connections{0};
  std::atomic<std::size_t> waits{0};    // wait and join responses waiting for their run's end
  std::atomic<std::size_t> follows{0};  // responses following a run (streams, waits, joins)
  std::uint16_t port = 0;               // bound port, set before the threads start
  /// Counts itself in `count` while it lives; `before` is the count it found.
  struct Counted {
    std::atomic<std::size_t>& count;
    std::size_t before = count.fetch_add(1, std::memory_order_relaxed);
    ~Counted() { count.fetch_sub(1, std::memory_order_relaxed); }
  };
  bool running = false;
  server::Cors cors;  // ServerOptions::cors

  explicit Impl(ServerOptions o) : options(std::move(o)), cors(options.cors) {}

  /// The response to a request that passed the network checks, with its CORS headers when it
  /// comes from a browser page of an allowed origin.
  [[nodiscard]] server::ApiResponse respond(const http::request<http::string_body>& req) const {
    const std::string_view origin = server::header(req, http::field::origin);
    const bool allowed =
        !origin.empty() && cors.allows(origin, server::header(req, http::field::host));
    server::ApiResponse response = answer(req, origin.empty() || allowed ? "" : origin);
    if (allowed) cors.add_headers(req, origin, response);
    return response;
  }

  /// The response to a request that passed the network checks; `refused_origin`: the Origin of
  /// a browser page that may not call the server (empty when none).
  [[nodiscard]] server::ApiResponse answer(const http::request<http::string_body>& req,
                                           std::string_view refused_origin) const {
    if (auto studio =
            server::studio_response({req.method_string().data(), req.method_string().size()},
                                    {req.target().data(), req.target().size()})) {
      return *std::move(studio);
    }
    if (!refused_origin.empty()) {
      return server::error_response(
          403, fmt::format("origin '{}' may not call this server (allow it with "
                           "ServerOptions::cors, or `stategraph serve --cors-allow-origin`)",
                           refused_origin));
    }
    const std::string_view target(req.target().data(), req.target().size());
    const std::string_view path = target.substr(0, target.find('?'));
    const bool open = req.method() == http::verb::options ||
                      std::find(options.public_paths.begin(), options.public_paths.end(), path) !=
                          options.public_paths.end();
    if (!options.api_key.empty() && !open) {
      const auto key = req.find("x-api-key");
      if (key == req.end() ||
          !same_secret({key->value().data(), key->value().size()}, options.api_key)) {
        return server::error_response(401, "missing or wrong x-api-key header");
      }
    }
    server::ApiRequest request;
    try {
      request = server::parse_target(std::string(req.method_string()),
                                     {req.target().data(), req.target().size()}, req.body());
    } catch (const server::ApiError& e) {
      return server::error_response(e.status, e.detail);
    }
    if (options.auth && options.auth->authenticates() && !open) {
      AuthRequest asked{std::string(req.method_string()),
                        std::string(path),
                        std::string(target.substr(std::min(target.size(), path.size() + 1))),
                        {}};
      for (const auto& field : req) {
        const auto name = field.name_string();
        std::string lower(name.data(), name.size());
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        asked.headers.emplace_back(std::move(lower),
                                   std::string(field.value().data(), field.value().size()));
      }
      try {
        request.user = std::make_shared<const AuthUser>(options.auth->authenticate_request(asked));
      } catch (const HttpException& e) {
        server::ApiResponse refused = server::error_response(e.status(), e.what());
        for (const auto& header : e.headers()) refused.headers.push_back(header);
        return refused;
      }
    }
    if (const auto id = req.find("last-event-id"); id != req.end()) {
      request.last_event_id.assign(id->value().data(), id->value().size());
    }
    if (const auto parent = req.find("traceparent"); parent != req.end()) {
      request.traceparent.assign(parent->value().data(), parent->value().size());
    }
    if (path == "/mcp") {
      request.accept = server::header(req, http::field::accept);
      request.content_type = server::header(req, http::field::content_type);
      if (const auto version = req.find("mcp-protocol-version"); version != req.end()) {
        request.mcp_protocol_version.assign(version->value().data(), version->value().size());
      }
    }
    return api->handle(request);
  }

  static http::response<http::string_body> to_http(server::ApiResponse&& r, unsigned version,
                                                   bool keep_alive) {
    http::response<http::string_body> res{static_cast<http::status>(r.status), version};
    res.set(http::field::server, "stategraph");
    if (!r.content_type.empty()) res.set(http::field::content_type, r.content_type);
    for (auto& [name, value] : r.headers) res.set(name, value);
    res.keep_alive(keep_alive);
    res.body() = std::move(r.body);
    res.prepare_payload();
    return res;
  }

  /// A 200 response whose body goes out in chunks: its header fields.
  template <class Body>
  static http::response<Body> chunked_response(const server::ApiResponse& r, unsigned version,
                                               bool keep_alive, const char* content_type) {
    http::response<Body> res{http::status::ok, version};
    res.set(http::field::server, "stategraph");
    res.set(http::field::content_type, content_type);
    res.set(http::field::cache_control, "no-cache");
    for (const auto& [name, value] : r.headers) res.set(name, value);
    res.keep_alive(keep_alive);
    res.chunked(true);
    return res;
  }

  /// Writes the header of a 200 response whose body follows in chunks.
  net::awaitable<void> write_chunked_header(beast::tcp_stream& stream, const server::ApiResponse& r,
                                            unsigned version, bool keep_alive,
                                            const char* content_type,
                                            boost::system::error_code& ec) {
    auto res = chunked_response<http::empty_body>(r, version, keep_alive, content_type);
    http::response_serializer<http::empty_body> serializer{res};
    stream.expires_after(options.idle_timeout);
    co_await http::async_write_header(stream, serializer,
                                      net::redirect_error(net::use_awaitable, ec));
  }

  /// Writes a response that follows a run (SSE events as they come, or the result when the run
  /// ends). Returns whether the connection stays usable. A client that goes away, or does not
  /// read for idle_timeout, ends it (and cancels the run when the request asked for that).
  net::awaitable<bool> follow_run(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                  server::ApiResponse& r, unsigned version, bool keep_alive) {
    const std::shared_ptr<server::RunFollow> follow = r.follow;
    const Counted following{follows};  // stop() lets ended runs' responses finish their writes
    const auto executor = co_await net::this_coro::executor;
    auto timer = std::make_shared<net::steady_timer>(executor);
    auto gone = std::make_shared<bool>(false);
    boost::system::error_code ec;
    // When a disconnect cancels the run, the connection is watched: the client sends nothing
    // while it waits for this response, so a read completes when it closes the connection (eof,
    // reset). (A wait for readability is not enough: Asio may complete it at once, on an earlier
    // edge.) Bytes it does send (a pipelined request) stay in `buffer` for the next request.
    // Otherwise a client that went away is noticed when a write to it fails.
    struct Watch {
      bool pending = false;
      std::shared_ptr<net::steady_timer> ended;
    };
    auto watch = std::make_shared<Watch>();
    tcp::socket& socket = stream.socket();
    if (follow->on_disconnect) {
      watch->pending = true;
      watch->ended = std::make_shared<net::steady_timer>(executor);
      socket.async_read_some(
          buffer.prepare(512),
          [watch, timer, gone, &buffer](boost::system::error_code read_ec, std::size_t n) {
            // `buffer` outlives this: follow_run waits for it before it returns.
            watch->pending = false;
            if (!read_ec) {
              buffer.commit(n);
            } else if (read_ec != net::error::operation_aborted) {
              *gone = true;
              timer->cancel();
            }
            watch->ended->cancel();
          });
    }
    const auto notify = [timer, executor] { net::post(executor, [timer] { timer->cancel(); }); };
    const auto wait_for_news = [&]() -> net::awaitable<void> {
      co_await timer->async_wait(net::redirect_error(net::use_awaitable, ec));
    };
    bool usable = keep_alive;
    if (follow->kind == server::RunFollow::Kind::stream) {
      co_await write_chunked_header(stream, r, version, keep_alive, "text/event-stream", ec);
      std::size_t next = follow->from;
      bool done = static_cast<bool>(ec);
      *gone = *gone || static_cast<bool>(ec);
      while (!done && !*gone) {
        std::vector<server::RunChannel::Event> batch;
        timer->expires_at(net::steady_timer::time_point::max());
        done = follow->channel->poll(next, batch, nullptr, notify);
        std::string text;
        for (const auto& event : batch) {
          const std::size_t id = next++;
          if (!event.mode.empty() && !follow->modes.empty() &&
              std::find(follow->modes.begin(), follow->modes.end(), event.mode) ==
                  follow->modes.end()) {
            continue;
          }
          text += fmt::format("event: {}\ndata: {}\n", event.name, event.data);
          if (follow->event_ids) text += fmt::format("id: {}\n", id);
          text += '\n';
        }
        if (!text.empty()) {
          stream.expires_after(options.idle_timeout);
          co_await net::async_write(stream, http::make_chunk(net::buffer(text)),
                                    net::redirect_error(net::use_awaitable, ec));
          if (ec) *gone = true;
        } else if (!done && batch.empty()) {  // (a batch of filtered-out events: poll again)
          stream.expires_never();
          co_await wait_for_news();
        }
      }
      if (!*gone) {
        stream.expires_after(options.idle_timeout);
        co_await net::async_write(stream, http::make_chunk_last(),
                                  net::redirect_error(net::use_awaitable, ec));
        if (ec) usable = false;
      }
    } else {
      // result: the run's result as the body; done: 204 once the run ended.
      // A result's header goes out at once, then a newline every kKeepAliveInterval until the
      // result (as the official JS server does): a client that limits its concurrent requests is
      // not held up by a long wait, and a dead client is noticed. When other waits share the
      // threads, the header waits up to kHeaderDelay for the run: one that ends sooner is
      // answered in one write (fewer writes and passes through the threads' queues per run).
      // Alone, the client reads the header while the run goes on.
      const bool with_body = follow->kind == server::RunFollow::Kind::result;
      const Counted counted{waits};
      bool header_sent = false;
      if (with_body && counted.before < ios->size()) {
        co_await write_chunked_header(stream, r, version, keep_alive, "application/json", ec);
        header_sent = true;
        *gone = *gone || static_cast<bool>(ec);
      }
      std::string result;
      std::vector<server::RunChannel::Event> none;
      while (!*gone) {
        if (with_body) {
          timer->expires_after(header_sent ? std::chrono::milliseconds(kKeepAliveInterval)
                                           : kHeaderDelay);
        } else {
          timer->expires_at(net::steady_timer::time_point::max());
        }
        if (follow->channel->poll(std::numeric_limits<std::size_t>::max(), none, &result, notify)) {
          break;
        }
        stream.expires_never();
        co_await wait_for_news();
        if (!with_body || ec || *gone) continue;
        if (!header_sent) {  // the delay passed
          co_await write_chunked_header(stream, r, version, keep_alive, "application/json", ec);
          header_sent = true;
        } else {  // the interval passed: a keep-alive newline
          stream.expires_after(options.idle_timeout);
          co_await net::async_write(stream, http::make_chunk(net::buffer("\n", 1)),
                                    net::redirect_error(net::use_awaitable, ec));
        }
        if (ec) *gone = true;
      }
      if (!*gone && with_body) {
        if (follow->result_body) result = follow->result_body(std::move(result));
        stream.expires_after(options.idle_timeout);
        if (header_sent) {
          co_await net::async_write(
              stream,
              beast::buffers_cat(http::make_chunk(net::buffer(result)), http::make_chunk_last()),
              net::redirect_error(net::use_awaitable, ec));
        } else {
          auto res =
              chunked_response<http::string_body>(r, version, keep_alive, "application/json");
          res.body() = std::move(result);
          co_await http::async_write(stream, res, net::redirect_error(net::use_awaitable, ec));
        }
        if (ec) usable = false;
      } else if (!*gone) {
        server::ApiResponse out;
        out.status = 204;
        out.content_type.clear();
        out.headers = std::move(r.headers);
        auto res = to_http(std::move(out), version, keep_alive);
        stream.expires_after(options.idle_timeout);
        co_await http::async_write(stream, res, net::redirect_error(net::use_awaitable, ec));
        if (ec) usable = false;
      }
    }
    if (watch->pending) {
      socket.cancel(ec);  // ends the watch for a closed connection
      while (watch->pending) {
        watch->ended->expires_at(net::steady_timer::time_point::max());
        co_await watch->ended->async_wait(net::redirect_error(net::use_awaitable, ec));
      }
    }
    if (*gone) {
      if (follow->on_disconnect) follow->on_disconnect();
      usable = false;
    }
    co_return usable;
  }

  net::awaitable<void> session(beast::tcp_stream stream) {
    beast::flat_buffer buffer;
    boost::system::error_code ec;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(options.max_body_bytes);
      parser.header_limit(static_cast<std::uint32_t>(options.max_header_bytes));
      stream.expires_after(options.idle_timeout);
      co_await http::async_read(stream, buffer, parser,
                                net::redirect_error(net::use_awaitable, ec));
      if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
          ec == net::error::operation_aborted || ec == net::error::connection_reset ||
          ec == net::error::eof) {
        break;
      }
      if (ec) {
        // A request the parser refused: say why, then close (the rest of it is unread).
        const unsigned status = ec == http::error::body_limit     ? 413
                                : ec == http::error::header_limit ? 431
                                                                  : 400;
        auto res =
            to_http(server::error_response(status, fmt::format("bad request: {}", ec.message())),
                    11, false);
        stream.expires_after(std::chrono::seconds(5));
        co_await http::async_write(stream, res, net::redirect_error(net::use_awaitable, ec));
        break;
      }
      const http::request<http::string_body>& req = parser.get();
      const bool keep_alive = req.keep_alive();
      const unsigned version = req.version();
      const auto began = std::chrono::steady_clock::now();
      server::ApiResponse response;
      if (ThreadPool* blocking = api->blocking_pool()) {
        // Its database round trips hold a thread of the pool, not this io thread.
        response = co_await server::on_pool(*blocking, [this, &req] { return respond(req); });
      } else {
        response = respond(req);
      }
      server::RequestLog done(req, response);
      if (response.follow) {
        const bool usable = co_await follow_run(stream, buffer, response, version, keep_alive);
        done.finish(began, options.slow_request, api->telemetry());
        if (!usable) break;
        continue;
      }
      auto res = to_http(std::move(response), version, keep_alive);
      stream.expires_after(options.idle_timeout);
      co_await http::async_write(stream, res, net::redirect_error(net::use_awaitable, ec));
      done.finish(began, options.slow_request, api->telemetry());
      if (ec || !keep_alive) break;
    }
    stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream.close();
    --connections;
  }

  net::awaitable<void> refuse(beast::tcp_stream stream) {
    boost::system::error_code ec;
    auto res = to_http(server::error_response(503, "too many connections"), 11, false);
    stream.expires_after(std::chrono::seconds(5));
    co_await http::async_write(stream, res, net::redirect_error(net::use_awaitable, ec));
    stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream.close();
    --connections;
  }

  net::awaitable<void> accept_loop() {
    for (;;) {
      boost::system::error_code ec;
      net::io_context& io = ios->at(next_io++ % ios->size());
      tcp::socket socket =
          co_await acceptor->async_accept(io, net::redirect_error(net::use_awaitable, ec));
      if (ec == net::error::operation_aborted || !acceptor->is_open()) co_return;
      if (ec) continue;  // a connection that failed while being accepted
      socket.set_option(tcp::no_delay(true), ec);
      auto executor = socket.get_executor();
      beast::tcp_stream stream(std::move(socket));
      const std::size_t open = ++connections;
      if (open > options.max_connections) {
        net::co_spawn(executor, refuse(std::move(stream)), net::detached);
      } else {
        net::co_spawn(executor, session(std::move(stream)), net::detached);
      }
    }
  }
};

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  const ServerOptions& o = impl_->options;
  if (o.threads < 1) throw Error(errc::kInvalidArgument, "the server needs at least one thread");
  if (o.max_body_bytes == 0 || o.max_header_bytes == 0 || o.max_connections == 0 ||
      o.idle_timeout.count() <= 0 || o.max_runs == 0 || o.sync_node_workers == 0) {
    throw Error(errc::kInvalidArgument,
                "server limits (body, header, connections, idle timeout, runs, sync node "
                "workers) must be positive");
  }
  impl_->ios = std::make_unique<server::IoThreads>(static_cast<std::size_t>(o.threads));
  impl_->acceptor = std::make_unique<tcp::acceptor>(impl_->ios->at(0));
}

Server::~Server() {
  stop();
}

void Server::add_graph(const std::string& graph_id, std::shared_ptr<const ServedGraph> graph) {
  if (impl_->running) throw Error(errc::kInvalidArgument, "add_graph after the server started");
  if (graph_id.empty()) throw Error(errc::kInvalidArgument, "a graph id must not be empty");
  if (!graph) throw Error(errc::kInvalidArgument, "graph '" + graph_id + "' is null");
  for (const auto& g : impl_->graphs) {
    if (g.graph_id == graph_id) {
      throw Error(errc::kInvalidArgument, "graph '" + graph_id + "' is already served");
    }
  }
  const std::string now = iso_timestamp_now();
  nlohmann::json assistant = {{"assistant_id", system_assistant_id(graph_id)},
                              {"graph_id", graph_id},
                              {"config", nlohmann::json::object()},
                              {"context", nlohmann::json::object()},
                              {"metadata", {{"created_by", "system"}}},
                              {"name", graph_id},
                              {"description", nullptr},
                              {"version", 1},
                              {"created_at", now},
                              {"updated_at", now}};
  impl_->graphs.push_back({graph_id, std::move(graph), std::move(assistant)});
}

void Server::start() {
  if (impl_->running) return;
  const ServerOptions& o = impl_->options;
  if (!is_loopback(o.host) && o.api_key.empty() && !(o.auth && o.auth->authenticates()) &&
      !o.allow_public_without_key) {
    throw Error(errc::kInvalidArgument,
                "refusing to serve on '" + o.host +
                    "' without an API key or authentication (set one, or allow it explicitly)");
  }
  boost::system::error_code ec;
  const auto address = net::ip::make_address(o.host, ec);
  if (ec) throw Error(errc::kInvalidArgument, "'" + o.host + "' is not an IP address");
  const tcp::endpoint endpoint(address, o.port);
  auto& acceptor = *impl_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    acceptor.close();
    throw Error(errc::kInvalidArgument,
                fmt::format("cannot listen on {}:{}: {}", o.host, o.port, ec.message()));
  }
  ServerOptions& options = impl_->options;
  if (!options.store) options.store = std::make_shared<InMemoryStore>();
  if (!options.records) options.records = std::make_shared<InMemoryStore>();
  if (!options.checkpointer) options.checkpointer = std::make_shared<InMemorySaver>();
  std::vector<server::GraphEntry> bound = impl_->graphs;
  try {
    for (auto& entry : bound) entry.graph = entry.graph->bind(options.checkpointer, options.store);
    auto telemetry = std::make_shared<server::ServerTelemetry>(options);
    telemetry->add_gauge(
        "stategraph_open_connections", "HTTP connections open now",
        [impl = impl_.get()] { return static_cast<double>(impl->connections.load()); });
    impl_->api = std::make_unique<server::Api>(
        std::move(bound), options.records, options.store,
        server::RunLimits{options.max_runs, options.sync_node_workers, impl_->ios->executors()},
        options.cluster.conninfo.empty() ? nullptr : &options.cluster, options.thread_ttl,
        options.auth, std::move(telemetry));
  } catch (...) {
    acceptor.close();
    throw;
  }
  impl_->port = acceptor.local_endpoint().port();
  // Webhooks given as a path come back here (through loopback when bound to every address).
  const std::string self_host = o.host == "0.0.0.0" ? "127.0.0.1" : o.host == "::" ? "::1" : o.host;
  impl_->api->set_self(http_url(self_host, impl_->port), o.api_key);
  net::co_spawn(impl_->ios->at(0), impl_->accept_loop(), net::detached);
  impl_->ios->start();
  impl_->running = true;
}

void Server::stop() {
  if (!impl_->running) return;
  // The runs execute on the server's threads: they are cancelled and waited for first, while
  // those threads still run them (requests meanwhile get 503).
  impl_->api->shutdown(impl_->options.shutdown_grace);
  // Every run has ended: the responses following them write their last events (a cancelled
  // run's `end`) and close, unless a client does not read (then at most a second).
  for (int i = 0; i < 100 && impl_->follows.load() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // The acceptor is not thread-safe: close it once no thread runs an io_context any more (its
  // pending accept then ends with operation_aborted if the server starts again).
  impl_->ios->stop();
  boost::system::error_code ec;
  impl_->acceptor->close(ec);
  impl_->api->telemetry().flush();  // the spans of the last runs
  impl_->api.reset();
  impl_->running = false;
}

std::uint16_t Server::port() const {
  return impl_->port;
}

std::string Server::url() const {
  return http_url(impl_->options.host, port());
}

}  // namespace sg
