// SPDX-License-Identifier: MIT
// PostgresSaver and PostgresStore beyond the conformance suites (which run on Postgres too):
// data survives reopening, processes share a table (caches checked, fences), an exclusive store
// has its table alone, a dead server is a clear error.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/postgres/pg.hpp>
#include <stategraph/postgres/postgres_saver.hpp>
#include <stategraph/postgres/postgres_store.hpp>
#include <stategraph/stategraph.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <thread>

#include "support/postgres_cluster.hpp"

namespace {

sg::CompiledGraph<sg::MessagesState> echo(std::shared_ptr<sg::Checkpointer> saver) {
  sg::StateGraph<sg::MessagesState> g;
  g.add_node("echo", [](const sg::MessagesState& s) {
    return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(
        sg::ai("echo: " + s.messages.back().text()));
  });
  g.add_edge(sg::START, "echo").add_edge("echo", sg::END);
  return g.compile({.checkpointer = std::move(saver)});
}

}  // namespace

TEST_CASE("PostgresSaver: a conversation survives reopening, tables are apart") {
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  sg::RunConfig config;
  config.thread_id = "t1";
  {
    auto saver = sg::PostgresSaver::open(cluster.conninfo());
    auto app = echo(saver);
    (void)app.invoke(sg::MessagesState{{sg::human("one")}}, config);
    auto other = sg::PostgresSaver::open(cluster.conninfo(), {.table = "other"});  // its own
    CHECK(other->threads().empty());
  }
  auto saver = sg::PostgresSaver::open(cluster.conninfo());
  auto app = echo(saver);
  const auto state = app.invoke(sg::MessagesState{{sg::human("two")}}, config);
  REQUIRE(state.state.messages.size() == 4);
  CHECK(state.state.messages[1].text() == "echo: one");
  CHECK(state.state.messages[3].text() == "echo: two");
  CHECK(saver->threads() == std::vector<std::string>{"t1"});
}

TEST_CASE("PostgresSaver: savers of two processes share a table and a thread") {
  // Two savers in one process keep separate caches, as two processes do.
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  auto saver_a = sg::PostgresSaver::open(cluster.conninfo());
  auto saver_b = sg::PostgresSaver::open(cluster.conninfo());
  auto app_a = echo(saver_a);
  auto app_b = echo(saver_b);
  sg::RunConfig config;
  config.thread_id = "t1";
  // Each turn appends to the thread's message log: a stale cache would reuse sequence numbers.
  std::vector<std::string> said;
  for (int turn = 0; turn < 6; ++turn) {
    auto& app = turn % 3 == 2 ? app_b : app_a;  // a, a, b, a, a, b
    said.push_back("turn " + std::to_string(turn));
    const auto result = app.invoke(sg::MessagesState{{sg::human(said.back())}}, config);
    REQUIRE(result.state.messages.size() == 2 * said.size());
    CHECK(saver_a->latest_checkpoint_id("t1", "") == saver_b->latest_checkpoint_id("t1", ""));
  }
  const auto final_state = app_b.get_state(config);
  REQUIRE(final_state);
  REQUIRE(final_state->values.messages.size() == 12);
  for (std::size_t i = 0; i < said.size(); ++i) {
    CHECK(final_state->values.messages[2 * i].text() == said[i]);
    CHECK(final_state->values.messages[2 * i + 1].text() == "echo: " + said[i]);
  }
  CHECK(saver_a->list({.thread_id = "t1"}).size() == saver_b->list({.thread_id = "t1"}).size());

  // Deleting the thread in one process is seen by the other's next write.
  saver_b->delete_thread("t1");
  const auto fresh = app_a.invoke(sg::MessagesState{{sg::human("again")}}, config);
  CHECK(fresh.state.messages.size() == 2);
}

TEST_CASE("PostgresSaver: a fenced writer changes nothing") {
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  auto saver = sg::PostgresSaver::open(cluster.conninfo());
  auto app = echo(saver);
  sg::pg::Connection db(cluster.conninfo());
  auto set_fence = [&](const std::string& token) {
    const auto statement = saver->fence_statement("t2", token);
    (void)db.exec(statement.sql, statement.params);
  };
  sg::RunConfig config;
  config.thread_id = "t2";
  set_fence("run-1:1");  // a worker claimed run-1
  saver->fence("t2", "run-1:1");
  (void)app.invoke(sg::MessagesState{{sg::human("one")}}, config);
  const auto checkpoints = saver->list({.thread_id = "t2"}).size();
  set_fence("run-1:2");  // another worker took the run over
  try {
    (void)app.invoke(sg::MessagesState{{sg::human("two")}}, config);
    FAIL("a fenced-out saver wrote");
  } catch (const sg::CheckpointError& e) {
    CHECK(e.code() == "checkpoint.fenced");
  }
  CHECK(saver->list({.thread_id = "t2"}).size() == checkpoints);
  saver->fence("t2", "run-1:2");  // the new owner writes
  const auto state = app.invoke(sg::MessagesState{{sg::human("three")}}, config);
  CHECK(state.state.messages.back().text() == "echo: three");
  saver->fence("t2", "");
}

