// SPDX-License-Identifier: MIT
#pragma once

// The vocabulary of graphs and runs: START/END, Send, Command, interrupts, retry policies,
// node/compile/run options, results and stream events.

#include <stategraph/core/callbacks.hpp>
#include <stategraph/core/checkpointer.hpp>
#include <stategraph/core/json_optional.hpp>  // nlohmann/json.hpp with std::optional
#include <stategraph/core/message.hpp>
#include <stategraph/core/update.hpp>

#include <any>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sg {

class Store;  // stategraph/store/store.hpp

class ThreadPool;
class Cache;  // stategraph/core/cache.hpp

/// The entry pseudo-node: `add_edge(sg::START, "first")`.
inline constexpr const char* START = "__start__";
/// The exit pseudo-node: `add_edge("last", sg::END)`, or return it from a router.
inline constexpr const char* END = "__end__";
/// The node name of the `updates` stream event that reports interrupts (LangGraph's
/// `{"__interrupt__": [...]}` chunk).
inline constexpr const char* INTERRUPT = "__interrupt__";
/// update_state's `as_node` that applies the values as graph input (LangGraph's INPUT): the
/// thread then runs from START again.
inline constexpr const char* INPUT = "__input__";

/// Runs `node` in the next superstep with `arg` as its input instead of the state (map-reduce).
/// The node receives `arg`: a state value for ordinary nodes, or the type the node's function
/// takes. `arg` must be copyable.
struct Send {
  std::string node;
  std::any arg;
  /// Converts `arg` to JSON for checkpoints; set when the argument's type converts to JSON.
  std::function<nlohmann::json(const std::any&)> arg_to_json{};

  Send(std::string node_name, std::any argument)
      : node(std::move(node_name)), arg(std::move(argument)) {}
  template <class T>
  requires(!std::is_same_v<std::decay_t<T>, std::any>) Send(std::string node_name, T&& argument)
      : node(std::move(node_name)),
        arg(std::in_place_type<std::decay_t<T>>, std::forward<T>(argument)) {
    using D = std::decay_t<T>;
    if constexpr (JsonConvertible<D>) {
      arg_to_json = [](const std::any& a) { return nlohmann::json(std::any_cast<const D&>(a)); };
    }
  }
};

/// Where to go next: a node name (or END), or a Send. Routers and Commands return these.
class Goto {
 public:
  Goto(const char* node) : value_(std::string(node)) {}       // NOLINT: implicit by design
  Goto(std::string node) : value_(std::move(node)) {}         // NOLINT
  Goto(std::string_view node) : value_(std::string(node)) {}  // NOLINT
  Goto(Send send) : value_(std::move(send)) {}                // NOLINT

  /// True for a Send.
  [[nodiscard]] bool is_send() const noexcept { return value_.index() == 1; }
  /// The node to run (the Send's node for a Send).
  [[nodiscard]] const std::string& node() const noexcept {
    return is_send() ? std::get<1>(value_).node : std::get<0>(value_);
  }
  /// The Send; precondition is_send().
  [[nodiscard]] Send& send() { return std::get<1>(value_); }

 private:
  std::variant<std::string, Send> value_;
};

/// Routes a Command to the parent graph of the subgraph that returned it.
inline constexpr const char* PARENT = "__parent__";

/// What a node may return instead of an Update: an update plus where to go next. `go_to` adds to
/// the node's static edges (as in LangGraph). As graph input, `resume` answers pending
/// interrupts (a value, or an object mapping interrupt ids to values). `graph = sg::PARENT` sends
/// the command to the parent graph.
template <State S>
struct Command {
  Update<S> update{};
  std::vector<Goto> go_to{};
  std::optional<nlohmann::json> resume{};
  std::string graph{};
};

/// A pending interrupt: raised by `sg::interrupt(value)` in node `node`; `id` identifies it
/// when resuming.
struct Interrupt {
  std::string id;
  nlohmann::json value;
  std::string node;

  friend bool operator==(const Interrupt&, const Interrupt&) = default;
};

