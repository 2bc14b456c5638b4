// SPDX-License-Identifier: MIT
#pragma once

// A compiled graph (invoke, stream, get_state, update_state) and its iterable event stream.

#include <stategraph/core/context.hpp>
#include <stategraph/core/detail/executor.hpp>
#include <stategraph/core/graph_types.hpp>

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sg {

template <State S>
class CompiledGraph;
template <State S>
class StateGraph;

namespace detail {
template <State S>
struct AsyncRuns;  // ainvoke and astream: <stategraph/core/async.hpp>
}  // namespace detail

/// A lazily consumed event stream: iterate it (`for (auto& event : app.stream(...))`); the
/// graph runs on a background thread. After the loop, result() holds the run's outcome; an error
/// of the run is rethrown by the iteration (at its end) and by result(). Destroying the stream
/// before the end cancels the run (unless RunConfig::cancellation was given) and waits for it.
/// Use from one thread.
template <State S>
class EventStream {
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<StreamEvent<S>> queue;
    bool done = false;
    std::exception_ptr error;
    std::optional<RunResult<S>> result;
  };

 public:
  class iterator {
   public:
    using value_type = StreamEvent<S>;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    explicit iterator(EventStream* owner) : owner_(owner) { advance(); }
    StreamEvent<S>& operator*() const { return *current_; }
    StreamEvent<S>* operator->() const { return &*current_; }
    iterator& operator++() {
      advance();
      return *this;
    }
    void operator++(int) { advance(); }
    friend bool operator==(const iterator& it, std::default_sentinel_t) { return !it.current_; }

   private:
    void advance() {
      auto& shared = *owner_->shared_;
      std::unique_lock lock(shared.mu);
      shared.cv.wait(lock, [&] { return !shared.queue.empty() || shared.done; });
      if (!shared.queue.empty()) {
        current_ = std::move(shared.queue.front());
        shared.queue.pop_front();
        return;
      }
      current_.reset();
      if (shared.error) std::rethrow_exception(shared.error);
    }
    EventStream* owner_ = nullptr;
    mutable std::optional<StreamEvent<S>> current_;
  };

  EventStream(const CompiledGraph<S>& graph, detail::RunRequest<S> request, RunConfig config,
              StreamModes modes)
      : shared_(std::make_shared<Shared>()) {
    if (!config.cancellation.can_cancel()) {
      token_ = CancellationToken::create();
      config.cancellation = token_;
    }
    thread_ = std::thread([shared = shared_, graph, request = std::move(request),
                           config = std::move(config), modes]() mutable {
      try {
        auto result =
            graph.run_stream(std::move(request), config, modes, [&](const StreamEvent<S>& e) {
              {
                std::lock_guard lock(shared->mu);
                shared->queue.push_back(e);
              }
              shared->cv.notify_all();
            });
        std::lock_guard lock(shared->mu);
        shared->result = std::move(result);
      } catch (...) {
        std::lock_guard lock(shared->mu);
        shared->error = std::current_exception();
      }
      {
        std::lock_guard lock(shared->mu);
        shared->done = true;
      }
      shared->cv.notify_all();
    });
  }
  ~EventStream() {
    if (thread_.joinable()) {
      token_.cancel();
      thread_.join();
    }
  }
  EventStream(const EventStream&) = delete;
  EventStream& operator=(const EventStream&) = delete;

  [[nodiscard]] iterator begin() { return iterator(this); }
  [[nodiscard]] std::default_sentinel_t end() const noexcept { return {}; }

  /// Waits for the run and returns its result; rethrows its error.
  RunResult<S> result() {
    if (thread_.joinable()) thread_.join();
    if (shared_->error) std::rethrow_exception(shared_->error);
    return std::move(*shared_->result);
  }

 private:
  std::shared_ptr<Shared> shared_;
  CancellationToken token_;
  std::thread thread_;
};

/// A validated, immutable graph. invoke() and stream() may be called from many threads at once;
/// each run has its own state. Copies share the compiled graph.
template <State S>
class CompiledGraph {
 public:
  /// Runs the graph with `input` applied through the reducers as the START node's writes, from
  /// the empty state, or with a checkpointer from the latest state of `config.thread_id` (or of
  /// the checkpoint `config.checkpoint_id` names: a new branch). Returns the final state, or an
  /// interrupted result. Throws GraphRecursionError, NodeError (a node threw; names the node
  /// and the step), NodeTimeoutError, InvalidUpdateError, CancelledError, CheckpointError.
  RunResult<S> invoke(Update<S> input, const RunConfig& config = {}) const {
    detail::RunRequest<S> request;
    request.input = std::move(input);
    return run(std::move(request), config, nullptr);
  }

