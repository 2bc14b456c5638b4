// SPDX-License-Identifier: MIT
#include "common.hpp"
// expect: no field of the state's schema\(\) has this name
int main() {
  (void)sg::Update<State>{}.set<"bogus">(1);
}
