// SPDX-License-Identifier: MIT
// One conformance suite for both savers: every case of LangGraph's checkpoint conformance suite
// (put, put_writes, get_tuple, list, delete_thread, copy_thread, prune), plus incremental
// message lists.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/core/message.hpp>
#include <stategraph/core/uuid.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <memory>
#include <set>

#include "support/plain_saver.hpp"
#include "support/saver_factories.hpp"
#include "support/temp_dir.hpp"

using nlohmann::json;

namespace {

using sg::test::MemoryFactory;
using sg::test::RocksFactory;

sg::Checkpoint checkpoint(json values = json::object(), sg::ChannelVersions versions = {}) {
  sg::Checkpoint c;
  c.v = 1;
  c.id = sg::new_checkpoint_id(-1);
  c.ts = sg::iso_timestamp_now();
  c.channel_values = std::move(values);
  c.channel_versions = std::move(versions);
  return c;
}

json metadata(const std::string& source = "loop", int step = 0, json extra = json::object()) {
  json m{{"source", source}, {"step", step}, {"parents", json::object()}};
  m.update(extra);
  return m;
}

/// A kept range [from, to) of a ListDelta's base, and a new item (the CBOR of `value`).
sg::ListPiece kept(std::uint64_t from, std::uint64_t to) {
  return {from, to, {}};
}
sg::ListPiece item(const json& value) {
  const auto cbor = json::to_cbor(value);
  return {0, 0, std::string(cbor.begin(), cbor.end())};
}

/// Bytes from numbers.
std::string raw(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

/// put_all of one checkpoint whose "messages" channel is `list`.
sg::CheckpointConfig put_list(sg::Checkpointer& saver, const sg::CheckpointConfig& parent,
                              const sg::Checkpoint& cp, const json& meta,
                              const sg::ChannelVersions& new_versions, sg::ListDelta list,
                              std::vector<sg::TaskWrites> writes = {}) {
  sg::CheckpointPut put{parent, cp, meta, new_versions, std::move(writes), {}};
  put.lists.emplace("messages", std::move(list));
  return saver.put_all({std::move(put)}).front();
}

sg::CheckpointConfig config(const std::string& thread, const std::string& ns = "",
                            const std::string& id = "") {
  return sg::CheckpointConfig{thread, ns, id};
}

std::vector<std::string> ids_of(const std::vector<sg::CheckpointTuple>& tuples) {
  std::vector<std::string> out;
  for (const auto& t : tuples) out.push_back(t.config.checkpoint_id);
  return out;
}

sg::ListOptions in_thread(const std::string& thread, const std::string& ns = "") {
  sg::ListOptions o;
  o.thread_id = thread;
  o.checkpoint_ns = ns;
  return o;
}

std::size_t count_writes(const sg::CheckpointTuple& t, const std::string& task,
                         const std::string& channel) {
  return static_cast<std::size_t>(
      std::count_if(t.pending_writes.begin(), t.pending_writes.end(),
                    [&](const auto& w) { return w.task_id == task && w.channel == channel; }));
}

/// Four chained checkpoints: steps 0..3, sources input, loop, input, loop.
std::vector<std::string> setup_list(sg::Checkpointer& saver, const std::string& tid) {
  std::vector<std::string> ids;
  sg::CheckpointConfig parent = config(tid);
  for (int i = 0; i < 4; ++i) {
    auto c = checkpoint();
    parent = saver.put(parent, c, metadata(i % 2 == 0 ? "input" : "loop", i), {});
    ids.push_back(c.id);
  }
  return ids;
}

/// n chained checkpoints per namespace with channel "step" = i.
std::vector<sg::CheckpointConfig> setup_source(sg::Checkpointer& saver, const std::string& tid,
                                               int n,
                                               const std::vector<std::string>& namespaces = {""}) {
  std::vector<sg::CheckpointConfig> out;
  for (const auto& ns : namespaces) {
    sg::CheckpointConfig parent = config(tid, ns);
    for (int i = 0; i < n; ++i) {
      auto c = checkpoint({{"step", i}}, {{"step", 1}});
      parent = saver.put(parent, c, metadata("loop", i), {{"step", 1}});
      out.push_back(parent);
    }
  }
  return out;
}

}  // namespace

TEST_CASE_TEMPLATE("put", F, SG_SAVER_FACTORIES) {
  F factory;
  auto saver = factory.make();
  const std::string tid = sg::new_uuid4();

  SUBCASE("returns config and round-trips") {
    auto c = checkpoint({{"msg", "hello"}}, {{"msg", 1}});
    const auto stored = saver->put(config(tid), c, metadata("input", -1), {{"msg", 1}});
    CHECK(stored == config(tid, "", c.id));
    auto t = saver->get_tuple(stored);
    REQUIRE(t);
    CHECK(t->checkpoint.id == c.id);
    CHECK(t->checkpoint.channel_values == json{{"msg", "hello"}});
    CHECK(t->metadata["source"] == "input");
    CHECK(t->metadata["step"] == -1);
  }
  SUBCASE("every JSON kind reads back equal, in a record, in a blob and in metadata") {
    const json kinds{{"null", nullptr},
                     {"true", true},
                     {"false", false},
                     {"zero", 0},
                     {"small", 23},
                     {"byte", 24},
                     {"negative", -1},
                     {"min", std::numeric_limits<std::int64_t>::min()},
                     {"max_unsigned", std::numeric_limits<std::uint64_t>::max()},
                     {"float32_exact", 1.5},
                     {"float64", 0.1},
                     {"huge", 1e300},
                     {"negative_zero", -0.0},
                     {"text", "caf\xC3\xA9"},
                     {"empty_text", ""},
                     {"array", {1, "two", nullptr, {3.25}}},
                     {"empty_array", json::array()},
                     {"object", {{"nested", {{"deep", false}}}}},
                     {"empty_object", json::object()}};
    const json big{{"padding", std::string(400, 'x')}, {"kinds", kinds}};
    auto c = checkpoint({{"small", kinds}, {"big", big}}, {{"small", 1}, {"big", 1}});
    const auto stored = saver->put(config(tid), c, metadata("loop", 0, {{"kinds", kinds}}),
                                   {{"small", 1}, {"big", 1}});
    auto t = saver->get_tuple(stored);
    REQUIRE(t);
    CHECK(t->checkpoint.channel_values["small"] == kinds);
    CHECK(t->checkpoint.channel_values["big"] == big);
    CHECK(t->metadata["kinds"] == kinds);
    const json& small = t->checkpoint.channel_values["small"];
    CHECK(std::signbit(small["negative_zero"].get<double>()));
    CHECK(small["max_unsigned"].get<std::uint64_t>() == std::numeric_limits<std::uint64_t>::max());
  }
  SUBCASE("preserves values, versions, versions_seen, metadata, run_id") {
    auto c = checkpoint({{"str_val", "hello"},
                         {"int_val", 42},
                         {"list_val", {1, 2, 3}},
                         {"dict_val", {{"nested", true}}}},
                        {{"str_val", 1}, {"int_val", 1}, {"list_val", 1}, {"dict_val", 2}});
    c.versions_seen = {{"node1", {{"ch_a", 1}, {"ch_b", 2}}}, {"node2", {{"ch_a", 3}}}};
    const json nested{{"profile",
                       {{"name", "alice"},
                        {"tags", {"admin", "rag"}},
                        {"empty_dict", json::object()},
                        {"empty_list", json::array()}}},
                      {"metrics", {{{"step", 1}, {"score", 0.95}}}}};
    const std::string run_id = sg::new_uuid4();
    const auto stored = saver->put(
        config(tid), c,
        metadata("loop", 3, {{"custom_key", "custom_value"}, {"user", nested}, {"run_id", run_id}}),
        c.channel_versions);
    auto t = saver->get_tuple(stored);
    REQUIRE(t);
    CHECK(t->checkpoint.channel_values == c.channel_values);
    CHECK(t->checkpoint.channel_versions == c.channel_versions);
    CHECK(t->checkpoint.versions_seen == c.versions_seen);
    CHECK(t->checkpoint.v == 1);
    CHECK_FALSE(t->checkpoint.ts.empty());
    CHECK(t->metadata["step"] == 3);
    CHECK(t->metadata["custom_key"] == "custom_value");
    CHECK(t->metadata["user"] == nested);
    CHECK(t->metadata["run_id"] == run_id);
  }
  SUBCASE("root, child and default namespaces") {
    auto root = saver->put(config(tid), checkpoint(), metadata(), {});
    auto child = saver->put(config(tid, "child:abc"), checkpoint(), metadata(), {});
    CHECK(saver->get_tuple(root)->config.checkpoint_ns == "");
    CHECK(saver->get_tuple(child)->config.checkpoint_ns == "child:abc");
    CHECK(saver->get_tuple(config(tid))->config.checkpoint_id == root.checkpoint_id);
  }
  SUBCASE("multiple checkpoints of a thread, threads isolated, parent config") {
    std::vector<std::string> ids;
    sg::CheckpointConfig parent = config(tid);
    for (int i = 0; i < 3; ++i) {
      auto c = checkpoint();
      parent = saver->put(parent, c, metadata("loop", i), {});
      ids.push_back(c.id);
    }
    for (const auto& id : ids) CHECK(saver->get_tuple(config(tid, "", id))->checkpoint.id == id);
    CHECK_FALSE(saver->get_tuple(config(tid, "", ids[0]))->parent_config);
    CHECK(saver->get_tuple(config(tid, "", ids[2]))->parent_config->checkpoint_id == ids[1]);

    const std::string other = sg::new_uuid4();
    saver->put(config(other), checkpoint({{"x", "thread2"}}, {{"x", 1}}), metadata(), {{"x", 1}});
    saver->put(config(tid), checkpoint({{"x", "thread1"}}, {{"x", 1}}), metadata(), {{"x", 1}});
    CHECK(saver->get_tuple(config(other))->checkpoint.channel_values["x"] == "thread2");
    CHECK(saver->get_tuple(config(tid))->checkpoint.channel_values["x"] == "thread1");
  }
  SUBCASE("incremental channel update, new channel, removed channel") {
    auto c1 = checkpoint({{"a", "v1"}, {"b", "v2"}}, {{"a", 1}, {"b", 1}});
    const auto s1 = saver->put(config(tid), c1, metadata(), {{"a", 1}, {"b", 1}});
    auto c2 = checkpoint({{"a", "v1_updated"}, {"b", "v2"}}, {{"a", 2}, {"b", 1}});
    const auto s2 = saver->put(s1, c2, metadata(), {{"a", 2}});
    CHECK(saver->get_tuple(s2)->checkpoint.channel_values ==
          json{{"a", "v1_updated"}, {"b", "v2"}});
    CHECK(saver->get_tuple(s1)->checkpoint.channel_values == json{{"a", "v1"}, {"b", "v2"}});

    auto c3 = checkpoint({{"a", "v1_updated"}, {"b", "v2"}, {"c", "new_channel"}},
                         {{"a", 2}, {"b", 1}, {"c", 1}});
    const auto s3 = saver->put(s2, c3, metadata(), {{"c", 1}});
    CHECK(saver->get_tuple(s3)->checkpoint.channel_values["c"] == "new_channel");

    auto c4 = checkpoint({{"a", "v3"}}, {{"a", 3}});
    const auto s4 = saver->put(s3, c4, metadata(), {{"a", 3}});
    CHECK(saver->get_tuple(s4)->checkpoint.channel_values == json{{"a", "v3"}});
  }
  SUBCASE("bad configs are errors") {
    CHECK_THROWS_AS(saver->put(config(""), checkpoint(), metadata(), {}), sg::CheckpointError);
    auto c = checkpoint();
    c.id.clear();
    CHECK_THROWS_AS(saver->put(config(tid), c, metadata(), {}), sg::CheckpointError);
    CHECK_THROWS_AS(saver->put(config(std::string("a\0b", 3)), checkpoint(), metadata(), {}),
                    sg::CheckpointError);
  }
}

TEST_CASE_TEMPLATE("ids and timestamps of any form read back exactly", F, SG_SAVER_FACTORIES) {
  // Records store canonical UUIDs and timestamps compactly; anything else is kept as given.
  F factory;
  auto saver = factory.make();
  const std::vector<std::string> stamps{sg::iso_timestamp_now(),
                                        "1969-12-31T23:59:59.999999+00:00",
                                        "2024-02-29T00:00:00.000000+00:00",
                                        "2024-02-30T00:00:00.000000+00:00",  // not a date
                                        "2024-01-01T00:00:00Z",
                                        "2024-01-01T00:00:00.000000+02:00",
                                        ""};
  const std::vector<std::string> parents{"", "1F0C2A3B-0000-6000-8000-000000000000",
                                         "1f0c2a3b-0000-6000-8000-00000000000g", "p1",
                                         "1f0c2a3b-0000-6000-8000-000000000000"};
  int n = 0;
  for (const auto& ts : stamps) {
    for (const auto& parent : parents) {
      CAPTURE(ts);
      CAPTURE(parent);
      auto c = checkpoint();
      c.ts = ts;
      const std::string tid = "t" + std::to_string(n++);
      const auto stored = saver->put(config(tid, "", parent), c, metadata(), {});
      const auto t = saver->get_tuple(stored);
      REQUIRE(t);
      CHECK(t->checkpoint.ts == ts);
      CHECK(t->checkpoint.id == c.id);
      if (parent.empty()) {
        CHECK_FALSE(t->parent_config);
      } else {
        REQUIRE(t->parent_config);
        CHECK(t->parent_config->checkpoint_id == parent);
      }
    }
  }
}

TEST_CASE_TEMPLATE("versions_seen and run ids of any form read back exactly", F,
                   SG_SAVER_FACTORIES) {
  // Records store a node's versions_seen of only its own trigger, and canonical run ids,
  // compactly; anything else is kept as given.
  F factory;
  auto saver = factory.make();
  auto c = checkpoint();
  c.versions_seen = {{"agent", {{"branch:to:agent", 7}}},
                     {"tools", {{"branch:to:agent", 3}}},
                     {"join", {{"branch:to:join", 4}, {"join:a+b:join", 4}}},
                     {"idle", {}},
                     {"x", {{"branch:to:xx", 1}}},
                     {"", {{"branch:to:", 2}}},
                     {"r\u00e9sum\u00e9", {{"branch:to:r\u00e9sum\u00e9", 9}}}};
  const std::vector<json> run_ids{"1f0c2a3b-0000-4000-8000-000000000000",
                                  "1F0C2A3B-0000-4000-8000-000000000000",
                                  "run-1",
                                  "",
                                  42,
                                  nullptr};
  int n = 0;
  for (const auto& run_id : run_ids) {
    CAPTURE(run_id.dump());
    const std::string tid = "vs" + std::to_string(n++);
    const json meta = metadata("loop", 1, {{"run_id", run_id}, {"z", "last"}});
    const auto stored = saver->put(config(tid), c, meta, {});
    const auto t = saver->get_tuple(stored);
    REQUIRE(t);
    CHECK(t->checkpoint.versions_seen == c.versions_seen);
    CHECK(t->metadata == meta);
    sg::ListOptions filter = in_thread(tid);
    filter.filter = {{"run_id", run_id}};
    CHECK(saver->list(filter).size() == 1);
  }
}

TEST_CASE_TEMPLATE("put_writes", F, SG_SAVER_FACTORIES) {
  F factory;
  auto saver = factory.make();
  const std::string tid = sg::new_uuid4();
  const auto stored = saver->put(config(tid), checkpoint(), metadata(), {});
  const std::string task = sg::new_uuid4();

  SUBCASE("basic, several writes, several tasks, values") {
    saver->put_writes(stored, {{"channel1", "value1"}}, task);
    auto t = saver->get_tuple(stored);
    REQUIRE(t->pending_writes.size() == 1);
    CHECK(t->pending_writes[0] == sg::PendingWrite{task, "channel1", "value1"});

    const std::string t2 = sg::new_uuid4();
    saver->put_writes(stored, {{"ch1", "v1"}, {"ch2", "v2"}, {"ch3", json{{"data", 123}}}}, t2,
                      "a:b:c");
    t = saver->get_tuple(stored);
    CHECK(t->pending_writes.size() == 4);
    CHECK(count_writes(*t, t2, "ch1") == 1);
    CHECK(count_writes(*t, t2, "ch3") == 1);
    for (const auto& w : t->pending_writes) {
      if (w.channel == "ch3") CHECK(w.value == json{{"data", 123}});
    }
  }
  SUBCASE("idempotent: a replayed write is not duplicated") {
    saver->put_writes(stored, {{"ch", "val"}}, task);
    saver->put_writes(stored, {{"ch", "changed"}}, task);
    auto t = saver->get_tuple(stored);
    REQUIRE(t->pending_writes.size() == 1);
    CHECK(t->pending_writes[0].value == "val");
  }
  SUBCASE("special channels upsert") {
    saver->put_writes(
        stored,
        {{"__error__", "something went wrong"}, {"__interrupt__", {{"reason", "human_input"}}}},
        task);
    saver->put_writes(stored, {{"__error__", "second error"}}, task);
    auto t = saver->get_tuple(stored);
    CHECK(count_writes(*t, task, "__error__") == 1);
    CHECK(count_writes(*t, task, "__interrupt__") == 1);
    for (const auto& w : t->pending_writes) {
      if (w.channel == "__error__") CHECK(w.value == "second error");
      if (w.channel == "__interrupt__") CHECK(w.value == json{{"reason", "human_input"}});
    }
  }
  SUBCASE("across namespaces, cleared on the next checkpoint") {
    const auto child = saver->put(config(tid, "child:1"), checkpoint(), metadata(), {});
    saver->put_writes(stored, {{"ch", "root_val"}}, task);
    saver->put_writes(child, {{"ch", "child_val"}}, task);
    CHECK(saver->get_tuple(stored)->pending_writes.at(0).value == "root_val");
    CHECK(saver->get_tuple(child)->pending_writes.at(0).value == "child_val");
    const auto next = saver->put(stored, checkpoint(), metadata(), {});
    CHECK(saver->get_tuple(next)->pending_writes.empty());
  }
  SUBCASE("bad configs are errors") {
    CHECK_THROWS_AS(saver->put_writes(config(""), {{"ch", 1}}, task), sg::CheckpointError);
    CHECK_THROWS_AS(saver->put_writes(config(tid), {{"ch", 1}}, task), sg::CheckpointError);
  }
}

TEST_CASE_TEMPLATE("get_tuple", F, SG_SAVER_FACTORIES) {
  F factory;
  auto saver = factory.make();
  const std::string tid = sg::new_uuid4();
  CHECK_FALSE(saver->get_tuple(config(sg::new_uuid4())));
  std::vector<std::string> ids;
  sg::CheckpointConfig parent = config(tid);
  for (int i = 0; i < 3; ++i) {
    auto c = checkpoint({{"k", "v" + std::to_string(i)}}, {{"k", i + 1}});
    parent = saver->put(parent, c, metadata("loop", i), {{"k", i + 1}});
    ids.push_back(c.id);
  }
  auto latest = saver->get_tuple(config(tid));
  REQUIRE(latest);
  CHECK(latest->checkpoint.id == ids[2]);
  CHECK(latest->metadata["step"] == 2);
  CHECK(latest->config == config(tid, "", ids[2]));
  CHECK(latest->parent_config == config(tid, "", ids[1]));
  CHECK(latest->checkpoint.channel_values == json{{"k", "v2"}});
  CHECK(saver->get_tuple(config(tid, "", ids[0]))->checkpoint.channel_values == json{{"k", "v0"}});
  CHECK_FALSE(saver->get_tuple(config(tid, "", sg::new_uuid4())));
  CHECK_FALSE(saver->get_tuple(config(tid, "child:1")));

  const std::string task = sg::new_uuid4();
  saver->put_writes(config(tid, "", ids[2]), {{"ch", "val"}}, task);
  CHECK(saver->get_tuple(config(tid))->pending_writes ==
        std::vector<sg::PendingWrite>{{task, "ch", "val"}});

  const auto child = saver->put(config(tid, "child:1"), checkpoint(), metadata(), {});
  CHECK(saver->get_tuple(config(tid))->checkpoint.id == ids[2]);
  CHECK(saver->get_tuple(config(tid, "child:1"))->checkpoint.id == child.checkpoint_id);
}

TEST_CASE_TEMPLATE("list", F, SG_SAVER_FACTORIES) {
  F factory;
  auto saver = factory.make();
  const std::string tid = sg::new_uuid4();
  const auto ids = setup_list(*saver, tid);
  const std::vector<std::string> newest_first(ids.rbegin(), ids.rend());

  CHECK(ids_of(saver->list(in_thread(tid))) == newest_first);
  CHECK(saver->list(in_thread(sg::new_uuid4())).empty());

  auto filtered = in_thread(tid);
  filtered.filter = {{"source", "input"}};
  CHECK(ids_of(saver->list(filtered)) == std::vector<std::string>{ids[2], ids[0]});
  filtered.filter = {{"step", 1}};
  CHECK(ids_of(saver->list(filtered)) == std::vector<std::string>{ids[1]});
  filtered.filter = {{"source", "loop"}};
  CHECK(saver->list(filtered).size() == 2);
  filtered.filter = {{"source", "update"}, {"step", 99}};
  CHECK(saver->list(filtered).empty());

  auto before = in_thread(tid);
  before.before = ids[2];
  CHECK(ids_of(saver->list(before)) == std::vector<std::string>{ids[1], ids[0]});
  before.limit = 1;
  before.before = ids[3];
  CHECK(ids_of(saver->list(before)) == std::vector<std::string>{ids[2]});
  auto limited = in_thread(tid);
  limited.limit = 2;
  CHECK(saver->list(limited).size() == 2);

  SUBCASE("multiple keys, custom keys") {
    const std::string t2 = sg::new_uuid4();
    saver->put(config(t2), checkpoint(), metadata("input", 1), {});
    saver->put(config(t2), checkpoint(), metadata("loop", 1), {});
    saver->put(config(t2), checkpoint(),
               metadata("input", 2, {{"score", 42}, {"run_id", "run-abc"}}), {});
    auto o = in_thread(t2);
    o.filter = {{"source", "input"}, {"step", 2}};
    auto found = saver->list(o);
    REQUIRE(found.size() == 1);
    CHECK(found[0].metadata["run_id"] == "run-abc");
    o.filter = {{"score", 42}};
    CHECK(saver->list(o).size() == 1);
  }
  SUBCASE("namespaces, all namespaces, writes included, values optional") {
    saver->put(config(tid, "child:1"), checkpoint(), metadata(), {});
    saver->put(config(tid, "child:2"), checkpoint(), metadata(), {});
    CHECK(saver->list(in_thread(tid)).size() == 4);
    CHECK(saver->list(in_thread(tid, "child:1")).size() == 1);
    sg::ListOptions all;
    all.thread_id = tid;
    const auto everything = saver->list(all);
    CHECK(everything.size() == 6);
    CHECK(std::is_sorted(everything.begin(), everything.end(), [](const auto& a, const auto& b) {
      return a.config.checkpoint_id > b.config.checkpoint_id;
    }));

    saver->put_writes(config(tid, "", ids[3]), {{"ch", "val"}}, "task-1");
    auto t = saver->list(in_thread(tid));
    CHECK(t[0].pending_writes == std::vector<sg::PendingWrite>{{"task-1", "ch", "val"}});
    auto light = in_thread(tid);
    light.include_values = false;
    CHECK(saver->list(light).size() == 4);
  }
  CHECK(std::find(saver->threads().begin(), saver->threads().end(), tid) != saver->threads().end());
}

TEST_CASE_TEMPLATE("delete_thread", F, SG_SAVER_FACTORIES) {
  F factory;
  auto saver = factory.make();
  const std::string tid = sg::new_uuid4();
  const std::string other = sg::new_uuid4();
  const auto ids = setup_list(*saver, tid);
  saver->put(config(tid, "child:1"), checkpoint(), metadata(), {});
  saver->put_writes(config(tid, "", ids[3]), {{"ch", "val"}}, "task");
  saver->put(config(other), checkpoint(), metadata(), {});
  saver->delete_thread(tid);
  CHECK_FALSE(saver->get_tuple(config(tid)));
  CHECK_FALSE(saver->get_tuple(config(tid, "child:1")));
  CHECK(saver->list(in_thread(tid)).empty());
  CHECK(saver->get_tuple(config(other)));
  CHECK_NOTHROW(saver->delete_thread(sg::new_uuid4()));
  CHECK(saver->threads() == std::vector<std::string>{other});
}

TEST_CASE_TEMPLATE("copy_thread", F, SG_SAVER_FACTORIES) {
  F factory;
  auto saver = factory.make();
  const std::string src = sg::new_uuid4();
  const std::string dst = sg::new_uuid4();
  const auto configs = setup_source(*saver, src, 4, {"", "child:1"});
  saver->put_writes(configs[3], {{"ch", "write_val"}}, "task");
  const auto before = ids_of(saver->list(in_thread(src)));
  saver->copy_thread(src, dst);
  CHECK(ids_of(saver->list(in_thread(dst))) == before);
  CHECK(ids_of(saver->list(in_thread(src))) == before);
  CHECK(saver->list(in_thread(dst, "child:1")).size() == 4);
  const auto copied = saver->get_tuple(config(dst));
  REQUIRE(copied);
  CHECK(copied->pending_writes == std::vector<sg::PendingWrite>{{"task", "ch", "write_val"}});
  auto src_list = saver->list(in_thread(src));
  auto dst_list = saver->list(in_thread(dst));
  for (std::size_t i = 0; i < src_list.size(); ++i) {
    CHECK(src_list[i].checkpoint.channel_values == dst_list[i].checkpoint.channel_values);
    CHECK(src_list[i].metadata == dst_list[i].metadata);
  }
  const std::string nowhere = sg::new_uuid4();
  saver->copy_thread(sg::new_uuid4(), nowhere);
  CHECK(saver->list(in_thread(nowhere)).empty());
}

TEST_CASE_TEMPLATE("prune", F, SG_SAVER_FACTORIES) {
  F factory;
  auto saver = factory.make();
  const std::string tid = sg::new_uuid4();
  const std::string other = sg::new_uuid4();
  const auto configs = setup_source(*saver, tid, 4, {"", "child:1"});
  const auto other_configs = setup_source(*saver, other, 2);
  saver->put_writes(configs[3], {{"ch", "val"}}, "task");
  saver->prune({tid}, sg::PruneStrategy::keep_latest);
  CHECK(ids_of(saver->list(in_thread(tid))) == std::vector<std::string>{configs[3].checkpoint_id});
  CHECK(ids_of(saver->list(in_thread(tid, "child:1"))) ==
        std::vector<std::string>{configs[7].checkpoint_id});
  const auto kept = saver->get_tuple(config(tid));
  CHECK(kept->pending_writes.size() == 1);
  CHECK(kept->checkpoint.channel_values == json{{"step", 3}});
  CHECK(saver->list(in_thread(other)).size() == 2);
  CHECK_NOTHROW(saver->prune({}, sg::PruneStrategy::keep_latest));
  CHECK_NOTHROW(saver->prune({sg::new_uuid4()}, sg::PruneStrategy::keep_latest));
  saver->prune({tid}, sg::PruneStrategy::delete_all);
  CHECK(saver->list(in_thread(tid)).empty());
  CHECK(saver->list(in_thread(other)).size() == 2);
}

TEST_CASE_TEMPLATE("prune_idle_threads: threads idle longer than the TTL", F, SG_SAVER_FACTORIES) {
  F factory;
  auto saver = factory.make();
  const std::string busy = sg::new_uuid4();
  const std::string one = sg::new_uuid4();
  (void)setup_source(*saver, busy, 4, {"", "child:1"});
  (void)setup_source(*saver, one, 1);
  const auto now = std::chrono::system_clock::now();
  // Written just now: not idle for an hour.
  CHECK(sg::prune_idle_threads(*saver, std::chrono::hours(1), sg::PruneStrategy::keep_latest, now)
            .empty());
  CHECK(saver->list(in_thread(busy)).size() == 4);
  // Two hours later both are idle; keep_latest leaves the newest of each namespace, and skips
  // the thread that has one checkpoint.
  const auto later = now + std::chrono::hours(2);
  CHECK(sg::prune_idle_threads(*saver, std::chrono::hours(1), sg::PruneStrategy::keep_latest,
                               later) == std::vector<std::string>{busy});
  CHECK(saver->list(in_thread(busy)).size() == 1);
  CHECK(saver->list(in_thread(busy, "child:1")).size() == 1);
  CHECK(sg::prune_idle_threads(*saver, std::chrono::hours(1), sg::PruneStrategy::keep_latest, later)
            .empty());
  // delete_all deletes them.
  auto deleted =
      sg::prune_idle_threads(*saver, std::chrono::hours(1), sg::PruneStrategy::delete_all, later);
  std::sort(deleted.begin(), deleted.end());
  std::vector<std::string> both{busy, one};
  std::sort(both.begin(), both.end());
  CHECK(deleted == both);
  CHECK(saver->list(in_thread(busy)).empty());
  CHECK(saver->list(in_thread(one)).empty());
}

TEST_CASE_TEMPLATE("message lists are stored as a log plus ranges", F, SG_SAVER_FACTORIES) {
  F factory;
  auto saver = factory.make();
  const std::string tid = sg::new_uuid4();
  auto msg = [](int i) {
    return json{{"type", "human"}, {"content", "m" + std::to_string(i)}, {"id", std::to_string(i)}};
  };

  // Version 1: three messages, no base.
  auto c1 = checkpoint({}, {{"messages", 1}});
  const auto s1 = put_list(*saver, config(tid), c1, metadata(), {{"messages", 1}},
                           {-1, {item(msg(0)), item(msg(1)), item(msg(2))}});
  CHECK(saver->get_tuple(s1)->checkpoint.channel_values["messages"] ==
        json::array({msg(0), msg(1), msg(2)}));

  // Version 2: append one (base positions [0, 3) + a new message).
  auto c2 = checkpoint({}, {{"messages", 2}});
  const auto s2 =
      put_list(*saver, s1, c2, metadata(), {{"messages", 2}}, {1, {kept(0, 3), item(msg(3))}});
  CHECK(saver->get_tuple(s2)->checkpoint.channel_values["messages"] ==
        json::array({msg(0), msg(1), msg(2), msg(3)}));

  // Version 3: drop the first two, replace the third, keep the fourth.
  auto c3 = checkpoint({}, {{"messages", 3}});
  const auto s3 =
      put_list(*saver, s2, c3, metadata(), {{"messages", 3}}, {2, {item(msg(20)), kept(3, 4)}});
  CHECK(saver->get_tuple(s3)->checkpoint.channel_values["messages"] ==
        json::array({msg(20), msg(3)}));
  // Older versions still read back.
  CHECK(saver->get_tuple(s1)->checkpoint.channel_values["messages"].size() == 3);

  // A fork from version 1 allocates fresh log entries.
  auto c4 = checkpoint({}, {{"messages", 4}});
  const auto s4 =
      put_list(*saver, s1, c4, metadata(), {{"messages", 4}}, {1, {kept(0, 1), item(msg(99))}});
  CHECK(saver->get_tuple(s4)->checkpoint.channel_values["messages"] ==
        json::array({msg(0), msg(99)}));
  CHECK(saver->get_tuple(s3)->checkpoint.channel_values["messages"] ==
        json::array({msg(20), msg(3)}));

  // Copies and prunes keep the values readable.
  const std::string copy = sg::new_uuid4();
  saver->copy_thread(tid, copy);
  CHECK(saver->get_tuple(config(copy))->checkpoint.channel_values["messages"] ==
        json::array({msg(0), msg(99)}));
  saver->prune({tid}, sg::PruneStrategy::keep_latest);
  CHECK(saver->get_tuple(config(tid))->checkpoint.channel_values["messages"] ==
        json::array({msg(0), msg(99)}));

  // A base that does not exist, or positions beyond it, are errors.
  auto bad = checkpoint({}, {{"messages", 5}});
  CHECK_THROWS_WITH_AS(put_list(*saver, s4, bad, metadata(), {{"messages", 5}}, {77, {}}),
                       doctest::Contains("has no version 77"), sg::CheckpointError);
  auto beyond = checkpoint({}, {{"messages", 5}});
  CHECK_THROWS_WITH_AS(
      put_list(*saver, s4, beyond, metadata(), {{"messages", 5}}, {4, {kept(0, 9)}}),
      doctest::Contains("beyond the base list of 2 items"), sg::CheckpointError);
  // So are a range without a base, a delta of a channel without a new version, and a channel
  // given both as a value and as a delta.
  CHECK_THROWS_AS(put_list(*saver, s4, beyond, metadata(), {{"messages", 5}}, {-1, {kept(0, 1)}}),
                  sg::CheckpointError);
  CHECK_THROWS_WITH_AS(put_list(*saver, s4, beyond, metadata(), {{"other", 5}}, {-1, {}}),
                       doctest::Contains("no new version"), sg::CheckpointError);
  auto both = checkpoint({{"messages", json::array()}}, {{"messages", 5}});
  CHECK_THROWS_WITH_AS(put_list(*saver, s4, both, metadata(), {{"messages", 5}}, {-1, {}}),
                       doctest::Contains("both a value and a list delta"), sg::CheckpointError);
  // A checkpointer without deltas (the default put_all) refuses them instead of losing the list.
  sg::test::PlainSaver plain;
  CHECK_THROWS_WITH_AS(put_list(plain, config(tid), bad, metadata(), {{"messages", 5}}, {-1, {}}),
                       doctest::Contains("takes no list deltas"), sg::CheckpointError);
  CHECK(plain.threads().empty());

  // Items are CBOR, as sg::message_to_cbor writes messages (what graphs send); they read back
  // as JSON.
  std::string encoded;
  sg::message_to_cbor(sg::ai("pre-encoded", "m-enc"), encoded);
  auto c5 = checkpoint({}, {{"messages", 6}});
  const auto s5 = put_list(*saver, s4, c5, metadata(), {{"messages", 6}},
                           {4, {kept(0, 2), sg::ListPiece{0, 0, encoded}}});
  CHECK(saver->get_tuple(s5)->checkpoint.channel_values["messages"] ==
        json::array({msg(0), msg(99), sg::message_to_json(sg::ai("pre-encoded", "m-enc"))}));
  // Bytes that are not one CBOR value json::from_cbor reads are refused; nothing is stored:
  // cut short, followed by more, a tag, an indefinite map broken after a key, a stray break,
  // a reserved simple value, a string longer than the item.
  auto c6 = checkpoint({}, {{"messages", 7}});
  const std::vector<std::string> broken{
      encoded.substr(0, encoded.size() - 1), encoded + "\x01", raw({0xC1, 0x01}),
      raw({0xBF, 0x61, 'k', 0xFF}),          raw({0xFF}),      raw({0xF7}),
      raw({0x78, 0x05, 'a', 'b'}),           raw({0x9F, 0x01})};
  for (const std::string& bytes : broken) {
    CAPTURE(json::binary(std::vector<std::uint8_t>(bytes.begin(), bytes.end())).dump());
    CHECK_THROWS_WITH_AS(
        put_list(*saver, s5, c6, metadata(), {{"messages", 7}}, {6, {sg::ListPiece{0, 0, bytes}}}),
        doctest::Contains("not one CBOR value"), sg::CheckpointError);
  }
  // ... while any value it reads is taken, indefinite lengths too.
  const std::vector<std::string> fine{raw({0x9F, 0x01, 0xBF, 0x61, 'k', 0xF6, 0xFF, 0xFF}),
                                      raw({0x7F, 0x61, 'a', 0x62, 'b', 'c', 0xFF}),
                                      raw({0xFB, 0x3F, 0xF8, 0, 0, 0, 0, 0, 0}), raw({0x80})};
  std::vector<sg::ListPiece> fine_pieces;
  for (const std::string& bytes : fine) fine_pieces.push_back({0, 0, bytes});
  auto c7 = checkpoint({}, {{"messages", 1}});
  const auto s7 = put_list(*saver, config(sg::new_uuid4()), c7, metadata(), {{"messages", 1}},
                           {-1, fine_pieces});
  CHECK(saver->get_tuple(s7)->checkpoint.channel_values["messages"] ==
        json::array({json::array({1, {{"k", nullptr}}}), "abc", 1.5, json::array()}));
  CHECK(saver->get_tuple(config(tid))->config.checkpoint_id == c5.id);
  CHECK(saver->get_tuple(config(tid))->checkpoint.channel_values["messages"].size() == 3);
}

TEST_CASE_TEMPLATE("unchanged values are found whether or not puts are chained", F,
                   SG_SAVER_FACTORIES) {
  // Small values are kept in checkpoint records and large ones in blobs; a checkpoint that does
  // not rewrite a channel reads it at its version, whoever stored it.
  F factory;
  auto saver = factory.make();
  const std::string tid = sg::new_uuid4();
  const json big(std::string(2000, 'b'));
  auto c1 = checkpoint({{"x", 1}, {"big", big}}, {{"x", 1}, {"big", 1}});
  saver->put(config(tid), c1, metadata(), {{"x", 1}, {"big", 1}});
  const sg::ChannelVersions all{{"x", 1}, {"big", 1}, {"y", 2}};
  auto c2 = checkpoint({{"y", "two"}}, all);
  saver->put(config(tid, "", c1.id), c2, metadata(), {{"y", 2}});
  const json expected{{"x", 1}, {"big", big}, {"y", "two"}};
  CHECK(saver->get_tuple(config(tid))->checkpoint.channel_values == expected);

  // Not chained to its parent.
  auto c3 = checkpoint({}, all);
  saver->put(config(tid), c3, metadata(), {});
  CHECK(saver->get_tuple(config(tid, "", c3.id))->checkpoint.channel_values == expected);

  // On a copied thread (nothing cached about it yet), chained to a copied checkpoint.
  const std::string copy = sg::new_uuid4();
  saver->copy_thread(tid, copy);
  auto c4 = checkpoint({{"z", true}}, {{"x", 1}, {"big", 1}, {"y", 2}, {"z", 3}});
  saver->put(config(copy, "", c3.id), c4, metadata(), {{"z", 3}});
  json with_z = expected;
  with_z["z"] = true;
  CHECK(saver->get_tuple(config(copy))->checkpoint.channel_values == with_z);
  // A channel at a version nobody stored is absent.
  auto c5 = checkpoint({}, {{"x", 7}});
  saver->put(config(copy, "", c4.id), c5, metadata(), {});
  CHECK(saver->get_tuple(config(copy))->checkpoint.channel_values == json::object());
}

TEST_CASE_TEMPLATE("put_all stores several checkpoints in one atomic write", F,
                   SG_SAVER_FACTORIES) {
  F factory;
  auto saver = factory.make();
  const std::string tid = sg::new_uuid4();
  auto msg = [](int i) {
    return json{{"type", "ai"}, {"content", "m" + std::to_string(i)}, {"id", std::to_string(i)}};
  };
  // The second checkpoint builds on the first one's message list, in the same batch.
  auto c1 = checkpoint({}, {{"messages", 1}});
  auto c2 = checkpoint({}, {{"messages", 2}});
  const auto stored = saver->put_all({{config(tid),
                                       c1,
                                       metadata("input", -1),
                                       {{"messages", 1}},
                                       {},
                                       {{"messages", {-1, {item(msg(0))}}}}},
                                      {config(tid, "", c1.id),
                                       c2,
                                       metadata(),
                                       {{"messages", 2}},
                                       {},
                                       {{"messages", {1, {kept(0, 1), item(msg(1))}}}}}});
  REQUIRE(stored.size() == 2);
  CHECK(stored[1].checkpoint_id == c2.id);
  CHECK(saver->get_tuple(stored[0])->checkpoint.channel_values["messages"] ==
        json::array({msg(0)}));
  const auto latest = saver->get_tuple(config(tid));
  CHECK(latest->config.checkpoint_id == c2.id);
  CHECK(latest->parent_config->checkpoint_id == c1.id);
  CHECK(latest->checkpoint.channel_values["messages"] == json::array({msg(0), msg(1)}));

  // One bad checkpoint: nothing of the batch is stored.
  auto c3 = checkpoint({{"x", 1}}, {{"x", 3}});
  auto bad = checkpoint({}, {{"messages", 4}});
  CHECK_THROWS_AS(saver->put_all({{config(tid, "", c2.id), c3, metadata(), {{"x", 3}}},
                                  {config(tid, "", c3.id),
                                   bad,
                                   metadata(),
                                   {{"messages", 4}},
                                   {},
                                   {{"messages", {42, {}}}}}}),
                  sg::CheckpointError);
  CHECK_FALSE(saver->get_tuple(config(tid, "", c3.id)));
  CHECK(saver->latest_checkpoint_id(tid, "") == c2.id);
  CHECK(saver->list(in_thread(tid)).size() == 2);
}

TEST_CASE_TEMPLATE(
    "put_all: the writes of the tasks that made a checkpoint read back as its "
    "parent's pending writes, wherever they are kept",
    F, SG_SAVER_FACTORIES) {
  F factory;
  auto saver = factory.make();
  const std::string tid = sg::new_uuid4();
  auto msg = [](int i) {
    return json{{"type", "ai"}, {"content", "m" + std::to_string(i)}, {"id", std::to_string(i)}};
  };
  const std::string big(600, 'b');  // kept in a blob, not in the record
  auto c1 = checkpoint({}, {{"messages", 1}});
  put_list(*saver, config(tid), c1, metadata("input", -1), {{"messages", 1}}, {-1, {item(msg(0))}});
  // c2 made by tasks "t1" (appended one message) and "t2" (wrote "big", "n" and a goto).
  auto c2 = checkpoint({{"big", big}, {"n", 7}}, {{"messages", 2}, {"big", 2}, {"n", 2}});
  auto appended = [](const std::string& channel, std::uint64_t count) {
    sg::TaskWrite w;
    w.channel = channel;
    w.kind = sg::TaskWrite::Kind::appended;
    w.count = count;
    return w;
  };
  auto stored = [](const std::string& channel, json value) {
    sg::TaskWrite w(channel, std::move(value));
    w.kind = sg::TaskWrite::Kind::stored;
    return w;
  };
  std::vector<sg::TaskWrites> made_c2{
      {"t1", {appended("messages", 1)}},
      {"t2", {stored("big", big), stored("n", 7), sg::TaskWrite("branch:to:x", nullptr)}}};
  put_list(*saver, config(tid, "", c1.id), c2, metadata(), {{"messages", 2}, {"big", 2}, {"n", 2}},
           {1, {kept(0, 1), item(msg(1))}}, made_c2);
  auto check_c1 = [&](const sg::CheckpointTuple& t) {
    REQUIRE(t.pending_writes.size() == 4);
    CHECK(t.pending_writes[0].task_id == "t1");
    CHECK(t.pending_writes[0].value == json::array({msg(1)}));
    CHECK(t.pending_writes[1].value == big);
    CHECK(t.pending_writes[2].value == 7);
    CHECK(t.pending_writes[3].channel == "branch:to:x");
    CHECK(t.pending_writes[3].value.is_null());
  };
  check_c1(*saver->get_tuple(config(tid, "", c1.id)));
  auto history = saver->list(in_thread(tid));
  REQUIRE(history.size() == 2);
  check_c1(history[1]);
  CHECK(history[0].pending_writes.empty());
  // list with `before` starts below the record that keeps the writes.
  auto older = in_thread(tid);
  older.before = c2.id;
  check_c1(saver->list(older).at(0));

  // A fork of c1 (c1 is no longer the newest): its writes are kept apart, and both branches'
  // writes read back.
  auto c3 = checkpoint({{"n", 8}}, {{"messages", 1}, {"n", 3}});
  saver->put_all(
      {{config(tid, "", c1.id), c3, metadata("fork"), {{"n", 3}}, {{"t3", {stored("n", 8)}}}}});
  const auto t1 = saver->get_tuple(config(tid, "", c1.id));
  CHECK(t1->pending_writes.size() == 5);
  CHECK(count_writes(*t1, "t3", "n") == 1);
  CHECK(count_writes(*t1, "t1", "messages") == 1);

  // A checkpoint put later with an id between c2 and its parent does not hide c2's writes.
  auto d1 = checkpoint({{"n", 1}}, {{"n", 1}});
  auto d2 = checkpoint({{"n", 2}}, {{"n", 2}});
  auto between = checkpoint({{"n", 5}}, {{"n", 5}});
  const std::string tid2 = sg::new_uuid4();
  saver->put(config(tid2), d1, metadata("input", -1), {{"n", 1}});
  saver->put_all(
      {{config(tid2, "", d1.id), d2, metadata(), {{"n", 2}}, {{"t", {stored("n", 2)}}}}});
  saver->put(config(tid2, "", d1.id), between, metadata("fork"), {{"n", 5}});  // sorts after d2
  const std::string tid3 = sg::new_uuid4();
  // The same shape with the middle checkpoint's id sorted between the parent and the child.
  auto e1 = checkpoint({{"n", 1}}, {{"n", 1}});
  auto e_mid = checkpoint({{"n", 5}}, {{"n", 5}});
  auto e2 = checkpoint({{"n", 2}}, {{"n", 2}});
  saver->put(config(tid3), e1, metadata("input", -1), {{"n", 1}});
  saver->put_all(
      {{config(tid3, "", e1.id), e2, metadata(), {{"n", 2}}, {{"t", {stored("n", 2)}}}}});
  saver->put(config(tid3, "", e1.id), e_mid, metadata("fork"), {{"n", 5}});
  REQUIRE(e_mid.id > e1.id);
  REQUIRE(e_mid.id < e2.id);
  for (const auto& [thread, parent] : {std::pair{tid2, d1.id}, std::pair{tid3, e1.id}}) {
    const auto t = saver->get_tuple(config(thread, "", parent));
    REQUIRE(t->pending_writes.size() == 1);
    CHECK(t->pending_writes[0].value == 2);
    const auto listed = saver->list(in_thread(thread));
    REQUIRE(listed.size() == 3);
    CHECK(listed.back().pending_writes.size() == 1);
  }
  // put_task_writes refuses an appended write, which only put_all resolves; a stored one is a
  // plain value there.
  CHECK_THROWS_AS(saver->put_task_writes(config(tid, "", c2.id), {"x", {appended("messages", 1)}}),
                  sg::CheckpointError);
  saver->put_task_writes(config(tid, "", c2.id), {"y", {stored("n", 1)}});
  CHECK(count_writes(*saver->get_tuple(config(tid, "", c2.id)), "y", "n") == 1);
}

TEST_CASE_TEMPLATE("task writes: pre-encoded items, and values that look like references", F,
                   SG_SAVER_FACTORIES) {
  F factory;
  auto saver = factory.make();
  const std::string tid = sg::new_uuid4();
  auto cp = checkpoint({{"n", 1}}, {{"n", 1}});
  const auto stored = saver->put(config(tid), cp, metadata("input", -1), {{"n", 1}});
  const json m1 = {{"type", "human"}, {"content", "hi"}, {"id", "1"}};
  const json m2 = {{"type", "ai"}, {"content", "yo"}, {"id", "2"}};
  sg::TaskWrite items;
  items.channel = "messages";
  items.kind = sg::TaskWrite::Kind::items;
  for (const json& m : {m1, m2}) {
    const auto cbor = json::to_cbor(m);
    items.items.emplace_back(cbor.begin(), cbor.end());
  }
  // Plain JSON is never taken for a reference: what was written reads back.
  const json lookalike = {{"$appended", 1}};
  const json lookalike_blob = {{"$blob", 1}};
  const json lookalike_log = {{"$log", {{"ranges", {{0, 1}}}}}};
  const json lookalike_escaped = {{"$value", 3}};
  saver->put_task_writes(stored, {"t", {items, sg::TaskWrite("a", lookalike)}});
  saver->put_writes(stored, {{"b", lookalike_blob}, {"c", lookalike_log}}, "u");
  // And in a bundle (the writes put_all keeps with the checkpoint they made).
  auto next = checkpoint({{"n", 2}}, {{"n", 2}});
  saver->put_all(
      {{stored, next, metadata(), {{"n", 2}}, {{"v", {sg::TaskWrite("d", lookalike_escaped)}}}}});
  const auto t = saver->get_tuple(stored);
  REQUIRE(t->pending_writes.size() == 5);
  CHECK(t->pending_writes[0].value == json::array({m1, m2}));
  CHECK(t->pending_writes[1].value == lookalike);
  CHECK(t->pending_writes[2].value == lookalike_blob);
  CHECK(t->pending_writes[3].value == lookalike_log);
  CHECK(t->pending_writes[4].value == lookalike_escaped);
  // An item that is not one CBOR value is refused and nothing of the task is stored.
  sg::TaskWrite bad = items;
  bad.items.push_back("\xa1");  // a map head without its entry
  CHECK_THROWS_AS(saver->put_task_writes(stored, {"t2", {sg::TaskWrite("a", 1), bad}}),
                  sg::CheckpointError);
  CHECK(saver->get_tuple(stored)->pending_writes.size() == 5);
}

TEST_CASE_TEMPLATE("latest_checkpoint_id follows puts, deletes and copies", F, SG_SAVER_FACTORIES) {
  F factory;
  auto saver = factory.make();
  const std::string tid = sg::new_uuid4();
  CHECK_FALSE(saver->latest_checkpoint_id(tid, ""));
  const auto ids = setup_list(*saver, tid);
  CHECK(saver->latest_checkpoint_id(tid, "") == ids.back());
  auto c = checkpoint();
  saver->put(config(tid, "", ids.back()), c, metadata(), {});
  CHECK(saver->latest_checkpoint_id(tid, "") == c.id);
  CHECK_FALSE(saver->latest_checkpoint_id(tid, "inner"));

  const std::string copy = sg::new_uuid4();
  CHECK_FALSE(saver->latest_checkpoint_id(copy, ""));
  saver->copy_thread(tid, copy);
  CHECK(saver->latest_checkpoint_id(copy, "") == c.id);
  saver->delete_thread(tid);
  CHECK_FALSE(saver->latest_checkpoint_id(tid, ""));
  CHECK(saver->latest_checkpoint_id(copy, "") == c.id);
  // The answer matches get_tuple's.
  CHECK(saver->get_tuple(config(copy))->config.checkpoint_id == c.id);
}

TEST_CASE("InMemorySaver writes synchronously by default") {
  CHECK(sg::InMemorySaver().default_durability() == sg::Durability::sync);
}