  /// invoke with a whole state as input (each field through its reducer).
  RunResult<S> invoke(const S& input, const RunConfig& config = {}) const {
    return invoke(Update<S>::from_state(input), config);
  }

  /// Continues the thread `config.thread_id` from its checkpoint with a Command (needs a
  /// checkpointer): `resume` answers pending interrupts (a value, or an object mapping interrupt
  /// ids to values; the interrupted nodes run again from the start), `update` is applied to the
  /// state, `go_to` adds nodes to run. Throws like invoke, and sg::Error without a checkpointer.
  RunResult<S> invoke(Command<S> input, const RunConfig& config = {}) const {
    require_checkpointer(input);
    return run(command_request(std::move(input)), config, nullptr);
  }

  /// `invoke(std::nullopt, config)`: LangGraph's `invoke(None, config)`, the same as resume().
  RunResult<S> invoke(std::nullopt_t, const RunConfig& config) const { return resume(config); }

  /// Continues the thread from its checkpoint without new input (LangGraph's `invoke(None)`):
  /// after an interrupt_before/after stop, a failure or a crash. With `config.checkpoint_id`,
  /// replays from that checkpoint on a new branch.
  RunResult<S> resume(const RunConfig& config) const {
    return run(detail::RunRequest<S>{}, config, nullptr);
  }

  /// Runs like invoke and calls `on_event` for each event of `modes`, in order, on the calling
  /// thread, as the run produces them (custom events and updates of parallel nodes as they come).
  RunResult<S> stream(Update<S> input, const RunConfig& config, StreamModes modes,
                      std::function<void(const StreamEvent<S>&)> on_event) const {
    detail::RunRequest<S> request;
    request.input = std::move(input);
    return run_stream(std::move(request), config, modes, std::move(on_event));
  }

  /// Streams a run that continues the thread with a Command (see invoke(Command)). A resumed run
  /// first streams the state it resumes from (values mode).
  RunResult<S> stream(Command<S> input, const RunConfig& config, StreamModes modes,
                      std::function<void(const StreamEvent<S>&)> on_event) const {
    return run_stream(command_request(std::move(input)), config, modes, std::move(on_event));
  }

  /// Streams a run that continues the thread without input (LangGraph's `stream(None, config)`).
  RunResult<S> stream(std::nullopt_t, const RunConfig& config, StreamModes modes,
                      std::function<void(const StreamEvent<S>&)> on_event) const {
    return run_stream(detail::RunRequest<S>{}, config, modes, std::move(on_event));
  }

  /// `co_await app.ainvoke(input, config)`: invoke as a coroutine on the caller's executor
  /// (include <stategraph/core/async.hpp>). The run happens on a strand of that executor;
  /// coroutine nodes wait without holding a thread. Same semantics and errors as invoke; a run
  /// called from a node does not become its subgraph (pass the config).
  template <class Async = detail::AsyncRuns<S>>
  auto ainvoke(Update<S> input) const {
    return ainvoke<Async>(std::move(input), RunConfig());
  }
  template <class Async = detail::AsyncRuns<S>>
  auto ainvoke(Update<S> input, RunConfig config) const {
    detail::RunRequest<S> request;
    request.input = std::move(input);
    return Async::run(def_, std::move(request), std::move(config), StreamModes(), nullptr);
  }
  /// ... continuing the thread with a Command (see invoke(Command)).
  template <class Async = detail::AsyncRuns<S>>
  auto ainvoke(Command<S> input, RunConfig config) const {
    require_checkpointer(input);
    return Async::run(def_, command_request(std::move(input)), std::move(config), StreamModes(),
                      nullptr);
  }
  /// ... continuing the thread without input (LangGraph's `ainvoke(None, config)`).
  template <class Async = detail::AsyncRuns<S>>
  auto ainvoke(std::nullopt_t, RunConfig config) const {
    return Async::run(def_, detail::RunRequest<S>(), std::move(config), StreamModes(), nullptr);
  }

