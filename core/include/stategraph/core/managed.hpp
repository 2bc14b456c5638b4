// SPDX-License-Identifier: MIT
#pragma once

// Managed values (LangGraph's RemainingSteps and IsLastStep): state fields the executor fills in
// before every superstep. Declare them like any field:
//
//   struct Agent : sg::MessagesState {
//     sg::RemainingSteps remaining_steps{};
//     static constexpr auto schema() {
//       return std::tuple_cat(sg::MessagesState::schema(),
//                             std::tuple{sg::field<"remaining_steps">(&Agent::remaining_steps)});
//     }
//   };
//
// They are never checkpointed, and writes to them are ignored.

#include <nlohmann/json_fwd.hpp>

#include <type_traits>

namespace sg {

/// The supersteps a run may still take before its recursion limit (LangGraph's RemainingSteps:
/// `stop - step`). A node that sees 1 is running the last step the limit allows.
struct RemainingSteps {
  int value = 0;
  constexpr operator int() const noexcept { return value; }  // NOLINT: implicit by design
  friend bool operator==(const RemainingSteps&, const RemainingSteps&) = default;
};

/// True in the last superstep the recursion limit allows (LangGraph's IsLastStep).
struct IsLastStep {
  bool value = false;
  constexpr operator bool() const noexcept { return value; }  // NOLINT: implicit by design
  friend bool operator==(const IsLastStep&, const IsLastStep&) = default;
};

/// JSON conversions (a number, a boolean). from_json throws nlohmann::json::type_error for
/// another type.
void to_json(nlohmann::json& j, const RemainingSteps& v);
void from_json(const nlohmann::json& j, RemainingSteps& v);
void to_json(nlohmann::json& j, const IsLastStep& v);
void from_json(const nlohmann::json& j, IsLastStep& v);

/// True for the types of managed fields.
template <class T>
inline constexpr bool kManagedValue =
    std::is_same_v<T, RemainingSteps> || std::is_same_v<T, IsLastStep>;

}  // namespace sg
