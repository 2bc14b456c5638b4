// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

namespace sg {

/// "Keep only a slice" of a list: the `{type: "keep", from, to}` update of LangGraph's memory
/// guide, with JavaScript `Array.prototype.slice` semantics (negative indices count from the
/// end, `to` is exclusive, an absent `to` means the end). A plain value type.
struct KeepSlice {
  std::int64_t from = 0;
  std::optional<std::int64_t> to{};

  friend bool operator==(const KeepSlice&, const KeepSlice&) = default;
};

/// Keeps list[from:to] (JS slice semantics). noexcept.
[[nodiscard]] constexpr KeepSlice keep_slice(
    std::int64_t from, std::optional<std::int64_t> to = std::nullopt) noexcept {
  return KeepSlice{from, to};
}

/// Keeps the last `n` elements (all of them when fewer); keep_last(0) keeps none. noexcept.
[[nodiscard]] constexpr KeepSlice keep_last(std::size_t n) noexcept {
  if (n == 0) return KeepSlice{0, 0};
  return KeepSlice{-static_cast<std::int64_t>(n), std::nullopt};
}

/// Keeps the first `n` elements. noexcept.
[[nodiscard]] constexpr KeepSlice keep_first(std::size_t n) noexcept {
  return KeepSlice{0, static_cast<std::int64_t>(n)};
}

/// The half-open index range [first, second) that `keep` selects in a list of `size`. noexcept.
[[nodiscard]] constexpr std::pair<std::size_t, std::size_t> slice_bounds(
    const KeepSlice& keep, std::size_t size) noexcept {
  const auto n = static_cast<std::int64_t>(size);
  auto resolve = [n](std::int64_t i) {
    return i < 0 ? std::max<std::int64_t>(n + i, 0) : std::min(i, n);
  };
  const std::int64_t begin = resolve(keep.from);
  const std::int64_t end = keep.to ? resolve(*keep.to) : n;
  if (end <= begin) return {0, 0};
  return {static_cast<std::size_t>(begin), static_cast<std::size_t>(end)};
}

/// Applies a KeepSlice in place. Basic exception guarantee (element moves).
template <class T>
void apply_keep(std::vector<T>& list, const KeepSlice& keep) {
  const auto [begin, end] = slice_bounds(keep, list.size());
  list.erase(list.begin() + static_cast<std::ptrdiff_t>(end), list.end());
  list.erase(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(begin));
}

/// An update of a list field: either elements to add (appended, or merged by id for message
/// lists) or a KeepSlice. Implicitly built from a vector, a brace list, one element or a
/// KeepSlice, so `update.set<&S::items>(sg::keep_last(5))` and `...(sg::append(x, y))` read well.
/// A plain value type.
template <class T>
class ListUpdate {
 public:
  ListUpdate() = default;
  ListUpdate(std::vector<T> items) : op_(std::move(items)) {}  // NOLINT: implicit by design
  ListUpdate(std::initializer_list<T> items) : op_(std::vector<T>(items)) {}
  ListUpdate(T item) : op_(std::vector<T>{}) {  // NOLINT
    std::get<0>(op_).push_back(std::move(item));
  }
  ListUpdate(KeepSlice keep) : op_(keep) {}  // NOLINT

  /// True when this update keeps a slice rather than adding elements.
  [[nodiscard]] bool is_keep() const noexcept { return op_.index() == 1; }
  /// The slice; precondition is_keep().
  [[nodiscard]] const KeepSlice& keep() const { return std::get<1>(op_); }
  /// The elements to add; precondition !is_keep().
  [[nodiscard]] std::vector<T>& items() { return std::get<0>(op_); }
  [[nodiscard]] const std::vector<T>& items() const { return std::get<0>(op_); }

  friend bool operator==(const ListUpdate&, const ListUpdate&) = default;

 private:
  std::variant<std::vector<T>, KeepSlice> op_;
};

/// Builds the element list of an append update: `sg::append(a, b, c)`.
template <class T, class... Rest>
[[nodiscard]] std::vector<std::decay_t<T>> append(T&& first, Rest&&... rest) {
  std::vector<std::decay_t<T>> out;
  out.reserve(1 + sizeof...(Rest));
  out.push_back(std::forward<T>(first));
  (out.push_back(std::forward<Rest>(rest)), ...);
  return out;
}

}  // namespace sg
