// SPDX-License-Identifier: MIT
#pragma once

// A RocksDB database with named column families as a detail::KvBackend (key space i is the
// i-th family given to open()), shared by RocksDbSaver and RocksDbStore (internal: not part of
// the public API). Errors are turned into the caller's exceptions.

#include <stategraph/kv/kv.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
class Env;
}  // namespace rocksdb

namespace sg::detail {

/// What went wrong in RocksDB, for the caller's error type.
enum class RocksFailure : std::uint8_t { locked, corrupt, io };

/// Throws the caller's exception for a failure; must not return.
using RocksFail = std::function<void(RocksFailure, const std::string& message)>;

/// The RocksFail of a module: throws `Error(code, text)`, with the module's code for each kind of
/// failure and a text that names the database (`what`, e.g. "the store database").
template <class Error>
RocksFail throw_as(std::string what, std::string_view locked, std::string_view corrupt,
                   std::string_view io) {
  return [what = std::move(what), locked, corrupt, io](RocksFailure failure,
                                                       const std::string& message) {
    switch (failure) {
      case RocksFailure::locked:
        throw Error(locked, what + " " + message);
      case RocksFailure::corrupt:
        throw Error(corrupt, what + " is corrupt: " + message);
      case RocksFailure::io:
        break;
    }
    throw Error(io, what + ": " + message);
  };
}

/// Options of RocksDb::open.
struct RocksOpenOptions {
  bool fsync = false;
  bool create_if_missing = true;
  /// Writes come from one writer at a time (skip RocksDB's concurrent-writer machinery).
  bool single_writer = false;
  std::size_t write_buffer_bytes = 0;  // 0: RocksDB's default
  /// RocksDB's environment (files, threads); null: the default. Tests inject faults with it.
  rocksdb::Env* env = nullptr;
};

/// Thread-safe (RocksDB's guarantees). After a failed write (full disk, I/O error) the next write
/// opens the database again, so a database whose disk works again takes writes again.
class RocksDb final : public KvBackend {
 public:
  /// Opens (or creates) `path` with the column families `families` (plus RocksDB's default).
  /// A directory another process holds fails with RocksFailure::locked.
  static std::unique_ptr<RocksDb> open(const std::string& path,
                                       const std::vector<std::string>& families,
                                       const RocksOpenOptions& options, RocksFail fail);
  ~RocksDb() override;
  RocksDb(const RocksDb&) = delete;
  RocksDb& operator=(const RocksDb&) = delete;

  std::optional<std::string> get(std::uint8_t space, std::string_view key) override;
  void write(const std::vector<KvOp>& batch) override;
  void scan(std::uint8_t space, std::string_view lower, std::string_view upper, bool reverse,
            const std::function<bool(std::string_view, std::string_view)>& visit) override;
  /// Writes memtables to table files.
  void flush();
  /// Bytes of the write batches committed since open (keys, values and RocksDB's record
  /// framing): what the application wrote, before compaction. Thread-safe.
  [[nodiscard]] std::uint64_t bytes_written() const noexcept {
    return bytes_written_.load(std::memory_order_relaxed);
  }

 private:
  RocksDb(std::string path, std::vector<std::string> families, RocksOpenOptions options,
          RocksFail fail);
  /// Opens the database (db_ null before); throws through fail_. Caller holds mu_ exclusively.
  void open_locked();
  void close_locked() noexcept;
  /// After a failed write: closes and opens the database again. Throws through fail_.
  void recover();
  /// Throws through fail_ when the database is closed (a recovery failed).
  void require_open() const;

  const std::string path_;
  const std::vector<std::string> families_;
  const RocksOpenOptions options_;
  RocksFail fail_;
  /// Shared by every use of db_; exclusive while recover() opens the database again.
  std::shared_mutex mu_;
  rocksdb::DB* db_ = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;  // [0] is the default family
  /// A write failed: the next write opens the database again first.
  std::atomic<bool> failed_{false};
  std::atomic<std::uint64_t> bytes_written_{0};
};

}  // namespace sg::detail
