// SPDX-License-Identifier: MIT
#include <stategraph/core/detail/topology.hpp>
#include <stategraph/core/error.hpp>
#include <stategraph/core/graph_types.hpp>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/graphviz.hpp>
#include <boost/graph/reverse_graph.hpp>
#include <boost/property_map/function_property_map.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <sstream>

namespace sg::detail {
namespace {

struct EdgeProps {
  bool conditional = false;
  std::string label;
};
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS,
                                    boost::no_property, EdgeProps>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;

[[noreturn]] void invalid(const std::string& message) {
  throw GraphValidationError(message);
}

/// What a Shape is for: checking the graph (every transition it can make) or drawing it (as
/// LangGraph draws it: a node that may return a Command shows edges only to its declared
/// destinations).
enum class ShapeUse { check, draw };

/// The graph of every possible transition. Vertices: nodes 0..N-1, START = N, END = N+1.
class Shape {
 public:
  explicit Shape(const GraphSpec& spec, ShapeUse use = ShapeUse::check)
      : spec_(spec), n_(spec.nodes.size()), g_(n_ + 2) {
    for (const auto& e : spec.edges) add(vertex_of(e.from), vertex_of(e.to), false, {});
    for (const auto& j : spec.joins) {
      for (const auto& s : j.sources) add(vertex_of(s), vertex_of(j.target), false, {});
    }
    for (const auto& b : spec.branches) {
      const Vertex from = vertex_of(b.source);
      if (!b.path_map.empty()) {
        for (const auto& [key, target] : b.path_map) {
          add(from, vertex_of(target), true, key == target ? std::string() : key);
        }
      } else if (!b.destinations.empty()) {
        for (const auto& target : b.destinations) add(from, vertex_of(target), true, {});
      } else {
        to_anywhere(from);
      }
    }
    for (std::size_t i = 0; i < n_; ++i) {
      const auto& node = spec.nodes[i];
      if (!node.returns_command) continue;
      if (node.destinations.empty()) {
        if (use == ShapeUse::check) to_anywhere(i);
      } else {
        for (const auto& target : node.destinations) add(i, vertex_of(target), true, {});
      }
    }
  }

  [[nodiscard]] const Graph& graph() const { return g_; }
  [[nodiscard]] Vertex start() const { return n_; }
  [[nodiscard]] Vertex end() const { return n_ + 1; }
  [[nodiscard]] std::string name(Vertex v) const {
    if (v == start()) return START;
    if (v == end()) return END;
    return spec_.nodes[v].name;
  }

  /// The vertex of a known name (validated before construction).
  [[nodiscard]] Vertex vertex_of(const std::string& name) const {
    if (name == START) return start();
    if (name == END) return end();
    return static_cast<Vertex>(spec_.find(name));
  }

 private:
  void add(Vertex from, Vertex to, bool conditional, std::string label) {
    boost::add_edge(from, to, EdgeProps{conditional, std::move(label)}, g_);
  }
  void to_anywhere(Vertex from) {
    for (std::size_t i = 0; i < n_; ++i) add(from, i, true, {});
    add(from, end(), true, {});
  }

