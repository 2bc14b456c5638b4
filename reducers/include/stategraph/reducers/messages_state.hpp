// SPDX-License-Identifier: MIT
#pragma once

#include <stategraph/core/schema.hpp>
#include <stategraph/reducers/add_messages.hpp>

#include <tuple>
#include <vector>

namespace sg {

/// The ready-made state of chat graphs: a message list merged with add_messages (LangGraph's
/// MessagesState). Extend it by deriving and concatenating schemas:
///
///   struct Chat : sg::MessagesState {
///     std::string summary;
///     static constexpr auto schema() {
///       return std::tuple_cat(sg::MessagesState::schema(),
///                             std::tuple{sg::field<"summary">(&Chat::summary)});
///     }
///   };
struct MessagesState {
  std::vector<Message> messages;

  static constexpr auto schema() {
    return std::tuple{field<"messages">(&MessagesState::messages, add_messages)};
  }
};

}  // namespace sg
