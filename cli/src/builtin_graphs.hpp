// SPDX-License-Identifier: MIT
#pragma once

// The graphs the command-line tool ships with, in one registry: `stategraph graph` draws them and
// a server can serve them by name. Each entry builds its compiled graph on the model, checkpointer
// and store it is given.

#include <stategraph/core/compiled_graph.hpp>
#include <stategraph/models/agent.hpp>
#include <stategraph/models/chat_model.hpp>
#include <stategraph/models/react_agent.hpp>
#include <stategraph/nodes/summarize_trim.hpp>
#include <stategraph/reducers/messages_state.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sg::cli {

/// What a built-in graph is built on. A null model means sg::LocalModel (offline); the
/// checkpointer and store may be null (no thread memory, no long-term store). `tools` are added
/// to the react_agent's own (the MCP tools of `stategraph serve --mcp`).
struct BuiltinGraphOptions {
  std::shared_ptr<const ChatModel> model{};
  std::shared_ptr<Checkpointer> checkpointer{};
  std::shared_ptr<Store> store{};
  std::vector<Tool> tools{};
};

/// A compiled built-in graph; its state type tells which one.
using AnyCompiledGraph =
    std::variant<CompiledGraph<SummaryTrimState>, CompiledGraph<AgentState>,
                 CompiledGraph<MessagesState>, CompiledGraph<CreateAgentState>>;

/// One entry of the registry.
struct BuiltinGraph {
  /// The id a user names it by (`stategraph graph NAME`, a server's graph id).
  std::string name{};
  /// One line: what it does.
  std::string description{};
  /// Builds and compiles it. Throws what the graph's builder throws (sg::Error).
  std::function<AnyCompiledGraph(const BuiltinGraphOptions&)> build{};
};

/// The options of the summarize-and-trim graph that the registry, `demo` and `chat` build (the
/// library's defaults, with room for every fact in LocalModel's summaries).
[[nodiscard]] SummaryTrimOptions demo_graph_options();

/// Every built-in graph, sorted by name. Thread-safe.
[[nodiscard]] const std::vector<BuiltinGraph>& builtin_graphs();

/// The built-in graph called `name`, or null. Thread-safe.
[[nodiscard]] const BuiltinGraph* find_builtin_graph(std::string_view name);

/// The names of the built-in graphs, comma-separated (for messages).
[[nodiscard]] std::string builtin_graph_names();

/// The nodes of `graph` in the order they were added (not START and END).
[[nodiscard]] std::vector<std::string> graph_nodes(const AnyCompiledGraph& graph);

/// `graph` as a Mermaid flowchart (CompiledGraph::draw_mermaid).
[[nodiscard]] std::string graph_mermaid(const AnyCompiledGraph& graph);

/// `graph` as Graphviz DOT (CompiledGraph::draw_dot).
[[nodiscard]] std::string graph_dot(const AnyCompiledGraph& graph);

}  // namespace sg::cli
