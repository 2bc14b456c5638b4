#pragma once

#include <stategraph/core/context.hpp>
#include <stategraph/core/detail/node.hpp>
#include <stategraph/core/detail/runner.hpp>
#include <stategraph/core/detail/topology.hpp>
#include <stategraph/core/graph_types.hpp>
#include <stategraph/core/thread_pool.hpp>

#include <condition_variable>
#include <deque>
#include <initializer_list>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace sg {

template <State S>
class CompiledGraph;
template <State S>
class StateGraph;

/// Maps what a router returns to node names: `sg::PathMap{{"yes", "act"}, {"no", sg::END}}`.
struct PathMap {
  std::map<std::string, std::string> entries;
  PathMap(std::initializer_list<std::pair<const std::string, std::string>> list) : entries(list) {}
  explicit PathMap(std::map<std::string, std::string> map) : entries(std::move(map)) {}
};

namespace detail {

template <class F>
struct CallOperatorArg;
template <class C, class R, class A, class... Rest>
struct CallOperatorArg<R (C::*)(A, Rest...) const> {
  using type = std::remove_cvref_t<A>;
};
template <class C, class R, class A, class... Rest>
struct CallOperatorArg<R (C::*)(A, Rest...)> {
  using type = std::remove_cvref_t<A>;
};
template <class R, class A, class... Rest>
struct CallOperatorArg<R (*)(A, Rest...)> {
  using type = std::remove_cvref_t<A>;
};

/// The input a node callable takes: S when it accepts the state, else its first parameter type.
template <State S, class F>
struct NodeInput {
  using type = typename CallOperatorArg<decltype(&F::operator())>::type;
};
template <State S, class F>
requires(std::is_invocable_v<const F&, const S&> ||
         std::is_invocable_v<const F&, const S&, Context&> ||
         std::is_invocable_v<const F&, const S&, const Context&>) struct NodeInput<S, F> {
  using type = S;
};
template <State S, class R, class A, class... Rest>
requires(!std::is_same_v<std::remove_cvref_t<A>, S>) struct NodeInput<S, R (*)(A, Rest...)> {
  using type = std::remove_cvref_t<A>;
};

}  // namespace detail

/// A node before it is added: any callable taking the state (or a Send argument), optionally
/// with a Context, returning Update<S>, Command<S> or void. Used by add_sequence.
template <State S>
class Node {
 public:
  template <class F>
  requires(!std::is_same_v<std::decay_t<F>, Node>) Node(F fn) {  // NOLINT: implicit by design
    using In = typename detail::NodeInput<S, std::decay_t<F>>::type;
    returns_command_ = detail::returns_command<S, In, std::decay_t<F>>();
    send_only_ = !std::is_same_v<In, S>;
    make_ = [fn = std::move(fn)](std::string name) {
      return detail::make_node_function<S, In>(fn, std::move(name));
    };
    read_arg_ = detail::make_arg_reader<S, In>();
  }

 private:
  friend class StateGraph<S>;
  std::function<detail::NodeFunction<S>(std::string)> make_;
  detail::ArgReader read_arg_;
  bool returns_command_ = false;
  bool send_only_ = false;
};

/// Builds a graph over the typed state S: nodes, edges, conditional edges. compile() validates
/// it and returns an immutable CompiledGraph. Not synchronized: build from one thread.
template <State S>
class StateGraph {
 public:
  StateGraph() = default;

  /// Adds a node. `fn(const S&)` or `fn(const S&, sg::Context&)` returning Update<S>, Command<S>
  /// or void; or `fn(const T&, ...)` for a node started only by `sg::Send(name, T{...})`. Throws
  /// GraphValidationError for a duplicate or reserved name. Node functions may run concurrently.
  StateGraph& add_node(std::string name, Node<S> node, NodeOptions options = {}) {
    add_entry(std::move(name), node, std::move(options));
    return *this;
  }

  /// Adds a compiled graph over the same state as a node: it starts from this graph's state and
  /// its final state is this node's update (through this graph's reducers).
  StateGraph& add_node(std::string name, const CompiledGraph<S>& subgraph,
                       NodeOptions options = {}) {
    subgraphs_[name] = subgraph.def_;
    return add_node(
        std::move(name), subgraph, [](const S& s) { return Update<S>::from_state(s); },
        [](const S& out) { return Update<S>::from_state(out); }, std::move(options));
  }

