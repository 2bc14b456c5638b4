// SPDX-License-Identifier: MIT
#pragma once

// A small RAII layer over libpq: connections, text and binary parameters, results, pipelined
// batches (many statements, one round trip, one implicit transaction), a fixed pool and
// LISTEN/NOTIFY. Hand-written over libpq rather than libpqxx: Debian 12's libpqxx 6.4 has no
// pipeline mode, which makes a checkpoint put one round trip (measured:
// 2,000 inserts 240 ms one by one, 24 ms pipelined). Public headers do not include <libpq-fe.h>.

#include <stategraph/core/error.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sg {

namespace errc {
inline constexpr std::string_view kPostgresConnect = "postgres.connect";
inline constexpr std::string_view kPostgresQuery = "postgres.query";
}  // namespace errc

/// A failed Postgres call. Code "postgres.connect" (no connection, or it broke) or
/// "postgres.query" (the server refused a statement; `sqlstate()` says why, e.g. "23505").
class PostgresError : public Error {
 public:
  PostgresError(std::string_view code, const std::string& message, std::string sqlstate = {})
      : Error(code, message), sqlstate_(std::move(sqlstate)) {}
  /// The SQLSTATE of a refused statement; empty for a connection failure.
  [[nodiscard]] const std::string& sqlstate() const noexcept { return sqlstate_; }
  /// Whether the connection broke (the statement may be retried on a new one).
  [[nodiscard]] bool connection_lost() const noexcept {
    return code() == errc::kPostgresConnect || sqlstate_.rfind("08", 0) == 0 ||
           sqlstate_ == "57P01" || sqlstate_ == "57P02" || sqlstate_ == "57P03";
  }

 private:
  std::string sqlstate_;
};

namespace pg {

/// The parameters of a statement, $1, $2, ... in order: text (the server converts it to the
/// column's type), binary (bytea) or NULL. Not thread-safe.
class Params {
 public:
  Params() = default;
  /// A text parameter.
  Params& text(std::string value);
  /// A binary parameter (bytes for a bytea).
  Params& binary(std::string value);
  /// An integer, sent as text.
  Params& integer(std::int64_t value);
  /// SQL NULL.
  Params& null();
  [[nodiscard]] std::size_t size() const noexcept { return values_.size(); }

 private:
  friend class Connection;
  std::vector<std::string> values_;
  std::vector<bool> nulls_;
  std::vector<int> formats_;  // 0 text, 1 binary
};

/// The rows of a statement (or its command status). Columns are read as the statement asked:
/// text, or binary. Movable; not thread-safe.
class Result {
 public:
  Result() = default;
  ~Result();
  Result(Result&& other) noexcept;
  Result& operator=(Result&& other) noexcept;
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;

  [[nodiscard]] int rows() const noexcept;
  [[nodiscard]] int columns() const noexcept;
  [[nodiscard]] bool is_null(int row, int column) const noexcept;
  /// The bytes of a field (text, or binary as asked); empty for NULL. Valid while this lives.
  [[nodiscard]] std::string_view get(int row, int column) const noexcept;
  /// A text field as an integer. Throws PostgresError ("postgres.query") when it is not one.
  [[nodiscard]] std::int64_t get_int(int row, int column) const;
  /// Rows an INSERT, UPDATE or DELETE touched.
  [[nodiscard]] std::int64_t affected() const noexcept;

