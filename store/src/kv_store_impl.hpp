// SPDX-License-Identifier: MIT
// KvStore's implementation (internal to the store module): the backend, the vectors of indexed
// items, the TTL sweeper. kv_store.cpp holds reads, writes and sweeping; kv_store_search.cpp
// search and list_namespaces. The format: kv_store_format.hpp.
#pragma once

#include <stategraph/kv/kv.hpp>
#include <stategraph/store/kv_store.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kv_store_format.hpp"

namespace hnswlib {
template <typename T>
class HierarchicalNSW;
class InnerProductSpace;
}  // namespace hnswlib

namespace sg {

/// Thread-safe like KvStore: writers that read first hold write_mu_, the vectors have their own
/// lock.
struct KvStore::Impl {
 public:
  /// What operation_counts() reports: get, put, delete, search, list_namespaces.
  std::array<std::atomic<std::uint64_t>, 5> op_counts{};

  /// Loads the vectors of indexed items when `index` is given. Throws Error
  /// ("argument.invalid") for a bad IndexConfig, StoreError on corrupt data.
  Impl(std::unique_ptr<detail::KvBackend> backend, TtlConfig ttl, std::optional<IndexConfig> index);
  /// Stops the sweeper.
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // KvStore's operations (KvStore forwards each call).
  std::vector<StoreResult> batch(std::vector<StoreOp> ops);
  std::size_t sweep_expired();
  void start_sweeper(std::chrono::milliseconds interval);
  void stop_sweeper();
  [[nodiscard]] std::size_t swept_total() const noexcept { return swept_.load(); }
  /// KvStore::wait_for_index.
  void wait_for_index();
  [[nodiscard]] bool has_index() const noexcept { return index_.has_value(); }

 private:
  std::optional<Item> do_get(const GetOp& op);
  void do_put(const PutOp& op);
  std::vector<SearchItem> do_search(const SearchOp& op);
  std::vector<Namespace> do_list(const ListNamespacesOp& op);
  [[nodiscard]] std::int64_t now_micros() const;
  struct Hnsw;
  struct Vectors;
  std::vector<std::vector<float>> embed_item(const PutOp& op);
  /// Item keys ranked by similarity (best first) from the HNSW index, or nullopt when exact
  /// search should answer (a small collection). Returns `want` candidates at least, if any.
  std::optional<std::vector<std::pair<std::string, double>>> approximate(
      const std::vector<float>& query, std::size_t want);
  /// (Re)loads every stored vector into memory; on a shared backend, first notes the vectors'
  /// generation. Caller holds vectors_->mu exclusively (or is the constructor).
  void load_vectors();
  /// A shared backend: reloads the vectors when another process changed them. Thread-safe.
  void refresh_vectors();
  /// Writes `batch`, which changes the vectors, then `apply` updates the vectors in memory. On a
  /// shared backend the write replaces the vectors' generation; when another process changed
  /// them since this one loaded them, the next search loads them all instead. Caller holds
  /// write_mu_.
  void write_vectors(std::vector<detail::KvOp> batch, const std::function<void(Vectors&)>& apply);

  std::unique_ptr<detail::KvBackend> kv_;
  TtlConfig ttl_;
  std::optional<IndexConfig> index_;
  std::unique_ptr<Vectors> vectors_;
  std::string generation_;  // shared backends: the vectors' generation loaded (vectors_->mu)
  std::mutex write_mu_;     // serializes read-modify-write (put keeps created_at; TTL refresh)
  std::mutex sweeper_mu_;
  std::condition_variable sweeper_cv_;
  std::thread sweeper_;
  bool stop_ = false;
  std::atomic<std::size_t> swept_{0};
  std::chrono::milliseconds interval_{0};
};

/// An HNSW index over vectors of item keys (hnswlib), with the labels of each key.
struct KvStore::Impl::Hnsw {
  Hnsw(std::size_t dims, std::size_t capacity);
  ~Hnsw();
  Hnsw(const Hnsw&) = delete;
  Hnsw& operator=(const Hnsw&) = delete;

  std::unique_ptr<hnswlib::InnerProductSpace> space;
  std::unique_ptr<hnswlib::HierarchicalNSW<float>> hnsw;
  std::vector<std::string> label_key;                                // label -> item key
  std::unordered_map<std::string, std::vector<std::size_t>> labels;  // item key -> labels
  std::size_t live_labels = 0;

  void add(const std::string& key, const std::vector<std::vector<float>>& vectors);
  void remove(const std::string& key);
};

/// The vectors of indexed items, in memory, and an HNSW index once there are many. The index is
/// built on a thread of its own (searches are exact meanwhile), from chunks of the vectors read
/// under a shared lock, so writes go on; keys written during the build are applied again before
/// it is put in. Its functions are in kv_store_search.cpp, the one file that includes hnswlib
/// (whose headers define non-inline globals).
struct KvStore::Impl::Vectors {
  Vectors();
  /// Stops and joins a build in progress.
  ~Vectors();
  Vectors(const Vectors&) = delete;
  Vectors& operator=(const Vectors&) = delete;

  std::shared_mutex mu;
  std::unordered_map<std::string, std::vector<std::vector<float>>> by_key;  // item key -> vectors
  std::size_t count = 0;                                                    // vectors in by_key
  std::unique_ptr<Hnsw> index;  // when count exceeds IndexConfig::exact_limit, once built
  // The build in the background (guarded by `mu`, the thread handle by `builder_mu`).
  bool building = false;
  std::uint64_t epoch = 0;            // clear() moves it on: a build of an older one is dropped
  std::vector<std::string> touched;   // keys set() changed while building
  std::atomic<bool> stopping{false};  // the destructor stops a build
  std::mutex builder_mu;
  std::thread builder;

  /// Replaces the vectors of `key` (none: removes). Caller holds `mu` exclusively.
  void set(const std::string& key, std::vector<std::vector<float>> vectors);
  /// Marks a build of the index as started unless it is built or being built; true when the
  /// caller must then spawn() it, after releasing `mu` (never held with `builder_mu`). Caller
  /// holds `mu` exclusively.
  [[nodiscard]] bool start_build();
  /// Starts the build start_build() marked, on a thread of its own. Caller must not hold `mu`.
  void spawn(std::size_t dims);
  /// Waits until no build is in progress. Caller must not hold `mu`.
  void wait_for_build();
  /// Starts a build when the index is missing (start_build, then spawn). Caller must not hold
  /// `mu`.
  void build_in_background(std::size_t dims);
  /// Forgets every vector and the index (a build in progress is dropped when it ends). Caller
  /// holds `mu` exclusively.
  void clear();

 private:
  void build(std::size_t dims, std::uint64_t build_epoch);
};

}  // namespace sg
