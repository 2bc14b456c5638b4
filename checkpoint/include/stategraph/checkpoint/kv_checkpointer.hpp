// SPDX-License-Identifier: MIT
#pragma once

// LangGraph's checkpointer semantics over an ordered key-value store; InMemorySaver and
// RocksDbSaver are this class over two backends, so they behave the same.

#include <stategraph/core/checkpointer.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sg {

namespace detail {
class KvBackend;  // the ordered key-value backend (kv module, internal)
}  // namespace detail

class InMemorySaver;
class RocksDbSaver;

/// The checkpointer behind InMemorySaver and RocksDbSaver (construct one of those). List channels
/// given as deltas (CheckpointPut::lists) are stored as a per-thread log of items plus a list of
/// ranges per checkpoint, so a superstep writes only the items it added
/// (docs/checkpoint-format.md). Every method may be called from many threads at once; writes are
/// serialized. Storage failures and corrupt data throw CheckpointError (codes
/// "checkpoint.corrupt", "checkpoint.io"); bad arguments (a thread id or channel with a NUL
/// byte, a missing thread_id or checkpoint id) throw CheckpointError ("checkpoint.invalid").
class KvCheckpointer : public Checkpointer {
 public:
  ~KvCheckpointer() override;
  KvCheckpointer(const KvCheckpointer&) = delete;
  KvCheckpointer& operator=(const KvCheckpointer&) = delete;

  /// Checkpointer::put, one atomic write. Throws CheckpointError.
  CheckpointConfig put(const CheckpointConfig& config, const Checkpoint& checkpoint,
                       const nlohmann::json& metadata,
                       const ChannelVersions& new_versions) override;
  /// Checkpointer::put_all, all puts in one atomic write (nothing is stored if it throws).
  std::vector<CheckpointConfig> put_all(const std::vector<CheckpointPut>& puts) override;
  /// True: list channels may come as deltas. noexcept.
  [[nodiscard]] bool stores_deltas() const noexcept override { return true; }
  /// Checkpointer::put_writes, one atomic write. Throws CheckpointError.
  void put_writes(const CheckpointConfig& config,
                  const std::vector<std::pair<std::string, nlohmann::json>>& writes,
                  const std::string& task_id, const std::string& task_path = {}) override;
  /// Checkpointer::put_task_writes: pre-encoded items are stored as they are. One atomic
  /// write. Throws CheckpointError (also for an item that is not one CBOR value).
  void put_task_writes(const CheckpointConfig& config, const TaskWrites& task,
                       const std::string& task_path = {}) override;
  /// Checkpointer::get_tuple. Throws CheckpointError naming the thread and checkpoint.
  std::optional<CheckpointTuple> get_tuple(const CheckpointConfig& config) override;
  /// Checkpointer::latest_checkpoint_id, from memory after the first call per namespace (from
  /// storage each time when other processes share it).
  std::optional<std::string> latest_checkpoint_id(const std::string& thread_id,
                                                  const std::string& checkpoint_ns) override;
  /// Checkpointer::list, newest first. Throws CheckpointError.
  std::vector<CheckpointTuple> list(const ListOptions& options) override;
  /// Checkpointer::threads, sorted. Throws CheckpointError.
  std::vector<std::string> threads() override;
  /// Checkpointer::delete_thread, one atomic write. Throws CheckpointError.
  void delete_thread(const std::string& thread_id) override;
  /// Checkpointer::copy_thread, one atomic write. Throws CheckpointError.
  void copy_thread(const std::string& source, const std::string& target) override;
  /// Checkpointer::prune, one atomic write per namespace. Throws CheckpointError.
  void prune(const std::vector<std::string>& thread_ids, PruneStrategy strategy) override;

  /// The namespaces of a thread with at least one checkpoint, sorted. Throws CheckpointError.
  [[nodiscard]] std::vector<std::string> namespaces(const std::string& thread_id);

  /// Keeps the in-memory caches (heads, inline values, list logs) of about `threads` threads,
  /// the most recently used (at least one in each of 16 shards); the others' are dropped and
  /// read again from storage when used. Default 4,096. Thread-safe.
  void set_cached_threads(std::size_t threads);
  /// On storage that processes share (PostgresSaver): from now on this object's writes of
  /// `thread_id` apply only while the thread's fence in storage holds `token` (a claimed run's;
  /// the claim stored it, see fence_key()); a write after another token replaced it throws
  /// CheckpointError "checkpoint.fenced" and changes nothing. An empty token stops checking. No
  /// effect on storage one process owns. Thread-safe.
  void fence(const std::string& thread_id, std::string token);

 private:
  friend class InMemorySaver;
  friend class RocksDbSaver;

 protected:
  /// A checkpointer over `kv`, for savers on other backends (PostgresSaver).
  explicit KvCheckpointer(std::unique_ptr<detail::KvBackend> kv);
  /// The key space and key of the fence of `thread_id` (see fence()).
  [[nodiscard]] static std::pair<std::uint8_t, std::string> fence_key(const std::string& thread_id);
  /// The key spaces whose keys are written in order within groups (a thread's checkpoints, a
  /// channel's message log), each with the number of NUL bytes that end a key's group: a backend
  /// may store a group's entries together (PostgresSaver's pages). noexcept.
  [[nodiscard]] static std::vector<std::pair<std::uint8_t, int>> appended_spaces() noexcept;

 private:
  /// The state and the storage code (checkpoint/src/kv_saver_impl.hpp).
  struct Impl;
  explicit KvCheckpointer(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace sg
