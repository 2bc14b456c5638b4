// SPDX-License-Identifier: MIT
#include <stategraph/core/managed.hpp>

#include <nlohmann/json.hpp>

namespace sg {

void to_json(nlohmann::json& j, const RemainingSteps& v) {
  j = v.value;
}
void from_json(const nlohmann::json& j, RemainingSteps& v) {
  v.value = j.get<int>();
}
void to_json(nlohmann::json& j, const IsLastStep& v) {
  j = v.value;
}
void from_json(const nlohmann::json& j, IsLastStep& v) {
  v.value = j.get<bool>();
}

}  // namespace sg
