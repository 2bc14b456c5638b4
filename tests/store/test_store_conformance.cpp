// SPDX-License-Identifier: MIT
// One suite for InMemoryStore and RocksDbStore: put/get/delete, namespaces, search with
// filters and paging, list_namespaces, TTL, batch, persistence and bad input.
#include <stategraph/store/memory_store.hpp>
#include <stategraph/store/rocksdb_store.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <fstream>
#include <set>
#include <thread>

#ifdef SG_TEST_POSTGRES
#include "support/saver_factories.hpp"
#endif
#include "support/sanitizers.hpp"
#include "support/temp_dir.hpp"

using nlohmann::json;

namespace {

struct MemoryFactory {
  std::shared_ptr<sg::KvStore> make(sg::TtlConfig ttl = {}) {
    return std::make_shared<sg::InMemoryStore>(ttl);
  }
};

struct RocksFactory {
  sg::test::TempDir dir;
  int n = 0;
  std::shared_ptr<sg::KvStore> make(sg::TtlConfig ttl = {}) {
    return sg::RocksDbStore::open(dir.sub("store" + std::to_string(n++)), {.ttl = ttl});
  }
};

#ifdef SG_TEST_POSTGRES
struct PostgresFactory {
  std::shared_ptr<sg::KvStore> make(sg::TtlConfig ttl = {}) {
    return sg::PostgresStore::open(sg::test::shared_postgres().conninfo(),
                                   {.table = sg::test::fresh_postgres_table("store")}, ttl);
  }
};
#define SG_STORE_FACTORIES MemoryFactory, RocksFactory, PostgresFactory
#else
#define SG_STORE_FACTORIES MemoryFactory, RocksFactory
#endif

std::vector<std::string> keys_of(const std::vector<sg::SearchItem>& hits) {
  std::vector<std::string> out;
  for (const auto& h : hits) out.push_back(h.item.key);
  return out;
}

}  // namespace

TEST_CASE_TEMPLATE("put, get, replace and delete", F, SG_STORE_FACTORIES) {
  F factory;
  auto store = factory.make();
  const sg::Namespace ns{"users", "u1", "memories"};
  CHECK_FALSE(store->get(ns, "m1"));
  store->put(ns, "m1", {{"text", "likes tea"}});
  auto item = store->get(ns, "m1");
  REQUIRE(item);
  CHECK(item->ns == ns);
  CHECK(item->key == "m1");
  CHECK(item->value == json{{"text", "likes tea"}});
  CHECK(item->created_at == item->updated_at);

  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  store->put(ns, "m1", {{"text", "likes green tea"}});
  auto replaced = store->get(ns, "m1");
  REQUIRE(replaced);
  CHECK(replaced->value["text"] == "likes green tea");
  CHECK(replaced->created_at == item->created_at);
  CHECK(replaced->updated_at > item->updated_at);

  CHECK_FALSE(store->get({"users", "u1"}, "m1"));  // namespaces are exact for get
  store->remove(ns, "m1");
  CHECK_FALSE(store->get(ns, "m1"));
  store->remove(ns, "never-there");  // not an error

  const json j = sg::to_json(*replaced);
  CHECK(j["namespace"] == json{"users", "u1", "memories"});
  CHECK(j["created_at"].get<std::string>().size() == 32);
}

TEST_CASE_TEMPLATE("namespace rules on every operation", F, SG_STORE_FACTORIES) {
  F factory;
  auto store = factory.make();
  auto fails = [&](const sg::Namespace& ns, const std::string& words) {
    CAPTURE(sg::join_namespace(ns));
    try {
      store->put(ns, "k", json::object());
      FAIL("put accepted the namespace");
    } catch (const sg::InvalidNamespaceError& e) {
      CHECK(std::string(e.what()).find(words) != std::string::npos);
      CHECK(e.code() == "store.invalid_namespace");
    }
    CHECK_THROWS_AS((void)store->get(ns, "k"), sg::InvalidNamespaceError);
    CHECK_THROWS_AS(store->remove(ns, "k"), sg::InvalidNamespaceError);
  };
  fails({}, "cannot be empty");
  fails({"a", ""}, "label 1 is empty");
  fails({"a", "b.c"}, "'b.c' contains '.'");
  fails({"langgraph", "x"}, "'langgraph' is reserved");
  fails({std::string("a\0b", 3)}, "zero byte");
  CHECK_THROWS_AS((void)store->search({.prefix = {"a."}}), sg::InvalidNamespaceError);
  store->put({"x", "langgraph"}, "k", json::object());  // reserved only at the root
  CHECK(store->list_namespaces() == std::vector<sg::Namespace>{{"x", "langgraph"}});
  CHECK(sg::split_namespace("a.b.c") == sg::Namespace{"a", "b", "c"});
  CHECK(sg::join_namespace({"a", "b"}) == "a.b");
}

