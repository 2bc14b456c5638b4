// SPDX-License-Identifier: MIT
#pragma once

// The executor's untyped core: everything about a run that does not depend on the state type.
// Its parts live in core/src/executor/ (scheduling, step execution, retries and timeouts,
// checkpointing, restoring, streaming); the typed shell (executor.hpp) owns the state and
// implements the hooks at the end of ExecutorCore. Internal to stategraph.
//
// Each superstep: the triggered tasks (edge-triggered nodes in node-name order, then Sends in
// the order they were sent) read the same state; a step with one task runs it on the calling
// thread, a step with several runs them on the thread pool with the calling thread helping.
// After all finish, their writes are applied field by field in task order, the routers and
// Commands pick the next tasks, and the stream gets its events.

#include <stategraph/core/checkpointer.hpp>
#include <stategraph/core/context.hpp>
#include <stategraph/core/detail/node.hpp>
#include <stategraph/core/detail/topology.hpp>
#include <stategraph/core/error.hpp>

#include <algorithm>
#include <any>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace sg::detail {

class AsyncWriter;

/// A traced run's callbacks and its span (started; the end fields are set when it ends). The
/// run's threads and its async writer read it; it does not change while tasks run.
struct RunTrace {
  CallbackList callbacks;
  Span run;
};

/// saver.put_all(puts); with `trace`, reported as a checkpoint span (duration, bytes). A
/// failure is logged (sg::log, error) and rethrown.
void put_checkpoints(Checkpointer& saver, const std::vector<CheckpointPut>& puts,
                     const RunTrace* trace);
struct AsyncState;  // an asynchronous run's strand and timer (core/src/executor/async.cpp)
struct AsyncLoop;

inline constexpr std::uint32_t kUnknownCost = 0xFFFFFFFFu;
/// Below this predicted total, a step's tasks run on the calling thread: handing them to pool
/// threads costs more (about 10 us per step on 2 cores) than running them.
inline constexpr std::uint64_t kInlineStepBudgetNs = 30'000;

/// Durability "async" (AsyncWriter): how long a checkpoint of durability "async" may stay queued
/// while steps run. Checkpoints queued together are stored together, in one write.
inline constexpr std::chrono::milliseconds kAsyncWriteDelay{1};
/// ... and how many may queue up: small batches reuse warm memory.
inline constexpr std::size_t kAsyncWriteBatch = 16;

/// The untyped part of a compiled graph, shared by its runs (and by abandoned timed-out tasks).
struct GraphCore {
  GraphSpec spec;
  Topology topo;
  std::vector<NodeOptions> node_options;  // by node id
  std::vector<ArgReader> arg_readers;     // by node id: rebuild a Send argument from JSON
  std::vector<bool> coroutine;            // by node id: a coroutine node
  CompileOptions options;
  std::shared_ptr<ThreadPool> pool;
  /// Recent run time of each node in a multi-task superstep (ns, moving average; kUnknownCost
  /// until measured). Decides whether a step's tasks are worth sending to the pool.
  std::unique_ptr<std::atomic<std::uint32_t>[]> cost_ns;
  /// The checkpoint channel of each node's trigger (by node id) and of each join (by join
  /// index), made once.
  std::vector<std::string> branch_channels;
  std::vector<std::string> join_channels;

  /// A compiled graph added as a node (of any state type) and its state's JSON Schema.
  struct Subgraph {
    std::string node;
    std::shared_ptr<const GraphCore> def;
    nlohmann::json (*state_schema)() = nullptr;
  };
  /// The compiled graphs added as nodes, in the order of their nodes.
  std::vector<Subgraph> subgraph_nodes;

  /// Fills everything but spec, node_options, arg_readers and options from them.
  void finish_compiling();
};

/// The subgraphs of `graph` as LangGraph's get_subgraphs lists them: its direct subgraphs by
/// node name; with `recurse`, theirs too ("parent|child"); with `ns`, only the one at that
/// path (a nested one with `recurse`). Pairs of a namespace and its subgraph.
[[nodiscard]] std::vector<std::pair<std::string, const GraphCore::Subgraph*>> list_subgraphs(
    const GraphCore& graph, std::optional<std::string_view> ns, bool recurse);

