#pragma once

// Shared pieces of the stategraph command-line tool.

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <string>

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

/// Reads all of stdin as JSON. Throws sg::Error (code "argument.invalid") when it is empty or
/// not JSON.
[[nodiscard]] nlohmann::json read_stdin_json();

/// Writes `value` to stdout as one line of JSON (indented when `indent` >= 0).
void write_json(const nlohmann::json& value, int indent);

}  // namespace sg::cli