TEST_CASE_TEMPLATE("values must be objects, bad input changes nothing", F, SG_STORE_FACTORIES) {
  F factory;
  auto store = factory.make();
  store->put({"a"}, "k", {{"v", 1}});
  CHECK_THROWS_WITH_AS(store->put({"a"}, "k", json::array({1})),
                       doctest::Contains("must be a JSON object, got array"), sg::Error);
  CHECK_THROWS_WITH_AS(store->put({"a"}, "k", {{"v", 2}}, -1.0),
                       doctest::Contains("ttl must be positive"), sg::Error);
  CHECK(store->get({"a"}, "k")->value == json{{"v", 1}});
}

TEST_CASE_TEMPLATE("search: prefix, filters, order and paging", F, SG_STORE_FACTORIES) {
  F factory;
  // Each reading of this clock is 1 ms later: every put has its own updated_at.
  auto ticks = std::make_shared<std::atomic<std::int64_t>>(0);
  auto store = factory.make({.clock = [ticks] {
    return sg::StoreClock::time_point(std::chrono::milliseconds(++*ticks));
  }});
  store->put({"docs", "a"}, "1",
             {{"kind", "note"},
              {"n", 1},
              {"tags", {"x", "y"}},
              {"meta", {{"lang", "en"}, {"score", 0.5}}}});
  store->put({"docs", "a"}, "2", {{"kind", "todo"}, {"n", 5}, {"meta", {{"lang", "fr"}}}});
  store->put({"docs", "b"}, "3", {{"kind", "note"}, {"n", 9}, {"name", "zed"}});
  store->put({"docsx"}, "4", {{"kind", "note"}});  // not under the prefix ("docs")
  store->put({"other"}, "5", {{"kind", "note"}});

  // Most recently updated first.
  CHECK(keys_of(store->search({.prefix = {"docs"}})) == std::vector<std::string>{"3", "2", "1"});
  CHECK(keys_of(store->search({.prefix = {"docs", "a"}})) == std::vector<std::string>{"2", "1"});
  CHECK(store->search({}).size() == 5);
  CHECK_FALSE(store->search({.prefix = {"docs"}}).front().score);

  auto with = [&](json filter) {
    return keys_of(store->search({.prefix = {"docs"}, .filter = std::move(filter)}));
  };
  using V = std::vector<std::string>;
  CHECK(with({{"kind", "note"}}) == V{"3", "1"});
  CHECK(with({{"meta", {{"lang", "en"}}}}) == V{"1"});  // nested object
  CHECK(with({{"meta.lang", "fr"}}) == V{"2"});         // dotted path
  CHECK(with({{"tags", {"x", "y"}}}) == V{"1"});        // list equality
  CHECK(with({{"tags", {"y", "x"}}}) == V{});
  CHECK(with({{"n", {{"$gt", 1}}}}) == V{"3", "2"});
  CHECK(with({{"n", {{"$gte", 1}, {"$lt", 9}}}}) == V{"2", "1"});
  CHECK(with({{"n", {{"$lte", 5}}}}) == V{"2", "1"});
  CHECK(with({{"n", {{"$eq", 5}}}}) == V{"2"});
  CHECK(with({{"n", {{"$ne", 5}}}}) == V{"3", "1"});
  CHECK(with({{"kind", {{"$in", {"todo", "x"}}}}}) == V{"2"});
  CHECK(with({{"kind", {{"$nin", {"todo"}}}}}) == V{"3", "1"});
  CHECK(with({{"name", {{"$ne", "zed"}}}}) == V{"2", "1"});  // missing counts as "not equal"
  CHECK(with({{"name", {{"$gt", "a"}}}}) == V{"3"});         // strings order
  CHECK(with({{"kind", {{"$gt", 1}}}}) == V{});              // kinds that do not order
  CHECK(with({{"meta.score", {{"$lt", 1}}}}) == V{"1"});

  // Paging never comes back short while results remain.
  CHECK(keys_of(store->search({.prefix = {"docs"}, .limit = 2})) == V{"3", "2"});
  CHECK(keys_of(store->search({.prefix = {"docs"}, .limit = 2, .offset = 2})) == V{"1"});
  CHECK(store->search({.prefix = {"docs"}, .limit = 2, .offset = 3}).empty());
  CHECK(keys_of(store->search(
            {.prefix = {"docs"}, .filter = {{"kind", "note"}}, .limit = 1, .offset = 1})) ==
        V{"1"});

  // Unknown operators are errors, even with nothing to match.
  for (const json& bad : {json{{"n", {{"$regex", "x"}}}}, json{{"n", {{"$gt", 1}, {"x", 2}}}},
                          json{{"n", {{"$in", 3}}}}, json::array({1})}) {
    CAPTURE(bad.dump());
    CHECK_THROWS_WITH_AS((void)store->search({.prefix = {"empty"}, .filter = bad}),
                         doctest::Contains("invalid store filter"), sg::Error);
  }
}