/// What a caller of stream() asked for (the typed sink is in StreamSpec<S>).
struct StreamTarget {
  StreamModes modes{};
  std::vector<std::string> ns{};
};

/// Retry decision for an attempt that threw `error`.
[[nodiscard]] bool should_retry(const std::optional<RetryPolicy>& policy, int attempt,
                                std::exception_ptr error);
/// The pause before attempt `attempt + 1`.
[[nodiscard]] std::chrono::duration<double> retry_interval(const RetryPolicy& policy, int attempt);

/// The part of a run that tasks on other threads touch; they keep it alive.
struct RunShared final : RunHooks {
  struct Custom {
    std::string node;
    int step;
    nlohmann::json value;
  };

  RunConfig cfg;
  Store* store_ptr = nullptr;
  Checkpointer* saver = nullptr;
  bool stream_custom = false;
  StreamModes sub_modes{};
  std::vector<std::string> ns;
  std::thread::id orchestrator;
  std::function<void(Custom&&)> deliver_custom;       // orchestrator thread only
  std::function<void(ForeignEvent&&)> deliver_child;  // orchestrator thread only
  bool stream_messages = false;
  std::function<void(MessageEvent&&)> deliver_message;  // orchestrator thread only
  /// The ids the messages mode carried; made only for a run that streams messages (apart, so
  /// that the RunShared of every other run stays small: one allocation the size of a cached
  /// block).
  struct SeenIds {
    std::mutex mu;
    std::set<std::string> ids;  // guarded by mu
  };
  std::unique_ptr<SeenIds> seen;

  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::function<void()>> deliveries;  // guarded by mu: stream events from other threads
  std::vector<std::size_t> finished;              // guarded by mu: tasks done since the last drain
  std::size_t remaining = 0;       // guarded by mu: claimed tasks of the current batch
  std::size_t timed_finished = 0;  // guarded by mu: bumps when a timed attempt ends
  std::atomic<bool> step_failed{false};
  std::atomic<bool> alive{true};
  /// Whether `deliveries` may hold events: set with them, cleared when the orchestrator takes
  /// them (both under mu); read without mu, so runs that stream nothing pay no lock for it.
  std::atomic<bool> queued{false};

  /// Resuming: the run of the node that runs this one as a subgraph (its resume values answer
  /// ours), whether this is the first step of a resumed run, the resume map (read-only while
  /// tasks run) and the single resume value (taken once).
  RunHooks* parent = nullptr;
  std::atomic<bool> resuming_step{false};
  nlohmann::json resume_map{};
  std::mutex resume_mu;
  std::optional<nlohmann::json> null_resume;  // guarded by resume_mu

  /// Subgraph checkpoints: this run's "parents" metadata and its current checkpoint (owned by the
  /// executor, changed only between steps); the root's checkpoint map of a subgraph time travel;
  /// the root's replay bound with the subgraph namespaces that used it (guarded by resume_mu).
  nlohmann::json parents;  // null: none (no object allocated for a root run)
  const std::string* current_checkpoint = nullptr;
  nlohmann::json checkpoint_map{};
  std::optional<std::string> replay_before;
  std::set<std::string> replay_visited;

