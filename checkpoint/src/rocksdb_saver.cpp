// SPDX-License-Identifier: MIT
#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/kv/rocks_db.hpp>

#include <fmt/format.h>

#include <filesystem>

#include "kv_saver_impl.hpp"

namespace sg {
namespace {

const std::vector<std::string> kColumnNames{"checkpoints", "writes", "blobs", "messages"};

}  // namespace

std::shared_ptr<RocksDbSaver> RocksDbSaver::open(const std::string& path, RocksDbOptions options) {
  // Writes are serialized by KvCheckpointer: single_writer skips RocksDB's concurrent machinery.
  auto db = detail::RocksDb::open(
      path, kColumnNames,
      {.fsync = options.fsync,
       .create_if_missing = options.create_if_missing,
       .single_writer = true,
       .write_buffer_bytes = std::size_t{16} << 20,
       .env = options.env},
      detail::throw_as<CheckpointError>("the checkpoint database", errc::kCheckpointLocked,
                                        errc::kCheckpointCorrupt, errc::kCheckpointIo));
  return std::shared_ptr<RocksDbSaver>(
      new RocksDbSaver(std::make_unique<Impl>(std::move(db)), path));
}

RocksDbSaver::RocksDbSaver(std::unique_ptr<Impl> impl, std::string path)
    : KvCheckpointer(std::move(impl)), path_(std::move(path)) {}

RocksDbSaver::~RocksDbSaver() = default;

void RocksDbSaver::flush() {
  static_cast<detail::RocksDb&>(impl_->kv()).flush();
}

std::uint64_t RocksDbSaver::bytes_written() const noexcept {
  return static_cast<const detail::RocksDb&>(impl_->kv()).bytes_written();
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
