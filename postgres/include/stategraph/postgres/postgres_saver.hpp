// SPDX-License-Identifier: MIT
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
  /// Hold a session lock on the table while open, so that a second saver or store on it (in any
  /// process) fails with "checkpoint.locked" / "store.locked" after waiting 3 s. An exclusive
  /// saver trusts its per-thread caches (no head read per run, no head check per write: faster,
  /// docs/benchmarks.md).
  bool exclusive = false;
  /// Prepare each statement once per connection (faster); false behind a pooler that does not
  /// keep prepared statements (PgBouncer in transaction mode).
  bool prepare = true;
};

namespace detail {
class PostgresKv;
}  // namespace detail

/// A checkpointer in PostgreSQL, with the layout of RocksDbSaver (KvCheckpointer: a message
/// log plus ranges, so the bytes written per superstep do not grow with the conversation) in one
/// table of (space, key, value) rows. Each put, put_writes, delete_thread, copy_thread and
/// prune is one transaction sent in one round trip (libpq pipeline mode). Processes may share a
/// table: each write that used this object's per-thread caches expects the thread's head row
/// unchanged and replaces it, so a write after another process wrote the thread is staged again
/// from storage (docs/scale-out.md); fence() keeps a worker that lost its run from writing.
/// Graphs use durability sync with it by default. Thread-safe.
class PostgresSaver final : public KvCheckpointer {
 public:
  /// Connects to `conninfo` (libpq's "host=... dbname=..." or "postgresql://...") and creates
  /// the table when missing (default "sg_checkpoints"). Throws CheckpointError
  /// ("checkpoint.locked" when `options.exclusive` and another saver has the table, or the other
  /// way round, for 3 s; "checkpoint.io" otherwise) naming the failure.
  [[nodiscard]] static std::shared_ptr<PostgresSaver> open(const std::string& conninfo,
                                                           PostgresOptions options = {});

  /// Durability::sync. noexcept.
  [[nodiscard]] Durability default_durability() const noexcept override { return Durability::sync; }

  /// The statement that sets the fence of `thread_id` to `token` (see KvCheckpointer::fence),
  /// for the caller's own transaction on the same database (a run queue's claim). Thread-safe.
  [[nodiscard]] pg::Statement fence_statement(const std::string& thread_id,
                                              std::string token) const;

 private:
  explicit PostgresSaver(detail::PostgresKv* kv);  // takes ownership

  detail::PostgresKv* kv_;  // owned by the base
};

}  // namespace sg
