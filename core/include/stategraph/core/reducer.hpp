// SPDX-License-Identifier: MIT
#pragma once

#include <stategraph/core/error.hpp>
#include <stategraph/core/list_origin.hpp>
#include <stategraph/core/list_update.hpp>

#include <concepts>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace sg {

/// A reducer merges one write (`update_type`) into a state value (`value_type`). Reducers are
/// small const function objects; `apply` may throw (the value is then left as it was before
/// that write, or at least valid).
template <class R>
concept Reducer = requires {
  typename R::value_type;
  typename R::update_type;
}
&&requires(const R& r, typename R::value_type& value, typename R::update_type&& update) {
  r.apply(value, std::move(update));
};

/// A reducer that keeps a per-run cache of the value it manages: the executor owns one
/// `R::Cache` per field and run, passes it to `apply(value, update, cache)`, and calls
/// `cache.overwritten(value)` when an Overwrite replaces the value. add_messages keeps an id
/// index and which messages changed since the last checkpoint.
template <class R>
concept CachedReducer = Reducer<R> &&
    requires(const R& r, typename R::value_type& value, typename R::update_type&& update,
             typename R::Cache& cache) {
  r.apply(value, std::move(update), cache);
  cache.overwritten(value);
};

/// The list-edits hook: a reducer of an append-mostly list whose cache follows how the list
/// changed since it was last stored, so that a checkpoint stores only the elements a superstep
/// added (a ListDelta: ranges of the stored version plus new elements; docs/checkpoint-format.md).
/// The cache has:
/// - `track`: set by the executor when the run's checkpointer takes deltas; while it is false
///   the reducer may skip the bookkeeping;
/// - `origin`: a ListOrigin giving, for each element, its position in the last stored list (-1 for
///   an element added or replaced since); `apply(value, update, cache)` and
///   `cache.overwritten(value)` keep it in step with the list while `track` is set (when its
///   size differs from the list's, the executor stores the whole list);
/// - `rebase(value)`: the list was stored (or loaded): every element is at its own position.
/// add_messages and Concat implement it. Elements must convert to JSON.
template <class R>
concept ListEditsReducer = CachedReducer<R> &&
    requires(typename R::Cache& c, const typename R::Cache& cc, const typename R::value_type& v) {
  c.track = true;
  { cc.origin } -> std::convertible_to<const ListOrigin&>;
  c.rebase(v);
};

/// True for reducers that accept one write per superstep (LastValue).
template <class R>
inline constexpr bool kSingleWriter = requires {
  requires R::kSingleWriter;
};

/// The default reducer: the write replaces the value; two writes in one superstep are an
/// InvalidUpdateError. Stateless; thread-safe.
template <class V>
struct LastValue {
  using value_type = V;
  using update_type = V;
  static constexpr bool kSingleWriter = true;
  void apply(V& value, V&& update) const { value = std::move(update); }
};

/// List concatenation with keep-slice updates (LangGraph's `operator.add` plus the memory
/// guide's `{type: "keep"}`): a list update appends, a KeepSlice keeps a slice. Implements the
/// list-edits hook (ListEditsReducer), so a checkpoint stores only the appended elements.
/// Stateless; thread-safe.
template <class T>
struct Concat {
  using value_type = std::vector<T>;
  using update_type = ListUpdate<T>;

  /// The executor's per-field, per-run cache: the list's edits since it was last stored (see
  /// ListEditsReducer). Not synchronized.
  struct Cache {
    bool track = false;
    ListOrigin origin;
    /// The list was stored or loaded as it is.
    void rebase(const std::vector<T>& value) noexcept { origin.rebase(value.size()); }
    /// The list was replaced wholesale: every element is new.
    void overwritten(const std::vector<T>& value) {
      if (track) origin.all_new(value.size());
    }
  };

  void apply(std::vector<T>& value, ListUpdate<T>&& update) const {
    if (update.is_keep()) {
      apply_keep(value, update.keep());
      return;
    }
    auto& items = update.items();
    value.insert(value.end(), std::make_move_iterator(items.begin()),
                 std::make_move_iterator(items.end()));
  }
  /// apply(), keeping `cache.origin` in step with the list while `cache.track` is set.
  void apply(std::vector<T>& value, ListUpdate<T>&& update, Cache& cache) const {
    if (cache.track) {
      if (cache.origin.size() != value.size()) cache.origin.all_new(value.size());
      if (update.is_keep()) {
        cache.origin.keep(update.keep());
      } else {
        for (std::size_t n = update.items().size(); n > 0; --n) cache.origin.push_new();
      }
    }
    apply(value, std::move(update));
  }
};

/// A user-defined binary reducer `value = op(value, update)` (LangGraph's
/// `Annotated[T, op]`). Thread-safe if `op` is.
template <class V, class Op>
struct BinaryOperator {
  using value_type = V;
  using update_type = V;
  Op op;
  void apply(V& value, V&& update) const { value = op(std::move(value), std::move(update)); }
};

