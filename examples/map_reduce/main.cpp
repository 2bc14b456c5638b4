// SPDX-License-Identifier: MIT
// Map-reduce with Send: LangGraph's how-to "How to create map-reduce branches for parallel
// execution" in C++. A node plans a list of subjects; a conditional edge returns one
// sg::Send("generate_joke", Subject{...}) per subject, so the worker node runs once per item, in
// parallel, in one superstep, each with its own input (not the graph state). The workers' writes
// are joined by the `jokes` field's reducer (sg::concat: an appending list, in Send order, not in
// completion order); a final node then reduces the list to the best joke.
//
// The "model" here is a pair of plain functions (offline, deterministic); a real graph would call
// a chat model in generate_topics, generate_joke and best_joke.
#include <stategraph/stategraph.hpp>

#include <iostream>

namespace {

/// The graph state (LangGraph's OverallState).
struct Overall {
  std::string topic{};
  std::vector<std::string> subjects{};
  std::vector<std::string> jokes{};  // each worker appends; sg::concat joins them
  std::string best_selected_joke{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"topic">(&Overall::topic),
                      sg::field<"subjects">(&Overall::subjects),
                      sg::field<"jokes">(&Overall::jokes, sg::concat),
                      sg::field<"best_selected_joke">(&Overall::best_selected_joke)};
  }
};

/// What each worker gets from its Send (LangGraph's JokeState): one subject, not the state.
struct Subject {
  std::string subject{};
};

/// Offline stand-in for "Generate a list of 3 sub-topics related to {topic}".
std::vector<std::string> subtopics(const std::string& topic) {
  if (topic == "animals") return {"lions", "elephants", "penguins"};
  return {topic + " (part 1)", topic + " (part 2)"};
}

/// Offline stand-in for "Generate a joke about {subject}".
std::string joke_about(const std::string& subject) {
  return "Why did the " + subject + " cross the road? To get to the other " + subject + "!";
}

}  // namespace

int main() {
  sg::StateGraph<Overall> graph;

  // Map, step 1: plan the items.
  graph.add_node("generate_topics", [](const Overall& state) {
    return sg::set<&Overall::subjects>(subtopics(state.topic));
  });

  // The worker: its input is the Send's argument. Its update appends one joke.
  graph.add_node("generate_joke",
                 [](const Subject& s) { return sg::set<&Overall::jokes>(joke_about(s.subject)); });

  // Reduce: runs once, after every worker of the fan-out (they all end in one superstep).
  graph.add_node("best_joke", [](const Overall& state) {
    std::string best;  // the longest joke wins (a model would judge)
    for (const auto& joke : state.jokes)
      if (joke.size() > best.size()) best = joke;
    return sg::set<&Overall::best_selected_joke>(best);
  });

  graph.add_edge(sg::START, "generate_topics");
  // The fan-out: one Send per subject (LangGraph's continue_to_jokes).
  graph.add_conditional_edges("generate_topics",
                              [](const Overall& state) {
                                std::vector<sg::Send> sends;
                                for (const auto& subject : state.subjects)
                                  sends.emplace_back("generate_joke", Subject{subject});
                                return sends;
                              },
                              {"generate_joke"});
  graph.add_edge("generate_joke", "best_joke");
  graph.add_edge("best_joke", sg::END);
  const auto app = graph.compile();

  // Stream the updates: the three workers run in the same superstep.
  const auto result = app.stream(sg::set<&Overall::topic>(std::string("animals")), {},
                                 sg::StreamMode::updates, [](const sg::StreamEvent<Overall>& e) {
                                   std::cout << "step " << e.step << " " << e.node << ": "
                                             << sg::update_to_json(*e.update).dump() << '\n';
                                 });

  const Overall& state = result.state;
  std::cout << "\njokes (" << state.jokes.size() << ", in Send order):\n";
  for (const auto& joke : state.jokes) std::cout << "  " << joke << '\n';
  std::cout << "best joke: " << state.best_selected_joke << '\n';
  return state.jokes.size() == state.subjects.size() ? 0 : 1;
}
