// SPDX-License-Identifier: MIT
#include "postgres_kv.hpp"

#include <fmt/format.h>

namespace sg::detail {

namespace {

/// Rows a scan reads in its first round trip (most scans stop at their first row: the newest
/// checkpoint, the last log entry) and in the next ones.
constexpr int kFirstScanPage = 8;
constexpr int kScanPage = 256;

/// The advisory lock that serializes schema changes of every stategraph process.
constexpr std::int64_t kSchemaLock = 0x73675f736368656d;  // "sg_schem"

/// The first key of the two-key advisory lock that makes a table exclusive (the second is the
/// table name's hash).
constexpr int kOwnerLock = 0x73676b76;  // "sgkv"

}  // namespace

PostgresKv::PostgresKv(const std::string& conninfo, std::size_t pool_size, std::string table,
                       bool exclusive, bool prepare, PostgresFail fail,
                       std::vector<PagedSpace> paged)
    : table_(std::move(table)),
      exclusive_(exclusive),
      fail_(std::move(fail)),
      paged_(std::move(paged)),
      quoted_(pg::quote_identifier(table_)) {
  const std::string& quoted = quoted_;
  get_sql_ = fmt::format("SELECT value FROM {} WHERE space = $1 AND key = $2", quoted);
  put_sql_ = fmt::format(
      "INSERT INTO {} (space, key, value) VALUES ($1, $2, $3) ON CONFLICT (space, key) DO UPDATE "
      "SET value = EXCLUDED.value",
      quoted);
  erase_sql_ = fmt::format("DELETE FROM {} WHERE space = $1 AND key = $2", quoted);
  erase_range_sql_ =
      fmt::format("DELETE FROM {} WHERE space = $1 AND key >= $2 AND key < $3", quoted);
  scan_sql_ = fmt::format("SELECT key, value FROM {} WHERE space = $1", quoted);
  const std::string expect_function = pg::quote_identifier(table_ + "_expect");
  const std::string swap_function = pg::quote_identifier(table_ + "_swap");
  expect_sql_ = fmt::format("SELECT {}($1, $2, $3)", expect_function);
  swap_sql_ = fmt::format("SELECT {}($1, $2, $3, $4)", swap_function);
  put_page_sql_ =
      fmt::format("SELECT {}($1, $2, $3, $4)", pg::quote_identifier(table_ + "_put_page"));
  page_erase_sql_ = fmt::format("SELECT {}($1, $2, $3)", pg::quote_identifier(table_ + "_erase"));
  // A loose row (marked 0) and the page that would hold the key (marked 1).
  page_get_sql_ = fmt::format(
      "SELECT int4send(0), value FROM {0} WHERE space = $1 AND key = $2 "
      "UNION ALL SELECT int4send(1), p.value FROM (SELECT value, last FROM {0} "
      "WHERE space = $3 AND key <= $2 ORDER BY key DESC LIMIT 1) p WHERE p.last >= $2",
      quoted);
  try {
    pool_ = std::make_unique<pg::Pool>(conninfo, pool_size, prepare);
  } catch (const PostgresError& e) {
    fail_(e);
    throw;
  }
  try {
    // An exclusive backend holds the table's lock, a shared one holds it shared (so that it
    // keeps an exclusive one out, and the other way round). Waits a little: a process that just
    // closed (or was killed holding) the table releases it when its server backend notices.
    owner_ = std::make_unique<pg::Connection>(conninfo);
    (void)owner_->exec("SET lock_timeout = '3s'");
    (void)owner_->exec(
        fmt::format("SELECT pg_advisory_lock{}($1, hashtext($2))", exclusive_ ? "" : "_shared"),
        pg::Params().integer(kOwnerLock).text(table_));
    (void)owner_->exec("SET lock_timeout = 0");
  } catch (const PostgresError& e) {
    if (e.sqlstate() != "55P03") {
      fail_(e);
      throw;
    }
    fail_(PostgresError(errc::kPostgresQuery,
                        fmt::format("table {} is in use by {}", quoted,
                                    exclusive_ ? "another saver or store"
                                               : "an exclusive store (one process at a time)"),
                        "55P03"));
    throw;
  }
  run([&](pg::Connection& c) {
    std::vector<pg::Statement> schema{
        {"SELECT pg_advisory_xact_lock($1)", pg::Params().integer(kSchemaLock)},
        {fmt::format("CREATE TABLE IF NOT EXISTS {} (space smallint NOT NULL, key bytea NOT NULL, "
                     "value bytea NOT NULL, PRIMARY KEY (space, key))",
                     quoted),
         {}},
        // expect: the row (made empty when missing, so that two first writers also exclude
        // each other) must hold `expected`; no other writer changes it until the transaction
        // ends.
        {fmt::format("CREATE OR REPLACE FUNCTION {0}(s smallint, k bytea, expected bytea) "
                     "RETURNS void LANGUAGE plpgsql AS $$ BEGIN "
                     "IF expected = ''::bytea THEN INSERT INTO {1} (space, key, value) "
                     "VALUES (s, k, ''::bytea) ON CONFLICT (space, key) DO NOTHING; END IF; "
                     "PERFORM 1 FROM {1} WHERE space = s AND key = k AND value = expected "
                     "FOR SHARE; "
                     "IF NOT FOUND THEN RAISE EXCEPTION 'stategraph: another writer changed "
                     "an expected key' USING ERRCODE = 'serialization_failure'; END IF; "
                     "END $$",
                     expect_function, quoted),
         {}},
        // swap: an expect and a put of one key as one compare-and-set.
        {fmt::format("CREATE OR REPLACE FUNCTION {0}(s smallint, k bytea, expected bytea, "
                     "replacement bytea) RETURNS void LANGUAGE plpgsql AS $$ BEGIN "
                     "UPDATE {1} SET value = replacement WHERE space = s AND key = k "
                     "AND value = expected; "
                     "IF FOUND THEN RETURN; END IF; "
                     "IF expected = ''::bytea THEN INSERT INTO {1} (space, key, value) "
                     "VALUES (s, k, replacement) ON CONFLICT (space, key) DO NOTHING; "
                     "IF FOUND THEN RETURN; END IF; END IF; "
                     "RAISE EXCEPTION 'stategraph: another writer changed an expected key' "
                     "USING ERRCODE = 'serialization_failure'; "
                     "END $$",
                     swap_function, quoted),
         {}}};
    for (auto& statement : page_schema()) schema.push_back(std::move(statement));
    (void)c.pipeline(schema);
    return 0;
  });
}

PostgresKv::~PostgresKv() {
  try {  // released now rather than when the server notices the connection closed
    (void)owner_->exec(
        fmt::format("SELECT pg_advisory_unlock{}($1, hashtext($2))", exclusive_ ? "" : "_shared"),
        pg::Params().integer(kOwnerLock).text(table_));
  } catch (const PostgresError&) {
    // A broken connection holds no lock.
  }
}

std::optional<std::string> PostgresKv::get(std::uint8_t space, std::string_view key) {
  if (const PagedSpace* p = paged(space)) return get_paged(*p, key);
  return run([&](pg::Connection& c) -> std::optional<std::string> {
    const auto r = c.exec(get_sql_, pg::Params().integer(space).binary(std::string(key)), true);
    if (r.rows() == 0) return std::nullopt;
    return std::string(r.get(0, 0));
  });
}

void PostgresKv::write(const std::vector<KvOp>& batch) {
  if (batch.empty()) return;
  std::vector<pg::Statement> statements;
  statements.reserve(batch.size());
  // Puts to paged spaces wait (by space) until an erase of a paged space or the end: then a
  // group's puts become one page (page_statements).
  std::vector<std::vector<const KvOp*>> paged_puts(paged_.size());
  const auto flush_paged = [&] {
    for (std::size_t p = 0; p < paged_.size(); ++p) {
      if (!paged_puts[p].empty()) page_statements(paged_puts[p], paged_[p], statements);
      paged_puts[p].clear();
    }
  };
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const KvOp& op = batch[i];
    if (op.kind == KvOp::Kind::expect && i + 1 < batch.size() &&
        batch[i + 1].kind == KvOp::Kind::put && batch[i + 1].space == op.space &&
        batch[i + 1].key == op.key) {
      statements.push_back(
          {swap_sql_, pg::Params().integer(op.space).binary(op.key).binary(op.value).binary(
                          batch[i + 1].value)});
      ++i;
      continue;
    }
    if (const PagedSpace* p = paged(op.space)) {
      if (op.kind == KvOp::Kind::put) {
        paged_puts[static_cast<std::size_t>(p - paged_.data())].push_back(&op);
      } else {
        flush_paged();
        statements.push_back(page_erase_statement(op));
      }
      continue;
    }
    switch (op.kind) {
      case KvOp::Kind::put:
        statements.push_back(
            {put_sql_, pg::Params().integer(op.space).binary(op.key).binary(op.value)});
        break;
      case KvOp::Kind::erase:
        statements.push_back({erase_sql_, pg::Params().integer(op.space).binary(op.key)});
        break;
      case KvOp::Kind::erase_range:
        statements.push_back(
            {erase_range_sql_, pg::Params().integer(op.space).binary(op.key).binary(op.value)});
        break;
      case KvOp::Kind::expect:
        statements.push_back(
            {expect_sql_, pg::Params().integer(op.space).binary(op.key).binary(op.value)});
        break;
    }
  }
  flush_paged();
  try {
    pool_->with_retry([&](pg::Connection& c) {
      (void)c.pipeline(statements);
      return 0;
    });
  } catch (const PostgresError& e) {
    if (e.sqlstate() == "40001") throw KvConflict(e.what());
    fail_(e);
    throw;
  }
}

