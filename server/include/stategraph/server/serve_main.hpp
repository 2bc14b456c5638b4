// SPDX-License-Identifier: MIT
#pragma once

// A server program in one call: the options, stategraph.json, storage and signal handling of
// `stategraph serve`, around a program's own graphs.
//
//   int main(int argc, char** argv) {
//     return sg::serve_main(argc, argv, [](sg::GraphRegistry& graphs, const sg::ServerOptions&) {
//       sg::StateGraph<sg::MessagesState> graph;
//       ...
//       graphs.add("agent", sg::served_graph(std::move(graph)));
//     });
//   }
//
// The program then takes `stategraph serve`'s options (`PROGRAM --help`; docs/deploy.md), and
// serves its graphs, or those a --config file names ("builtin:agent" is the program's "agent").

#include <stategraph/server/graph_library.hpp>
#include <stategraph/server/server.hpp>

#include <functional>

namespace CLI {
class App;
}

namespace sg {

/// Adds a program's own graphs (its built-in graphs) to `registry`. `options` holds the
/// checkpointer and store the server keeps its threads in, for graphs compiled here; a graph
/// given as a StateGraph (served_graph(StateGraph)) gets them without it.
using RegisterGraphs = std::function<void(GraphRegistry& registry, const ServerOptions& options)>;

/// Parses `argv` as `stategraph serve`'s options, serves the graphs until SIGINT or SIGTERM
/// (letting runs finish for --shutdown-grace), and returns the exit code: 0 after a signal, 1
/// when the server cannot start (bad configuration, a database that cannot open), 2 for bad
/// usage; errors go to stderr as one line. Call it from main, before starting threads: it blocks
/// SIGINT and SIGTERM in the calling thread.
[[nodiscard]] int serve_main(int argc, char** argv, RegisterGraphs register_graphs);

/// Adds `stategraph serve`'s options to `command` (a CLI11 app or subcommand) and sets `action`,
/// once the command line is parsed, to the function that serves `register_graphs`'s graphs until
/// a signal; the action throws sg::Error when the server cannot start. For a program with its
/// own CLI11 command line; serve_main() is this with the line's parsing and errors.
void add_serve_options(CLI::App& command, std::function<void()>& action,
                       RegisterGraphs register_graphs);

}  // namespace sg
