// stategraph: the command-line tool (messages, threads, store). Errors are one line on stderr and a
// non-zero exit code (1 bad input or failure, 2 bad usage).
#include <stategraph/core/error.hpp>

#include <fmt/format.h>

#include <algorithm>
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
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(errc::kInvalidArgument, fmt::format("stdin is not valid JSON: {}", e.what()));
  }
}

void write_json(const nlohmann::json& value, int indent) {
  std::cout << value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

}  // namespace sg::cli

namespace {

/// One line: newlines in a message become spaces.
std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stategraph: state graphs for LLM agents (messages, threads, store)", "stategraph"};
  app.set_version_flag("--version", "stategraph 0.1.0");
  app.require_subcommand(1);
  sg::cli::Action action;
  sg::cli::add_messages_command(app, action);
  sg::cli::add_threads_command(app, action);
  sg::cli::add_store_command(app, action);
  sg::cli::add_demo_command(app, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "stategraph: " << one_line(e.what()) << " (see --help)\n";
    return 2;
  }
  try {
    if (action) action();
    return 0;
  } catch (const sg::Error& e) {
    std::cerr << "stategraph: " << one_line(e.what()) << '\n';
  } catch (const std::exception& e) {
    std::cerr << "stategraph: " << one_line(e.what()) << '\n';
  }
  return 1;
}
