// SPDX-License-Identifier: MIT
#pragma once

// A small LRU map of threads' final states (CompileOptions::recent_threads). Internal to
// stategraph.

#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace sg::detail {

/// The final state of recently finished threads, so that the next run on one skips loading its
/// checkpoint. Holds at most `capacity` threads; the least recently stored goes first.
/// Thread-safe.
template <class Entry>
class RecentThreads {
 public:
  explicit RecentThreads(std::size_t capacity) : capacity_(capacity) {}

  [[nodiscard]] bool contains(const std::string& thread) const {
    std::lock_guard lock(mu_);
    return index_.count(thread) > 0;
  }

  /// Removes and returns the entry of `thread`, if any.
  std::optional<Entry> take(const std::string& thread) {
    std::lock_guard lock(mu_);
    auto it = index_.find(thread);
    if (it == index_.end()) return std::nullopt;
    std::optional<Entry> out(std::move(it->second->second));
    order_.erase(it->second);
    index_.erase(it);
    return out;
  }

  void put(const std::string& thread, Entry entry) {
    if (capacity_ == 0) return;
    std::lock_guard lock(mu_);
    if (auto it = index_.find(thread); it != index_.end()) {
      order_.erase(it->second);
      index_.erase(it);
    }
    order_.emplace_front(thread, std::move(entry));
    index_[thread] = order_.begin();
    if (order_.size() > capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
  }

 private:
  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::list<std::pair<std::string, Entry>> order_;  // newest first
  std::unordered_map<std::string, typename std::list<std::pair<std::string, Entry>>::iterator>
      index_;
};

}  // namespace sg::detail
