#include <stategraph/checkpoint/memory_saver.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <shared_mutex>

namespace sg {

/// Four ordered maps behind a reader-writer lock.
class InMemorySaver::Backend final : public detail::KvBackend {
 public:
  std::optional<std::string> get(detail::Column column, std::string_view key) override {
    std::shared_lock lock(mu_);
    const auto& map = maps_[static_cast<std::size_t>(column)];
    auto it = map.find(key);
    if (it == map.end()) return std::nullopt;
    return it->second;
  }

  void write(const std::vector<detail::KvOp>& batch) override {
    std::unique_lock lock(mu_);
    for (const auto& op : batch) {
      auto& map = maps_[static_cast<std::size_t>(op.column)];
      switch (op.kind) {
        case detail::KvOp::Kind::put:
          bytes_ += op.key.size() + op.value.size();
          if (auto it = map.find(op.key); it != map.end()) {
            bytes_ -= it->first.size() + it->second.size();
            it->second = op.value;
          } else {
            map.emplace(op.key, op.value);
          }
          break;
        case detail::KvOp::Kind::erase:
          if (auto it = map.find(op.key); it != map.end()) {
            bytes_ -= it->first.size() + it->second.size();
            map.erase(it);
          }
          break;
        case detail::KvOp::Kind::erase_range: {
          auto first = map.lower_bound(op.key);
          auto last = map.lower_bound(op.value);
          for (auto it = first; it != last; ++it) bytes_ -= it->first.size() + it->second.size();
          map.erase(first, last);
          break;
        }
      }
    }
  }

  void scan(detail::Column column, std::string_view lower, std::string_view upper, bool reverse,
            const std::function<bool(std::string_view, std::string_view)>& visit) override {
    // Entries are copied out in chunks and visited without the lock: `visit` may call back
    // into the store.
    std::string lo(lower);
    std::string hi(upper);
    std::size_t chunk = kFirstChunk;  // grows: most scans stop at their first entry
    for (;;) {
      std::vector<std::pair<std::string, std::string>> entries;
      {
        std::shared_lock lock(mu_);
        const auto& map = maps_[static_cast<std::size_t>(column)];
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

  std::size_t bytes() const {
    std::shared_lock lock(mu_);
    return bytes_;
  }

 private:
  static constexpr std::size_t kFirstChunk = 2;
  static constexpr std::size_t kMaxChunk = 256;
  mutable std::shared_mutex mu_;
  std::array<std::map<std::string, std::string, std::less<>>, detail::kColumnCount> maps_;
  std::size_t bytes_ = 0;
};

InMemorySaver::InMemorySaver() : KvCheckpointer(std::make_unique<Backend>()) {
  backend_ = static_cast<Backend*>(&kv());
}

std::size_t InMemorySaver::stored_bytes() const {
  return backend_->bytes();
}

}  // namespace sg
