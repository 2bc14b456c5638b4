// SPDX-License-Identifier: MIT
// LangGraph's libs/langgraph/tests/test_pregel.py (f09cfe8), lines 3108-4743: subgraphs, nested
// interrupts, streaming while running, checkpoint metadata, messages, the store, debug
// checkpoints, add_sequence. Each case keeps LangGraph's expectation; README.md lists
// what stategraph does differently and what is not ported.
#include <stategraph/store/memory_store.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <thread>

#include "parity.hpp"

using nlohmann::json;
using sg::parity::interrupt_values;
using sg::parity::Strings;
using sg::parity::subset;
using namespace std::chrono_literals;

namespace doctest {
template <>
struct StringMaker<std::vector<std::string>> {
  static String convert(const std::vector<std::string>& v) {
    return nlohmann::json(v).dump().c_str();
  }
};
}  // namespace doctest

namespace {

json J(const char* text) {
  return json::parse(text);
}

/// `Annotated[str, operator.add]`.
struct StrAdd {
  std::string operator()(std::string a, const std::string& b) const { return a + b; }
};

#define CHECK_STATE(state, text)                             \
  do {                                                       \
    const json want_ = J(text);                              \
    CHECK(subset(sg::state_to_json(state), want_) == want_); \
  } while (false)

/// A namespace as LangGraph's tests match it: "node:<task id>" becomes "node:" (AnyStr prefix).
json ns_json(const std::vector<std::string>& ns) {
  json out = json::array();
  for (const auto& part : ns) {
    const auto colon = part.find(':');
    out.push_back(colon == std::string::npos ? part : part.substr(0, colon + 1));
  }
  return out;
}

/// One LangGraph "updates" chunk: {node: update} (None when the node wrote nothing).
template <sg::State S>
json chunk(const sg::StreamEvent<S>& e) {
  if (e.node == sg::INTERRUPT) return {{"__interrupt__", interrupt_values(e.interrupts)}};
  json c = json::object();
  // A subgraph with another state type streams its update as JSON in `data`.
  c[e.node] = e.update && !e.update->empty() ? sg::update_to_json(*e.update)
              : !e.update && !e.data.empty() ? e.data
                                             : json(nullptr);
  if (e.cached) c["__metadata__"] = {{"cached", true}};
  return c;
}

/// `[*app.stream(input, config)]` (stream_mode="updates"; with `subgraphs`, LangGraph's
/// (namespace, chunk) pairs). `input` is an Update, or std::nullopt (LangGraph's stream(None)).
template <sg::State S, class Input>
json updates(const sg::CompiledGraph<S>& app, Input&& input, sg::RunConfig config = {},
             bool subgraphs = false) {
  json out = json::array();
  config.stream_subgraphs = subgraphs;
  const auto result =
      app.stream(std::forward<Input>(input), config, sg::StreamMode::updates,
                 [&](const sg::StreamEvent<S>& e) {
                   out.push_back(subgraphs ? json::array({ns_json(e.ns), chunk(e)}) : chunk(e));
                 });
  (void)result;
  return out;
}

/// `[*app.stream(input, config, stream_mode="values")]`.
template <sg::State S, class Input>
json values(const sg::CompiledGraph<S>& app, Input&& input, sg::RunConfig config = {}) {
  json out = json::array();
  (void)app.stream(std::forward<Input>(input), config, sg::StreamMode::values,
                   [&](const sg::StreamEvent<S>& e) {
                     json v = sg::state_to_json(*e.values);
                     if (!e.interrupts.empty()) v["__interrupt__"] = interrupt_values(e.interrupts);
                     out.push_back(v);
                   });
  return out;
}

sg::RunConfig with(sg::RunConfig config, sg::Durability durability) {
  config.durability = durability;
  return config;
}

using Clock = std::chrono::steady_clock;
/// Python's round(x, 1).
double round1(double x) {
  return std::round(x * 10.0) / 10.0;
}
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}
/// LangGraph's FloatBetween(low, high).
bool between(double x, double low, double high) {
  return x >= low - 1e-9 && x <= high + 1e-9;
}

// ---- states

/// InnerState of the subgraph tests: my_key: Annotated[str, operator.add], my_other_key: str.
struct InnerState {
  std::string my_key{};
  std::string my_other_key{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"my_key">(&InnerState::my_key, StrAdd{}),
                      sg::field<"my_other_key">(&InnerState::my_other_key)};
  }
};

/// `my_key: str` (last value).
struct KeyState {
  std::string my_key{};
  static constexpr auto schema() { return std::tuple{sg::field<"my_key">(&KeyState::my_key)}; }
};

/// `my_key: Annotated[str, operator.add]`.
struct AddKeyState {
  std::string my_key{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"my_key">(&AddKeyState::my_key, StrAdd{})};
  }
};

/// `messages: Annotated[list[str], operator.add]`.
struct Msgs {
  Strings messages{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"messages">(&Msgs::messages, sg::concat)};
  }
};

/// The inner graph of the subgraph tests: inner_1 then inner_2.
template <class Inner1, class Inner2>
sg::StateGraph<InnerState> inner_graph(Inner1 inner_1, Inner2 inner_2) {
  sg::StateGraph<InnerState> inner;
  inner.add_node("inner_1", inner_1);
  inner.add_node("inner_2", inner_2);
  inner.add_edge("inner_1", "inner_2");
  inner.set_entry_point("inner_1");
  inner.set_finish_point("inner_2");
  return inner;
}

/// A subgraph over InnerState as a node of a graph over P: the parent's my_key is the input,
/// the subgraph's my_key the output (LangGraph keeps the keys both states share).
template <sg::State P>
void add_inner(sg::StateGraph<P>& graph, const std::string& name,
               const sg::CompiledGraph<InnerState>& inner) {
  graph.add_node(
      name, inner, [](const P& s) { return sg::set<&InnerState::my_key>(s.my_key); },
      [](const InnerState& s) { return sg::Update<P>{}.template set<"my_key">(s.my_key); });
}

}  // namespace

// ---------------------------------------------------------------------------------------------

namespace {
struct NestedInner {
  std::string my_key{};
  std::string my_other_key{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"my_key">(&NestedInner::my_key),
                      sg::field<"my_other_key">(&NestedInner::my_other_key)};
  }
};
struct NestedOuter {
  std::string my_key{};
  std::string never_called{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"my_key">(&NestedOuter::my_key),
                      sg::field<"never_called">(&NestedOuter::never_called)};
  }
};
}  // namespace