/// LangGraph's RetryPolicy: up to `max_attempts` attempts (the first included); before attempt
/// n+1 the task sleeps min(max_interval, initial_interval * backoff_factor^(n-1)) plus, with
/// jitter, a random 0..1 s. `retry_on` decides per exception (default: default_retry_on).
struct RetryPolicy {
  int max_attempts = 3;
  std::chrono::duration<double> initial_interval{0.5};
  double backoff_factor = 2.0;
  std::chrono::duration<double> max_interval{128.0};
  bool jitter = true;
  std::function<bool(const std::exception&)> retry_on{};
};

/// The default retry predicate: retries everything except programming errors
/// (std::logic_error and its subclasses, sg::InvalidUpdateError, sg::GraphValidationError),
/// cancellation, and std::system_errors that are not about a connection (LangGraph retries
/// ConnectionError, not other OSErrors). Thread-safe.
[[nodiscard]] bool default_retry_on(const std::exception& error) noexcept;

/// LangGraph's CachePolicy: a node whose input was seen before (same key, within `ttl`) is not run;
/// its cached writes are applied instead. Needs CompileOptions::cache.
struct CachePolicy {
  /// The cache key of a node input (the state, or the Send argument, as JSON). Default: the
  /// input's JSON text.
  std::function<std::string(const nlohmann::json& input)> key{};
  /// How long an entry stays valid (none: forever).
  std::optional<std::chrono::duration<double>> ttl{};
};

/// Per-node options for add_node.
struct NodeOptions {
  /// Retry failed attempts (none by default).
  std::optional<RetryPolicy> retry{};
  /// Abandon an attempt that runs longer (0: no limit); it fails with NodeTimeoutError, which
  /// the retry policy may retry. A node with a timeout reads its own copy of the state and runs
  /// on a thread of its own; an abandoned attempt finishes in the background and is ignored.
  std::chrono::milliseconds timeout{0};
  /// The nodes a Command-returning node may go to (for validation and drawing).
  std::vector<std::string> destinations{};
  /// Free-form metadata (shown in debug events).
  nlohmann::json metadata{};
  /// Run the node only when nothing else is left to run (LangGraph's `defer=True`): a
  /// map-reduce finalizer waits for every branch, however long.
  bool defer = false;
  /// Skip the node when its input was seen before (see CachePolicy).
  std::optional<CachePolicy> cache_policy{};
};

/// Cancels a run from any thread: pass it in RunConfig::cancellation and call cancel(). Nodes
/// see it through Context::cancelled(). A default-constructed token can never be cancelled;
/// make one with create(). Copies share the same state. Thread-safe.
class CancellationToken {
 public:
  CancellationToken() = default;
  /// A token that can be cancelled.
  [[nodiscard]] static CancellationToken create();
  /// Requests cancellation; wakes waiting runs. No effect on a default-constructed token.
  void cancel() const noexcept;
  /// True once cancel() was called.
  [[nodiscard]] bool cancelled() const noexcept;
  /// False for a default-constructed token (which nothing can cancel).
  [[nodiscard]] bool can_cancel() const noexcept { return state_ != nullptr; }
  /// Sleeps up to `duration`; returns early (true) when cancelled.
  bool wait_for(std::chrono::duration<double> duration) const;

  struct State;

  /// Keeps a callback registered with on_cancel(); unregisters it when destroyed, waiting for
  /// a call of it in progress on another thread to return. Movable, not copyable.
  class Subscription {
   public:
    Subscription() = default;
    Subscription(Subscription&& other) noexcept;
    Subscription& operator=(Subscription&& other) noexcept;
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;
    ~Subscription();
    /// Unregisters now (see the destructor).
    void reset() noexcept;

   private:
    friend class CancellationToken;
    std::shared_ptr<State> state_;
    std::uint64_t id_ = 0;
  };

  /// Calls `callback` once when cancel() is called (on cancel()'s thread), or right away on
  /// this thread when the token is already cancelled. A default-constructed token never calls
  /// it. The callback must not throw. Thread-safe.
  [[nodiscard]] Subscription on_cancel(std::function<void()> callback) const;

 private:
  std::shared_ptr<State> state_;
};