  const GraphSpec& spec_;
  std::size_t n_;
  Graph g_;
};

/// Vertices reachable from `sources` in `g`.
template <class G>
std::vector<bool> reachable(const G& g, const std::vector<Vertex>& sources) {
  std::vector<bool> seen(boost::num_vertices(g), false);
  struct Recorder : boost::default_bfs_visitor {
    std::vector<bool>* seen;
    void discover_vertex(Vertex v, const G&) const { (*seen)[v] = true; }
  } recorder;
  recorder.seen = &seen;
  std::vector<boost::default_color_type> colors(boost::num_vertices(g), boost::white_color);
  auto color_map =
      boost::make_iterator_property_map(colors.begin(), boost::get(boost::vertex_index, g));
  for (Vertex s : sources) {
    if (colors[s] != boost::white_color) continue;
    boost::breadth_first_visit(g, s, boost::visitor(recorder).color_map(color_map));
  }
  return seen;
}

void check_known(const GraphSpec& spec, const std::string& name, bool as_source, const char* what) {
  if (as_source && name == END) invalid(fmt::format("END cannot be the start of {}", what));
  if (!as_source && name == START) invalid(fmt::format("START cannot be the end of {}", what));
  if (name == START || name == END || spec.find(name) >= 0) return;
  invalid(fmt::format("Found {} {} unknown node '{}'", what,
                      as_source ? "starting at" : "ending at", name));
}

void check_not_send_only(const GraphSpec& spec, const std::string& target) {
  const int i = spec.find(target);
  if (i >= 0 && spec.nodes[static_cast<std::size_t>(i)].send_only) {
    invalid(fmt::format(
        "Node '{}' takes a custom input type and can only be started by a Send, not by an edge",
        target));
  }
}

void check_interrupts(const GraphSpec& spec, const std::vector<std::string>& names) {
  for (const auto& name : names) {
    if (name == "*" || spec.find(name) >= 0) continue;
    invalid(fmt::format("Interrupt node `{}` not found", name));
  }
}

std::vector<bool> interrupt_flags(const GraphSpec& spec, const std::vector<std::string>& names) {
  std::vector<bool> flags(spec.nodes.size(), false);
  for (const auto& name : names) {
    if (name == "*") std::fill(flags.begin(), flags.end(), true);
    if (int i = spec.find(name); i >= 0) flags[static_cast<std::size_t>(i)] = true;
  }
  return flags;
}

std::string mermaid_id(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  return out;
}

}  // namespace

int GraphSpec::find(std::string_view node_name) const noexcept {
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].name == node_name) return static_cast<int>(i);
  }
  return -1;
}

int Topology::resolve(const std::string& name, std::string_view context) const {
  if (name == END) return kEnd;
  auto it = ids.find(name);
  if (it == ids.end() || it->second == start) {
    throw Error(errc::kInvalidRun, fmt::format("{} returned unknown node '{}'", context, name));
  }
  return it->second;
}

void check_node_name(std::string_view name) {
  if (name.empty()) invalid("A node name cannot be empty");
  if (name == START || name == END) invalid(fmt::format("Node name `{}` is reserved", name));
  if (name.find('|') != std::string_view::npos || name.find(':') != std::string_view::npos) {
    invalid(fmt::format("Node name `{}` cannot contain '|' or ':'", name));
  }
}