  [[nodiscard]] const RunConfig& config() const noexcept override { return cfg; }
  [[nodiscard]] Store* store() const noexcept override { return store_ptr; }
  [[nodiscard]] bool aborted() const noexcept override {
    return step_failed.load(std::memory_order_relaxed);
  }
  [[nodiscard]] StreamModes subgraph_modes() const noexcept override { return sub_modes; }
  [[nodiscard]] const std::vector<std::string>& stream_ns() const noexcept override { return ns; }
  [[nodiscard]] Checkpointer* checkpointer() const noexcept override { return saver; }
  [[nodiscard]] bool resuming() const noexcept override {
    return resuming_step.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint64_t task_id_seed() const noexcept override;
  [[nodiscard]] const std::string& span_run_id() const noexcept override {
    return cfg.run_id.empty() && parent != nullptr ? parent->span_run_id() : cfg.run_id;
  }
  [[nodiscard]] nlohmann::json checkpoint_parents() const override;
  [[nodiscard]] std::optional<std::string> mapped_checkpoint(
      const std::string& checkpoint_ns) const override;
  std::optional<std::string> replay_bound(const std::string& checkpoint_ns) override;
  std::optional<nlohmann::json> take_resume(const std::string& interrupt_id) override;
  void write_custom(const std::string& node, int step, nlohmann::json value) override;
  [[nodiscard]] bool streams_messages() const noexcept override { return stream_messages; }
  void write_message(MessageEvent&& event) override;
  /// Marks the event's message id as streamed; false for a complete message already streamed.
  bool first_sight(const MessageEvent& event);
  void forward_event(ForeignEvent&& event) override;
  /// Runs `delivery` now on the orchestrator thread (after the events other threads queued
  /// before it), else queues it for drain().
  void deliver(std::function<void()> delivery);
  /// Runs the queued deliveries (orchestrator thread).
  void deliver_queued();
  /// Wakes the run waiting for its tasks (any thread).
  void notify();
  /// An asynchronous run's way to wake its loop: set before tasks start (with has_wake, which
  /// never changes after), called and cleared under mu. It holds the caller's executor, so the
  /// run clears it when it ends: a thread that keeps this RunShared past the run (a pool helper)
  /// must not be the one that destroys it, after the caller's execution context may be gone.
  std::function<void()> wake;
  bool has_wake = false;
};

/// The claim counter of one multi-task superstep; helper threads keep it alive.
struct Batch {
  std::atomic<std::size_t> next{0};
  std::size_t count = 0;
};

/// One task of a superstep. The typed part of its output is in the typed shell, at the same
/// index (Executor::out).
struct Task {
  int node = 0;
  std::any arg;
  TaskInfo info;
  bool has_output = false;  // the node returned (or its writes were restored or cached)
  std::vector<Goto> go_to;  // the output's gotos, then those of its further Commands
  std::string graph;        // the output Command's graph (PARENT), if any
  std::exception_ptr error;
  std::vector<Interrupt> interrupts;
  std::vector<Goto> routes;
  bool ran = false;
  bool restored = false;     // its writes were saved before a crash or interrupt: not run again
  bool cached = false;       // its writes came from the node cache
  bool interrupted = false;  // it stopped with interrupts (none: a subgraph's breakpoint)
};

/// One attempt of a node that runs apart from the run's loop: a node with a timeout (on a thread
/// of its own) or a coroutine node of an asynchronous run (on the run's strand). It owns its
/// input, so it can be abandoned. The typed part (the state snapshot, the output) is in the
/// derived class.
struct NodeAttempt {
  virtual ~NodeAttempt() = default;
  /// Runs the node to its end (any thread) and keeps its output.
  virtual void call(Context& ctx) = 0;
  /// Starts a coroutine node, whose coroutine keeps its output.
  virtual AsyncCall start(Context& ctx) = 0;
  /// Takes the Command a subgraph sent to this node's graph; false when it carries an update of
  /// another state type.
  virtual bool take_parent_command(ParentCommand& command) = 0;

  std::any arg;
  TaskInfo info;
  std::atomic<int> status{0};  // 0 running, 1 finished, 2 abandoned
  std::exception_ptr error;
  std::vector<Interrupt> interrupts;
  bool interrupted = false;
  bool returned = false;  // the node returned: its output is kept
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();

  /// The attempt ended, with what the node threw (null: it returned): an interrupt, a Command
  /// to the parent graph or an error is kept; then it is finished (unless abandoned) and the
  /// run is woken.
  void end(std::exception_ptr thrown, RunShared& shared);
};

/// A task's or an update's writes as saved, in order.
using ChannelWrites = std::vector<TaskWrite>;

/// How the supersteps of a run ended.
struct StepsOutcome {
  enum class Kind : std::uint8_t { finished, breakpoint, interrupted } kind = Kind::finished;
  std::vector<Interrupt> interrupts{};
};

/// The executor without the state type. Not thread-safe: one run, driven by one thread (tasks
/// on other threads reach it only through RunShared).
class ExecutorCore {
 public:
  ExecutorCore(const ExecutorCore&) = delete;
  ExecutorCore& operator=(const ExecutorCore&) = delete;

