// SPDX-License-Identifier: MIT
#include <stategraph/core/checkpointer.hpp>
#include <stategraph/core/time.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <random>

namespace sg {

std::string new_checkpoint_id(int step) {
  // UUID version 6: 60 bits of 100 ns ticks since 1582-10-15, most significant first, so ids
  // sort by time; strictly increasing within the process.
  static std::mutex mu;
  static std::uint64_t last = 0;
  static const std::uint64_t node = [] {
    std::random_device rd;
    return ((static_cast<std::uint64_t>(rd()) << 32) | rd()) & 0xFFFFFFFFFFFFULL;
  }();
  constexpr std::uint64_t kGregorianOffset = 0x01B21DD213814000ULL;
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  std::uint64_t ticks =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count() /
                                 100) +
      kGregorianOffset;
  {
    std::lock_guard lock(mu);
    if (ticks <= last) ticks = last + 1;
    last = ticks;
  }
  const auto time_high = static_cast<std::uint32_t>(ticks >> 28);
  const auto time_mid = static_cast<std::uint16_t>((ticks >> 12) & 0xFFFF);
  const auto time_low = static_cast<std::uint16_t>(0x6000 | (ticks & 0x0FFF));
  const auto clock_seq =
      static_cast<std::uint16_t>(0x8000 | (static_cast<std::uint32_t>(step) & 0x3FFF));
  // "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", lower-case hex.
  std::string id(36, '-');
  auto hex = [&](std::size_t at, std::uint64_t value, int digits) {
    static constexpr char kDigits[] = "0123456789abcdef";
    for (int i = digits - 1; i >= 0; --i) {
      id[at + static_cast<std::size_t>(i)] = kDigits[value & 0xF];
      value >>= 4;
    }
  };
  hex(0, time_high, 8);
  hex(9, time_mid, 4);
  hex(14, time_low, 4);
  hex(19, clock_seq, 4);
  hex(24, node, 12);
  return id;
}

std::vector<CheckpointConfig> Checkpointer::put_all(const std::vector<CheckpointPut>& puts) {
  std::vector<CheckpointConfig> out;
  out.reserve(puts.size());
  for (const auto& p : puts) {
    if (!p.lists.empty()) {
      throw CheckpointError(errc::kCheckpointInvalid,
                            "put_all: this checkpointer takes no list deltas (channel '" +
                                p.lists.begin()->first + "' of checkpoint '" + p.checkpoint.id +
                                "')");
    }
  }
  for (const auto& p : puts) {
    for (const auto& w : p.writes)
      put_writes(p.config, plain_writes(w.writes, &p.checkpoint), w.task_id);
    out.push_back(put(p.config, p.checkpoint, p.metadata, p.new_versions));
  }
  return out;
}

void Checkpointer::put_task_writes(const CheckpointConfig& config, const TaskWrites& task,
                                   const std::string& task_path) {
  put_writes(config, plain_writes(task.writes), task.task_id, task_path);
}

std::vector<std::pair<std::string, nlohmann::json>> plain_writes(
    const std::vector<TaskWrite>& writes, const Checkpoint* checkpoint) {
  std::vector<std::pair<std::string, nlohmann::json>> out;
  out.reserve(writes.size());
  for (const auto& w : writes) {
    switch (w.kind) {
      case TaskWrite::Kind::value:
      case TaskWrite::Kind::stored:
        out.emplace_back(w.channel, w.value);
        break;
      case TaskWrite::Kind::items: {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& item : w.items) {
          try {
            list.push_back(nlohmann::json::from_cbor(item));
          } catch (const nlohmann::json::exception& e) {
            throw CheckpointError(
                errc::kCheckpointInvalid,
                "a write to channel '" + w.channel + "' has an item that is not CBOR: " + e.what());
          }
        }
        out.emplace_back(w.channel, std::move(list));
        break;
      }
      case TaskWrite::Kind::appended: {
        const nlohmann::json* list = nullptr;
        if (checkpoint) {
          auto it = checkpoint->channel_values.find(w.channel);
          if (it != checkpoint->channel_values.end() && it->is_array()) list = &*it;
        }
        if (!list || list->size() < w.count) {
          throw CheckpointError(errc::kCheckpointInvalid,
                                "an appended write to channel '" + w.channel +
                                    "' without the list it appended to in the same put");
        }
        out.emplace_back(
            w.channel,
            nlohmann::json(list->end() - static_cast<std::ptrdiff_t>(w.count), list->end()));
        break;
      }
    }
  }
  return out;
}

