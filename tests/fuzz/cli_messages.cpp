// SPDX-License-Identifier: MIT
// Fuzz target: `stategraph messages`, its arguments and the messages it reads on stdin (see
// fuzz_targets.hpp).
#include <stategraph/core/error.hpp>
#include <stategraph/core/message.hpp>

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"  // cli/src: add_messages_command
#include "fuzz_targets.hpp"

// Not an anonymous namespace: fuzz/replay compiles the targets in unity batches.
namespace sg::fuzz::cli_input {

/// Points std::cin and std::cout at other buffers while it lives.
class Redirect {
 public:
  Redirect(std::streambuf* in, std::streambuf* out)
      : in_(std::cin.rdbuf(in)), out_(std::cout.rdbuf(out)) {}
  Redirect(const Redirect&) = delete;
  Redirect& operator=(const Redirect&) = delete;
  ~Redirect() {
    std::cin.rdbuf(in_);
    std::cout.rdbuf(out_);
  }

 private:
  std::streambuf* in_;
  std::streambuf* out_;
};

}  // namespace sg::fuzz::cli_input

int sg::fuzz::cli_messages(const std::uint8_t* data, std::size_t size) {
  using namespace cli_input;  // NOLINT: this target's helpers
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t newline = input.find('\n');
  if (newline == std::string_view::npos) return 0;
  // `stategraph messages` and the first line's words as arguments, as main() parses them.
  std::vector<std::string> args{"stategraph", "messages"};
  for (std::size_t at = 0; at < newline;) {
    const std::size_t end = std::min(input.find(' ', at), newline);
    args.emplace_back(input.substr(at, end - at));
    at = end + 1;
  }
  std::vector<const char*> argv;
  for (const auto& arg : args) argv.push_back(arg.c_str());
  CLI::App app{"stategraph", "stategraph"};
  app.require_subcommand(1);
  cli::Action action;
  cli::add_messages_command(app, action);
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError&) {
    return 0;  // bad usage (exit code 2), or --help
  }
  if (!action) return 0;
  // The rest of the input on stdin; stdout kept.
  std::istringstream in{std::string(input.substr(newline + 1))};
  std::ostringstream out;
  {
    const Redirect redirect(in.rdbuf(), out.rdbuf());
    try {
      action();
    } catch (const Error&) {
      return 0;  // refused with a one-line error (exit code 1)
    }
  }
  // What it writes is one line of JSON; the message commands write messages it reads back.
  const nlohmann::json written = nlohmann::json::parse(out.str(), nullptr, false);
  if (written.is_discarded()) std::abort();
  const std::string command = app.get_subcommand("messages")->get_subcommands().at(0)->get_name();
  if (command == "add" || command == "trim" || command == "filter" || command == "merge") {
    try {
      (void)messages_from_json(written);
    } catch (const Error&) {
      std::abort();
    }
  }
  return 0;
}

SG_FUZZ_ENTRY(sg::fuzz::cli_messages)
