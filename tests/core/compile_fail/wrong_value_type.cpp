// SPDX-License-Identifier: MIT
#include "common.hpp"
// expect: the value's type does not match the field's update type
int main() {
  (void)sg::Update<State>{}.set<&State::count>(std::string("three"));
}