Topology compile_topology(const GraphSpec& spec, const std::vector<std::string>& interrupt_before,
                          const std::vector<std::string>& interrupt_after) {
  // Every name an edge mentions must exist.
  for (const auto& e : spec.edges) {
    check_known(spec, e.from, true, "edge");
    check_known(spec, e.to, false, "edge");
    check_not_send_only(spec, e.to);
  }
  for (const auto& j : spec.joins) {
    if (j.sources.empty()) invalid("A waiting edge needs at least one start node");
    for (const auto& s : j.sources) {
      if (s == START) invalid("START cannot be one of the start nodes of a waiting edge");
      check_known(spec, s, true, "edge");
    }
    check_known(spec, j.target, false, "edge");
    if (j.target != END) check_not_send_only(spec, j.target);
  }
  for (const auto& b : spec.branches) {
    check_known(spec, b.source, true, "conditional edge");
    for (const auto& t : b.destinations) check_known(spec, t, false, "conditional edge");
    for (const auto& [key, t] : b.path_map) check_known(spec, t, false, "conditional edge");
  }
  for (const auto& node : spec.nodes) {
    for (const auto& t : node.destinations) check_known(spec, t, false, "Command destination");
  }
  check_interrupts(spec, interrupt_before);
  check_interrupts(spec, interrupt_after);

  const bool has_entry = std::any_of(spec.edges.begin(), spec.edges.end(),
                                     [](const auto& e) { return e.from == START; }) ||
                         std::any_of(spec.branches.begin(), spec.branches.end(),
                                     [](const auto& b) { return b.source == START; });
  if (!has_entry)
    invalid("Graph must have an entrypoint: add at least one edge from START to another node");

  const Shape shape(spec);
  const Graph& g = shape.graph();
  const std::size_t n = spec.nodes.size();

  // A node without incoming edges is valid (LangGraph compiles it): a Command given as graph
  // input, or returned to this graph by a subgraph invoked inside a node, may go to it.
  // A run finishes at END, or after a node with no outgoing transition at all.
  std::vector<Vertex> finishing{shape.end()};
  for (std::size_t i = 0; i < n; ++i) {
    if (boost::out_degree(i, g) == 0) finishing.push_back(i);
  }
  const std::vector<bool> to_end = reachable(boost::make_reverse_graph(g), finishing);
  for (std::size_t i = 0; i < n; ++i) {
    if (!to_end[i]) {
      invalid(fmt::format("Node '{}' can never reach END: every path from it loops forever",
                          spec.nodes[i].name));
    }
  }

  Topology t;
  t.node_count = n;
  t.start = static_cast<int>(n);
  t.names.reserve(n + 1);
  for (const auto& node : spec.nodes) t.names.push_back(node.name);
  t.names.emplace_back(START);
  for (std::size_t i = 0; i <= n; ++i) t.ids.emplace(t.names[i], static_cast<int>(i));
  auto id_of = [&](const std::string& name) {
    return name == END ? Topology::kEnd : t.ids.at(name);
  };

  t.successors.assign(n + 1, {});
  for (const auto& e : spec.edges) {
    auto& list = t.successors[static_cast<std::size_t>(id_of(e.from))];
    const int to = id_of(e.to);
    if (std::find(list.begin(), list.end(), to) == list.end()) list.push_back(to);
  }
  t.joins_of.assign(n + 1, {});
  for (const auto& j : spec.joins) {
    // A waiting edge into END does nothing (LangGraph adds no channel for it): the sources end.
    if (j.target == END) continue;
    Topology::Join join{{}, id_of(j.target)};
    for (const auto& s : j.sources) join.sources.push_back(id_of(s));
    for (int s : join.sources)
      t.joins_of[static_cast<std::size_t>(s)].push_back(static_cast<int>(t.joins.size()));
    t.joins.push_back(std::move(join));
  }
  t.branches_of.assign(n + 1, {});
  for (std::size_t b = 0; b < spec.branches.size(); ++b) {
    t.branches_of[static_cast<std::size_t>(id_of(spec.branches[b].source))].push_back(
        static_cast<int>(b));
  }
  std::vector<int> order(n + 1);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return t.names[static_cast<std::size_t>(a)] < t.names[static_cast<std::size_t>(b)];
  });
  t.rank.assign(n + 1, 0);
  for (std::size_t r = 0; r < order.size(); ++r)
    t.rank[static_cast<std::size_t>(order[r])] = static_cast<int>(r);
  t.send_only.assign(n + 1, false);
  for (std::size_t i = 0; i < n; ++i) t.send_only[i] = spec.nodes[i].send_only;
  t.interrupt_before = interrupt_flags(spec, interrupt_before);
  t.interrupt_after = interrupt_flags(spec, interrupt_after);
  t.interrupt_before.push_back(false);
  t.interrupt_after.push_back(false);
  return t;
}

