// SPDX-License-Identifier: MIT
#include <stategraph/core/cache.hpp>
#include <stategraph/core/json_optional.hpp>  // nlohmann/json.hpp with std::optional

#include <map>

namespace sg {

struct InMemoryCache::Entry {
  nlohmann::json value;
  std::optional<std::chrono::steady_clock::time_point> expires;
};

/// Namespace -> key -> entry.
struct InMemoryCache::Entries : std::map<std::string, std::map<std::string, Entry>> {};

InMemoryCache::InMemoryCache(Clock clock)
    : clock_(std::move(clock)), entries_(std::make_unique<Entries>()) {
  if (!clock_) clock_ = [] { return std::chrono::steady_clock::now(); };
}

InMemoryCache::~InMemoryCache() = default;

std::optional<nlohmann::json> InMemoryCache::get(const std::string& ns, const std::string& key) {
  std::lock_guard lock(mu_);
  auto space = entries_->find(ns);
  if (space == entries_->end()) return std::nullopt;
  auto it = space->second.find(key);
  if (it == space->second.end()) return std::nullopt;
  if (it->second.expires && clock_() >= *it->second.expires) {
    space->second.erase(it);
    return std::nullopt;
  }
  return it->second.value;
}

void InMemoryCache::set(const std::string& ns, const std::string& key, nlohmann::json value,
                        std::optional<std::chrono::duration<double>> ttl) {
  std::optional<std::chrono::steady_clock::time_point> expires;
  if (ttl) {
    expires = clock_() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(*ttl);
  }
  std::lock_guard lock(mu_);
  (*entries_)[ns][key] = Entry{std::move(value), expires};
}

void InMemoryCache::clear(const std::vector<std::string>& namespaces) {
  std::lock_guard lock(mu_);
  if (namespaces.empty()) {
    entries_->clear();
    return;
  }
  for (const auto& ns : namespaces) entries_->erase(ns);
}

}  // namespace sg