TEST_CASE("langgraph/test_pregel.py::test_nested_graph") {
  // `never_called` is a RunnableLambda in LangGraph's state that must be passed along, never
  // run; a C++ state holds plain data, so a marker string stands in for it. The drawing
  // snapshots and the `app | RunnablePassthrough()` chain are not ported.
  sg::StateGraph<NestedInner> inner;
  inner.add_node("up", [](const NestedInner& s) {
    return sg::set<&NestedInner::my_key>(s.my_key + " there")
        .set<&NestedInner::my_other_key>(s.my_key);
  });
  inner.set_entry_point("up");
  inner.set_finish_point("up");

  sg::StateGraph<NestedOuter> graph;
  graph.add_node(
      "inner", inner.compile(),
      [](const NestedOuter& s) { return sg::set<&NestedInner::my_key>(s.my_key); },
      [](const NestedInner& s) { return sg::set<&NestedOuter::my_key>(s.my_key); });
  graph.add_node("side", [](const NestedOuter& s) {
    return sg::set<&NestedOuter::my_key>(s.my_key + " and back again");
  });
  graph.set_entry_point("inner");
  graph.add_edge("inner", "side");
  graph.set_finish_point("side");
  const auto app = graph.compile();

  const auto input = sg::set<&NestedOuter::my_key>(std::string("my value"))
                         .set<&NestedOuter::never_called>(std::string("never_called"));
  CHECK_STATE(app.invoke(input).state,
              R"({"my_key": "my value there and back again", "never_called": "never_called"})");
  CHECK(updates(app, input) == J(R"([{"inner": {"my_key": "my value there"}},
                                     {"side": {"my_key": "my value there and back again"}}])"));
  CHECK(values(app, input) == J(R"([{"my_key": "my value", "never_called": "never_called"},
              {"my_key": "my value there", "never_called": "never_called"},
              {"my_key": "my value there and back again", "never_called": "never_called"}])"));
}

namespace {
template <class Saver>
void subgraph_checkpoint_true(sg::Durability durability) {
  Saver saver;
  auto inner = inner_graph(
      [](const InnerState& s) {
        return sg::set<&InnerState::my_key>(std::string(" got here"))
            .set<&InnerState::my_other_key>(s.my_key);
      },
      [](const InnerState&) { return sg::set<&InnerState::my_key>(std::string(" and there")); });
  sg::CompileOptions persistent;
  persistent.subgraph_checkpointer = sg::SubgraphCheckpointer::persistent;  // checkpointer=True

  sg::StateGraph<KeyState> graph;
  add_inner(graph, "inner", inner.compile(persistent));
  graph.add_edge(sg::START, "inner");
  graph.add_conditional_edges("inner", [](const KeyState& s) {
    std::size_t count = 0;
    for (auto at = s.my_key.find("there"); at != std::string::npos;
         at = s.my_key.find("there", at + 1))
      ++count;
    return count < 2 ? "inner" : sg::END;
  });
  const auto app = graph.compile({.checkpointer = saver.get()});

  const auto config = with(sg::parity::thread("2"), durability);
  CHECK(updates(app, sg::set<&KeyState::my_key>(std::string("")), config, true) == J(R"([
    [["inner"], {"inner_1": {"my_key": " got here", "my_other_key": ""}}],
    [["inner"], {"inner_2": {"my_key": " and there"}}],
    [[], {"inner": {"my_key": " got here and there"}}],
    [["inner"], {"inner_1": {"my_key": " got here",
                             "my_other_key": " got here and there got here and there"}}],
    [["inner"], {"inner_2": {"my_key": " and there"}}],
    [[], {"inner": {"my_key": " got here and there got here and there got here and there"}}]])"));

  const auto checkpoints = app.get_state_history(config);
  CHECK(checkpoints.size() == (durability != sg::Durability::exit ? 4U : 1U));
}
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_subgraph_checkpoint_true (sync)", Saver,
                   SG_PARITY_SAVERS) {
  subgraph_checkpoint_true<Saver>(sg::Durability::sync);
}
TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_subgraph_checkpoint_true (async)", Saver,
                   SG_PARITY_SAVERS) {
  subgraph_checkpoint_true<Saver>(sg::Durability::async);
}
TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_subgraph_checkpoint_true (exit)", Saver,
                   SG_PARITY_SAVERS) {
  subgraph_checkpoint_true<Saver>(sg::Durability::exit);
}

namespace {
void subgraph_durability_inherited(sg::Durability durability) {
  // LangGraph makes its own InMemorySaver here, and compiles the subgraph with it too.
  sg::parity::MemorySaver saver;
  auto inner = inner_graph(
      [](const InnerState& s) {
        return sg::set<&InnerState::my_key>(std::string(" got here"))
            .set<&InnerState::my_other_key>(s.my_key);
      },
      [](const InnerState&) { return sg::set<&InnerState::my_key>(std::string(" and there")); });
  const auto inner_app = inner.compile({.checkpointer = saver.get()});
  sg::StateGraph<KeyState> graph;
  add_inner(graph, "inner", inner_app);
  graph.add_edge(sg::START, "inner");
  graph.add_conditional_edges("inner", [](const KeyState& s) {
    std::size_t count = 0;
    for (auto at = s.my_key.find("there"); at != std::string::npos;
         at = s.my_key.find("there", at + 1))
      ++count;
    return count < 2 ? "inner" : sg::END;
  });
  const auto app = graph.compile({.checkpointer = saver.get()});
  const std::string thread_id = "5f0c6a38-7d2e-4b8e-9a51-3c2f1d0e9b47";
  const sg::RunConfig config = with(sg::parity::thread(thread_id), durability);
  (void)app.invoke(sg::set<&KeyState::my_key>(std::string("")), config);
  // Every namespace of the thread: 4 of the parent, 4 for each of the 2 subgraph runs.
  const auto checkpoints = saver.get()->list({.thread_id = thread_id});
  CHECK(checkpoints.size() == (durability != sg::Durability::exit ? 12U : 1U));
}
}  // namespace

TEST_CASE("langgraph/test_pregel.py::test_subgraph_durability_inherited (sync)") {
  subgraph_durability_inherited(sg::Durability::sync);
}
TEST_CASE("langgraph/test_pregel.py::test_subgraph_durability_inherited (async)") {
  subgraph_durability_inherited(sg::Durability::async);
}
TEST_CASE("langgraph/test_pregel.py::test_subgraph_durability_inherited (exit)") {
  subgraph_durability_inherited(sg::Durability::exit);
}

namespace {
struct SubgraphState {
  // note that none of these keys are shared with the parent graph state
  std::string bar{};
  std::string baz{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"bar">(&SubgraphState::bar), sg::field<"baz">(&SubgraphState::baz)};
  }
};
struct ParentState {
  std::string foo{};
  static constexpr auto schema() { return std::tuple{sg::field<"foo">(&ParentState::foo)}; }
};

