// SPDX-License-Identifier: MIT
#pragma once
// What the server tests share: the spec's echo graph, a server on a free port, raw sockets.
#include <stategraph/server/server.hpp>
#include <stategraph/stategraph.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/http_client.hpp"

namespace sg::test {

/// LangGraph's server test graph (the spec's §0): START -> echo -> END; echo answers "echo: " +
/// the last human message, after waiting N ms for "sleep:N" (a wait the run's cancellation
/// ends: the run then writes nothing).
inline std::shared_ptr<const ServedGraph> echo_graph() {
  StateGraph<MessagesState> g;
  g.add_node("echo", [](const MessagesState& s, Context& ctx) {
    std::string text;
    for (auto it = s.messages.rbegin(); it != s.messages.rend(); ++it) {
      if (it->type == MessageType::human) {
        text = it->text();
        break;
      }
    }
    if (text.rfind("sleep:", 0) == 0) {
      const auto ms = std::stoll(text.substr(6));
      (void)ctx.config().cancellation.wait_for(std::chrono::milliseconds(ms));
    }
    ctx.throw_if_cancelled();
    return Update<MessagesState>{}.set<&MessagesState::messages>(ai("echo: " + text));
  });
  g.add_edge(START, "echo").add_edge("echo", END);
  return served_graph(std::move(g));
}

/// A server on a free port serving the echo graph as "agent" and "helper".
struct Served {
  /// Serves the echo graph as "agent" and "helper", and `more` graphs by id.
  explicit Served(ServerOptions options = {},
                  std::vector<std::pair<std::string, std::shared_ptr<const ServedGraph>>> more = {})
      : server([&] {
          options.port = 0;
          return options;
        }()) {
    server.add_graph("agent", echo_graph());
    server.add_graph("helper", echo_graph());
    for (auto& [id, graph] : more) server.add_graph(id, std::move(graph));
    server.start();
  }
  HttpResult get(const std::string& path, std::vector<std::string> headers = {}) {
    return http_request("GET", server.url() + path, {}, std::move(headers));
  }
  HttpResult post(const std::string& path, const std::string& body) {
    return http_request("POST", server.url() + path, body);
  }
  HttpResult post(const std::string& path, const char* body) {
    return post(path, std::string(body));
  }
  HttpResult post(const std::string& path, const nlohmann::json& body) {
    return http_request("POST", server.url() + path, body.dump());
  }
  /// POST that parses the answer as JSON; fails the test on a non-2xx status.
  nlohmann::json post_json(const std::string& path, const nlohmann::json& body) {
    const auto r = post(path, body);
    INFO(path << " -> " << r.status << " " << r.body);
    REQUIRE(r.status / 100 == 2);
    return nlohmann::json::parse(r.body);
  }
  nlohmann::json get_json(const std::string& path) {
    const auto r = get(path);
    INFO(path << " -> " << r.status << " " << r.body);
    REQUIRE(r.status == 200);
    return nlohmann::json::parse(r.body);
  }
  /// A new thread's id.
  std::string new_thread() { return post_json("/threads", nlohmann::json::object())["thread_id"]; }
  Server server;
};

/// `{"messages": [{"role": "user", "content": text}]}`.
inline nlohmann::json human_input(const std::string& text) {
  return {{"messages", nlohmann::json::array({{{"role", "user"}, {"content", text}}})}};
}

/// The contents of `values.messages`.
inline std::vector<std::string> contents(const nlohmann::json& values) {
  std::vector<std::string> out;
  for (const auto& m : values.at("messages")) out.push_back(m.at("content"));
  return out;
}

/// The bytes of a POST of `body` to `path`, as a client writes them on a connection.
inline std::string post_request_bytes(const std::string& path, const nlohmann::json& body) {
  const std::string text = body.dump();
  return "POST " + path +
         " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(text.size()) + "\r\n\r\n" + text;
}

/// Writes `bytes` on a new connection and reads until the server closes it (or 5 s pass).
inline std::string raw_exchange(std::uint16_t port, const std::string& bytes) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  boost::asio::write(socket, boost::asio::buffer(bytes));
  std::string out;
  boost::system::error_code ec;
  char chunk[4096];
  for (;;) {
    const std::size_t n = socket.read_some(boost::asio::buffer(chunk), ec);
    out.append(chunk, n);
    if (ec) break;
  }
  return out;
}

/// Polls GET `path` until its JSON `field` equals `value` (true) or 10 s pass (false).
inline bool wait_for_field(Served& s, const std::string& path, const char* field,
                           const std::string& value) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    const auto r = s.get(path);
    if (r.status == 200 && nlohmann::json::parse(r.body).value(field, "") == value) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

/// Polls `done` every 20 ms until it is true or `limit` passed; whether it became true.
inline bool eventually(const std::function<bool()>& done,
                       std::chrono::seconds limit = std::chrono::seconds(20)) {
  for (const auto until = std::chrono::steady_clock::now() + limit;
       std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(std::chrono::milliseconds(20))) {
    if (done()) return true;
  }
  return done();
}

}  // namespace sg::test
