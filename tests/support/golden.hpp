// SPDX-License-Identifier: MIT
#pragma once

// Loads the golden vectors computed by the real LangGraph.js (tests/data/golden, or the
// directory named by STATEGRAPH_GOLDEN_DIR, e.g. a fuller set kept elsewhere).

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

namespace sg::test {

inline std::string golden_dir() {
  if (const char* dir = std::getenv("STATEGRAPH_GOLDEN_DIR"); dir && *dir) return dir;
  return SG_GOLDEN_DIR;
}

/// The parsed golden file `<name>.json`. Throws when it is missing or not JSON.
inline nlohmann::json load_golden(const std::string& name) {
  const std::string path = golden_dir() + "/" + name + ".json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open golden file " + path);
  return nlohmann::json::parse(in);
}

/// The "cases" of golden file `<name>.json`: at least `at_least` of them (the number in
/// tests/data/golden; a fuller set may hold more), so a truncated or emptied file fails the test
/// instead of passing it with fewer cases. Throws otherwise.
inline nlohmann::json load_golden_cases(const std::string& name, std::size_t at_least) {
  nlohmann::json golden = load_golden(name);
  if (!golden.contains("cases") || !golden["cases"].is_array() ||
      golden["cases"].size() < at_least) {
    throw std::runtime_error("golden file " + name + ".json has fewer than " +
                             std::to_string(at_least) + " cases");
  }
  return std::move(golden["cases"]);
}

}  // namespace sg::test
