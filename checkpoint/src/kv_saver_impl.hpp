// SPDX-License-Identifier: MIT
// KvCheckpointer's implementation (internal to the checkpoint module): the backend, the caches of
// the newest records, and the code that writes and reads the format of kv_format.hpp.
// kv_checkpointer.cpp holds the writes, kv_checkpointer_read.cpp the reads,
// kv_checkpointer_caches.cpp the shards and their caches.
#pragma once

#include <stategraph/checkpoint/kv_checkpointer.hpp>
#include <stategraph/kv/kv.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kv_format.hpp"

namespace sg {

/// Thread-safe like KvCheckpointer: writers hold the shards of their threads, readers only read
/// the backend.
struct KvCheckpointer::Impl {
 public:
  explicit Impl(std::unique_ptr<detail::KvBackend> kv);

  // The Checkpointer operations (KvCheckpointer forwards each call).
  CheckpointConfig put(const CheckpointConfig& config, const Checkpoint& checkpoint,
                       const nlohmann::json& metadata, const ChannelVersions& new_versions);
  std::vector<CheckpointConfig> put_all(const std::vector<CheckpointPut>& puts);
  void put_writes(const CheckpointConfig& config,
                  const std::vector<std::pair<std::string, nlohmann::json>>& writes,
                  const std::string& task_id, const std::string& task_path);
  void put_task_writes(const CheckpointConfig& config, const TaskWrites& task,
                       const std::string& task_path);
  std::optional<CheckpointTuple> get_tuple(const CheckpointConfig& config);
  std::optional<std::string> latest_checkpoint_id(const std::string& thread_id,
                                                  const std::string& checkpoint_ns);
  std::vector<CheckpointTuple> list(const ListOptions& options);
  std::vector<std::string> threads();
  void delete_thread(const std::string& thread_id);
  void copy_thread(const std::string& source, const std::string& target);
  void prune(const std::vector<std::string>& thread_ids, PruneStrategy strategy);
  std::vector<std::string> namespaces(const std::string& thread_id);
  void fence(const std::string& thread_id, std::string token);
  void set_cached_threads(std::size_t threads);

  /// The backend (InMemorySaver and RocksDbSaver reach their own through it).
  [[nodiscard]] detail::KvBackend& kv() noexcept { return *kv_; }
  [[nodiscard]] const detail::KvBackend& kv() const noexcept { return *kv_; }

