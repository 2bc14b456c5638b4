// SPDX-License-Identifier: MIT
#pragma once

// The graph builder: nodes, edges, conditional edges; compile() freezes it into a CompiledGraph.

#include <stategraph/core/compiled_graph.hpp>
#include <stategraph/core/context.hpp>
#include <stategraph/core/detail/executor.hpp>
#include <stategraph/core/detail/node.hpp>
#include <stategraph/core/detail/topology.hpp>
#include <stategraph/core/graph_types.hpp>
#include <stategraph/core/type_schema.hpp>

#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace sg {

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
/// with a Context, returning `Update<S>`, `Command<S>`, `std::vector<Command<S>>` or void, or a
/// coroutine returning boost::asio::awaitable of one of those (include
/// <stategraph/core/async.hpp>). Used by add_sequence.
template <State S>
class Node {
 public:
  template <class F>
  requires(!std::is_same_v<std::decay_t<F>, Node>) Node(F fn) {  // NOLINT: implicit by design
    using In = typename detail::NodeInput<S, std::decay_t<F>>::type;
    returns_command_ = detail::returns_command<S, In, std::decay_t<F>>();
    send_only_ = !std::is_same_v<In, S>;
    if constexpr (detail::kCoroutineNode<In, std::decay_t<F>>) {
      // A coroutine node: CoroutineNodes is incomplete unless <stategraph/core/async.hpp> is
      // included.
      make_async_ = [fn = std::move(fn)](std::string name) {
        return detail::CoroutineNodes<std::decay_t<F>>::template make<S, In>(fn, std::move(name));
      };
    } else {
      make_ = [fn = std::move(fn)](std::string name) {
        return detail::make_node_function<S, In>(fn, std::move(name));
      };
    }
    read_arg_ = detail::make_arg_reader<S, In>();
  }

 private:
  friend class StateGraph<S>;
  std::function<detail::NodeFunction<S>(std::string)> make_;
  std::function<detail::AsyncNodeFunction<S>(std::string)> make_async_;
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

  /// Adds a node. `fn(const S&)` or `fn(const S&, sg::Context&)` returning `Update<S>`,
  /// `Command<S>` or void; or `fn(const T&, ...)` for a node started only by `sg::Send(name,
  /// T{...})`. Throws GraphValidationError for a duplicate or reserved name. Node functions may
  /// run concurrently.
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
    subgraph_nodes_.push_back({name, subgraph.def_, &json_schema_of<T>});
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
    nodes_.push_back({node.make_ ? node.make_(name) : detail::NodeFunction<S>{},
                      node.make_async_ ? node.make_async_(name) : detail::AsyncNodeFunction<S>{},
                      std::move(options), node.read_arg_});
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
  std::vector<detail::GraphCore::Subgraph> subgraph_nodes_;
};

template <State S>
CompiledGraph<S> StateGraph<S>::compile(CompileOptions options) const {
  auto def = std::make_shared<detail::GraphDef<S>>();
  def->spec = spec_;
  def->spec.name = options.name;
  def->topo = detail::compile_topology(spec_, options.interrupt_before, options.interrupt_after);
  for (const auto& node : nodes_) {
    def->fns.push_back(node.fn);
    def->async_fns.push_back(node.async_fn);
    def->coroutine.push_back(static_cast<bool>(node.async_fn));
    def->node_options.push_back(node.options);
    def->arg_readers.push_back(node.read_arg);
  }
  def->routers = routers_;
  def->subgraphs = subgraphs_;
  def->foreign_subgraphs = foreign_subgraphs_;
  def->subgraph_nodes = subgraph_nodes_;
  if (options.checkpointer && options.recent_threads > 0) {
    def->recent =
        std::make_unique<detail::RecentThreads<detail::FinishedThread<S>>>(options.recent_threads);
  }
  def->options = std::move(options);
  def->finish_compiling();
  return CompiledGraph<S>(std::move(def));
}

}  // namespace sg
