// SPDX-License-Identifier: MIT
#pragma once

// The store over an ordered key-value space: InMemoryStore (memory_store.hpp) and RocksDbStore
// (rocksdb_store.hpp) are this class over two backends, so they behave the same.

#include <stategraph/store/store.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

namespace sg {

namespace detail {
class KvBackend;  // the ordered key-value backend (kv module, internal)
}  // namespace detail

class InMemoryStore;
class RocksDbStore;

/// The store behind InMemoryStore and RocksDbStore (construct one of those). Items are keyed by
/// namespace then key, so a namespace prefix is one range scan; each record carries a format
/// version and a CRC (a corrupt record is a StoreError naming the namespace and key). Expired
/// items are never returned; sweep_expired() deletes them (also run by a background sweeper when
/// started). Every method may be called from many threads at once.
class KvStore : public Store {
 public:
  /// Stops the sweeper (no other thread may still be using the store).
  ~KvStore() override;
  KvStore(const KvStore&) = delete;
  KvStore& operator=(const KvStore&) = delete;

  /// Store::batch: the operations in order. Throws InvalidNamespaceError, Error
  /// ("argument.invalid", "store.invalid_filter") for bad arguments, StoreError on I/O or
  /// corrupt data; operations before the failing one have happened.
  std::vector<StoreResult> batch(std::vector<StoreOp> ops) override;
  /// True when opened with an IndexConfig.
  [[nodiscard]] bool semantic_search() const noexcept override;

  /// The operations batch() was given since the store opened, by kind (a PutOp without a value
  /// is a delete). Thread-safe.
  struct OperationCounts {
    std::uint64_t get = 0;
    std::uint64_t put = 0;
    std::uint64_t del = 0;
    std::uint64_t search = 0;
    std::uint64_t list_namespaces = 0;
  };
  [[nodiscard]] OperationCounts operation_counts() const noexcept;

  /// Deletes every expired item; returns how many. Throws StoreError. Thread-safe.
  std::size_t sweep_expired();
  /// Items deleted by sweeps so far (by sweep_expired() and the sweeper). Thread-safe.
  [[nodiscard]] std::size_t swept_total() const noexcept;
  /// Runs sweep_expired() every `interval` on a background thread until stop_sweeper() or
  /// destruction (a failed sweep is retried at the next interval). Calling it again changes the
  /// interval. Throws std::system_error if the thread cannot start. Thread-safe.
  void start_sweeper(std::chrono::milliseconds interval);
  /// Stops the sweeper and waits for it; nothing happens when none runs. Thread-safe.
  void stop_sweeper();
  /// Waits until the semantic index being built in the background (above
  /// IndexConfig::exact_limit vectors, at opening or at the first search; searches are exact
  /// meanwhile) is in place; returns at once when none is being built. Thread-safe.
  void wait_for_index();

 private:
  friend class InMemoryStore;
  friend class RocksDbStore;

 protected:
  /// A store over `kv`, for stores on other backends (PostgresStore).
  KvStore(std::unique_ptr<detail::KvBackend> kv, TtlConfig ttl, std::optional<IndexConfig> index);

 private:
  /// The state and the storage code (store/src/kv_store_impl.hpp).
  struct Impl;
  explicit KvStore(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace sg
