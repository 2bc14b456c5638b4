// SPDX-License-Identifier: MIT
#pragma once

#include <stategraph/checkpoint/kv_checkpointer.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace rocksdb {
class Env;
}  // namespace rocksdb

namespace sg {

/// Options of RocksDbSaver::open.
struct RocksDbOptions {
  /// fsync each write (survives power loss; slower). Without it a write survives a crash of the
  /// process once it returns (it is in the OS), not a crash of the machine.
  bool fsync = false;
  bool create_if_missing = true;
  /// RocksDB's environment (files, threads), which must outlive the saver; null: the default.
  /// Tests inject write failures with one.
  rocksdb::Env* env = nullptr;
};

/// A checkpointer in a RocksDB database (column families checkpoints, writes, blobs, messages).
/// Each put, put_writes, delete_thread, copy_thread and prune is one atomic write batch.
/// Message lists are stored as a log plus ranges, so bytes written per superstep do not grow
/// with the conversation. Safe for many threads of one process; a second process (or a second
/// open in this one) gets a CheckpointError (code "checkpoint.locked"). Graphs use durability
/// sync with it by default. A failed write (full disk, I/O error) throws CheckpointError
/// ("checkpoint.io") and changes nothing; the next write tries again, so the thread goes on once
/// the disk works.
class RocksDbSaver final : public KvCheckpointer {
 public:
  /// Opens (or creates) the database at `path`. Throws CheckpointError (codes
  /// "checkpoint.locked" when another process holds it, "checkpoint.io" otherwise).
  [[nodiscard]] static std::shared_ptr<RocksDbSaver> open(const std::string& path,
                                                          RocksDbOptions options = {});

  /// Closes the database (no other thread may still be using the saver).
  ~RocksDbSaver() override;

  /// Durability::sync (see the class comment). noexcept.
  [[nodiscard]] Durability default_durability() const noexcept override { return Durability::sync; }
  /// The database directory. noexcept; thread-safe.
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// Writes memtables to table files (after this, everything is in SST files). Throws
  /// CheckpointError ("checkpoint.io"). Thread-safe.
  void flush();
  /// Bytes of the database directory on disk (files it cannot stat count 0). Thread-safe.
  [[nodiscard]] std::uint64_t disk_bytes() const;
  /// Bytes of the write batches this saver committed since it was opened (what it wrote, before
  /// RocksDB's compaction): the measure of storage growth per superstep. Thread-safe.
  [[nodiscard]] std::uint64_t bytes_written() const noexcept;

 private:
  RocksDbSaver(std::unique_ptr<Impl> impl, std::string path);
  std::string path_;
};

}  // namespace sg
