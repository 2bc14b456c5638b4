// SPDX-License-Identifier: MIT
// model_calls: 1,000 concurrent streaming chat calls through OpenAIChatModel to a loopback
// OpenAI-wire server (sg-loopback-openai, a separate process) that answers each after 1 s with
// 50 content chunks, all started at once on one io_context thread. Reports the wall time, the
// threads of the process while the calls are in flight, the CPU time per chunk parsed and the
// peak RSS. bench/js/model_calls/model_calls.mjs is the LangGraph.js side (ChatOpenAI).
//
// The server: $SG_BENCH_MODEL_URL when set (bench/compare starts one for both sides), else this
// unit starts sg-loopback-openai itself.

#include <stategraph/models/openai.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>  // before Boost.Asio's awaitable headers (Boost 1.74 omits it)

#include "bench_common.hpp"

namespace {

using bench::Json;
namespace asio = boost::asio;

constexpr int kCalls = 1000;

long thread_count() {
  long n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task"))
    ++n;
  return n;
}

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(usage.ru_utime) + s(usage.ru_stime);
}

/// A loopback server process: 1 s delay, 50 chunks. Killed when destroyed.
class LoopbackProcess {
 public:
  LoopbackProcess() {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      execl(SG_LOOPBACK_OPENAI, SG_LOOPBACK_OPENAI, "--delay-ms", "1000", "--chunks", "50",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[1]);
    FILE* out = fdopen(fds[0], "r");
    char line[256] = {};
    if (!out || !fgets(line, sizeof line, out))
      throw std::runtime_error("sg-loopback-openai did not start");
    fclose(out);
    std::string text(line);
    const auto at = text.find("http://");
    if (at == std::string::npos) throw std::runtime_error("sg-loopback-openai said: " + text);
    url_ = text.substr(at, text.find_first_of("\r\n", at) - at);
  }
  ~LoopbackProcess() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  LoopbackProcess(const LoopbackProcess&) = delete;
  LoopbackProcess& operator=(const LoopbackProcess&) = delete;
  [[nodiscard]] const std::string& url() const { return url_; }

 private:
  pid_t pid_ = -1;
  std::string url_;
};

asio::awaitable<void> one_call(const sg::OpenAIChatModel& model, int i, long& chunks,
                               int& finished) {
  std::vector<sg::Message> messages{sg::human("call " + std::to_string(i))};
  sg::ChatOptions options;
  sg::ChunkHandler count = [&chunks](const sg::MessageChunk&) { ++chunks; };
  sg::Message reply =
      co_await model.astream(std::move(messages), std::move(options), std::move(count));
  if (!reply.text().empty()) ++finished;
}

Json model_calls() {
  std::unique_ptr<LoopbackProcess> server;
  std::string url;
  if (const char* env = std::getenv("SG_BENCH_MODEL_URL"); env && *env) {
    url = env;
  } else {
    server = std::make_unique<LoopbackProcess>();
    url = server->url();
  }
  sg::OpenAIConfig config;
  config.base_url = url;
  config.api_key = "unused";
  config.model = "loopback";
  config.max_retries = 0;
  const sg::OpenAIChatModel model(config);
  asio::io_context io;
  long chunks = 0;
  int finished = 0;
  asio::co_spawn(io, one_call(model, -1, chunks, finished), asio::detached);  // warm up
  io.run();
  io.restart();
  chunks = 0;
  finished = 0;
  long in_flight_threads = thread_count();
  const double cpu0 = cpu_seconds();
  const auto t0 = bench::Clock::now();
  for (int i = 0; i < kCalls; ++i)
    asio::co_spawn(io, one_call(model, i, chunks, finished), asio::detached);
  asio::steady_timer probe(io, std::chrono::milliseconds(500));
  probe.async_wait([&](boost::system::error_code) { in_flight_threads = thread_count(); });
  io.run();
  const double wall = bench::seconds_since(t0);
  const double cpu = cpu_seconds() - cpu0;
  Json out;
  out["scenario"] = "model_calls";
  out["calls"] = kCalls;
  out["finished"] = finished;
  out["chunks"] = chunks;
  out["wall_s"] = bench::round_to(wall, 3);
  out["cpu_s"] = bench::round_to(cpu, 3);
  out["cpu_us_per_chunk"] =
      bench::round_to(chunks ? cpu * 1e6 / static_cast<double>(chunks) : 0, 2);
  out["threads_in_flight"] = in_flight_threads;
  out["peak_rss_mb"] = bench::round_to(bench::peak_rss_mb(), 1);
  return out;
}

const bench::Register model_calls_unit("model_calls", [] { return model_calls(); });

}  // namespace
