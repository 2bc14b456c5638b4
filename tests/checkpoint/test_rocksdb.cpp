// SPDX-License-Identifier: MIT
// RocksDbSaver specifics: persistence across reopen, locking, corrupt and unknown records.
#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/kv/record.hpp>
#include <stategraph/stategraph.hpp>

#include <doctest/doctest.h>
#include <rocksdb/db.h>

#include <filesystem>
#include <fstream>

#include "support/temp_dir.hpp"

using nlohmann::json;

namespace {

sg::Checkpoint make_checkpoint(json values, sg::ChannelVersions versions) {
  sg::Checkpoint c;
  c.id = sg::new_checkpoint_id(0);
  c.ts = sg::iso_timestamp_now();
  c.channel_values = std::move(values);
  c.channel_versions = std::move(versions);
  return c;
}

/// Opens the saver's database directly (the saver must be closed) and calls `use` with it and the
/// handle of column family `family`.
void with_family(const std::string& path, const std::string& family,
                 const std::function<void(rocksdb::DB&, rocksdb::ColumnFamilyHandle*)>& use) {
  std::vector<rocksdb::ColumnFamilyDescriptor> families{{rocksdb::kDefaultColumnFamilyName, {}}};
  for (const char* name : {"checkpoints", "writes", "blobs", "messages"}) {
    families.emplace_back(name, rocksdb::ColumnFamilyOptions());
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  REQUIRE(rocksdb::DB::Open(rocksdb::DBOptions(), path, families, &handles, &db).ok());
  rocksdb::ColumnFamilyHandle* target = nullptr;
  for (auto* h : handles) {
    if (h->GetName() == family) target = h;
  }
  REQUIRE(target);
  use(*db, target);
  for (auto* h : handles) db->DestroyColumnFamilyHandle(h);
  delete db;
}

/// Rewrites every value of a column family with `edit` (the saver must be closed).
void edit_values(const std::string& path, const std::string& family,
                 const std::function<void(std::string&)>& edit) {
  with_family(path, family, [&](rocksdb::DB& db, rocksdb::ColumnFamilyHandle* target) {
    std::vector<std::pair<std::string, std::string>> entries;
    std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(rocksdb::ReadOptions(), target));
    for (it->SeekToFirst(); it->Valid(); it->Next())
      entries.emplace_back(it->key().ToString(), it->value().ToString());
    it.reset();
    for (auto& [k, v] : entries) {
      edit(v);
      REQUIRE(db.Put(rocksdb::WriteOptions(), target, k, v).ok());
    }
  });
}

/// Puts one key of a column family as it is (the saver must be closed).
void put_value(const std::string& path, const std::string& family, const std::string& key,
               const std::string& value) {
  with_family(path, family, [&](rocksdb::DB& db, rocksdb::ColumnFamilyHandle* target) {
    REQUIRE(db.Put(rocksdb::WriteOptions(), target, key, value).ok());
  });
}

/// An intact record (docs/checkpoint-format.md: "SG", version 1, kind, CRC-32 of the payload)
/// whose CBOR payload is `payload`: what reads must refuse is then its content.
std::string sealed_record(char kind, const json& payload) {
  const std::vector<std::uint8_t> cbor = json::to_cbor(payload);
  std::string out = sg::detail::record_header(1, kind, sg::detail::kRecordHeaderSize + cbor.size());
  out.append(cbor.begin(), cbor.end());
  sg::detail::seal_record(out);
  return out;
}

/// The checkpoint record of `make_checkpoint({"n": 1}, {"n": 1})` with `changes` merged in.
json record_with(const json& changes) {
  json record = {{"v", 4},
                 {"t", "2026-11-24"},
                 {"cv", {{"n", 1}}},
                 {"vs", json::object()},
                 {"m", json::object()},
                 {"p", ""},
                 {"x", {{"n", {1, "j", 1}}}}};
  record.update(changes);
  return record;
}

}  // namespace

TEST_CASE("a RocksDB thread survives closing and reopening") {
  sg::test::TempDir dir;
  const std::string path = dir.sub("db");
  std::string id;
  {
    auto saver = sg::RocksDbSaver::open(path);
    auto c = make_checkpoint({{"x", 1}}, {{"x", 1}});
    id = c.id;
    saver->put({"t1", "", ""}, c, {{"source", "loop"}, {"step", 0}}, {{"x", 1}});
    saver->put_writes({"t1", "", id}, {{"x", 2}}, "task");
    CHECK(saver->default_durability() == sg::Durability::sync);
  }
  auto saver = sg::RocksDbSaver::open(path);
  auto t = saver->get_tuple({"t1", "", ""});
  REQUIRE(t);
  CHECK(t->checkpoint.id == id);
  CHECK(t->checkpoint.channel_values == json{{"x", 1}});
  CHECK(t->pending_writes.size() == 1);
  CHECK(saver->disk_bytes() > 0);
}

