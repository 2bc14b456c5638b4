// SPDX-License-Identifier: MIT
// Human in the loop: LangGraph's how-to "Review tool calls" (interrupt, then resume with
// Command) in C++. The model asks for a tool call; before the tool runs, human_review_node calls
// sg::interrupt(value): the run stops and returns the value to the caller. get_state shows the
// pending interrupt and the node that runs next. The caller then resumes the thread with
// sg::Command{.resume = answer}: the node runs again from its start, interrupt() returns the
// answer, and the node approves the call as it is or edits its arguments before the tool runs.
//
// The model is sg::LocalModel (offline, deterministic): it calls a tool that the human message
// names, and reports the tool's result.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/tool_node.hpp>
#include <stategraph/stategraph.hpp>

#include <iostream>

namespace {

using State = sg::MessagesState;

struct City {
  std::string city{};
  static constexpr auto schema() { return std::tuple{sg::field<"city">(&City::city)}; }
};

void print_messages(const State& state) {
  for (const auto& m : state.messages) {
    std::cout << "  " << to_string(m.type) << ": " << m.text();
    for (const auto& call : m.tool_calls)
      std::cout << "[calls " << call.name << ' ' << call.args.dump() << ']';
    std::cout << '\n';
  }
}

/// What a paused thread waits for: get_state's next nodes and pending interrupts.
void print_pending(const sg::CompiledGraph<State>& app, const sg::RunConfig& thread) {
  const auto snapshot = app.get_state(thread);
  std::cout << "get_state: next (";
  for (const auto& n : snapshot->next) std::cout << n;
  std::cout << "), " << snapshot->values.messages.size() << " messages, "
            << snapshot->interrupts.size() << " interrupt(s)";
  for (const auto& i : snapshot->interrupts)
    std::cout << ", from " << i.node << ": " << i.value.dump();
  std::cout << '\n';
}

}  // namespace

int main() {
  const sg::Tool weather =
      sg::make_tool<City>("weather_search", "Search for the weather in a city.",
                          [](const City& c) { return "Sunny, 21 C in " + c.city + "."; });
  auto model = std::make_shared<sg::LocalModel>();

  sg::StateGraph<State> graph;
  graph.add_node("call_llm", [model, weather](const State& state) {
    sg::ChatOptions options;
    options.tools = {weather.spec()};
    return sg::Update<State>{}.set<&State::messages>(model->invoke(state.messages, options));
  });

  // Asks a human about the model's tool call. interrupt() stops the run here the first time; on
  // resume it returns the human's answer: {"action": "continue"} or {"action": "update", "args"}.
  graph.add_node(
      "human_review_node",
      [](const State& state) {
        const sg::Message& last = state.messages.back();
        const sg::ToolCall& call = last.tool_calls.front();
        const nlohmann::json review = sg::interrupt(
            {{"question", "Is this correct?"}, {"tool", call.name}, {"args", call.args}});
        if (review.at("action") == "update") {
          sg::Message edited = last;  // same id: add_messages replaces the message in place
          edited.tool_calls.front().args = review.at("args");
          return sg::Command<State>{.update = sg::set<&State::messages>(edited),
                                    .go_to = {"run_tool"}};
        }
        return sg::Command<State>{.go_to = {"run_tool"}};  // approved as it is
      },
      {.destinations = {"run_tool"}});

  graph.add_node("run_tool", sg::ToolNode<State>({weather}));

  graph.add_edge(sg::START, "call_llm");
  graph.add_conditional_edges(
      "call_llm",
      [](const State& state) {
        return state.messages.back().tool_calls.empty() ? sg::END : "human_review_node";
      },
      {"human_review_node", sg::END});
  graph.add_edge("run_tool", "call_llm");
  const auto app = graph.compile({.checkpointer = std::make_shared<sg::InMemorySaver>()});

  const auto ask =
      sg::Update<State>{}.set<&State::messages>(sg::human("Use weather search for San Francisco."));

  // 1. Approve: the run stops at the interrupt; resume with "continue".
  sg::RunConfig approve;
  approve.thread_id = "approve";
  std::cout << "== approve the tool call\n";
  auto run = app.invoke(ask, approve);
  std::cout << "interrupted: " << (run.interrupted() ? "yes" : "no") << ", value "
            << run.interrupts.front().value.dump() << '\n';
  print_pending(app, approve);
  run = app.invoke(sg::Command<State>{.resume = nlohmann::json{{"action", "continue"}}}, approve);
  std::cout << "resumed: " << (run.interrupted() ? "interrupted" : "done") << '\n';
  print_messages(run.state);

  // 2. Edit: resume with new arguments; the tool runs with them.
  sg::RunConfig edit;
  edit.thread_id = "edit";
  std::cout << "== edit the tool call\n";
  run = app.invoke(ask, edit);
  std::cout << "interrupted: " << (run.interrupted() ? "yes" : "no") << ", value "
            << run.interrupts.front().value.dump() << '\n';
  print_pending(app, edit);
  run = app.invoke(sg::Command<State>{.resume = nlohmann::json{{"action", "update"},
                                                               {"args", {{"city", "Lisbon"}}}}},
                   edit);
  std::cout << "resumed: " << (run.interrupted() ? "interrupted" : "done") << '\n';
  print_messages(run.state);
  print_pending(app, edit);
  return run.interrupted() ? 1 : 0;
}
