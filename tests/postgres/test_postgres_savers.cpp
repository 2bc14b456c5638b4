// PostgresSaver and PostgresStore beyond the conformance suites (which run on Postgres too):
// data survives reopening, a table has one owner at a time, a dead server is a clear error.
#include <stategraph/postgres/postgres_saver.hpp>
#include <stategraph/postgres/postgres_store.hpp>
#include <stategraph/stategraph.hpp>

#include <doctest/doctest.h>

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

TEST_CASE("PostgresSaver: a conversation survives reopening, one owner per table") {
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  sg::RunConfig config;
  config.thread_id = "t1";
  {
    auto saver = sg::PostgresSaver::open(cluster.conninfo());
    auto app = echo(saver);
    (void)app.invoke(sg::MessagesState{{sg::human("one")}}, config);
    try {
      (void)sg::PostgresSaver::open(cluster.conninfo());
      FAIL("a second saver opened the table");
    } catch (const sg::CheckpointError& e) {
      CHECK(e.code() == "checkpoint.locked");
      CHECK(std::string(e.what()).find("sg_checkpoints") != std::string::npos);
    }
    auto other = sg::PostgresSaver::open(cluster.conninfo(), {.table = "other"});  // its own
    CHECK(other->threads().empty());
  }
  auto saver = sg::PostgresSaver::open(cluster.conninfo());  // the first one closed
  auto app = echo(saver);
  const auto state = app.invoke(sg::MessagesState{{sg::human("two")}}, config);
  REQUIRE(state.state.messages.size() == 4);
  CHECK(state.state.messages[1].text() == "echo: one");
  CHECK(state.state.messages[3].text() == "echo: two");
  CHECK(saver->threads() == std::vector<std::string>{"t1"});
}

TEST_CASE("PostgresStore: items survive reopening, one owner per table") {
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  {
    auto store = sg::PostgresStore::open(cluster.conninfo());
    store->put({"users", "ada"}, "profile", {{"name", "Ada"}});
    try {
      (void)sg::PostgresStore::open(cluster.conninfo());
      FAIL("a second store opened the table");
    } catch (const sg::StoreError& e) {
      CHECK(e.code() == "store.locked");
    }
  }
  auto store = sg::PostgresStore::open(cluster.conninfo());
  CHECK(store->get({"users", "ada"}, "profile")->value["name"] == "Ada");
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