TEST_CASE("PostgresStore: items survive reopening, an exclusive store has its table alone") {
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  {
    auto store = sg::PostgresStore::open(cluster.conninfo());
    store->put({"users", "ada"}, "profile", {{"name", "Ada"}});
    auto shared = sg::PostgresStore::open(cluster.conninfo());  // another process's
    CHECK(shared->get({"users", "ada"}, "profile")->value["name"] == "Ada");
    auto exclusive =
        sg::PostgresStore::open(cluster.conninfo(), {.table = "alone", .exclusive = true});
    try {
      (void)sg::PostgresStore::open(cluster.conninfo(), {.table = "alone"});
      FAIL("a second store opened an exclusive store's table");
    } catch (const sg::StoreError& e) {
      CHECK(e.code() == "store.locked");
      CHECK(std::string(e.what()).find("alone") != std::string::npos);
    }
  }
  auto store = sg::PostgresStore::open(cluster.conninfo());
  CHECK(store->get({"users", "ada"}, "profile")->value["name"] == "Ada");
}

TEST_CASE("PostgresStore: two processes' semantic indexes stay fresh") {
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  auto index = [] {
    return sg::IndexConfig{std::make_shared<sg::HashedNgramEmbeddings>(64), {"text"}};
  };
  auto a = sg::PostgresStore::open(cluster.conninfo(), {}, {}, index());
  auto b = sg::PostgresStore::open(cluster.conninfo(), {}, {}, index());  // another process's
  auto top = [](sg::Store& store, const std::string& query) {
    const auto hits = store.search({.prefix = {"docs"}, .query = query, .limit = 1});
    return hits.empty() ? std::string() : hits.front().item.key;
  };
  a->put({"docs"}, "cats", {{"text", "cats purr and sleep all day"}});
  b->put({"docs"}, "rockets", {{"text", "rockets burn fuel to reach orbit"}});
  CHECK(top(*a, "orbit fuel rockets") == "rockets");  // b's put, seen by a
  CHECK(top(*b, "cats that purr") == "cats");         // a's put, seen by b
  a->remove({"docs"}, "rockets");
  CHECK(top(*b, "orbit fuel rockets") == "cats");  // the only one left
  // Both write at once: each write that finds the other's change reloads and writes again.
  std::thread other([&] {
    for (int i = 0; i < 20; ++i)
      b->put({"docs"}, "b" + std::to_string(i), {{"text", "bee " + std::to_string(i)}});
  });
  for (int i = 0; i < 20; ++i)
    a->put({"docs"}, "a" + std::to_string(i), {{"text", "ant " + std::to_string(i)}});
  other.join();
  for (auto* store : {a.get(), b.get()}) {
    CHECK(store->search({.prefix = {"docs"}, .query = "ant 7", .limit = 100}).size() == 41);
    CHECK(top(*store, "bee 13") == "b13");
    CHECK(top(*store, "ant 3") == "a3");
  }
}

TEST_CASE("PostgresSaver: no server is a clear error, a restarted server is reconnected") {
  SG_REQUIRE_POSTGRES();
  try {
    (void)sg::PostgresSaver::open("host=/nonexistent-dir port=1 user=postgres dbname=x");
    FAIL("opened a saver on no server");
  } catch (const sg::CheckpointError& e) {
    CHECK(e.code() == "checkpoint.io");
    CHECK(std::string(e.what()).find("cannot connect") != std::string::npos);
  }
  sg::test::PostgresCluster cluster;
  auto saver = sg::PostgresSaver::open(cluster.conninfo(), {.table = "restart"});
  auto app = echo(saver);
  sg::RunConfig config;
  config.thread_id = "t";
  (void)app.invoke(sg::MessagesState{{sg::human("before")}}, config);
  cluster.stop();
  CHECK_THROWS_AS((void)app.invoke(sg::MessagesState{{sg::human("down")}}, config), sg::Error);
  cluster.start();
  const auto state = app.invoke(sg::MessagesState{{sg::human("after")}}, config);
  CHECK(state.state.messages.back().text() == "echo: after");
}

