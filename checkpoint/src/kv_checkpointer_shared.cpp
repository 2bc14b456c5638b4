// SPDX-License-Identifier: MIT
// KvCheckpointer on a backend that processes share (Postgres): the heads that tell a process
// whether its caches of a thread still hold, and the fences that keep a worker which lost its run
// from writing. Layout: kv_format.hpp (Column::heads, Column::fences).
#include <stategraph/core/callbacks.hpp>
#include <stategraph/core/uuid.hpp>

#include "kv_saver_impl.hpp"

namespace sg {

using namespace kv_format;  // NOLINT: this module's own helpers

void KvCheckpointer::Impl::enter(Staged& staged, const std::string& thread_id) {
  if (!kv_->shared()) return;
  std::string tp = thread_prefix(thread_id);
  if (std::find(staged.threads.begin(), staged.threads.end(), tp) != staged.threads.end()) return;
  if (auto& heads = shard_of(tp).heads; !heads.contains(tp)) {
    // Read the head before the caches fill: a write of another process in between changes the
    // head, and commit() then fails rather than trust them.
    forget_thread(tp);
    heads[tp] = kv_->get(Column::heads, tp).value_or(std::string());
    touch(tp);
  }
  staged.threads.push_back(std::move(tp));
}

void KvCheckpointer::Impl::guard(std::vector<KvOp>& batch, const std::string& tp,
                                 bool expect_head) {
  Shard& shard = shard_of(tp);
  if (auto fence = shard.fences.find(tp); fence != shard.fences.end()) {
    batch.push_back({KvOp::Kind::expect, Column::fences, tp, fence->second});
  }
  if (expect_head) {
    // An expect and a put of one key: the backend may do both as one compare-and-set.
    batch.push_back({KvOp::Kind::expect, Column::heads, tp, shard.heads[tp]});
    batch.push_back({KvOp::Kind::put, Column::heads, tp, new_uuid4()});
  }
}

void KvCheckpointer::Impl::write_guarded(std::vector<KvOp>& batch,
                                         const std::vector<std::string>& thread_prefixes,
                                         Guard mode) {
  std::uint64_t bytes = 0;  // what checkpoint spans report (note_checkpoint_bytes)
  for (const KvOp& op : batch) {
    if (op.kind == KvOp::Kind::put) bytes += op.key.size() + op.value.size();
  }
  if (!kv_->shared()) {
    kv_->write(batch);
    note_checkpoint_bytes(bytes);
    return;
  }
  const std::size_t first_guard = batch.size();
  for (const auto& tp : thread_prefixes) {
    guard(batch, tp, mode == Guard::expect_head);
    // A write that did not use the caches but changes what they hold (a delete, a copy) makes
    // other processes' caches of the thread stale: a new head, unconditionally.
    if (mode == Guard::new_head) batch.push_back({KvOp::Kind::put, Column::heads, tp, new_uuid4()});
  }
  try {
    kv_->write(batch);
  } catch (const detail::KvConflict&) {
    for (const auto& tp : thread_prefixes) {
      const auto& fences = shard_of(tp).fences;
      auto fence = fences.find(tp);
      if (fence != fences.end() && kv_->get(Column::fences, tp).value_or("") != fence->second) {
        throw CheckpointError(
            errc::kCheckpointFenced,
            fmt::format("thread '{}': another worker took over the run writing it (its fence "
                        "changed): this write was not applied",
                        std::string_view(tp).substr(0, tp.size() - 1)));
      }
      forget_thread(tp);
    }
    throw;
  } catch (...) {
    for (const auto& tp : thread_prefixes) forget_thread(tp);  // the outcome is unknown
    throw;
  }
  note_checkpoint_bytes(bytes);
  for (std::size_t i = first_guard; i < batch.size(); ++i) {
    if (batch[i].kind == KvOp::Kind::put && batch[i].space == Column::heads) {
      shard_of(batch[i].key).heads[batch[i].key] = batch[i].value;
      touch(batch[i].key);
    }
  }
}

void KvCheckpointer::Impl::fence(const std::string& thread_id, std::string token) {
  check_name("thread_id", thread_id);
  if (!kv_->shared()) return;  // one process writes: nobody to fence out
  const std::string tp = thread_prefix(thread_id);
  const auto locks = lock_threads({tp});
  if (token.empty()) {
    shard_of(tp).fences.erase(tp);
  } else {
    shard_of(tp).fences[tp] = std::move(token);
  }
}

// ------------------------------------------------------------------ the public class forwards

void KvCheckpointer::fence(const std::string& thread_id, std::string token) {
  impl_->fence(thread_id, std::move(token));
}

std::pair<std::uint8_t, std::string> KvCheckpointer::fence_key(const std::string& thread_id) {
  return {Column::fences, thread_prefix(thread_id)};
}

std::vector<std::pair<std::uint8_t, int>> KvCheckpointer::appended_spaces() noexcept {
  // T\0NS\0ID (ids grow: uuid6) and T\0NS\0CHANNEL\0SEQ (kv_format.hpp).
  return {{Column::checkpoints, 2}, {Column::messages, 3}};
}

}  // namespace sg
