// SPDX-License-Identifier: MIT
#include "common.hpp"
// expect: with a const call operator
int main() {
  sg::StateGraph<State> g;
  g.add_node("a", [n = 0](const State&) mutable {
    ++n;
    return sg::Update<State>{};
  });
}
