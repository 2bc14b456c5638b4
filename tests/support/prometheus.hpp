// SPDX-License-Identifier: MIT
#pragma once
// Reading the Prometheus text format in tests: a series' value, and promtool's check.

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string>

#include "support/process.hpp"

namespace sg::test {

/// The value of `series` (its name and labels as rendered, e.g.
/// `stategraph_runs_total{graph="g",status="success"}`) in the text `exposition`; NaN when
/// absent.
inline double metric_value(const std::string& exposition, const std::string& series) {
  std::istringstream lines(exposition);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ') {
      return std::stod(line.substr(series.size() + 1));
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

/// `promtool check metrics` (Debian's prometheus package) on `exposition`: its exit code and
/// output. Fails the test when promtool is not installed.
inline ProcessResult promtool_check(const std::string& exposition) {
  const std::string promtool = "/usr/bin/promtool";
  if (!std::filesystem::exists(promtool)) {
    FAIL("promtool is not installed (Debian's prometheus package): run scripts/install-deps");
  }
  return run_process(promtool, {"check", "metrics"}, exposition);
}

}  // namespace sg::test
