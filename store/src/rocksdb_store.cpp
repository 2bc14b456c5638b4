#include <stategraph/store/kv_store.hpp>

#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

namespace sg {
namespace {

[[noreturn]] void fail(const rocksdb::Status& status, const std::string& what) {
  throw StoreError(status.IsCorruption() ? errc::kStoreCorrupt : errc::kStoreIo,
                   fmt::format("{}: {}", what, status.ToString()));
}

rocksdb::Slice slice(std::string_view s) {
  return {s.data(), s.size()};
}

}  // namespace

class RocksDbStore::Backend final : public detail::StoreBackend {
 public:
  Backend(rocksdb::DB* db, std::vector<rocksdb::ColumnFamilyHandle*> handles, bool fsync)
      : db_(db), handles_(std::move(handles)) {
    write_options_.sync = fsync;
  }
  ~Backend() override {
    for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h);
    delete db_;
  }

  std::optional<std::string> get(detail::Space space, std::string_view key) override {
    std::string value;
    const auto status = db_->Get(rocksdb::ReadOptions(), handle(space), slice(key), &value);
    if (status.IsNotFound()) return std::nullopt;
    if (!status.ok()) fail(status, "reading the store");
    return value;
  }

  void write(const std::vector<detail::StoreWrite>& writes) override {
    rocksdb::WriteBatch batch;
    for (const auto& w : writes) {
      const auto s = w.value ? batch.Put(handle(w.space), slice(w.key), slice(*w.value))
                             : batch.Delete(handle(w.space), slice(w.key));
      if (!s.ok()) fail(s, "building a store write");
    }
    const auto status = db_->Write(write_options_, &batch);
    if (!status.ok()) fail(status, "writing to the store");
  }

  void scan(detail::Space space, std::string_view lower, std::string_view upper,
            const std::function<bool(std::string_view, std::string_view)>& visit) override {
    rocksdb::ReadOptions options;
    const rocksdb::Slice hi = slice(upper);
    if (!upper.empty()) options.iterate_upper_bound = &hi;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(options, handle(space)));
    for (it->Seek(slice(lower)); it->Valid(); it->Next()) {
      const auto k = it->key();
      const auto v = it->value();
      if (!visit(std::string_view(k.data(), k.size()), std::string_view(v.data(), v.size())))
        return;
    }
    if (!it->status().ok()) fail(it->status(), "scanning the store");
  }

 private:
  rocksdb::ColumnFamilyHandle* handle(detail::Space space) const {
    return handles_[static_cast<std::size_t>(space) + 1];  // [0] is the default family
  }

  rocksdb::DB* db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  rocksdb::WriteOptions write_options_;
};

std::shared_ptr<RocksDbStore> RocksDbStore::open(const std::string& path,
                                                 RocksDbStoreOptions options) {
  rocksdb::DBOptions db_options;
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;
  db_options.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  rocksdb::ColumnFamilyOptions cf;
  cf.compression = rocksdb::kNoCompression;
  const std::vector<rocksdb::ColumnFamilyDescriptor> families{
      {rocksdb::kDefaultColumnFamilyName, cf}, {"store", cf}, {"store_vectors", cf}};
  rocksdb::DB* db = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  const auto status = rocksdb::DB::Open(db_options, path, families, &handles, &db);
  if (!status.ok()) {
    if (status.IsIOError() && status.ToString().find("lock") != std::string::npos) {
      throw StoreError(errc::kStoreLocked,
                       fmt::format("the store database '{}' is in use by another process (or "
                                   "already open in this one): {}",
                                   path, status.ToString()));
    }
    fail(status, fmt::format("opening the store database '{}'", path));
  }
  auto backend = std::make_unique<Backend>(db, std::move(handles), options.fsync);
  return std::shared_ptr<RocksDbStore>(
      new RocksDbStore(std::move(backend), std::move(options.ttl), std::move(options.index)));
}

RocksDbStore::RocksDbStore(std::unique_ptr<detail::StoreBackend> backend, TtlConfig ttl,
                           std::optional<IndexConfig> index)
    : KvStore(std::move(backend), std::move(ttl), std::move(index)) {}

}  // namespace sg
