#pragma once

// The ordered key-value backend of KvCheckpointer and KvStore in Postgres: one table per
// backend, (space, key) -> value, all bytea, so that Postgres orders keys as the other backends
// do (bytewise). A write batch is one pipelined statement list in one implicit transaction (one
// round trip); a scan reads pages of rows in key order.

#include <stategraph/kv/kv.hpp>
#include <stategraph/postgres/pg.hpp>

#include <functional>
#include <memory>
#include <string>

namespace sg::detail {

/// Turns a PostgresError into the owner's exception (CheckpointError, StoreError); must throw.
using PostgresFail = std::function<void(const PostgresError&)>;

class PostgresKv final : public KvBackend {
 public:
  /// Creates table `table` when missing (under an advisory lock, so that processes starting at
  /// once do not race). With `exclusive`, holds a session lock on the table for its lifetime
  /// on a connection of its own: a second PostgresKv on the table, in any process, waits up to
  /// 3 s for it, then fails with SQLSTATE 55P03 (lock_not_available). Throws through `fail`.
  PostgresKv(std::shared_ptr<pg::Pool> pool, std::string table, PostgresFail fail, bool exclusive);
  /// Releases the exclusive lock.
  ~PostgresKv() override;
  PostgresKv(const PostgresKv&) = delete;
  PostgresKv& operator=(const PostgresKv&) = delete;

  std::optional<std::string> get(std::uint8_t space, std::string_view key) override;
  void write(const std::vector<KvOp>& batch) override;
  void scan(std::uint8_t space, std::string_view lower, std::string_view upper, bool reverse,
            const std::function<bool(std::string_view, std::string_view)>& visit) override;

 private:
  template <typename Work>
  auto run(Work&& work);

  std::shared_ptr<pg::Pool> pool_;
  std::string table_;  // quoted
  PostgresFail fail_;
  std::unique_ptr<pg::Connection> owner_;  // holds the exclusive lock
  std::string owner_table_;
};

}  // namespace sg::detail
