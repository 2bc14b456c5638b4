#pragma once

// The store over an ordered key-value space: InMemoryStore (a std::map) and RocksDbStore (a
// RocksDB database) are this class over two backends, so they behave the same.

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

/// An ordered key-value space with atomic batches. Thread-safe.
class StoreBackend {
 public:
  virtual ~StoreBackend() = default;
  [[nodiscard]] virtual std::optional<std::string> get(std::string_view key) = 0;
  /// Puts (value) and erases (nullopt), all or none.
  virtual void write(
      const std::vector<std::pair<std::string, std::optional<std::string>>>& ops) = 0;
  /// Keys in [lower, upper) ascending (upper empty: no bound); stops when `visit` returns false.
  virtual void scan(std::string_view lower, std::string_view upper,
                    const std::function<bool(std::string_view, std::string_view)>& visit) = 0;
};

}  // namespace detail

/// A Store over a detail::StoreBackend. Items are keyed by namespace then key, so a namespace
/// prefix is one range scan; each record carries a format version and a CRC (a corrupt record
/// is a StoreError naming the namespace and key). Expired items are never returned;
/// sweep_expired() deletes them (also run by a background sweeper when started). Thread-safe.
class KvStore : public Store {
 public:
  KvStore(std::unique_ptr<detail::StoreBackend> backend, TtlConfig ttl);
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

  std::unique_ptr<detail::StoreBackend> kv_;
  TtlConfig ttl_;
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
  explicit InMemoryStore(TtlConfig ttl = {});
};

/// Options of RocksDbStore::open.
struct RocksDbStoreOptions {
  TtlConfig ttl{};
  /// fsync each write (survives power loss; slower).
  bool fsync = false;
};

/// A store in a RocksDB database directory (column family "store"). A second process opening
/// the same directory gets StoreError (code "store.locked").
class RocksDbStore final : public KvStore {
 public:
  /// Opens or creates the database at `path`. Throws StoreError ("store.locked", "store.io").
  [[nodiscard]] static std::shared_ptr<RocksDbStore> open(const std::string& path,
                                                          RocksDbStoreOptions options = {});

 private:
  class Backend;
  RocksDbStore(std::unique_ptr<detail::StoreBackend> backend, TtlConfig ttl);
};

}  // namespace sg
