// SPDX-License-Identifier: MIT
#include <stategraph/core/error.hpp>
#include <stategraph/nodes/trim.hpp>

#include <string>
#include <unordered_set>

namespace sg {

std::vector<Message> remove_old_messages(std::span<const Message> messages, std::size_t keep_last,
                                         bool keep_tool_pairs) {
  if (messages.size() <= keep_last) return {};
  std::size_t cut = messages.size() - keep_last;
  if (keep_tool_pairs) {
    // Tool results at the start of the kept part pull their AI tool call (and the results
    // between) into it.
    while (cut > 0 && cut < messages.size() && messages[cut].type == MessageType::tool) --cut;
  }
  std::vector<Message> removals;
  removals.reserve(cut);
  for (std::size_t i = 0; i < cut; ++i) {
    if (messages[i].id.empty()) {
      throw Error(errc::kInvalidArgument, "remove_old_messages: message " + std::to_string(i) +
                                              " has no id, so it cannot be removed");
    }
    removals.push_back(remove_message(messages[i].id));
  }
  return removals;
}

}  // namespace sg
