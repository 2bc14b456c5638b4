// SPDX-License-Identifier: MIT
#pragma once
// A state for the compile-failure tests: each test file must NOT compile, with a readable error.
#include <stategraph/stategraph.hpp>

struct State {
  int count = 0;
  std::string summary{};
  int not_in_schema = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"count">(&State::count), sg::field<"summary">(&State::summary)};
  }
};
