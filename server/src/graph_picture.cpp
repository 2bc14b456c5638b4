// SPDX-License-Identifier: MIT
#include <stategraph/core/error.hpp>
#include <stategraph/core/graph_types.hpp>
#include <stategraph/server/graph_picture.hpp>

#include <mutex>

#if SG_WITH_GRAPHVIZ
#include "graphviz.hpp"
#endif

namespace sg::server {

#if SG_WITH_GRAPHVIZ
namespace {

// The look of LangGraph's drawings (its Mermaid classes: nodes #f2f0ff, __end__ #bfb6fc,
// __start__ unfilled; __start__ and __end__ as ovals, conditional edges dashed), for Graphviz.
constexpr const char* kFont = "Helvetica,Arial,sans-serif";
constexpr const char* kLine = "#4b4b5c";
constexpr const char* kBorder = "#8f84d8";

GraphvizAttributes node_style(std::string_view label) {
  GraphvizAttributes a{
      {"fontname", kFont}, {"fontsize", "13"}, {"color", kBorder}, {"penwidth", "1.2"}};
  if (label == START || label == END) {
    a.insert(a.end(), {{"shape", "oval"},
                       {"margin", "0.08,0.04"},
                       {"height", "0.4"},
                       {"style", "filled"},
                       {"fillcolor", label == END ? "#bfb6fc" : "#ffffff"}});
  } else {
    a.insert(a.end(), {{"shape", "box"},
                       {"margin", "0.2,0.08"},
                       {"height", "0.42"},
                       {"style", "rounded,filled"},
                       {"fillcolor", "#f2f0ff"}});
  }
  return a;
}

}  // namespace

std::string render_graph_picture(const std::string& dot, std::string_view format) {
  static std::mutex graphviz;  // Graphviz keeps global state
  const std::lock_guard lock(graphviz);
  GraphvizGraph graph(dot);
  GraphvizAttributes look{{"label", ""},  // the graph's name: LangGraph does not draw it
                          {"bgcolor", "white"},
                          {"pad", "0.25"},
                          {"nodesep", "0.45"},
                          {"ranksep", "0.45"}};
  if (format == "png") look.emplace_back("dpi", "144");  // sharp on high-density screens
  graph.set_graph(look);
  graph.set_nodes(node_style);
  graph.set_edges({{"color", kLine},
                   {"arrowsize", "0.7"},
                   {"penwidth", "1.1"},
                   {"fontname", kFont},
                   {"fontsize", "11"},
                   {"fontcolor", kLine}});
  return graph.render(format);
}

bool graph_pictures_available() noexcept {
  return true;
}

#else

bool graph_pictures_available() noexcept {
  return false;
}

std::string render_graph_picture(const std::string& /*dot*/, std::string_view format) {
  throw Error(kNoGraphviz, "no " + std::string(format) +
                               " pictures: stategraph was built without Graphviz "
                               "(SG_WITH_GRAPHVIZ=OFF); Mermaid and DOT drawings work");
}

#endif

}  // namespace sg::server
