// SPDX-License-Identifier: MIT
// Short-term memory with stategraph's message tools: a conversation kept with add_messages
// (ids, in-place edits, deletions), then the context a model would see: the system prompt plus
// the most recent turns that fit a token budget, starting on a human message.
#include <stategraph/stategraph.hpp>

#include <iostream>

int main() {
  std::vector<sg::Message> history;

  // Each turn appends through the add_messages reducer, as a graph node's update would.
  sg::add_messages.apply(history, sg::append(sg::system("You are a terse travel assistant.", "sys"),
                                             sg::human("Hi! I'm planning a trip to Lisbon.", "h1"),
                                             sg::ai("Great choice. When are you going?", "a1")));
  sg::add_messages.apply(history, sg::append(sg::human("In May, for four days.", "h2"),
                                             sg::ai("May is lovely: warm, not crowded.", "a2"),
                                             sg::human("What should I not miss?", "h3")));
  sg::add_messages.apply(
      history, sg::ai("", {sg::ToolCall{"call_1", "search_sights", {{"city", "Lisbon"}}}}, "a3"));
  sg::add_messages.apply(history, sg::tool("Belem Tower; Alfama; Time Out Market", "call_1", "t1"));
  sg::add_messages.apply(history, sg::ai("Belem Tower, Alfama at sunset, Time Out Market.", "a4"));

  // A message with the same id replaces the old one in place; a RemoveMessage deletes one.
  sg::add_messages.apply(history, sg::ai("May is lovely: warm, and not too crowded.", "a2"));
  sg::add_messages.apply(history, sg::remove({"a1"}));

  std::cout << "Stored history (" << history.size() << " messages):\n"
            << sg::get_buffer_string(history) << "\n\n";

  // What the model sees: the system prompt plus the latest turns within 100 tokens, starting on
  // a human message and never splitting a tool call from its result.
  sg::TrimOptions window;
  window.max_tokens = 100;
  window.token_counter = sg::TokenCounter{};  // count_tokens_approximately
  window.include_system = true;
  window.start_on = {sg::MessageType::human};
  window.end_on = {sg::MessageType::human, sg::MessageType::tool, sg::MessageType::ai};
  const auto context = sg::trim_messages(history, window);
  std::cout << "Model context (" << sg::count_tokens_approximately(context) << " of "
            << window.max_tokens << " tokens):\n"
            << sg::get_buffer_string(context) << "\n\n";

  // Only the conversation, without tool traffic, as JSON for a log.
  sg::FilterOptions no_tools;
  no_tools.exclude_types = {sg::MessageType::tool};
  auto visible = sg::filter_messages(history, no_tools);
  std::erase_if(visible, [](const sg::Message& m) { return !m.tool_calls.empty(); });
  std::cout << "Transcript JSON:\n" << sg::messages_to_json(visible).dump(2) << '\n';
  return context.front().id == "sys" ? 0 : 1;
}
