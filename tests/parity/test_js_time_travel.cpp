// SPDX-License-Identifier: MIT
// LangGraph.js src/tests/time_travel.test.ts. Every test of that file but one is the same test
// (same graphs, same flow, the same or fewer assertions) as one of LangGraph's
// tests/test_time_travel.py, ported in test_time_travel_a.cpp and test_time_travel_b.cpp; README.md
// lists them.
// The remaining one (a subgraph compiled with `checkpointer: true`) is here.
#include <algorithm>
#include <mutex>

#include "parity.hpp"

namespace doctest {
template <>
struct StringMaker<std::vector<std::string>> {
  static String convert(const std::vector<std::string>& v) {
    std::string out = "{";
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", \"" : "\"") + v[i] + "\"";
    return (out + "}").c_str();
  }
};
}  // namespace doctest

namespace {

struct State {
  std::vector<std::string> value{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"value">(&State::value, sg::concat)};
  }
};

/// The nodes that ran, in order (nodes may run on pool threads).
struct Called {
  std::mutex mu;
  std::vector<std::string> names;
  void add(std::string name) {
    std::lock_guard lock(mu);
    names.push_back(std::move(name));
  }
  void clear() {
    std::lock_guard lock(mu);
    names.clear();
  }
  bool contains(const std::string& name) {
    std::lock_guard lock(mu);
    return std::find(names.begin(), names.end(), name) != names.end();
  }
};

/// LangGraph.js toHaveInterruptValue: interrupted, and the first interrupt carries `value`.
template <class R>
bool has_interrupt_value(const R& result, const nlohmann::json& value) {
  return result.interrupted() && !result.interrupts.empty() && result.interrupts[0].value == value;
}

}  // namespace

TEST_CASE_TEMPLATE(
    "langgraphjs/time_travel.test.ts::should replay with subgraph and strip stale RESUME writes",
    Saver, SG_PARITY_SAVERS) {
  Saver saver;
  auto called = std::make_shared<Called>();
  sg::StateGraph<State> executor;
  executor.add_node("step_a", [called](const State&) {
    called->add("step_a");
    return sg::set<&State::value>(std::string("step_a_done"));
  });
  executor.add_node("ask_1", [called](const State&) {
    called->add("ask_1");
    const auto answer = sg::interrupt("Question 1?").get<std::string>();
    return sg::set<&State::value>("ask_1:" + answer);
  });
  executor.add_node("ask_2", [called](const State&) {
    called->add("ask_2");
    const auto answer = sg::interrupt("Question 2?").get<std::string>();
    return sg::set<&State::value>("ask_2:" + answer);
  });
  executor.add_edge(sg::START, "step_a");
  executor.add_edge("step_a", "ask_1");
  executor.add_edge("ask_1", "ask_2");
  executor.add_edge("ask_2", sg::END);

  sg::StateGraph<State> parent;
  parent.add_node("executor", executor.compile(
                                  {.subgraph_checkpointer = sg::SubgraphCheckpointer::persistent}));
  parent.add_edge(sg::START, "executor");
  const auto graph = parent.compile({.checkpointer = saver.get()});
  const auto config = sg::parity::thread("1");

  auto result = graph.invoke(sg::set<&State::value>(std::vector<std::string>{}), config);
  CHECK(has_interrupt_value(result, "Question 1?"));
  result = graph.invoke(sg::Command<State>{.resume = nlohmann::json("answer_1")}, config);
  CHECK(has_interrupt_value(result, "Question 2?"));
  result = graph.invoke(sg::Command<State>{.resume = nlohmann::json("answer_2")}, config);
  CHECK_FALSE(result.interrupted());

  // The newest checkpoint whose next contains "executor".
  const auto history = graph.get_state_history(config);
  const sg::StateSnapshot<State>* before_executor = nullptr;
  for (const auto& s : history) {
    if (std::find(s.next.begin(), s.next.end(), "executor") != s.next.end()) {
      before_executor = &s;
      break;
    }
  }
  REQUIRE(before_executor != nullptr);

  called->clear();
  const auto replay = graph.resume(sg::parity::at(before_executor->config));
  CHECK(has_interrupt_value(replay, "Question 1?"));
  CHECK(called->contains("step_a"));
  CHECK(called->contains("ask_1"));
  CHECK_FALSE(called->contains("ask_2"));
}
