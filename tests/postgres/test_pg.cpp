// SPDX-License-Identifier: MIT
// The libpq layer against a real PostgreSQL 15 started in a temp dir: parameters (text, binary,
// NULL), pipelined batches and their atomicity, errors with their SQLSTATE, the pool across a
// server restart, LISTEN/NOTIFY.
#include <stategraph/postgres/pg.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include "support/postgres_cluster.hpp"

using sg::PostgresError;
using sg::pg::Connection;
using sg::pg::Params;
using sg::pg::Pool;
using sg::pg::Statement;

TEST_CASE("pg: statements, text and binary parameters, NULL, results") {
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  Connection c(cluster.conninfo());
  CHECK(c.healthy());
  (void)c.exec("CREATE TABLE t (k text PRIMARY KEY, n bigint, b bytea)");
  const std::string bytes("a\0b\xff", 4);
  const auto inserted = c.exec("INSERT INTO t VALUES ($1, $2, $3), ($4, NULL, NULL)",
                               Params().text("one").integer(-42).binary(bytes).text("two"));
  CHECK(inserted.affected() == 2);
  const auto rows = c.exec("SELECT k, n, b FROM t ORDER BY k", {}, true);
  REQUIRE(rows.rows() == 2);
  CHECK(rows.columns() == 3);
  CHECK(rows.get(0, 0) == "one");
  CHECK(rows.get(0, 2) == bytes);  // binary results: the bytes as stored
  CHECK(rows.is_null(1, 1));
  CHECK(rows.is_null(1, 2));
  const auto text = c.exec("SELECT n FROM t WHERE k = $1", Params().text("one"));
  CHECK(text.get_int(0, 0) == -42);
  CHECK(c.exec("SELECT k FROM t WHERE n IS NULL").get(0, 0) == "two");
  CHECK_THROWS_AS((void)c.exec("SELECT k FROM t").get_int(0, 0), PostgresError);
}

TEST_CASE("pg: errors carry the SQLSTATE and leave the connection usable") {
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  Connection c(cluster.conninfo());
  (void)c.exec("CREATE TABLE u (k int PRIMARY KEY)");
  (void)c.exec("INSERT INTO u VALUES (1)");
  try {
    (void)c.exec("INSERT INTO u VALUES (1)");
    FAIL("a duplicate key was accepted");
  } catch (const PostgresError& e) {
    CHECK(e.code() == "postgres.query");
    CHECK(e.sqlstate() == "23505");
    CHECK_FALSE(e.connection_lost());
    CHECK(std::string(e.what()).find("duplicate key") != std::string::npos);
  }
  try {
    (void)c.exec("SELEC 1");
    FAIL("bad SQL was accepted");
  } catch (const PostgresError& e) {
    CHECK(e.sqlstate() == "42601");
  }
  CHECK(c.exec("SELECT count(*) FROM u").get_int(0, 0) == 1);
  try {
    Connection bad("host=/nonexistent-dir port=1 user=postgres dbname=x connect_timeout=2");
    FAIL("connected to nothing");
  } catch (const PostgresError& e) {
    CHECK(e.code() == "postgres.connect");
    CHECK(e.connection_lost());
  }
}

TEST_CASE("pg: a pipeline is one round trip and, atomic, all or nothing") {
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  Connection c(cluster.conninfo());
  (void)c.exec("CREATE TABLE p (k int PRIMARY KEY, v text)");
  std::vector<Statement> batch;
  for (int i = 0; i < 100; ++i) {
    batch.push_back(
        {"INSERT INTO p VALUES ($1, $2)", Params().integer(i).text("v" + std::to_string(i))});
  }
  batch.push_back({"SELECT count(*) FROM p", {}});
  const auto results = c.pipeline(batch);
  REQUIRE(results.size() == 101);
  CHECK(results[0].affected() == 1);
  CHECK(results[100].get_int(0, 0) == 100);  // later statements see the earlier ones

  // A failing statement in an atomic batch: nothing of the batch is kept.
  std::vector<Statement> failing{{"INSERT INTO p VALUES (1000, 'a')", {}},
                                 {"INSERT INTO p VALUES (0, 'duplicate')", {}},
                                 {"INSERT INTO p VALUES (1001, 'b')", {}}};
  try {
    (void)c.pipeline(failing);
    FAIL("the duplicate was accepted");
  } catch (const PostgresError& e) {
    CHECK(e.sqlstate() == "23505");
  }
  CHECK(c.exec("SELECT count(*) FROM p").get_int(0, 0) == 100);
  // Not atomic: each statement stands alone.
  CHECK_THROWS_AS((void)c.pipeline(failing, false), PostgresError);
  CHECK(c.exec("SELECT count(*) FROM p").get_int(0, 0) == 102);
  CHECK(c.healthy());
}

