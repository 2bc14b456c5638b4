// SPDX-License-Identifier: MIT
// LangGraph's "add summary of conversation history" graph in C++: a chat that summarizes and
// deletes old messages once the conversation grows past six messages.
//
// The model is a small offline stand-in (deterministic, no network) so the example runs
// anywhere; swap in a real chat model client in call_model and summarize_conversation.
#include <stategraph/stategraph.hpp>

#include <iostream>

struct State : sg::MessagesState {
  std::string summary{};
  static constexpr auto schema() {
    return std::tuple_cat(sg::MessagesState::schema(),
                          std::tuple{sg::field<"summary">(&State::summary)});
  }
};

/// Offline stand-in for a chat model: answers the last human message, or summarizes when asked.
sg::Message offline_model(const std::vector<sg::Message>& messages) {
  const std::string last = messages.back().text();
  if (last.rfind("Create a summary", 0) == 0 || last.rfind("This is summary", 0) == 0) {
    std::string summary;
    for (const auto& m : messages) {
      if (m.type == sg::MessageType::human && &m != &messages.back())
        summary += "user said: " + m.text() + "; ";
    }
    return sg::ai(summary);
  }
  return sg::ai("You said \"" + last + "\" (" + std::to_string(messages.size()) +
                " messages in context)");
}

int main() {
  sg::StateGraph<State> workflow;

  workflow.add_node("conversation", [](const State& state) {
    std::vector<sg::Message> messages = state.messages;
    if (!state.summary.empty()) {
      messages.insert(messages.begin(),
                      sg::system("Summary of conversation earlier: " + state.summary));
    }
    return sg::Update<State>{}.set<&State::messages>(offline_model(messages));
  });

  workflow.add_node("summarize_conversation", [](const State& state) {
    const std::string prompt =
        state.summary.empty()
            ? "Create a summary of the conversation above:"
            : "This is summary of the conversation to date: " + state.summary +
                  "\n\nExtend the summary by taking into account the new messages above:";
    std::vector<sg::Message> messages = state.messages;
    messages.push_back(sg::human(prompt));
    const sg::Message response = offline_model(messages);
    std::vector<sg::Message> delete_messages;  // keep the last two
    for (std::size_t i = 0; i + 2 < state.messages.size(); ++i) {
      delete_messages.push_back(sg::remove_message(state.messages[i].id));
    }
    return sg::Update<State>{}
        .set<&State::summary>(response.text())
        .set<&State::messages>(delete_messages);
  });

  workflow.add_edge(sg::START, "conversation");
  workflow.add_conditional_edges("conversation",
                                 [](const State& state) {
                                   return state.messages.size() > 6 ? "summarize_conversation"
                                                                    : sg::END;
                                 },
                                 {"summarize_conversation", sg::END});
  workflow.add_edge("summarize_conversation", sg::END);
  const auto app = workflow.compile();

  // The conversation: each turn continues from the previous state.
  State state;
  for (const char* text : {"hi! I'm bob", "what's my name?", "i like the celtics!",
                           "i like how much they win", "what teams do i like?"}) {
    state.messages.push_back(sg::human(text));
    state = app.invoke(state).state;
    std::cout << "human: " << text << "\n  ai: " << state.messages.back().text() << '\n';
  }
  std::cout << "\nmessages kept: " << state.messages.size() << "\nsummary: " << state.summary
            << '\n';
  return state.messages.size() <= 6 && !state.summary.empty() ? 0 : 1;
}
