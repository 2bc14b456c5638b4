// SPDX-License-Identifier: MIT
#pragma once

#include <stategraph/core/error.hpp>
#include <stategraph/core/json_optional.hpp>
#include <stategraph/core/list_update.hpp>
#include <stategraph/core/message.hpp>
#include <stategraph/core/reducer.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
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

namespace detail {

template <class T>
concept HasValueType = requires {
  typename T::value_type;
};
template <class T>
concept OptionalValue = HasValueType<T> && std::is_same_v<T, std::optional<typename T::value_type>>;
template <class T>
concept MapValue = requires {
  typename T::key_type;
  typename T::mapped_type;
};
template <class T>
concept ListValue = HasValueType<T> && requires(const T& t) {
  t.begin();
} && !std::is_same_v<T, std::string> && !std::is_same_v<T, nlohmann::json>;

/// Throws sg::Error (code "argument.invalid") when `value` holds a number that `get<T>()`
/// would convert with undefined behaviour: a float outside the range of an integer type (or
/// NaN, from CBOR), where T is one, or an optional, a list or a map of them at any depth.
/// nlohmann::json converts with a plain static_cast. Other types are not looked into.
template <class T>
void check_number_range(const nlohmann::json& value) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (!value.is_number_float()) return;
    const double d = value.get<double>();
    const double bound = std::ldexp(1.0, std::numeric_limits<T>::digits);  // 2^digits
    const bool fits = std::is_signed_v<T> ? (d >= -bound && d < bound) : (d > -1.0 && d < bound);
    if (!fits) {
      throw Error(errc::kInvalidArgument, "the number " + value.dump() +
                                              " is out of the range of an integer of " +
                                              std::to_string(sizeof(T) * 8) + " bits");
    }
  } else if constexpr (OptionalValue<T>) {
    if (!value.is_null()) check_number_range<typename T::value_type>(value);
  } else if constexpr (MapValue<T>) {
    if (value.is_object()) {
      for (const auto& item : value) check_number_range<typename T::mapped_type>(item);
    } else if (value.is_array()) {  // [[key, value], ...]
      for (const auto& pair : value) {
        if (!pair.is_array() || pair.size() != 2) continue;
        check_number_range<typename T::key_type>(pair[0]);
        check_number_range<typename T::mapped_type>(pair[1]);
      }
    }
  } else if constexpr (ListValue<T>) {
    if (value.is_array()) {
      for (const auto& item : value) check_number_range<typename T::value_type>(item);
    }
  }
}

/// `value.get<T>()` after check_number_range<T>: throws sg::Error for an out-of-range number
/// and what nlohmann::json throws for the rest.
template <class T>
[[nodiscard]] T json_to(const nlohmann::json& value) {
  check_number_range<T>(value);
  return value.template get<T>();
}

}  // namespace detail

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
          items.push_back(detail::json_to<T>(value[i]));
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

/// Reads one field write (see write_to_json). Throws sg::Error (code "argument.invalid"), also
/// for a number out of the range of the field's integers.
template <Reducer R>
[[nodiscard]] Write<R> write_from_json(const nlohmann::json& value) {
  try {
    if (value.is_object() && value.size() == 1 && value.contains("__overwrite__")) {
      return Overwrite<typename R::value_type>{
          detail::json_to<typename R::value_type>(value["__overwrite__"])};
    }
    return detail::json_to<typename R::update_type>(value);
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