template <class Saver>
void subgraph_checkpoint_true_interrupt(sg::Durability durability) {
  Saver saver;
  sg::StateGraph<SubgraphState> subgraph_builder;
  subgraph_builder.add_node("subgraph_node_1", [](const SubgraphState&) {
    const auto baz_value = sg::interrupt("Provide baz value");
    return sg::set<&SubgraphState::baz>(baz_value.get<std::string>());
  });
  subgraph_builder.add_node("subgraph_node_2", [](const SubgraphState& s) {
    return sg::set<&SubgraphState::bar>(s.bar + s.baz);
  });
  subgraph_builder.add_edge(sg::START, "subgraph_node_1");
  subgraph_builder.add_edge("subgraph_node_1", "subgraph_node_2");
  sg::CompileOptions persistent;
  persistent.subgraph_checkpointer = sg::SubgraphCheckpointer::persistent;  // checkpointer=True
  const auto subgraph = subgraph_builder.compile(persistent);

  sg::StateGraph<ParentState> builder;
  builder.add_node("node_1",
                   [](const ParentState& s) { return sg::set<&ParentState::foo>("hi! " + s.foo); });
  // The subgraph is invoked from inside the node.
  builder.add_node("node_2", [subgraph](const ParentState& s) {
    const auto response = subgraph.invoke(sg::set<&SubgraphState::bar>(s.foo));
    return sg::set<&ParentState::foo>(response.state.bar);
  });
  builder.add_edge(sg::START, "node_1");
  builder.add_edge("node_1", "node_2");
  const auto graph = builder.compile({.checkpointer = saver.get()});
  const auto config = with(sg::parity::thread("1"), durability);

  const auto first = graph.invoke(sg::set<&ParentState::foo>(std::string("foo")), config);
  CHECK(first.state.foo == "hi! foo");
  REQUIRE(first.interrupts.size() == 1);
  CHECK(first.interrupts[0].value == "Provide baz value");
  CHECK_FALSE(first.interrupts[0].id.empty());
  // `graph.get_state(config, subgraphs=True).tasks[0].state.values == {"bar": "hi! foo"}`:
  // snapshots of subgraph tasks are not part of stategraph's TaskState.
  const auto second = graph.invoke(sg::Command<ParentState>{.resume = json("baz")}, config);
  CHECK_FALSE(second.interrupted());
  CHECK(second.state.foo == "hi! foobaz");
}
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_subgraph_checkpoint_true_interrupt (sync)",
                   Saver, SG_PARITY_SAVERS) {
  subgraph_checkpoint_true_interrupt<Saver>(sg::Durability::sync);
}
TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_subgraph_checkpoint_true_interrupt (async)",
                   Saver, SG_PARITY_SAVERS) {
  subgraph_checkpoint_true_interrupt<Saver>(sg::Durability::async);
}
TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_subgraph_checkpoint_true_interrupt (exit)",
                   Saver, SG_PARITY_SAVERS) {
  subgraph_checkpoint_true_interrupt<Saver>(sg::Durability::exit);
}

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_stream_subgraphs_during_execution", Saver,
                   SG_PARITY_SAVERS) {
  Saver saver;
  auto inner = inner_graph(
      [](const InnerState& s) {
        return sg::set<&InnerState::my_key>(std::string("got here"))
            .set<&InnerState::my_other_key>(s.my_key);
      },
      [](const InnerState& s) {
        std::this_thread::sleep_for(500ms);
        return sg::set<&InnerState::my_key>(std::string(" and there"))
            .set<&InnerState::my_other_key>(s.my_key);
      });
  sg::StateGraph<AddKeyState> graph;
  add_inner(graph, "inner", inner.compile());
  graph.add_node("outer_1", [](const AddKeyState&) {
    std::this_thread::sleep_for(200ms);
    return sg::set<&AddKeyState::my_key>(std::string(" and parallel"));
  });
  graph.add_node("outer_2", [](const AddKeyState&) {
    return sg::set<&AddKeyState::my_key>(std::string(" and back again"));
  });
  graph.add_edge(sg::START, "inner");
  graph.add_edge(sg::START, "outer_1");
  graph.add_edge({"inner", "outer_1"}, "outer_2");
  graph.add_edge("outer_2", sg::END);
  const auto app = graph.compile({.checkpointer = saver.get()});

  sg::RunConfig config = sg::parity::thread("2");
  config.stream_subgraphs = true;
  const auto start = Clock::now();
  std::vector<double> times;
  json chunks = json::array();
  {
    auto events =
        app.stream(sg::set<&AddKeyState::my_key>(std::string("")), config, sg::StreamMode::updates);
    for (auto& e : events) {
      times.push_back(round1(seconds_since(start)));
      chunks.push_back(json::array({ns_json(e.ns), chunk(e)}));
    }
  }
  for (auto& t : times) t = round1(t - times.front());

  CHECK(chunks == J(R"([
    [["inner:"], {"inner_1": {"my_key": "got here", "my_other_key": ""}}],
    [[], {"outer_1": {"my_key": " and parallel"}}],
    [["inner:"], {"inner_2": {"my_key": " and there", "my_other_key": "got here"}}],
    [[], {"inner": {"my_key": "got here and there"}}],
    [[], {"outer_2": {"my_key": " and back again"}}]])"));
  // arrives before "inner" finishes
  const std::vector<std::pair<double, double>> windows{
      {0.0, 0.1}, {0.2, 0.3}, {0.5, 0.8}, {0.5, 0.8}, {0.5, 0.8}};
  REQUIRE(times.size() == windows.size());
  for (std::size_t i = 0; i < times.size(); ++i) {
    CAPTURE(i);
    CAPTURE(times[i]);
    CHECK(between(times[i], windows[i].first, windows[i].second));
  }
}

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_stream_buffering_single_node", Saver,
                   SG_PARITY_SAVERS) {
  Saver saver;
  sg::StateGraph<AddKeyState> builder;
  builder.add_node("node", [](const AddKeyState&, sg::Context& ctx) {
    ctx.write("Before sleep");
    std::this_thread::sleep_for(200ms);
    ctx.write("After sleep");
    return sg::set<&AddKeyState::my_key>(std::string("got here"));
  });
  builder.add_edge(sg::START, "node");
  builder.add_edge("node", sg::END);
  const auto graph = builder.compile({.checkpointer = saver.get()});

  const auto start = Clock::now();
  std::vector<double> times;
  json chunks = json::array();
  {
    auto events = graph.stream(sg::set<&AddKeyState::my_key>(std::string("")),
                               sg::parity::thread("2"), sg::StreamMode::custom);
    for (auto& e : events) {
      times.push_back(round1(seconds_since(start)));
      chunks.push_back(e.data);
    }
  }
  CHECK(chunks == J(R"(["Before sleep", "After sleep"])"));
  REQUIRE(times.size() == 2);
  CAPTURE(times[0]);
  CAPTURE(times[1]);
  CHECK(between(times[0], 0.0, 0.1));
  CHECK(between(times[1], 0.2, 0.3));
}

