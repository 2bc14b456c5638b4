#pragma once

#include <stategraph/core/error.hpp>
#include <stategraph/core/message.hpp>
#include <stategraph/reducers/list_update.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <type_traits>

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

}  // namespace sg
