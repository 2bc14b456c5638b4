#pragma once

// The store over an ordered key-value space: InMemoryStore (a std::map) and RocksDbStore (a
// RocksDB database) are this class over two backends, so they behave the same.

#include <stategraph/core/detail/kv.hpp>
#include <stategraph/store/store.hpp>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>

namespace sg {

namespace detail {

/// The key spaces of a store: items, and the vectors of indexed items.
struct Space {
  enum : std::uint8_t { items = 0, vectors = 1 };
  static constexpr std::size_t count = 2;
};

}  // namespace detail

/// A Store over a detail::KvBackend. Items are keyed by namespace then key, so a namespace
/// prefix is one range scan; each record carries a format version and a CRC (a corrupt record
/// is a StoreError naming the namespace and key). Expired items are never returned;
/// sweep_expired() deletes them (also run by a background sweeper when started). Thread-safe.
class KvStore : public Store {
 public:
  /// Loads the vectors of indexed items when `index` is given. Throws StoreError on corrupt data.
  KvStore(std::unique_ptr<detail::KvBackend> backend, TtlConfig ttl,
          std::optional<IndexConfig> index);
  ~KvStore() override;

  std::vector<StoreResult> batch(std::vector<StoreOp> ops) override;

  /// Deletes every expired item; returns how many. Thread-safe.
  std::size_t sweep_expired();
  /// Items deleted by sweeps so far (by sweep_expired() and the sweeper). Thread-safe.
  [[nodiscard]] std::size_t swept_total() const noexcept { return swept_.load(); }
  /// Runs sweep_expired() every `interval` on a background thread until stop_sweeper() or
  /// destruction. Calling it again changes the interval.
  void start_sweeper(std::chrono::milliseconds interval);
  void stop_sweeper();

 private:
  std::optional<Item> do_get(const GetOp& op);
  void do_put(const PutOp& op);
  std::vector<SearchItem> do_search(const SearchOp& op);
  std::vector<Namespace> do_list(const ListNamespacesOp& op);
  [[nodiscard]] std::int64_t now_micros() const;
  struct Vectors;
  std::vector<std::vector<float>> embed_item(const PutOp& op);
  /// Item keys ranked by similarity (best first) from the HNSW index, or nullopt when exact
  /// search should answer (a small collection). Returns `want` candidates at least, if any.
  std::optional<std::vector<std::pair<std::string, double>>> approximate(
      const std::vector<float>& query, std::size_t want);

  std::unique_ptr<detail::KvBackend> kv_;
  TtlConfig ttl_;
  std::optional<IndexConfig> index_;
  std::unique_ptr<Vectors> vectors_;
  std::mutex write_mu_;  // serializes read-modify-write (put keeps created_at; TTL refresh)
  std::mutex sweeper_mu_;
  std::condition_variable sweeper_cv_;
  std::thread sweeper_;
  bool stop_ = false;
  std::atomic<std::size_t> swept_{0};
  std::chrono::milliseconds interval_{0};
};

/// A store in memory (lost with the process). TTL works as in RocksDbStore.
class InMemoryStore final : public KvStore {
 public:
  explicit InMemoryStore(TtlConfig ttl = {}, std::optional<IndexConfig> index = std::nullopt);
};

/// Options of RocksDbStore::open.
struct RocksDbStoreOptions {
  TtlConfig ttl{};
  /// Semantic search (vectors are stored with the items and loaded at open).
  std::optional<IndexConfig> index{};
  /// fsync each write (survives power loss; slower).
  bool fsync = false;
};

/// A store in a RocksDB database directory (column families "store" and "store_vectors"). A second
/// process opening the same directory gets StoreError (code "store.locked").
class RocksDbStore final : public KvStore {
 public:
  /// Opens or creates the database at `path`. Throws StoreError ("store.locked", "store.io").
  [[nodiscard]] static std::shared_ptr<RocksDbStore> open(const std::string& path,
                                                          RocksDbStoreOptions options = {});

 private:
  RocksDbStore(std::unique_ptr<detail::KvBackend> backend, TtlConfig ttl,
               std::optional<IndexConfig> index);
};

}  // namespace sg
