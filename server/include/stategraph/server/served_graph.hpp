// SPDX-License-Identifier: MIT
#pragma once
// A graph as the server sees it: JSON in, JSON out, whatever its state type. Make one with
// served_graph() and give it to Server::add_graph().

#include <stategraph/core/async.hpp>
#include <stategraph/core/compiled_graph.hpp>
#include <stategraph/core/state_graph.hpp>
#include <stategraph/core/type_schema.hpp>
#include <stategraph/core/update.hpp>

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sg {

/// One event of a served run, before the server names it after the API's stream modes.
/// `data`: values: the state; updates: the node's update (`{field: update}`); custom, debug: as
/// the run wrote it; messages: the message, or a chunk of it (`complete` false). `interrupts`:
/// the interrupts of an updates event from sg::INTERRUPT or of the values at an interrupt.
/// `metadata`: LangGraph's metadata of a messages event (langgraph_node, langgraph_step, ...).
struct ServedEvent {
  StreamMode mode = StreamMode::values;
  int step = 0;
  std::string node{};
  std::vector<std::string> ns{};
  nlohmann::json data{};
  std::vector<Interrupt> interrupts{};
  nlohmann::json metadata{};
  bool complete = false;
};

/// A run as the server hands it to a graph: `command` (`{resume, update, goto}`) when not null,
/// else `input` (an update, `{field: value}`) when not null, else a continuation of the thread.
/// `on_event` gets each event of `modes`, in order, on the thread that runs the graph, except
/// while `wants_events` (when set) says no one reads them: then events are not converted.
struct ServedRun {
  nlohmann::json input{};
  nlohmann::json command{};
  RunConfig config{};
  StreamModes modes{};
  std::function<void(ServedEvent&&)> on_event{};
  std::function<bool()> wants_events{};
};

/// How a served run ended: the final state (the state it stopped at when interrupted).
struct ServedRunResult {
  nlohmann::json values = nlohmann::json::object();
  bool interrupted = false;
  std::vector<Interrupt> interrupts{};
  std::vector<std::string> next{};
};

/// StateSnapshot with the values as JSON.
struct ServedSnapshot {
  nlohmann::json values = nlohmann::json::object();
  std::vector<std::string> next{};
  std::vector<TaskState> tasks{};
  std::vector<Interrupt> interrupts{};
  CheckpointConfig config{};
  nlohmann::json metadata{};
  std::string created_at{};
  std::optional<CheckpointConfig> parent_config{};
};

/// A graph as the server uses it (type-erased over the state type). Make one with
/// served_graph(). Implementations are thread-safe.
class ServedGraph {
 public:
  virtual ~ServedGraph() = default;

  /// The drawing as LangGraph's `get_graph().to_json()` (GET /assistants/{id}/graph).
  [[nodiscard]] virtual nlohmann::json draw_json() const = 0;
  /// The JSON Schemas of GET /assistants/{id}/schemas: `input_schema` (the state's fields, none
  /// required: a run's input updates some of them), `output_schema` and `state_schema` (the
  /// state), `config_schema` and `context_schema` (null: a C++ graph declares neither).
  [[nodiscard]] virtual nlohmann::json schemas() const = 0;
  /// GET /assistants/{id}/subgraphs[/{ns}]: the compiled graphs added as nodes, as an object of
  /// namespace -> schemas (the shape of schemas()); CompiledGraph::subgraph_schemas says which.
  [[nodiscard]] virtual nlohmann::json subgraphs(const std::optional<std::string>& ns,
                                                 bool recurse) const = 0;
  /// The drawing as Graphviz DOT (draw_dot), for render_graph_picture().
  [[nodiscard]] virtual std::string draw_dot() const = 0;

  /// The graph to serve on the server's checkpointer and store: a graph given as a StateGraph
  /// is compiled here with them (where its CompileOptions leave them unset); a compiled graph
  /// is served as it is. Throws what compile() throws.
  [[nodiscard]] virtual std::shared_ptr<const ServedGraph> bind(
      const std::shared_ptr<Checkpointer>& checkpointer,
      const std::shared_ptr<Store>& store) const = 0;

  /// The checkpointer its threads live in; null when compiled without one.
  [[nodiscard]] virtual std::shared_ptr<Checkpointer> checkpointer() const = 0;
  /// Deletes a thread's checkpoints and what the graph remembers of it. Throws sg::Error without
  /// a checkpointer, CheckpointError from it. Thread-safe.
  virtual void delete_thread(const std::string& thread_id) const = 0;

  /// Throws sg::Error (kInvalidArgument) when `input` (or `command`, when not null) does not
  /// fit the state: what run() would throw before it starts.
  virtual void check_input(const nlohmann::json& input, const nlohmann::json& command) const = 0;

  /// Runs `run` to its end on the calling thread. Throws what the run throws (sg::Error with
  /// code kInvalidArgument for input that does not fit the state).
  [[nodiscard]] virtual ServedRunResult run(ServedRun run) const = 0;

  /// run() as a coroutine on the caller's executor (CompiledGraph::astream): coroutine nodes
  /// wait without holding a thread, plain nodes run where `run.config.plain_node_pool` says.
  /// `on_event` is called on the run's strand. Throws what run() throws.
  [[nodiscard]] virtual boost::asio::awaitable<ServedRunResult> arun(ServedRun run) const = 0;

  /// The thread's state at `config` (CompiledGraph::get_state); nullopt without checkpoints.
  [[nodiscard]] virtual std::optional<ServedSnapshot> state(const RunConfig& config) const = 0;

  /// The thread's checkpoints, newest first (CompiledGraph::get_state_history).
  [[nodiscard]] virtual std::vector<ServedSnapshot> history(const RunConfig& config,
                                                            ListOptions options) const = 0;

  /// CompiledGraph::update_state with `values` as an update (`{field: update}`); null values
  /// with as_node "__copy__" copy the checkpoint. Throws InvalidUpdateError, sg::Error.
  virtual CheckpointConfig update_state(const RunConfig& config, const nlohmann::json& values,
                                        std::optional<std::string> as_node) const = 0;
};

namespace detail {

/// A Command read from the API's `{resume, update, goto}`; goto is a node name, a Send
/// (`{node, input}`, input a state) or a list of them. Throws sg::Error (kInvalidArgument).
template <State S>
Command<S> command_from_json(const nlohmann::json& value) {
  if (!value.is_object()) throw Error(errc::kInvalidArgument, "'command' must be an object");
  Command<S> command;
  if (const auto it = value.find("update"); it != value.end() && !it->is_null()) {
    command.update = update_from_json<S>(*it);
  }
  if (const auto it = value.find("resume"); it != value.end()) command.resume = *it;
  if (const auto it = value.find("goto"); it != value.end() && !it->is_null()) {
    const auto add = [&](const nlohmann::json& target) {
      if (target.is_string()) {
        command.go_to.emplace_back(target.get<std::string>());
      } else if (target.is_object() && target.contains("node") && target["node"].is_string()) {
        const nlohmann::json input = target.value("input", nlohmann::json::object());
        command.go_to.emplace_back(
            Send(target["node"].get<std::string>(), state_from_json<S>(input)));
      } else {
        throw Error(errc::kInvalidArgument,
                    "'command.goto' must be a node name, {node, input} or a list of them");
      }
    };
    if (it->is_array()) {
      for (const auto& target : *it) add(target);
    } else {
      add(*it);
    }
  }
  return command;
}

template <State S>
ServedSnapshot served_snapshot(StateSnapshot<S>&& s) {
  return {state_to_json(s.values), std::move(s.next),         std::move(s.tasks),
          std::move(s.interrupts), std::move(s.config),       std::move(s.metadata),
          std::move(s.created_at), std::move(s.parent_config)};
}

/// ServedGraph::schemas() of a graph whose state has the JSON Schema `state`.
inline nlohmann::json schemas_of_state(nlohmann::json state) {
  nlohmann::json input = state;
  input.erase("required");
  return {{"input_schema", std::move(input)},
          {"output_schema", state},
          {"state_schema", state},
          {"config_schema", nullptr},
          {"context_schema", nullptr}};
}

/// ServedGraph::schemas() of a graph on state S.
template <State S>
nlohmann::json state_schemas() {
  return schemas_of_state(json_schema_of<S>());
}

/// ServedGraph::subgraphs() of `graph`.
template <State S>
nlohmann::json subgraph_schemas_json(const CompiledGraph<S>& graph,
                                     const std::optional<std::string>& ns, bool recurse) {
  nlohmann::json out = nlohmann::json::object();
  for (auto& [path, state] : graph.subgraph_schemas(ns, recurse)) {
    out[path] = schemas_of_state(std::move(state));
  }
  return out;
}

template <State S>
class ServedCompiledGraph final : public ServedGraph {
 public:
  explicit ServedCompiledGraph(CompiledGraph<S> graph) : graph_(std::move(graph)) {}

  [[nodiscard]] nlohmann::json draw_json() const override { return graph_.draw_json(); }
  [[nodiscard]] nlohmann::json schemas() const override { return state_schemas<S>(); }
  [[nodiscard]] nlohmann::json subgraphs(const std::optional<std::string>& ns,
                                         bool recurse) const override {
    return subgraph_schemas_json(graph_, ns, recurse);
  }
  [[nodiscard]] std::string draw_dot() const override { return graph_.draw_dot(); }

  [[nodiscard]] std::shared_ptr<const ServedGraph> bind(
      const std::shared_ptr<Checkpointer>& /*checkpointer*/,
      const std::shared_ptr<Store>& /*store*/) const override {
    return std::make_shared<ServedCompiledGraph>(graph_);
  }

  [[nodiscard]] std::shared_ptr<Checkpointer> checkpointer() const override {
    return graph_.checkpointer();
  }
  void delete_thread(const std::string& thread_id) const override {
    graph_.delete_thread(thread_id);
  }

  void check_input(const nlohmann::json& input, const nlohmann::json& command) const override {
    if (!command.is_null()) {
      (void)command_from_json<S>(command);
    } else if (!input.is_null()) {
      (void)update_from_json<S>(input);
    }
  }

  [[nodiscard]] ServedRunResult run(ServedRun run) const override {
    auto sink = event_sink(run);
    RunResult<S> result;
    if (!run.command.is_null()) {
      result = graph_.stream(command_from_json<S>(run.command), run.config, run.modes, sink);
    } else if (!run.input.is_null()) {
      result = graph_.stream(update_from_json<S>(run.input), run.config, run.modes, sink);
    } else {
      result = graph_.stream(std::nullopt, run.config, run.modes, sink);
    }
    return served_result(std::move(result));
  }

  [[nodiscard]] boost::asio::awaitable<ServedRunResult> arun(ServedRun run) const override {
    auto sink = event_sink(run);
    // Results bound to named locals: g++ 12 miscompiles co_await inside expressions.
    RunResult<S> result;
    if (!run.command.is_null()) {
      Command<S> command = command_from_json<S>(run.command);
      result = co_await graph_.astream(std::move(command), run.config, run.modes, sink);
    } else if (!run.input.is_null()) {
      Update<S> input = update_from_json<S>(run.input);
      result = co_await graph_.astream(std::move(input), run.config, run.modes, sink);
    } else {
      result = co_await graph_.astream(std::nullopt, run.config, run.modes, sink);
    }
    co_return served_result(std::move(result));
  }

  [[nodiscard]] std::optional<ServedSnapshot> state(const RunConfig& config) const override {
    auto snapshot = graph_.get_state(config);
    if (!snapshot) return std::nullopt;
    return served_snapshot(*std::move(snapshot));
  }

  [[nodiscard]] std::vector<ServedSnapshot> history(const RunConfig& config,
                                                    ListOptions options) const override {
    std::vector<ServedSnapshot> out;
    for (auto& s : graph_.get_state_history(config, std::move(options))) {
      out.push_back(served_snapshot(std::move(s)));
    }
    return out;
  }

  CheckpointConfig update_state(const RunConfig& config, const nlohmann::json& values,
                                std::optional<std::string> as_node) const override {
    Update<S> update = values.is_null() ? Update<S>{} : update_from_json<S>(values);
    return graph_.update_state(config, std::move(update), std::move(as_node));
  }

 private:
  /// The stream callback of a run: StreamEvent<S> to ServedEvent, for `run.on_event`.
  static std::function<void(const StreamEvent<S>&)> event_sink(const ServedRun& run) {
    return [on_event = run.on_event, wants = run.wants_events](const StreamEvent<S>& e) {
      if (wants && !wants()) {
        // Still tell whether the run stopped at an interrupt (the last values chunk).
        if (e.mode == StreamMode::values && e.ns.empty()) {
          ServedEvent bare;
          bare.interrupts = e.interrupts;
          on_event(std::move(bare));
        }
        return;
      }
      ServedEvent out;
      out.mode = e.mode;
      out.step = e.step;
      out.node = e.node;
      out.ns = e.ns;
      out.interrupts = e.interrupts;
      switch (e.mode) {
        case StreamMode::values:
          if (e.values) out.data = state_to_json(*e.values);
          break;
        case StreamMode::updates:
          out.data = e.update ? update_to_json(*e.update) : nlohmann::json();
          break;
        case StreamMode::messages:
          if (e.message) {
            out.data = e.complete ? message_to_json(e.message->message)
                                  : message_chunk_to_json(*e.message);
          }
          out.metadata = e.data;
          out.complete = e.complete;
          break;
        case StreamMode::custom:
        case StreamMode::debug:
          out.data = e.data;
          break;
      }
      on_event(std::move(out));
    };
  }

  static ServedRunResult served_result(RunResult<S>&& result) {
    return {state_to_json(result.state), result.interrupted(), std::move(result.interrupts),
            std::move(result.next)};
  }

  CompiledGraph<S> graph_;
};

template <State S>
class ServedStateGraph final : public ServedGraph {
 public:
  ServedStateGraph(StateGraph<S> graph, CompileOptions options)
      : graph_(std::move(graph)),
        options_(std::move(options)),
        unbound_(graph_.compile(options_)) {}

  [[nodiscard]] std::shared_ptr<const ServedGraph> bind(
      const std::shared_ptr<Checkpointer>& checkpointer,
      const std::shared_ptr<Store>& store) const override {
    CompileOptions options = options_;
    if (!options.checkpointer) options.checkpointer = checkpointer;
    if (!options.store) options.store = store;
    return std::make_shared<ServedCompiledGraph<S>>(graph_.compile(std::move(options)));
  }

  // Unbound (compiled with the given options only): the server serves what bind() returns.
  [[nodiscard]] nlohmann::json draw_json() const override { return unbound_.draw_json(); }
  [[nodiscard]] nlohmann::json schemas() const override { return state_schemas<S>(); }
  [[nodiscard]] nlohmann::json subgraphs(const std::optional<std::string>& ns,
                                         bool recurse) const override {
    return unbound_.subgraphs(ns, recurse);
  }
  [[nodiscard]] std::string draw_dot() const override { return unbound_.draw_dot(); }
  [[nodiscard]] std::shared_ptr<Checkpointer> checkpointer() const override {
    return unbound_.checkpointer();
  }
  void delete_thread(const std::string& thread_id) const override {
    unbound_.delete_thread(thread_id);
  }
  void check_input(const nlohmann::json& input, const nlohmann::json& command) const override {
    unbound_.check_input(input, command);
  }
  [[nodiscard]] ServedRunResult run(ServedRun run) const override {
    return unbound_.run(std::move(run));
  }
  [[nodiscard]] boost::asio::awaitable<ServedRunResult> arun(ServedRun run) const override {
    return unbound_.arun(std::move(run));
  }
  [[nodiscard]] std::optional<ServedSnapshot> state(const RunConfig& config) const override {
    return unbound_.state(config);
  }
  [[nodiscard]] std::vector<ServedSnapshot> history(const RunConfig& config,
                                                    ListOptions options) const override {
    return unbound_.history(config, std::move(options));
  }
  CheckpointConfig update_state(const RunConfig& config, const nlohmann::json& values,
                                std::optional<std::string> as_node) const override {
    return unbound_.update_state(config, values, std::move(as_node));
  }

 private:
  StateGraph<S> graph_;
  CompileOptions options_;
  ServedCompiledGraph<S> unbound_;
};

}  // namespace detail

/// `graph` for Server::add_graph, served as compiled: its threads live in the checkpointer it was
/// compiled with (a graph without one serves stateless runs only). Its state must convert to
/// JSON. Thread-safe.
template <State S>
requires kJsonState<S>
[[nodiscard]] std::shared_ptr<const ServedGraph> served_graph(CompiledGraph<S> graph) {
  return std::make_shared<detail::ServedCompiledGraph<S>>(std::move(graph));
}

/// `graph` for Server::add_graph, compiled by the server with `options` and, where they leave
/// them unset, the server's checkpointer and store (ServerOptions). Throws what compile() throws.
template <State S>
requires kJsonState<S>
[[nodiscard]] std::shared_ptr<const ServedGraph> served_graph(StateGraph<S> graph,
                                                              CompileOptions options = {}) {
  return std::make_shared<detail::ServedStateGraph<S>>(std::move(graph), std::move(options));
}

}  // namespace sg
