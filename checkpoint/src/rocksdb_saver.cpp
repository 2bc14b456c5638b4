#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/detail/rocks_db.hpp>

#include <fmt/format.h>

#include <filesystem>

namespace sg {
namespace {

const std::vector<std::string> kColumnNames{"checkpoints", "writes", "blobs", "messages"};

[[noreturn]] void fail(detail::RocksFailure failure, const std::string& message) {
  switch (failure) {
    case detail::RocksFailure::locked:
      throw CheckpointError(errc::kCheckpointLocked, "the checkpoint database " + message);
    case detail::RocksFailure::corrupt:
      throw CheckpointError(errc::kCheckpointCorrupt,
                            "the checkpoint database is corrupt: " + message);
    case detail::RocksFailure::io:
      break;
  }
  throw CheckpointError(errc::kCheckpointIo, "the checkpoint database: " + message);
}

}  // namespace

class RocksDbSaver::Backend final : public detail::KvBackend {
 public:
  explicit Backend(std::unique_ptr<detail::RocksDb> db) : db_(std::move(db)) {}

  std::optional<std::string> get(detail::Column column, std::string_view key) override {
    return db_->get(static_cast<std::size_t>(column), key);
  }

  void write(const std::vector<detail::KvOp>& batch) override {
    std::vector<detail::RocksWrite> writes;
    writes.reserve(batch.size());
    for (const auto& op : batch) {
      detail::RocksWrite w{static_cast<std::size_t>(op.column), op.key, std::nullopt, std::nullopt};
      if (op.kind == detail::KvOp::Kind::put) w.value = op.value;
      if (op.kind == detail::KvOp::Kind::erase_range) w.end = op.value;
      writes.push_back(w);
    }
    db_->write(writes);
  }

  void scan(detail::Column column, std::string_view lower, std::string_view upper, bool reverse,
            const std::function<bool(std::string_view, std::string_view)>& visit) override {
    db_->scan(static_cast<std::size_t>(column), lower, upper, reverse, visit);
  }

  void flush() { db_->flush(); }

 private:
  std::unique_ptr<detail::RocksDb> db_;
};

std::shared_ptr<RocksDbSaver> RocksDbSaver::open(const std::string& path, RocksDbOptions options) {
  // Writes are serialized by KvCheckpointer: single_writer skips RocksDB's concurrent machinery.
  auto db = detail::RocksDb::open(path, kColumnNames,
                                  {.fsync = options.fsync,
                                   .create_if_missing = options.create_if_missing,
                                   .single_writer = true,
                                   .write_buffer_bytes = std::size_t{16} << 20},
                                  fail);
  return std::shared_ptr<RocksDbSaver>(
      new RocksDbSaver(std::make_unique<Backend>(std::move(db)), path));
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
