// SPDX-License-Identifier: MIT
// LangGraph's tests/test_interruption.py (interrupt_after="*" without state updates, per
// durability mode) and tests/test_managed_values.py (RemainingSteps).
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

using sg::parity::Strings;

namespace {

struct InputState {
  std::string input{};
  static constexpr auto schema() { return std::tuple{sg::field<"input">(&InputState::input)}; }
};

template <class Saver>
void interruption_without_state_updates(sg::Durability durability) {
  Saver saver;
  auto noop = [](const InputState&) {};
  sg::StateGraph<InputState> builder;
  builder.add_node("step_1", noop);
  builder.add_node("step_2", noop);
  builder.add_node("step_3", noop);
  builder.add_edge(sg::START, "step_1");
  builder.add_edge("step_1", "step_2");
  builder.add_edge("step_2", "step_3");
  builder.add_edge("step_3", sg::END);
  const auto graph = builder.compile({.checkpointer = saver.get(), .interrupt_after = {"*"}});

  auto thread = sg::parity::thread("1");
  thread.durability = durability;
  const bool exit = durability == sg::Durability::exit;

  (void)graph.invoke(sg::set<&InputState::input>(std::string("hello world")), thread);
  auto state = graph.get_state(thread);
  REQUIRE(state);
  CHECK(state->next == Strings{"step_2"});
  CHECK(graph.get_state_history(thread).size() == (exit ? 1U : 3U));

  (void)graph.resume(thread);
  state = graph.get_state(thread);
  REQUIRE(state);
  CHECK(state->next == Strings{"step_3"});
  CHECK(graph.get_state_history(thread).size() == (exit ? 2U : 4U));

  (void)graph.resume(thread);
  state = graph.get_state(thread);
  REQUIRE(state);
  CHECK(state->next.empty());
  CHECK(graph.get_state_history(thread).size() == (exit ? 3U : 5U));
}

}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_interruption.py::test_interruption_without_state_updates (sync)",
                   Saver, SG_PARITY_SAVERS) {
  interruption_without_state_updates<Saver>(sg::Durability::sync);
}

TEST_CASE_TEMPLATE(
    "langgraph/test_interruption.py::test_interruption_without_state_updates (async)", Saver,
    SG_PARITY_SAVERS) {
  interruption_without_state_updates<Saver>(sg::Durability::async);
}

TEST_CASE_TEMPLATE("langgraph/test_interruption.py::test_interruption_without_state_updates (exit)",
                   Saver, SG_PARITY_SAVERS) {
  interruption_without_state_updates<Saver>(sg::Durability::exit);
}

namespace {
struct StatePlain {
  sg::RemainingSteps remaining_steps{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"remaining_steps">(&StatePlain::remaining_steps)};
  }
};
}  // namespace

TEST_CASE("langgraph/test_managed_values.py::test_managed_values_recognized") {
  // LangGraph checks that a RemainingSteps key (plain, NotRequired or Required: typing variants
  // with no C++ counterpart) is in graph.managed. The C++ counterpart of "managed": the executor
  // fills the field. LangGraph's value at step 1 of a fresh run with the default recursion limit
  // (25) is stop - step = 25 - 1 = 24 (managed/is_last_step.py, pregel/_loop.py `self.stop`).
  int seen = -1;
  sg::StateGraph<StatePlain> graph;
  graph.add_node("node", [&seen](const StatePlain& s) { seen = s.remaining_steps; });
  graph.add_edge(sg::START, "node");
  (void)graph.compile().invoke(sg::Update<StatePlain>{});
  CHECK(seen == 24);
}
