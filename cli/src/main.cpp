// SPDX-License-Identifier: MIT
// stategraph: the command-line tool (demo, chat, graph, threads, store, messages, completion).
// Errors are one line on stderr and a non-zero exit code (1 bad input or failure, 2 bad usage).
// The helpers the commands share are in io.cpp.
#include <stategraph/core/error.hpp>
#include <stategraph/core/version.hpp>
#include <stategraph/server/logging.hpp>

#include <iostream>
#include <string>

#include "cli.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "stategraph: state graphs for LLM agents. Run the summarize-and-trim demo, chat on "
      "a thread, draw the built-in graphs, inspect threads and the store, edit message "
      "lists.",
      "stategraph"};
  app.set_version_flag("--version", "stategraph " + std::string(sg::kVersion));
  app.footer(
      "\n`stategraph COMMAND --help` describes a command. Exit codes: 0 ok, 1 failure (bad input, "
      "a missing database, a model error), 2 bad usage. Colour only on a terminal, never with "
      "NO_COLOR set. A real model: set OPENAI_BASE_URL (and OPENAI_API_KEY, STATEGRAPH_MODEL).");
  app.require_subcommand(1);
  // The libraries' log (model retries and errors, saver errors) on stderr; `stategraph serve`
  // has the same options, with info as its default level.
  std::string log_level = "warn";
  std::string log_format = "text";
  app.add_option("--log-level", log_level,
                 "Log messages at this level and above to stderr: trace, debug, info, warn, "
                 "error or off")
      ->envname("STATEGRAPH_LOG_LEVEL")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "warning", "error", "off"},
                            CLI::ignore_case))
      ->capture_default_str();
  app.add_option("--log-format", log_format,
                 "text, or json: one object per line with the keys ts, level, msg and the "
                 "message's fields")
      ->envname("STATEGRAPH_LOG_FORMAT")
      ->check(CLI::IsMember({"text", "json"}, CLI::ignore_case))
      ->capture_default_str();
  app.fallthrough();  // the log options after a command's name too
  sg::cli::Action action;
  sg::cli::add_demo_command(app, action);
  sg::cli::add_chat_command(app, action);
  sg::cli::add_graph_command(app, action);
  sg::cli::add_serve_command(app, action);
  sg::cli::add_new_command(app, action);
  sg::cli::add_dev_command(app, action);
  sg::cli::add_threads_command(app, action);
  sg::cli::add_store_command(app, action);
  sg::cli::add_messages_command(app, action);
  sg::cli::add_completion_command(app, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "stategraph: " << sg::cli::one_line(e.what()) << " (see --help)\n";
    return 2;
  }
  struct Logging {
    Logging(const std::string& level, const std::string& format) {
      sg::start_logging({sg::parse_log_level(level), sg::parse_log_format(format)});
    }
    ~Logging() { sg::stop_logging(); }
    Logging(const Logging&) = delete;
    Logging& operator=(const Logging&) = delete;
  };
  try {
    const Logging logging(log_level, log_format);
    if (action) action();
    return 0;
  } catch (const sg::Error& e) {
    std::cerr << "stategraph: " << sg::cli::one_line(e.what()) << '\n';
  } catch (const std::exception& e) {
    std::cerr << "stategraph: " << sg::cli::one_line(e.what()) << '\n';
  }
  return 1;
}