TEST_CASE(
    "PostgresSaver: a connection dropped mid-transaction is a clear error, the thread stays "
    "whole") {
  // Issue 18's fault injection: a trigger on the saver's table terminates the connection that
  // writes its Nth row, inside that write's transaction (pg_terminate_backend of itself), for
  // every N of a 4-turn conversation. The write's transaction is rolled back by the server; the
  // run fails with an sg::Error (or goes on, when the saver's retry on a fresh connection gets it
  // through); either way the stored thread is one the error-free run passes through, and the
  // conversation finishes, in the same process and after reopening.
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  constexpr int kTurns = 4;
  const auto say = [](int turn) {
    return sg::MessagesState{{sg::human("q" + std::to_string(turn))}};
  };
  std::vector<std::string> reference;
  {
    const auto app = echo(std::make_shared<sg::InMemorySaver>());
    sg::RunConfig config;
    config.thread_id = "t";
    for (int turn = 0; turn < kTurns; ++turn) (void)app.invoke(say(turn), config);
    const auto state = app.get_state(config);
    for (const auto& m : state->values.messages) reference.push_back(m.text());
  }
  const auto stored = [](const sg::CompiledGraph<sg::MessagesState>& app,
                         const sg::RunConfig& config) {
    std::vector<std::string> out;
    if (const auto state = app.get_state(config)) {
      for (const auto& m : state->values.messages) out.push_back(m.text());
    }
    return out;
  };
  sg::pg::Connection admin(cluster.conninfo());
  // Kills the connections writing rows n .. n + kills - 1.
  const auto arm = [&](const std::string& table, int n, int kills) {
    admin.exec("DROP SEQUENCE IF EXISTS fault_rows");
    admin.exec("CREATE SEQUENCE fault_rows");  // not rolled back with the write it counts
    admin.exec("CREATE OR REPLACE FUNCTION fault_" + table +
               "() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF nextval('fault_rows') "
               "BETWEEN " +
               std::to_string(n) + " AND " + std::to_string(n + kills - 1) +
               " THEN PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(5); END IF; "
               "RETURN NEW; END $$");
    admin.exec("CREATE OR REPLACE TRIGGER fault_" + table + " BEFORE INSERT OR UPDATE ON " + table +
               " FOR EACH ROW EXECUTE FUNCTION fault_" + table + "()");
  };
  // Rows an error-free conversation writes.
  int total = 0;
  {
    auto saver = sg::PostgresSaver::open(cluster.conninfo(), {.table = "count_rows"});
    arm("count_rows", 0, 1);
    const auto app = echo(saver);
    sg::RunConfig config;
    config.thread_id = "t";
    for (int turn = 0; turn < kTurns; ++turn) (void)app.invoke(say(turn), config);
    total = static_cast<int>(admin.exec("SELECT last_value FROM fault_rows").get_int(0, 0));
  }
  REQUIRE(total >= kTurns);
  int failures = 0;
  int dropped = 0;  // the runs that reached their Nth row (the writes vary a little)
  for (int n = 1; n <= total; ++n) {
    CAPTURE(n);
    const std::string table = "drop_" + std::to_string(n);
    sg::RunConfig config;
    config.thread_id = "t";
    {
      auto saver = sg::PostgresSaver::open(cluster.conninfo(), {.table = table});
      // Odd N: one dropped connection (the saver's retry on a fresh connection gets the write
      // through); even N: every connection writing from then on is dropped (the run fails)
      // until the fault is gone.
      arm(table, n, n % 2 == 0 ? 1'000'000 : 1);
      const auto app = echo(saver);
      for (int turn = 0; turn < kTurns; ++turn) {
        try {
          (void)app.invoke(say(turn), config);
        } catch (const sg::Error& e) {
          ++failures;
          INFO(e.what());
          admin.exec("DROP TRIGGER fault_" + table + " ON " + table);  // the server is back
          const auto now = stored(app, config);
          CHECK(std::equal(now.begin(), now.end(), reference.begin()));  // a prefix of it
          const bool asked = now.size() > static_cast<std::size_t>(2 * turn);
          if (!asked) {
            (void)app.invoke(say(turn), config);  // the question was never stored: ask again
          } else if (!app.get_state(config)->next.empty()) {
            (void)app.resume(config);
          }
        }
      }
      CHECK(stored(app, config) == reference);
    }
    if (admin.exec("SELECT last_value FROM fault_rows").get_int(0, 0) >= n) ++dropped;
    const auto reopened = echo(sg::PostgresSaver::open(cluster.conninfo(), {.table = table}));
    CHECK(stored(reopened, config) == reference);
  }
  CHECK(dropped >= total / 2);
  CHECK(failures >= 1);
  MESSAGE(dropped << " of " << total << " runs had connections dropped, " << failures
                  << " failed (those whose every retry was dropped too)");
}