 private:
  struct Record;
  struct Staged;
  struct Shard;
  std::optional<Record> read_record(const std::string& thread, const std::string& ns,
                                    std::string_view key, std::string_view value);
  /// A checkpoint's tuple. `newer`: the record after it in key order, when the caller read it
  /// (its "w" may hold this checkpoint's writes); otherwise it is looked up, unless
  /// `newer_known` (the caller knows no next record keeps them).
  CheckpointTuple to_tuple(const std::string& thread, const std::string& ns, Record record,
                           bool values, const Record* newer = nullptr, bool newer_known = false);
  /// Adds a bundle's writes (`[[channel, value], ...]`) of task `task_id` to `t`.
  void add_bundle(const std::string& thread, const std::string& ns, const std::string& task_id,
                  nlohmann::json bundle, CheckpointTuple& t);
  /// Adds a stored write to `t`, resolving `$log` / `$blob` references.
  void add_pending_write(const std::string& thread, const std::string& ns, std::string task_id,
                         std::string channel, nlohmann::json value, CheckpointTuple& t);
  /// The newest checkpoint id of a thread+namespace prefix, counting staged puts ("" if none).
  /// Caller holds the shard of the thread.
  std::string newest_id(const Staged& staged, const std::string& prefix);
  /// Before a record is put with an id below the newest (between a checkpoint and the next
  /// record, which may keep the checkpoint's writes): copies those writes under the checkpoint.
  /// Caller holds the shard of the thread.
  void keep_writes_apart(Staged& staged, const std::string& thread, const std::string& ns,
                         const std::string& id);
  nlohmann::json read_channel(const std::string& thread, const std::string& ns,
                              const std::string& checkpoint_id, const std::string& channel,
                              std::int64_t version, bool& present);
  using LogRanges = std::vector<std::pair<std::uint64_t, std::uint64_t>>;
  /// A small channel value kept in checkpoint records (carried from record to record while its
  /// version stays): the version and the CBOR item `[version, kind, value]` (shared, so that
  /// carrying it forward copies no bytes); no item for a value stored as a blob (known to the
  /// caches, not written).
  struct InlineValue {
    std::int64_t version = 0;
    std::shared_ptr<const std::string> item;
  };
  using InlineValues = std::map<std::string, InlineValue>;
  std::optional<InlineValue> find_inline(const Staged& staged, const std::string& thread,
                                         const std::string& ns, const std::string& channel,
                                         std::int64_t version);
  const InlineValues& parent_inline(const Staged& staged, const std::string& thread,
                                    const std::string& ns, const std::string& parent_id,
                                    InlineValues& read);
  nlohmann::json resolve_value(const std::string& thread, const std::string& ns,
                               const std::string& checkpoint_id, const std::string& channel,
                               char kind, nlohmann::json value, bool& present);
  /// Stages a checkpoint record; `parent_writes`: the writes of the tasks that made it, kept in
  /// the record (put_all, when its parent is the newest checkpoint: see checkpoint-format.md);
  /// `lists`: channels given as deltas (CheckpointPut::lists).
  void stage_put(Staged& staged, const CheckpointConfig& config, const Checkpoint& checkpoint,
                 const nlohmann::json& metadata, const ChannelVersions& new_versions,
                 const std::vector<TaskWrites>* parent_writes = nullptr,
                 const std::map<std::string, ListDelta>* lists = nullptr);
  void commit(Staged& staged);
  /// Writes a task's writes as a bundle, `[[channel, value], ...]` (write_value for each).
  void write_bundle(detail::CborWriter<std::string>& w, const std::string& prefix,
                    const std::vector<TaskWrite>& writes, const Staged& staged,
                    const InlineValues& stored);
  /// Writes a bundled write's value; writes of kinds `appended` and `stored` refer to what the
  /// staged checkpoint stores (its views in `staged`, its inline values `stored`).
  void write_value(detail::CborWriter<std::string>& w, const std::string& prefix,
                   const TaskWrite& write, const Staged& staged, const InlineValues& stored);
  /// Adds a task's writes to `batch`, one key each (put_writes' rules; no `appended` kind).
  /// Caller holds the shard of the thread.
  void stage_writes(std::vector<detail::KvOp>& batch, const CheckpointConfig& config,
                    const TaskWrites& task, const std::string& task_path);
  /// Stages the writes of a task that just made the staged checkpoint of `config`'s child, as
  /// one bundle under `config`'s checkpoint. Caller holds the shard of the thread.
  void stage_bundle(Staged& staged, const CheckpointConfig& config, const TaskWrites& task);
  /// The log ranges of version `version` of a list channel, a delta's base. A base stored as a
  /// whole value (a put() of the list) has its items added to the log first.
  LogRanges base_view(Staged& staged, const InlineValues& parent, const std::string& prefix,
                      const std::string& channel, std::int64_t version,
                      const CheckpointConfig& config, const Checkpoint& checkpoint);
  /// The next sequence number of a log, counting the items `staged` adds.
  std::uint64_t next_seq(const Staged& staged, const std::string& log_prefix);
  /// Drops the caches of a thread. Caller holds its shard.
  void forget_thread(const std::string& thread_prefix);
  static void forget(Shard& shard, const std::string& thread_prefix);
  /// Notes that the caches just got or changed an entry of the thread that `key` (a cache key,
  /// the thread's prefix first) belongs to: it becomes the most recently used. Caller holds
  /// the shard of the thread.
  void touch(std::string_view key);
  /// Drops the caches of the shard's least recently used threads while more than
  /// cached_per_shard_ threads have some (they fill again from storage, as after a restart): what
  /// a long-lived process keeps does not grow with the number of threads it ever wrote or read,
  /// and the threads in use keep theirs. Caller holds `shard`.
  void bound_caches(Shard& shard) const;
  static constexpr std::size_t kCachedThreads = 4096;  // the default, over all shards
  std::atomic<std::size_t> cached_per_shard_{kCachedThreads / kShards};
  /// A shared backend: notes that `staged` writes thread `thread_id` using the caches, which are
  /// first dropped when this object does not know the thread's head (commit() then expects it
  /// unchanged). Caller holds the shard of the thread.
  void enter(Staged& staged, const std::string& thread_id);
  /// A shared backend: adds to `batch` what a write of the thread with prefix `tp` expects (its
  /// fence, when one is set; its head too when `expect_head`) and a new head. Caller holds
  /// the shard of the thread.
  void guard(std::vector<detail::KvOp>& batch, const std::string& tp, bool expect_head);
  /// What a write of a thread on a shared backend checks and changes besides its data: only the
  /// fence (writes that neither use nor change the caches), the fence and a new head (a change
  /// made without the caches), or the fence and the head it expects, replaced (a write staged
  /// from the caches).
  enum class Guard : std::uint8_t { fence, new_head, expect_head };
  /// Writes `batch`, on a shared backend guarded for the threads with prefixes `thread_prefixes`
  /// as `mode` says. A conflict drops their caches and throws KvConflict again, or
  /// CheckpointError "checkpoint.fenced" when a fence no longer holds. Caller holds the shards
  /// of the threads.
  void write_guarded(std::vector<detail::KvOp>& batch,
                     const std::vector<std::string>& thread_prefixes, Guard mode);
  /// Runs `stage_and_commit` again (at most a few times) while a shared backend reports that
  /// another process wrote a thread it uses; throws CheckpointError "checkpoint.fenced" when a
  /// fence no longer holds. Caller holds the shard of the thread.
  template <typename Work>
  auto retrying(Work&& stage_and_commit);