TEST_CASE_TEMPLATE("list_namespaces: prefix, suffix, wildcards, depth, paging", F,
                   SG_STORE_FACTORIES) {
  F factory;
  auto store = factory.make();
  for (const sg::Namespace& ns : std::vector<sg::Namespace>{
           {"a", "b", "c"}, {"a", "b", "d"}, {"a", "e"}, {"f", "b", "c"}, {"a"}}) {
    store->put(ns, "k1", json::object());
    store->put(ns, "k2", json::object());
  }
  using L = std::vector<sg::Namespace>;
  CHECK(store->list_namespaces() ==
        L{{"a"}, {"a", "b", "c"}, {"a", "b", "d"}, {"a", "e"}, {"f", "b", "c"}});
  using K = sg::MatchCondition::Kind;
  CHECK(store->list_namespaces({.match = {{K::prefix, {"a", "b"}}}}) ==
        L{{"a", "b", "c"}, {"a", "b", "d"}});
  CHECK(store->list_namespaces({.match = {{K::suffix, {"c"}}}}) ==
        L{{"a", "b", "c"}, {"f", "b", "c"}});
  CHECK(store->list_namespaces({.match = {{K::prefix, {"*", "b"}}}}) ==
        L{{"a", "b", "c"}, {"a", "b", "d"}, {"f", "b", "c"}});
  CHECK(store->list_namespaces({.match = {{K::prefix, {"a"}}, {K::suffix, {"d"}}}}) ==
        L{{"a", "b", "d"}});
  CHECK(store->list_namespaces({.max_depth = 2}) == L{{"a"}, {"a", "b"}, {"a", "e"}, {"f", "b"}});
  CHECK(store->list_namespaces({.max_depth = 1}) == L{{"a"}, {"f"}});
  CHECK(store->list_namespaces({.limit = 2, .offset = 1}) == L{{"a", "b", "c"}, {"a", "b", "d"}});
  store->remove({"a", "e"}, "k1");
  store->remove({"a", "e"}, "k2");
  CHECK(store->list_namespaces({.match = {{K::prefix, {"a", "e"}}}}).empty());
}

