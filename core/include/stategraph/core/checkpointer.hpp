// SPDX-License-Identifier: MIT
#pragma once

// The checkpointer interface (LangGraph's BaseCheckpointSaver) and its data. Implementations:
// sg::InMemorySaver and sg::RocksDbSaver (module sg::checkpoint).

#include <stategraph/core/channels.hpp>
#include <stategraph/core/error.hpp>
#include <stategraph/core/json_optional.hpp>  // nlohmann/json.hpp with std::optional
#include <stategraph/core/time.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sg {

/// A checkpoint could not be stored or read: a corrupt or unknown record, a database in use by
/// another process, an I/O failure, a bad argument, or a write of a run another worker took over.
/// The message names the thread and the checkpoint. Codes "checkpoint.corrupt", "checkpoint.io",
/// "checkpoint.locked", "checkpoint.invalid", "checkpoint.fenced".
class CheckpointError : public Error {
 public:
  CheckpointError(std::string_view code, const std::string& message) : Error(code, message) {}
};

namespace errc {
inline constexpr std::string_view kCheckpointCorrupt = "checkpoint.corrupt";
inline constexpr std::string_view kCheckpointIo = "checkpoint.io";
inline constexpr std::string_view kCheckpointLocked = "checkpoint.locked";
inline constexpr std::string_view kCheckpointInvalid = "checkpoint.invalid";
inline constexpr std::string_view kCheckpointFenced = "checkpoint.fenced";
}  // namespace errc

/// Names a thread, a namespace in it ("" for the root graph) and optionally a checkpoint (empty:
/// the latest). LangGraph's `config["configurable"]`.
struct CheckpointConfig {
  std::string thread_id{};
  std::string checkpoint_ns{};
  std::string checkpoint_id{};

  friend bool operator==(const CheckpointConfig&, const CheckpointConfig&) = default;
};

/// Channel name -> version. A channel gets a new version whenever it is written.
using ChannelVersions = std::map<std::string, std::int64_t>;

/// A snapshot of a graph's channels. `id` is time-ordered (ids sort by creation time);
/// `channel_values` holds a value for each channel that has one (a list channel may instead be
/// given to put_all() as a ListDelta; reads always return plain values).
struct Checkpoint {
  int v = 4;
  std::string id{};
  std::string ts{};
  nlohmann::json channel_values = nlohmann::json::object();
  ChannelVersions channel_versions{};
  std::map<std::string, ChannelVersions> versions_seen{};
};

/// A write of a task, saved against a checkpoint before the superstep ends.
struct PendingWrite {
  std::string task_id;
  std::string channel;
  nlohmann::json value;

  friend bool operator==(const PendingWrite&, const PendingWrite&) = default;
};

/// A checkpoint with its config, metadata (`source`, `step`, `parents`, `run_id`, user keys),
/// the config of its parent, and the writes saved against it.
struct CheckpointTuple {
  CheckpointConfig config;
  Checkpoint checkpoint;
  nlohmann::json metadata = nlohmann::json::object();
  std::optional<CheckpointConfig> parent_config;
  std::vector<PendingWrite> pending_writes;
};

/// Which checkpoints list() returns.
struct ListOptions {
  /// One thread, or every thread when absent.
  std::optional<std::string> thread_id{};
  /// One namespace ("" is the root), or every namespace when absent.
  std::optional<std::string> checkpoint_ns{};
  /// Exact match on each key of this JSON object in the metadata.
  nlohmann::json filter{};
  /// Only checkpoints with an id strictly smaller than this.
  std::optional<std::string> before{};
  std::optional<std::size_t> limit{};
  /// Resolve channel values (false: config, metadata and writes only; faster).
  bool include_values = true;
};

/// When a run's checkpoints become durable. sync: each superstep's checkpoint is stored before
/// the next superstep starts. async: stored in the background while the next superstep runs
/// (in order). exit: only when the run ends, stops at an interrupt, or fails.
enum class Durability : std::uint8_t { sync, async, exit };

/// prune(): keep each namespace's newest checkpoint (with its writes), or delete everything.
enum class PruneStrategy : std::uint8_t { keep_latest, delete_all };

/// A new time-ordered checkpoint id (a UUID version 6 string whose clock sequence encodes
/// `step`), strictly greater than every id made before in this process. Thread-safe.
[[nodiscard]] std::string new_checkpoint_id(int step);