namespace {
template <class Saver>
void nested_graph_interrupts_parallel(sg::Durability durability) {
  Saver saver;
  auto inner = inner_graph(
      [](const InnerState& s) {
        std::this_thread::sleep_for(100ms);
        return sg::set<&InnerState::my_key>(std::string("got here"))
            .set<&InnerState::my_other_key>(s.my_key);
      },
      [](const InnerState& s) {
        return sg::set<&InnerState::my_key>(std::string(" and there"))
            .set<&InnerState::my_other_key>(s.my_key);
      });
  sg::StateGraph<AddKeyState> graph;
  add_inner(graph, "inner", inner.compile({.interrupt_before = {"inner_2"}}));
  graph.add_node("outer_1", [](const AddKeyState&) {
    return sg::set<&AddKeyState::my_key>(std::string(" and parallel"));
  });
  graph.add_node("outer_2", [](const AddKeyState&) {
    return sg::set<&AddKeyState::my_key>(std::string(" and back again"));
  });
  graph.add_edge(sg::START, "inner");
  graph.add_edge(sg::START, "outer_1");
  graph.add_edge({"inner", "outer_1"}, "outer_2");
  graph.set_finish_point("outer_2");
  auto app = graph.compile({.checkpointer = saver.get()});
  const auto input = sg::set<&AddKeyState::my_key>(std::string(""));

  // test invoke w/ nested interrupt
  auto config = with(sg::parity::thread("1"), durability);
  CHECK(app.invoke(input, config).state.my_key == " and parallel");
  CHECK(app.resume(config).state.my_key == "got here and there and parallel and back again");

  // below combo of assertions is asserting two things
  // - outer_1 finishes before inner interrupts (because we see its output in stream, which only
  //   happens after node finishes)
  // - the writes of outer are persisted in 1st call and used in 2nd call, ie outer isn't called
  //   again (because we dont see outer_1 output again in 2nd stream)
  // test stream updates w/ nested interrupt
  config = with(sg::parity::thread("2"), durability);
  CHECK(updates(app, input, config, true) == J(R"([
    [[], {"outer_1": {"my_key": " and parallel"}}],
    [["inner:"], {"inner_1": {"my_key": "got here", "my_other_key": ""}}],
    [[], {"__interrupt__": []}]])"));
  CHECK(updates(app, std::nullopt, config) == J(R"([
    {"outer_1": {"my_key": " and parallel"}, "__metadata__": {"cached": true}},
    {"inner": {"my_key": "got here and there"}},
    {"outer_2": {"my_key": " and back again"}}])"));

  // test stream values w/ nested interrupt
  config = with(sg::parity::thread("3"), durability);
  CHECK(values(app, input, config) == J(R"([{"my_key": ""}, {"my_key": " and parallel"}])"));
  CHECK(values(app, std::nullopt, config) ==
        J(R"([{"my_key": ""}, {"my_key": "got here and there and parallel"},
              {"my_key": "got here and there and parallel and back again"}])"));

  // test interrupts BEFORE the parallel node
  app = graph.compile({.checkpointer = saver.get(), .interrupt_before = {"outer_1"}});
  config = with(sg::parity::thread("4"), durability);
  CHECK(values(app, input, config) == J(R"([{"my_key": ""}])"));
  // while we're waiting for the node w/ interrupt inside to finish
  CHECK(values(app, std::nullopt, config) == J(R"([{"my_key": ""}, {"my_key": " and parallel"}])"));
  CHECK(values(app, std::nullopt, config) ==
        J(R"([{"my_key": ""}, {"my_key": "got here and there and parallel"},
              {"my_key": "got here and there and parallel and back again"}])"));

  // test interrupts AFTER the parallel node
  app = graph.compile({.checkpointer = saver.get(), .interrupt_after = {"outer_1"}});
  config = with(sg::parity::thread("5"), durability);
  CHECK(values(app, input, config) == J(R"([{"my_key": ""}, {"my_key": " and parallel"}])"));
  CHECK(values(app, std::nullopt, config) ==
        J(R"([{"my_key": ""}, {"my_key": "got here and there and parallel"}])"));
  CHECK(values(app, std::nullopt, config) == J(R"([{"my_key": "got here and there and parallel"},
              {"my_key": "got here and there and parallel and back again"}])"));
}
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_nested_graph_interrupts_parallel (sync)", Saver,
                   SG_PARITY_SAVERS) {
  nested_graph_interrupts_parallel<Saver>(sg::Durability::sync);
}
TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_nested_graph_interrupts_parallel (async)", Saver,
                   SG_PARITY_SAVERS) {
  nested_graph_interrupts_parallel<Saver>(sg::Durability::async);
}
TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_nested_graph_interrupts_parallel (exit)", Saver,
                   SG_PARITY_SAVERS) {
  nested_graph_interrupts_parallel<Saver>(sg::Durability::exit);
}

