// SPDX-License-Identifier: MIT
// Built against an installed stategraph: messages from sg::core, add_messages from sg::reducers.
#include <stategraph/stategraph.hpp>

#include <iostream>

int main() {
  auto messages = sg::add_messages({sg::human("hello")}, {sg::ai("hi there")});
  std::cout << sg::get_buffer_string(messages) << '\n';
  return messages.size() == 2 && !messages[0].id.empty() ? 0 : 1;
}
