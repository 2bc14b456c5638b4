// SPDX-License-Identifier: MIT
// The MCP client over HTTP against real servers: server-everything from npm (Streamable HTTP and
// the legacy HTTP+SSE transport) and tests/mcp/http-server.mjs on the official SDK (JSON replies,
// authorization headers, HTTP errors, expiring sessions), tests/mcp/held-stream-server.mjs (SSE
// replies left open), and 1,000 calls at once from one thread.
#include <stategraph/models/mcp.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <doctest/doctest.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "support/mcp_peers.hpp"

namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

std::string first_text(const json& result) {
  return result.at("content").at(0).at("text");
}

std::pair<std::string, std::string> http_error(const std::function<void()>& call,
                                               int* status = nullptr) {
  try {
    call();
  } catch (const sg::McpError& e) {
    if (status != nullptr) *status = e.http_status();
    return {e.code(), e.what()};
  } catch (const sg::Error& e) {
    return {e.code(), e.what()};
  }
  return {"none", ""};
}

sg::McpClient http_client(const std::string& url, std::map<std::string, std::string> headers = {},
                          sg::McpTransport transport = sg::McpTransport::streamable_http,
                          sg::McpClientOptions options = {}) {
  sg::McpServerConfig config = sg::test::http_server(url, transport);
  config.headers = std::move(headers);
  return sg::McpClient({{"remote", config}}, std::move(options));
}

}  // namespace

TEST_CASE(
    "mcp Streamable HTTP: server-everything's tools, SSE replies with progress, DELETE at close") {
  sg::test::NodeHttpServer server({sg::test::everything_js(), "streamableHttp"}, {},
                                  "listening on port");
  std::mutex mu;
  std::vector<sg::McpProgress> progress;
  sg::McpClientOptions options;
  options.on_progress = [&](const sg::McpProgress& p) {
    std::lock_guard lock(mu);
    progress.push_back(p);
  };
  {
    sg::McpClient client =
        http_client(server.url(), {}, sg::McpTransport::streamable_http, options);
    const std::vector<sg::Tool> tools = client.get_tools();
    REQUIRE(tools.size() >= 10);
    CHECK(client.server_info("remote").protocol_version == "2025-11-25");
    CHECK(first_text(client.call_tool("remote", "echo", {{"message", "over http"}})) ==
          "Echo: over http");
    const json weather =
        client.call_tool("remote", "get-structured-content", {{"location", "Los Angeles"}});
    CHECK(weather["structuredContent"]["temperature"] == 73);
    const json image = client.call_tool("remote", "get-tiny-image", {});
    CHECK(image["content"][1]["type"] == "image");
    CHECK(image["content"][1]["mimeType"] == "image/png");
    CHECK(first_text(client.call_tool("remote", "trigger-long-running-operation",
                                      {{"duration", 0.3}, {"steps", 3}}))
              .starts_with("Long running operation completed"));
    client.ping("remote");
    {
      std::lock_guard lock(mu);
      REQUIRE(progress.size() == 3);
      CHECK(progress[2].progress == 3);
      CHECK(progress[2].total == 3);
    }
    CHECK(server.output().find("Session initialized with ID:") != std::string::npos);
  }
  // The client's end: DELETE with the session id.
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (server.output().find("Received session termination request") == std::string::npos &&
         Clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(20));
  CHECK(server.output().find("Received session termination request") != std::string::npos);
}