namespace {
template <class Saver>
void doubly_nested_graph_interrupts(sg::Durability durability) {
  // State, ChildState and GrandChildState all have the one key my_key: one C++ state.
  Saver saver;
  sg::StateGraph<KeyState> grandchild;
  grandchild.add_node("grandchild_1", [](const KeyState& s) {
    return sg::set<&KeyState::my_key>(s.my_key + " here");
  });
  grandchild.add_node("grandchild_2", [](const KeyState& s) {
    return sg::set<&KeyState::my_key>(s.my_key + " and there");
  });
  grandchild.add_edge("grandchild_1", "grandchild_2");
  grandchild.set_entry_point("grandchild_1");
  grandchild.set_finish_point("grandchild_2");

  sg::StateGraph<KeyState> child;
  child.add_node("child_1", grandchild.compile({.interrupt_before = {"grandchild_2"}}));
  child.set_entry_point("child_1");
  child.set_finish_point("child_1");

  sg::StateGraph<KeyState> graph;
  graph.add_node("parent_1",
                 [](const KeyState& s) { return sg::set<&KeyState::my_key>("hi " + s.my_key); });
  graph.add_node("child", child.compile());
  graph.add_node("parent_2", [](const KeyState& s) {
    return sg::set<&KeyState::my_key>(s.my_key + " and back again");
  });
  graph.set_entry_point("parent_1");
  graph.add_edge("parent_1", "child");
  graph.add_edge("child", "parent_2");
  graph.set_finish_point("parent_2");
  const auto app = graph.compile({.checkpointer = saver.get()});
  const auto input = sg::set<&KeyState::my_key>(std::string("my value"));

  // test invoke w/ nested interrupt
  auto config = with(sg::parity::thread("1"), durability);
  CHECK(app.invoke(input, config).state.my_key == "hi my value");
  CHECK(app.resume(config).state.my_key == "hi my value here and there and back again");

  // test stream updates w/ nested interrupt
  // (LangGraph also records finished nodes through CONFIG_KEY_NODE_FINISHED, an internal config
  // key: ["parent_1", "grandchild_1"], then "grandchild_2", "child_1", "child", "parent_2".)
  config = with(sg::parity::thread("2"), durability);
  CHECK(updates(app, input, config) ==
        J(R"([{"parent_1": {"my_key": "hi my value"}}, {"__interrupt__": []}])"));
  CHECK(updates(app, std::nullopt, config) ==
        J(R"([{"child": {"my_key": "hi my value here and there"}},
              {"parent_2": {"my_key": "hi my value here and there and back again"}}])"));

  // test stream values w/ nested interrupt
  config = with(sg::parity::thread("3"), durability);
  CHECK(values(app, input, config) == J(R"([{"my_key": "my value"}, {"my_key": "hi my value"}])"));
  CHECK(values(app, std::nullopt, config) ==
        J(R"([{"my_key": "hi my value"}, {"my_key": "hi my value here and there"},
              {"my_key": "hi my value here and there and back again"}])"));
}
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_doubly_nested_graph_interrupts (sync)", Saver,
                   SG_PARITY_SAVERS) {
  doubly_nested_graph_interrupts<Saver>(sg::Durability::sync);
}
TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_doubly_nested_graph_interrupts (async)", Saver,
                   SG_PARITY_SAVERS) {
  doubly_nested_graph_interrupts<Saver>(sg::Durability::async);
}
TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_doubly_nested_graph_interrupts (exit)", Saver,
                   SG_PARITY_SAVERS) {
  doubly_nested_graph_interrupts<Saver>(sg::Durability::exit);
}

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_checkpoint_metadata", Saver, SG_PARITY_SAVERS) {
  // A run's configurable fields are merged into every checkpoint's metadata. The model is
  // LangGraph's FakeMessagesListChatModel (its responses in turn, shared by both graphs); the
  // tools node is ToolNode([search_api]).
  Saver saver;
  const std::vector<sg::Message> responses{
      sg::ai("", std::vector<sg::ToolCall>{{"tool_call123", "search_api", {{"query", "query"}}}}),
      sg::ai("answer")};
  std::atomic<std::size_t> calls{0};
  sg::StateGraph<sg::MessagesState> workflow;
  workflow.add_node("agent", [&](const sg::MessagesState&) {
    return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(
        responses[calls++ % responses.size()]);
  });
  workflow.add_node("tools", [](const sg::MessagesState& s) {
    std::vector<sg::Message> results;
    for (const auto& call : s.messages.back().tool_calls) {
      auto message = sg::tool("result for " + call.args.value("query", std::string()), call.id);
      message.name = call.name;
      results.push_back(message);
    }
    return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(results);
  });
  workflow.set_entry_point("agent");
  workflow.add_conditional_edges(
      "agent",
      [](const sg::MessagesState& data) {
        return data.messages.back().tool_calls.empty() ? "exit" : "continue";
      },
      sg::PathMap{{"continue", "tools"}, {"exit", sg::END}});
  workflow.add_edge("tools", "agent");
  // graph w/o interrupt
  const auto app = workflow.compile({.checkpointer = saver.get()});
  // graph w/ interrupt
  const auto app_w_interrupt =
      workflow.compile({.checkpointer = saver.get(), .interrupt_before = {"tools"}});
  const auto question = sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(
      sg::human("what is weather in sf"));

  // invoke graph w/o interrupt
  sg::RunConfig run1 = sg::parity::thread("1");
  run1.configurable = {{"test_config_1", "foo"}, {"test_config_2", "bar"}};
  const auto out = app.invoke(question, run1).state;
  REQUIRE(out.messages.size() == 4);
  CHECK(out.messages[0].type == sg::MessageType::human);
  CHECK(out.messages[0].content.str() == "what is weather in sf");
  CHECK(out.messages[1].type == sg::MessageType::ai);
  CHECK(out.messages[1].content.str().empty());
  CHECK(out.messages[1].tool_calls ==
        std::vector<sg::ToolCall>{{"tool_call123", "search_api", {{"query", "query"}}}});
  CHECK(out.messages[2].type == sg::MessageType::tool);
  CHECK(out.messages[2].content.str() == "result for query");
  CHECK(out.messages[2].name == "search_api");
  CHECK(out.messages[2].tool_call_id == "tool_call123");
  CHECK(out.messages[3].type == sg::MessageType::ai);
  CHECK(out.messages[3].content.str() == "answer");
  for (const auto& m : out.messages) CHECK_FALSE(m.id.empty());  // _AnyId...Message

  // assert that checkpoint metadata contains the run's configurable fields
  const auto metadata_1 = saver.get()->get_tuple({"1", "", ""})->metadata;
  CHECK(metadata_1.value("test_config_1", "") == "foo");
  CHECK(metadata_1.value("test_config_2", "") == "bar");
  // Verify that all checkpoint metadata have the expected keys.
  for (const auto& t : saver.get()->list({.thread_id = "1"})) {
    CHECK(t.metadata.value("test_config_1", "") == "foo");
    CHECK(t.metadata.value("test_config_2", "") == "bar");
  }

  // invoke graph, but interrupt before tool call
  sg::RunConfig run2 = sg::parity::thread("2");
  run2.configurable = {{"test_config_3", "foo"}, {"test_config_4", "bar"}};
  (void)app_w_interrupt.invoke(question, run2);
  const auto metadata_2 = saver.get()->get_tuple({"2", "", ""})->metadata;
  CHECK(metadata_2.value("test_config_3", "") == "foo");
  CHECK(metadata_2.value("test_config_4", "") == "bar");

  // resume graph execution
  (void)app_w_interrupt.resume(run2);
  const auto metadata_3 = saver.get()->get_tuple({"2", "", ""})->metadata;
  CHECK(metadata_3.value("test_config_3", "") == "foo");
  CHECK(metadata_3.value("test_config_4", "") == "bar");
  for (const auto& t : saver.get()->list({.thread_id = "2"})) {
    CHECK(t.metadata.value("test_config_3", "") == "foo");
    CHECK(t.metadata.value("test_config_4", "") == "bar");
  }
}

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_remove_message_via_state_update", Saver,
                   SG_PARITY_SAVERS) {
  // The state is `Annotated[list[AnyMessage], add_messages]`: MessagesState's one field.
  Saver saver;
  using M = sg::MessagesState;
  sg::StateGraph<M> workflow;
  workflow.add_node("chatbot", [](const M&) {
    return sg::Update<M>{}.set<&M::messages>(sg::ai("Hello! How can I help you"));
  });
  workflow.set_entry_point("chatbot");
  workflow.add_edge("chatbot", sg::END);
  const auto app = workflow.compile({.checkpointer = saver.get()});
  const auto config = sg::parity::thread("1");
  const auto output = app.invoke(sg::Update<M>{}.set<&M::messages>(sg::human("Hi")), config);
  REQUIRE_FALSE(output.state.messages.empty());
  (void)app.update_state(config, sg::Update<M>{}.set<&M::messages>(
                                     sg::remove_message(output.state.messages.back().id)));

  const auto updated_state = app.get_state(config);
  REQUIRE(updated_state);
  REQUIRE(updated_state->values.messages.size() == 1);
  CHECK(updated_state->values.messages.back().content.str() == "Hi");

  saver.get()->delete_thread("1");
  // Verify that the message was removed from the checkpointer
  CHECK_FALSE(saver.get()->get_tuple({"1", "", ""}));
  CHECK(app.get_state_history(config).empty());
}