pg::Statement PostgresKv::put_statement(std::uint8_t space, std::string key,
                                        std::string value) const {
  return {put_sql_, pg::Params().integer(space).binary(std::move(key)).binary(std::move(value))};
}

void PostgresKv::scan(std::uint8_t space, std::string_view lower, std::string_view upper,
                      bool reverse,
                      const std::function<bool(std::string_view, std::string_view)>& visit) {
  if (const PagedSpace* p = paged(space)) {
    scan_paged(*p, lower, upper, reverse, visit);
    return;
  }
  // Pages in key order, each continuing past the last key seen; no cursor stays open, so
  // `visit` may use the backend (and the pool) itself. Ascending, the next page starts after
  // the last key (`from` moves up); descending, it ends before it (`to` moves down).
  std::string from(lower);
  std::string to(upper);  // empty: no upper bound
  bool first_page = true;
  for (;;) {
    const bool after_from = !reverse && !first_page;
    std::string sql = scan_sql_ + (after_from ? " AND key > $2" : " AND key >= $2");
    pg::Params params;
    params.integer(space).binary(from);
    if (!to.empty()) {
      params.binary(to);
      sql += " AND key < $3";
    }
    const int page_rows = first_page ? kFirstScanPage : kScanPage;
    sql += fmt::format(" ORDER BY key {} LIMIT {}", reverse ? "DESC" : "ASC", page_rows);
    const pg::Result page =
        run([&](pg::Connection& c) { return c.exec(sql, params, /*binary_result=*/true); });
    for (int row = 0; row < page.rows(); ++row) {
      if (!visit(page.get(row, 0), page.get(row, 1))) return;
    }
    if (page.rows() < page_rows) return;
    (reverse ? to : from) = std::string(page.get(page.rows() - 1, 0));
    first_page = false;
  }
}

}  // namespace sg::detail
