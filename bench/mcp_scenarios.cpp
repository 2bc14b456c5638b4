// SPDX-License-Identifier: MIT
// mcp_calls: MCP tool calls through McpClient's tools (sg::Tool::acall, as ToolNode calls them)
// against the reference server @modelcontextprotocol/server-everything's `echo` tool (Node.js,
// tests/mcp):
//   stdio: the client spawns the server; 2,000 calls one after another;
//   http:  Streamable HTTP; 2,000 calls one after another, then 1,000 at once on one io_context
//          thread (the threads of the process counted while they are in flight).
// Reports the round trip and this process's CPU time per call (the server's is not counted).
// bench/js/mcp_calls.mjs is the LangGraph.js side (@langchain/mcp-adapters).
//
// The HTTP server: $SG_BENCH_MCP_URL when set (bench/compare starts one for both sides), else this
// unit starts one. Node.js: $SG_BENCH_NODE, else `node` on the PATH.

#include <stategraph/models/mcp.hpp>

#include <arpa/inet.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>  // before Boost.Asio's awaitable headers (Boost 1.74 omits it)

#include "bench_common.hpp"

namespace {

using bench::Json;
namespace asio = boost::asio;

constexpr int kSequential = 2000;
constexpr int kConcurrent = 1000;

std::string node() {
  const char* env = std::getenv("SG_BENCH_NODE");
  return env && *env ? env : "node";
}

std::string everything_js() {
  return std::string(SG_MCP_DIR) +
         "/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
}

long thread_count() {
  long n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task"))
    ++n;
  return n;
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), size) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0)
    throw std::runtime_error("mcp_calls: no free port");
  close(fd);
  return ntohs(address.sin_port);
}

bool listening(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  close(fd);
  return ok;
}

/// server-everything over Streamable HTTP on a free port; killed when destroyed.
class HttpServer {
 public:
  HttpServer() : port_(free_port()) {
    pid_ = fork();
    if (pid_ == 0) {
      const std::string port = std::to_string(port_);
      setenv("PORT", port.c_str(), 1);
      // Its log lines must not reach this process's stdout (the bench's JSON) or stderr.
      if (freopen("/dev/null", "w", stdout) == nullptr ||
          freopen("/dev/null", "w", stderr) == nullptr)
        _exit(126);
      const std::string program = node();
      const std::string script = everything_js();
      execlp(program.c_str(), program.c_str(), script.c_str(), "streamableHttp",
             static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 200 && !listening(port_); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!listening(port_)) throw std::runtime_error("mcp_calls: server-everything did not start");
  }
  ~HttpServer() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  [[nodiscard]] std::string url() const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/mcp";
  }

 private:
  int port_;
  pid_t pid_ = -1;
};

/// The echo tool's call with message "m<i>"; throws when the reply is not its echo.
asio::awaitable<void> echo(const sg::Tool& tool, int i) {
  const std::string message = "m" + std::to_string(i);
  sg::ToolCall call{"call-" + std::to_string(i), tool.name(), {{"message", message}}};
  sg::ToolRuntime runtime{&call, nullptr, nullptr, nullptr};
  sg::ToolResult result = co_await tool.acall(call.args, runtime);
  const std::string reply = result.message ? result.message->text() : result.content.dump();
  if (reply.find("Echo: " + message) == std::string::npos)
    throw std::runtime_error("mcp_calls: unexpected reply " + reply);
}

asio::awaitable<void> sequential(const sg::Tool& tool, int calls) {
  for (int i = 0; i < calls; ++i) co_await echo(tool, i);
}

/// Runs `work` to its end on `io`, rethrowing its error.
void run(asio::io_context& io, asio::awaitable<void> work) {
  std::exception_ptr error;
  asio::co_spawn(io, std::move(work), [&error](std::exception_ptr e) { error = e; });
  io.run();
  io.restart();
  if (error) std::rethrow_exception(error);
}

Json mcp_calls(const std::string& transport) {
  std::unique_ptr<HttpServer> server;
  sg::McpServerConfig config;
  if (transport == "stdio") {
    config.command = node();
    config.args = {everything_js(), "stdio"};
    config.stderr_mode = sg::McpStderr::ignore;
  } else {
    config.transport = sg::McpTransport::streamable_http;
    if (const char* env = std::getenv("SG_BENCH_MCP_URL"); env && *env) {
      config.url = env;
    } else {
      server = std::make_unique<HttpServer>();
      config.url = server->url();
    }
  }
  sg::McpClient client({{"everything", config}});
  const std::vector<sg::Tool> tools = client.get_tools();
  const sg::Tool* tool = nullptr;
  for (const auto& t : tools)
    if (t.name() == "echo") tool = &t;
  if (tool == nullptr) throw std::runtime_error("mcp_calls: server-everything has no echo tool");

  asio::io_context io;
  run(io, sequential(*tool, 50));  // warm up
  Json out;
  out["transport"] = transport;
  out["calls"] = kSequential;
  double cpu0 = bench::cpu_seconds();
  auto t0 = bench::Clock::now();
  run(io, sequential(*tool, kSequential));
  out["us_per_call"] = bench::round_to(bench::seconds_since(t0) * 1e6 / kSequential, 1);
  out["client_cpu_us_per_call"] =
      bench::round_to((bench::cpu_seconds() - cpu0) * 1e6 / kSequential, 1);
  if (transport == "http") {
    long in_flight_threads = thread_count();
    int finished = 0;
    cpu0 = bench::cpu_seconds();
    t0 = bench::Clock::now();
    for (int i = 0; i < kConcurrent; ++i) {
      asio::co_spawn(io, echo(*tool, i), [&finished](std::exception_ptr e) {
        if (!e) ++finished;
      });
    }
    asio::steady_timer probe(io, std::chrono::milliseconds(50));
    probe.async_wait([&](boost::system::error_code) { in_flight_threads = thread_count(); });
    io.run();
    out["concurrent"] = kConcurrent;
    out["concurrent_finished"] = finished;
    out["concurrent_wall_s"] = bench::round_to(bench::seconds_since(t0), 3);
    out["concurrent_client_cpu_s"] = bench::round_to(bench::cpu_seconds() - cpu0, 3);
    out["threads_in_flight"] = in_flight_threads;
  }
  out["peak_rss_mb"] = bench::round_to(bench::peak_rss_mb(), 1);
  return out;
}

const bench::Register stdio_unit("mcp_calls:stdio", [] { return mcp_calls("stdio"); });
const bench::Register http_unit("mcp_calls:http", [] { return mcp_calls("http"); });

}  // namespace
