#pragma once

#include <stategraph/checkpoint/kv_checkpointer.hpp>
#include <stategraph/postgres/pg.hpp>

#include <cstddef>
#include <memory>
#include <string>

namespace sg {

/// Options of PostgresSaver::open and PostgresStore::open.
struct PostgresOptions {
  /// Connections in the pool (each call takes one for its round trips).
  std::size_t pool_size = 4;
  /// The table that holds the data (made when missing). Two savers with different tables share a
  /// database without seeing each other.
  std::string table;
};

/// A checkpointer in PostgreSQL, with the layout of RocksDbSaver (KvCheckpointer: a message
/// log plus ranges, so the bytes written per superstep do not grow with the conversation) in one
/// table of (space, key, value) rows. Each put, put_writes, delete_thread, copy_thread and
/// prune is one transaction sent in one round trip (libpq pipeline mode). One saver per table
/// at a time, as with RocksDB: it keeps per-thread caches in memory, so it holds a Postgres
/// session lock on its table while open (sharing a table among processes comes with the run
/// queue). Graphs use durability sync with it by default. Thread-safe.
class PostgresSaver final : public KvCheckpointer {
 public:
  /// Connects to `conninfo` (libpq's "host=... dbname=..." or "postgresql://...") and creates
  /// the table when missing (default "sg_checkpoints"). Throws CheckpointError
  /// ("checkpoint.locked" when another saver keeps the table open for 3 s, "checkpoint.io"
  /// otherwise)
  /// naming the failure.
  [[nodiscard]] static std::shared_ptr<PostgresSaver> open(const std::string& conninfo,
                                                           PostgresOptions options = {});

  /// Durability::sync. noexcept.
  [[nodiscard]] Durability default_durability() const noexcept override { return Durability::sync; }

 private:
  explicit PostgresSaver(std::unique_ptr<detail::KvBackend> kv);
};

}  // namespace sg
