#pragma once

#include <stategraph/core/error.hpp>
#include <stategraph/core/json_optional.hpp>
#include <stategraph/core/list_update.hpp>
#include <stategraph/core/message.hpp>
#include <stategraph/core/reducer.hpp>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <type_traits>
#include <variant>

namespace sg {

/// Reads `{"type": "keep", "from": F, "to": T}` with JavaScript semantics: numbers are truncated
/// toward zero, a missing `from` is 0, a missing `to` is the end, a null bound is 0. Throws
/// sg::Error (code "argument.invalid") for a non-number bound or a missing "keep" type.
/// Thread-safe.
[[nodiscard]] KeepSlice keep_slice_from_json(const nlohmann::json& value);

/// `{"type": "keep", "from": F}` plus `"to": T` when bounded. Thread-safe.
[[nodiscard]] nlohmann::json keep_slice_to_json(const KeepSlice& keep);

/// True for a JSON object whose "type" is "keep".
[[nodiscard]] inline bool is_keep_update(const nlohmann::json& value) {
  return value.is_object() && value.value("type", nlohmann::json()) == "keep";
}

/// Reads a list-field update: a JSON array appends its elements, `{"type": "keep", ...}` keeps a
/// slice. For message lists a single message-like also appends. Any other object leaves the list
/// unchanged, as the keep reducer of LangGraph's memory guide does. Throws sg::Error naming what
/// is wrong (including element conversion errors). Thread-safe.
template <class T>
[[nodiscard]] ListUpdate<T> list_update_from_json(const nlohmann::json& value) {
  if (is_keep_update(value)) return keep_slice_from_json(value);
  if constexpr (std::is_same_v<T, Message>) {
    return messages_from_json(value);
  } else {
    if (value.is_array()) {
      std::vector<T> items;
      items.reserve(value.size());
      for (std::size_t i = 0; i < value.size(); ++i) {
        try {
          items.push_back(value[i].template get<T>());
        } catch (const nlohmann::json::exception& e) {
          throw Error(errc::kInvalidArgument,
                      "list update element [" + std::to_string(i) + "]: " + e.what());
        }
      }
      return items;
    }
    if (value.is_object()) return KeepSlice{0, std::nullopt};  // unknown object: no change
    throw Error(
        errc::kInvalidArgument,
        "a list update must be a list to append or {\"type\": \"keep\", \"from\", \"to\"}, got " +
            value.dump());
  }
}

/// The JSON form of a list update: the appended elements as an array, or the keep object.
template <class T>
[[nodiscard]] nlohmann::json list_update_to_json(const ListUpdate<T>& update) {
  if (update.is_keep()) return keep_slice_to_json(update.keep());
  if constexpr (std::is_same_v<T, Message>) {
    return messages_to_json(update.items());
  } else {
    return nlohmann::json(update.items());
  }
}

/// True when T converts to and from nlohmann::json.
template <class T>
concept JsonConvertible = std::is_constructible_v<nlohmann::json, const T&> &&
    requires(const nlohmann::json& j) {
  j.template get<T>();
};

/// JSON of one field write: the update itself, or `{"__overwrite__": value}` (LangGraph's
/// Overwrite form). Throws what the value's converter throws.
template <Reducer R>
[[nodiscard]] nlohmann::json write_to_json(const Write<R>& write) {
  if (const auto* o = std::get_if<1>(&write)) return nlohmann::json{{"__overwrite__", o->value}};
  return nlohmann::json(std::get<0>(write));
}

/// Reads one field write (see write_to_json). Throws sg::Error (code "argument.invalid").
template <Reducer R>
[[nodiscard]] Write<R> write_from_json(const nlohmann::json& value) {
  try {
    if (value.is_object() && value.size() == 1 && value.contains("__overwrite__")) {
      return Overwrite<typename R::value_type>{
          value["__overwrite__"].template get<typename R::value_type>()};
    }
    return value.template get<typename R::update_type>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(errc::kInvalidArgument, e.what());
  }
}

}  // namespace sg

namespace nlohmann {

template <class T>
struct adl_serializer<sg::ListUpdate<T>> {
  static void to_json(json& j, const sg::ListUpdate<T>& u) { j = sg::list_update_to_json(u); }
  static void from_json(const json& j, sg::ListUpdate<T>& u) {
    u = sg::list_update_from_json<T>(j);
  }
};

template <>
struct adl_serializer<sg::KeepSlice> {
  static void to_json(json& j, const sg::KeepSlice& k) { j = sg::keep_slice_to_json(k); }
  static void from_json(const json& j, sg::KeepSlice& k) { k = sg::keep_slice_from_json(j); }
};

}  // namespace nlohmann
