// SPDX-License-Identifier: MIT
#pragma once

// Shared pieces of stategraph-bench: the deterministic data of the LangGraph.js anchor's
// workloads (shared/anchors/langgraphjs/WORKLOADS.md), timing, and the JSON fields bench.mjs
// reports.

#include <stategraph/core/callbacks.hpp>
#include <stategraph/core/message.hpp>

#include <nlohmann/json.hpp>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace bench {

using Json = nlohmann::ordered_json;

/// xorshift32 (Marsaglia 2003, shifts 13, 17, 5); seed 0 becomes 0x9E3779B9.
struct XorShift32 {
  std::uint32_t s;
  explicit XorShift32(std::uint32_t seed) : s(seed ? seed : 0x9E3779B9u) {}
  std::uint32_t next() {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    return s;
  }
};

/// textFor(seed, n): words of the 32-word vocabulary joined by spaces, cut to n characters.
std::string text_for(std::uint32_t seed, std::size_t n);

/// sha256 of `data`, lower-case hex.
std::string sha256_hex(const std::string& data);

/// Round to `digits` decimals, as bench.mjs does (r1 / r3).
inline double round_to(double x, int digits) {
  const double f = std::pow(10.0, digits);
  return std::round(x * f) / f;
}

/// CPU seconds (user + system) of this process so far.
double cpu_seconds();
/// Peak resident set size in MiB.
double peak_rss_mb();
/// The 1-minute load average.
double load1();

/// {ops, wall_s, per_op_us, ops_per_s} as bench.mjs's rate().
Json rate(double ops, double wall_s);

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// A unit of work (a scenario, or one variant of it such as "loop:rocksdb"): runs it in this
/// process and returns its JSON fields (those of bench.mjs).
using Unit = std::function<Json()>;
std::map<std::string, Unit>& units();
/// Scenario -> its units; a scenario of several units reports them under "variants".
std::map<std::string, std::vector<std::string>>& scenarios();

/// Registers a unit (and the scenario it belongs to) at static-initialization time.
struct Register {
  Register(const std::string& unit, Unit run) {
    units()[unit] = std::move(run);
    const auto colon = unit.find(':');
    scenarios()[unit.substr(0, colon)].push_back(unit);
  }
};

/// sha256 over lines "id\ttype\tcontent" joined by "\n" (WORKLOADS.md's message digest).
std::string messages_digest(const std::vector<sg::Message>& messages);

/// A directory for storage under the system temp dir, removed first.
std::string fresh_dir(const std::string& name);

/// The callbacks the executor scenarios (chain, seq3, fanout, loop, summarize_trim) give their
/// runs, from $SG_BENCH_TRACE: unset or "" none (the default); "noop" a Callbacks that does
/// nothing (the hook points' cost); "metrics" sg::RunMetrics; "otlp" an sg::OtlpTracer
/// configured by the OTEL_* variables (all spans sampled). The report's "trace" field names it.
const sg::CallbackList& trace_callbacks();
/// The name of the mode above ("none" when unset).
std::string trace_mode();

}  // namespace bench