TEST_CASE_TEMPLATE("TTL: expiry, refresh on read, sweeping", F, SG_STORE_FACTORIES) {
  F factory;
  // A fake clock: TTLs are minutes, the test must not sleep for them.
  auto micros = std::make_shared<std::atomic<std::int64_t>>(1'700'000'000'000'000);
  auto clock = [micros] {
    return sg::StoreClock::time_point(
        std::chrono::duration_cast<sg::StoreClock::duration>(std::chrono::microseconds(*micros)));
  };
  auto advance = [&](int seconds) { *micros += std::int64_t{seconds} * 1'000'000; };

  auto store = factory.make({.refresh_on_read = true, .clock = clock});
  store->put({"t"}, "short", {{"v", 1}}, 1.0);  // one minute
  store->put({"t"}, "forever", {{"v", 2}});
  advance(40);
  REQUIRE(store->get({"t"}, "short"));  // refreshed: expires 60 s from now
  advance(40);
  CHECK(store->get({"t"}, "short", false));  // alive thanks to the refresh; not refreshed now
  advance(30);
  CHECK_FALSE(store->get({"t"}, "short"));  // expired: never returned
  CHECK(keys_of(store->search({.prefix = {"t"}})) == std::vector<std::string>{"forever"});
  store->put({"t"}, "short", {{"v", 3}});  // a new item: a new created_at
  CHECK(store->get({"t"}, "short")->created_at == clock());
  store->remove({"t"}, "short");

  // Searches refresh what they return.
  store->put({"s"}, "a", json::object(), 1.0);
  advance(50);
  CHECK(store->search({.prefix = {"s"}}).size() == 1);
  advance(50);
  CHECK(store->search({.prefix = {"s"}, .refresh_ttl = false}).size() == 1);
  advance(20);
  CHECK(store->search({.prefix = {"s"}}).empty());
  CHECK(store->list_namespaces() == std::vector<sg::Namespace>{{"t"}});
  CHECK(store->sweep_expired() == 1);
  CHECK(store->sweep_expired() == 0);

  // A default TTL, no refresh on read, and the background sweeper.
  auto defaults = factory.make({.default_ttl = 1.0, .refresh_on_read = false, .clock = clock});
  defaults->put({"d"}, "k", json::object());
  defaults->put({"d"}, "keep", json::object(), 60.0);
  advance(30);
  CHECK(defaults->get({"d"}, "k"));
  advance(31);
  defaults->start_sweeper(std::chrono::milliseconds(5));
  for (int i = 0; i < 500 && defaults->swept_total() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(defaults->swept_total() == 1);
  defaults->stop_sweeper();
  CHECK_FALSE(defaults->get({"d"}, "k"));
  CHECK(defaults->get({"d"}, "keep"));
}

TEST_CASE_TEMPLATE("batch runs operations in order", F, SG_STORE_FACTORIES) {
  F factory;
  auto store = factory.make();
  std::vector<sg::StoreOp> ops;
  ops.emplace_back(sg::PutOp{{"b"}, "k", json{{"v", 1}}, std::nullopt});
  ops.emplace_back(sg::GetOp{{"b"}, "k", std::nullopt});
  ops.emplace_back(sg::SearchOp{.prefix = {"b"}});
  ops.emplace_back(sg::PutOp{{"b"}, "k", std::nullopt, std::nullopt});
  ops.emplace_back(sg::GetOp{{"b"}, "k", std::nullopt});
  ops.emplace_back(sg::ListNamespacesOp{});
  const auto results = store->batch(std::move(ops));
  REQUIRE(results.size() == 6);
  CHECK(std::holds_alternative<std::monostate>(results[0]));
  CHECK(std::get<std::optional<sg::Item>>(results[1])->value == json{{"v", 1}});
  CHECK(std::get<std::vector<sg::SearchItem>>(results[2]).size() == 1);
  CHECK_FALSE(std::get<std::optional<sg::Item>>(results[4]));
  CHECK(std::get<std::vector<sg::Namespace>>(results[5]).empty());
}

TEST_CASE("RocksDbStore: items survive reopening, one process at a time, corruption is named") {
  sg::test::TempDir dir;
  const std::string path = dir.sub("store");
  {
    auto store = sg::RocksDbStore::open(path);
    store->put({"users", "u1"}, "profile", {{"name", "Bob"}});
    try {
      (void)sg::RocksDbStore::open(path);
      FAIL("a second open succeeded");
    } catch (const sg::StoreError& e) {
      CHECK(e.code() == "store.locked");
      CHECK(std::string(e.what()).find("in use") != std::string::npos);
    }
  }
  {
    auto store = sg::RocksDbStore::open(path);
    CHECK(store->get({"users", "u1"}, "profile")->value["name"] == "Bob");
  }
  // Flip bytes of the stored value on disk: the read names the item, nothing is dropped.
  bool corrupted = false;
  for (const auto& entry : std::filesystem::directory_iterator(path)) {
    if (entry.path().extension() != ".log" && entry.path().extension() != ".sst") continue;
    std::fstream f(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const auto at = bytes.find("Bob");
    if (at == std::string::npos) continue;
    f.seekp(static_cast<std::streamoff>(at));
    f.write("Rob", 3);
    corrupted = true;
  }
  REQUIRE(corrupted);
  try {
    auto store = sg::RocksDbStore::open(path);
    (void)store->get({"users", "u1"}, "profile");
    FAIL("the corrupt item was read");
  } catch (const sg::StoreError& e) {
    CHECK(e.code() == "store.corrupt");
  }
  // Overwriting it reads the old record's times first: refused the same way.
  try {
    auto store = sg::RocksDbStore::open(path);
    store->put({"users", "u1"}, "profile", {{"name", "Eve"}});
    FAIL("the corrupt item was overwritten");
  } catch (const sg::StoreError& e) {
    CHECK(e.code() == "store.corrupt");
  }
}

TEST_CASE("texts_at_path and the offline embedder") {
  const json v = {{"text", "hello"},
                  {"n", 3},
                  {"tags", {"a", "b", "c"}},
                  {"notes", {{{"body", "x"}}, {{"body", "y"}}, {{"other", 1}}}}};
  using T = std::vector<std::string>;
  CHECK(sg::texts_at_path(v, "text") == T{"hello"});
  CHECK(sg::texts_at_path(v, "n") == T{"3"});
  CHECK(sg::texts_at_path(v, "tags[0]") == T{"a"});
  CHECK(sg::texts_at_path(v, "tags[-1]") == T{"c"});
  CHECK(sg::texts_at_path(v, "tags[*]") == T{"a", "b", "c"});
  CHECK(sg::texts_at_path(v, "notes[*].body") == T{"x", "y"});
  CHECK(sg::texts_at_path(v, "missing").empty());
  CHECK(sg::texts_at_path(v, "tags[9]").empty());
  CHECK(sg::texts_at_path(v, "$") == T{v.dump()});
  CHECK_THROWS_WITH_AS((void)sg::texts_at_path(v, "tags[x]"), doctest::Contains("bad index"),
                       sg::Error);
  CHECK_THROWS_WITH_AS((void)sg::texts_at_path(v, "tags[0"), doctest::Contains("missing ']'"),
                       sg::Error);

  sg::HashedNgramEmbeddings embed(64);
  const auto a = embed.embed(
      {"I like green tea", "I like green tea", "tea, green: I like!", "quantum chromodynamics"});
  REQUIRE(a.size() == 4);
  CHECK(a[0] == a[1]);  // deterministic
  auto dot = [](const std::vector<float>& x, const std::vector<float>& y) {
    double d = 0;
    for (std::size_t i = 0; i < x.size(); ++i) d += static_cast<double>(x[i]) * y[i];
    return d;
  };
  CHECK(dot(a[0], a[0]) == doctest::Approx(1.0));
  CHECK(dot(a[0], a[2]) > 0.9);  // same words, other order and punctuation
  CHECK(dot(a[0], a[3]) < dot(a[0], a[2]));
  CHECK_THROWS_AS(sg::HashedNgramEmbeddings(0), sg::Error);
}

namespace {

struct IndexedMemory {
  std::shared_ptr<sg::KvStore> make(sg::IndexConfig index) {
    return std::make_shared<sg::InMemoryStore>(sg::TtlConfig{}, std::move(index));
  }
};

struct IndexedRocks {
  sg::test::TempDir dir;
  int n = 0;
  std::string last;
  std::shared_ptr<sg::KvStore> make(sg::IndexConfig index) {
    last = dir.sub("store" + std::to_string(n++));
    return sg::RocksDbStore::open(last, {.index = std::move(index)});
  }
};

sg::IndexConfig text_index(std::size_t exact_limit = 20000) {
  return sg::IndexConfig{std::make_shared<sg::HashedNgramEmbeddings>(128), {"text"}, exact_limit};
}

}  // namespace

TEST_CASE_TEMPLATE("semantic search ranks by similarity and combines with filters", F,
                   IndexedMemory, IndexedRocks) {
  F factory;
  auto store = factory.make(text_index());
  const sg::Namespace ns{"u1", "memories"};
  store->put(ns, "tea", {{"text", "I like green tea in the morning"}, {"kind", "food"}});
  store->put(ns, "hike", {{"text", "Went hiking in the mountains"}, {"kind", "sport"}});
  store->put(ns, "coffee", {{"text", "Coffee is too bitter for me"}, {"kind", "food"}});
  store->put(ns, "plain", {{"kind", "food"}});  // no "text": no vector
  store->batch({sg::PutOp{ns, "skip", json{{"text", "green tea again"}, {"kind", "food"}},
                          std::nullopt, std::vector<std::string>{}}});  // index: none

  auto hits = store->search({.prefix = {"u1"}, .query = "green tea"});
  REQUIRE(hits.size() == 5);
  CHECK(hits[0].item.key == "tea");
  REQUIRE(hits[0].score);
  CHECK(*hits[0].score > *hits[1].score);
  CHECK(hits[1].score);
  CHECK(hits[2].score);
  CHECK_FALSE(hits[3].score);  // items without vectors come last
  CHECK_FALSE(hits[4].score);

  auto food =
      store->search({.prefix = {"u1"}, .filter = {{"kind", "food"}}, .query = "mountain hike"});
  REQUIRE(food.size() == 4);
  CHECK(food[0].score);
  CHECK(std::all_of(food.begin(), food.end(),
                    [](const sg::SearchItem& h) { return h.item.value["kind"] == "food"; }));
  CHECK(store->search({.prefix = {"u1"}, .query = "tea", .limit = 2, .offset = 3}).size() == 2);

  // A replaced value is re-embedded; a deleted one is gone from the index.
  store->put(ns, "hike", {{"text", "green tea ceremony"}, {"kind", "sport"}});
  CHECK(store->search({.prefix = {"u1"}, .query = "tea ceremony", .limit = 1})[0].item.key ==
        "hike");
  store->remove(ns, "hike");
  CHECK(keys_of(store->search({.prefix = {"u1"}, .query = "tea ceremony", .limit = 1})) ==
        std::vector<std::string>{"tea"});

  // A store without an index refuses queries.
  sg::InMemoryStore plain;
  CHECK_THROWS_WITH_AS((void)plain.search({.query = "x"}), doctest::Contains("needs a store with"),
                       sg::Error);
}

TEST_CASE("RocksDbStore: vectors survive reopening") {
  IndexedRocks factory;
  {
    auto store = factory.make(text_index());
    store->put({"a"}, "tea", {{"text", "green tea"}});
    store->put({"a"}, "rock", {{"text", "heavy metal music"}});
  }
  auto store = sg::RocksDbStore::open(factory.last, {.index = text_index()});
  auto hits = store->search({.prefix = {"a"}, .query = "metal"});
  REQUIRE(hits.size() == 2);
  CHECK(hits[0].item.key == "rock");
  CHECK(hits[0].score);
}

TEST_CASE_TEMPLATE("approximate search: recall against exact, and full pages with filters", F,
                   IndexedMemory, IndexedRocks) {
  F factory;
  auto approx = factory.make(text_index(50));  // HNSW above 50 vectors
  auto exact = std::make_shared<sg::InMemoryStore>(sg::TtlConfig{}, text_index());
  const std::vector<std::string> words{"tea",   "coffee", "mountain", "river", "music",
                                       "chess", "garden", "python",   "rust",  "cinema",
                                       "bread", "violin", "soccer",   "ocean", "winter"};
  for (int i = 0; i < 300; ++i) {
    const std::string text = words[static_cast<std::size_t>(i) % words.size()] + " " +
                             words[static_cast<std::size_t>(i * 7 + 3) % words.size()] + " " +
                             words[static_cast<std::size_t>(i * 11 + 5) % words.size()] + " note " +
                             std::to_string(i);
    const json value = {{"text", text}, {"rare", i % 60 == 0}};
    approx->put({"docs"}, "d" + std::to_string(i), value);
    exact->put({"docs"}, "d" + std::to_string(i), value);
  }
  std::size_t agree = 0;
  std::size_t total = 0;
  for (const auto& q : {"tea mountain", "violin music", "rust python", "ocean winter soccer"}) {
    const auto a = keys_of(approx->search({.prefix = {"docs"}, .query = q}));
    const auto e = keys_of(exact->search({.prefix = {"docs"}, .query = q}));
    REQUIRE(a.size() == 10);
    for (const auto& k : e) agree += std::count(a.begin(), a.end(), k) > 0 ? 1 : 0;
    total += e.size();
  }
  CHECK(static_cast<double>(agree) / static_cast<double>(total) >= 0.9);
  // Only 5 items match the filter: all 5 come back, however far the approximate ranking is.
  const auto rare =
      approx->search({.prefix = {"docs"}, .filter = {{"rare", true}}, .query = "tea", .limit = 10});
  CHECK(rare.size() == 5);
}

TEST_CASE_TEMPLATE(
    "approximate search: the index is built in the background, writes meanwhile "
    "are in it, the first search after reopening is exact at once",
    F, IndexedMemory, IndexedRocks) {
  F factory;
  auto approx = factory.make(text_index(50));
  auto exact = std::make_shared<sg::InMemoryStore>(sg::TtlConfig{}, text_index());
  const auto put = [&](const std::string& key, const std::string& text) {
    approx->put({"docs"}, key, {{"text", text}});
    exact->put({"docs"}, key, {{"text", text}});
  };
  for (int i = 0; i < 400; ++i) {
    put("d" + std::to_string(i),
        "note " + std::to_string(i) + " about tea and rivers " + std::to_string(i % 17));
  }
  // The first search starts the build and is answered exactly.
  const auto first = approx->search({.prefix = {"docs"}, .query = "tea rivers 5"});
  CHECK(keys_of(first) == keys_of(exact->search({.prefix = {"docs"}, .query = "tea rivers 5"})));
  // Writes while it builds: new items, replaced ones, removed ones.
  for (int i = 0; i < 30; ++i) put("z" + std::to_string(i), "zebra crossing " + std::to_string(i));
  for (int i = 0; i < 20; ++i) put("d" + std::to_string(i), "zebra replaced " + std::to_string(i));
  for (int i = 20; i < 40; ++i) {
    approx->remove({"docs"}, "d" + std::to_string(i));
    exact->remove({"docs"}, "d" + std::to_string(i));
  }
  approx->wait_for_index();
  // The index holds them all: what the exact store finds for "zebra", and nothing removed.
  const auto zebra = keys_of(approx->search({.prefix = {"docs"}, .query = "zebra", .limit = 50}));
  const auto want = keys_of(exact->search({.prefix = {"docs"}, .query = "zebra", .limit = 50}));
  CHECK(std::set<std::string>(zebra.begin(), zebra.end()) ==
        std::set<std::string>(want.begin(), want.end()));
  for (int i = 20; i < 40; ++i) {
    const auto hits = keys_of(approx->search(
        {.prefix = {"docs"}, .query = "note " + std::to_string(i) + " tea rivers", .limit = 60}));
    CHECK(std::count(hits.begin(), hits.end(), "d" + std::to_string(i)) == 0);
  }
  // Under ThreadSanitizer the reopening is left out: its deadlock detector reports a lock-order
  // inversion in the main thread alone, with every stack lost, once an indexed RocksDbStore is
  // reopened in the same process (the code before the background build did too; race
  // detection, detect_deadlocks=0, finds nothing here). The other builds run it.
  if constexpr (std::is_same_v<F, IndexedRocks> && !sg::test::kThreadSanitizer) {
    approx.reset();
    // Reopened: the index is built in the background; the first search does not wait for it.
    auto reopened = sg::RocksDbStore::open(factory.last, {.index = text_index(50)});
    const auto again = reopened->search({.prefix = {"docs"}, .query = "zebra", .limit = 50});
    const auto again_keys = keys_of(again);
    CHECK(std::set<std::string>(again_keys.begin(), again_keys.end()) ==
          std::set<std::string>(want.begin(), want.end()));
    reopened->wait_for_index();
  }
}

TEST_CASE_TEMPLATE("many threads put, search and sweep at once", F, IndexedMemory, IndexedRocks) {
  F factory;
  auto store = factory.make(text_index(100));  // the HNSW index comes into play
  constexpr int kWriters = 3;
  constexpr int kItems = 80;
  std::atomic<int> running{kWriters};
  std::atomic<int> searches{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      const sg::Namespace ns{"w" + std::to_string(w)};
      for (int i = 0; i < kItems; ++i) {
        store->put(ns, "k" + std::to_string(i), {{"text", "item " + std::to_string(i) + " tea"}},
                   i % 4 == 0 ? std::optional<double>(1e-9) : std::nullopt);  // some expire
        if (i % 10 == 0) store->remove(ns, "k" + std::to_string(i / 2));
        // The reader has searched while writers are mid-run before they go on.
        while (i == 1 && searches.load() == 0) std::this_thread::yield();
      }
      --running;
    });
  }
  threads.emplace_back([&] {
    while (running.load() > 0) {
      const auto hits = store->search({.query = "tea item", .limit = 5});
      for (const auto& hit : hits) CHECK(hit.item.value.contains("text"));
      if (!hits.empty()) ++searches;
      (void)store->list_namespaces();
      (void)store->sweep_expired();
    }
  });
  for (auto& t : threads) t.join();
  CHECK(searches.load() > 0);
  (void)store->sweep_expired();
  for (int w = 0; w < kWriters; ++w) {
    const auto all = store->search({.prefix = {"w" + std::to_string(w)}, .limit = 1000});
    for (const auto& hit : all) {
      const int i = std::stoi(hit.item.key.substr(1));
      CHECK(i % 4 != 0);  // expired items are gone
    }
    CHECK(store->search({.prefix = {"w" + std::to_string(w)}, .query = "tea", .limit = 1000})
              .size() == all.size());
  }
}

TEST_CASE("an embedding function, its dims checked, a failing embedder changes nothing") {
  int calls = 0;
  auto fn =
      std::make_shared<sg::FunctionEmbeddings>(2, [&calls](const std::vector<std::string>& texts) {
        ++calls;
        std::vector<std::vector<float>> out;
        for (const auto& t : texts) {
          if (t == "boom") throw std::runtime_error("embedding service down");
          out.push_back({t.find("tea") != std::string::npos ? 1.0f : 0.0f, 1.0f});
        }
        return out;
      });
  sg::InMemoryStore store({}, sg::IndexConfig{fn, {"text"}, 100, 2});
  store.put({"a"}, "tea", {{"text", "tea time"}});
  store.put({"a"}, "other", {{"text", "nothing"}});
  store.put({"a"}, "both", {{"text", "x"}, {"title", "tea"}}, std::nullopt,
            std::vector<std::string>{"text", "title"});  // per-put paths
  CHECK(calls == 3);
  const auto hits = store.search({.prefix = {"a"}, .query = "tea"});
  REQUIRE(hits.size() == 3);
  CHECK(*hits[0].score == doctest::Approx(1.0));
  CHECK(*hits[1].score == doctest::Approx(1.0));
  CHECK(*hits[2].score < 0.8);
  CHECK_THROWS_WITH_AS(store.put({"a"}, "tea", {{"text", "boom"}}),
                       doctest::Contains("embedding service down"), std::runtime_error);
  CHECK(store.get({"a"}, "tea")->value["text"] == "tea time");  // the old value stays
  CHECK_THROWS_WITH_AS(sg::InMemoryStore({}, sg::IndexConfig{fn, {"text"}, 100, 3}),
                       doctest::Contains("dims 3 but the embeddings make 2"), sg::Error);
}