  /// Adds a compiled graph over another state T as a node: `to_child(const S&) -> Update<T>` is
  /// its input, `to_parent(const T&) -> Update<S>` turns its final state into this node's update.
  template <State T, class ToChild, class ToParent>
  StateGraph& add_node(std::string name, const CompiledGraph<T>& subgraph, ToChild to_child,
                       ToParent to_parent, NodeOptions options = {}) {
    auto fn = [subgraph, to_child = std::move(to_child), to_parent = std::move(to_parent)](
                  const S& state, Context& ctx) -> Command<S> {
      return subgraph.template run_as_subgraph<S>(to_child(state), ctx, to_parent);
    };
    if constexpr (!std::is_same_v<T, S>) foreign_subgraphs_.insert(name);
    add_node(std::move(name), Node<S>(std::move(fn)), std::move(options));
    // A subgraph may send a Command to this graph (sg::PARENT): it may go anywhere.
    spec_.nodes.back().returns_command = true;
    return *this;
  }

  /// Adds a static edge. `from` may be START; `to` may be END.
  StateGraph& add_edge(std::string_view from, std::string_view to) {
    spec_.edges.push_back({std::string(from), std::string(to)});
    return *this;
  }

  /// Adds a waiting edge: `to` runs once every node of `from` has finished.
  StateGraph& add_edge(std::initializer_list<std::string_view> from, std::string_view to) {
    return add_join(std::vector<std::string>(from.begin(), from.end()), to);
  }
  StateGraph& add_edge(std::span<const std::string> from, std::string_view to) {
    return add_join(std::vector<std::string>(from.begin(), from.end()), to);
  }

  /// Adds a conditional edge: after `source`, `router(const S&)` (optionally with a Context)
  /// returns where to go: a node name or END, a list of names, Send(s), or a list of sg::Goto.
  /// Without destinations the router may return any node.
  template <class F>
  StateGraph& add_conditional_edges(std::string_view source, F router) {
    return add_branch(source, std::move(router), {}, {});
  }
  /// ... with the nodes it may return (for validation and drawing).
  template <class F>
  StateGraph& add_conditional_edges(std::string_view source, F router,
                                    std::initializer_list<const char*> destinations) {
    return add_branch(source, std::move(router),
                      std::vector<std::string>(destinations.begin(), destinations.end()), {});
  }
  template <class F>
  StateGraph& add_conditional_edges(std::string_view source, F router,
                                    std::span<const std::string> destinations) {
    return add_branch(source, std::move(router),
                      std::vector<std::string>(destinations.begin(), destinations.end()), {});
  }
  /// ... with a map from what the router returns to node names.
  template <class F>
  StateGraph& add_conditional_edges(std::string_view source, F router, PathMap path_map) {
    return add_branch(source, std::move(router), {}, std::move(path_map.entries));
  }