  std::unique_ptr<detail::KvBackend> kv_;
  /// The caches of the threads whose prefixes hash to it, and the lock of their writes: writes
  /// of threads in different shards go on in parallel (on a database, a round trip each).
  struct Shard {  // NOLINT(altera-struct-pack-align)
    // Serializes the writers of its threads (read-modify-write) and guards the caches below,
    // which only this object's writes change (a store has one KvCheckpointer: RocksDB locks its
    // directory).
    std::mutex mu;
    std::map<std::string, std::uint64_t> next_seq;  // message log -> next sequence number
    std::map<std::string, std::pair<std::int64_t, LogRanges>> views;  // log -> newest view
    std::map<std::string, std::string> latest;  // thread+namespace prefix -> newest checkpoint
    std::map<std::string, std::pair<std::string, InlineValues>> inlines;  // prefix -> newest
    // Shared backends: the head each thread had after this object's last write (the caches of
    // a thread are valid while it still has it), and the fences this object's writes expect.
    std::map<std::string, std::string> heads;   // thread prefix -> head token
    std::map<std::string, std::string> fences;  // thread prefix -> fence token
    // The prefixes of the threads with cache entries, the most recently used first, and where
    // each is in that list (keyed by views of the list's own strings).
    std::list<std::string> recent;
    std::unordered_map<std::string_view, std::list<std::string>::iterator> recent_at;
  };
  static constexpr std::size_t kShards = 16;
  /// The shard of the thread whose prefix begins `key` (a thread prefix or any cache key).
  Shard& shard_of(std::string_view key);
  /// Locks the shards of `thread_prefixes` (each once, in shard order) and bounds their caches.
  std::vector<std::unique_lock<std::mutex>> lock_threads(
      const std::vector<std::string>& thread_prefixes);
  std::array<Shard, kShards> shards_;
};

struct KvCheckpointer::Impl::Record {
  std::string id;
  Checkpoint checkpoint;
  nlohmann::json metadata;
  std::string parent;
  nlohmann::json values =
      nlohmann::json::object();  // channel -> [version, kind, value] (small values)
  nlohmann::json parent_writes;  // "w": [[task_id, [[channel, value], ...]], ...] or null
};

/// A batch being built: its operations and what they change in the caches.
struct KvCheckpointer::Impl::Staged {
  std::vector<detail::KvOp> batch;
  std::map<std::string, std::uint64_t> seqs;  // log -> next sequence number
  std::map<std::string, std::pair<std::int64_t, kv_format::Ranges>>
      views;                                  // log -> newest staged view
  std::map<std::string, std::string> latest;  // prefix -> newest staged id
  std::map<std::string, std::pair<std::string, InlineValues>> inlines;  // prefix -> newest record
  std::vector<std::string> threads;  // shared backends: the threads written (enter())
};

}  // namespace sg
