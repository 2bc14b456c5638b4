// SPDX-License-Identifier: MIT
// Summarizing a conversation: LangGraph's how-to "How to add summary of conversation history",
// done with stategraph's built-in sg::summarize_and_trim_graph on a checkpointed thread. Each
// turn, "chat" answers from the system prompt, the running summary and the latest messages that
// fit context_tokens (trim_messages); once the thread's messages pass summarize_after_tokens,
// "summarize_conversation" extends the summary and deletes all but the last keep_last messages
// (RemoveMessages). The facts of the first turns are then only in the summary, and the model
// still answers questions about them at the end.
//
// The model is sg::LocalModel (offline, deterministic): its summary keeps the statements of the
// conversation, and it answers a question only from the statements it reads.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/nodes/summarize_trim.hpp>

#include <iostream>

int main() {
  using State = sg::SummaryTrimState;

  sg::SummaryTrimOptions options;
  options.summarize_after_tokens = 96;  // summarize once the thread's messages pass this
  options.context_tokens = 64;          // the most conversation tokens the model reads
  options.keep_last = 2;                // messages kept after summarizing
  options.summary_options.model_options.max_tokens = 1024;  // room for every fact
  const auto app = sg::summarize_and_trim_graph(std::make_shared<sg::LocalModel>(), options)
                       .compile({.checkpointer = std::make_shared<sg::InMemorySaver>()});

  sg::RunConfig thread;
  thread.thread_id = "ada";
  const std::vector<std::string> turns{"Hi! My name is Ada.",
                                       "I live in Lisbon.",
                                       "My dog is called Rex.",
                                       "On Monday I repaired a pump.",
                                       "On Tuesday I read a book.",
                                       "On Friday I cooked bacalhau.",
                                       "On Sunday I walked by the sea.",
                                       "What is my name?",
                                       "What is my dog called?"};
  State before;  // the thread's state before each turn
  for (std::size_t i = 0; i < turns.size(); ++i) {
    // What "chat" reads this turn: the system prompt with the summary, then the latest messages.
    State seen = before;
    seen.messages.push_back(sg::human(turns[i]));
    const auto context = sg::summary_trim_context(seen, options);

    const auto input = sg::Update<State>{}.set<&State::messages>(sg::human(turns[i]));
    const State after = app.invoke(input, thread).state;
    std::cout << "turn " << i + 1 << ": " << turns[i] << " -> " << after.messages.back().text()
              << "\n  model read " << context.size() << " messages ("
              << options.token_counter(context) << " tokens); thread keeps "
              << after.messages.size() << " messages (" << options.token_counter(after.messages)
              << " tokens)" << (after.summary != before.summary ? "; summarized" : "") << '\n';
    before = after;
  }

  // The thread's state: the last messages and the running summary.
  const State state = app.get_state(thread)->values;
  std::cout << "\nmessages kept (" << state.messages.size() << "):\n";
  for (const auto& m : state.messages)
    std::cout << "  " << to_string(m.type) << ": " << m.text() << '\n';
  std::cout << "summary: " << state.summary << '\n';
  std::cout << "turns: " << state.turns << ", checkpoints: " << app.get_state_history(thread).size()
            << '\n';
  // The first turn's fact is no longer a message of the thread, only a sentence of the summary.
  bool in_messages = false;
  for (const auto& m : state.messages)
    in_messages |= m.text().find("My name is Ada") != std::string::npos;
  std::cout << "\"My name is Ada\" in the messages: " << (in_messages ? "yes" : "no")
            << ", in the summary: "
            << (state.summary.find("My name is Ada") != std::string::npos ? "yes" : "no") << '\n';
  return 0;
}
