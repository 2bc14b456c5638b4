// SPDX-License-Identifier: MIT
// The executor scenarios: chain and fanout (WORKLOADS.md a and d) and seq3.
#include <stategraph/stategraph.hpp>

#include <stdexcept>

#include "bench_common.hpp"

namespace {

using bench::Json;

struct X {
  int x = 0;
  static constexpr auto schema() { return std::tuple{sg::field<"x">(&X::x)}; }
};

struct Fan {
  std::vector<std::string> items{};
  int count = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"items">(&Fan::items, sg::concat), sg::field<"count">(&Fan::count)};
  }
};

sg::CompiledGraph<X> line(int nodes, const char* prefix) {
  sg::StateGraph<X> g;
  for (int i = 0; i < nodes; ++i) {
    g.add_node(prefix + std::to_string(i), [](const X& s) { return sg::set<&X::x>(s.x + 1); });
  }
  g.add_edge(sg::START, prefix + std::string("0"));
  for (int i = 0; i + 1 < nodes; ++i)
    g.add_edge(prefix + std::to_string(i), prefix + std::to_string(i + 1));
  g.add_edge(prefix + std::to_string(nodes - 1), sg::END);
  return g.compile();
}

/// Runs `invocations` invocations of a line graph of `nodes` nodes after `warmup`; the fields of
/// bench.mjs's chain unit.
Json run_line(int nodes, int warmup, int invocations, const char* prefix) {
  const auto app = line(nodes, prefix);
  sg::RunConfig config;
  config.callbacks = bench::trace_callbacks();
  for (int i = 0; i < warmup; ++i) (void)app.invoke(sg::set<&X::x>(0), config);
  int last = 0;
  const double l0 = bench::load1();
  const double c0 = bench::cpu_seconds();
  const auto t0 = bench::Clock::now();
  for (int i = 0; i < invocations; ++i) last = app.invoke(sg::set<&X::x>(i), config).state.x;
  const double wall = bench::seconds_since(t0);
  const double cpu = bench::cpu_seconds() - c0;
  const int expect = invocations - 1 + nodes;
  if (last != expect)
    throw std::runtime_error("expected x=" + std::to_string(expect) + ", got " +
                             std::to_string(last));
  Json out = bench::rate(invocations, wall);
  const double executions = static_cast<double>(invocations) * nodes;
  out["ops_label"] = "invocations";
  out["cpu_s"] = bench::round_to(cpu, 3);
  out["loadavg_1m_at_start"] = l0;
  out["invocations_per_s"] = out["ops_per_s"];
  out["node_executions"] = static_cast<std::int64_t>(executions);
  out["node_executions_per_s"] = bench::round_to(executions / wall, 1);
  out["per_node_us"] = bench::round_to(wall * 1e6 / executions, 4);
  out["warmup_invocations"] = warmup;
  out["final_x"] = last;
  out["trace"] = bench::trace_mode();
  out["peak_rss_mb"] = bench::peak_rss_mb();
  return out;
}

const bench::Register chain("chain", [] { return run_line(10, 100, 2000, "n"); });

const bench::Register seq3("seq3", [] {
  Json out = run_line(3, 1000, 100000, "s");
  out["graph"] = "START -> a -> b -> c -> END";
  return out;
});

const bench::Register fanout("fanout", [] {
  constexpr int kWidth = 8;
  constexpr int kWarmup = 100;
  constexpr int kInvocations = 1000;
  sg::StateGraph<Fan> g;
  for (int i = 0; i < kWidth; ++i) {
    const std::string name = "p" + std::to_string(i);
    g.add_node(name, [name](const Fan&) { return sg::set<&Fan::items>(name); });
    g.add_edge(sg::START, name);
    g.add_edge(name, "join");
  }
  g.add_node("join",
             [](const Fan& s) { return sg::set<&Fan::count>(static_cast<int>(s.items.size())); });
  g.add_edge("join", sg::END);
  const auto app = g.compile();
  auto input = [] { return sg::set<&Fan::items>(std::vector<std::string>{}); };
  sg::RunConfig config;
  config.callbacks = bench::trace_callbacks();
  for (int i = 0; i < kWarmup; ++i) (void)app.invoke(input(), config);
  Fan last;
  const double l0 = bench::load1();
  const double c0 = bench::cpu_seconds();
  const auto t0 = bench::Clock::now();
  for (int i = 0; i < kInvocations; ++i) last = app.invoke(input(), config).state;
  const double wall = bench::seconds_since(t0);
  const double cpu = bench::cpu_seconds() - c0;
  if (last.items.size() != kWidth || last.count != kWidth || last.items.front() != "p0" ||
      last.items.back() != "p7") {
    throw std::runtime_error("fanout: bad result");
  }
  Json out = bench::rate(kInvocations, wall);
  out["ops_label"] = "invocations";
  out["cpu_s"] = bench::round_to(cpu, 3);
  out["loadavg_1m_at_start"] = l0;
  out["invocations_per_s"] = out["ops_per_s"];
  out["node_executions_per_s"] = bench::round_to(kInvocations * (kWidth + 1) / wall, 1);
  out["warmup_invocations"] = kWarmup;
  out["final_items"] = last.items;
  out["final_count"] = last.count;
  out["peak_rss_mb"] = bench::peak_rss_mb();
  return out;
});

}  // namespace
