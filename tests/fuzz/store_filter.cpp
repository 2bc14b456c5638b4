// SPDX-License-Identifier: MIT
// Fuzz target: store filters and index paths (see fuzz_targets.hpp).
#include <stategraph/store/store.hpp>

#include "fuzz_targets.hpp"

int sg::fuzz::store_filter(const std::uint8_t* data, std::size_t size) {
  const nlohmann::json input = nlohmann::json::parse(data, data + size, nullptr, false);
  if (input.is_discarded() || !input.is_object()) return 0;
  const nlohmann::json filter = input.contains("filter") ? input["filter"] : nlohmann::json();
  const nlohmann::json value = input.contains("value") ? input["value"] : nlohmann::json::object();
  bool valid = true;
  try {
    validate_filter(filter);
  } catch (const Error&) {
    valid = false;
  }
  try {
    (void)matches_filter(value, filter);
  } catch (const Error&) {
    if (valid) std::abort();  // validate_filter promised matches_filter would not throw
  }
  if (input.contains("path") && input["path"].is_string()) {
    try {
      (void)texts_at_path(value, input["path"].get<std::string>());
    } catch (const Error&) {
    }
  }
  return 0;
}

SG_FUZZ_ENTRY(sg::fuzz::store_filter)