TEST_CASE("mcp Streamable HTTP: JSON replies, configured headers, 401 and 500 as clear errors") {
  sg::test::NodeHttpServer server({sg::test::mcp_dir() + "/http-server.mjs"},
                                  {{"MCP_TOKEN", "s3cret"}, {"MCP_JSON_RESPONSE", "1"}},
                                  "listening on");
  {
    sg::McpClient client = http_client(server.url(), {{"Authorization", "Bearer s3cret"}});
    CHECK(first_text(client.call_tool("remote", "echo", {{"text", "json"}})) == "echo: json");
    CHECK(client.get_tools().size() == 4);
  }
  {
    sg::McpClient client = http_client(server.url());
    int status = 0;
    const auto [code, text] = http_error([&] { (void)client.get_tools(); }, &status);
    CHECK(code == sg::errc::kMcpHttpStatus);
    CHECK(status == 401);
    CHECK(text == "MCP server 'remote' (" + server.url() + "): initialize: HTTP 401: Unauthorized");
  }
  {
    sg::McpClient client = http_client(server.url("/broken"), {{"Authorization", "Bearer s3cret"}});
    int status = 0;
    const auto [code, text] = http_error([&] { (void)client.get_tools(); }, &status);
    CHECK(code == sg::errc::kMcpHttpStatus);
    CHECK(status == 500);
    CHECK(text.ends_with("initialize: HTTP 500: the server is broken"));
  }
}

TEST_CASE("mcp Streamable HTTP: an expired session (404) is initialized again") {
  sg::test::NodeHttpServer server({sg::test::mcp_dir() + "/http-server.mjs"}, {}, "listening on");
  sg::McpClient client = http_client(server.url());
  CHECK(first_text(client.call_tool("remote", "initializations", {})) == "1");
  CHECK(first_text(client.call_tool("remote", "expire-session", {})).starts_with("expiring "));
  std::this_thread::sleep_for(milliseconds(200));
  // The next request gets 404; the client starts a new session and sends it there.
  CHECK(first_text(client.call_tool("remote", "echo", {{"text", "still here"}})) ==
        "echo: still here");
  CHECK(first_text(client.call_tool("remote", "initializations", {})) == "2");
}

TEST_CASE("mcp Streamable HTTP: progress and cancellation on an SSE reply") {
  sg::test::NodeHttpServer server({sg::test::mcp_dir() + "/http-server.mjs"}, {}, "listening on");
  sg::McpClient client = http_client(server.url());
  std::vector<double> steps;
  sg::McpCallOptions options;
  options.on_progress = [&](const sg::McpProgress& p) { steps.push_back(p.progress); };
  CHECK(first_text(client.call_tool("remote", "slow", {{"ms", 350}}, options)) == "slept 350");
  CHECK(steps == std::vector<double>{1, 2, 3, 4});

  sg::McpCallOptions cancelled;
  cancelled.cancellation = sg::CancellationToken::create();
  std::thread canceller([token = cancelled.cancellation] {
    std::this_thread::sleep_for(milliseconds(200));
    token.cancel();
  });
  const auto start = Clock::now();
  const auto [code, text] = http_error([&] {
    (void)client.call_tool("remote", "slow", {{"ms", 10000}}, cancelled);
  });
  canceller.join();
  CHECK(code == sg::errc::kCancelled);
  CHECK(Clock::now() - start < std::chrono::seconds(3));
  CHECK(first_text(client.call_tool("remote", "echo", {{"text", "after"}})) == "echo: after");
}

TEST_CASE("mcp Streamable HTTP: a server that goes away fails calls at once") {
  auto server = std::make_unique<sg::test::NodeHttpServer>(
      std::vector<std::string>{sg::test::mcp_dir() + "/http-server.mjs"},
      std::map<std::string, std::string>{}, "listening on");
  sg::McpClient client = http_client(server->url());
  CHECK(first_text(client.call_tool("remote", "echo", {{"text", "x"}})) == "echo: x");
  server.reset();  // killed
  const auto start = Clock::now();
  const auto [code, text] = http_error([&] {
    (void)client.call_tool("remote", "echo", {{"text", "y"}});
  });
  CHECK(code == sg::errc::kMcpConnection);
  CHECK(text.find("MCP server 'remote'") == 0);
  CHECK(Clock::now() - start < std::chrono::seconds(3));
}

