// SPDX-License-Identifier: MIT
#pragma once

#include <stategraph/store/kv_store.hpp>

#include <memory>
#include <optional>
#include <string>

namespace sg {

/// Options of RocksDbStore::open.
struct RocksDbStoreOptions {
  TtlConfig ttl{};
  /// Semantic search (vectors are stored with the items and loaded at open).
  std::optional<IndexConfig> index{};
  /// fsync each write (survives power loss; slower).
  bool fsync = false;
};

/// A store in a RocksDB database directory (column families "store" and "store_vectors"). Safe
/// for many threads of one process; a second process opening the same directory gets StoreError
/// (code "store.locked").
class RocksDbStore final : public KvStore {
 public:
  /// Opens or creates the database at `path`. Throws StoreError ("store.locked", "store.io",
  /// "store.corrupt"), or Error ("argument.invalid") for a bad IndexConfig (as InMemoryStore).
  [[nodiscard]] static std::shared_ptr<RocksDbStore> open(const std::string& path,
                                                          RocksDbStoreOptions options = {});

 private:
  explicit RocksDbStore(std::unique_ptr<Impl> impl);
};

}  // namespace sg