std::optional<std::string> Checkpointer::latest_checkpoint_id(const std::string& thread_id,
                                                              const std::string& checkpoint_ns) {
  auto latest = get_tuple(CheckpointConfig{thread_id, checkpoint_ns, {}});
  if (!latest) return std::nullopt;
  return latest->config.checkpoint_id;
}

std::int64_t newest_channel_version(Checkpointer& saver, const std::string& thread_id,
                                    const std::string& checkpoint_ns) {
  std::int64_t version = 0;
  for (const auto& t : saver.list({.thread_id = thread_id,
                       .checkpoint_ns = checkpoint_ns,
                       .limit = 1,
                       .include_values = false})) {
    for (const auto& [channel, v] : t.checkpoint.channel_versions) version = std::max(version, v);
  }
  return version;
}

CheckpointConfig fork_checkpoint(Checkpointer& saver, const CheckpointTuple& source,
                                 const ForkOptions& options) {
  const std::string& from = source.config.thread_id;
  const std::string& ns = source.config.checkpoint_ns;
  const std::string target = options.thread_id.empty() ? from : options.thread_id;
  if (target != from) {
    if (!saver.list({.thread_id = target, .limit = 1, .include_values = false}).empty()) {
      throw CheckpointError(
          errc::kCheckpointInvalid,
          "fork: thread '" + target + "' already exists; delete it first or pick another name");
    }
    saver.copy_thread(from, target);
  }
  std::int64_t version = newest_channel_version(saver, target, ns);
  for (const auto& [channel, v] : source.checkpoint.channel_versions)
    version = std::max(version, v);
  ++version;

  const int step = source.metadata.value("step", -1);
  CheckpointPut put{};
  Checkpoint& copy = put.checkpoint;
  copy.id = new_checkpoint_id(step + 1);
  copy.ts = iso_timestamp_now();
  copy.channel_values = source.checkpoint.channel_values;
  for (const auto& [channel, v] : source.checkpoint.channel_versions) {
    copy.channel_versions[channel] = version;
    put.new_versions[channel] = version;
  }
  // A node saw the channel's current version: it still has; an older one: still older.
  copy.versions_seen = source.checkpoint.versions_seen;
  for (auto& [node, seen] : copy.versions_seen) {
    for (auto& [channel, v] : seen) {
      auto current = source.checkpoint.channel_versions.find(channel);
      if (current != source.checkpoint.channel_versions.end() && v >= current->second) v = version;
    }
  }
  std::string parent_id = source.config.checkpoint_id;
  if (options.sibling) parent_id = source.parent_config ? source.parent_config->checkpoint_id : "";
  put.config = CheckpointConfig{target, ns, std::move(parent_id)};
  put.metadata =
      nlohmann::json{{"source", "fork"},
                     {"step", step + 1},
                     {"parents", source.metadata.value("parents", nlohmann::json::object())}};
  return saver.put_all({std::move(put)}).front();
}

std::vector<std::string> prune_idle_threads(Checkpointer& saver,
                                            std::chrono::system_clock::duration idle,
                                            PruneStrategy strategy,
                                            std::chrono::system_clock::time_point now) {
  const std::int64_t cutoff =
      std::chrono::duration_cast<std::chrono::microseconds>((now - idle).time_since_epoch())
          .count();
  std::vector<std::string> idle_threads;
  for (const std::string& thread_id : saver.threads()) {
    const auto newest = saver.list(
        {.thread_id = thread_id, .checkpoint_ns = "", .limit = 2, .include_values = false});
    if (newest.empty()) continue;
    const std::optional<std::int64_t> written = parse_iso_timestamp(newest.front().checkpoint.ts);
    if (!written || *written > cutoff) continue;
    if (strategy == PruneStrategy::keep_latest && newest.size() < 2) continue;
    idle_threads.push_back(thread_id);
  }
  if (!idle_threads.empty()) saver.prune(idle_threads, strategy);
  return idle_threads;
}

}  // namespace sg
