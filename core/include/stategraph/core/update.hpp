// SPDX-License-Identifier: MIT
#pragma once

#include <stategraph/core/error.hpp>
#include <stategraph/core/json.hpp>
#include <stategraph/core/managed.hpp>
#include <stategraph/core/schema.hpp>

#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace sg {

namespace detail {

template <class T>
struct IsOverwrite : std::false_type {};
template <class V>
struct IsOverwrite<Overwrite<V>> : std::true_type {};

template <class T>
inline constexpr bool kStringLike =
    std::is_same_v<T, std::string> || std::is_same_v<T, std::string_view>;

template <class S, class Seq>
struct SlotsOf;
template <class S, std::size_t... I>
struct SlotsOf<S, std::index_sequence<I...>> {
  using type = std::tuple<std::optional<Write<typename field_t<S, I>::reducer_type>>...>;
};

}  // namespace detail

/// A sparse, typed update of a state S: for each schema field, nothing, a reducer update, or an
/// overwrite. Nodes return one; the executor applies it through the fields' reducers. Setting a
/// member outside the schema, or a value of the wrong type, does not compile. Setting a field
/// twice keeps the last value. A plain value type; not synchronized.
template <State S>
class Update {
 public:
  using state_type = S;
  using Slots = typename detail::SlotsOf<S, std::make_index_sequence<field_count_v<S>>>::type;

  Update() = default;

  /// Sets the field whose member is `Member`: `u.set<&Chat::summary>("...")`. The value is the
  /// field's update type (a value for last-value fields; a list, one element or a KeepSlice for
  /// list fields) or `sg::overwrite(v)`.
  template <auto Member, class V>
  requires std::is_member_object_pointer_v<decltype(Member)> Update& set(V&& value) & {
    constexpr std::size_t index = field_index_of_member<S, Member>();
    static_assert(index != kNoField,
                  "sg::Update::set: this member is not part of the state's schema() (declare it "
                  "with sg::field<\"name\">(&State::member))");
    assign<index>(std::forward<V>(value));
    return *this;
  }
  template <auto Member, class V>
  requires std::is_member_object_pointer_v<decltype(Member)> Update && set(V&& value) && {
    return std::move(set<Member>(std::forward<V>(value)));
  }

  /// Sets the field named `Name`: `u.set<"summary">("...")`.
  template <FixedString Name, class V>
  Update& set(V&& value) & {
    constexpr std::size_t index = field_index_of_name<S, Name>();
    static_assert(index != kNoField,
                  "sg::Update::set: no field of the state's schema() has this name");
    assign<index>(std::forward<V>(value));
    return *this;
  }
  template <FixedString Name, class V>
  Update&& set(V&& value) && {
    return std::move(set<Name>(std::forward<V>(value)));
  }

  /// The write of field I, if any.
  template <std::size_t I>
  [[nodiscard]] auto& slot() noexcept {
    return std::get<I>(slots_);
  }
  template <std::size_t I>
  [[nodiscard]] const auto& slot() const noexcept {
    return std::get<I>(slots_);
  }

  /// True when no field is set.
  [[nodiscard]] bool empty() const noexcept {
    return std::apply([](const auto&... s) { return (!s.has_value() && ...); }, slots_);
  }

  /// An update that sets every field to its value in `state` (through the fields' reducers): how
  /// a subgraph's final state becomes its parent's update, and how a state becomes graph input.
  [[nodiscard]] static Update from_state(const S& state) {
    Update u;
    for_each_field<S>([&](auto i) {
      using F = field_t<S, i>;
      static_assert(std::is_constructible_v<typename F::update_type, const typename F::value_type&>,
                    "sg::Update::from_state: a field's update type cannot be built from its value");
      u.template slot<i>().emplace(std::in_place_index<0>,
                                   typename F::update_type(field_value<i>(state)));
    });
    return u;
  }

  friend bool operator==(const Update&, const Update&) = default;

 private:
  template <std::size_t I, class V>
  void assign(V&& value) {
    using F = field_t<S, I>;
    using U = typename F::update_type;
    using M = typename F::value_type;
    using D = std::remove_cvref_t<V>;
    if constexpr (detail::IsOverwrite<D>::value) {
      static_assert(std::is_constructible_v<M, decltype(std::forward<V>(value).value)>,
                    "sg::Update::set: the overwrite value does not match the field's type");
      std::get<I>(slots_).emplace(std::in_place_index<1>,
                                  Overwrite<M>{M(std::forward<V>(value).value)});
    } else {
      static_assert(!(std::is_arithmetic_v<D> && detail::kStringLike<U>),
                    "sg::Update::set: a number is not a string value");
      static_assert(std::is_constructible_v<U, V>,
                    "sg::Update::set: the value's type does not match the field's update type");
      std::get<I>(slots_).emplace(std::in_place_index<0>, U(std::forward<V>(value)));
    }
  }

