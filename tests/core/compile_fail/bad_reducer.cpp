// SPDX-License-Identifier: MIT
#include <stategraph/stategraph.hpp>
// expect: the reducer must be a reducer type
struct Bad {
  int x = 0;
  static constexpr auto schema() { return std::tuple{sg::field<"x">(&Bad::x, 3)}; }
};
int main() {
  (void)sg::Update<Bad>{};
}
