// SPDX-License-Identifier: MIT
#pragma once

// Shared pieces of the stategraph command-line tool.

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace sg::cli {

/// The action a subcommand selected; main runs it and turns exceptions into one-line errors.
using Action = std::function<void()>;

/// Registers `stategraph messages <op>`; the chosen operation is stored in `action`.
void add_messages_command(CLI::App& app, Action& action);

/// Registers `stategraph threads <op>` (list, show, history, delete, fork over a RocksDbSaver
/// database); the chosen operation is stored in `action`.
void add_threads_command(CLI::App& app, Action& action);

/// Registers `stategraph store <op>` (put, get, delete, search, namespaces over a RocksDbStore
/// directory); the chosen operation is stored in `action`.
void add_store_command(CLI::App& app, Action& action);

/// Registers `stategraph demo` (the summarize-and-trim graph over a scripted conversation, on a
/// RocksDB thread a second run continues); the run is stored in `action`.
void add_demo_command(CLI::App& app, Action& action);

/// Registers `stategraph graph [NAME]` (draws a built-in graph as Mermaid, DOT, SVG or PNG, or
/// lists them); the chosen operation is stored in `action`.
void add_graph_command(CLI::App& app, Action& action);

/// Registers `stategraph chat` (an interactive chat on the demo's graph, resumed across runs);
/// the session is stored in `action`.
void add_chat_command(CLI::App& app, Action& action);

/// Registers `stategraph serve` (the built-in graphs over the LangGraph Server API until SIGINT
/// or SIGTERM); the server is stored in `action`.
void add_serve_command(CLI::App& app, Action& action);

/// Registers `stategraph new NAME` (writes a graph-library project, docs/deploy.md); the
/// writing is stored in `action`.
void add_new_command(CLI::App& app, Action& action);

/// Registers `stategraph dev` (builds, serves and rebuilds a project on each change,
/// docs/deploy.md); the loop is stored in `action`.
void add_dev_command(CLI::App& app, Action& action);

/// Registers `stategraph completion bash` (prints bash_completion(app)).
void add_completion_command(CLI::App& app, Action& action);

/// A bash completion script for `app`'s commands and options, generated from its definition.
[[nodiscard]] std::string bash_completion(const CLI::App& app);

/// `text` on one line (line breaks and tabs become spaces), cut to `max` characters with "...".
[[nodiscard]] std::string one_line(std::string text, std::size_t max = std::string::npos);

/// The nodes a checkpoint runs next, comma-separated, or "(done)".
[[nodiscard]] std::string next_text(const std::vector<std::string>& next);

/// Whether to colour the output: stdout is a terminal and NO_COLOR is unset or empty
/// (no-color.org).
[[nodiscard]] bool colour_output();

/// Reads all of stdin as JSON. Throws sg::Error (code "argument.invalid") when it is empty or
/// not JSON.
[[nodiscard]] nlohmann::json read_stdin_json();

/// Writes `value` to stdout as one line of JSON (indented when `indent` >= 0).
void write_json(const nlohmann::json& value, int indent);

}  // namespace sg::cli
