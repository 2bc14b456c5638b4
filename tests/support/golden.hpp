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

}  // namespace sg::test