TEST_CASE("langgraph/test_pregel.py::test_remove_message_from_node") {
  using M = sg::MessagesState;
  sg::StateGraph<M> workflow;
  workflow.add_node("chatbot", [](const M&) {
    return sg::Update<M>{}.set<&M::messages>(
        std::vector<sg::Message>{sg::ai("Hello!"), sg::ai("How can I help you?")});
  });
  workflow.add_node("delete_messages", [](const M& s) {
    return sg::Update<M>{}.set<&M::messages>(
        sg::remove_message(s.messages[s.messages.size() - 2].id));
  });
  workflow.set_entry_point("chatbot");
  workflow.add_edge("chatbot", "delete_messages");
  workflow.add_edge("delete_messages", sg::END);
  const auto output =
      workflow.compile().invoke(sg::Update<M>{}.set<&M::messages>(sg::human("Hi"))).state;
  CHECK(output.messages.size() == 2);
  REQUIRE_FALSE(output.messages.empty());
  CHECK(output.messages.back().content.str() == "How can I help you?");
}

namespace {
struct Count {
  int count = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"count">(&Count::count, std::plus<>{})};
  }
};
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_store_injected", Saver, SG_PARITY_SAVERS) {
  // sync_store: the in-memory store (LangGraph also runs it on Postgres).
  Saver saver;
  auto store = std::make_shared<sg::InMemoryStore>();
  const std::string doc_id = "0b4e6a7c-3d6f-4b1e-8f0a-2c9d5e7b1a34";
  const json doc = {{"some-key", "this-is-a-val"}};
  const sg::Namespace ns{"foo-8d2f0c4b6a1e4f3a9c7b5d1e0f2a4c6b", "bar"};
  const std::string thread_1 = "3b9d2a41-6c8e-4f0b-a1d7-5e2c9f8b0a63";
  const std::string thread_2 = "9e1f4c72-0a5b-4d3e-b8c6-7f2a1d0e5b94";

  const auto node = [&](std::optional<int> i) {
    return [&, i](const Count& inputs, sg::Context& ctx) {
      if (ctx.store() == nullptr)
        throw std::runtime_error("no store");  // isinstance(store, BaseStore)
      const std::string tid = ctx.config().thread_id;
      const sg::Namespace target =
          i && (tid == thread_1 || tid == thread_2)
              ? ns
              : sg::Namespace{"foo_" + (i ? std::to_string(*i) : std::string("None")), "bar"};
      json value = doc;
      value["from_thread"] = tid;
      value["some_val"] = inputs.count;
      ctx.store()->put(target, doc_id, value);
      return sg::set<&Count::count>(1);
    };
  };
  sg::StateGraph<Count> builder;
  builder.add_node("node", node(std::nullopt));
  builder.add_edge("__start__", "node");
  constexpr int N = 50;
  for (int i = 0; i < N; ++i) {
    builder.add_node("node_" + std::to_string(i), node(i));
    builder.add_edge("__start__", "node_" + std::to_string(i));
  }
  const auto graph = builder.compile({.checkpointer = saver.get(), .store = store});

  // graph.batch([{"count": 0}] * M) with M = 1: one run on thread_1
  auto result = graph.invoke(sg::set<&Count::count>(0), sg::parity::thread(thread_1));
  CHECK(result.state.count == N + 1);
  auto expected = doc;
  expected["from_thread"] = thread_1;
  expected["some_val"] = 0;
  auto returned = store->get(ns, doc_id);
  REQUIRE(returned);
  CHECK(returned->value == expected);
  CHECK(store->search({.prefix = ns}).size() == 1);

  // Check results after another turn of the same thread
  result = graph.invoke(sg::set<&Count::count>(0), sg::parity::thread(thread_1));
  CHECK(result.state.count == (N + 1) * 2);
  expected["some_val"] = N + 1;
  returned = store->get(ns, doc_id);
  REQUIRE(returned);
  CHECK(returned->value == expected);
  CHECK(store->search({.prefix = ns}).size() == 1);

  result = graph.invoke(sg::set<&Count::count>(0), sg::parity::thread(thread_2));
  CHECK(result.state.count == N + 1);
  expected["from_thread"] = thread_2;
  expected["some_val"] = 0;
  returned = store->get(ns, doc_id);
  REQUIRE(returned);
  CHECK(returned->value == expected);                // Overwrites the whole doc
  CHECK(store->search({.prefix = ns}).size() == 1);  // still overwriting the same one
}

namespace {
/// LangGraph's `lax_normalize_config`: the thread, namespace and checkpoint of a config, from a
/// debug payload ({"configurable": {...}} as in LangGraph, or the fields themselves) or a
/// snapshot.
json conf(const json& config) {
  if (config.is_null()) return nullptr;
  const json& c = config.contains("configurable") ? config["configurable"] : config;
  return {{"thread_id", c.value("thread_id", "")},
          {"checkpoint_ns", c.value("checkpoint_ns", "")},
          {"checkpoint_id", c.value("checkpoint_id", "")}};
}
json conf(const sg::CheckpointConfig& c) {
  return {{"thread_id", c.thread_id},
          {"checkpoint_ns", c.checkpoint_ns},
          {"checkpoint_id", c.checkpoint_id}};
}
json conf(const std::optional<sg::CheckpointConfig>& c) {
  return c ? conf(*c) : json(nullptr);
}

/// LangGraph's comparison of a debug "checkpoint" payload with a get_state_history snapshot.
template <sg::State S>
void check_checkpoint_event(const json& stream, const sg::StateSnapshot<S>& history) {
  CHECK(stream.value("values", json()) == sg::state_to_json(history.values));
  CHECK(stream.value("next", json()) == json(history.next));
  CHECK(conf(stream.value("config", json())) == conf(history.config));
  CHECK(conf(stream.value("parent_config", json())) == conf(history.parent_config));
  const json tasks = stream.value("tasks", json::array());
  REQUIRE(tasks.size() == history.tasks.size());
  for (std::size_t k = 0; k < tasks.size(); ++k) {
    const auto& task = history.tasks[k];
    CHECK(tasks[k].value("id", "") == task.id);
    CHECK(tasks[k].value("name", "") == task.name);
    CHECK(tasks[k].value("interrupts", json::array()).size() == task.interrupts.size());
    const json error = tasks[k].value("error", json());
    CHECK((error.is_null() ? std::string() : error.get<std::string>()) == task.error);
    // `stream_task.get("state") == history_task.state`: subgraph snapshots of tasks are not
    // part of stategraph's TaskState.
  }
}

/// The graph of test_debug_retry / test_debug_subgraphs: nodes that log their name.
const auto log_node = [](std::string name) {
  return [name](const Msgs&) {
    return sg::set<&Msgs::messages>(Strings{"entered " + name + " node"});
  };
};
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_debug_retry", Saver, SG_PARITY_SAVERS) {
  Saver saver;
  sg::StateGraph<Msgs> builder;
  builder.add_node("one", log_node("one"));
  builder.add_node("two", log_node("two"));
  builder.add_edge(sg::START, "one");
  builder.add_edge("one", "two");
  builder.add_edge("two", sg::END);
  const auto graph = builder.compile({.checkpointer = saver.get()});
  const auto config = sg::parity::thread("1");
  (void)graph.invoke(sg::set<&Msgs::messages>(Strings{}), with(config, sg::Durability::async));

