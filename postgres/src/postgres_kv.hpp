// SPDX-License-Identifier: MIT
#pragma once

// The ordered key-value backend of KvCheckpointer and KvStore in Postgres: one table per
// backend, (space, key) -> value, all bytea, so that Postgres orders keys as the other backends
// do (bytewise). A write batch is one pipelined statement list in one implicit transaction (one
// round trip); a scan reads pages of rows in key order.

#include <stategraph/kv/kv.hpp>
#include <stategraph/postgres/pg.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sg::detail {

/// Turns a PostgresError into the owner's exception (CheckpointError, StoreError); must throw.
using PostgresFail = std::function<void(const PostgresError&)>;

/// A key space kept in pages: its keys fall in groups (the key up to and including its
/// `group_nuls`-th NUL byte: a thread's checkpoints, one channel's message log), and the puts of
/// one write batch to one group share a row, which Postgres compresses when it is large
/// (postgres_kv_pages.cpp).
struct PagedSpace {
  std::uint8_t space;
  int group_nuls;
};

class PostgresKv final : public KvBackend {
 public:
  /// Connects (a pool of `pool_size`) and creates table `table` when missing (under an advisory
  /// lock, so that processes starting at once do not race). Holds a session lock on the table
  /// for its lifetime on a connection of its own: exclusive, or shared (then the backend is
  /// shared() and takes `expect` operations). A PostgresKv whose lock conflicts (an exclusive
  /// one and any other, in any process) waits up to 3 s, then fails with SQLSTATE 55P03
  /// (lock_not_available). `prepare`: see pg::Connection. Throws through `fail`.
  PostgresKv(const std::string& conninfo, std::size_t pool_size, std::string table, bool exclusive,
             bool prepare, PostgresFail fail, std::vector<PagedSpace> paged = {});
  /// Releases the table's lock.
  ~PostgresKv() override;
  PostgresKv(const PostgresKv&) = delete;
  PostgresKv& operator=(const PostgresKv&) = delete;

  [[nodiscard]] bool shared() const noexcept override { return !exclusive_; }
  std::optional<std::string> get(std::uint8_t space, std::string_view key) override;
  /// Throws KvConflict when an `expect` operation fails.
  void write(const std::vector<KvOp>& batch) override;
  void scan(std::uint8_t space, std::string_view lower, std::string_view upper, bool reverse,
            const std::function<bool(std::string_view, std::string_view)>& visit) override;

  /// The statement that sets `key` of `space` to `value`, for a caller's own transaction on
  /// the same database (the run queue sets a thread's fence as it claims a run).
  [[nodiscard]] pg::Statement put_statement(std::uint8_t space, std::string key,
                                            std::string value) const;

 private:
  /// `work(connection)` on the pool (once more on a new connection after a lost one); a
  /// PostgresError goes through fail_.
  template <typename Work>
  auto run(Work&& work) {
    try {
      return pool_->with_retry(std::forward<Work>(work));
    } catch (const PostgresError& e) {
      fail_(e);
      throw;  // fail_ must throw; this keeps the compiler sure of it
    }
  }
  [[nodiscard]] const PagedSpace* paged(std::uint8_t space) const noexcept;
  /// The statements that create the paged spaces' columns and functions (postgres_kv_pages.cpp).
  [[nodiscard]] std::vector<pg::Statement> page_schema() const;
  /// The statements that store `puts` (all on `space`) as pages and loose rows.
  void page_statements(const std::vector<const KvOp*>& puts, const PagedSpace& space,
                       std::vector<pg::Statement>& out) const;
  /// The statement of an erase or erase_range on a paged space.
  [[nodiscard]] pg::Statement page_erase_statement(const KvOp& op) const;
  std::optional<std::string> get_paged(const PagedSpace& space, std::string_view key);
  void scan_paged(const PagedSpace& space, std::string_view lower, std::string_view upper,
                  bool reverse,
                  const std::function<bool(std::string_view, std::string_view)>& visit);

  std::string table_;  // as given (the lock's name)
  bool exclusive_;
  PostgresFail fail_;
  std::unique_ptr<pg::Pool> pool_;
  std::unique_ptr<pg::Connection> owner_;  // holds the table's lock
  // The statements, made once: a checkpoint write is only parameters.
  std::string get_sql_, put_sql_, erase_sql_, erase_range_sql_, scan_sql_, expect_sql_, swap_sql_;
  std::vector<PagedSpace> paged_;
  std::string quoted_;  // the table's name, quoted
  std::string put_page_sql_, page_erase_sql_, page_get_sql_;
};

}  // namespace sg::detail