  /// `co_await app.astream(input, config, modes, on_event)`: ainvoke that calls `on_event` for
  /// each event of `modes`, in order, on the run's strand (see stream()).
  template <class Async = detail::AsyncRuns<S>>
  auto astream(Update<S> input, RunConfig config, StreamModes modes,
               std::function<void(const StreamEvent<S>&)> on_event) const {
    detail::RunRequest<S> request;
    request.input = std::move(input);
    return Async::run(def_, std::move(request), std::move(config), modes, std::move(on_event));
  }
  template <class Async = detail::AsyncRuns<S>>
  auto astream(Command<S> input, RunConfig config, StreamModes modes,
               std::function<void(const StreamEvent<S>&)> on_event) const {
    require_checkpointer(input);
    return Async::run(def_, command_request(std::move(input)), std::move(config), modes,
                      std::move(on_event));
  }
  template <class Async = detail::AsyncRuns<S>>
  auto astream(std::nullopt_t, RunConfig config, StreamModes modes,
               std::function<void(const StreamEvent<S>&)> on_event) const {
    return Async::run(def_, detail::RunRequest<S>(), std::move(config), modes, std::move(on_event));
  }

  /// The state of `config.thread_id` at its latest checkpoint (or `config.checkpoint_id`): values,
  /// next nodes, tasks, interrupts, config, metadata. nullopt for a thread without checkpoints.
  /// Throws sg::Error without a checkpointer, CheckpointError for unreadable data.
  [[nodiscard]] std::optional<StateSnapshot<S>> get_state(const RunConfig& config) const {
    auto [def, saver] = graph_at(config.checkpoint_ns);
    detail::Executor<S> executor(std::move(def), config, nullptr, saver);
    return executor.snapshot();
  }

  /// Deletes the thread: its checkpoints (Checkpointer::delete_thread) and the final state this
  /// graph remembers of it (CompileOptions::recent_threads). Throws sg::Error without a
  /// checkpointer, what the checkpointer throws otherwise. Thread-safe.
  void delete_thread(const std::string& thread_id) const {
    Checkpointer* saver = need_checkpointer();
    if (def_->recent) (void)def_->recent->take(thread_id);
    saver->delete_thread(thread_id);
  }

  /// The thread's checkpoints as snapshots, newest first; `options.filter` (metadata), `before`
  /// and `limit` as in Checkpointer::list. Throws like get_state.
  [[nodiscard]] std::vector<StateSnapshot<S>> get_state_history(const RunConfig& config,
                                                                ListOptions options = {}) const {
    // History shows each checkpoint as stored: the writes of its finished tasks are in the
    // tasks' results, not in the values.
    auto [def, saver] = graph_at(config.checkpoint_ns);
    options.thread_id = config.thread_id;
    options.checkpoint_ns = config.checkpoint_ns;
    std::vector<StateSnapshot<S>> out;
    for (const auto& tuple : saver->list(options)) {
      detail::Executor<S> executor(def, config, nullptr, saver);
      out.push_back(executor.snapshot_of(tuple));
    }
    return out;
  }

  /// LangGraph's update_state: applies `values` as if node `as_node` had returned them (its
  /// reducers; then its edges decide what runs next) in a new checkpoint with source "update";
  /// nodes scheduled before are dropped (a waiting edge keeps the sources it has seen). Without
  /// as_node: the node that ran last (by the versions it has seen; START when none ran;
  /// InvalidUpdateError "Ambiguous update, specify as_node" when several tie). Special nodes:
  /// sg::END clears what would run next (tasks that already finished keep their writes) and
  /// applies `values`; sg::INPUT stores `values` as new graph input (an "input" checkpoint, START
  /// runs next); "__copy__" copies the checkpoint as a sibling (source "fork"). With
  /// `config.checkpoint_id` the new checkpoint branches from that one. Returns its config.
  /// Throws InvalidUpdateError ("Node x does not exist", ...), sg::Error without a checkpointer.
  CheckpointConfig update_state(const RunConfig& config, Update<S> values,
                                std::optional<std::string> as_node = std::nullopt) const {
    std::vector<std::vector<StateUpdate<S>>> supersteps(1);
    supersteps[0].push_back(StateUpdate<S>{std::move(values), std::move(as_node), std::nullopt});
    return bulk_update_state(config, std::move(supersteps));
  }

