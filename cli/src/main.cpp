// stategraph: the command-line tool (demo, chat, graph, threads, store, messages, completion).
// Errors are one line on stderr and a non-zero exit code (1 bad input or failure, 2 bad usage).
#include <stategraph/core/error.hpp>

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <iterator>

#include "cli.hpp"

namespace sg::cli {

nlohmann::json read_stdin_json() {
  std::string input{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  if (std::all_of(input.begin(), input.end(), [](unsigned char c) { return std::isspace(c); })) {
    throw Error(errc::kInvalidArgument, "expected JSON on stdin, got nothing");
  }
  try {
    return nlohmann::json::parse(input);
  } catch (const nlohmann::json::exception& e) {  // parse_error, out_of_range (1e999)
    throw Error(errc::kInvalidArgument, fmt::format("stdin is not valid JSON: {}", e.what()));
  }
}

std::string one_line(std::string text, std::size_t max) {
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  if (text.size() > max) text = text.substr(0, max > 3 ? max - 3 : 0) + "...";
  return text;
}

std::string next_text(const std::vector<std::string>& next) {
  return next.empty() ? "(done)" : fmt::format("{}", fmt::join(next, ","));
}

bool colour_output() {
  const char* no_color = std::getenv("NO_COLOR");
  return isatty(STDOUT_FILENO) == 1 && (no_color == nullptr || *no_color == '\0');
}

void write_json(const nlohmann::json& value, int indent) {
  std::cout << value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

}  // namespace sg::cli

int main(int argc, char** argv) {
  CLI::App app{
      "stategraph: state graphs for LLM agents. Run the summarize-and-trim demo, chat on "
      "a thread, draw the built-in graphs, inspect threads and the store, edit message "
      "lists.",
      "stategraph"};
  app.set_version_flag("--version", "stategraph 0.1.0");
  app.footer(
      "\n`stategraph COMMAND --help` describes a command. Exit codes: 0 ok, 1 failure (bad input, "
      "a missing database, a model error), 2 bad usage. Colour only on a terminal, never with "
      "NO_COLOR set. A real model: set OPENAI_BASE_URL (and OPENAI_API_KEY, STATEGRAPH_MODEL).");
  app.require_subcommand(1);
  sg::cli::Action action;
  sg::cli::add_demo_command(app, action);
  sg::cli::add_chat_command(app, action);
  sg::cli::add_graph_command(app, action);
  sg::cli::add_serve_command(app, action);
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
  try {
    if (action) action();
    return 0;
  } catch (const sg::Error& e) {
    std::cerr << "stategraph: " << sg::cli::one_line(e.what()) << '\n';
  } catch (const std::exception& e) {
    std::cerr << "stategraph: " << sg::cli::one_line(e.what()) << '\n';
  }
  return 1;
}