/// Options of one run (LangGraph's config).
struct RunConfig {
  /// The conversation thread (the checkpointer's key).
  std::string thread_id{};
  /// Selects a checkpoint of the thread to replay or fork from.
  std::string checkpoint_id{};
  std::string checkpoint_ns{};
  /// The most supersteps a run may take: a chain of n nodes needs at least n + 1.
  int recursion_limit = 25;
  /// Run at most this many tasks of a superstep at once (0: as many as the pool allows).
  std::size_t max_concurrency = 0;
  CancellationToken cancellation{};
  /// When checkpoints become durable (default: the checkpointer's default_durability()).
  std::optional<Durability> durability{};
  /// Stops before / after these nodes, in addition to the graph's own lists.
  std::vector<std::string> interrupt_before{};
  std::vector<std::string> interrupt_after{};
  /// Also stream the events of subgraphs (with their namespace).
  bool stream_subgraphs = false;
  /// Free-form values nodes can read (LangGraph's `configurable`).
  nlohmann::json configurable{};
  /// Copied into checkpoint metadata (string, number and boolean values).
  nlohmann::json metadata{};
  /// Static per-run data for nodes (LangGraph's runtime context); not checkpointed.
  nlohmann::json context{};
  std::string run_id{};
  /// Receive the run's spans: the run, its nodes, model and tool calls and checkpoint writes
  /// (sg::Callbacks). Subgraphs and the models called in nodes report to the same list.
  CallbackList callbacks{};
  /// The span the run's span is a child of: a caller's `traceparent`, or the node running a
  /// subgraph. None: the run starts a trace. Used only with callbacks.
  std::optional<TraceContext> trace_parent{};
  /// The run span's name (LangChain's run_name); empty: the graph's name, else "LangGraph".
  std::string run_name{};
  /// An asynchronous run (ainvoke, astream) runs its plain (synchronous) nodes on this pool,
  /// never on its executor, so that a node that blocks holds one of the pool's threads and no
  /// other coroutine waits for it. Null: on the run's strand (a lone task) or the graph's pool.
  /// Synchronous runs ignore it.
  std::shared_ptr<ThreadPool> plain_node_pool{};
};

/// How a run ended.
enum class RunStatus : std::uint8_t { done, interrupted };

/// A task of a checkpoint: its id, node, the error it failed with (empty if none), its pending
/// interrupts, and for a task that finished (its writes were saved) its writes as JSON
/// (`{"field": value}`; null while it has not finished).
struct TaskState {
  std::string id;
  std::string name;
  std::string error;
  std::vector<Interrupt> interrupts;
  nlohmann::json result{};
};

/// The state of a thread at a checkpoint (LangGraph's StateSnapshot): the values, the nodes that
/// run next, the pending tasks and interrupts, the checkpoint's config and metadata, when it was
/// made and its parent.
template <State S>
struct StateSnapshot {
  S values{};
  std::vector<std::string> next{};
  std::vector<TaskState> tasks{};
  std::vector<Interrupt> interrupts{};
  CheckpointConfig config{};
  nlohmann::json metadata{};
  std::string created_at{};
  std::optional<CheckpointConfig> parent_config{};
};

/// The outcome of invoke: the state, and for an interrupted run the pending interrupts and the
/// nodes that run on resume.
template <State S>
struct RunResult {
  S state{};
  RunStatus status = RunStatus::done;
  std::vector<Interrupt> interrupts{};
  std::vector<std::string> next{};

  [[nodiscard]] bool interrupted() const noexcept { return status == RunStatus::interrupted; }
};

/// What stream() reports; combine with `|`.
enum class StreamMode : std::uint8_t {
  values = 1,
  updates = 2,
  custom = 4,
  debug = 8,
  messages = 16
};

/// A set of stream modes.
class StreamModes {
 public:
  constexpr StreamModes() = default;
  constexpr StreamModes(StreamMode mode) : bits_(static_cast<std::uint8_t>(mode)) {}  // NOLINT
  [[nodiscard]] constexpr bool has(StreamMode mode) const noexcept {
    return (bits_ & static_cast<std::uint8_t>(mode)) != 0;
  }
  [[nodiscard]] constexpr bool empty() const noexcept { return bits_ == 0; }
  constexpr StreamModes operator|(StreamModes other) const noexcept {
    StreamModes out;
    out.bits_ = static_cast<std::uint8_t>(bits_ | other.bits_);
    return out;
  }

