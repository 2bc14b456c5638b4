// SPDX-License-Identifier: MIT
#include "common.hpp"
// expect: this member is not part of the state's schema
int main() {
  (void)sg::Update<State>{}.set<&State::not_in_schema>(1);
}