 private:
  friend class Connection;
  explicit Result(void* native) : native_(native) {}
  void* native_ = nullptr;  // PGresult*
};

/// One statement of a pipelined batch.
struct Statement {
  std::string sql;
  Params params;
  bool binary_result = false;  ///< columns come back in binary (bytea as raw bytes)
};

/// A NOTIFY received on a LISTENed channel.
struct Notification {
  std::string channel;
  std::string payload;
};

/// One connection. Not thread-safe: one user at a time (the Pool hands them out).
class Connection {
 public:
  /// Connects with a libpq connection string ("host=... dbname=..." or "postgresql://...").
  /// `prepare`: statements with parameters are prepared on first use and reused (parsed and
  /// planned once per connection); off for a pooler that does not keep them (PgBouncer in
  /// transaction mode). Throws PostgresError ("postgres.connect") naming what failed.
  explicit Connection(const std::string& conninfo, bool prepare = true);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Runs one statement. Throws PostgresError.
  Result exec(const std::string& sql, const Params& params = {}, bool binary_result = false);
  /// Runs `statements` in one round trip (pipeline mode). With `atomic`, they form one implicit
  /// transaction: all or none. Returns one Result per statement. Throws PostgresError for the
  /// first statement that failed (with `atomic`, nothing of the batch is kept).
  std::vector<Result> pipeline(const std::vector<Statement>& statements, bool atomic = true);
  /// LISTEN on `channel` (an identifier; quoted here).
  void listen(const std::string& channel);
  /// The notifications that arrive within `timeout` (returns at the first ones). Throws
  /// PostgresError when the connection breaks.
  std::vector<Notification> wait_for_notifications(std::chrono::milliseconds timeout);
  /// Whether the connection is still usable.
  [[nodiscard]] bool healthy() const noexcept;

 private:
  /// The error of a failed call: the result's SQLSTATE and message (the result is freed), or
  /// the connection's.
  [[nodiscard]] PostgresError error_of(std::string_view what, void* result) const;
  [[noreturn]] void fail(std::string_view what, void* result) const;
  void require_open() const;
  /// The name `sql` is prepared under on this connection, or null (not yet, or not prepared).
  [[nodiscard]] const std::string* prepared_name(const std::string& sql,
                                                 const Params& params) const;
  void* conn_ = nullptr;  // PGconn*; null once closed after an error mid-pipeline
  bool prepare_;
  std::unordered_map<std::string, std::string> prepared_;  // sql -> statement name
};

/// A fixed pool of connections to one database, made on first use. A connection that broke is
/// replaced on its next lease. Thread-safe.
class Pool {
 public:
  /// Throws PostgresError ("postgres.connect") when `size` is 0. `prepare`: see Connection.
  Pool(std::string conninfo, std::size_t size, bool prepare = true);
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  /// A connection on loan; it returns to the pool when the lease ends.
  class Lease {
   public:
    Lease(Lease&& other) noexcept : pool_(other.pool_), conn_(std::move(other.conn_)) {}
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    Connection& operator*() const noexcept { return *conn_; }
    Connection* operator->() const noexcept { return conn_.get(); }

   private:
    friend class Pool;
    Lease(Pool& pool, std::unique_ptr<Connection> conn) : pool_(&pool), conn_(std::move(conn)) {}
    Pool* pool_;
    std::unique_ptr<Connection> conn_;
  };

  /// Waits for a free connection (connecting one when needed). Throws PostgresError.
  [[nodiscard]] Lease acquire();
  /// Runs `work(connection)` on a leased connection, once more on a new connection when the
  /// first one turned out broken (a restarted server; the idle ones are then dropped too, as they
  /// are as old). Returns what `work` returns.
  template <typename Work>
  auto with_retry(Work&& work) {
    try {
      Lease lease = acquire();
      return work(*lease);
    } catch (const PostgresError& e) {
      if (!e.connection_lost()) throw;
    }
    drop_idle();
    Lease lease = acquire();
    return work(*lease);
  }
  /// Closes the idle connections (the next leases connect anew).
  void drop_idle();
  [[nodiscard]] const std::string& conninfo() const noexcept { return conninfo_; }

 private:
  void give_back(std::unique_ptr<Connection> conn);

  std::string conninfo_;
  std::size_t size_;
  bool prepare_;
  std::mutex mu_;
  std::condition_variable freed_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::size_t open_ = 0;  // connections made and not dropped
};

/// Quotes an identifier for SQL ("name" with inner quotes doubled).
[[nodiscard]] std::string quote_identifier(std::string_view name);

}  // namespace pg
}  // namespace sg