  // re-run step: 1
  std::optional<sg::CheckpointConfig> target_config;
  for (const auto& c : saver.get()->list({.thread_id = "1"})) {
    if (c.metadata.value("step", -99) == 1) {
      target_config = c.parent_config;
      break;
    }
  }
  REQUIRE(target_config);
  const auto update_config = graph.update_state(sg::parity::at(*target_config), {});  // values=None

  std::vector<json> checkpoint_events;
  (void)graph.stream(std::nullopt, with(sg::parity::at(update_config), sg::Durability::async),
                     sg::StreamMode::debug, [&](const sg::StreamEvent<Msgs>& e) {
                       if (e.data.value("type", "") == "checkpoint")
                         checkpoint_events.push_back(e.data["payload"]);
                     });
  std::reverse(checkpoint_events.begin(), checkpoint_events.end());
  // LangGraph's loop below would pass on an empty list; the re-run does stream checkpoints.
  CHECK_FALSE(checkpoint_events.empty());

  std::map<std::string, sg::StateSnapshot<Msgs>> checkpoint_history;
  for (const auto& c : graph.get_state_history(config))
    checkpoint_history.emplace(c.config.checkpoint_id, c);
  for (const auto& stream : checkpoint_events) {
    const json stream_conf = conf(stream.value("config", json()));
    const json stream_parent_conf = conf(stream.value("parent_config", json()));
    CHECK(stream_conf != stream_parent_conf);
    // ensure the streamed checkpoint == checkpoint from checkpointer.list()
    const auto found = checkpoint_history.find(stream_conf.value("checkpoint_id", ""));
    REQUIRE(found != checkpoint_history.end());
    CHECK(stream_conf == conf(found->second.config));
    CHECK(stream_parent_conf == conf(found->second.parent_config));
  }
}

namespace {
template <class Saver>
void debug_subgraphs(sg::Durability durability) {
  Saver saver;
  sg::StateGraph<Msgs> child;
  child.add_node("c_one", log_node("c_one"));
  child.add_node("c_two", log_node("c_two"));
  child.add_edge(sg::START, "c_one");
  child.add_edge("c_one", "c_two");
  child.add_edge("c_two", sg::END);
  sg::StateGraph<Msgs> parent;
  parent.add_node("p_one", log_node("p_one"));
  parent.add_node("p_two", child.compile());
  parent.add_edge(sg::START, "p_one");
  parent.add_edge("p_one", "p_two");
  parent.add_edge("p_two", sg::END);
  const auto graph = parent.compile({.checkpointer = saver.get()});

  const auto config = sg::parity::thread("1");
  std::vector<json> checkpoint_events;
  (void)graph.stream(sg::set<&Msgs::messages>(Strings{}), with(config, durability),
                     sg::StreamMode::debug, [&](const sg::StreamEvent<Msgs>& e) {
                       if (e.data.value("type", "") == "checkpoint")
                         checkpoint_events.push_back(e.data["payload"]);
                     });
  std::reverse(checkpoint_events.begin(), checkpoint_events.end());
  if (durability == sg::Durability::exit && !checkpoint_events.empty()) checkpoint_events.resize(1);
  const auto checkpoint_history = graph.get_state_history(config);

  CHECK(checkpoint_events.size() == checkpoint_history.size());
  for (std::size_t i = 0; i < checkpoint_events.size() && i < checkpoint_history.size(); ++i) {
    CAPTURE(i);
    check_checkpoint_event(checkpoint_events[i], checkpoint_history[i]);
  }
}
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_debug_subgraphs (sync)", Saver,
                   SG_PARITY_SAVERS) {
  debug_subgraphs<Saver>(sg::Durability::sync);
}
TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_debug_subgraphs (async)", Saver,
                   SG_PARITY_SAVERS) {
  debug_subgraphs<Saver>(sg::Durability::async);
}
TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_debug_subgraphs (exit)", Saver,
                   SG_PARITY_SAVERS) {
  debug_subgraphs<Saver>(sg::Durability::exit);
}

namespace {
template <class Saver>
void debug_nested_subgraphs(sg::Durability durability) {
  Saver saver;
  sg::StateGraph<Msgs> child;
  child.add_node("c_one", log_node("c_one"));
  child.add_node("c_two", log_node("c_two"));
  child.add_edge(sg::START, "c_one");
  child.add_edge("c_one", "c_two");
  child.add_edge("c_two", sg::END);
  sg::StateGraph<Msgs> parent;
  parent.add_node("p_one", log_node("p_one"));
  parent.add_node("p_two", child.compile());
  parent.add_edge(sg::START, "p_one");
  parent.add_edge("p_one", "p_two");
  parent.add_edge("p_two", sg::END);
  sg::StateGraph<Msgs> grand_parent;
  grand_parent.add_node("gp_one", log_node("gp_one"));
  grand_parent.add_node("gp_two", parent.compile());
  grand_parent.add_edge(sg::START, "gp_one");
  grand_parent.add_edge("gp_one", "gp_two");
  grand_parent.add_edge("gp_two", sg::END);
  const auto graph = grand_parent.compile({.checkpointer = saver.get()});

  sg::RunConfig config = with(sg::parity::thread("1"), durability);
  config.stream_subgraphs = true;
  // The checkpoint payloads of each namespace, namespaces in order of appearance.
  std::vector<std::pair<std::vector<std::string>, std::vector<json>>> stream_ns;
  (void)graph.stream(sg::set<&Msgs::messages>(Strings{}), config, sg::StreamMode::debug,
                     [&](const sg::StreamEvent<Msgs>& e) {
                       if (e.data.value("type", "") != "checkpoint") return;
                       auto at =
                           std::find_if(stream_ns.begin(), stream_ns.end(),
                                        [&](const auto& entry) { return entry.first == e.ns; });
                       if (at == stream_ns.end()) {
                         stream_ns.emplace_back(e.ns, std::vector<json>{});
                         at = std::prev(stream_ns.end());
                       }
                       at->second.push_back(e.data["payload"]);
                     });
  json keys = json::array();
  for (const auto& entry : stream_ns) keys.push_back(ns_json(entry.first));
  CHECK(keys == J(R"([[], ["gp_two:"], ["gp_two:", "p_two:"]])"));

  for (auto& [ns, checkpoint_events] : stream_ns) {
    std::string joined;
    for (const auto& part : ns) joined += (joined.empty() ? "" : "|") + part;
    CAPTURE(joined);
    sg::RunConfig at_ns = sg::parity::thread("1");
    at_ns.checkpoint_ns = joined;
    auto checkpoint_history = graph.get_state_history(at_ns);
    std::reverse(checkpoint_history.begin(), checkpoint_history.end());
    if (durability == sg::Durability::exit) {
      if (!checkpoint_events.empty())
        checkpoint_events.erase(checkpoint_events.begin(), checkpoint_events.end() - 1);
      if (!ns.empty()) {  // Save no checkpoints for subgraphs when durability="exit"
        CHECK(checkpoint_history.empty());
        continue;
      }
    }
    CHECK(checkpoint_events.size() == checkpoint_history.size());
    for (std::size_t i = 0; i < checkpoint_events.size() && i < checkpoint_history.size(); ++i) {
      CAPTURE(i);
      check_checkpoint_event(checkpoint_events[i], checkpoint_history[i]);
    }
  }
}
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_debug_nested_subgraphs (sync)", Saver,
                   SG_PARITY_SAVERS) {
  debug_nested_subgraphs<Saver>(sg::Durability::sync);
}
TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_debug_nested_subgraphs (async)", Saver,
                   SG_PARITY_SAVERS) {
  debug_nested_subgraphs<Saver>(sg::Durability::async);
}
TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_debug_nested_subgraphs (exit)", Saver,
                   SG_PARITY_SAVERS) {
  debug_nested_subgraphs<Saver>(sg::Durability::exit);
}

