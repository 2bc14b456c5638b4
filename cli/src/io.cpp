// SPDX-License-Identifier: MIT
// The helpers of the stategraph commands (cli.hpp): stdin and stdout as JSON, one-line texts,
// colour. Apart from main.cpp so that tests/fuzz can build a command without the tool's main().
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
