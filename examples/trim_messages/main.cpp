// SPDX-License-Identifier: MIT
// Trimming messages: LangGraph's how-to "How to manage conversation history" (trim_messages) in
// C++. The thread keeps every message; the chat node sends the model only the system prompt and
// the latest messages that fit a token budget: sg::trim_messages with strategy last, max_tokens,
// start_on human (the window never starts on an AI reply), end_on human or tool (as in the
// how-to) and include_system (the system prompt is always kept). The node streams what the model
// saw (custom stream mode) so each turn prints what the model sees next to what the state keeps.
//
// The model is sg::LocalModel (offline, deterministic): it answers a question only from the
// statements it sees, so a fact trimmed out of the window is not answered although the thread
// still stores it.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/stategraph.hpp>

#include <iostream>

namespace {

using State = sg::MessagesState;

std::string texts(const std::vector<sg::Message>& messages) {
  std::string out;
  for (const auto& m : messages)
    out += " [" + std::string(to_string(m.type)) + ": " + m.text() + "]";
  return out;
}

}  // namespace

int main() {
  auto model = std::make_shared<sg::LocalModel>();

  sg::TrimOptions window;
  window.strategy = sg::TrimStrategy::last;
  window.max_tokens = 64;
  window.token_counter = sg::TokenCounter{};  // count_tokens_approximately
  window.start_on = {sg::MessageType::human};
  window.end_on = {sg::MessageType::human, sg::MessageType::tool};
  window.include_system = true;

  sg::StateGraph<State> graph;
  graph.add_node("chat", [model, window](const State& state, sg::Context& ctx) {
    const std::vector<sg::Message> seen = sg::trim_messages(state.messages, window);
    ctx.write({{"messages", seen.size()},
               {"tokens", sg::count_tokens_approximately(seen)},
               {"texts", texts(seen)}});
    return sg::Update<State>{}.set<&State::messages>(model->invoke(seen));
  });
  graph.add_edge(sg::START, "chat");
  graph.add_edge("chat", sg::END);
  const auto app = graph.compile({.checkpointer = std::make_shared<sg::InMemorySaver>()});

  sg::RunConfig thread;
  thread.thread_id = "1";
  const std::vector<std::string> turns{"My name is Ada.", "I live in Lisbon.",
                                       "My dog is called Rex.", "What is my dog called?",
                                       "What is my name?"};
  for (std::size_t i = 0; i < turns.size(); ++i) {
    std::vector<sg::Message> input;
    if (i == 0) input.push_back(sg::system("You are a helpful assistant.", "sys"));
    input.push_back(sg::human(turns[i]));
    nlohmann::json seen;  // what the chat node streamed
    const auto result =
        app.stream(sg::Update<State>{}.set<&State::messages>(input), thread, sg::StreamMode::custom,
                   [&seen](const sg::StreamEvent<State>& e) { seen = e.data; });
    const auto& kept = result.state.messages;
    std::cout << "turn " << i + 1 << ": " << turns[i] << " -> " << kept.back().text() << '\n'
              << "  model sees  " << seen["messages"] << " messages (" << seen["tokens"]
              << " tokens):" << seen["texts"].get<std::string>() << '\n'
              << "  state keeps " << kept.size() << " messages ("
              << sg::count_tokens_approximately(kept) << " tokens):" << texts(kept) << '\n';
  }
  // The fact the last turn could not answer is still in the thread; only the window moved.
  const auto state = app.get_state(thread)->values;
  for (std::size_t i = 0; i < state.messages.size(); ++i) {
    if (state.messages[i].text() == "My name is Ada.") {
      std::cout << "the thread still stores \"My name is Ada.\" (message " << i + 1 << " of "
                << state.messages.size() << ")\n";
    }
  }
  return 0;
}
