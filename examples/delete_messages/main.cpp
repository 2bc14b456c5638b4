// SPDX-License-Identifier: MIT
// Deleting messages: LangGraph's how-to "How to delete messages" in C++. A message list reduced
// with add_messages deletes a message when it receives sg::remove_message(id) (LangGraph's
// RemoveMessage), and clears the whole list on sg::remove_message(sg::kRemoveAllMessages)
// (REMOVE_ALL_MESSAGES; sg::remove_all() makes that update). Shown three ways on a checkpointed
// thread:
//   1. in a node: after each reply, delete_messages removes all but the last two messages;
//   2. from outside, with update_state: one message by id;
//   3. from outside, with update_state: every message.
//
// The model is sg::LocalModel (offline, deterministic): it answers a question only from the
// statements it is given, so a deleted fact is really forgotten.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/stategraph.hpp>

#include <iostream>

namespace {

using State = sg::MessagesState;

void print_state(const sg::CompiledGraph<State>& app, const sg::RunConfig& thread) {
  const State state = app.get_state(thread)->values;
  std::cout << "  state (" << state.messages.size() << " messages):";
  for (const auto& m : state.messages)
    std::cout << " [" << to_string(m.type) << ": " << m.text() << ']';
  std::cout << '\n';
}

}  // namespace

int main() {
  auto model = std::make_shared<sg::LocalModel>();

  sg::StateGraph<State> graph;
  graph.add_node("call_model", [model](const State& state) {
    return sg::Update<State>{}.set<&State::messages>(model->invoke(state.messages));
  });
  // Keeps the last two messages: one RemoveMessage per older message.
  graph.add_node("delete_messages", [](const State& state) {
    std::vector<sg::Message> removals;
    for (std::size_t i = 0; i + 2 < state.messages.size(); ++i)
      removals.push_back(sg::remove_message(state.messages[i].id));
    return sg::Update<State>{}.set<&State::messages>(removals);
  });
  graph.add_edge(sg::START, "call_model");
  graph.add_edge("call_model", "delete_messages");
  graph.add_edge("delete_messages", sg::END);
  const auto app = graph.compile({.checkpointer = std::make_shared<sg::InMemorySaver>()});

  sg::RunConfig thread;
  thread.thread_id = "1";
  int turn = 0;
  const auto say = [&](const std::string& text) {
    const auto input =
        sg::Update<State>{}.set<&State::messages>(sg::human(text, "h" + std::to_string(++turn)));
    const State state = app.invoke(input, thread).state;
    std::cout << "turn " << turn << ": " << text << " -> " << state.messages.back().text() << '\n';
    print_state(app, thread);
  };

  // 1. The node deletes old messages: turn 2 still sees the fact of turn 1, turn 3 does not.
  std::cout << "== delete_messages node (keeps the last two)\n";
  say("My name is Ada.");
  say("What is my name?");
  say("What is my name?");

  // 2. Delete one message by id from outside the graph (LangGraph:
  // app.update_state(config, {"messages": RemoveMessage(id=messages[0].id)})).
  const std::string first_id = app.get_state(thread)->values.messages.front().id;
  std::cout << "== update_state: remove_message(\"" << first_id << "\"), the first message\n";
  app.update_state(thread, sg::Update<State>{}.set<&State::messages>(sg::remove_message(first_id)));
  print_state(app, thread);

  // 3. Delete every message (LangGraph: RemoveMessage(id=REMOVE_ALL_MESSAGES)).
  std::cout << "== update_state: remove_message(kRemoveAllMessages)\n";
  app.update_state(thread, sg::Update<State>{}.set<&State::messages>(
                               sg::remove_message(std::string(sg::kRemoveAllMessages))));
  print_state(app, thread);
  say("Where do I live?");

  // An id that is not in the list (never there, or already deleted) is an error naming it;
  // nothing changes.
  std::cout << "== update_state: remove_message(\"no-such-id\")\n";
  try {
    app.update_state(thread,
                     sg::Update<State>{}.set<&State::messages>(sg::remove_message("no-such-id")));
  } catch (const sg::Error& e) {
    std::cout << "  error: " << e.what() << '\n';
  }
  print_state(app, thread);
  return 0;
}
