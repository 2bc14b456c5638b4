// SPDX-License-Identifier: MIT
// Fuzz target: stored checkpoint records, writes, blobs and log messages (see fuzz_targets.hpp).
#include <stategraph/checkpoint/kv_checkpointer.hpp>
#include <stategraph/core/message.hpp>
#include <stategraph/kv/kv.hpp>
#include <stategraph/kv/record.hpp>

#include <cstdlib>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "fuzz_targets.hpp"

// Not an anonymous namespace: fuzz/replay compiles the targets in unity batches.
namespace sg::fuzz::records {

using nlohmann::json;

/// A KvCheckpointer over a backend the target fills (InMemorySaver's class, its own MemoryKv).
class RecordSaver final : public sg::KvCheckpointer {
 public:
  explicit RecordSaver(std::unique_ptr<sg::detail::KvBackend> kv) : KvCheckpointer(std::move(kv)) {}
};

// The key spaces (docs/checkpoint-format.md): checkpoints, writes, blobs, messages.
constexpr std::uint8_t kSpaces = 4;

// The stored thread: root namespace c1 <- c2 <- c4, c3 forked from c1; namespace "sub" s-1 <- s-2.
const std::string kC1 = "1f0a0000-0000-6000-8000-000000000001";
const std::string kC2 = "1f0a0000-0000-6000-8000-000000000002";
const std::string kC3 = "1f0a0000-0000-6000-8000-000000000003";
const std::string kC4 = "1f0a0000-0000-6000-8000-000000000004";
const std::string kTs = "2026-11-24T10:00:00.000000+00:00";  // iso_timestamp's form: compact

std::string cbor_of(const sg::Message& m) {
  std::string out;
  sg::message_to_cbor(m, out);
  return out;
}

sg::Checkpoint make_checkpoint(const std::string& id, const std::string& ts,
                               sg::ChannelVersions cv) {
  sg::Checkpoint c;
  c.id = id;
  c.ts = ts;
  c.channel_versions = std::move(cv);
  c.versions_seen = {{"agent", {{"branch:to:agent", 1}}}, {"tools", {{"messages", 1}, {"n", 1}}}};
  return c;
}

sg::TaskWrite special(std::string channel, std::uint64_t count, sg::TaskWrite::Kind kind) {
  sg::TaskWrite w(std::move(channel), json());
  w.kind = kind;
  w.count = count;
  return w;
}

using Entry = std::tuple<std::uint8_t, std::string, std::string>;  // space, key, value

/// What the savers store for the thread above, written by the library itself.
std::vector<Entry> stored_thread() {
  auto kv = std::make_unique<sg::detail::MemoryKv>(kSpaces);
  sg::detail::MemoryKv& backend = *kv;
  RecordSaver saver(std::move(kv));
  const std::string big(400, 'b');  // larger than a record keeps inline: a blob
  // c1: two new messages, a number, a blob, an empty channel; a canonical run id ("r").
  sg::CheckpointPut p1;
  p1.config = {"t", "", ""};
  p1.checkpoint = make_checkpoint(kC1, kTs, {{"messages", 1}, {"n", 1}, {"big", 1}, {"flag", 1}});
  p1.checkpoint.channel_values = {{"n", 1}, {"big", big}};
  p1.metadata = {{"source", "input"},
                 {"step", -1},
                 {"parents", json::object()},
                 {"run_id", "1f0a0000-0000-6000-8000-0000000000aa"}};
  p1.new_versions = p1.checkpoint.channel_versions;
  p1.lists["messages"] = {-1, {{0, 0, cbor_of(sg::human("hi"))}, {0, 0, cbor_of(sg::ai("hello"))}}};
  // c2: a third message, a new blob, and the writes of the task that made it (kept in c2's
  // record: an appended write, a stored blob, a value that looks like a reference).
  sg::CheckpointPut p2;
  p2.config = {"t", "", kC1};
  p2.checkpoint = make_checkpoint(kC2, kTs, {{"messages", 2}, {"n", 2}, {"big", 2}, {"flag", 1}});
  p2.checkpoint.channel_values = {{"n", 2}, {"big", big + "2"}};
  p2.metadata = {{"source", "loop"}, {"step", 0}, {"parents", json::object()}};
  p2.new_versions = {{"messages", 2}, {"n", 2}, {"big", 2}};
  p2.lists["messages"] = {1, {{0, 2, {}}, {0, 0, cbor_of(sg::ai("third"))}}};
  p2.writes = {{"task-1",
                {special("messages", 1, sg::TaskWrite::Kind::appended),
                 special("big", 0, sg::TaskWrite::Kind::stored), sg::TaskWrite("n", 1),
                 sg::TaskWrite("note", json{{"$log", 5}})}}};
  p2.writes[0].writes[1].value = big + "2";
  saver.put_all({p1, p2});
  // c3: a fork of c1 (its task's writes go under c1 as a bundle); a trimmed view; a timestamp
  // kept as text.
  sg::CheckpointPut p3;
  p3.config = {"t", "", kC1};
  p3.checkpoint = make_checkpoint(kC3, "2026-11-24 10:00:00",
                                  {{"messages", 3}, {"n", 1}, {"big", 1}, {"flag", 1}});
  p3.metadata = {{"source", "fork"}, {"step", 1}, {"parents", json::object()}};
  p3.new_versions = {{"messages", 3}};
  p3.lists["messages"] = {1, {{1, 2, {}}}};
  p3.writes = {{"task-2", {sg::TaskWrite("n", 7), sg::TaskWrite("big", json{{"$blob", 1}})}}};
  saver.put_all({p3});
  // Pending writes of c3: plain, special (an error) and pre-encoded items.
  saver.put_writes({"t", "", kC3}, {{"n", 3}, {"__error__", "boom"}}, "task-3", "path");
  sg::TaskWrites items{"task-4", {special("messages", 0, sg::TaskWrite::Kind::items)}};
  items.writes[0].items = {cbor_of(sg::human("pending"))};
  saver.put_task_writes({"t", "", kC3}, items);
  // c4: the newest, on c3, with an empty list.
  sg::CheckpointPut p4;
  p4.config = {"t", "", kC3};
  p4.checkpoint = make_checkpoint(kC4, kTs, {{"messages", 4}, {"n", 1}, {"big", 1}, {"flag", 1}});
  p4.metadata = {{"source", "loop"}, {"step", 2}, {"parents", json::object()}};
  p4.new_versions = {{"messages", 4}};
  p4.lists["messages"] = {3, {{0, 1, {}}, {0, 0, cbor_of(sg::tool("42", "call-1"))}}};
  saver.put_all({p4});
  // Namespace "sub": a whole list (a put), then a delta on it (its items join the log).
  sg::Checkpoint s1 = make_checkpoint("s-1", kTs, {{"messages", 1}});
  s1.channel_values = {
      {"messages", sg::messages_to_json(std::vector{sg::human("a"), sg::ai("b")})}};
  saver.put({"t", "sub", ""}, s1, json::object(), {{"messages", 1}});
  sg::CheckpointPut s2;
  s2.config = {"t", "sub", "s-1"};
  s2.checkpoint = make_checkpoint("s-2", kTs, {{"messages", 2}});
  s2.new_versions = {{"messages", 2}};
  s2.lists["messages"] = {1, {{0, 2, {}}, {0, 0, cbor_of(sg::human("c"))}}};
  saver.put_all({s2});

  std::vector<Entry> out;
  for (std::uint8_t space = 0; space < kSpaces; ++space) {
    backend.scan(space, {}, {}, false, [&](std::string_view key, std::string_view value) {
      out.emplace_back(space, std::string(key), std::string(value));
      return true;
    });
  }
  return out;
}

/// An envelope ("SG", format 1, `kind`, CRC) around `payload`: the fuzzer reaches the decoding
/// of the payload instead of stopping at the checksum.
std::string sealed(char kind, std::string_view payload) {
  std::string out =
      sg::detail::record_header(1, kind, sg::detail::kRecordHeaderSize + payload.size());
  out.append(payload);
  sg::detail::seal_record(out);
  return out;
}

/// Applies the edits the input describes to `entries`; false when there were none.
bool apply_edits(const std::uint8_t* data, std::size_t size, std::vector<Entry>& entries) {
  bool edited = false;
  std::size_t at = 0;
  while (at + 3 <= size) {
    const std::uint8_t op = data[at];
    const std::size_t length =
        std::min<std::size_t>(data[at + 1] | (data[at + 2] << 8), size - at - 3);
    std::string_view bytes(reinterpret_cast<const char*>(data + at + 3), length);
    at += 3 + length;
    const std::size_t index = op & 0x3F;
    const int mode = op >> 6;
    Entry* entry = nullptr;
    if (index < entries.size()) {
      entry = &entries[index];
    } else {
      // A new key: its length in the first byte, then the key.
      if (bytes.empty()) continue;
      const std::size_t key_size =
          std::min<std::size_t>(static_cast<std::uint8_t>(bytes[0]), bytes.size() - 1);
      entries.emplace_back(static_cast<std::uint8_t>(index % kSpaces),
                           std::string(bytes.substr(1, key_size)), std::string());
      bytes.remove_prefix(1 + key_size);
      entry = &entries.back();
    }
    std::string& value = std::get<2>(*entry);
    if (mode == 0) {  // the stored bytes as they are
      value.assign(bytes);
    } else if (mode == 3) {  // removed (an empty value: erased below)
      value.clear();
    } else {
      if (bytes.empty()) continue;
      const char kind = bytes[0];
      bytes.remove_prefix(1);
      if (mode == 1) {  // a CBOR payload in an intact envelope
        value = sealed(kind, bytes);
      } else {  // JSON text as the CBOR payload of an intact envelope
        const json parsed = json::parse(bytes.begin(), bytes.end(), nullptr, false);
        if (parsed.is_discarded()) continue;
        const std::vector<std::uint8_t> cbor = json::to_cbor(parsed);
        value = sealed(kind, {reinterpret_cast<const char*>(cbor.data()), cbor.size()});
      }
    }
    edited = true;
  }
  return edited;
}

/// Runs `f`; a refusal is only the documented sg::Error (CheckpointError for storage), and
/// only when the stored data was edited.
template <class F>
void refused_only_with_error(bool edited, F&& f) {
  try {
    f();
  } catch (const sg::Error&) {
    if (!edited) std::abort();  // the library failed on what it wrote itself
  }
}

}  // namespace sg::fuzz::records

