// SPDX-License-Identifier: MIT
#pragma once

// The typed state schema: a state is a plain aggregate with
//
//   static constexpr auto schema() {
//     return std::tuple{sg::field<"messages">(&Chat::messages, sg::add_messages),
//                       sg::field<"summary">(&Chat::summary)};
//   }
//
// which names each field once, with its reducer (last value when omitted).

#include <stategraph/core/reducer.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <limits>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

namespace sg {

/// A string usable as a template argument: `sg::field<"summary">(...)`.
template <std::size_t N>
struct FixedString {
  char value[N]{};
  constexpr FixedString(const char (&text)[N]) { std::copy_n(text, N, value); }  // NOLINT
  [[nodiscard]] constexpr std::string_view view() const noexcept { return {value, N - 1}; }
};

/// One schema entry: the field's name, its member and its reducer. `S` is the class that
/// declares the member (a base of the state for inherited fields).
template <FixedString Name, class S, class M, Reducer R>
struct Field {
  using state_type = S;
  using value_type = M;
  using reducer_type = R;
  using update_type = typename R::update_type;
  static constexpr std::string_view name = Name.view();

  M S::*member;
  R reducer;
};

namespace detail {

template <class T>
struct MemberClass;
template <class M, class C>
struct MemberClass<M C::*> {
  using type = C;
};

template <class Spec>
concept BindableSpec = requires {
  typename Spec::reducer_spec_tag;
};

template <class Spec, class M>
struct ResolveReducer {
  static_assert(std::is_invocable_r_v<M, const Spec&, M, M>,
                "sg::field: the reducer must be a reducer type (value_type, update_type, apply), a "
                "spec such as sg::last_value or sg::concat, or a callable M(M, M)");
  using type = BinaryOperator<M, Spec>;
};
template <class Spec, class M>
requires Reducer<Spec>
struct ResolveReducer<Spec, M> {
  using type = Spec;
};
template <class Spec, class M>
requires(!Reducer<Spec> && BindableSpec<Spec>) struct ResolveReducer<Spec, M> {
  using type = typename Spec::template bind<M>;
};

template <class R, class Spec>
constexpr R make_reducer(const Spec& spec) {
  if constexpr (std::is_same_v<R, Spec>) {
    return spec;
  } else if constexpr (requires { R{spec}; }) {
    // Not is_constructible: that needs parenthesized aggregate initialization, which clang
    // before 16 lacks, and a function pointer's reducer then lost its pointer (null).
    return R{spec};
  } else {
    return R{};
  }
}

}  // namespace detail

/// Declares a schema field: `sg::field<"name">(&S::member)` (last value) or with a reducer:
/// `sg::add_messages`, `sg::concat`, a reducer object, or a callable `M(M, M)`.
template <FixedString Name, class S, class M, class Spec = LastValueSpec>
constexpr auto field(M S::*member, Spec spec = {}) {
  using R = typename detail::ResolveReducer<Spec, M>::type;
  static_assert(std::is_same_v<typename R::value_type, M>,
                "sg::field: the reducer's value_type does not match the member's type");
  return Field<Name, S, M, R>{member, detail::make_reducer<R>(spec)};
}

/// A state type: a default-constructible, copyable aggregate with a constexpr `schema()`.
template <class S>
concept State = std::default_initializable<S> && std::copy_constructible<S> && requires {
  {S::schema()};
};

/// The schema tuple type of S.
template <State S>
using schema_t = decltype(S::schema());

/// The schema of S, as a constexpr value.
template <State S>
inline constexpr schema_t<S> schema_v = S::schema();

/// The number of fields of S.
template <State S>
inline constexpr std::size_t field_count_v = std::tuple_size_v<schema_t<S>>;

/// The I-th field type of S.
template <State S, std::size_t I>
using field_t = std::tuple_element_t<I, schema_t<S>>;

inline constexpr std::size_t kNoField = std::numeric_limits<std::size_t>::max();

/// The index of the field whose member is `Member`, or kNoField.
template <State S, auto Member>
consteval std::size_t field_index_of_member() {
  std::size_t index = kNoField;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (
        [&] {
          if constexpr (std::is_same_v<decltype(Member),
                                       decltype(std::get<I>(schema_v<S>).member)>) {
            if (index == kNoField && std::get<I>(schema_v<S>).member == Member) index = I;
          }
        }(),
        ...);
  }
  (std::make_index_sequence<field_count_v<S>>{});
  return index;
}

/// The index of the field named `Name`, or kNoField.
template <State S, FixedString Name>
consteval std::size_t field_index_of_name() {
  std::size_t index = kNoField;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((index = (index == kNoField && field_t<S, I>::name == Name.view()) ? I : index), ...);
  }
  (std::make_index_sequence<field_count_v<S>>{});
  return index;
}

/// Calls `fn(std::integral_constant<std::size_t, I>{})` for every field index of S.
template <State S, class Fn>
constexpr void for_each_field(Fn&& fn) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (fn(std::integral_constant<std::size_t, I>{}), ...);
  }
  (std::make_index_sequence<field_count_v<S>>{});
}

/// The value of field I of `state`.
template <std::size_t I, State S>
[[nodiscard]] constexpr auto& field_value(S& state) {
  return state.*(std::get<I>(schema_v<S>).member);
}
template <std::size_t I, State S>
[[nodiscard]] constexpr const auto& field_value(const S& state) {
  return state.*(std::get<I>(schema_v<S>).member);
}

/// The reducer of field I.
template <State S, std::size_t I>
[[nodiscard]] constexpr const auto& field_reducer() {
  return std::get<I>(schema_v<S>).reducer;
}

}  // namespace sg