  /// Runs a started coroutine node to its end on the calling thread (a coroutine node in a
  /// synchronous run). Rethrows what it threw.
  static void run_blocking(AsyncCall&& call);

 protected:
  /// `fields`: the state's field names, in schema order (they outlive the executor).
  ExecutorCore(std::shared_ptr<const GraphCore> graph, const RunConfig& config,
               StreamTarget* stream, std::span<const std::string_view> fields, bool json_state,
               Checkpointer* inherited, Store* inherited_store, RunHooks* parent);
  virtual ~ExecutorCore();

  // ---------------------------------------------------------------- a run (run.cpp)
  /// Checks the config and loads the thread (`load_before`: the newest checkpoint older than
  /// it). Returns whether a checkpoint was loaded.
  bool load_thread(const std::optional<std::string>& load_before);
  /// New input: the START task (tasks_[0], whose output the caller sets) after an input
  /// checkpoint holding `input_json` (when persisting and the input is not stored yet).
  void begin_with_input(bool loaded, bool input_saved, std::optional<nlohmann::json> input_json);
  /// Saves the START task's writes, applies them and stores the step's checkpoint.
  void finish_start_step();
  /// Continuing a checkpoint without input; returns whether this is a time travel.
  bool begin_resume(bool loaded, bool has_resume);
  /// After a resuming Command: the fork checkpoint of a time travel, the resumed flag.
  void after_resume(bool time_travel);
  /// The supersteps, until the graph finishes or stops.
  StepsOutcome run_steps(bool skip_breakpoint);
  /// A superstep before its tasks run; true when the run ends or stops here (see outcome_).
  bool before_tasks(bool& skip_breakpoint);
  /// A superstep after its tasks ran; true when the run ends or stops here (see outcome_).
  bool after_tasks();
  /// The nodes a stopped run would run next (breakpoint: all of this step's; else those that
  /// did not finish).
  [[nodiscard]] std::vector<std::string> stopped_next(bool breakpoint) const;
  /// The tasks of the step after the loaded checkpoint, as get_state shows them; `apply_finished`
  /// leaves finished tasks out of `next`.
  void snapshot_tasks(bool apply_finished, std::vector<std::string>& next,
                      std::vector<TaskState>& tasks, std::vector<Interrupt>& interrupts);
  /// A subgraph checkpoint given to a root run: resolves the root checkpoint to replay.
  void resolve_subgraph_checkpoint();
  /// update_state's loading: the checkpoint it updates (restored), if any.
  std::optional<CheckpointTuple> load_for_update();
  /// update_state as "__copy__" and as INPUT.
  CheckpointConfig copy_checkpoint(const CheckpointTuple& loaded);
  CheckpointConfig store_input(nlohmann::json input, bool loaded);
  /// update_state: the ids of the tasks the updates stand for, without changing the schedule.
  std::vector<std::string> next_task_ids(const std::vector<int>& nodes,
                                         const std::vector<std::optional<std::string>>& given);
  /// update_state: the node an update is applied as (see CompiledGraph::update_state).
  [[nodiscard]] int update_target(const std::optional<std::string>& as_node, bool loaded) const;
  [[nodiscard]] int last_writer() const;
  /// A resuming Command's resume value.
  void answer_interrupts(nlohmann::json resume);

  // ---------------------------------------------------------------- scheduling (scheduling.cpp)
  [[nodiscard]] const std::string& name_of(int id) const {
    return topo_.names[static_cast<std::size_t>(id)];
  }
  void reset_task(Task& t, int node, int send_index);
  Task start_task(int step);
  void assign_task_id(Task& t) const;
  void prepare_tasks();
  [[nodiscard]] bool hits(const std::vector<bool>& flags) const {
    for (const Task& t : tasks_) {
      if (flags[static_cast<std::size_t>(t.node)]) return true;
    }
    return false;
  }
  [[nodiscard]] bool hits_config(const std::vector<std::string>& names) const {
    return !names.empty() && hits_names(names);
  }
  [[nodiscard]] bool hits_names(const std::vector<std::string>& names) const;
  void trigger(int node);
  void follow(Goto& go, std::string_view via);
  /// The node a goto (`via` names where it came from) runs: a node of the graph (END for a node
  /// goto), not one that only a Send can start. Throws sg::Error (run.invalid) otherwise.
  [[nodiscard]] int goto_node(const Goto& go, std::string_view via) const;
  void schedule_next();
  void clear_schedule(bool keep_joins = false);
  void check_cancelled() const {
    if (shared_->cfg.cancellation.cancelled()) throw CancelledError();
  }