  /// Adds the nodes in order and chains them with edges. Throws GraphValidationError for an
  /// empty list or a duplicate name.
  StateGraph& add_sequence(std::vector<std::pair<std::string, Node<S>>> nodes) {
    if (nodes.empty()) throw GraphValidationError("add_sequence needs at least one node");
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      add_node(nodes[i].first, std::move(nodes[i].second));
      if (i > 0) add_edge(nodes[i - 1].first, nodes[i].first);
    }
    return *this;
  }

  /// `add_edge(START, node)`.
  StateGraph& set_entry_point(std::string_view node) { return add_edge(START, node); }
  /// `add_edge(node, END)`.
  StateGraph& set_finish_point(std::string_view node) { return add_edge(node, END); }

  /// Validates the graph and freezes it. Throws GraphValidationError (see
  /// detail::compile_topology).
  [[nodiscard]] CompiledGraph<S> compile(CompileOptions options = {}) const;

  /// Mermaid flowchart of the graph as built so far.
  [[nodiscard]] std::string draw_mermaid() const { return detail::draw_mermaid(spec_); }

 private:
  void add_entry(std::string name, const Node<S>& node, NodeOptions options) {
    detail::check_node_name(name);
    if (spec_.find(name) >= 0) throw GraphValidationError("Node `" + name + "` already present.");
    if (options.retry && options.retry->max_attempts < 1) {
      throw GraphValidationError("Node `" + name +
                                 "`: RetryPolicy::max_attempts must be at least 1");
    }
    spec_.nodes.push_back({name, node.returns_command_, options.destinations, node.send_only_});
    nodes_.push_back({node.make_(name), std::move(options), node.read_arg_});
  }

  StateGraph& add_join(std::vector<std::string> from, std::string_view to) {
    spec_.joins.push_back({std::move(from), std::string(to)});
    return *this;
  }

  template <class F>
  StateGraph& add_branch(std::string_view source, F router, std::vector<std::string> destinations,
                         std::map<std::string, std::string> path_map) {
    spec_.branches.push_back({std::string(source), std::move(destinations), path_map});
    routers_.push_back(detail::make_router<S>(std::move(router), std::move(path_map)));
    return *this;
  }

  detail::GraphSpec spec_;
  std::vector<detail::NodeEntry<S>> nodes_;
  std::vector<detail::Router<S>> routers_;
  std::map<std::string, std::shared_ptr<const detail::GraphDef<S>>> subgraphs_;
  std::set<std::string> foreign_subgraphs_;
};

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
    if (!def_->options.checkpointer) {
      if (input.resume)
        throw Error(errc::kInvalidRun, "Cannot use Command(resume=...) without checkpointer");
      throw Error(errc::kInvalidRun,
                  "a Command as graph input needs a checkpointer (it continues a thread)");
    }
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

  /// The state of `config.thread_id` at its latest checkpoint (or `config.checkpoint_id`): values,
  /// next nodes, tasks, interrupts, config, metadata. nullopt for a thread without checkpoints.
  /// Throws sg::Error without a checkpointer, CheckpointError for unreadable data.
  [[nodiscard]] std::optional<StateSnapshot<S>> get_state(const RunConfig& config) const {
    auto [def, saver] = graph_at(config.checkpoint_ns);
    detail::Runner<S> runner(std::move(def), config, nullptr, saver);
    return runner.snapshot();
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
      detail::Runner<S> runner(def, config, nullptr, saver);
      out.push_back(runner.snapshot_of(tuple));
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
      detail::Runner<S> runner(def, current, nullptr, saver);
      out = runner.update_state(std::move(step));
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
  /// The node names, in the order they were added.
  [[nodiscard]] std::vector<std::string> nodes() const {
    std::vector<std::string> out;
    for (const auto& n : def_->spec.nodes) out.push_back(n.name);
    return out;
  }
  [[nodiscard]] const std::string& name() const noexcept { return def_->spec.name; }

  /// Runs this graph as the node of a parent graph over state P (see StateGraph::add_node).
  template <State P, class ToParent>
  Command<P> run_as_subgraph(Update<S> input, Context& ctx, const ToParent& to_parent) const {
    detail::RunRequest<S> request;
    request.input = std::move(input);
    RunResult<S> result = run_nested(std::move(request), RunConfig{}, nullptr, ctx);
    return detail::to_command<P>(to_parent(result.state));
  }

 private:
  friend class StateGraph<S>;
  friend class EventStream<S>;
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
    detail::Runner<S> runner(def_, config, stream);
    try {
      return runner.run(std::move(request));
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
    detail::RunHooks& hooks = ctx.run_hooks();
    RunConfig config = hooks.config();
    config.interrupt_before.clear();
    config.interrupt_after.clear();
    config.checkpoint_id.clear();
    config.run_id.clear();
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
    detail::Runner<S> runner(def_, config, stream, saver, hooks.store(), &hooks);
    RunResult<S> result = runner.run(std::move(request));
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
      out.typed = std::move(e);
      hooks.forward_event(std::move(out));
    };
  }

  std::shared_ptr<const detail::GraphDef<S>> def_;
};

template <State S>
CompiledGraph<S> StateGraph<S>::compile(CompileOptions options) const {
  auto def = std::make_shared<detail::GraphDef<S>>();
  def->spec = spec_;
  def->spec.name = options.name;
  def->topo = detail::compile_topology(spec_, options.interrupt_before, options.interrupt_after);
  for (const auto& name : def->topo.names)
    def->branch_channels.push_back(detail::branch_channel(name));
  for (const auto& join : def->topo.joins)
    def->join_channels.push_back(detail::join_channel(def->topo, join));
  def->nodes = nodes_;
  def->routers = routers_;
  def->subgraphs = subgraphs_;
  def->foreign_subgraphs = foreign_subgraphs_;
  def->pool = options.pool ? options.pool : ThreadPool::shared();
  def->cost_ns = std::make_unique<std::atomic<std::uint32_t>[]>(def->topo.node_count + 1);
  for (std::size_t i = 0; i <= def->topo.node_count; ++i)
    def->cost_ns[i].store(detail::kUnknownCost);
  if (options.checkpointer && options.recent_threads > 0) {
    def->recent =
        std::make_unique<detail::RecentThreads<detail::FinishedThread<S>>>(options.recent_threads);
  }
  def->options = std::move(options);
  return CompiledGraph<S>(std::move(def));
}

}  // namespace sg
