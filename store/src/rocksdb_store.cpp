// SPDX-License-Identifier: MIT
#include <stategraph/kv/rocks_db.hpp>
#include <stategraph/store/rocksdb_store.hpp>

#include <fmt/format.h>

#include "kv_store_impl.hpp"

namespace sg {
namespace {}  // namespace

std::shared_ptr<RocksDbStore> RocksDbStore::open(const std::string& path,
                                                 RocksDbStoreOptions options) {
  auto db = detail::RocksDb::open(
      path, {"store", "store_vectors"}, {.fsync = options.fsync, .create_if_missing = true},
      detail::throw_as<StoreError>("the store database", errc::kStoreLocked, errc::kStoreCorrupt,
                                   errc::kStoreIo));
  return std::shared_ptr<RocksDbStore>(new RocksDbStore(
      std::make_unique<Impl>(std::move(db), std::move(options.ttl), std::move(options.index))));
}

RocksDbStore::RocksDbStore(std::unique_ptr<Impl> impl) : KvStore(std::move(impl)) {}

}  // namespace sg
