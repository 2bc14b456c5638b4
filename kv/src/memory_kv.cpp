// SPDX-License-Identifier: MIT
#include <stategraph/kv/kv.hpp>

#include <algorithm>

namespace sg::detail {

std::optional<std::string> MemoryKv::get(std::uint8_t space, std::string_view key) {
  std::shared_lock lock(mu_);
  const auto& map = maps_.at(space);
  auto it = map.find(key);
  if (it == map.end()) return std::nullopt;
  return it->second;
}

void MemoryKv::write(const std::vector<KvOp>& batch) {
  std::unique_lock lock(mu_);
  for (const auto& op : batch) {
    if (op.kind != KvOp::Kind::expect) continue;
    const auto& map = maps_.at(op.space);
    const auto it = map.find(op.key);
    if (op.value.empty() ? it != map.end() : it == map.end() || it->second != op.value) {
      throw KvConflict("another writer changed a key this batch expects unchanged");
    }
  }
  for (const auto& op : batch) {
    auto& map = maps_.at(op.space);
    switch (op.kind) {
      case KvOp::Kind::put:
        bytes_ += op.key.size() + op.value.size();
        if (auto it = map.find(op.key); it != map.end()) {
          bytes_ -= it->first.size() + it->second.size();
          it->second = op.value;
        } else {
          map.emplace(op.key, op.value);
        }
        break;
      case KvOp::Kind::erase:
        if (auto it = map.find(op.key); it != map.end()) {
          bytes_ -= it->first.size() + it->second.size();
          map.erase(it);
        }
        break;
      case KvOp::Kind::erase_range: {
        auto first = map.lower_bound(op.key);
        auto last = map.lower_bound(op.value);
        for (auto it = first; it != last; ++it) bytes_ -= it->first.size() + it->second.size();
        map.erase(first, last);
        break;
      }
      case KvOp::Kind::expect:
        break;  // checked above
    }
  }
}

void MemoryKv::scan(std::uint8_t space, std::string_view lower, std::string_view upper,
                    bool reverse,
                    const std::function<bool(std::string_view, std::string_view)>& visit) {
  // Entries are copied out in chunks and visited without the lock: `visit` may call back into
  // the store.
  constexpr std::size_t kFirstChunk = 2;  // grows: most scans stop at their first entry
  constexpr std::size_t kMaxChunk = 256;
  std::string lo(lower);
  std::string hi(upper);
  std::size_t chunk = kFirstChunk;
  for (;;) {
    std::vector<std::pair<std::string, std::string>> entries;
    {
      std::shared_lock lock(mu_);
      const auto& map = maps_.at(space);
      auto first = map.lower_bound(lo);
      auto last = hi.empty() ? map.end() : map.lower_bound(hi);
      if (!reverse) {
        for (auto it = first; it != last && entries.size() < chunk; ++it)
          entries.emplace_back(it->first, it->second);
      } else {
        for (auto it = last; it != first && entries.size() < chunk;) {
          --it;
          entries.emplace_back(it->first, it->second);
        }
      }
    }
    for (const auto& [k, v] : entries) {
      if (!visit(k, v)) return;
    }
    if (entries.size() < chunk) return;
    chunk = std::min(chunk * 2, kMaxChunk);
    if (!reverse) {
      lo = entries.back().first + std::string(1, '\0');  // the smallest key after the last one
    } else {
      hi = entries.back().first;
    }
  }
}

std::size_t MemoryKv::bytes() const {
  std::shared_lock lock(mu_);
  return bytes_;
}

}  // namespace sg::detail
