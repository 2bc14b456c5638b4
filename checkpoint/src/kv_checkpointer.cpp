// SPDX-License-Identifier: MIT
// KvCheckpointer: writing checkpoints and writes (deleting, copying and pruning threads:
// kv_checkpointer_threads.cpp; heads and fences on a shared backend: kv_checkpointer_shared.cpp;
// the shards, their locks and caches: kv_checkpointer_caches.cpp).
// Layout and helpers: kv_format.hpp.
#include "kv_saver_impl.hpp"

namespace sg {

using namespace kv_format;  // NOLINT: this module's own helpers

KvCheckpointer::Impl::Impl(std::unique_ptr<detail::KvBackend> kv) : kv_(std::move(kv)) {}

template <typename Work>
auto KvCheckpointer::Impl::retrying(Work&& stage_and_commit) {
  constexpr int kAttempts = 5;
  for (int attempt = 1;; ++attempt) {
    try {
      return stage_and_commit();
    } catch (const detail::KvConflict& e) {
      // Another process wrote a thread this write used: commit() dropped its caches, so the
      // next attempt stages from what is stored.
      if (attempt == kAttempts) {
        throw CheckpointError(errc::kCheckpointIo,
                              fmt::format("other processes kept writing the same thread ({} "
                                          "attempts): {}",
                                          kAttempts, e.what()));
      }
    }
  }
}

const KvCheckpointer::Impl::InlineValues& KvCheckpointer::Impl::parent_inline(
    const Staged& staged, const std::string& thread, const std::string& ns,
    const std::string& parent_id, InlineValues& read) {
  if (parent_id.empty()) return read;
  const std::string prefix = prefix_of(thread, ns);
  using Inlines = std::map<std::string, std::pair<std::string, InlineValues>>;
  for (const Inlines* inlines :
       {&staged.inlines, static_cast<const Inlines*>(&shard_of(prefix).inlines)}) {
    auto it = inlines->find(prefix);
    if (it != inlines->end() && it->second.first == parent_id) return it->second.second;
  }
  auto stored = kv_->get(Column::checkpoints, prefix + parent_id);
  if (!stored) return read;  // an unknown parent: nothing to carry over
  auto record = read_record(thread, ns, prefix + parent_id, *stored);
  for (const auto& [channel, item] : record->values.items()) {
    const auto cbor = json::to_cbor(item);
    read[channel] = InlineValue{item.at(0).get<std::int64_t>(),
                                std::make_shared<const std::string>(cbor.begin(), cbor.end())};
  }
  return read;
}

KvCheckpointer::Impl::LogRanges KvCheckpointer::Impl::base_view(
    Staged& staged, const InlineValues& parent, const std::string& prefix,
    const std::string& channel, std::int64_t version, const CheckpointConfig& config,
    const Checkpoint& checkpoint) {
  const std::string log = log_prefix(prefix, channel);
  using Views = std::map<std::string, std::pair<std::int64_t, Ranges>>;
  for (const Views* views : {static_cast<const Views*>(&staged.views),
                             static_cast<const Views*>(&shard_of(log).views)}) {
    auto it = views->find(log);
    if (it != views->end() && it->second.first == version) return it->second.second;
  }
  const Origin origin{config.thread_id, checkpoint.id, "message view"};
  // The base's inline item [version, kind, value] (in the parent's record or another one), or
  // its blob.
  std::shared_ptr<const std::string> inline_item;
  json plain;  // the base stored as a whole value (a put() of the list, or a fork)
  if (auto it = parent.find(channel);
      it != parent.end() && it->second.version == version && it->second.item) {
    inline_item = it->second.item;
  } else if (auto stored = kv_->get(Column::blobs, blob_key(prefix, channel, version))) {
    char kind = 0;
    json body = open_envelope(*stored, kViewBlob, origin, &kind);
    if (kind == kViewBlob) return ranges_from_json(body, origin);
    if (kind != kJsonBlob) corrupt(origin, fmt::format("record kind '{}' of a list", kind));
    plain = std::move(body);
  } else if (auto found =
                 find_inline(staged, config.thread_id, config.checkpoint_ns, channel, version);
             found && found->item) {
    inline_item = std::move(found->item);
  } else {
    invalid(
        fmt::format("list delta: channel '{}' has no version {} to build on", channel, version));
  }
  if (inline_item) {
    try {
      json item = json::from_cbor(*inline_item);
      if (item.at(1) == std::string(1, kViewBlob)) return ranges_from_json(item.at(2), origin);
      plain = std::move(item.at(2));
    } catch (const json::exception& e) {
      corrupt(origin, e.what());
    }
  }
  if (!plain.is_array()) {
    invalid(fmt::format("list delta: version {} of channel '{}' is not a list", version, channel));
  }
  // Its items go to the log once; the delta's ranges then refer to them.
  std::uint64_t seq = next_seq(staged, log);
  Ranges ranges;
  std::string cbor;
  for (const json& item : plain) {
    cbor.clear();
    CborWriter(cbor).value(item);
    stage_log_item(staged.batch, log, seq, cbor, ranges);
  }
  staged.seqs[log] = seq;
  return ranges;
}

std::optional<KvCheckpointer::Impl::InlineValue> KvCheckpointer::Impl::find_inline(
    const Staged& staged, const std::string& thread, const std::string& ns,
    const std::string& channel, std::int64_t version) {
  const std::string prefix = prefix_of(thread, ns);
  using Inlines = std::map<std::string, std::pair<std::string, InlineValues>>;
  for (const Inlines* inlines :
       {&staged.inlines, static_cast<const Inlines*>(&shard_of(prefix).inlines)}) {
    auto it = inlines->find(prefix);
    if (it == inlines->end()) continue;
    auto v = it->second.second.find(channel);
    if (v != it->second.second.end() && v->second.version == version) return v->second;
  }
  if (kv_->get(Column::blobs, blob_key(prefix, channel, version)))
    return InlineValue{version, nullptr};
  std::optional<InlineValue> found;
  kv_->scan(
      Column::checkpoints, prefix, prefix_end(prefix), true,
      [&](std::string_view key, std::string_view data) {
        const auto record = read_record(thread, ns, key, data);
        auto item = record->values.find(channel);
        if (item == record->values.end() || (*item)[0].get<std::int64_t>() != version) return true;
        const auto cbor = json::to_cbor(*item);
        found = InlineValue{version, std::make_shared<const std::string>(cbor.begin(), cbor.end())};
        return false;
      });
  return found;
}

void KvCheckpointer::Impl::stage_put(Staged& staged, const CheckpointConfig& config,
                                     const Checkpoint& checkpoint, const json& metadata,
                                     const ChannelVersions& new_versions,
                                     const std::vector<TaskWrites>* parent_writes,
                                     const std::map<std::string, ListDelta>* lists) {
  if (config.thread_id.empty()) invalid("put: the config needs a thread_id");
  if (checkpoint.id.empty()) invalid("put: the checkpoint needs an id");
  check_name("thread_id", config.thread_id);
  check_name("checkpoint_ns", config.checkpoint_ns);
  enter(staged, config.thread_id);
  const std::string prefix = prefix_of(config.thread_id, config.checkpoint_ns);
  auto& batch = staged.batch;
  if (checkpoint.id < newest_id(staged, prefix))
    keep_writes_apart(staged, config.thread_id, config.checkpoint_ns, checkpoint.id);
  InlineValues read;  // the parent's values when no cache has them
  const InlineValues& parent =
      parent_inline(staged, config.thread_id, config.checkpoint_ns, config.checkpoint_id, read);

  // Small values of unchanged channels come along from the parent's record (or, for a put not
  // chained to the checkpoint that wrote them, from wherever they are).
  InlineValues values;
  for (const auto& [channel, version] : checkpoint.channel_versions) {
    if (new_versions.count(channel)) continue;
    auto it = parent.find(channel);
    if (it != parent.end() && it->second.version == version) {
      values.insert(*it);
    } else if (auto found =
                   find_inline(staged, config.thread_id, config.checkpoint_ns, channel, version)) {
      values[channel] = std::move(*found);
    }
  }
  // A new value: in the record if small, else in a blob.
  auto store = [&](const std::string& channel, std::int64_t version, char kind,
                   auto&& write_value) {
    // The inline item [version, kind, value]; its value part is the blob's body if too large.
    auto item = std::make_shared<std::string>();
    item->reserve(kInlineMaxBytes + 16);
    CborWriter w(*item);
    w.array(3);
    w.integer(version);
    w.text(std::string_view(&kind, 1));
    const std::size_t body_at = item->size();
    write_value(w);
    const std::size_t body_size = item->size() - body_at;
    if (body_size <= kInlineMaxBytes && body_size > 0) {
      values[channel] = InlineValue{version, std::move(item)};
    } else {
      batch.push_back({KvOp::Kind::put, Column::blobs, blob_key(prefix, channel, version),
                       envelope_of_cbor(kind, std::string_view(*item).substr(body_at))});
      values[channel] = InlineValue{version, nullptr};  // "in a blob", for the caches only
    }
  };

  for (const auto& [channel, version] : new_versions) {
    check_name("channel", channel);
    const ListDelta* delta = nullptr;
    if (lists) {
      if (auto it = lists->find(channel); it != lists->end()) delta = &it->second;
    }
    auto value = checkpoint.channel_values.find(channel);
    if (!delta) {
      if (value == checkpoint.channel_values.end()) {
        store(channel, version, kEmptyBlob, [](CborWriter& w) { w.value(json()); });
      } else {
        store(channel, version, kJsonBlob, [&](CborWriter& w) { w.value(*value); });
      }
      continue;
    }
    if (value != checkpoint.channel_values.end())
      invalid(fmt::format("put_all: channel '{}' has both a value and a list delta", channel));
    // A list delta: base positions and new items -> log ranges.
    const Ranges base = delta->base >= 0 ? base_view(staged, parent, prefix, channel, delta->base,
                                                     config, checkpoint)
                                         : Ranges{};
    const std::string log = log_prefix(prefix, channel);
    std::uint64_t seq = next_seq(staged, log);
    Ranges ranges;
    for (const ListPiece& piece : delta->pieces) {
      if (!piece.is_new()) {
        map_positions(base, piece.from, piece.to, ranges);
        continue;
      }
      if (!is_cbor_item(piece.item))
        invalid(
            fmt::format("list delta of channel '{}': a new item is not one CBOR value", channel));
      stage_log_item(batch, log, seq, piece.item, ranges);
    }
    staged.seqs[log] = seq;
    store(channel, version, kViewBlob, [&](CborWriter& w) { write_view(w, ranges); });
    staged.views[log] = {version, std::move(ranges)};
  }
  if (lists) {
    for (const auto& [channel, delta] : *lists) {
      if (!new_versions.count(channel))
        invalid(fmt::format("put_all: the list delta of channel '{}' has no new version", channel));
    }
  }

  static const json kNoMetadata = json::object();
  const json& meta = metadata.is_null() ? kNoMetadata : metadata;  // no copy
  // A canonical run_id goes in "r" as its 16 bytes.
  std::optional<UuidBytes> run_id;
  if (auto it = meta.find("run_id"); it != meta.end() && it->is_string())
    run_id = uuid_bytes(it->get_ref<const std::string&>());
  std::size_t capacity = 256;  // the record without its inline values, usually
  for (const auto& [channel, v] : values) {
    if (v.item) capacity += channel.size() + v.item->size() + 2;
  }
  batch.push_back({KvOp::Kind::put, Column::checkpoints, prefix + checkpoint.id,
                   envelope_with(
                       kRecord,
                       [&](CborWriter& w) {
                         // Short keys; the id is the key's. See docs/checkpoint-format.md.
                         w.map((run_id ? 8 : 7) + (parent_writes ? 1 : 0));
                         // "w" first: a reader checks for it without decoding the record.
                         if (parent_writes) {
                           w.text("w");
                           w.array(parent_writes->size());
                           for (const auto& task : *parent_writes) {
                             w.array(2);
                             w.text(task.task_id);
                             write_bundle(w, prefix, task.writes, staged, values);
                           }
                         }
                         w.text("v");
                         w.integer(checkpoint.v);
                         w.text("t");
                         if (auto micros = ts_micros(checkpoint.ts)) {
                           w.integer(*micros);
                         } else {
                           w.text(checkpoint.ts);
                         }
                         w.text("cv");
                         write_versions(w, checkpoint.channel_versions);
                         w.text("vs");
                         w.map(checkpoint.versions_seen.size());
                         for (const auto& [node, seen] : checkpoint.versions_seen) {
                           w.text(node);
                           if (seen.size() == 1 && is_trigger_of(seen.begin()->first, node)) {
                             w.integer(seen.begin()->second);  // {"branch:to:NODE": V} as V
                           } else {
                             write_versions(w, seen);
                           }
                         }
                         w.text("m");
                         if (run_id) {
                           w.map(meta.size() - 1);
                           for (const auto& [key, value] : meta.items()) {
                             if (key == "run_id") continue;
                             w.text(key);
                             w.value(value);
                           }
                           w.text("r");
                           w.bytes(std::string_view(run_id->data(), run_id->size()));
                         } else {
                           w.value(meta);
                         }
                         w.text("p");
                         if (auto bytes = uuid_bytes(config.checkpoint_id)) {
                           w.bytes(std::string_view(bytes->data(), bytes->size()));
                         } else {
                           w.text(config.checkpoint_id);
                         }
                         w.text("x");
                         w.map(static_cast<std::size_t>(std::count_if(
                             values.begin(), values.end(),
                             [](const auto& v) { return v.second.item != nullptr; })));
                         for (const auto& [channel, v] : values) {
                           if (!v.item) continue;
                           w.text(channel);
                           w.raw(*v.item);
                         }
                       },
                       capacity)});
  auto& newest = staged.latest[prefix];
  if (newest < checkpoint.id) newest = checkpoint.id;
  staged.inlines[prefix] = {checkpoint.id, std::move(values)};
}

void KvCheckpointer::Impl::commit(Staged& staged) {
  write_guarded(staged.batch, staged.threads, Guard::expect_head);
  for (auto& [log, seq] : staged.seqs) {
    shard_of(log).next_seq[log] = seq;
    touch(log);
  }
  for (auto& [log, view] : staged.views) {
    shard_of(log).views[log] = std::move(view);
    touch(log);
  }
  for (auto& [prefix, values] : staged.inlines) {
    shard_of(prefix).inlines[prefix] = std::move(values);
    touch(prefix);
  }
  for (auto& [prefix, id] : staged.latest) {
    // Only a known newest id can be advanced: without one, older storage is unknown.
    auto& latest = shard_of(prefix).latest;
    auto it = latest.find(prefix);
    if (it != latest.end() && it->second < id) it->second = id;
  }
}

CheckpointConfig KvCheckpointer::Impl::put(const CheckpointConfig& config,
                                           const Checkpoint& checkpoint, const json& metadata,
                                           const ChannelVersions& new_versions) {
  const auto locks = lock_threads({thread_prefix(config.thread_id)});
  retrying([&] {
    Staged staged;
    stage_put(staged, config, checkpoint, metadata, new_versions);
    commit(staged);
  });
  return CheckpointConfig{config.thread_id, config.checkpoint_ns, checkpoint.id};
}

std::vector<CheckpointConfig> KvCheckpointer::Impl::put_all(
    const std::vector<CheckpointPut>& puts) {
  std::vector<std::string> threads;
  threads.reserve(puts.size());
  for (const auto& p : puts) threads.push_back(thread_prefix(p.config.thread_id));
  const auto locks = lock_threads(threads);
  return retrying([&] {
    Staged staged;
    std::vector<CheckpointConfig> out;
    out.reserve(puts.size());
    for (const auto& p : puts) {
      // The writes of the tasks that just ran (nothing is saved under their ids yet) go in the
      // new record when its parent is the newest checkpoint, so the new one is the next key after
      // it (where reads look); otherwise in a record of their own. Either way appended messages
      // and blob values refer to what the new checkpoint stores.
      const bool embed = !p.writes.empty() && !p.config.checkpoint_id.empty() &&
                         p.checkpoint.id > p.config.checkpoint_id &&
                         newest_id(staged, prefix_of(p.config.thread_id, p.config.checkpoint_ns)) ==
                             p.config.checkpoint_id;
      stage_put(staged, p.config, p.checkpoint, p.metadata, p.new_versions,
                embed ? &p.writes : nullptr, p.lists.empty() ? nullptr : &p.lists);
      if (!embed) {
        for (const auto& w : p.writes) stage_bundle(staged, p.config, w);
      }
      out.push_back(CheckpointConfig{p.config.thread_id, p.config.checkpoint_ns, p.checkpoint.id});
    }
    if (!staged.batch.empty()) commit(staged);
    return out;
  });
}

std::optional<std::string> KvCheckpointer::Impl::latest_checkpoint_id(
    const std::string& thread_id, const std::string& checkpoint_ns) {
  if (thread_id.empty()) return std::nullopt;
  std::string id;
  const std::string tp = thread_prefix(thread_id);
  const auto locks = lock_threads({tp});
  if (kv_->shared()) {
    // Another process may have written since: the caches answer while the thread's head is the
    // one this object last saw (a point read), else they are dropped.
    std::string stored = kv_->get(Column::heads, tp).value_or(std::string());
    auto& heads = shard_of(tp).heads;
    if (const auto head = heads.find(tp); head == heads.end() || head->second != stored) {
      forget_thread(tp);
      heads[tp] = std::move(stored);  // read before the caches fill, as in enter()
      touch(tp);
    }
  }
  id = newest_id(Staged{}, prefix_of(thread_id, checkpoint_ns));
  if (id.empty()) return std::nullopt;
  return id;
}

void KvCheckpointer::Impl::keep_writes_apart(Staged& staged, const std::string& thread,
                                             const std::string& ns, const std::string& id) {
  // The stored records just before and after the new key.
  const std::string prefix = prefix_of(thread, ns);
  const std::string key = prefix + id;
  std::string before;
  kv_->scan(Column::checkpoints, prefix, key, true, [&](std::string_view k, std::string_view) {
    before = std::string(k.substr(prefix.size()));
    return false;
  });
  if (before.empty()) return;
  std::optional<Record> after;
  kv_->scan(Column::checkpoints, key, prefix_end(prefix), false,
            [&](std::string_view k, std::string_view value) {
              if (keeps_parent_writes(value)) after = read_record(thread, ns, k, value);
              return false;
            });
  if (!after || after->parent != before) return;
  // `before`'s writes are in `after`'s record, which stops being its next record: copy them
  // under `before`, one bundle per task (reads resolve the same references).
  for (const auto& task : after->parent_writes) {
    if (!task.is_array() || task.size() != 2 || !task[0].is_string()) continue;
    staged.batch.push_back({KvOp::Kind::put, Column::writes,
                            write_key(prefix, before, task[0].get<std::string>(), kBundleIndex),
                            envelope_with(kWriteBundle, [&](CborWriter& w) { w.value(task[1]); })});
  }
}

std::string KvCheckpointer::Impl::newest_id(const Staged& staged, const std::string& prefix) {
  if (auto it = staged.latest.find(prefix); it != staged.latest.end()) return it->second;
  auto& latest = shard_of(prefix).latest;
  if (auto it = latest.find(prefix); it != latest.end()) return it->second;
  std::string found;
  kv_->scan(Column::checkpoints, prefix, prefix_end(prefix), true,
            [&](std::string_view key, std::string_view) {
              found = std::string(key.substr(prefix.size()));
              return false;
            });
  if (!found.empty()) {
    latest[prefix] = found;
    touch(prefix);
  }
  return found;
}

void KvCheckpointer::Impl::put_writes(const CheckpointConfig& config,
                                      const std::vector<std::pair<std::string, json>>& writes,
                                      const std::string& task_id, const std::string& task_path) {
  TaskWrites task{task_id, {}};
  task.writes.reserve(writes.size());
  for (const auto& [channel, value] : writes) task.writes.emplace_back(channel, value);
  put_task_writes(config, task, task_path);
}

void KvCheckpointer::Impl::put_task_writes(const CheckpointConfig& config, const TaskWrites& task,
                                           const std::string& task_path) {
  const auto locks = lock_threads({thread_prefix(config.thread_id)});
  std::vector<KvOp> batch;
  stage_writes(batch, config, task, task_path);
  // No cache is used: a conflict can only be a fence.
  if (!batch.empty()) write_guarded(batch, {thread_prefix(config.thread_id)}, Guard::fence);
}

void KvCheckpointer::Impl::stage_writes(std::vector<KvOp>& batch, const CheckpointConfig& config,
                                        const TaskWrites& task, const std::string& task_path) {
  if (config.thread_id.empty()) invalid("put_writes: the config needs a thread_id");
  if (config.checkpoint_id.empty()) invalid("put_writes: the config needs a checkpoint_id");
  check_name("thread_id", config.thread_id);
  check_name("task_id", task.task_id);
  const std::string prefix = prefix_of(config.thread_id, config.checkpoint_ns);
  for (std::size_t i = 0; i < task.writes.size(); ++i) {
    const TaskWrite& write = task.writes[i];
    const auto special = special_write_index(write.channel);
    const int idx = special ? *special : static_cast<int>(i);
    std::string key = write_key(prefix, config.checkpoint_id, task.task_id, idx);
    if (!special && kv_->get(Column::writes, key))
      continue;  // a re-run task cannot change saved writes
    if (write.kind == TaskWrite::Kind::appended)
      invalid("put_writes: '" + write.channel + "': an appended write goes only with put_all");
    batch.push_back(
        {KvOp::Kind::put, Column::writes, std::move(key), envelope_with(kWrite, [&](CborWriter& w) {
           w.map(3);
           w.text("channel");
           w.text(write.channel);
           w.text("value");
           write_plain(w, write);
           w.text("task_path");
           w.text(task_path);
         })});
  }
}

void KvCheckpointer::Impl::stage_bundle(Staged& staged, const CheckpointConfig& config,
                                        const TaskWrites& task) {
  check_name("task_id", task.task_id);
  enter(staged, config.thread_id);
  const std::string prefix = prefix_of(config.thread_id, config.checkpoint_ns);
  static const InlineValues kNone;
  const auto in = staged.inlines.find(prefix);
  const InlineValues& stored = in == staged.inlines.end() ? kNone : in->second.second;
  std::string value = envelope_with(
      kWriteBundle, [&](CborWriter& w) { write_bundle(w, prefix, task.writes, staged, stored); });
  staged.batch.push_back({KvOp::Kind::put, Column::writes,
                          write_key(prefix, config.checkpoint_id, task.task_id, kBundleIndex),
                          std::move(value)});
}

void KvCheckpointer::Impl::write_bundle(detail::CborWriter<std::string>& w,
                                        const std::string& prefix,
                                        const std::vector<TaskWrite>& writes, const Staged& staged,
                                        const InlineValues& stored) {
  w.array(writes.size());
  for (const TaskWrite& write : writes) {
    w.array(2);
    w.text(write.channel);
    write_value(w, prefix, write, staged, stored);
  }
}

void KvCheckpointer::Impl::write_value(detail::CborWriter<std::string>& w,
                                       const std::string& prefix, const TaskWrite& write,
                                       const Staged& staged, const InlineValues& stored) {
  switch (write.kind) {
    case TaskWrite::Kind::appended: {
      // The last `count` items of the channel's view in the staged checkpoint, stored as
      // {"$log": {"ranges": [[from, to], ...]}}.
      const auto it = staged.views.find(log_prefix(prefix, write.channel));
      if (it == staged.views.end())
        invalid("put_all: an appended write to '" + write.channel + "' without a staged list");
      w.map(1);
      w.text(kLogWrite);
      write_view(w, last_positions(it->second.second, write.count));
      return;
    }
    case TaskWrite::Kind::stored:
      // {"$blob": version} when the checkpoint keeps the value in a blob.
      if (auto v = stored.find(write.channel); v != stored.end() && !v->second.item) {
        w.map(1);
        w.text(kBlobWrite);
        w.integer(v->second.version);
        return;
      }
      break;
    case TaskWrite::Kind::value:
    case TaskWrite::Kind::items:
      break;
  }
  write_plain(w, write);
}

// ------------------------------------------------------------------ the public class forwards

KvCheckpointer::KvCheckpointer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KvCheckpointer::KvCheckpointer(std::unique_ptr<detail::KvBackend> kv)
    : impl_(std::make_unique<Impl>(std::move(kv))) {}
KvCheckpointer::~KvCheckpointer() = default;

CheckpointConfig KvCheckpointer::put(const CheckpointConfig& config, const Checkpoint& checkpoint,
                                     const json& metadata, const ChannelVersions& new_versions) {
  return impl_->put(config, checkpoint, metadata, new_versions);
}

std::vector<CheckpointConfig> KvCheckpointer::put_all(const std::vector<CheckpointPut>& puts) {
  return impl_->put_all(puts);
}

std::optional<std::string> KvCheckpointer::latest_checkpoint_id(const std::string& thread_id,
                                                                const std::string& checkpoint_ns) {
  return impl_->latest_checkpoint_id(thread_id, checkpoint_ns);
}

void KvCheckpointer::put_writes(const CheckpointConfig& config,
                                const std::vector<std::pair<std::string, json>>& writes,
                                const std::string& task_id, const std::string& task_path) {
  impl_->put_writes(config, writes, task_id, task_path);
}

void KvCheckpointer::put_task_writes(const CheckpointConfig& config, const TaskWrites& task,
                                     const std::string& task_path) {
  impl_->put_task_writes(config, task, task_path);
}

}  // namespace sg
