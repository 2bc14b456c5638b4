// SPDX-License-Identifier: MIT
#pragma once

// JSON Schemas of C++ value types: a tool's arguments (make_tool) and a served graph's state
// (GET /assistants/{id}/schemas).

#include <stategraph/core/message.hpp>
#include <stategraph/core/update.hpp>

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace sg {

namespace detail {

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <class T>
struct IsVector : std::false_type {};
template <class T, class A>
struct IsVector<std::vector<T, A>> : std::true_type {};
template <class T>
struct IsStringMap : std::false_type {};
template <class V, class C, class A>
struct IsStringMap<std::map<std::string, V, C, A>> : std::true_type {};

}  // namespace detail

/// The JSON Schema of values of type `T` as they convert to JSON: booleans, integers, numbers,
/// strings, arrays (std::vector), objects (std::map with string keys), messages (a LangChain
/// message object), states and other structs with a schema() (an object of their fields; the
/// fields not std::optional are required); any other type, nlohmann::json included, takes any
/// value ({}). Thread-safe.
template <class T>
[[nodiscard]] nlohmann::json json_schema_of() {
  if constexpr (detail::IsOptional<T>::value) {
    return json_schema_of<typename T::value_type>();
  } else if constexpr (std::is_same_v<T, nlohmann::json>) {
    return nlohmann::json::object();
  } else if constexpr (std::is_same_v<T, bool>) {
    return {{"type", "boolean"}};
  } else if constexpr (std::is_integral_v<T>) {
    return {{"type", "integer"}};
  } else if constexpr (std::is_floating_point_v<T>) {
    return {{"type", "number"}};
  } else if constexpr (std::is_convertible_v<T, std::string>) {
    return {{"type", "string"}};
  } else if constexpr (std::is_same_v<T, Message>) {
    return {{"type", "object"},
            {"properties",
             {{"type", {{"type", "string"}}},
              {"role", {{"type", "string"}}},
              {"content", {{"type", {"string", "array"}}}},
              {"id", {{"type", "string"}}},
              {"name", {{"type", "string"}}},
              {"tool_calls", {{"type", "array"}}},
              {"tool_call_id", {{"type", "string"}}}}},
            {"required", {"content"}}};
  } else if constexpr (detail::IsVector<T>::value) {
    return {{"type", "array"}, {"items", json_schema_of<typename T::value_type>()}};
  } else if constexpr (detail::IsStringMap<T>::value) {
    return {{"type", "object"},
            {"additionalProperties", json_schema_of<typename T::mapped_type>()}};
  } else if constexpr (State<T>) {
    nlohmann::json properties = nlohmann::json::object();
    nlohmann::json required = nlohmann::json::array();
    for_each_field<T>([&](auto i) {
      using V = typename field_t<T, i>::value_type;
      const std::string name(field_t<T, i>::name);
      properties[name] = json_schema_of<V>();
      if (!detail::IsOptional<V>::value) required.push_back(name);
    });
    return {{"type", "object"}, {"properties", properties}, {"required", required}};
  } else {
    return nlohmann::json::object();  // any JSON value
  }
}

}  // namespace sg
