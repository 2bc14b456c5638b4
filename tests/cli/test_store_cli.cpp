// SPDX-License-Identifier: MIT
// `stategraph store ...` run as a real process on a RocksDB store directory.
#include <stategraph/store/rocksdb_store.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

using nlohmann::json;

namespace {

sg::test::ProcessResult run(std::vector<std::string> args) {
  return sg::test::run_process(SG_CLI_PATH, std::move(args), "");
}

json run_json(std::vector<std::string> args) {
  args.push_back("--json");
  const auto r = run(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

}  // namespace

TEST_CASE("store put, get, search, namespaces and delete from the command line") {
  sg::test::TempDir dir;
  const std::string db = dir.sub("store");
  const auto put = [&](const std::string& ns, const std::string& key, const std::string& value) {
    const auto r =
        run({"store", "put", "--db", db, "--namespace", ns, "--key", key, "--value", value});
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out == "stored " + ns + " " + key + "\n");
  };
  put("users.bob.memories", "m1", R"({"text": "likes green tea", "kind": "food"})");
  put("users.bob.memories", "m2", R"({"text": "hikes in the alps", "kind": "sport"})");
  put("users.bob", "profile", R"({"name": "Bob"})");
  put("users.ann", "profile", R"({"name": "Ann"})");

  const json item =
      run_json({"store", "get", "--db", db, "--namespace", "users.bob", "--key", "profile"});
  CHECK(item["value"] == json{{"name", "Bob"}});
  CHECK(item["namespace"] == json{"users", "bob"});

  const json hits =
      run_json({"store", "search", "--db", db, "--namespace", "users.bob", "--query", "green tea"});
  REQUIRE(hits.size() == 3);
  CHECK(hits[0]["key"] == "m1");
  CHECK(hits[0]["score"].is_number());
  const json sport = run_json({"store", "search", "--db", db, "--filter", R"({"kind": "sport"})"});
  REQUIRE(sport.size() == 1);
  CHECK(sport[0]["key"] == "m2");
  CHECK(run_json({"store", "search", "--db", db, "--limit", "2", "--offset", "3"}).size() == 1);

  CHECK(run_json({"store", "namespaces", "--db", db}) ==
        json{{"users", "ann"}, {"users", "bob"}, {"users", "bob", "memories"}});
  CHECK(run_json({"store", "namespaces", "--db", db, "--suffix", "memories"}) ==
        json{{"users", "bob", "memories"}});
  CHECK(run_json({"store", "namespaces", "--db", db, "--prefix", "users.*", "--max-depth", "2"}) ==
        json::array({json::array({"users", "ann"}), json::array({"users", "bob"})}));
  const auto text = run({"store", "namespaces", "--db", db});
  CHECK(text.out == "users.ann\nusers.bob\nusers.bob.memories\n");

  const auto del =
      run({"store", "delete", "--db", db, "--namespace", "users.ann", "--key", "profile"});
  CHECK(del.out == "deleted users.ann profile\n");
  CHECK(run_json({"store", "namespaces", "--db", db}).size() == 2);
}

TEST_CASE("store: clear errors, nothing changed") {
  sg::test::TempDir dir;
  const std::string db = dir.sub("store");
  CHECK(
      run({"store", "put", "--db", db, "--namespace", "a", "--key", "k", "--value", R"({"v": 1})"})
          .exit_code == 0);
  auto fails = [](std::vector<std::string> args, const std::string& words, int code = 1) {
    const auto r = run(std::move(args));
    CHECK(r.exit_code == code);
    CHECK(r.out.empty());
    CHECK_MESSAGE(r.err.find(words) != std::string::npos, r.err);
  };
  fails({"store", "get", "--db", db, "--namespace", "a", "--key", "nope"},
        "no item 'nope' in namespace 'a'");
  fails({"store", "delete", "--db", db, "--namespace", "a", "--key", "nope"}, "no item 'nope'");
  fails({"store", "put", "--db", db, "--namespace", "langgraph.x", "--key", "k", "--value", "{}"},
        "'langgraph' is reserved");
  fails({"store", "put", "--db", db, "--namespace", "a..b", "--key", "k", "--value", "{}"},
        "label 1 is empty");
  fails({"store", "put", "--db", db, "--namespace", "a", "--key", "k", "--value", "[1]"},
        "must be a JSON object");
  fails({"store", "put", "--db", db, "--namespace", "a", "--key", "k", "--value", "{oops"},
        "--value is not valid JSON");
  fails({"store", "search", "--db", db, "--filter", R"({"v": {"$foo": 1}})"},
        "unknown operator '$foo'");
  fails({"store", "get", "--db", dir.sub("missing"), "--namespace", "a", "--key", "k"},
        "no store database at");
  fails({"store", "get", "--db", db, "--namespace", "a"}, "--key is required", 2);
  {
    auto holder = sg::RocksDbStore::open(db);
    fails({"store", "get", "--db", db, "--namespace", "a", "--key", "k"},
          "is in use by another process");
  }
  const json item = run_json({"store", "get", "--db", db, "--namespace", "a", "--key", "k"});
  CHECK(item["value"] == json{{"v", 1}});
}
