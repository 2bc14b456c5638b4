// SPDX-License-Identifier: MIT
#pragma once
// std::optional<T> <-> JSON (null when empty), which nlohmann 3.11 lacks. Every header that
// converts an optional to or from JSON includes this before it does, so that every translation
// unit sees the same adl_serializer (one defined before its first use). Thread-safe.
#include <nlohmann/json.hpp>

#include <optional>

namespace nlohmann {

template <class T>
struct adl_serializer<std::optional<T>> {
  static void to_json(json& j, const std::optional<T>& v) {
    if (v) {
      j = *v;
    } else {
      j = nullptr;
    }
  }
  static void from_json(const json& j, std::optional<T>& v) {
    if (j.is_null()) {
      v.reset();
    } else {
      v = j.template get<T>();
    }
  }
};

}  // namespace nlohmann