TEST_CASE("mcp Streamable HTTP: a POST stream the server keeps open ends with its answer") {
  // The server answers every request on an SSE stream that it never ends.
  sg::test::NodeHttpServer server({sg::test::mcp_dir() + "/held-stream-server.mjs"}, {},
                                  "listening on");
  sg::McpClient client = http_client(server.url());
  for (int i = 0; i < 5; ++i) {
    CHECK(first_text(client.call_tool("remote", "echo", {{"text", std::to_string(i)}})) ==
          "echo: " + std::to_string(i));
  }
  // The streams of initialize and of those calls were ended by the client, not left to close().
  std::string open;
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  do {
    open = first_text(client.call_tool("remote", "open-streams", {}));
    if (open == "0") break;
    std::this_thread::sleep_for(milliseconds(20));
  } while (Clock::now() < deadline);
  CHECK(open == "0");
  client.ping("remote");
  const auto start = Clock::now();
  client.close();
  CHECK(Clock::now() - start < std::chrono::seconds(2));
}

TEST_CASE("mcp legacy HTTP+SSE transport against server-everything") {
  sg::test::NodeHttpServer server({sg::test::everything_js(), "sse"}, {},
                                  "Server is running on port");
  std::vector<double> steps;
  sg::McpClient client = http_client(server.url("/sse"), {}, sg::McpTransport::sse);
  const std::vector<sg::Tool> tools = client.get_tools();
  CHECK(tools.size() >= 10);
  CHECK(first_text(client.call_tool("remote", "echo", {{"message", "legacy"}})) == "Echo: legacy");
  sg::McpCallOptions options;
  options.on_progress = [&](const sg::McpProgress& p) { steps.push_back(p.progress); };
  (void)client.call_tool("remote", "trigger-long-running-operation",
                         {{"duration", 0.2}, {"steps", 2}}, options);
  CHECK(steps == std::vector<double>{1, 2});
}

TEST_CASE("mcp 1,000 concurrent tools/call over Streamable HTTP from one thread") {
  sg::test::NodeHttpServer server({sg::test::everything_js(), "streamableHttp"}, {},
                                  "listening on port");
  sg::McpClient client = http_client(server.url());
  const std::vector<sg::Tool> tools = client.get_tools();
  const sg::Tool* echo = nullptr;
  for (const auto& t : tools)
    if (t.name() == "echo") echo = &t;
  REQUIRE(echo != nullptr);

  constexpr int kCalls = 1000;
  const int threads_before = sg::test::thread_count();
  int done = 0;
  int correct = 0;
  int elsewhere = 0;  // calls that resumed on another thread than this one
  const std::thread::id here = std::this_thread::get_id();
  int waiting_max = 0;
  int threads_max = 0;
  boost::asio::io_context io;  // one thread: this one
  for (int i = 0; i < kCalls; ++i) {
    boost::asio::co_spawn(
        io,
        [&, i]() -> boost::asio::awaitable<void> {
          const json args = {{"message", "call " + std::to_string(i)}};
          sg::ToolRuntime runtime;
          sg::ToolResult result = co_await echo->acall(args, runtime);
          if (std::this_thread::get_id() != here) ++elsewhere;
          if (result.message && result.message->text() == "Echo: call " + std::to_string(i))
            ++correct;
          ++done;
        },
        boost::asio::detached);
  }
  // A watcher on the same thread: how many calls wait at once, how many threads the process has.
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        boost::asio::steady_timer timer(io);
        while (done < kCalls) {
          waiting_max = std::max(waiting_max, kCalls - done);
          threads_max = std::max(threads_max, sg::test::thread_count());
          timer.expires_after(milliseconds(5));
          co_await timer.async_wait(boost::asio::use_awaitable);
        }
      },
      boost::asio::detached);
  const auto start = Clock::now();
  io.run();
  const auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  MESSAGE("1,000 concurrent MCP calls: " << took.count() << " ms, threads before " << threads_before
                                         << ", at most " << threads_max);
  CHECK(done == kCalls);
  CHECK(correct == kCalls);
  CHECK(elsewhere == 0);         // each resumed on the caller's executor
  CHECK(waiting_max == kCalls);  // all were waiting at once
  // This thread, the client's I/O thread, and what the process had before: no thread per call.
  CHECK(threads_max <= threads_before + 2);
}