 private:
  std::uint8_t bits_ = 0;
};
constexpr StreamModes operator|(StreamMode a, StreamMode b) noexcept {
  return StreamModes(a) | StreamModes(b);
}

/// "values", "updates", "custom", "debug" or "messages".
[[nodiscard]] std::string_view to_string(StreamMode mode) noexcept;

/// One stream event. `values`: the state after a superstep (with `interrupts` when a node
/// interrupted: the state the step started from). `updates`: one node's update; node ==
/// sg::INTERRUPT for the interrupts of a step (empty for an interrupt_before/after stop), `cached`
/// when the writes came from the node cache. `custom`: what a node wrote with Context::write.
/// `debug`: task start / result as JSON (`{"type": "task" | "task_result", "step", "payload"}`).
/// `messages`: `message` is a chunk of a model's reply streamed inside node `node`, or, with
/// `complete`, a whole message (a node's output, or a reply that was not streamed) that the
/// stream did not carry yet; `data` is LangGraph's metadata (langgraph_node, langgraph_step,
/// langgraph_checkpoint_ns, ls_model_name, ...).
/// `ns` is the subgraph path ("node:task" per level; empty for the root graph).
template <State S>
struct StreamEvent {
  StreamMode mode = StreamMode::values;
  int step = 0;
  std::string node{};
  std::vector<std::string> ns{};
  std::optional<S> values{};
  std::optional<Update<S>> update{};
  nlohmann::json data{};
  std::vector<Interrupt> interrupts{};
  bool cached = false;
  std::optional<MessageChunk> message{};
  bool complete = false;
};

/// One update of bulk_update_state: `values` as written by `as_node` (default: the node that
/// ran last), optionally under a given task id.
template <State S>
struct StateUpdate {
  Update<S> values{};
  std::optional<std::string> as_node{};
  std::optional<std::string> task_id{};
};

/// How a compiled graph used as a subgraph keeps its state (LangGraph's `checkpointer=None |
/// True | False` for subgraphs).
enum class SubgraphCheckpointer : std::uint8_t {
  /// The parent's checkpointer, a fresh state at every call (interrupts still resume).
  inherit,
  /// Its own namespace (the node name): the state carries over between calls on a thread.
  persistent,
  /// Never checkpointed (interrupts inside it cannot resume).
  disabled,
};

/// Options of compile().
struct CompileOptions {
  /// Saves every superstep of every thread (RunConfig::thread_id); a subgraph compiled without
  /// one uses its parent's.
  std::shared_ptr<Checkpointer> checkpointer{};
  /// Long-term memory nodes reach through Context::store() (sg::InMemoryStore from
  /// <stategraph/store/memory_store.hpp>, sg::RocksDbStore from rocksdb_store.hpp); a subgraph
  /// compiled without one uses its parent's.
  std::shared_ptr<Store> store{};
  /// Stop before / after these nodes ("*" for all).
  std::vector<std::string> interrupt_before{};
  std::vector<std::string> interrupt_after{};
  /// The pool that runs parallel tasks (default: ThreadPool::shared()).
  std::shared_ptr<ThreadPool> pool{};
  /// The graph's name (drawing, subgraph namespaces).
  std::string name{};
  /// Where nodes with a CachePolicy keep their results (e.g. sg::InMemoryCache).
  std::shared_ptr<Cache> cache{};
  /// How this graph keeps its state when it runs as a subgraph.
  SubgraphCheckpointer subgraph_checkpointer = SubgraphCheckpointer::inherit;
  /// How many threads' final states (with a checkpointer) the compiled graph keeps in memory, so
  /// that the next run on one of them skips loading its latest checkpoint (it still checks that
  /// the checkpoint is the thread's latest). 0 turns this off.
  std::size_t recent_threads = 64;
};

}  // namespace sg