/// One write of a task, as a graph gives it to Checkpointer::put_all() and put_task_writes().
/// Savers whose stores_deltas() is false only get kinds `value` and `items`.
struct TaskWrite {
  /// - value: `value` is the write.
  /// - items: the write is a list whose items are `items`, each one CBOR value (a message as
  ///   sg::message_to_cbor writes it): pre-encoded, so a saver can store the bytes as they are.
  /// - appended (put_all only): the write appended exactly the last `count` items of this list
  ///   channel's value in the checkpoint of the same put; `value` is unused.
  /// - stored (put_all only): the write is `value`, which is also the channel's value in the
  ///   checkpoint of the same put (a saver may keep one copy).
  enum class Kind : std::uint8_t { value, items, appended, stored };

  TaskWrite() = default;
  /// A write of kind `value`.
  TaskWrite(std::string channel_name, nlohmann::json written)
      : channel(std::move(channel_name)), value(std::move(written)) {}

  std::string channel;
  nlohmann::json value{};
  Kind kind = Kind::value;
  std::uint64_t count = 0;
  std::vector<std::string> items{};

  friend bool operator==(const TaskWrite&, const TaskWrite&) = default;
};

/// A task's writes for Checkpointer::put_all (saved as put_writes() would against the put's
/// `config`: the checkpoint the task ran from) and put_task_writes().
struct TaskWrites {
  std::string task_id;
  std::vector<TaskWrite> writes;
};

/// The writes as put_writes() takes them: each as its JSON value (`items` decoded; `stored`
/// kept). `checkpoint` (the put's, when the writes go with one) resolves `appended` writes from
/// its list values. Throws CheckpointError ("checkpoint.invalid") for an item that is not CBOR
/// or an `appended` write it cannot resolve.
[[nodiscard]] std::vector<std::pair<std::string, nlohmann::json>> plain_writes(
    const std::vector<TaskWrite>& writes, const Checkpoint* checkpoint = nullptr);

/// One piece of a ListDelta: a range [from, to) of the base version's items, or one new item
/// encoded as CBOR (a message as sg::message_to_cbor writes it, any other value as
/// json::to_cbor does).
struct ListPiece {
  std::uint64_t from = 0;
  std::uint64_t to = 0;
  std::string item{};  // empty: a range of the base

  [[nodiscard]] bool is_new() const noexcept { return !item.empty(); }
  friend bool operator==(const ListPiece&, const ListPiece&) = default;
};

/// A list channel's new value as edits of a version of it stored before, so that a superstep
/// stores only the items it added: the value is the pieces' items, in order.
struct ListDelta {
  /// The version of the same channel the ranges refer to; -1: none (every piece is new).
  std::int64_t base = -1;
  std::vector<ListPiece> pieces{};

  friend bool operator==(const ListDelta&, const ListDelta&) = default;
};

/// One checkpoint for Checkpointer::put_all: the arguments of a put(), the writes of the tasks
/// that produced it (saved against its parent, in the same write), and the channels of
/// `new_versions` given as deltas instead of in `checkpoint.channel_values` (only to savers whose
/// stores_deltas() is true).
struct CheckpointPut {
  CheckpointConfig config;
  Checkpoint checkpoint;
  nlohmann::json metadata;
  ChannelVersions new_versions;
  std::vector<TaskWrites> writes{};
  std::map<std::string, ListDelta> lists{};
};

/// Stores checkpoints of graph threads (LangGraph's BaseCheckpointSaver). Implementations are
/// safe to call from many threads at once.
class Checkpointer {
 public:
  virtual ~Checkpointer() = default;

  /// Stores `checkpoint` under `config.thread_id` / `config.checkpoint_ns`; `config.checkpoint_id`
  /// (if any) becomes its parent. Only the channels in `new_versions` are written; the others are
  /// read from earlier checkpoints. Returns {thread_id, checkpoint_ns, checkpoint.id}. Throws
  /// CheckpointError (code "checkpoint.invalid") without a thread_id or checkpoint id.
  virtual CheckpointConfig put(const CheckpointConfig& config, const Checkpoint& checkpoint,
                               const nlohmann::json& metadata,
                               const ChannelVersions& new_versions) = 0;

  /// Stores `puts` in order, each one's `writes` (as put_writes() would) and then its checkpoint
  /// (as put() would), in one atomic write where the store allows it (KvCheckpointer: one batch;
  /// a later put may build on an earlier one's values). The default calls put_writes() and put()
  /// for each, and throws CheckpointError ("checkpoint.invalid") for a put with `lists`. Returns
  /// each stored config. Throws as put(), and for a ListDelta whose base version the channel
  /// never had, a range beyond it, or an item that is not CBOR; then, with one atomic write,
  /// nothing is stored.
  virtual std::vector<CheckpointConfig> put_all(const std::vector<CheckpointPut>& puts);