  // ---------------------------------------------------------------- running tasks (step.cpp)
  [[nodiscard]] bool is_timed(const Task& t) const;
  void run_task(Task& t);
  [[nodiscard]] bool step_may_be_long() const;
  void record_cost(int node, std::chrono::steady_clock::duration took);
  void execute_tasks();
  /// execute_tasks in parts (an asynchronous run waits between start_batch and end_batch):
  void begin_tasks();
  /// Runs a step's only task on this thread when it can; false otherwise.
  bool run_single_task();
  void start_batch();
  /// Whether the batch's tasks are all settled; if not, when to look again.
  bool batch_settled(std::chrono::steady_clock::time_point& wake);
  void end_batch();
  /// Whether task `t` is spawned on the run's strand (a coroutine node of an asynchronous run).
  [[nodiscard]] bool spawns(const Task& t) const {
    return async_ && graph_->coroutine[static_cast<std::size_t>(t.node)];
  }
  /// The pool an asynchronous run hands all its plain tasks to (RunConfig::plain_node_pool);
  /// null when the run takes them itself.
  [[nodiscard]] ThreadPool* plain_node_pool() const;
  /// Spawns an attempt of a coroutine node on the run's strand (async.cpp).
  void spawn_attempt(const std::shared_ptr<NodeAttempt>& attempt);
  void run_claimed(std::size_t k, RunShared& shared);
  void wait_for_batch(Batch* help = nullptr);
  void drain();
  /// The first failed task in task order (tasks_.size(): the run was cancelled), if any.
  std::optional<std::size_t> first_error() {
    if (!shared_->cfg.cancellation.cancelled() &&
        std::none_of(tasks_.begin(), tasks_.end(),
                     [](const Task& t) { return t.error != nullptr; }))
      return std::nullopt;
    return first_error_now();
  }
  std::optional<std::size_t> first_error_now();
  [[noreturn]] void raise(std::size_t index);
  /// Whether a task of the step was interrupted (a subgraph's breakpoint interrupts its node
  /// without an interrupt value).
  [[nodiscard]] bool any_interrupted() const {
    return std::any_of(tasks_.begin(), tasks_.end(), [](const Task& t) { return t.interrupted; });
  }
  /// The interrupts of the step's tasks, in task order.
  [[nodiscard]] std::vector<Interrupt> interrupts_of_step() const;

  // ---------------------------------------------------------------- timeouts (timed.cpp)
  struct AttemptSlot;
  void start_attempt(AttemptSlot& slot, int attempt_no);
  std::chrono::steady_clock::time_point service_timed();
  void abandon_timed();

  // ---------------------------------------------------------------- checkpoints
  // (checkpointing.cpp)
  [[nodiscard]] CheckpointConfig current_config() const {
    return CheckpointConfig{shared_->cfg.thread_id, shared_->cfg.checkpoint_ns, current_id_};
  }
  [[nodiscard]] bool recent_applies() const;
  void save_writes(std::string task_id, ChannelWrites writes, bool with_checkpoint = false);
  void save_step() { save_checkpoint("loop"); }
  void raise_to_thread_versions();
  void save_checkpoint(const char* source);
  const nlohmann::json& run_metadata();
  void store_pending_checkpoint();
  void flush_held_puts();
  [[nodiscard]] nlohmann::json channel_value(const std::string& channel) const;
  void finish_persisting(bool finished = false);
  /// A task's writes as saved: its fields, its gotos, or kNoWrites. `for_saver`, `with_checkpoint`:
  /// see Executor::append_field_writes.
  ChannelWrites output_writes(const Task& t, bool for_saver = false, bool with_checkpoint = false);
  [[nodiscard]] nlohmann::json gotos_json(const std::vector<Goto>& go_to) const;
  void save_task_outcome(const Task& t, bool with_checkpoint = false) {
    if (saver_ && !t.restored) save_task_outcome_now(t, with_checkpoint);
  }
  void save_task_outcome_now(const Task& t, bool with_checkpoint);
  /// The node cache.
  std::string cache_key_of(const Task& t, const CachePolicy& policy) const;
  bool take_cached(Task& t, const std::string& key);
  void put_cached(const Task& t, const std::string& key, const CachePolicy& policy);
  [[nodiscard]] std::optional<std::size_t> field_index(std::string_view channel) const;