namespace {
struct SeqState {
  Strings foo{};
  std::string bar{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"foo">(&SeqState::foo, sg::concat),
                      sg::field<"bar">(&SeqState::bar)};
  }
};
sg::Update<SeqState> foo(std::string value) {
  return sg::set<&SeqState::foo>(Strings{std::move(value)});
}
}  // namespace

TEST_CASE("langgraph/test_pregel.py::test_add_sequence") {
  using Steps = std::vector<std::pair<std::string, sg::Node<SeqState>>>;
  const auto step1 = [](const SeqState&) {
    return foo("step1").set<&SeqState::bar>(std::string("baz"));
  };
  const auto step2 = [](const SeqState&) { return foo("step2"); };
  const auto empty = sg::set<&SeqState::foo>(Strings{});

  // test raising if less than 1 steps
  CHECK_THROWS_AS(sg::StateGraph<SeqState>().add_sequence({}), sg::GraphValidationError);
  // test raising if duplicate step names (C++ steps are always named)
  CHECK_THROWS_AS(
      sg::StateGraph<SeqState>().add_sequence(Steps{{"step1", step1}, {"step1", step1}}),
      sg::GraphValidationError);
  CHECK_THROWS_AS(sg::StateGraph<SeqState>().add_sequence(Steps{{"foo", step1}, {"foo", step1}}),
                  sg::GraphValidationError);

  // test unnamed steps (named after their functions in LangGraph)
  {
    sg::StateGraph<SeqState> builder;
    builder.add_sequence(Steps{{"step1", step1}, {"step2", step2}});
    builder.add_edge(sg::START, "step1");
    const auto graph = builder.compile();
    CHECK_STATE(graph.invoke(empty).state, R"({"foo": ["step1", "step2"], "bar": "baz"})");
    CHECK(updates(graph, empty) == J(R"([{"step1": {"foo": ["step1"], "bar": "baz"}},
                                         {"step2": {"foo": ["step2"]}}])"));
  }
  // test named steps
  {
    sg::StateGraph<SeqState> builder;
    builder.add_sequence(Steps{{"meow1", step1}, {"meow2", step2}});
    builder.add_edge(sg::START, "meow1");
    const auto graph = builder.compile();
    CHECK_STATE(graph.invoke(empty).state, R"({"foo": ["step1", "step2"], "bar": "baz"})");
    CHECK(updates(graph, empty) == J(R"([{"meow1": {"foo": ["step1"], "bar": "baz"}},
                                         {"meow2": {"foo": ["step2"]}}])"));
  }
  {
    sg::StateGraph<SeqState> builder;
    builder.add_sequence(Steps{
        {"meow1", [](const SeqState&) { return foo("foo"); }},
        {"meow2", [](const SeqState& s) { return sg::set<&SeqState::bar>(s.foo.at(0) + "bar"); }}});
    builder.add_edge(sg::START, "meow1");
    const auto graph = builder.compile();
    CHECK_STATE(graph.invoke(empty).state, R"({"bar": "foobar", "foo": ["foo"]})");
    CHECK(updates(graph, empty) ==
          J(R"([{"meow1": {"foo": ["foo"]}}, {"meow2": {"bar": "foobar"}}])"));
  }

  // test two sequences
  const auto a = [](const SeqState&) { return foo("a"); };
  const auto b = [](const SeqState&) { return foo("b"); };
  {
    sg::StateGraph<SeqState> builder;
    builder.add_sequence(Steps{{"a", a}});
    builder.add_sequence(Steps{{"b", b}});
    builder.add_edge(sg::START, "a");
    builder.add_edge("a", "b");
    const auto graph = builder.compile();
    CHECK_STATE(graph.invoke(empty).state, R"({"foo": ["a", "b"]})");
    CHECK(updates(graph, empty) == J(R"([{"a": {"foo": ["a"]}}, {"b": {"foo": ["b"]}}])"));
  }

  // test mixed nodes and sequences
  {
    sg::StateGraph<SeqState> builder;
    builder.add_sequence(Steps{{"a", a}, {"b", b}});
    builder.add_conditional_edges(
        "b", [](const SeqState& state) { return state.foo.at(0) == "a" ? "d" : "c"; });
    builder.add_node("c", [](const SeqState&) { return foo("c"); });
    builder.add_sequence(Steps{{"d", [](const SeqState&) { return foo("d"); }},
                               {"e", [](const SeqState&) { return foo("e"); }}});
    builder.add_edge(sg::START, "a");
    const auto graph = builder.compile();
    CHECK_STATE(graph.invoke(empty).state, R"({"foo": ["a", "b", "d", "e"]})");
    CHECK_STATE(graph.invoke(sg::set<&SeqState::foo>(Strings{"start"})).state,
                R"({"foo": ["start", "a", "b", "c"]})");
    CHECK(updates(graph, empty) == J(R"([{"a": {"foo": ["a"]}}, {"b": {"foo": ["b"]}},
                                         {"d": {"foo": ["d"]}}, {"e": {"foo": ["e"]}}])"));
  }
}
