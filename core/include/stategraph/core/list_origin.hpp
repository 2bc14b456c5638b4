// SPDX-License-Identifier: MIT
#pragma once

#include <stategraph/core/list_update.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace sg {

/// Where each element of a list was in a base version of it (the last checkpointed list), or -1
/// for an element added or replaced since. Held as a run of untouched elements (element i at base
/// position `head_from + i`) followed by explicit positions, so that appending, rebasing and
/// trimming the front cost O(1) whatever the list's length. A plain value type; not synchronized.
class ListOrigin {
 public:
  /// Every one of `size` elements is at its own base position.
  void rebase(std::size_t size) noexcept {
    head_from_ = 0;
    head_len_ = size;
    tail_.clear();
  }
  /// Every one of `size` elements is new.
  void all_new(std::size_t size) {
    head_from_ = 0;
    head_len_ = 0;
    tail_.assign(size, -1);
  }
  /// An element was appended.
  void push_new() { tail_.push_back(-1); }
  /// The element at `index` was replaced. Precondition: index < size().
  void mark_new(std::size_t index) {
    if (index < head_len_) split(index);
    tail_[index - head_len_] = -1;
  }
  /// Removes the elements whose index satisfies `removed` (called once per index, in order,
  /// starting at `first`: the lowest index that may be removed).
  template <class Removed>
  void erase_if(std::size_t first, Removed removed) {
    if (first < head_len_) split(first);
    std::size_t out = first - head_len_;
    for (std::size_t i = first; i < size(); ++i) {
      if (!removed(i)) tail_[out++] = tail_[i - head_len_];
    }
    tail_.resize(out);
  }
  /// Keeps the slice `keep` selects, as apply_keep does to the list.
  void keep(const KeepSlice& keep) {
    const auto [begin, end] = slice_bounds(keep, size());
    if (end <= head_len_) {
      tail_.clear();
      head_len_ = end;
    } else {
      tail_.resize(end - head_len_);
    }
    if (begin <= head_len_) {
      head_from_ += static_cast<std::int64_t>(begin);
      head_len_ -= begin;
    } else {
      tail_.erase(tail_.begin(), tail_.begin() + static_cast<std::ptrdiff_t>(begin - head_len_));
      head_len_ = 0;
    }
  }

  [[nodiscard]] std::size_t size() const noexcept { return head_len_ + tail_.size(); }
  /// The base position of the element at `index`, -1 when new. Precondition: index < size().
  [[nodiscard]] std::int64_t at(std::size_t index) const noexcept {
    return index < head_len_ ? head_from_ + static_cast<std::int64_t>(index)
                             : tail_[index - head_len_];
  }
  /// The untouched run: its first base position and length.
  [[nodiscard]] std::int64_t head_from() const noexcept { return head_from_; }
  [[nodiscard]] std::size_t head_length() const noexcept { return head_len_; }
  /// The positions after the untouched run.
  [[nodiscard]] std::span<const std::int64_t> tail() const noexcept { return tail_; }
  /// Every position, in order (O(size); for tests and diagnostics).
  [[nodiscard]] std::vector<std::int64_t> positions() const {
    std::vector<std::int64_t> out;
    out.reserve(size());
    for (std::size_t i = 0; i < size(); ++i) out.push_back(at(i));
    return out;
  }

 private:
  /// Moves the untouched run's elements from `index` on into the explicit positions.
  void split(std::size_t index) {
    std::vector<std::int64_t> moved;
    moved.reserve(head_len_ - index + tail_.size());
    for (std::size_t i = index; i < head_len_; ++i) {
      moved.push_back(head_from_ + static_cast<std::int64_t>(i));
    }
    moved.insert(moved.end(), tail_.begin(), tail_.end());
    tail_ = std::move(moved);
    head_len_ = index;
  }

  std::int64_t head_from_ = 0;
  std::size_t head_len_ = 0;
  std::vector<std::int64_t> tail_;
};

}  // namespace sg