TEST_CASE("pg: the pool lends connections to threads and survives a server restart") {
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  Pool pool(cluster.conninfo(), 3);
  pool.acquire()->exec("CREATE TABLE c (n int)");
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&pool] {
      for (int i = 0; i < 20; ++i) {
        auto lease = pool.acquire();
        (void)lease->exec("INSERT INTO c VALUES (1)");
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(pool.acquire()->exec("SELECT count(*) FROM c").get_int(0, 0) == 120);

  cluster.stop();
  cluster.start();
  // The idle connections broke with the restart: one retry on a fresh connection.
  const auto count =
      pool.with_retry([](Connection& c) { return c.exec("SELECT count(*) FROM c").get_int(0, 0); });
  CHECK(count == 120);
  CHECK_THROWS_AS(Pool("x", 0), PostgresError);
}

TEST_CASE("pg: LISTEN/NOTIFY between two connections") {
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  Connection listener(cluster.conninfo());
  Connection sender(cluster.conninfo());
  listener.listen("sg runs");
  CHECK(listener.wait_for_notifications(std::chrono::milliseconds(50)).empty());
  (void)sender.exec("SELECT pg_notify($1, $2)", Params().text("sg runs").text("run-1"));
  auto got = listener.wait_for_notifications(std::chrono::milliseconds(5000));
  REQUIRE(got.size() == 1);
  CHECK(got[0].channel == "sg runs");
  CHECK(got[0].payload == "run-1");
  // A notification sent in a transaction arrives at its commit, not before.
  (void)sender.exec("BEGIN");
  (void)sender.exec("SELECT pg_notify('sg runs', 'later')");
  CHECK(listener.wait_for_notifications(std::chrono::milliseconds(100)).empty());
  (void)sender.exec("COMMIT");
  got = listener.wait_for_notifications(std::chrono::milliseconds(5000));
  REQUIRE(got.size() == 1);
  CHECK(got[0].payload == "later");
  CHECK(sg::pg::quote_identifier("a\"b") == "\"a\"\"b\"");
}

TEST_CASE("pg: prepared statements are reused, in a pipeline too, and survive a failed batch") {
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  for (const bool prepare : {true, false}) {
    CAPTURE(prepare);
    Connection c(cluster.conninfo(), prepare);
    (void)c.exec("DROP TABLE IF EXISTS p");
    (void)c.exec("CREATE TABLE p (k int PRIMARY KEY, v text)");
    const std::string insert = "INSERT INTO p VALUES ($1, $2)";
    const std::string count = "SELECT count(*) FROM p WHERE k >= $1";
    // One statement twice in one batch (prepared once), then a batch that fails before the
    // statement it would prepare: that statement is prepared by the next batch.
    (void)c.pipeline(
        {{insert, Params().integer(1).text("a")}, {insert, Params().integer(2).text("b")}});
    CHECK_THROWS_AS(
        (void)c.pipeline({{insert, Params().integer(1).text("dup")}, {count, Params().integer(0)}}),
        PostgresError);
    const auto results = c.pipeline({{count, Params().integer(0)},
                                     {insert, Params().integer(3).text("c")},
                                     {count, Params().integer(2)}});
    REQUIRE(results.size() == 3);
    CHECK(results[0].get_int(0, 0) == 2);
    CHECK(results[2].get_int(0, 0) == 2);
    for (int i = 4; i < 8; ++i) (void)c.exec(insert, Params().integer(i).text("x"));
    CHECK(c.exec(count, Params().integer(0)).get_int(0, 0) == 7);
    const auto named = c.exec("SELECT count(*) FROM pg_prepared_statements");
    CHECK(named.get_int(0, 0) == (prepare ? 2 : 0));
  }
}
