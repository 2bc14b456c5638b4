// SPDX-License-Identifier: MIT
// `stategraph serve`: the built-in graphs, or those of a stategraph.json, over the LangGraph
// Server API (sg::add_serve_options: the options, storage and signals that sg::serve_main gives
// users' own programs too).
#include <stategraph/models/local_model.hpp>
#include <stategraph/server/serve_main.hpp>

#include "builtin_graphs.hpp"
#include "cli.hpp"

namespace sg::cli {

void add_serve_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand(
      "serve",
      "Serve the built-in graphs over the LangGraph Server API (the official SDKs and UIs work "
      "against it) until Ctrl-C; threads, runs and the store persist in RocksDB or PostgreSQL");
  add_serve_options(*cmd, action, [](GraphRegistry& registry, const ServerOptions& options) {
    BuiltinGraphOptions graph_options;
    graph_options.model = default_chat_model();
    graph_options.checkpointer = options.checkpointer;
    graph_options.store = options.store;
    graph_options.tools = options.mcp_tools;
    for (const BuiltinGraph& builtin : builtin_graphs()) {
      std::visit([&](auto&& g) { registry.add(builtin.name, served_graph(std::move(g))); },
                 builtin.build(graph_options));
    }
  });
}

}  // namespace sg::cli
