// SPDX-License-Identifier: MIT
// KvCheckpointer's shards: the lock of each thread's writes, and the caches of the newest records
// (what each shard keeps, and how much: the least recently used threads are dropped).
// Layout and helpers: kv_format.hpp.
#include <algorithm>

#include "kv_saver_impl.hpp"

namespace sg {

using namespace kv_format;  // NOLINT: this module's own helpers

KvCheckpointer::Impl::Shard& KvCheckpointer::Impl::shard_of(std::string_view key) {
  const std::string_view thread = key.substr(0, key.find('\0'));
  return shards_[std::hash<std::string_view>{}(thread) % kShards];
}

std::vector<std::unique_lock<std::mutex>> KvCheckpointer::Impl::lock_threads(
    const std::vector<std::string>& thread_prefixes) {
  std::vector<Shard*> shards;
  for (const auto& tp : thread_prefixes) shards.push_back(&shard_of(tp));
  std::sort(shards.begin(), shards.end());  // one order for every writer: no deadlock
  shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
  std::vector<std::unique_lock<std::mutex>> locks;
  locks.reserve(shards.size());
  for (Shard* shard : shards) {
    locks.emplace_back(shard->mu);
    bound_caches(*shard);
  }
  return locks;
}

std::uint64_t KvCheckpointer::Impl::next_seq(const Staged& staged, const std::string& prefix) {
  if (auto staged_seq = staged.seqs.find(prefix); staged_seq != staged.seqs.end())
    return staged_seq->second;
  Shard& shard = shard_of(prefix);
  auto it = shard.next_seq.find(prefix);
  if (it != shard.next_seq.end()) return it->second;
  std::uint64_t next = 0;
  kv_->scan(Column::messages, prefix, prefix_end(prefix), true,
            [&](std::string_view key, std::string_view) {
              next = read_u64(key.substr(prefix.size())) + 1;
              return false;
            });
  shard.next_seq[prefix] = next;
  touch(prefix);
  return next;
}

void KvCheckpointer::Impl::forget_thread(const std::string& thread_key) {
  forget(shard_of(thread_key), thread_key);
}

void KvCheckpointer::Impl::forget(Shard& shard, const std::string& thread_key) {
  auto drop = [&](auto& cache) {
    for (auto it = cache.lower_bound(thread_key);
         it != cache.end() && it->first.compare(0, thread_key.size(), thread_key) == 0;) {
      it = cache.erase(it);
    }
  };
  drop(shard.next_seq);
  drop(shard.views);
  drop(shard.latest);
  drop(shard.inlines);
  drop(shard.heads);  // fences are not caches: the tokens this object's writes must expect
  if (const auto at = shard.recent_at.find(thread_key); at != shard.recent_at.end()) {
    const auto node = at->second;
    shard.recent_at.erase(at);
    shard.recent.erase(node);
  }
}

void KvCheckpointer::Impl::touch(std::string_view key) {
  const std::string_view tp = key.substr(0, key.find('\0') + 1);
  Shard& shard = shard_of(tp);
  if (!shard.recent.empty() && shard.recent.front() == tp) return;
  if (const auto at = shard.recent_at.find(tp); at != shard.recent_at.end()) {
    shard.recent.splice(shard.recent.begin(), shard.recent, at->second);
    return;
  }
  shard.recent.emplace_front(tp);
  shard.recent_at.emplace(shard.recent.front(), shard.recent.begin());
}

void KvCheckpointer::Impl::bound_caches(Shard& shard) const {
  while (shard.recent.size() > cached_per_shard_.load(std::memory_order_relaxed)) {
    const std::string oldest = shard.recent.back();  // a copy: forget() erases the node
    forget(shard, oldest);
  }
}

void KvCheckpointer::Impl::set_cached_threads(std::size_t threads) {
  cached_per_shard_.store(std::max<std::size_t>(threads / kShards, 1), std::memory_order_relaxed);
}

void KvCheckpointer::set_cached_threads(std::size_t threads) {
  impl_->set_cached_threads(threads);
}

}  // namespace sg
