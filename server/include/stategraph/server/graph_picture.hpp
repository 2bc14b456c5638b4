// SPDX-License-Identifier: MIT
#pragma once

// A graph's picture, laid out and rendered by Graphviz's C library in this process (libgvc), in
// the look of LangGraph's drawings. Used by `stategraph graph --format svg|png` and by the
// server's GET /assistants/{id}/graph?format=svg (the studio's picture).

#include <string>
#include <string_view>

namespace sg::server {

/// The code of the sg::Error render_graph_picture throws in a build without Graphviz.
inline constexpr std::string_view kNoGraphviz = "server.no_graphviz";

/// Whether this build renders pictures (built with SG_WITH_GRAPHVIZ). Thread-safe.
[[nodiscard]] bool graph_pictures_available() noexcept;

/// `dot` (a graph's draw_dot()) rendered as `format` ("svg" or "png"). LangGraph's look: nodes
/// as rounded boxes, __start__ and __end__ as ovals, conditional edges dashed; an SVG node is a
/// `<g class="node">` whose `<title>` is the node's name. Throws sg::Error (kInvalidArgument)
/// when `dot` is not DOT, ("server.render_failed") when Graphviz cannot lay it out or render it,
/// (kNoGraphviz) in a build without Graphviz. Thread-safe (Graphviz's global state is used by one
/// call at a time).
[[nodiscard]] std::string render_graph_picture(const std::string& dot, std::string_view format);

}  // namespace sg::server