  /// LangGraph's bulk_update_state: each superstep is a list of updates applied together (as
  /// update_state does with one; several need an as_node each) in one new checkpoint, each
  /// superstep on top of the previous one. Returns the last checkpoint's config. Throws
  /// InvalidUpdateError for no supersteps or an empty one, and like update_state.
  CheckpointConfig bulk_update_state(const RunConfig& config,
                                     std::vector<std::vector<StateUpdate<S>>> supersteps) const {
    auto [def, saver] = graph_at(config.checkpoint_ns);
    if (supersteps.empty()) throw InvalidUpdateError("No supersteps provided");
    for (const auto& step : supersteps) {
      if (step.empty()) throw InvalidUpdateError("No updates provided");
    }
    RunConfig current = config;
    CheckpointConfig out;
    for (auto& step : supersteps) {
      detail::Executor<S> executor(def, current, nullptr, saver);
      out = executor.update_state(std::move(step));
      current.checkpoint_id = out.checkpoint_id;
    }
    return out;
  }

  /// Forgets the cached results of these nodes (of every node when empty). No effect without
  /// CompileOptions::cache. Thread-safe if the cache is.
  void clear_cache(std::vector<std::string> nodes = {}) const {
    if (!def_->options.cache) return;
    if (nodes.empty()) nodes = this->nodes();
    def_->options.cache->clear(nodes);
  }

  /// An iterable stream of the run's events (see EventStream).
  [[nodiscard]] EventStream<S> stream(Update<S> input, RunConfig config, StreamModes modes) const {
    detail::RunRequest<S> request;
    request.input = std::move(input);
    return EventStream<S>(*this, std::move(request), std::move(config), modes);
  }
  /// An iterable stream of a run that continues the thread with a Command.
  [[nodiscard]] EventStream<S> stream(Command<S> input, RunConfig config, StreamModes modes) const {
    return EventStream<S>(*this, command_request(std::move(input)), std::move(config), modes);
  }
  /// An iterable stream of a run that continues the thread without input.
  [[nodiscard]] EventStream<S> stream(std::nullopt_t, RunConfig config, StreamModes modes) const {
    return EventStream<S>(*this, detail::RunRequest<S>{}, std::move(config), modes);
  }

  /// Mermaid flowchart (LangGraph's style; conditional edges dashed).
  [[nodiscard]] std::string draw_mermaid() const { return detail::draw_mermaid(def_->spec); }
  /// Graphviz DOT (conditional edges dashed).
  [[nodiscard]] std::string draw_dot() const { return detail::draw_dot(def_->spec); }
  /// The drawing as JSON, as LangGraph's `get_graph().to_json()` and the server's
  /// `GET /assistants/{id}/graph` give it: nodes (START, END included) and edges.
  [[nodiscard]] nlohmann::json draw_json() const { return detail::draw_json(def_->spec); }
  /// The checkpointer it was compiled with (LangGraph's `graph.checkpointer`); null for none.
  [[nodiscard]] const std::shared_ptr<Checkpointer>& checkpointer() const noexcept {
    return def_->options.checkpointer;
  }
  /// The node names, in the order they were added.
  [[nodiscard]] std::vector<std::string> nodes() const {
    std::vector<std::string> out;
    for (const auto& n : def_->spec.nodes) out.push_back(n.name);
    return out;
  }
  [[nodiscard]] const std::string& name() const noexcept { return def_->spec.name; }

  /// The compiled graphs added as nodes, each with its state's JSON Schema (json_schema_of), as
  /// LangGraph's get_subgraphs lists them: the direct ones by node name; with `recurse`, theirs
  /// too ("parent|child"); with `ns`, only the one at that path (a nested path needs
  /// `recurse`). Thread-safe.
  [[nodiscard]] std::vector<std::pair<std::string, nlohmann::json>> subgraph_schemas(
      const std::optional<std::string>& ns = std::nullopt, bool recurse = false) const {
    std::vector<std::pair<std::string, nlohmann::json>> out;
    for (const auto& [path, subgraph] : detail::list_subgraphs(
             *def_, ns ? std::optional<std::string_view>(*ns) : std::nullopt, recurse)) {
      out.emplace_back(path, subgraph->state_schema());
    }
    return out;
  }

 private:
  template <State>
  friend class StateGraph;
  friend class EventStream<S>;

