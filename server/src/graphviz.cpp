// SPDX-License-Identifier: MIT
// The Graphviz wrapper (see graphviz.hpp): libcgraph parses and holds the graph, libgvc lays it
// out and renders it.
#include "graphviz.hpp"

#include <stategraph/core/error.hpp>

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <algorithm>

namespace sg::server {
namespace {

/// What Graphviz reported (errors and warnings) while a MessageCapture was alive.
thread_local std::string t_messages;

extern "C" int capture_graphviz_message(char* text) {
  t_messages += text;
  return 0;
}

/// Routes Graphviz's messages (agerr) to t_messages instead of stderr for its lifetime.
class MessageCapture {
 public:
  MessageCapture() : previous_(agseterrf(&capture_graphviz_message)) { t_messages.clear(); }
  ~MessageCapture() { agseterrf(previous_); }
  MessageCapture(const MessageCapture&) = delete;
  MessageCapture& operator=(const MessageCapture&) = delete;

  /// The messages so far on one line, or `fallback` when there are none.
  [[nodiscard]] static std::string text(std::string_view fallback) {
    std::string out = t_messages;
    std::replace(out.begin(), out.end(), '\n', ' ');
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out.empty() ? std::string(fallback) : out;
  }

 private:
  agusererrf previous_;
};

/// Graphviz takes `char*` for names and values it only reads.
void set_attribute(void* object, const std::string& name, const std::string& value) {
  std::string n = name;
  std::string v = value;
  std::string empty;
  agsafeset(object, n.data(), v.data(), empty.data());
}

/// The process's one Graphviz context, made on first use and kept: the pango text plugin caches
/// a font name it does not own across calls, which lives in the context (freeing the context
/// left that pointer dangling for the next graph: a use after free under ASan). Callers
/// serialize (see graphviz.hpp).
GVC_t* shared_context() {
  static GVC_t* const context = gvContext();
  return context;
}

}  // namespace

struct GraphvizGraph::Parts {
  GVC_t* context = nullptr;
  Agraph_t* graph = nullptr;
  bool laid_out = false;
  bool rendered = false;

  Parts() = default;
  Parts(const Parts&) = delete;
  Parts& operator=(const Parts&) = delete;
  ~Parts() {
    if (laid_out) gvFreeLayout(context, graph);
    if (graph) agclose(graph);
  }
};

GraphvizGraph::GraphvizGraph(const std::string& dot) : parts_(std::make_unique<Parts>()) {
  const MessageCapture capture;
  parts_->context = shared_context();
  if (!parts_->context) throw Error(kRenderFailed, "graphviz: cannot create a context");
  parts_->graph = agmemread(dot.c_str());
  if (!parts_->graph) {
    throw Error(errc::kInvalidArgument,
                "graphviz: not a DOT graph: " + MessageCapture::text("syntax error"));
  }
}

GraphvizGraph::~GraphvizGraph() = default;

void GraphvizGraph::set_graph(const GraphvizAttributes& attributes) {
  for (const auto& [name, value] : attributes) set_attribute(parts_->graph, name, value);
}

void GraphvizGraph::set_nodes(
    const std::function<GraphvizAttributes(std::string_view label)>& attributes) {
  std::string label_key = "label";
  for (Agnode_t* n = agfstnode(parts_->graph); n; n = agnxtnode(parts_->graph, n)) {
    const char* label = agget(n, label_key.data());
    // A node without a label attribute is drawn with its name.
    const std::string_view text = label && *label ? label : agnameof(n);
    for (const auto& [name, value] : attributes(text)) set_attribute(n, name, value);
  }
}

void GraphvizGraph::set_edges(const GraphvizAttributes& attributes) {
  for (Agnode_t* n = agfstnode(parts_->graph); n; n = agnxtnode(parts_->graph, n)) {
    for (Agedge_t* e = agfstout(parts_->graph, n); e; e = agnxtout(parts_->graph, e)) {
      for (const auto& [name, value] : attributes) set_attribute(e, name, value);
    }
  }
}

std::string GraphvizGraph::render(std::string_view format) {
  if (parts_->rendered) throw Error(kRenderFailed, "graphviz: the graph was already rendered");
  parts_->rendered = true;
  const MessageCapture capture;
  if (gvLayout(parts_->context, parts_->graph, "dot") != 0) {
    throw Error(kRenderFailed, "graphviz: layout failed: " + MessageCapture::text("no message"));
  }
  parts_->laid_out = true;
  const std::string format_name(format);
  char* data = nullptr;
  unsigned int length = 0;
  const int status =
      gvRenderData(parts_->context, parts_->graph, format_name.c_str(), &data, &length);
  const std::unique_ptr<char, void (*)(char*)> owned(data, [](char* p) {
    if (p) gvFreeRenderData(p);
  });
  if (status != 0 || !data) {
    throw Error(kRenderFailed, "graphviz: cannot render " + format_name + ": " +
                                   MessageCapture::text("no message"));
  }
  return {data, length};
}

}  // namespace sg::server
