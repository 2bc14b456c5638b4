// SPDX-License-Identifier: MIT
#pragma once

// Node caching (LangGraph's BaseCache / InMemoryCache): nodes with a CachePolicy keep the writes
// of each input they ran on; a later task with the same key reuses them instead of running.

#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace sg {

/// Where cached node writes live, by namespace (the node's name) and key. Implementations are
/// thread-safe: tasks of one superstep use the cache concurrently.
class Cache {
 public:
  virtual ~Cache() = default;
  /// The value stored under (ns, key) if it has not expired.
  [[nodiscard]] virtual std::optional<nlohmann::json> get(const std::string& ns,
                                                          const std::string& key) = 0;
  /// Stores `value` under (ns, key) for `ttl` (forever when empty), replacing what was there.
  virtual void set(const std::string& ns, const std::string& key, nlohmann::json value,
                   std::optional<std::chrono::duration<double>> ttl) = 0;
  /// Removes every entry of these namespaces (of all namespaces when `namespaces` is empty).
  virtual void clear(const std::vector<std::string>& namespaces) = 0;
};

/// A Cache in process memory. `clock` (default: steady_clock) decides expiry; tests pass their
/// own. Thread-safe.
class InMemoryCache final : public Cache {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  explicit InMemoryCache(Clock clock = {});
  ~InMemoryCache() override;
  InMemoryCache(const InMemoryCache&) = delete;
  InMemoryCache& operator=(const InMemoryCache&) = delete;

  [[nodiscard]] std::optional<nlohmann::json> get(const std::string& ns,
                                                  const std::string& key) override;
  void set(const std::string& ns, const std::string& key, nlohmann::json value,
           std::optional<std::chrono::duration<double>> ttl) override;
  void clear(const std::vector<std::string>& namespaces) override;

 private:
  struct Entry;
  struct Entries;
  Clock clock_;
  std::mutex mu_;
  std::unique_ptr<Entries> entries_;  // guarded by mu_
};

}  // namespace sg