  /// Runs this graph as the node of a parent graph over state P (see StateGraph::add_node).
  template <State P, class ToParent>
  Command<P> run_as_subgraph(Update<S> input, Context& ctx, const ToParent& to_parent) const {
    detail::RunRequest<S> request;
    request.input = std::move(input);
    RunResult<S> result = run_nested(std::move(request), RunConfig{}, nullptr, ctx);
    return detail::to_command<P>(to_parent(result.state));
  }
  explicit CompiledGraph(std::shared_ptr<const detail::GraphDef<S>> def) : def_(std::move(def)) {}

  /// The graph whose checkpoints live in namespace `ns` (this one for ""; a subgraph added with
  /// add_node for "node:task|..."; LangGraph's get_subgraphs) and the checkpointer it uses.
  /// Throws sg::Error for an unknown subgraph, one with another state type, or no checkpointer.
  std::pair<std::shared_ptr<const detail::GraphDef<S>>, Checkpointer*> graph_at(
      const std::string& ns) const {
    Checkpointer* saver = need_checkpointer();
    std::shared_ptr<const detail::GraphDef<S>> def = def_;
    const std::string path = detail::without_task_ids(ns);
    std::size_t from = 0;
    while (!path.empty() && from <= path.size()) {
      std::size_t to = path.find('|', from);
      if (to == std::string::npos) to = path.size();
      const std::string node = path.substr(from, to - from);
      from = to + 1;
      if (def->foreign_subgraphs.count(node)) {
        throw Error(errc::kInvalidRun, "Subgraph " + path +
                                           " has another state type: read it through its own "
                                           "compiled graph");
      }
      auto it = def->subgraphs.find(node);
      if (it == def->subgraphs.end())
        throw Error(errc::kInvalidRun, "Subgraph " + path + " not found");
      def = it->second;
      if (def->options.checkpointer) saver = def->options.checkpointer.get();
    }
    return {std::move(def), saver};
  }

  Checkpointer* need_checkpointer() const {
    if (!def_->options.checkpointer) {
      throw Error(errc::kInvalidRun, "this graph was compiled without a checkpointer");
    }
    return def_->options.checkpointer.get();
  }

  void require_checkpointer(const Command<S>& input) const {
    if (def_->options.checkpointer) return;
    if (input.resume)
      throw Error(errc::kInvalidRun, "Cannot use Command(resume=...) without checkpointer");
    throw Error(errc::kInvalidRun,
                "a Command as graph input needs a checkpointer (it continues a thread)");
  }

  static detail::RunRequest<S> command_request(Command<S>&& input) {
    detail::RunRequest<S> request;
    request.command = true;
    request.resume = std::move(input.resume);
    if (!input.update.empty()) request.update = std::move(input.update);
    request.go_to = std::move(input.go_to);
    return request;
  }

  RunResult<S> run_stream(detail::RunRequest<S>&& request, const RunConfig& config,
                          StreamModes modes,
                          std::function<void(const StreamEvent<S>&)> on_event) const {
    detail::StreamSpec<S> spec;
    spec.modes = modes;
    spec.sink = [&on_event](StreamEvent<S>&& e) { on_event(e); };
    return run(std::move(request), config, &spec);
  }

  RunResult<S> run(detail::RunRequest<S>&& request, const RunConfig& config,
                   detail::StreamSpec<S>* stream) const {
    if (request.command && !def_->options.checkpointer) {
      if (request.resume)
        throw Error(errc::kInvalidRun, "Cannot use Command(resume=...) without checkpointer");
    }
    // Inside a node of another run (LangGraph: the config of the node's run is inherited), this
    // graph runs as that node's subgraph, unless the caller gives a thread of its own.
    if (Context* ctx = current_context(); ctx && config.thread_id.empty() &&
                                          config.checkpoint_ns.empty() &&
                                          config.checkpoint_id.empty()) {
      return run_nested(std::move(request), config, stream, *ctx);
    }
    if (request.command && !def_->options.checkpointer) {
      throw Error(errc::kInvalidRun,
                  "a Command as graph input needs a checkpointer (it continues a thread)");
    }
    detail::Executor<S> executor(def_, config, stream);
    try {
      return executor.run(std::move(request));
    } catch (detail::ParentCommand&) {
      throw Error(errc::kInvalidRun,
                  "a node returned Command{.graph = sg::PARENT} but this graph has no parent");
    }
  }

