// SPDX-License-Identifier: MIT
// Time travel: LangGraph's how-to "Use time-travel" in C++. A two-node graph runs on a thread of
// an InMemorySaver; then:
//   1. get_state_history lists the thread's checkpoints, newest first (id, step, source, next);
//   2. replay: invoke with an older checkpoint's id and no input (std::nullopt: LangGraph's
//      invoke(None, config); app.resume(config) is the same) runs again the nodes after it, on a
//      new branch;
//   3. fork: update_state at that older checkpoint writes a changed value into a new checkpoint,
//      and running from it continues with the change; the original run stays in the history.
//
// The nodes are plain functions (offline, deterministic); a real graph would call a model.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/stategraph.hpp>

#include <atomic>
#include <iostream>

namespace {

struct State {
  std::string topic{};
  std::string joke{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"topic">(&State::topic), sg::field<"joke">(&State::joke)};
  }
};

/// A RunConfig pointing at a checkpoint (LangGraph passes snapshot.config as it is).
sg::RunConfig at(const sg::CheckpointConfig& checkpoint) {
  sg::RunConfig config;
  config.thread_id = checkpoint.thread_id;
  config.checkpoint_ns = checkpoint.checkpoint_ns;
  config.checkpoint_id = checkpoint.checkpoint_id;
  return config;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
  return "(" + out + ")";
}

void print_history(const sg::CompiledGraph<State>& app, const sg::RunConfig& thread) {
  for (const auto& s : app.get_state_history(thread)) {
    std::cout << "  " << s.config.checkpoint_id << "  step " << s.metadata.value("step", -99)
              << "  " << s.metadata.value("source", std::string("?")) << "  next " << joined(s.next)
              << "  parent "
              << (s.parent_config ? s.parent_config->checkpoint_id : std::string("-"))
              << "  topic=" << (s.values.topic.empty() ? "-" : s.values.topic) << '\n';
  }
}

}  // namespace

int main() {
  std::atomic<int> jokes_written{0};
  sg::StateGraph<State> graph;
  graph.add_node("generate_topic",
                 [](const State&) { return sg::set<&State::topic>(std::string("cats")); });
  graph.add_node("write_joke", [&jokes_written](const State& state) {
    ++jokes_written;
    return sg::set<&State::joke>("Why do " + state.topic + " never win at cards? Too many " +
                                 state.topic + " in the deck.");
  });
  graph.add_edge(sg::START, "generate_topic");
  graph.add_edge("generate_topic", "write_joke");
  graph.add_edge("write_joke", sg::END);
  const auto app = graph.compile({.checkpointer = std::make_shared<sg::InMemorySaver>()});

  sg::RunConfig thread;
  thread.thread_id = "1";

  // 1. Run the graph, then look at its checkpoints.
  const State first = app.invoke(sg::Update<State>{}, thread).state;
  std::cout << "run: topic=" << first.topic << " joke=" << first.joke << '\n';
  std::cout << "history (newest first):\n";
  print_history(app, thread);

  // The checkpoint taken before write_joke ran: its next node is write_joke.
  sg::StateSnapshot<State> before;
  for (const auto& s : app.get_state_history(thread))
    if (s.next == std::vector<std::string>{"write_joke"}) before = s;
  std::cout << "selected " << before.config.checkpoint_id << ": next " << joined(before.next)
            << ", topic=" << before.values.topic
            << ", joke=" << (before.values.joke.empty() ? "-" : before.values.joke) << '\n';

  // 2. Replay from it: no input, so the nodes after it run again (write_joke, not
  // generate_topic). LangGraph: graph.invoke(None, selected_state.config).
  const int calls_before = jokes_written.load();
  const auto replay = app.invoke(std::nullopt, at(before.config));
  std::cout << "replay: write_joke ran " << jokes_written.load() - calls_before
            << " time(s), joke=" << replay.state.joke << '\n';

  // 3. Fork: change the topic at that checkpoint (as if generate_topic had written it), then run
  // from the new checkpoint. LangGraph: new_config = graph.update_state(selected_state.config,
  // values={"topic": "chickens"}); graph.invoke(None, new_config).
  const sg::CheckpointConfig fork =
      app.update_state(at(before.config), sg::set<&State::topic>(std::string("chickens")));
  const auto forked = app.get_state(at(fork));
  std::cout << "fork " << fork.checkpoint_id << ": source "
            << forked->metadata.value("source", std::string("?")) << ", parent "
            << forked->parent_config->checkpoint_id << ", next " << joined(forked->next)
            << ", topic=" << forked->values.topic << '\n';
  const auto continued = app.invoke(std::nullopt, at(fork));
  std::cout << "continued: topic=" << continued.state.topic << " joke=" << continued.state.joke
            << '\n';

  // The thread's latest state is the fork's; every branch stays in the history.
  const auto latest = app.get_state(thread);
  std::cout << "latest: topic=" << latest->values.topic << " joke=" << latest->values.joke << '\n';
  std::cout << "history after replay and fork (newest first):\n";
  print_history(app, thread);
  return continued.state.topic == "chickens" ? 0 : 1;
}