  Slots slots_;
};

/// `sg::set<&Chat::summary>(text)`: an Update with one field set (chain more with `.set<...>`).
template <auto Member, class V>
requires std::is_member_object_pointer_v<decltype(Member)>
[[nodiscard]] auto set(V&& value) {
  using S = typename detail::MemberClass<decltype(Member)>::type;
  return Update<S>{}.template set<Member>(std::forward<V>(value));
}

/// Applies one update to a state: each set field through its reducer (or the overwrite). For a
/// single writer; the executor applies the writes of a superstep with apply_writes. Throws what
/// the reducers throw.
template <State S>
void apply_update(S& state, Update<S>&& update, std::string_view writer = {}) {
  for_each_field<S>([&](auto i) {
    auto& slot = update.template slot<i>();
    if (!slot) return;
    using R = typename field_t<S, i>::reducer_type;
    Write<R>* write = &*slot;
    apply_writes<R>(field_reducer<S, i>(), field_value<i>(state),
                    std::span<Write<R>* const>(&write, 1),
                    std::span<const std::string_view>(&writer, 1), field_t<S, i>::name);
  });
}

namespace detail {
/// Calls `fn(std::integral_constant<std::size_t, I>{})` for the field named `name`. Throws
/// sg::Error (code "argument.invalid") when no field has that name.
template <State S, class Fn>
void visit_field_named(std::string_view name, Fn&& fn) {
  bool found = false;
  for_each_field<S>([&](auto i) {
    if (found || field_t<S, i>::name != name) return;
    found = true;
    fn(i);
  });
  if (!found)
    throw Error(errc::kInvalidArgument, "unknown state field '" + std::string(name) + "'");
}
}  // namespace detail

/// True when every field of S converts to and from JSON (needed for checkpoints and the JSON
/// forms below).
template <State S>
inline constexpr bool kJsonState = []<std::size_t... I>(std::index_sequence<I...>) {
  return ((JsonConvertible<typename field_t<S, I>::value_type> &&
           JsonConvertible<typename field_t<S, I>::update_type>)&&...);
}
(std::make_index_sequence<field_count_v<S>>{});

/// The state as a JSON object `{field name: value}`. Thread-safe.
template <State S>
requires kJsonState<S>
[[nodiscard]] nlohmann::json state_to_json(const S& state) {
  nlohmann::json out = nlohmann::json::object();
  for_each_field<S>([&](auto i) { out[std::string(field_t<S, i>::name)] = field_value<i>(state); });
  return out;
}

/// Reads a state from `{field name: value}`; absent fields keep their defaults. Throws sg::Error
/// (code "argument.invalid") naming an unknown field or a bad value. Thread-safe.
template <State S>
requires kJsonState<S>
[[nodiscard]] S state_from_json(const nlohmann::json& value) {
  if (!value.is_object()) throw Error(errc::kInvalidArgument, "a state must be a JSON object");
  S state{};
  for (const auto& item : value.items()) {
    // Not a structured binding: lambdas capture those only from clang 16 on (clang-tidy 14).
    const std::string& key = item.key();
    const nlohmann::json& field_json = item.value();
    detail::visit_field_named<S>(key, [&](auto i) {
      try {
        field_value<i>(state) = detail::json_to<typename field_t<S, i>::value_type>(field_json);
      } catch (const std::exception& e) {
        throw Error(errc::kInvalidArgument, "state field '" + key + "': " + e.what());
      }
    });
  }
  return state;
}

/// An update as `{field name: update}` (overwrites as `{"__overwrite__": value}`). Thread-safe.
template <State S>
requires kJsonState<S>
[[nodiscard]] nlohmann::json update_to_json(const Update<S>& update) {
  nlohmann::json out = nlohmann::json::object();
  for_each_field<S>([&](auto i) {
    if (const auto& slot = update.template slot<i>()) {
      out[std::string(field_t<S, i>::name)] =
          write_to_json<typename field_t<S, i>::reducer_type>(*slot);
    }
  });
  return out;
}

/// Reads an update from `{field name: update}`. Throws sg::Error (code "argument.invalid")
/// naming an unknown field or a bad value. Thread-safe.
template <State S>
requires kJsonState<S>
[[nodiscard]] Update<S> update_from_json(const nlohmann::json& value) {
  if (!value.is_object()) throw Error(errc::kInvalidArgument, "an update must be a JSON object");
  Update<S> update;
  for (const auto& item : value.items()) {
    const std::string& key = item.key();
    const nlohmann::json& field_json = item.value();
    detail::visit_field_named<S>(key, [&](auto i) {
      try {
        update.template slot<i>() =
            write_from_json<typename field_t<S, i>::reducer_type>(field_json);
      } catch (const Error& e) {
        throw Error(e.code(), "state field '" + key + "': " + e.what());
      }
    });
  }
  return update;
}

}  // namespace sg
