// SPDX-License-Identifier: MIT
// clang-format off
#include "common.hpp"
// expect: a node must return sg::Update<State>, sg::Command<State>, std::vector<sg::Command<State>> or void
int main() {
  sg::StateGraph<State> g;
  g.add_node("a", [](const State&) { return 42; });
}
