// SPDX-License-Identifier: MIT
// KvCheckpointer: reading checkpoints, their pending writes, threads and history.
// Layout and helpers: kv_format.hpp.
#include "kv_saver_impl.hpp"

namespace sg {

using namespace kv_format;  // NOLINT: this module's own helpers

std::optional<KvCheckpointer::Impl::Record> KvCheckpointer::Impl::read_record(
    const std::string& thread, const std::string& ns, std::string_view key,
    std::string_view value) {
  const std::string id(key.substr(prefix_of(thread, ns).size()));
  const Origin origin{thread, id, "checkpoint"};
  const json data = open_envelope(value, kRecord, origin);
  Record r;
  r.id = id;
  try {
    const std::int64_t v = stored_integer(data.at("v"), origin, "the format \"v\"");
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
      corrupt(origin, fmt::format("the format \"v\" {} is out of range", v));
    r.checkpoint.v = static_cast<int>(v);
    r.checkpoint.id = id;
    const json& ts = data.at("t");
    r.checkpoint.ts = ts.is_number() ? iso_timestamp(stored_integer(ts, origin, "the time \"t\""))
                                     : ts.get<std::string>();
    r.checkpoint.channel_versions = stored_versions(data.at("cv"), origin, "channel_versions");
    const json& seen_by = data.at("vs");
    if (!seen_by.is_object()) corrupt(origin, "versions_seen is not an object");
    for (const auto& [node, seen] : seen_by.items()) {
      r.checkpoint.versions_seen[node] =
          seen.is_number() ? ChannelVersions{{branch_channel(node),
                                              stored_integer(seen, origin, "a version seen")}}
                           : stored_versions(seen, origin, "versions_seen");
    }
    r.metadata = data.at("m");
    if (auto run_id = data.find("r"); run_id != data.end()) {
      if (!run_id->is_binary() || run_id->get_binary().size() != 16 || !r.metadata.is_object())
        corrupt({thread, id, "checkpoint"}, "bad run id");
      r.metadata["run_id"] = uuid_text(run_id->get_binary());
    }
    const json& parent = data.at("p");
    if (parent.is_binary()) {
      if (parent.get_binary().size() != 16) corrupt({thread, id, "checkpoint"}, "bad parent id");
      r.parent = uuid_text(parent.get_binary());
    } else {
      r.parent = parent.get<std::string>();
    }
    if (auto values = data.find("x"); values != data.end()) {
      if (!values->is_object()) corrupt({thread, id, "checkpoint"}, "malformed inline values");
      for (const auto& [channel, item] : values->items()) {
        if (!item.is_array() || item.size() != 3 || !item[0].is_number_integer() ||
            !item[1].is_string() || item[1].get_ref<const std::string&>().size() != 1) {
          corrupt({thread, id, "checkpoint"},
                  fmt::format("malformed value of channel '{}'", channel));
        }
      }
      r.values = *values;
    }
    if (auto writes = data.find("w"); writes != data.end()) {
      if (!writes->is_array()) corrupt({thread, id, "checkpoint"}, "malformed parent writes");
      r.parent_writes = *writes;
    }
  } catch (const json::exception& e) {
    corrupt({thread, id, "checkpoint"}, e.what());
  }
  return r;
}

json KvCheckpointer::Impl::read_channel(const std::string& thread, const std::string& ns,
                                        const std::string& checkpoint_id,
                                        const std::string& channel, std::int64_t version,
                                        bool& present) {
  const std::string prefix = prefix_of(thread, ns);
  auto stored = kv_->get(Column::blobs, blob_key(prefix, channel, version));
  present = false;
  if (!stored) return json();
  const Origin origin{thread, checkpoint_id, "value of channel '" + channel + "'"};
  char kind = 0;
  json value = open_envelope(*stored, 0, origin, &kind);
  return resolve_value(thread, ns, checkpoint_id, channel, kind, std::move(value), present);
}

json KvCheckpointer::Impl::resolve_value(const std::string& thread, const std::string& ns,
                                         const std::string& checkpoint_id,
                                         const std::string& channel, char kind, json value,
                                         bool& present) {
  const Origin origin{thread, checkpoint_id, "value of channel '" + channel + "'"};
  present = kind != kEmptyBlob;
  if (kind == kEmptyBlob) return json();
  if (kind == kJsonBlob) return value;
  if (kind != kViewBlob) corrupt(origin, fmt::format("record kind '{}'", kind));
  const Ranges ranges = ranges_from_json(value, origin);
  const std::string log = log_prefix(prefix_of(thread, ns), channel);
  json messages = json::array();
  for (const auto& [a, b] : ranges) {
    std::string lo = log;
    append_u64(lo, a);
    std::string hi = log;
    append_u64(hi, b);
    std::uint64_t expected = a;
    kv_->scan(Column::messages, lo, hi, false, [&](std::string_view key, std::string_view data) {
      const std::uint64_t seq = read_u64(key.substr(log.size()));
      if (seq != expected)
        corrupt(origin, fmt::format("message {} of the log is missing", expected));
      messages.push_back(open_envelope(data, kLogEntry, origin));
      ++expected;
      return true;
    });
    if (expected != b) corrupt(origin, fmt::format("message {} of the log is missing", expected));
  }
  return messages;
}

void KvCheckpointer::Impl::add_bundle(const std::string& thread, const std::string& ns,
                                      const std::string& task_id, json bundle, CheckpointTuple& t) {
  const Origin origin{thread, t.config.checkpoint_id, "pending write"};
  if (!bundle.is_array()) corrupt(origin, "a bundle of writes must be an array");
  for (auto& item : bundle) {
    if (!item.is_array() || item.size() != 2 || !item[0].is_string())
      corrupt(origin, "a bundled write must be [channel, value]");
    add_pending_write(thread, ns, task_id, item[0].get<std::string>(), std::move(item[1]), t);
  }
}

void KvCheckpointer::Impl::add_pending_write(const std::string& thread, const std::string& ns,
                                             std::string task_id, std::string channel, json value,
                                             CheckpointTuple& t) {
  const std::string& id = t.config.checkpoint_id;
  if (value.is_object() && value.size() == 1 && value.contains(kLogWrite)) {
    bool present = false;
    value = resolve_value(thread, ns, id, channel, kViewBlob, std::move(value[kLogWrite]), present);
  } else if (value.is_object() && value.size() == 1 && value.contains(kBlobWrite)) {
    bool present = false;
    const std::int64_t version =
        stored_integer(value[kBlobWrite], {thread, id, "pending write"}, "a blob's version");
    value = read_channel(thread, ns, id, channel, version, present);
  } else if (value.is_object() && value.size() == 1 && value.contains(kEscapedWrite)) {
    value = std::move(value[kEscapedWrite]);
  }
  t.pending_writes.push_back(
      PendingWrite{std::move(task_id), std::move(channel), std::move(value)});
}

CheckpointTuple KvCheckpointer::Impl::to_tuple(const std::string& thread, const std::string& ns,
                                               Record record, bool values, const Record* newer,
                                               bool newer_known) {
  CheckpointTuple t;
  t.config = CheckpointConfig{thread, ns, record.id};
  t.checkpoint = std::move(record.checkpoint);
  t.metadata = std::move(record.metadata);
  if (!record.parent.empty()) t.parent_config = CheckpointConfig{thread, ns, record.parent};
  if (values) {
    for (const auto& [channel, version] : t.checkpoint.channel_versions) {
      bool present = false;
      json value;
      auto item = record.values.find(channel);
      if (item != record.values.end() && (*item)[0].get<std::int64_t>() == version) {
        value = resolve_value(thread, ns, record.id, channel,
                              (*item)[1].get_ref<const std::string&>()[0], std::move((*item)[2]),
                              present);
      } else {
        value = read_channel(thread, ns, record.id, channel, version, present);
      }
      if (present) t.checkpoint.channel_values[channel] = std::move(value);
    }
  }
  std::string lo = prefix_of(thread, ns) + record.id;
  lo.push_back('\0');
  kv_->scan(Column::writes, lo, prefix_end(lo), false,
            [&](std::string_view key, std::string_view data) {
              const std::string_view rest = key.substr(lo.size());
              const std::string task_id(rest.substr(0, rest.find('\0')));
              const Origin origin{thread, record.id, "pending write"};
              char kind = 0;
              json w = open_envelope(data, 0, origin, &kind);
              if (kind == kWriteBundle) {
                add_bundle(thread, ns, task_id, std::move(w), t);
              } else if (kind == kWrite) {
                const auto channel = w.find("channel");
                if (!w.is_object() || !w.contains("value") ||
                    (channel != w.end() && !channel->is_string())) {
                  corrupt(origin, "a write must be {channel, value, task_path}");
                }
                add_pending_write(thread, ns, task_id,
                                  channel == w.end() ? std::string() : channel->get<std::string>(),
                                  std::move(w["value"]), t);
              } else {
                corrupt(origin, fmt::format("record kind '{}' where a write was expected", kind));
              }
              return true;
            });
  // The writes of the step that ran from this checkpoint, kept in the record of the checkpoint
  // it made: always the next record of the namespace (stage_put moves them when a record is put
  // in between).
  std::optional<Record> found;
  const Record* child = newer;
  if (!child && !newer_known) {
    std::string from = prefix_of(thread, ns) + record.id;
    from.push_back('\0');
    kv_->scan(Column::checkpoints, from, prefix_end(prefix_of(thread, ns)), false,
              [&](std::string_view key, std::string_view value) {
                if (keeps_parent_writes(value)) found = read_record(thread, ns, key, value);
                return false;
              });
    if (found) child = &*found;
  }
  if (child && (child->parent != record.id || !child->parent_writes.is_array())) child = nullptr;
  if (child) {
    for (const auto& task : child->parent_writes) {
      if (!task.is_array() || task.size() != 2 || !task[0].is_string()) {
        corrupt({thread, record.id, "pending write"},
                "a checkpoint's parent writes must be [task_id, [[channel, value]...]]");
      }
      add_bundle(thread, ns, task[0].get<std::string>(), task[1], t);
    }
  }
  return t;
}

std::optional<CheckpointTuple> KvCheckpointer::Impl::get_tuple(const CheckpointConfig& config) {
  if (config.thread_id.empty()) return std::nullopt;
  return in_context(
      config.thread_id, config.checkpoint_id, [&]() -> std::optional<CheckpointTuple> {
        const std::string prefix = prefix_of(config.thread_id, config.checkpoint_ns);
        std::optional<Record> record;
        std::optional<Record> newer;  // the next record, when it keeps this one's writes
        if (!config.checkpoint_id.empty()) {
          // One scan reads the record and peeks at the next one.
          const std::string key = prefix + config.checkpoint_id;
          kv_->scan(Column::checkpoints, key, prefix_end(prefix), false,
                    [&](std::string_view k, std::string_view value) {
                      if (!record) {
                        if (k != key) return false;
                        record = read_record(config.thread_id, config.checkpoint_ns, k, value);
                        return true;
                      }
                      if (keeps_parent_writes(value))
                        newer = read_record(config.thread_id, config.checkpoint_ns, k, value);
                      return false;
                    });
        } else {
          // The newest record: nothing after it.
          kv_->scan(Column::checkpoints, prefix, prefix_end(prefix), true,
                    [&](std::string_view key, std::string_view value) {
                      record = read_record(config.thread_id, config.checkpoint_ns, key, value);
                      return false;
                    });
        }
        if (!record) return std::nullopt;
        return to_tuple(config.thread_id, config.checkpoint_ns, std::move(*record), true,
                        newer ? &*newer : nullptr, /*newer_known=*/true);
      });
}

std::vector<std::string> KvCheckpointer::Impl::threads() {
  std::vector<std::string> out;
  std::string from;
  for (;;) {
    std::optional<std::string> found;
    kv_->scan(Column::checkpoints, from, {}, false, [&](std::string_view key, std::string_view) {
      found = std::string(key.substr(0, key.find('\0')));
      return false;
    });
    if (!found) break;
    out.push_back(*found);
    from = prefix_end(thread_prefix(*found));
  }
  return out;
}

std::vector<std::string> KvCheckpointer::Impl::namespaces(const std::string& thread_id) {
  std::vector<std::string> out;
  const std::string tp = thread_prefix(thread_id);
  std::string from = tp;
  const std::string end = prefix_end(tp);
  for (;;) {
    std::optional<std::string> found;
    kv_->scan(Column::checkpoints, from, end, false, [&](std::string_view key, std::string_view) {
      const std::string_view rest = key.substr(tp.size());
      found = std::string(rest.substr(0, rest.find('\0')));
      return false;
    });
    if (!found) break;
    out.push_back(*found);
    from = prefix_end(prefix_of(thread_id, *found));
  }
  return out;
}

std::vector<CheckpointTuple> KvCheckpointer::Impl::list(const ListOptions& options) {
  std::vector<std::pair<std::string, std::string>> groups;
  const std::vector<std::string> thread_ids =
      options.thread_id ? std::vector<std::string>{*options.thread_id} : threads();
  for (const auto& thread : thread_ids) {
    if (options.checkpoint_ns) {
      groups.emplace_back(thread, *options.checkpoint_ns);
    } else {
      for (auto& ns : namespaces(thread)) groups.emplace_back(thread, std::move(ns));
    }
  }
  const std::size_t limit = options.limit.value_or(std::numeric_limits<std::size_t>::max());
  std::vector<CheckpointTuple> out;
  for (const auto& group : groups) {
    // Not a structured binding: the lambdas below capture them (clang-tidy 14 cannot).
    const std::string& thread = group.first;
    const std::string& ns = group.second;
    const std::string prefix = prefix_of(thread, ns);
    const std::string upper = options.before ? prefix + *options.before : prefix_end(prefix);
    std::size_t taken = 0;
    in_context(thread, options.before.value_or(""), [&] {
      // Newest first: each record read is the next-newer neighbour of the one after it.
      std::optional<Record> newer;
      kv_->scan(Column::checkpoints, prefix, upper, true,
                [&](std::string_view key, std::string_view value) {
                  auto record = read_record(thread, ns, key, value);
                  if (!matches_filter(record->metadata, options.filter)) {
                    newer = std::move(record);
                    return true;
                  }
                  Record keep{record->id,     {}, {},
                              record->parent, {}, std::move(record->parent_writes)};
                  // Without `before`, the first record read is the newest: nothing follows it.
                  out.push_back(to_tuple(thread, ns, std::move(*record), options.include_values,
                                         newer ? &*newer : nullptr,
                                         newer.has_value() || !options.before));
                  newer = std::move(keep);
                  return ++taken < limit;
                });
    });
  }
  if (groups.size() > 1) {
    std::stable_sort(out.begin(), out.end(),
                     [](const CheckpointTuple& a, const CheckpointTuple& b) {
                       return a.config.checkpoint_id > b.config.checkpoint_id;
                     });
    if (out.size() > limit) out.resize(limit);
  }
  return out;
}

// ------------------------------------------------------------------ the public class forwards

std::optional<CheckpointTuple> KvCheckpointer::get_tuple(const CheckpointConfig& config) {
  return impl_->get_tuple(config);
}

std::vector<std::string> KvCheckpointer::threads() {
  return impl_->threads();
}

std::vector<std::string> KvCheckpointer::namespaces(const std::string& thread_id) {
  return impl_->namespaces(thread_id);
}

std::vector<CheckpointTuple> KvCheckpointer::list(const ListOptions& options) {
  return impl_->list(options);
}

}  // namespace sg