/// Reducer specs name a reducer without repeating the field's type; the schema binds them to
/// the member type (see `field<>()`).
struct LastValueSpec {
  using reducer_spec_tag = void;
  template <class V>
  using bind = LastValue<V>;
};
struct ConcatSpec {
  using reducer_spec_tag = void;
  template <class V>
  using bind = Concat<typename V::value_type>;
};
/// The default reducer spec (last value wins; one writer per step).
inline constexpr LastValueSpec last_value{};
/// The list concatenation spec (append, keep-slice).
inline constexpr ConcatSpec concat{};

/// Wraps a value that replaces a field and bypasses its reducer (LangGraph's `Overwrite`).
template <class V>
struct Overwrite {
  V value;
  friend bool operator==(const Overwrite&, const Overwrite&) = default;
};

/// `sg::overwrite(v)`: replace the field with `v`, bypassing its reducer.
template <class V>
[[nodiscard]] Overwrite<std::decay_t<V>> overwrite(V&& value) {
  return Overwrite<std::decay_t<V>>{std::forward<V>(value)};
}

/// One write to a field: a reducer update or an Overwrite.
template <Reducer R>
using Write = std::variant<typename R::update_type, Overwrite<typename R::value_type>>;

/// One write to a field within a superstep, and the name of the node that wrote it.
template <Reducer R>
struct FieldWrite {
  Write<R> value;
  std::string_view writer{};
};

namespace detail {
inline std::string quoted_writers(std::span<const std::string_view> writers, auto&& keep) {
  std::string out;
  for (std::size_t i = 0; i < writers.size(); ++i) {
    if (!keep(i)) continue;
    if (!out.empty()) out += ", ";
    out += '\'';
    out += writers[i].empty() ? std::string_view("input") : writers[i];
    out += '\'';
  }
  return out;
}
}  // namespace detail

/// Applies the writes of one superstep to a field, in the given (task) order, with LangGraph's
/// channel semantics: a single-writer reducer accepts at most one write; an Overwrite replaces
/// the value and the writes after it are ignored; two Overwrites are an error. `writers[i]` names
/// the node of `writes[i]`. Throws InvalidUpdateError naming `field` and the writers (before
/// changing anything), or what the reducer throws. Basic exception guarantee. Not synchronized.
template <Reducer R, class Cache = std::nullptr_t>
void apply_writes(const R& reducer, typename R::value_type& value,
                  std::span<Write<R>* const> writes, std::span<const std::string_view> writers,
                  std::string_view field, Cache* cache = nullptr) {
  if (writes.empty()) return;
  if constexpr (kSingleWriter<R>) {
    if (writes.size() > 1) {
      // LangGraph's wording first (users search for it), then who wrote.
      throw InvalidUpdateError(
          "At key '" + std::string(field) +
          "': Can receive only one value per step. Use an Annotated key to handle multiple "
          "values. (Written by " +
          detail::quoted_writers(writers, [](std::size_t) { return true; }) +
          "; give the field a reducer.)");
    }
  }
  std::size_t overwrites = 0;
  for (const auto* w : writes) overwrites += w->index() == 1 ? 1 : 0;
  if (overwrites > 1) {
    throw InvalidUpdateError(
        "At key '" + std::string(field) +
        "': Can receive only one Overwrite value per super-step. (Written by " +
        detail::quoted_writers(writers, [&](std::size_t i) { return writes[i]->index() == 1; }) +
        ".)");
  }
  for (auto* w : writes) {
    if (auto* replacement = std::get_if<1>(w)) {
      value = std::move(replacement->value);
      if constexpr (CachedReducer<R> && !std::is_same_v<Cache, std::nullptr_t>) {
        if (cache) cache->overwritten(value);
      }
      return;  // writes after an Overwrite are ignored
    }
    if constexpr (CachedReducer<R> && !std::is_same_v<Cache, std::nullptr_t>) {
      if (cache) {
        reducer.apply(value, std::move(std::get<0>(*w)), *cache);
        continue;
      }
    }
    reducer.apply(value, std::move(std::get<0>(*w)));
  }
}

/// apply_writes over FieldWrite records (value and writer together).
template <Reducer R>
void apply_writes(const R& reducer, typename R::value_type& value, std::span<FieldWrite<R>> writes,
                  std::string_view field) {
  std::vector<Write<R>*> pointers;
  std::vector<std::string_view> writers;
  pointers.reserve(writes.size());
  writers.reserve(writes.size());
  for (auto& w : writes) {
    pointers.push_back(&w.value);
    writers.push_back(w.writer);
  }
  apply_writes(reducer, value, std::span<Write<R>* const>(pointers), writers, field);
}

}  // namespace sg
