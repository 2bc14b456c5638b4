// SPDX-License-Identifier: MIT
#include <stategraph/core/channels.hpp>

namespace sg {

std::string branch_channel(std::string_view node) {
  std::string out;
  out.reserve(kBranchPrefix.size() + node.size());
  out.append(kBranchPrefix).append(node);
  return out;
}

std::string join_channel(std::span<const std::string> sources, std::string_view target) {
  std::string name(kJoinPrefix);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (i) name += '+';
    name += sources[i];
  }
  name += ':';
  name += target;
  return name;
}

std::optional<int> special_write_index(std::string_view channel) noexcept {
  if (channel == kErrorChannel) return -1;
  if (channel == kInterruptChannel) return -3;
  if (channel == kResumeChannel) return -4;
  return std::nullopt;
}

}  // namespace sg
