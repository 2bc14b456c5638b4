// SPDX-License-Identifier: MIT
// KvCheckpointer: deleting, copying and pruning threads. Layout and helpers: kv_format.hpp.
#include "kv_saver_impl.hpp"

namespace sg {

using namespace kv_format;  // NOLINT: this module's own helpers

void KvCheckpointer::Impl::delete_thread(const std::string& thread_id) {
  check_name("thread_id", thread_id);
  const std::string tp = thread_prefix(thread_id);
  const auto locks = lock_threads({tp});
  std::vector<KvOp> batch;
  for (std::uint8_t column = 0; column < Column::count; ++column)
    batch.push_back({KvOp::Kind::erase_range, column, tp, prefix_end(tp)});
  write_guarded(batch, {tp}, Guard::new_head);
  forget_thread(tp);
}

void KvCheckpointer::Impl::copy_thread(const std::string& source, const std::string& target) {
  check_name("thread_id", source);
  check_name("thread_id", target);
  if (source == target) return;
  const std::string from = thread_prefix(source);
  const std::string to = thread_prefix(target);
  const auto locks = lock_threads({to});
  std::vector<KvOp> batch;
  for (std::uint8_t column = 0; column < Column::count; ++column) {
    batch.push_back({KvOp::Kind::erase_range, column, to, prefix_end(to)});
    kv_->scan(column, from, prefix_end(from), false,
              [&](std::string_view key, std::string_view value) {
                batch.push_back({KvOp::Kind::put, column, to + std::string(key.substr(from.size())),
                                 std::string(value)});
                return true;
              });
  }
  write_guarded(batch, {to}, Guard::new_head);
  forget_thread(to);
}

void KvCheckpointer::Impl::prune(const std::vector<std::string>& thread_ids,
                                 PruneStrategy strategy) {
  if (strategy == PruneStrategy::delete_all) {
    for (const auto& t : thread_ids) delete_thread(t);
    return;
  }
  for (const auto& thread : thread_ids) {
    for (const auto& ns : namespaces(thread)) {
      auto latest = get_tuple(CheckpointConfig{thread, ns, {}});
      if (!latest) continue;
      const std::string prefix = prefix_of(thread, ns);
      const std::string& keep_id = latest->config.checkpoint_id;
      const auto locks = lock_threads({thread_prefix(thread)});
      std::vector<KvOp> batch;
      // Older checkpoints and their writes.
      batch.push_back({KvOp::Kind::erase_range, Column::checkpoints, prefix, prefix + keep_id});
      batch.push_back({KvOp::Kind::erase_range, Column::writes, prefix, prefix + keep_id});
      // Values the kept checkpoint does not use; log messages its views do not reference (kept
      // as ranges: a view's range may be as long as the log's sequence numbers go).
      std::map<std::string, Ranges> keep_ranges;
      auto keep_view = [&](const std::string& channel, const json& view) {
        const Ranges ranges = ranges_from_json(view, {thread, keep_id, "message view"});
        Ranges& kept = keep_ranges[channel];
        kept.insert(kept.end(), ranges.begin(), ranges.end());
      };
      if (auto stored = kv_->get(Column::checkpoints, prefix + keep_id)) {
        const auto record = read_record(thread, ns, prefix + keep_id, *stored);
        for (const auto& [channel, item] : record->values.items()) {
          if (item[1] == std::string(1, kViewBlob)) keep_view(channel, item[2]);
        }
      }
      kv_->scan(
          Column::blobs, prefix, prefix_end(prefix), false,
          [&](std::string_view key, std::string_view data) {
            const std::string_view rest = key.substr(prefix.size());
            if (rest.find('\0') == std::string_view::npos)
              corrupt({thread, keep_id, "blob key"}, "no channel name ends it");
            const std::string channel(rest.substr(0, rest.find('\0')));
            const auto version =
                static_cast<std::int64_t>(read_u64(rest.substr(channel.size() + 1)) ^ (1ULL << 63));
            auto used = latest->checkpoint.channel_versions.find(channel);
            if (used == latest->checkpoint.channel_versions.end() || used->second != version) {
              batch.push_back({KvOp::Kind::erase, Column::blobs, std::string(key), {}});
              return true;
            }
            char kind = 0;
            const json value = open_envelope(
                data, 0, {thread, keep_id, "value of channel '" + channel + "'"}, &kind);
            if (kind == kViewBlob) keep_view(channel, value);
            return true;
          });
      kv_->scan(Column::messages, prefix, prefix_end(prefix), false,
                [&](std::string_view key, std::string_view) {
                  const std::string_view rest = key.substr(prefix.size());
                  if (rest.find('\0') == std::string_view::npos)
                    corrupt({thread, keep_id, "message key"}, "no channel name ends it");
                  const std::string channel(rest.substr(0, rest.find('\0')));
                  const std::uint64_t seq = read_u64(rest.substr(channel.size() + 1));
                  auto kept = keep_ranges.find(channel);
                  if (kept == keep_ranges.end() || !in_ranges(kept->second, seq)) {
                    batch.push_back({KvOp::Kind::erase, Column::messages, std::string(key), {}});
                  }
                  return true;
                });
      write_guarded(batch, {thread_prefix(thread)}, Guard::new_head);
      forget_thread(thread_prefix(thread));
    }
  }
}

// ------------------------------------------------------------------ the public class forwards

void KvCheckpointer::delete_thread(const std::string& thread_id) {
  impl_->delete_thread(thread_id);
}

void KvCheckpointer::copy_thread(const std::string& source, const std::string& target) {
  impl_->copy_thread(source, target);
}

void KvCheckpointer::prune(const std::vector<std::string>& thread_ids, PruneStrategy strategy) {
  impl_->prune(thread_ids, strategy);
}

}  // namespace sg