  /// Runs this graph as a subgraph of the run whose node `ctx` belongs to: under the node's
  /// checkpoint namespace ("node:task", or "node" for SubgraphCheckpointer::persistent), with the
  /// parent's checkpointer unless it has its own, continuing its checkpoint when the parent
  /// resumes. Its interrupts interrupt the parent (GraphInterrupt); a Command to the parent
  /// leaves as ParentCommand. `given` may add configurable values, context and metadata.
  RunResult<S> run_nested(detail::RunRequest<S>&& request, const RunConfig& given,
                          detail::StreamSpec<S>* user_stream, Context& ctx) const {
    detail::RunHooks& hooks = detail::ContextAccess::run(ctx);
    RunConfig config = hooks.config();
    config.interrupt_before.clear();
    config.interrupt_after.clear();
    config.checkpoint_id.clear();
    config.run_id.clear();
    if (!config.callbacks.empty()) {
      config.trace_parent = ctx.trace_context();
      config.run_name = def_->options.name.empty() ? std::string(ctx.node()) : def_->options.name;
    }
    if (!given.configurable.is_null()) config.configurable = given.configurable;
    if (!given.context.is_null()) config.context = given.context;
    if (!given.metadata.is_null()) config.metadata = given.metadata;
    // The namespace: the parent's, then "node:task" (a persistent subgraph keeps one namespace
    // per place in the graph: no task ids), then a counter for a task's second and later graphs.
    const bool persistent = def_->options.subgraph_checkpointer == SubgraphCheckpointer::persistent;
    std::vector<std::string> own{persistent
                                     ? std::string(ctx.node())
                                     : std::string(ctx.node()) + ":" + std::string(ctx.task_id())};
    if (const int call = detail::ContextAccess::task(ctx).subgraph_calls++; call > 0)
      own.push_back(std::to_string(call));
    std::string ns =
        persistent ? detail::without_task_ids(config.checkpoint_ns) : config.checkpoint_ns;
    for (const auto& part : own) ns += (ns.empty() ? "" : "|") + part;
    config.checkpoint_ns = std::move(ns);
    Checkpointer* saver = def_->options.checkpointer ? def_->options.checkpointer.get()
                          : def_->options.subgraph_checkpointer == SubgraphCheckpointer::disabled
                              ? nullptr
                              : hooks.checkpointer();
    if (saver) {
      if (auto mapped = hooks.mapped_checkpoint(config.checkpoint_ns)) {
        // Time travel to a checkpoint of this subgraph.
        config.checkpoint_id = *mapped;
        request.continue_saved = true;
      } else if (auto bound = hooks.replay_bound(config.checkpoint_ns)) {
        request.load_before = std::move(*bound);
      } else if (hooks.resuming()) {
        request.continue_saved = true;
      }
    }
    if (request.command && !saver) {
      throw Error(errc::kInvalidRun, "Cannot use Command(resume=...) without checkpointer");
    }

    detail::StreamSpec<S> spec;
    detail::StreamSpec<S>* stream = user_stream;
    const StreamModes modes = hooks.subgraph_modes();
    if (!stream && !modes.empty()) {
      spec.modes = modes;
      spec.ns = hooks.stream_ns();
      spec.ns.insert(spec.ns.end(), own.begin(), own.end());
      forward_events_to_parent(spec, hooks);
      stream = &spec;
    }
    detail::Executor<S> executor(def_, config, stream, saver, hooks.store(), &hooks);
    RunResult<S> result = executor.run(std::move(request));
    if (result.interrupted()) throw detail::GraphInterrupt{std::move(result.interrupts)};
    return result;
  }

  /// Sends a subgraph's events to the parent run's stream (all of them when the parent has the
  /// same state type; custom, debug and interrupt events otherwise).
  static void forward_events_to_parent(detail::StreamSpec<S>& spec, detail::RunHooks& hooks) {
    spec.sink = [&hooks](StreamEvent<S>&& e) {
      detail::ForeignEvent out{e.mode,       e.step,   e.node, e.ns, e.data,
                               e.interrupts, e.cached, {},     {}};
      if constexpr (kJsonState<S>) {
        if (e.values) out.payload = state_to_json(*e.values);
        if (e.update) out.payload = update_to_json(*e.update);
      }
      out.message = e.message;
      out.complete = e.complete;
      out.typed = std::move(e);
      hooks.forward_event(std::move(out));
    };
  }

  std::shared_ptr<const detail::GraphDef<S>> def_;
};

}  // namespace sg
