// SPDX-License-Identifier: MIT
#pragma once

// The state-independent shape of a graph: what StateGraph<S> records, validated and indexed by
// compile(). Internal to stategraph.

#include <nlohmann/json_fwd.hpp>

#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sg::detail {

/// The graph as the builder recorded it (names, not ids).
struct GraphSpec {
  struct Node {
    std::string name;
    /// The node returns Commands: it may go to `destinations`, or anywhere when none are given.
    bool returns_command = false;
    std::vector<std::string> destinations;
    /// The node takes a custom input type: only a Send can start it.
    bool send_only = false;
  };
  struct Edge {
    std::string from;
    std::string to;
  };
  struct Join {
    std::vector<std::string> sources;
    std::string target;
  };
  struct Branch {
    std::string source;
    /// Possible destinations; empty when unknown (the router may return any node).
    std::vector<std::string> destinations;
    /// Router key -> node; empty when the router returns node names.
    std::map<std::string, std::string> path_map;
  };

  std::vector<Node> nodes;
  std::vector<Edge> edges;
  std::vector<Join> joins;
  std::vector<Branch> branches;
  std::string name;

  /// Index of node `name` in `nodes`, or -1.
  [[nodiscard]] int find(std::string_view node_name) const noexcept;
};

/// The compiled shape. Node ids: 0..N-1 user nodes (in add order), N = START; kEnd = END.
struct Topology {
  static constexpr int kEnd = -1;

  std::size_t node_count = 0;
  int start = 0;
  std::vector<std::string> names;
  std::unordered_map<std::string, int> ids;
  /// Static successors per id (START included); kEnd for an edge to END.
  std::vector<std::vector<int>> successors;
  /// Position of each node name in code-point order: the order tasks' writes apply in.
  std::vector<int> rank;
  struct Join {
    std::vector<int> sources;
    int target;
  };
  std::vector<Join> joins;
  std::vector<std::vector<int>> joins_of;
  /// Branch indices (into GraphSpec::branches) per node id.
  std::vector<std::vector<int>> branches_of;
  std::vector<bool> send_only;
  std::vector<bool> interrupt_before;
  std::vector<bool> interrupt_after;

  /// The id of a node name (END -> kEnd). Throws sg::Error (code "run.invalid") for an unknown
  /// name, naming `context`.
  [[nodiscard]] int resolve(const std::string& name, std::string_view context) const;
};

/// Validates `spec` with Boost.Graph and indexes it. Throws GraphValidationError with a clear
/// message for: no entry point, an edge from or to an unknown node, END as a source or START as
/// a target, an unknown node in an interrupt list, a node unreachable from START, a node that can
/// never reach END.
[[nodiscard]] Topology compile_topology(const GraphSpec& spec,
                                        const std::vector<std::string>& interrupt_before,
                                        const std::vector<std::string>& interrupt_after);

/// Throws GraphValidationError unless `name` can name a node (not empty, not START/END, no
/// '|' or ':').
void check_node_name(std::string_view name);

/// A checkpoint namespace without its task ids and call counters ("a:1f|b:2e|1" -> "a|b"):
/// LangGraph's recast_checkpoint_ns.
[[nodiscard]] std::string without_task_ids(std::string_view ns);

/// Mermaid flowchart in LangGraph's style; conditional edges dashed.
[[nodiscard]] std::string draw_mermaid(const GraphSpec& spec);
/// Graphviz DOT; conditional edges dashed.
[[nodiscard]] std::string draw_dot(const GraphSpec& spec);
/// LangGraph's `get_graph().to_json()`: {nodes: [{id, type, data, metadata}], edges: [{source,
/// target, conditional[, data]}]}, START and END included.
[[nodiscard]] nlohmann::json draw_json(const GraphSpec& spec);

}  // namespace sg::detail