std::string draw_mermaid(const GraphSpec& spec) {
  const Shape shape(spec, ShapeUse::draw);
  const Graph& g = shape.graph();
  std::ostringstream out;
  out << "%%{init: {'flowchart': {'curve': 'linear'}}}%%\ngraph TD;\n";
  out << "\t__start__([<p>__start__</p>]):::first\n";
  for (const auto& node : spec.nodes)
    out << '\t' << mermaid_id(node.name) << '(' << node.name << ")\n";
  out << "\t__end__([<p>__end__</p>]):::last\n";
  for (auto [it, end] = boost::edges(g); it != end; ++it) {
    const auto& props = g[*it];
    const std::string from = mermaid_id(shape.name(boost::source(*it, g)));
    const std::string to = mermaid_id(shape.name(boost::target(*it, g)));
    if (!props.conditional) {
      out << '\t' << from << " --> " << to << ";\n";
    } else if (props.label.empty()) {
      out << '\t' << from << " -.-> " << to << ";\n";
    } else {
      out << '\t' << from << " -. &nbsp;" << props.label << "&nbsp; .-> " << to << ";\n";
    }
  }
  out << "\tclassDef default fill:#f2f0ff,line-height:1.2\n"
      << "\tclassDef first fill-opacity:0\n"
      << "\tclassDef last fill:#bfb6fc\n";
  return out.str();
}

nlohmann::json draw_json(const GraphSpec& spec) {
  const Shape shape(spec, ShapeUse::draw);
  const Graph& g = shape.graph();
  const auto schema_node = [](const std::string& name) {
    return nlohmann::json{{"id", name}, {"type", "schema"}, {"data", name}};
  };
  nlohmann::json nodes = nlohmann::json::array({schema_node(START)});
  for (const auto& node : spec.nodes) {
    nodes.push_back({{"id", node.name},
                     {"type", "runnable"},
                     {"data", {{"id", {"stategraph", "Node"}}, {"name", node.name}}},
                     {"metadata", nlohmann::json::object()}});
  }
  nodes.push_back(schema_node(END));
  nlohmann::json edges = nlohmann::json::array();
  for (auto [it, end] = boost::edges(g); it != end; ++it) {
    const auto& props = g[*it];
    nlohmann::json edge = {{"source", shape.name(boost::source(*it, g))},
                           {"target", shape.name(boost::target(*it, g))},
                           {"conditional", props.conditional}};
    if (!props.label.empty()) edge["data"] = props.label;
    edges.push_back(std::move(edge));
  }
  return {{"nodes", std::move(nodes)}, {"edges", std::move(edges)}};
}

std::string draw_dot(const GraphSpec& spec) {
  const Shape shape(spec, ShapeUse::draw);
  const Graph& g = shape.graph();
  std::ostringstream out;
  auto vertex_writer = [&](std::ostream& os, Vertex v) {
    const std::string name = shape.name(v);
    os << "[label=" << boost::escape_dot_string(name);
    if (v == shape.start() || v == shape.end()) os << ", shape=oval";
    os << ']';
  };
  auto edge_writer = [&](std::ostream& os, const boost::graph_traits<Graph>::edge_descriptor& e) {
    const auto& props = g[e];
    if (!props.conditional) return;
    os << "[style=dashed";
    if (!props.label.empty()) os << ", label=" << boost::escape_dot_string(props.label);
    os << ']';
  };
  auto graph_writer = [&](std::ostream& os) {
    os << "rankdir=TB;\n";
    if (!spec.name.empty()) os << "label=" << boost::escape_dot_string(spec.name) << ";\n";
  };
  // Node names as DOT ids (LangGraph's ids), so that SVG titles and links name the nodes.
  const auto ids = boost::make_function_property_map<Vertex, std::string>(
      [&](Vertex v) { return boost::escape_dot_string(shape.name(v)); });
  boost::write_graphviz(out, g, vertex_writer, edge_writer, graph_writer, ids);
  return out.str();
}

std::string without_task_ids(std::string_view ns) {
  std::string out;
  std::size_t from = 0;
  while (from <= ns.size()) {
    std::size_t to = ns.find('|', from);
    if (to == std::string_view::npos) to = ns.size();
    std::string_view part = ns.substr(from, to - from);
    part = part.substr(0, part.find(':'));
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(),
                                                     [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) {
      if (!out.empty()) out += '|';
      out += part;
    }
    from = to + 1;
  }
  return out;
}

}  // namespace sg::detail
