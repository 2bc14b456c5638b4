#include "postgres_kv.hpp"

#include <fmt/format.h>

namespace sg::detail {

namespace {

/// Rows a scan reads per round trip.
constexpr int kScanPage = 256;

/// The advisory lock that serializes schema changes of every stategraph process.
constexpr std::int64_t kSchemaLock = 0x73675f736368656d;  // "sg_schem"

/// The first key of the two-key advisory lock that makes a table exclusive (the second is the
/// table name's hash).
constexpr int kOwnerLock = 0x73676b76;  // "sgkv"

}  // namespace

template <typename Work>
auto PostgresKv::run(Work&& work) {
  try {
    return pool_->with_retry(std::forward<Work>(work));
  } catch (const PostgresError& e) {
    fail_(e);
    throw;  // fail_ must throw; this keeps the compiler sure of it
  }
}

PostgresKv::PostgresKv(std::shared_ptr<pg::Pool> pool, std::string table, PostgresFail fail,
                       bool exclusive)
    : pool_(std::move(pool)), table_(pg::quote_identifier(table)), fail_(std::move(fail)) {
  if (exclusive) {
    // The lock waits a little: a process that just closed (or was killed holding) the table
    // releases it when its server backend notices, a moment later.
    try {
      owner_ = std::make_unique<pg::Connection>(pool_->conninfo());
      (void)owner_->exec("SET lock_timeout = '3s'");
      (void)owner_->exec("SELECT pg_advisory_lock($1, hashtext($2))",
                         pg::Params().integer(kOwnerLock).text(table));
      (void)owner_->exec("SET lock_timeout = 0");
    } catch (const PostgresError& e) {
      if (e.sqlstate() != "55P03") {
        fail_(e);
        throw;
      }
      fail_(PostgresError(errc::kPostgresQuery,
                          fmt::format("table {} is in use by another saver or store (one "
                                      "process per table)",
                                      table_),
                          "55P03"));
      throw;
    }
    owner_table_ = table;
  }
  run([&](pg::Connection& c) {
    (void)c.pipeline({{"SELECT pg_advisory_xact_lock($1)", pg::Params().integer(kSchemaLock)},
                      {fmt::format("CREATE TABLE IF NOT EXISTS {} (space smallint NOT NULL, "
                                   "key bytea NOT NULL, value bytea NOT NULL, "
                                   "PRIMARY KEY (space, key))",
                                   table_),
                       {}}});
    return 0;
  });
}

PostgresKv::~PostgresKv() {
  if (!owner_) return;
  try {  // released now rather than when the server notices the connection closed
    (void)owner_->exec("SELECT pg_advisory_unlock($1, hashtext($2))",
                       pg::Params().integer(kOwnerLock).text(owner_table_));
  } catch (const PostgresError&) {
    // A broken connection holds no lock.
  }
}

std::optional<std::string> PostgresKv::get(std::uint8_t space, std::string_view key) {
  const std::string sql = fmt::format("SELECT value FROM {} WHERE space = $1 AND key = $2", table_);
  return run([&](pg::Connection& c) -> std::optional<std::string> {
    const auto r = c.exec(sql, pg::Params().integer(space).binary(std::string(key)), true);
    if (r.rows() == 0) return std::nullopt;
    return std::string(r.get(0, 0));
  });
}

void PostgresKv::write(const std::vector<KvOp>& batch) {
  if (batch.empty()) return;
  std::vector<pg::Statement> statements;
  statements.reserve(batch.size());
  for (const auto& op : batch) {
    switch (op.kind) {
      case KvOp::Kind::put:
        statements.push_back(
            {fmt::format("INSERT INTO {} (space, key, value) VALUES ($1, $2, $3) ON CONFLICT "
                         "(space, key) DO UPDATE SET value = EXCLUDED.value",
                         table_),
             pg::Params().integer(op.space).binary(op.key).binary(op.value)});
        break;
      case KvOp::Kind::erase:
        statements.push_back({fmt::format("DELETE FROM {} WHERE space = $1 AND key = $2", table_),
                              pg::Params().integer(op.space).binary(op.key)});
        break;
      case KvOp::Kind::erase_range:
        statements.push_back(
            {fmt::format("DELETE FROM {} WHERE space = $1 AND key >= $2 AND key < $3", table_),
             pg::Params().integer(op.space).binary(op.key).binary(op.value)});
        break;
    }
  }
  run([&](pg::Connection& c) {
    (void)c.pipeline(statements);
    return 0;
  });
}

void PostgresKv::scan(std::uint8_t space, std::string_view lower, std::string_view upper,
                      bool reverse,
                      const std::function<bool(std::string_view, std::string_view)>& visit) {
  // Pages in key order, each continuing past the last key seen; no cursor stays open, so
  // `visit` may use the backend (and the pool) itself.
  std::string from(lower);  // ascending: the next key is >= from (then > from)
  std::string to(upper);    // descending: the next key is < to (then < the last key)
  bool first_page = true;
  for (;;) {
    std::string sql = fmt::format("SELECT key, value FROM {} WHERE space = $1", table_);
    pg::Params params;
    params.integer(space);
    if (!reverse) {
      params.binary(from);
      sql += first_page ? " AND key >= $2" : " AND key > $2";
      if (!to.empty()) {
        params.binary(to);
        sql += " AND key < $3";
      }
      sql += fmt::format(" ORDER BY key LIMIT {}", kScanPage);
    } else {
      params.binary(from);
      sql += " AND key >= $2";
      if (!to.empty()) {
        params.binary(to);
        sql += " AND key < $3";
      }
      sql += fmt::format(" ORDER BY key DESC LIMIT {}", kScanPage);
    }
    const pg::Result page =
        run([&](pg::Connection& c) { return c.exec(sql, params, /*binary_result=*/true); });
    for (int row = 0; row < page.rows(); ++row) {
      if (!visit(page.get(row, 0), page.get(row, 1))) return;
    }
    if (page.rows() < kScanPage) return;
    const std::string last(page.get(page.rows() - 1, 0));
    if (!reverse) {
      from = last;
    } else {
      to = last;
    }
    first_page = false;
  }
}

}  // namespace sg::detail