  // ---------------------------------------------------------------- restoring (restoring.cpp)
  void versions_loaded();
  void after_restore(const std::string& checkpoint_id);
  void restore(const CheckpointTuple& tuple);
  void apply_null_writes(const std::vector<const PendingWrite*>& writes);
  [[nodiscard]] const std::vector<PendingWrite>& task_writes_of(const Task& t) const;
  void restore_task_writes();
  [[nodiscard]] std::size_t hanging_interrupts() const;
  [[nodiscard]] Goto goto_from_json(const nlohmann::json& go) const;

  // ---------------------------------------------------------------- callbacks (tracing.cpp)
  /// A run with callbacks reports its span and those of its tasks; without, each hook point
  /// costs one branch on trace_.
  void start_run_span_if_traced() {
    if (!shared_->cfg.callbacks.empty()) [[unlikely]]
      start_run_span();
  }
  void start_run_span();
  void end_run_span(RunStatus status) {
    if (trace_) [[unlikely]]
      end_run_span_now(status == RunStatus::done ? SpanStatus::ok : SpanStatus::interrupted, {});
  }
  void end_run_span_error(const std::exception_ptr& error) {
    if (trace_) [[unlikely]]
      end_run_span_now(SpanStatus::error, error);
  }
  void end_run_span_now(SpanStatus status, const std::exception_ptr& error);
  /// Starts the span of a task (`info`: the task's, before an attempt copies it). Any thread.
  void start_node_span(TaskInfo& info) {
    if (trace_) [[unlikely]]
      start_node_span_now(info);
  }
  void start_node_span_now(TaskInfo& info);
  void end_node_span(Task& t);
  /// The span of a task as its events show it (start fields).
  [[nodiscard]] Span node_span(const TaskInfo& info) const;
  /// A task's attempt failed with `error` and runs again as `next_attempt`: logged, and
  /// reported to the callbacks. Any thread.
  void report_retry(const TaskInfo& info, const std::exception_ptr& error, int next_attempt);

  // ---------------------------------------------------------------- streaming (streaming.cpp)
  [[nodiscard]] bool streams(StreamMode mode) const { return stream_ && stream_->modes.has(mode); }
  void emit_values() {
    if (streams(StreamMode::values)) emit_state({});
  }
  void emit_interrupt_update(std::vector<Interrupt> interrupts);
  void emit_custom(RunShared::Custom&& c);
  /// messages mode: the messages a finished task wrote that the stream did not carry yet.
  void emit_task_messages(const Task& t);
  void emit_debug_start(const Task& t);
  void emit_debug_checkpoint(bool start_next = false) {
    if (saver_ && streams(StreamMode::debug)) emit_debug_checkpoint_now(start_next);
  }
  void emit_debug_checkpoint_now(bool start_next);
  void emit_task_finished(Task& t, bool replayed = false) {
    if (trace_) [[unlikely]]
      end_node_span(t);
    if (stream_) emit_task_finished_now(t, replayed);
  }
  void emit_task_finished_now(Task& t, bool replayed);
  /// LangGraph's task result: a channel written more than once shows {"$writes": [...]}.
  static void add_result_write(nlohmann::json& result, const std::string& channel,
                               const nlohmann::json& value);

