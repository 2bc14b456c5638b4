// SPDX-License-Identifier: MIT
#pragma once

#include <stategraph/core/graph_types.hpp>
#include <stategraph/core/json_optional.hpp>  // nlohmann/json.hpp with std::optional
#include <stategraph/core/message.hpp>

#include <any>
#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sg {

class Store;

namespace detail {

/// A subgraph's stream event on its way to the parent's stream: the fields every state type
/// shares, and the event itself (a StreamEvent<SubgraphState>).
struct ForeignEvent {
  StreamMode mode = StreamMode::values;
  int step = 0;
  std::string node{};
  std::vector<std::string> ns{};
  nlohmann::json data{};
  std::vector<Interrupt> interrupts{};
  bool cached = false;
  std::any typed{};
  /// The state (values events) or the update (updates events) as JSON.
  nlohmann::json payload{};
  std::optional<MessageChunk> message{};
  bool complete = false;
};

/// A messages-mode event on its way from a task to its run's stream.
struct MessageEvent {
  std::string node;
  int step = 0;
  MessageChunk chunk{};
  bool complete = false;
  nlohmann::json metadata{};
};

/// What a node task needs from its run (implemented by the executor).
class RunHooks {
 public:
  virtual ~RunHooks() = default;
  [[nodiscard]] virtual const RunConfig& config() const noexcept = 0;
  [[nodiscard]] virtual Store* store() const noexcept = 0;
  /// Delivers a custom stream event (from any thread).
  virtual void write_custom(const std::string& node, int step, nlohmann::json value) = 0;
  /// True when the run streams StreamMode::messages.
  [[nodiscard]] virtual bool streams_messages() const noexcept = 0;
  /// Delivers a messages event (from any thread). A complete message whose id the run already
  /// streamed is dropped; a chunk marks its id as streamed.
  virtual void write_message(MessageEvent&& event) = 0;
  /// True when the current superstep is being abandoned (a sibling task failed).
  [[nodiscard]] virtual bool aborted() const noexcept = 0;
  /// Streaming of subgraph runs: the parent's modes and namespace (empty modes: not streamed),
  /// and delivery of a subgraph's event to the parent's stream (from any thread).
  [[nodiscard]] virtual StreamModes subgraph_modes() const noexcept = 0;
  [[nodiscard]] virtual const std::vector<std::string>& stream_ns() const noexcept = 0;
  virtual void forward_event(ForeignEvent&& event) = 0;
  /// task_id_seed() of the run's thread, namespace and current checkpoint.
  [[nodiscard]] virtual std::uint64_t task_id_seed() const noexcept = 0;
  /// The run id its spans carry: the run's, or for a subgraph's run (whose config has none)
  /// its root run's.
  [[nodiscard]] virtual const std::string& span_run_id() const noexcept = 0;
  /// The run's checkpointer (subgraphs compiled without one use it), or null.
  [[nodiscard]] virtual Checkpointer* checkpointer() const noexcept = 0;
  /// The value answering interrupt `interrupt_id` when the run was resumed: from a resume map,
  /// else the run's single resume value (taken by the first interrupt that asks), else the
  /// parent run's. Thread-safe.
  [[nodiscard]] virtual std::optional<nlohmann::json> take_resume(
      const std::string& interrupt_id) = 0;
  /// True during the first superstep of a resumed run: a subgraph that has a checkpoint
  /// continues from it instead of starting over.
  [[nodiscard]] virtual bool resuming() const noexcept = 0;
  /// For a subgraph's checkpoint metadata "parents": the namespaces of this run and its
  /// ancestors mapped to the checkpoint each one's current step runs from.
  [[nodiscard]] virtual nlohmann::json checkpoint_parents() const = 0;
  /// Time travel through the root run: the checkpoint a subgraph namespace must load (from the
  /// checkpoint map of a replayed subgraph checkpoint), if any.
  [[nodiscard]] virtual std::optional<std::string> mapped_checkpoint(
      const std::string& checkpoint_ns) const = 0;
  /// While the root run replays an older checkpoint: the id a subgraph namespace loads its
  /// latest checkpoint before, the first time it runs (LangGraph's ReplayState).
  [[nodiscard]] virtual std::optional<std::string> replay_bound(
      const std::string& checkpoint_ns) = 0;
};

/// What the parts of a task that run at once share (the tool calls of one ToolNode step, each in
/// an InterruptScope): the resume values of their interrupts by id, and the mutex guarding them
/// and the task's pushed messages. Made before the parts start (ensure_parts_shared).
struct TaskPartsShared {
  std::mutex mu;
  std::map<std::string, nlohmann::json> scoped_resume;
};

/// Per-task data a Context exposes.
struct TaskInfo {
  std::string_view node;  // points into the compiled graph
  int step = 0;
  int send_index = -1;        // the task's index among its step's Sends; -1 for an edge's task
  std::array<char, 16> id{};  // hex digits of the task id, once has_id (see assign_task_id)
  bool has_id = false;
  int attempt = 1;
  /// The step after which the recursion limit stops the run (LangGraph's `stop`).
  int stop = 0;
  /// Resume values for this task's interrupt() calls, in call order.
  std::vector<nlohmann::json> resume{};
  std::size_t interrupts_seen = 0;
  /// Set while parts of the task run at once, or when resume values by id were restored.
  std::shared_ptr<TaskPartsShared> parts{};
  /// Messages the node pushed with Context::push_message: (field, message), in order.
  std::vector<std::pair<std::string, Message>> pushed{};
  /// The updates of a node's second and later Commands (a std::vector<Update<S>>), if any.
  std::any more_updates{};
  /// Graphs this task has run as subgraphs so far (the second and later get their own
  /// checkpoint namespace, as in LangGraph).
  int subgraph_calls = 0;
  /// The task's span (a run with callbacks): its ids, when it started, and whether its end is
  /// still to be reported.
  TraceContext trace{};
  std::chrono::system_clock::time_point started{};
  bool span_open = false;
};

/// The part of a task id that a step's tasks share: the thread, the namespace and the
/// checkpoint they run from. Thread-safe.
[[nodiscard]] std::uint64_t task_id_seed(std::string_view thread, std::string_view ns,
                                         std::string_view checkpoint) noexcept;
/// Sets `task.id` and `task.has_id`: a deterministic id, a hash of `seed` (task_id_seed), the
/// task's step, Send index and node. Not synchronized (one thread per task).
void assign_task_id(TaskInfo& task, std::uint64_t seed) noexcept;

/// LangGraph's metadata of a messages event of task `task` (id `task_id`) in a run with `config`:
/// thread_id, langgraph_step, langgraph_node, langgraph_triggers, langgraph_path,
/// langgraph_checkpoint_ns, checkpoint_ns, then the keys of `extra`. Thread-safe.
[[nodiscard]] nlohmann::json messages_metadata(const RunConfig& config, const TaskInfo& task,
                                               std::string_view task_id,
                                               const nlohmann::json& extra);

/// Thrown by interrupt() to stop the task; the executor turns it into an interrupted result.
struct GraphInterrupt {
  std::vector<Interrupt> interrupts;
};

/// One of several parts of a task that run at once and may each interrupt (the tool calls one
/// ToolNode step runs concurrently). While it is this thread's scope (InterruptScopeGuard), the
/// interrupt() calls of a Context of `task` are numbered within the scope, their ids come from
/// the task id and `key` (so they do not depend on which part asks first), and their resume
/// values are kept by id (TaskPartsShared::scoped_resume). Thread-safe.
struct InterruptScope {
  const TaskInfo* task = nullptr;
  /// Names the part among its task's, the same each time the task runs (a call's index).
  std::string key{};
  std::atomic<std::size_t> seen{0};
};

/// Makes `task`'s TaskPartsShared, before parts of it run at once. Not thread-safe.
void ensure_parts_shared(TaskInfo& task);

/// This thread's interrupt scope, or null.
[[nodiscard]] InterruptScope* current_interrupt_scope() noexcept;

/// Makes `scope` (or null: none) this thread's interrupt scope for the lifetime of the guard.
/// Code that runs a part on a coroutine makes the scope current around each of its resumptions
/// (a thread's scope does not follow a coroutine across co_await by itself).
class InterruptScopeGuard {
 public:
  explicit InterruptScopeGuard(InterruptScope* scope) noexcept;
  ~InterruptScopeGuard();
  InterruptScopeGuard(const InterruptScopeGuard&) = delete;
  InterruptScopeGuard& operator=(const InterruptScopeGuard&) = delete;