TEST_CASE("the database is locked while open") {
  sg::test::TempDir dir;
  auto saver = sg::RocksDbSaver::open(dir.sub("db"));
  try {
    (void)sg::RocksDbSaver::open(dir.sub("db"));
    FAIL("expected a lock error");
  } catch (const sg::CheckpointError& e) {
    CHECK(e.code() == "checkpoint.locked");
    CHECK(std::string(e.what()).find("is in use by another process") != std::string::npos);
  }
  CHECK_THROWS_AS((void)sg::RocksDbSaver::open(dir.sub("missing"), {.create_if_missing = false}),
                  sg::CheckpointError);
}

TEST_CASE("a corrupt record is a CheckpointError naming the thread and checkpoint") {
  sg::test::TempDir dir;
  const std::string path = dir.sub("db");
  std::string id;
  {
    auto saver = sg::RocksDbSaver::open(path);
    // A small value lives in the checkpoint record, a large one in a blob.
    auto c = make_checkpoint({{"summary", "hello"}, {"notes", std::string(1000, 'n')}},
                             {{"summary", 1}, {"notes", 1}});
    id = c.id;
    saver->put({"thread-7", "", ""}, c, {{"source", "loop"}, {"step", 0}},
               {{"summary", 1}, {"notes", 1}});
  }
  for (const char* column : {"blobs", "checkpoints"}) {
    SUBCASE((std::string("a flipped byte (checksum) in ") + column).c_str()) {
      edit_values(path, column,
                  [](std::string& v) { v.back() = static_cast<char>(v.back() ^ 0x5A); });
      auto saver = sg::RocksDbSaver::open(path);
      try {
        (void)saver->get_tuple({"thread-7", "", ""});
        FAIL("expected a corruption error");
      } catch (const sg::CheckpointError& e) {
        CHECK(e.code() == "checkpoint.corrupt");
        const std::string what = e.what();
        CAPTURE(what);
        CHECK(what.find("thread 'thread-7'") != std::string::npos);
        CHECK(what.find("checkpoint '" + id + "'") != std::string::npos);
        CHECK(what.find("checksum mismatch") != std::string::npos);
      }
    }
  }
  SUBCASE("an unknown format version") {
    edit_values(path, "checkpoints", [](std::string& v) { v[2] = 99; });
    auto saver = sg::RocksDbSaver::open(path);
    try {
      (void)saver->get_tuple({"thread-7", "", ""});
      FAIL("expected a format error");
    } catch (const sg::CheckpointError& e) {
      CHECK(std::string(e.what()).find("unknown format version 99") != std::string::npos);
      CHECK(std::string(e.what()).find("thread 'thread-7'") != std::string::npos);
    }
  }
  SUBCASE("bytes corrupted in a table file on disk") {
    {
      auto saver = sg::RocksDbSaver::open(path);
      saver->flush();
    }
    bool corrupted = false;
    for (const auto& entry : std::filesystem::directory_iterator(path)) {
      if (entry.path().extension() != ".sst" || entry.file_size() < 64) continue;
      std::fstream f(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
      for (std::streamoff off = 8; off < 48; ++off) {  // inside the first data block
        f.seekg(off);
        char c = 0;
        f.read(&c, 1);
        f.seekp(off);
        c = static_cast<char>(c ^ 0xFF);
        f.write(&c, 1);
      }
      corrupted = true;
    }
    REQUIRE(corrupted);
    try {
      auto saver = sg::RocksDbSaver::open(path);
      (void)saver->get_tuple({"thread-7", "", ""});
      (void)saver->list({});
      FAIL("expected a corruption error");
    } catch (const sg::CheckpointError& e) {
      CHECK(e.code() == "checkpoint.corrupt");
      const std::string what = e.what();
      CAPTURE(what);
      CHECK((what.find("thread 'thread-7'") != std::string::npos ||
             what.find("opening the checkpoint database") != std::string::npos));
    }
  }
}

TEST_CASE("bytes_written per superstep stays flat as a message thread grows") {
  sg::test::TempDir dir;
  auto saver = sg::RocksDbSaver::open(dir.sub("db"));
  CHECK(saver->bytes_written() == 0);
  sg::StateGraph<sg::MessagesState> g;
  g.add_node("talk", [](const sg::MessagesState& s) {
    return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(
        sg::ai("reply number " + std::to_string(s.messages.size()) + std::string(200, 'x')));
  });
  g.add_edge(sg::START, "talk");
  const auto app = g.compile({.checkpointer = saver});
  sg::RunConfig config;
  config.thread_id = "long";
  auto turn = [&](int t) {
    const std::uint64_t before = saver->bytes_written();
    app.invoke(sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(
                   sg::human("turn " + std::to_string(t) + std::string(200, 'y'))),
               config);
    return saver->bytes_written() - before;
  };
  std::uint64_t early = 0;
  std::uint64_t late = 0;
  for (int t = 0; t < 400; ++t) {
    const std::uint64_t written = turn(t);
    CHECK(written > 400);  // at least the two new messages
    if (t >= 10 && t < 20) early += written;
    if (t >= 390) late += written;
  }
  // 800 messages in the thread at the end, 20-40 early: the bytes of a turn do not grow with it.
  CHECK(static_cast<double>(late) < 1.2 * static_cast<double>(early));
}

TEST_CASE("an intact record of the wrong shape is a CheckpointError, never another exception") {
  // Found by tests/fuzz checkpoint_record: these threw json::type_error, converted a float out
  // of range (undefined behaviour), or (prune) counted through a view's range one by one.
  sg::test::TempDir dir;
  const std::string path = dir.sub("db");
  {
    auto saver = sg::RocksDbSaver::open(path);
    auto c = make_checkpoint({{"n", 1}}, {{"n", 1}});
    saver->put({"t8", "", ""}, c, json::object(), {{"n", 1}});
    saver->put_writes({"t8", "", c.id}, {{"n", 2}}, "task");
  }
  const auto refused = [&](const std::string& expected) {
    auto saver = sg::RocksDbSaver::open(path);
    try {
      (void)saver->get_tuple({"t8", "", ""});
      FAIL("expected a corruption error");
    } catch (const sg::CheckpointError& e) {
      CHECK(e.code() == "checkpoint.corrupt");
      CHECK_MESSAGE(std::string(e.what()).find(expected) != std::string::npos, e.what());
    }
  };
  const auto replace_with = [&](const char* family, char kind, const json& payload) {
    edit_values(path, family, [&](std::string& v) { v = sealed_record(kind, payload); });
  };
  SUBCASE("a view's range bound that is a float") {
    replace_with(
        "checkpoints", 'c',
        record_with({{"cv", {{"m", 1}}}, {"x", {{"m", {1, "v", {{"ranges", {{0, 1.8e19}}}}}}}}}));
    refused("a range of a message view is not [from, to]");
  }
  SUBCASE("an inverted range") {
    replace_with(
        "checkpoints", 'c',
        record_with({{"cv", {{"m", 1}}}, {"x", {{"m", {1, "v", {{"ranges", {{5, 2}}}}}}}}}));
    refused("with from <= to");
  }
  SUBCASE("channel versions that are not integers") {
    replace_with("checkpoints", 'c', record_with({{"cv", {{"n", 1.5}}}}));
    refused("channel_versions is not an integer");
  }
  SUBCASE("a pending write whose blob reference is not a version") {
    replace_with("writes", 'w', {{"channel", "n"}, {"value", {{"$blob", "x"}}}, {"task_path", ""}});
    refused("a blob's version is not an integer");
  }
  SUBCASE("a pending write that is not an object") {
    replace_with("writes", 'w', json::array({1, 2}));
    refused("a write must be {channel, value, task_path}");
  }
  SUBCASE("prune: a key of a log that names no channel") {
    put_value(path, "messages", std::string("t8\0\0bad", 7), sealed_record('m', "x"));
    auto saver = sg::RocksDbSaver::open(path);
    CHECK_THROWS_WITH_AS(saver->prune({"t8"}, sg::PruneStrategy::keep_latest),
                         doctest::Contains("no channel name ends it"), sg::CheckpointError);
  }
  SUBCASE("prune keeps the log of a view as long as sequence numbers go, without counting it") {
    replace_with(
        "checkpoints", 'c',
        record_with(
            {{"x", {{"n", {1, "j", 1}}, {"other", {1, "v", {{"ranges", {{0, 1ULL << 62}}}}}}}}}));
    put_value(path, "messages", std::string("t8\0\0other\0", 10) + std::string(7, '\0') + '\7',
              sealed_record('m', "kept"));
    auto saver = sg::RocksDbSaver::open(path);
    saver->prune({"t8"}, sg::PruneStrategy::keep_latest);
    auto t = saver->get_tuple({"t8", "", ""});
    REQUIRE(t);
    CHECK(t->checkpoint.channel_values == json{{"n", 1}});
  }
}
