// SPDX-License-Identifier: MIT
#pragma once

// A small RAII wrapper over Graphviz's C library (libgvc and libcgraph, Debian's
// libgraphviz-dev), written here by hand because it is only a thin layer over that library: parse
// DOT, set attributes, lay out with `dot`, render to SVG or PNG in memory, free everything in
// order. Graphviz keeps global state: use one GraphvizGraph at a time, on one thread.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sg::server {

/// The code of the sg::Error GraphvizGraph::render throws when Graphviz fails.
inline constexpr std::string_view kRenderFailed = "server.render_failed";

/// Graphviz attributes, name and value, applied in order.
using GraphvizAttributes = std::vector<std::pair<std::string, std::string>>;

/// A DOT graph parsed by Graphviz, to style and render. Not thread-safe (see above).
class GraphvizGraph {
 public:
  /// Parses `dot`. Throws sg::Error (errc::kInvalidArgument) with Graphviz's message when it is
  /// not a DOT graph.
  explicit GraphvizGraph(const std::string& dot);
  ~GraphvizGraph();
  GraphvizGraph(const GraphvizGraph&) = delete;
  GraphvizGraph& operator=(const GraphvizGraph&) = delete;

  /// Sets attributes of the graph itself (rankdir, dpi, ...).
  void set_graph(const GraphvizAttributes& attributes);
  /// Sets, on every node, the attributes `attributes(label)` returns for its label.
  void set_nodes(const std::function<GraphvizAttributes(std::string_view label)>& attributes);
  /// Sets `attributes` on every edge (attributes not named keep their values).
  void set_edges(const GraphvizAttributes& attributes);

  /// Lays the graph out with the `dot` engine and renders it in `format` ("svg", "png", or any
  /// other format of the installed Graphviz plugins); call it once, after the set_* calls.
  /// Throws sg::Error (kRenderFailed) with Graphviz's message when the layout or the rendering
  /// fails (a format Graphviz does not know included), or when called twice.
  [[nodiscard]] std::string render(std::string_view format);

 private:
  struct Parts;
  std::unique_ptr<Parts> parts_;
};

}  // namespace sg::server
