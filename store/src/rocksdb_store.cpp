#include <stategraph/kv/rocks_db.hpp>
#include <stategraph/store/rocksdb_store.hpp>

#include <fmt/format.h>

#include "kv_store_impl.hpp"

namespace sg {
namespace {

[[noreturn]] void fail(detail::RocksFailure failure, const std::string& message) {
  switch (failure) {
    case detail::RocksFailure::locked:
      throw StoreError(errc::kStoreLocked, "the store database " + message);
    case detail::RocksFailure::corrupt:
      throw StoreError(errc::kStoreCorrupt, "the store database is corrupt: " + message);
    case detail::RocksFailure::io:
      break;
  }
  throw StoreError(errc::kStoreIo, "the store database: " + message);
}

}  // namespace

std::shared_ptr<RocksDbStore> RocksDbStore::open(const std::string& path,
                                                 RocksDbStoreOptions options) {
  auto db = detail::RocksDb::open(path, {"store", "store_vectors"},
                                  {.fsync = options.fsync, .create_if_missing = true}, fail);
  return std::shared_ptr<RocksDbStore>(new RocksDbStore(
      std::make_unique<Impl>(std::move(db), std::move(options.ttl), std::move(options.index))));
}

RocksDbStore::RocksDbStore(std::unique_ptr<Impl> impl) : KvStore(std::move(impl)) {}

}  // namespace sg
