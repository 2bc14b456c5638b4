// SPDX-License-Identifier: MIT
#pragma once

// The ordered key-value store under the checkpoint savers and the long-term memory stores
// (internal): numbered key spaces (RocksDB column families), atomic batches, range scans.
// MemoryKv keeps it in memory; detail::RocksDb (rocks_db.hpp) keeps it in RocksDB.

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sg::detail {

/// One operation of an atomic batch on key space `space`. `expect` applies the batch only if
/// `key` holds `value` when it commits (an empty value: the key is absent), and keeps others from
/// changing the key until then; only shared backends (KvBackend::shared) take it.
struct KvOp {
  enum class Kind : std::uint8_t { put, erase, erase_range, expect };
  Kind kind = Kind::put;
  std::uint8_t space = 0;
  std::string key;
  std::string value;  // the value for put; the exclusive end key for erase_range
};

/// Thrown by KvBackend::write when an `expect` operation failed: another writer changed the key
/// (nothing of the batch was applied).
class KvConflict : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An ordered key-value store with numbered key spaces and atomic batches. Errors are the
/// owner's exceptions (CheckpointError, StoreError), and KvConflict. Thread-safe.
class KvBackend {
 public:
  virtual ~KvBackend() = default;
  /// Whether other processes write the same data at once (Postgres): then what a process caches
  /// of it must be checked with `expect` operations.
  [[nodiscard]] virtual bool shared() const noexcept { return false; }
  /// The value of `key`, or nullopt.
  [[nodiscard]] virtual std::optional<std::string> get(std::uint8_t space,
                                                       std::string_view key) = 0;
  /// Applies every operation or none.
  virtual void write(const std::vector<KvOp>& batch) = 0;
  /// Visits keys in [lower, upper) (upper empty: no bound) ascending, or descending; stops when
  /// `visit` returns false. `visit` may call back into the store, also to write.
  virtual void scan(
      std::uint8_t space, std::string_view lower, std::string_view upper, bool reverse,
      const std::function<bool(std::string_view key, std::string_view value)>& visit) = 0;
};

/// The smallest key above every key that starts with `prefix` (empty: no bound), the upper
/// bound of a prefix scan.
inline std::string prefix_end(std::string prefix) {
  while (!prefix.empty() && static_cast<unsigned char>(prefix.back()) == 0xFF) prefix.pop_back();
  if (!prefix.empty())
    prefix.back() = static_cast<char>(static_cast<unsigned char>(prefix.back()) + 1);
  return prefix;
}

/// Ordered maps behind a reader-writer lock, one per key space. Thread-safe; never throws
/// except std::bad_alloc.
class MemoryKv final : public KvBackend {
 public:
  explicit MemoryKv(std::size_t spaces) : maps_(spaces) {}

  std::optional<std::string> get(std::uint8_t space, std::string_view key) override;
  void write(const std::vector<KvOp>& batch) override;
  void scan(std::uint8_t space, std::string_view lower, std::string_view upper, bool reverse,
            const std::function<bool(std::string_view, std::string_view)>& visit) override;

  /// Bytes of keys and values held.
  [[nodiscard]] std::size_t bytes() const;

 private:
  mutable std::shared_mutex mu_;
  std::vector<std::map<std::string, std::string, std::less<>>> maps_;
  std::size_t bytes_ = 0;
};

}  // namespace sg::detail
