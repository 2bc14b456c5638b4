// SPDX-License-Identifier: MIT
#include "common.hpp"
// expect: a number is not a string value
int main() {
  (void)sg::Update<State>{}.set<&State::summary>(42);
}