  /// Saves a task's writes (kinds `value` and `items`; `stored` counts as `value`) as
  /// put_writes() does. The default calls put_writes() with plain_writes(task.writes). Throws as
  /// put_writes(), and CheckpointError ("checkpoint.invalid") for an `appended` write.
  virtual void put_task_writes(const CheckpointConfig& config, const TaskWrites& task,
                               const std::string& task_path = {});

  /// Saves a task's writes against the checkpoint `config` names. Regular writes are kept if
  /// already present for (task_id, index); special channels (kErrorChannel, ...) replace.
  /// Throws CheckpointError without a thread_id or checkpoint_id.
  virtual void put_writes(const CheckpointConfig& config,
                          const std::vector<std::pair<std::string, nlohmann::json>>& writes,
                          const std::string& task_id, const std::string& task_path = {}) = 0;

  /// The checkpoint `config` names, or the thread's latest in the namespace; nullopt if none.
  virtual std::optional<CheckpointTuple> get_tuple(const CheckpointConfig& config) = 0;

  /// The id of the newest checkpoint of a thread's namespace, or nullopt if it has none. The
  /// default asks get_tuple(); KvCheckpointer answers from memory after the first call.
  virtual std::optional<std::string> latest_checkpoint_id(const std::string& thread_id,
                                                          const std::string& checkpoint_ns);

  /// Checkpoints newest first (see ListOptions).
  virtual std::vector<CheckpointTuple> list(const ListOptions& options) = 0;

  /// Every thread id with at least one checkpoint, sorted.
  virtual std::vector<std::string> threads() = 0;

  /// Removes every checkpoint, write and stored value of a thread, in all namespaces. A thread
  /// that does not exist is not an error.
  virtual void delete_thread(const std::string& thread_id) = 0;

  /// Copies every checkpoint, write and value of `source` to `target` (which is replaced).
  virtual void copy_thread(const std::string& source, const std::string& target) = 0;

  /// Reclaims space: keeps each namespace's newest checkpoint with its pending writes (so an
  /// interrupted run can still resume), or deletes the threads.
  virtual void prune(const std::vector<std::string>& thread_ids, PruneStrategy strategy) = 0;

  /// True when put_all() takes list channels as deltas (CheckpointPut::lists) and task writes of
  /// kinds `appended` and `stored` (TaskWrite): graphs then send only what changed, and each
  /// value once. False: plain values only.
  [[nodiscard]] virtual bool stores_deltas() const noexcept { return false; }

  /// The durability graphs use with this checkpointer unless the run says otherwise.
  [[nodiscard]] virtual Durability default_durability() const noexcept { return Durability::async; }
};

/// The highest channel version a thread's namespace has used (0 when it has no checkpoint): its
/// newest checkpoint's, since forks and runs from older checkpoints raise their versions above
/// every version before. Throws what the saver throws. Thread-safe if the saver is.
[[nodiscard]] std::int64_t newest_channel_version(Checkpointer& saver, const std::string& thread_id,
                                                  const std::string& checkpoint_ns);

/// What fork_checkpoint() makes.
struct ForkOptions {
  /// The thread the copy goes to; empty: the source's. Another thread must have no checkpoints:
  /// it first gets a copy of the source thread (copy_thread), so the fork keeps its history.
  std::string thread_id{};
  /// true: the copy is a sibling of the source (same parent), as LangGraph's
  /// update_state(config, None, as_node="__copy__") makes it; false: a child of the source.
  bool sibling = true;
};

/// Stores a copy of the checkpoint `source` (read with its values) as its thread's newest: a
/// fork, from which the next run continues. Metadata {"source": "fork", "step": source's + 1,
/// "parents": source's}; no pending writes. The copy's channels get one new version above every
/// version the thread used (the versions its nodes saw move with them, so the same nodes run
/// next): a run on the fork never stores a (channel, version) another branch holds. The one fork
/// of the library: update_state's "__copy__" and `stategraph threads fork` use it. Returns the
/// copy's config. Throws CheckpointError ("checkpoint.invalid") when the target thread exists,
/// and what the saver throws. Thread-safe if the saver is; not atomic when copying a thread.
CheckpointConfig fork_checkpoint(Checkpointer& saver, const CheckpointTuple& source,
                                 const ForkOptions& options = {});

/// The sweeper of thread TTLs, for every saver: prunes with `strategy` the threads whose newest
/// checkpoint (of the root namespace) was written more than `idle` before `now`, and returns
/// their ids. With keep_latest a thread whose root namespace has one checkpoint left is skipped
/// (it is pruned already). Uses threads(), list() and prune() alone. Throws what the saver
/// throws. Thread-safe if the saver is.
std::vector<std::string> prune_idle_threads(
    Checkpointer& saver, std::chrono::system_clock::duration idle, PruneStrategy strategy,
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

}  // namespace sg
