#include <stategraph/checkpoint/rocksdb_saver.hpp>

#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <array>
#include <filesystem>

namespace sg {
namespace {

constexpr std::array<const char*, detail::kColumnCount> kColumnNames{"checkpoints", "writes",
                                                                     "blobs", "messages"};

[[noreturn]] void fail(const rocksdb::Status& status, const std::string& what) {
  if (status.IsCorruption()) {
    throw CheckpointError(errc::kCheckpointCorrupt,
                          fmt::format("{}: the database is corrupt: {}", what, status.ToString()));
  }
  throw CheckpointError(errc::kCheckpointIo, fmt::format("{}: {}", what, status.ToString()));
}

rocksdb::Slice slice(std::string_view s) {
  return {s.data(), s.size()};
}

}  // namespace

class RocksDbSaver::Backend final : public detail::KvBackend {
 public:
  Backend(rocksdb::DB* db, std::vector<rocksdb::ColumnFamilyHandle*> handles, bool fsync)
      : db_(db), handles_(std::move(handles)) {
    write_options_.sync = fsync;
  }
  ~Backend() override {
    for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h);
    delete db_;
  }

  std::optional<std::string> get(detail::Column column, std::string_view key) override {
    std::string value;
    const auto status = db_->Get(rocksdb::ReadOptions(), handle(column), slice(key), &value);
    if (status.IsNotFound()) return std::nullopt;
    if (!status.ok()) fail(status, "reading the checkpoint database");
    return value;
  }

  void write(const std::vector<detail::KvOp>& batch) override {
    std::size_t bytes = 64;
    for (const auto& op : batch) bytes += op.key.size() + op.value.size() + 16;
    rocksdb::WriteBatch wb(bytes);  // one allocation for the whole batch
    for (const auto& op : batch) {
      rocksdb::Status s;
      switch (op.kind) {
        case detail::KvOp::Kind::put:
          s = wb.Put(handle(op.column), slice(op.key), slice(op.value));
          break;
        case detail::KvOp::Kind::erase:
          s = wb.Delete(handle(op.column), slice(op.key));
          break;
        case detail::KvOp::Kind::erase_range:
          s = wb.DeleteRange(handle(op.column), slice(op.key), slice(op.value));
          break;
      }
      if (!s.ok()) fail(s, "building a write batch");
    }
    const auto status = db_->Write(write_options_, &wb);
    if (!status.ok()) fail(status, "writing to the checkpoint database");
  }

  void scan(detail::Column column, std::string_view lower, std::string_view upper, bool reverse,
            const std::function<bool(std::string_view, std::string_view)>& visit) override {
    rocksdb::ReadOptions options;
    const rocksdb::Slice lo = slice(lower);
    const rocksdb::Slice hi = slice(upper);
    options.iterate_lower_bound = &lo;
    if (!upper.empty()) options.iterate_upper_bound = &hi;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(options, handle(column)));
    if (!reverse) {
      it->Seek(lo);
    } else if (upper.empty()) {
      it->SeekToLast();
    } else {
      it->SeekForPrev(hi);
      if (it->Valid() && it->key() == hi) it->Prev();
    }
    for (; it->Valid(); reverse ? it->Prev() : it->Next()) {
      const auto k = it->key();
      const auto v = it->value();
      if (!visit(std::string_view(k.data(), k.size()), std::string_view(v.data(), v.size())))
        return;
    }
    if (!it->status().ok()) fail(it->status(), "scanning the checkpoint database");
  }

  void flush() {
    rocksdb::FlushOptions options;
    options.wait = true;
    const auto status = db_->Flush(options, handles_);
    if (!status.ok()) fail(status, "flushing the checkpoint database");
  }

 private:
  rocksdb::ColumnFamilyHandle* handle(detail::Column column) const {
    return handles_[static_cast<std::size_t>(column) + 1];  // [0] is the default family
  }

  rocksdb::DB* db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  rocksdb::WriteOptions write_options_;
};

std::shared_ptr<RocksDbSaver> RocksDbSaver::open(const std::string& path, RocksDbOptions options) {
  rocksdb::DBOptions db_options;
  db_options.create_if_missing = options.create_if_missing;
  db_options.create_missing_column_families = true;
  db_options.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  db_options.max_background_jobs = 2;
  // Writes are serialized by KvCheckpointer: skip RocksDB's concurrent-writer machinery.
  db_options.allow_concurrent_memtable_write = false;
  db_options.enable_write_thread_adaptive_yield = false;
  rocksdb::ColumnFamilyOptions cf;
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = nullptr;
  cf.compression = rocksdb::kNoCompression;
  cf.write_buffer_size = 16 << 20;
  std::vector<rocksdb::ColumnFamilyDescriptor> families{{rocksdb::kDefaultColumnFamilyName, cf}};
  for (const char* name : kColumnNames) families.emplace_back(name, cf);
  rocksdb::DB* db = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  const auto status = rocksdb::DB::Open(db_options, path, families, &handles, &db);
  if (!status.ok()) {
    if (status.IsIOError() && status.ToString().find("lock") != std::string::npos) {
      throw CheckpointError(
          errc::kCheckpointLocked,
          fmt::format("the checkpoint database '{}' is in use by another process (or already open "
                      "in this one): {}",
                      path, status.ToString()));
    }
    fail(status, fmt::format("opening the checkpoint database '{}'", path));
  }
  auto backend = std::make_unique<Backend>(db, std::move(handles), options.fsync);
  return std::shared_ptr<RocksDbSaver>(new RocksDbSaver(std::move(backend), path));
}

RocksDbSaver::RocksDbSaver(std::unique_ptr<Backend> backend, std::string path)
    : KvCheckpointer(std::move(backend)), path_(std::move(path)) {
  backend_ = static_cast<Backend*>(&kv());
}

RocksDbSaver::~RocksDbSaver() = default;

void RocksDbSaver::flush() {
  backend_->flush();
}

std::uint64_t RocksDbSaver::disk_bytes() const {
  std::uint64_t total = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(path_, ec)) {
    if (entry.is_regular_file(ec)) total += entry.file_size(ec);
  }
  return total;
}

}  // namespace sg