 private:
  InterruptScope* previous_;
};

/// Thrown out of a subgraph's run when one of its nodes returned Command{.graph = PARENT}; the
/// parent graph's node applies the command. A parent with another state type can use only its
/// gotos (when it carries no update).
struct ParentCommand {
  std::any command;  // Command<State of the subgraph>
  std::vector<Goto> go_to{};
  bool has_update = false;
};

struct ContextAccess;

}  // namespace detail

/// What a node gets besides the state: the run's config, its place in the run, cancellation,
/// custom streaming, interrupts and the store. Valid only during the node call; one per task, used
/// by the thread running the node.
class Context {
 public:
  Context(detail::RunHooks& run, detail::TaskInfo& task) noexcept : run_(&run), task_(&task) {}

  /// The run's configuration (thread id, configurable values, runtime context, ...).
  [[nodiscard]] const RunConfig& config() const noexcept { return run_->config(); }
  /// The node being run.
  [[nodiscard]] std::string_view node() const noexcept { return task_->node; }
  /// The superstep.
  [[nodiscard]] int step() const noexcept { return task_->step; }
  /// The attempt number (1 for the first; see RetryPolicy).
  [[nodiscard]] int attempt() const noexcept { return task_->attempt; }
  /// A deterministic id of this task (16 hex digits).
  [[nodiscard]] std::string_view task_id() const noexcept {
    if (!task_->has_id) detail::assign_task_id(*task_, run_->task_id_seed());
    return {task_->id.data(), task_->id.size()};
  }
  /// The long-term memory store given to compile(), or null.
  [[nodiscard]] Store* store() const noexcept { return run_->store(); }

