// SPDX-License-Identifier: MIT
// stategraph-bench: the workloads of the LangGraph.js anchor (shared/anchors/langgraphjs/
// WORKLOADS.md), re-implemented exactly, printing one JSON line per scenario with bench.mjs's
// field names.
//
//   stategraph-bench <scenario> [--json] [--repeat N]
//   stategraph-bench --list | --help
//
// Each run of a scenario happens in a fresh process (this program re-executes itself with
// --unit), so peak RSS and on-disk state are per run; with --repeat N every numeric field is the
// median of N runs.
#include <stategraph/core/version.hpp>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace {

using bench::Json;

Json median_of(const std::vector<Json>& runs) {
  const Json& first = runs.front();
  if (first.is_number()) {
    std::vector<double> xs;
    bool integers = true;
    for (const auto& r : runs) {
      xs.push_back(r.get<double>());
      integers = integers && r.is_number_integer();
    }
    std::sort(xs.begin(), xs.end());
    const std::size_t n = xs.size();
    const double median = n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
    if (integers && median == std::floor(median)) return static_cast<std::int64_t>(median);
    return median;
  }
  if (!first.is_object()) return first;
  Json out = Json::object();
  for (const auto& [key, value] : first.items()) {
    std::vector<Json> column;
    for (const auto& r : runs) column.push_back(r.contains(key) ? r[key] : value);
    out[key] = median_of(column);
  }
  return out;
}

std::string self_path() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string("stategraph-bench");
}

Json run_in_child(const std::string& unit) {
  std::string command = self_path();  // built step by step: g++ 12 -O3 warns on "'" + string
  command.insert(0, 1, '\'');
  command.append("' ").append(unit).append(" --unit");
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("cannot run " + command);
  std::string out;
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  if (pclose(pipe) != 0) throw std::runtime_error("unit " + unit + " failed");
  return Json::parse(out);
}

Json versions() {
  Json v;
  v["stategraph"] = std::string(sg::kVersion);
#if defined(__clang__)
  v["compiler"] = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  v["compiler"] = "g++ " + std::to_string(__GNUC__) + "." + std::to_string(__GNUC_MINOR__) + "." +
                  std::to_string(__GNUC_PATCHLEVEL__);
#endif
  return v;
}

std::string scenario_list() {
  std::string out = "scenarios:";
  for (const auto& [name, units] : bench::scenarios()) {
    out += ' ' + name;
    if (units.size() > 1) {
      for (const auto& u : units) out += ' ' + u;
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The workloads of the LangGraph.js anchor, one JSON line per scenario.",
               "stategraph-bench"};
  app.footer(scenario_list());
  std::string scenario;
  bool list = false;
  bool json_only = false;
  bool unit = false;
  int repeat = 1;
  app.add_option("scenario", scenario, "A scenario or one of its units (scenario:variant)");
  app.add_flag("--list", list, "Print the scenario names as a JSON array");
  app.add_flag("--json", json_only, "Print only the JSON line");
  app.add_option("--repeat", repeat, "Runs in fresh processes; fields are their medians")
      ->check(CLI::Range(1, 10000));
  app.add_flag("--unit", unit, "Run one unit in this process (used by the runs)")
      ->group("");  // internal
  CLI11_PARSE(app, argc, argv);
  if (list) {
    Json names = Json::array();
    for (const auto& [name, units] : bench::scenarios()) names.push_back(name);
    std::cout << names.dump() << '\n';
    return 0;
  }
  std::vector<std::string> units;
  if (auto s = bench::scenarios().find(scenario); s != bench::scenarios().end()) {
    units = s->second;
  } else if (bench::units().count(scenario)) {
    units = {scenario};
  } else {
    std::cerr << "stategraph-bench: "
              << (scenario.empty() ? "a scenario is required"
                                   : "unknown scenario '" + scenario + "'")
              << "\n"
              << app.help() << '\n';
    return 2;
  }
  try {
    if (unit) {
      std::cout << bench::units().at(scenario)().dump() << '\n';
      return 0;
    }
    Json line;
    line["scenario"] = scenario;
    line["versions"] = versions();
    auto measure = [&](const std::string& name) {
      std::vector<Json> runs;
      for (int r = 0; r < repeat; ++r) runs.push_back(run_in_child(name));
      Json medians = median_of(runs);
      medians["runs"] = repeat;
      return medians;
    };
    if (units.size() == 1) {
      const Json medians = measure(units[0]);
      for (const auto& [key, value] : medians.items()) line[key] = value;
    } else {
      line["runs"] = repeat;
      Json variants = Json::object();
      // The PostgreSQL variants need a database: without one they are skipped, with a note.
      const char* postgres = std::getenv("SG_BENCH_POSTGRES");
      for (const auto& u : units) {
        const std::string variant = u.substr(u.find(':') + 1);
        if (variant.rfind("postgres", 0) == 0 && (postgres == nullptr || *postgres == '\0')) {
          variants[variant] = {{"skipped", "SG_BENCH_POSTGRES is not set"}};
          std::cerr << scenario << ": " << variant
                    << " skipped (set SG_BENCH_POSTGRES to a libpq connection string)\n";
          continue;
        }
        variants[variant] = measure(u);
      }
      line["variants"] = variants;
    }
    if (!json_only) {
      std::cerr << scenario << ": " << line.dump(2) << '\n';
    }
    std::cout << line.dump() << '\n';
  } catch (const std::exception& e) {
    std::cerr << "stategraph-bench: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
