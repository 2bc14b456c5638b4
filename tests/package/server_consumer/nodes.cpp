// SPDX-License-Identifier: MIT
// A memory node from the installed package: a window of one exchange over three.
#include <stategraph/nodes/buffer_memory.hpp>

#include <iostream>

int main() {
  sg::ConversationBufferWindowMemory memory(1);
  for (const char* turn : {"one", "two", "three"}) {
    memory.save_context({{"input", turn}}, {{"output", std::string("re: ") + turn}});
  }
  std::cout << "window " << memory.load_memory_variables()["history"].get<std::string>() << '\n';
}