  /// True once the run was cancelled, or a sibling task of this superstep failed; long nodes
  /// should check it and return.
  [[nodiscard]] bool cancelled() const noexcept {
    return run_->config().cancellation.cancelled() || run_->aborted();
  }
  /// Throws CancelledError if the run was cancelled.
  void throw_if_cancelled() const {
    if (cancelled()) throw CancelledError();
  }

  /// Streams `value` to the run's `custom` stream mode. Thread-safe.
  void write(nlohmann::json value) const {
    run_->write_custom(std::string(task_->node), task_->step, std::move(value));
  }

  /// True when the run streams StreamMode::messages: a model called in this node then streams
  /// its reply to the run (see write_message_chunk).
  [[nodiscard]] bool streams_messages() const noexcept { return run_->streams_messages(); }
  /// The metadata of this task's messages events: LangGraph's langgraph_* keys and thread_id,
  /// then the keys of `extra` (a model's ls_* keys).
  [[nodiscard]] nlohmann::json messages_metadata(const nlohmann::json& extra) const;
  /// Streams a chunk of a model's reply to the run's `messages` mode with `metadata` (from
  /// messages_metadata). Thread-safe; a no-op when the run does not stream messages. Model
  /// implementations call it (sg::ChatModel does).
  void write_message_chunk(const MessageChunk& chunk, const nlohmann::json& metadata) const;
  /// Ends a model call in this node: streams `reply` whole when none of its chunks was streamed.
  /// Thread-safe.
  void write_message_done(const Message& reply, const nlohmann::json& metadata) const;
  /// Pauses the run for human input: the first call in a task stops the run, which returns an
  /// interrupted RunResult carrying `value`; when the run is resumed with Command{.resume}, the
  /// node runs again from the start and this call returns the resume value (the k-th call the
  /// k-th value). Do not catch the exception it throws (catch (...) must rethrow). Inside an
  /// interrupt scope of this task (detail::InterruptScope: each of the tool calls a ToolNode
  /// runs at once) calls are counted per scope, their ids depend on the scope, and their resume
  /// values are found by id; there it is thread-safe. Outside one, one thread at a time.
  nlohmann::json interrupt(nlohmann::json value) const;

  /// The supersteps the run may still take before its recursion limit (LangGraph's
  /// RemainingSteps); 1 in the last allowed step.
  [[nodiscard]] int remaining_steps() const noexcept { return task_->stop - task_->step; }

  /// Adds `message` (it needs an id) to this task's writes of the message-list field `field`,
  /// before what the node returns (LangGraph's push_message). Throws sg::Error for a message
  /// without an id; an unknown or non-message field fails the task when it finishes.
  /// Thread-safe.
  void push_message(Message message, std::string_view field = "messages") const;

  /// True when the run reports to callbacks (RunConfig::callbacks): model and tool calls in this
  /// node then report their spans with child_span().
  [[nodiscard]] bool traced() const noexcept { return !run_->config().callbacks.empty(); }
  /// This task's span ids (traced() only; invalid otherwise).
  [[nodiscard]] const TraceContext& trace_context() const noexcept { return task_->trace; }
  /// A new span of `kind` named `name`, a child of this task's span, with the run's thread, run
  /// id, namespace, step, task id and node filled in and the start time now. Report it with
  /// the run's callbacks (config().callbacks). Thread-safe.
  [[nodiscard]] Span child_span(SpanKind kind, std::string name) const;

  /// The values the run was resumed with for this task's interrupts, in order.
  [[nodiscard]] const std::vector<nlohmann::json>& resume_values() const noexcept {
    return task_->resume;
  }

 private:
  friend struct detail::ContextAccess;
  detail::RunHooks* run_;
  detail::TaskInfo* task_;
};

namespace detail {
/// stategraph's own access to a Context's task and run (running subgraphs).
struct ContextAccess {
  static TaskInfo& task(Context& ctx) noexcept { return *ctx.task_; }
  static RunHooks& run(Context& ctx) noexcept { return *ctx.run_; }
};
}  // namespace detail

/// The Context of the node running on this thread, or null outside a node.
[[nodiscard]] Context* current_context() noexcept;

/// `sg::interrupt(value)` inside a node: see Context::interrupt. Throws sg::Error outside a node.
nlohmann::json interrupt(nlohmann::json value);

namespace detail {
/// Makes `ctx` the current context of this thread for the lifetime of the guard.
class CurrentContextGuard {
 public:
  explicit CurrentContextGuard(Context* ctx) noexcept;
  ~CurrentContextGuard();
  CurrentContextGuard(const CurrentContextGuard&) = delete;
  CurrentContextGuard& operator=(const CurrentContextGuard&) = delete;

 private:
  Context* previous_;
};
}  // namespace detail

}  // namespace sg
