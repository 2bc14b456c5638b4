// SPDX-License-Identifier: MIT
// A conversation thread that survives the process: every run of this program is one turn of
// thread "bob", stored in a RocksDB checkpoint database, and continues where the last run
// stopped. With --checkpoint ID the turn starts from an older checkpoint instead (a fork: the
// newer branch stays in the history).
//
//   resume_thread DB "hi! I'm bob"
//   resume_thread DB "what's my name?"          # sees the first turn
//   resume_thread DB --history                  # checkpoints, newest first
//   resume_thread DB --checkpoint ID "hello"    # a new branch from checkpoint ID
#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/stategraph.hpp>

#include <iostream>

/// Offline stand-in for a chat model: it recalls what the human said before.
sg::Message reply(const std::vector<sg::Message>& messages) {
  std::string earlier;
  for (const auto& m : messages) {
    if (m.type == sg::MessageType::human && &m != &messages.back())
      earlier += (earlier.empty() ? "" : ", ") + ("\"" + m.text() + "\"");
  }
  return sg::ai("You said \"" + messages.back().text() + "\"" +
                (earlier.empty() ? "" : "; before that: " + earlier));
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: resume_thread DB [--checkpoint ID] MESSAGE | resume_thread DB --history\n";
    return 2;
  }
  sg::StateGraph<sg::MessagesState> graph;
  graph.add_node("chat", [](const sg::MessagesState& s) {
    return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(reply(s.messages));
  });
  graph.add_edge(sg::START, "chat");
  const auto app = graph.compile({.checkpointer = sg::RocksDbSaver::open(argv[1])});

  sg::RunConfig config;
  config.thread_id = "bob";
  const std::string arg = argv[2];
  if (arg == "--history") {
    for (const auto& snapshot : app.get_state_history(config)) {
      std::cout << snapshot.config.checkpoint_id << "  step " << snapshot.metadata["step"] << "  "
                << snapshot.values.messages.size() << " messages\n";
    }
    return 0;
  }
  std::string text = arg;
  if (arg == "--checkpoint" && argc >= 5) {
    config.checkpoint_id = argv[3];
    text = argv[4];
  }
  const auto result = app.invoke(
      sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(sg::human(text)), config);
  for (const auto& m : result.state.messages)
    std::cout << to_string(m.type) << ": " << m.text() << '\n';
  config.checkpoint_id.clear();  // the thread's latest checkpoint: the one this turn made
  std::cout << "checkpoint " << app.get_state(config)->config.checkpoint_id << '\n';
  return 0;
}
