// SPDX-License-Identifier: MIT
// concurrent_waits: many runs waiting on I/O at once, on one thread (async runs, issue 11).
// 10,000 runs of a graph whose one node awaits a 100 ms timer are started together on one
// io_context; reports the wall time, the threads of the process while they wait, and the RSS
// each run in flight adds. bench/js/concurrent_waits.mjs is the LangGraph.js side.

#include <stategraph/core/async.hpp>
#include <stategraph/stategraph.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>  // before Boost.Asio's awaitable headers (Boost 1.74 omits it)

#include "bench_common.hpp"

namespace {

using bench::Json;
namespace asio = boost::asio;

struct Waiter {
  int done = 0;
  static constexpr auto schema() { return std::tuple{sg::field<"done">(&Waiter::done)}; }
};

asio::awaitable<sg::Update<Waiter>> wait_100ms(const Waiter& s) {
  auto executor = co_await asio::this_coro::executor;
  asio::steady_timer timer(executor, std::chrono::milliseconds(100));
  co_await timer.async_wait(asio::use_awaitable);
  co_return sg::set<&Waiter::done>(s.done + 1);
}

long rss_kb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

long thread_count() {
  long n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task"))
    ++n;
  return n;
}

asio::awaitable<void> one_run(const sg::CompiledGraph<Waiter>& app, int& finished) {
  sg::Update<Waiter> input;
  sg::RunResult<Waiter> result = co_await app.ainvoke(std::move(input));
  if (result.state.done == 1) ++finished;
}

Json concurrent_waits() {
  constexpr int kRuns = 10'000;
  sg::StateGraph<Waiter> graph;
  graph.add_node("wait", wait_100ms).add_edge(sg::START, "wait").add_edge("wait", sg::END);
  const auto app = graph.compile();
  asio::io_context io;
  int finished = 0;
  // Warm up: the first run allocates what every run reuses.
  asio::co_spawn(io, one_run(app, finished), asio::detached);
  io.run();
  io.restart();
  finished = 0;
  const long before = rss_kb();
  long in_flight_rss = before;
  long in_flight_threads = thread_count();
  const auto t0 = bench::Clock::now();
  for (int i = 0; i < kRuns; ++i) asio::co_spawn(io, one_run(app, finished), asio::detached);
  asio::steady_timer probe(io, std::chrono::milliseconds(50));
  probe.async_wait([&](boost::system::error_code) {
    in_flight_rss = rss_kb();
    in_flight_threads = thread_count();
  });
  io.run();
  const double wall = bench::seconds_since(t0);
  Json out;
  out["scenario"] = "concurrent_waits";
  out["graph_runs"] = kRuns;
  out["finished"] = finished;
  out["wall_s"] = bench::round_to(wall, 3);
  out["threads_in_flight"] = in_flight_threads;
  out["rss_in_flight_kb_per_run"] =
      bench::round_to(static_cast<double>(in_flight_rss - before) / kRuns, 2);
  out["peak_rss_mb"] = bench::round_to(bench::peak_rss_mb(), 1);
  return out;
}

const bench::Register concurrent_waits_unit("concurrent_waits", [] { return concurrent_waits(); });

}  // namespace