int sg::fuzz::checkpoint_record(const std::uint8_t* data, std::size_t size) {
  using namespace records;  // NOLINT: this target's helpers
  static const std::vector<Entry> kStored = stored_thread();
  std::vector<Entry> entries = kStored;
  const bool edited = apply_edits(data, size, entries);
  auto kv = std::make_unique<detail::MemoryKv>(kSpaces);
  std::vector<detail::KvOp> batch;
  for (auto& [space, key, value] : entries) {
    if (!value.empty()) batch.push_back({detail::KvOp::Kind::put, space, key, value});
  }
  kv->write(batch);
  RecordSaver saver(std::move(kv));

  // Reads: threads, namespaces, every checkpoint, lists (all, filtered, paged).
  refused_only_with_error(edited, [&] {
    for (const auto& thread : saver.threads()) (void)saver.namespaces(thread);
  });
  for (const auto& id : {kC1, kC2, kC3, kC4, std::string()}) {
    refused_only_with_error(edited, [&] { (void)saver.get_tuple({"t", "", id}); });
  }
  refused_only_with_error(edited, [&] { (void)saver.get_tuple({"t", "sub", ""}); });
  refused_only_with_error(edited, [&] { (void)saver.list({}); });
  refused_only_with_error(edited, [&] {
    (void)saver.list({.thread_id = "t",
                      .checkpoint_ns = "",
                      .filter = {{"source", "loop"}},
                      .before = kC4,
                      .limit = 1,
                      .include_values = false});
  });
  refused_only_with_error(edited, [&] { (void)newest_channel_version(saver, "t", ""); });
  // Writes that read what is stored: a checkpoint on the newest (deltas on its list, its
  // inline values carried), a fork of an older one, pending writes, a copy, a fork.
  refused_only_with_error(edited, [&] {
    CheckpointPut next;
    next.config = {"t", "", kC4};
    next.checkpoint = make_checkpoint("1f0a0000-0000-6000-8000-000000000005", kTs,
                                      {{"messages", 5}, {"n", 1}, {"big", 1}, {"flag", 1}});
    next.new_versions = {{"messages", 5}};
    next.lists["messages"] = {4, {{0, 2, {}}, {0, 0, cbor_of(ai("next"))}}};
    next.writes = {{"task-5", {special("messages", 1, TaskWrite::Kind::appended)}}};
    CheckpointPut fork;
    fork.config = {"t", "", kC2};
    fork.checkpoint = make_checkpoint("1f0a0000-0000-6000-8000-000000000006", kTs,
                                      {{"messages", 6}, {"n", 2}, {"big", 2}, {"flag", 1}});
    fork.new_versions = {{"messages", 6}};
    fork.lists["messages"] = {2, {{1, 3, {}}}};
    CheckpointPut sub;
    sub.config = {"t", "sub", "s-2"};
    sub.checkpoint = make_checkpoint("s-3", kTs, {{"messages", 3}});
    sub.new_versions = {{"messages", 3}};
    sub.lists["messages"] = {1, {{0, 1, {}}}};
    (void)saver.put_all({next, fork, sub});
  });
  refused_only_with_error(edited, [&] { saver.put_writes({"t", "", kC4}, {{"n", 9}}, "task-6"); });
  refused_only_with_error(edited, [&] {
    if (auto latest = saver.get_tuple({"t", "", ""})) (void)fork_checkpoint(saver, *latest);
  });
  refused_only_with_error(edited, [&] {
    saver.copy_thread("t", "u");
    (void)saver.get_tuple({"u", "", kC2});
  });
  refused_only_with_error(edited, [&] { saver.prune({"t"}, PruneStrategy::keep_latest); });
  refused_only_with_error(edited, [&] { saver.delete_thread("t"); });
  return 0;
}

SG_FUZZ_ENTRY(sg::fuzz::checkpoint_record)