  // ---------------------------------------------------------------- the typed shell's part
  /// tasks_ was resized: the typed outputs follow.
  virtual void tasks_resized() = 0;
  /// Runs task `t`'s node on the step's state and sets its output (with what it pushed).
  virtual void call_node(Task& t, Context& ctx) = 0;
  /// Gives each message of task `t`'s output that has no id a new one (a UUID), as LangGraph
  /// names the messages of a node it streams: the messages stream, the updates and the state
  /// then show the same id.
  virtual void name_new_messages(Task& t) = 0;
  /// Sets the output of `t` from a subgraph's Command to this graph; false when it carries an
  /// update of another state type.
  virtual bool take_parent_command(Task& t, ParentCommand& command) = 0;
  /// A timed attempt of `t` on a snapshot of the step's state.
  virtual std::shared_ptr<NodeAttempt> make_attempt(const Task& t) = 0;
  /// Moves a finished attempt's output into `t`. Throws sg::Error like call_node.
  virtual void take_attempt_output(Task& t, NodeAttempt& attempt) = 0;
  /// Drops the step's state snapshot of timed attempts.
  virtual void release_snapshot() noexcept = 0;
  /// Throws ParentCommand with `t`'s Command.
  [[noreturn]] virtual void raise_parent_command(Task& t) = 0;
  /// Applies the step's writes in task order, routes, streams values, schedules the next step.
  virtual void finish_step() = 0;
  /// Fills the state's managed values (RemainingSteps, IsLastStep) for this step.
  virtual void set_managed_values() = 0;
  /// Loads the state's fields (and their caches) from a checkpoint's values.
  virtual void restore_fields(const CheckpointTuple& tuple) = 0;
  /// Keeps the thread's final state for its next run (see CompileOptions::recent_threads).
  virtual bool restore_recent() = 0;
  /// Rebuilds a finished task's output from its saved (or cached) writes.
  virtual void restore_output(Task& t, const std::vector<PendingWrite>& writes) = 0;
  /// Applies a saved write of field `field` to the state as the graph's input.
  virtual void apply_saved_write(std::size_t field, const nlohmann::json& value) = 0;
  /// Appends the field writes of `t` (pushed messages, update, further updates).
  virtual void append_task_writes(const Task& t, ChannelWrites& out, bool for_saver,
                                  bool appendable) = 0;
  /// The value of field `field` for a checkpoint; a tracked list as a delta (returns false for
  /// a field that is not one).
  [[nodiscard]] virtual nlohmann::json field_json(std::size_t field) const = 0;
  virtual bool field_list_delta(std::size_t field, ListDelta& out) const = 0;
  /// After field `field` was stored: tracked lists take the stored list as their base.
  virtual void field_stored(std::size_t field) = 0;
  /// The state as JSON, managed values left out (null for a state without JSON).
  [[nodiscard]] virtual nlohmann::json state_json() const = 0;
  /// A Send argument as JSON. Throws sg::Error when it does not convert.
  [[nodiscard]] virtual nlohmann::json send_arg_json(
      const std::string& node, const std::any& arg,
      const std::function<nlohmann::json(const std::any&)>& to_json) const = 0;
  /// Streams an event without state values or updates.
  virtual void sink(StreamMode mode, int step, std::string node, nlohmann::json data,
                    std::vector<Interrupt> interrupts) = 0;
  /// Streams the state (values mode) with the interrupts that stopped the step.
  virtual void emit_state(std::vector<Interrupt> interrupts) = 0;
  /// Streams a finished task's updates (one per Command).
  virtual void emit_task_updates(const Task& t, bool cached) = 0;
  /// Streams a subgraph's event.
  virtual void emit_child(ForeignEvent&& child) = 0;
  /// Streams a messages event.
  virtual void emit_message(MessageEvent&& event) = 0;

  struct PendingSend {
    int node;
    std::any arg;
    std::function<nlohmann::json(const std::any&)> to_json{};
    std::optional<nlohmann::json> arg_json{};  // as read from a checkpoint
  };

  std::shared_ptr<const GraphCore> graph_;
  const Topology& topo_;
  StreamTarget* stream_;
  std::shared_ptr<RunShared> shared_;
  std::span<const std::string_view> fields_;
  const bool json_state_;

