// SPDX-License-Identifier: MIT
#include <stategraph/kv/rocks_db.hpp>

#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>
#include <rocksdb/write_batch.h>

namespace sg::detail {
namespace {

rocksdb::Slice slice(std::string_view s) {
  return s.empty() ? rocksdb::Slice("", 0) : rocksdb::Slice(s.data(), s.size());
}

}  // namespace

std::unique_ptr<RocksDb> RocksDb::open(const std::string& path,
                                       const std::vector<std::string>& families,
                                       const RocksOpenOptions& options, RocksFail fail) {
  std::unique_ptr<RocksDb> db(new RocksDb(path, families, options, std::move(fail)));
  db->open_locked();
  return db;
}

RocksDb::RocksDb(std::string path, std::vector<std::string> families, RocksOpenOptions options,
                 RocksFail fail)
    : path_(std::move(path)),
      families_(std::move(families)),
      options_(options),
      fail_(std::move(fail)) {}

void RocksDb::open_locked() {
  const RocksOpenOptions& options = options_;
  const std::string& path = path_;
  rocksdb::DBOptions db_options;
  db_options.create_if_missing = options.create_if_missing;
  db_options.create_missing_column_families = true;
  db_options.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  db_options.max_background_jobs = 2;
  if (options.env != nullptr) db_options.env = options.env;
  if (options.single_writer) {
    db_options.allow_concurrent_memtable_write = false;
    db_options.enable_write_thread_adaptive_yield = false;
  }
  rocksdb::ColumnFamilyOptions cf;
  cf.compression = rocksdb::kNoCompression;
  if (options.write_buffer_bytes) cf.write_buffer_size = options.write_buffer_bytes;
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors{{rocksdb::kDefaultColumnFamilyName, cf}};
  for (const auto& name : families_) descriptors.emplace_back(name, cf);
  rocksdb::DB* db = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  const auto status = rocksdb::DB::Open(db_options, path, descriptors, &handles, &db);
  if (!status.ok()) {
    const bool locked = status.IsIOError() && status.ToString().find("lock") != std::string::npos;
    fail_(locked ? RocksFailure::locked
                 : (status.IsCorruption() ? RocksFailure::corrupt : RocksFailure::io),
          locked
              ? fmt::format("'{}' is in use by another process (or already open in this one): {}",
                            path, status.ToString())
              : fmt::format("opening '{}': {}", path, status.ToString()));
  }
  db_ = db;
  handles_ = std::move(handles);
}

void RocksDb::close_locked() noexcept {
  if (db_ == nullptr) return;
  for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h);
  handles_.clear();
  delete db_;
  db_ = nullptr;
}

RocksDb::~RocksDb() {
  close_locked();
}

void RocksDb::require_open() const {
  if (db_ == nullptr) {
    fail_(RocksFailure::io, fmt::format("'{}' is closed after a failed write and could not be "
                                        "opened again (the next write tries again)",
                                        path_));
  }
}

void RocksDb::recover() {
  // RocksDB refuses writes after a failed one until it recovers, and its Resume() cannot be
  // trusted with a broken write-ahead log (7.8 appends to the failed log again). Opening the
  // database again starts a fresh log and replays what was written before the failure.
  std::unique_lock lock(mu_);
  if (!failed_.load()) return;
  close_locked();
  open_locked();  // throws (leaving it closed) while the disk still fails
  failed_ = false;
}

std::optional<std::string> RocksDb::get(std::uint8_t space, std::string_view key) {
  std::shared_lock lock(mu_);
  require_open();
  std::string value;
  const auto status = db_->Get(rocksdb::ReadOptions(), handles_.at(space + 1u), slice(key), &value);
  if (status.IsNotFound()) return std::nullopt;
  if (!status.ok()) {
    fail_(status.IsCorruption() ? RocksFailure::corrupt : RocksFailure::io,
          "reading: " + status.ToString());
  }
  return value;
}

void RocksDb::write(const std::vector<KvOp>& ops) {
  if (failed_.load(std::memory_order_relaxed)) recover();
  std::shared_lock lock(mu_);
  require_open();
  std::size_t bytes = 64;
  for (const auto& op : ops) bytes += op.key.size() + op.value.size() + 16;
  rocksdb::WriteBatch batch(bytes);  // one allocation for the whole batch
  for (const auto& op : ops) {
    auto* cf = handles_.at(op.space + 1u);
    rocksdb::Status s;
    switch (op.kind) {
      case KvOp::Kind::put:
        s = batch.Put(cf, slice(op.key), slice(op.value));
        break;
      case KvOp::Kind::erase:
        s = batch.Delete(cf, slice(op.key));
        break;
      case KvOp::Kind::erase_range:
        s = batch.DeleteRange(cf, slice(op.key), slice(op.value));
        break;
      case KvOp::Kind::expect:  // one process owns a RocksDB: nothing to expect
        throw std::logic_error("RocksDb::write: 'expect' is for shared backends");
    }
    if (!s.ok()) fail_(RocksFailure::io, "building a write batch: " + s.ToString());
  }
  rocksdb::WriteOptions options;
  options.sync = options_.fsync;
  const auto status = db_->Write(options, &batch);
  if (!status.ok()) {
    failed_ = true;
    failed_ = true;
    fail_(status.IsCorruption() ? RocksFailure::corrupt : RocksFailure::io,
          "writing: " + status.ToString());
  }
  bytes_written_.fetch_add(batch.GetDataSize(), std::memory_order_relaxed);
}

void RocksDb::scan(std::uint8_t space, std::string_view lower, std::string_view upper, bool reverse,
                   const std::function<bool(std::string_view, std::string_view)>& visit) {
  std::shared_lock lock(mu_);
  require_open();
  rocksdb::ReadOptions options;
  const rocksdb::Slice lo = slice(lower);
  const rocksdb::Slice hi = slice(upper);
  if (!lower.empty()) options.iterate_lower_bound = &lo;
  if (!upper.empty()) options.iterate_upper_bound = &hi;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(options, handles_.at(space + 1u)));
  if (!reverse) {
    if (lower.empty()) {
      it->SeekToFirst();
    } else {
      it->Seek(lo);
    }
  } else if (upper.empty()) {
    it->SeekToLast();
  } else {
    it->SeekForPrev(hi);
    if (it->Valid() && it->key() == hi) it->Prev();
  }
  for (; it->Valid(); reverse ? it->Prev() : it->Next()) {
    const auto k = it->key();
    const auto v = it->value();
    if (!visit(std::string_view(k.data(), k.size()), std::string_view(v.data(), v.size()))) return;
  }
  if (!it->status().ok()) {
    fail_(it->status().IsCorruption() ? RocksFailure::corrupt : RocksFailure::io,
          "scanning: " + it->status().ToString());
  }
}

void RocksDb::flush() {
  std::shared_lock lock(mu_);
  require_open();
  rocksdb::FlushOptions options;
  options.wait = true;
  const auto status = db_->Flush(options, handles_);
  if (!status.ok()) fail_(RocksFailure::io, "flushing: " + status.ToString());
}

}  // namespace sg::detail