  int step_ = 0;
  int saved_step_ = -1;                 // the step of the latest checkpoint
  bool above_thread_versions_ = false;  // see raise_to_thread_versions()
  std::vector<Task> tasks_;
  std::vector<int> next_pull_;
  std::vector<char> pull_mark_;
  std::vector<int> deferred_;  // triggered deferred nodes: they run once nothing else is left
  std::vector<char> defer_mark_;
  int stop_ = 0;                 // the last step the recursion limit allows + 1 (LangGraph's stop)
  std::string loaded_source_;    // metadata "source" of the restored checkpoint
  nlohmann::json current_meta_;  // debug streams: the latest checkpoint's
  std::optional<CheckpointConfig> current_parent_;  // metadata and parent
  std::vector<PendingSend> next_push_;
  std::vector<std::vector<char>> join_marks_;
  std::vector<std::size_t> claimable_;
  std::shared_ptr<Batch> batch_;  // the step's claimable tasks
  bool deliver_promptly_ = false;
  std::shared_ptr<AsyncState> async_;  // an asynchronous run's (see spawns())
  // A lone coroutine task's first attempt, awaited by the loop instead of spawned (async.cpp).
  bool await_lone_attempt_ = false;
  std::shared_ptr<NodeAttempt> lone_attempt_;
  StepsOutcome outcome_;  // how the supersteps ended (before_tasks, after_tasks)
  std::vector<AttemptSlot> attempts_;
  std::vector<char> changed_;  // per field: written since the last checkpoint

  // Persistence (with a checkpointer).
  Checkpointer* saver_ = nullptr;
  Durability durability_ = Durability::sync;
  std::unique_ptr<AsyncWriter> writer_;
  /// The run's callbacks and span; null when the run has no callbacks.
  std::shared_ptr<RunTrace> trace_;
  std::vector<CheckpointPut> held_puts_;  // recorded checkpoints not yet handed to the saver
  nlohmann::json run_metadata_;           // see run_metadata()
  bool saver_deltas_ = false;  // saver_->stores_deltas(): lists as deltas, messages as CBOR
  std::vector<TaskWrites> held_writes_;  // task writes that go with the next checkpoint
  bool hold_puts_ = false;               // keep the next one for a joint write
  std::string run_id_;
  CheckpointConfig stored_;  // the last stored checkpoint: the parent of the next
  std::string current_id_;   // the latest checkpoint, stored or not: task writes go against it
  ChannelVersions versions_;
  std::int64_t max_version_ = 0;
  std::map<std::string, ChannelVersions> versions_seen_;
  std::int64_t stored_through_ = 0;  // the highest version in a stored (or loaded) checkpoint
  std::vector<std::int64_t> stored_version_;  // per field: its last stored version, or -1
  std::map<std::string, std::vector<PendingWrite>> resumed_writes_;  // by task id
  ChannelWrites null_writes_;                                        // saved by earlier Commands
  std::optional<std::pair<Checkpoint, nlohmann::json>> pending_checkpoint_;
  std::vector<std::tuple<std::string, std::string, ChannelWrites>> exit_writes_;
  std::optional<nlohmann::json> start_input_;    // the input an input checkpoint stores
  std::optional<nlohmann::json> pending_start_;  // a stored input START has not applied yet

  friend struct AsyncLoop;
};

/// A timed task of the current step. A finished attempt's thread is joined, so nothing it holds
/// (the graph, its checkpointer) is released on it after the run returns; an abandoned attempt's
/// thread is detached.
struct ExecutorCore::AttemptSlot {
  std::size_t task;
  std::shared_ptr<NodeAttempt> attempt{};
  int attempt_no = 0;
  std::optional<std::chrono::steady_clock::time_point> retry_at{};
  bool done = false;
  std::thread worker{};

  explicit AttemptSlot(std::size_t task_index) : task(task_index) {}
  AttemptSlot(AttemptSlot&&) noexcept = default;
  AttemptSlot& operator=(AttemptSlot&&) = delete;
  ~AttemptSlot() { release_worker(); }

  /// Joins the attempt's thread when it finished, otherwise abandons and detaches it.
  void release_worker();
};

}  // namespace sg::detail
