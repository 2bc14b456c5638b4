// SPDX-License-Identifier: MIT
// LangGraph's tests/test_pregel.py, from test_multiple_subgraphs to the end of the file (the second
// half of the tests from line 4744 on; test_pregel_2a.cpp has the first). See README.md.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "parity.hpp"
#include "pregel_2_common.hpp"

using nlohmann::json;
using sg::parity::Strings;
namespace sgp = sg::parity;
using namespace std::chrono_literals;

namespace {

Strings sorted(Strings v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// test_multiple_subgraphs
// ---------------------------------------------------------------------------------------------

namespace {
// LangGraph's State {a, b} with output schemas {result} and {add_result, multiply_result}: one
// C++ state with all the keys; the checks read the output schema's keys.
struct AddMulState {
  int a = 0;
  int b = 0;
  int result = 0;
  int add_result = 0;
  int multiply_result = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"a">(&AddMulState::a), sg::field<"b">(&AddMulState::b),
                      sg::field<"result">(&AddMulState::result),
                      sg::field<"add_result">(&AddMulState::add_result),
                      sg::field<"multiply_result">(&AddMulState::multiply_result)};
  }
};
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_multiple_subgraphs", Saver, SG_PARITY_SAVERS) {
  using S = AddMulState;
  Saver saver;
  sg::StateGraph<S> add_builder;
  add_builder.add_node("add", [](const S& s) { return sg::set<&S::result>(s.a + s.b); });
  add_builder.add_edge(sg::START, "add");
  const auto add_subgraph = add_builder.compile();

  sg::StateGraph<S> multiply_builder;
  multiply_builder.add_node("multiply", [](const S& s) { return sg::set<&S::result>(s.a * s.b); });
  multiply_builder.add_edge(sg::START, "multiply");
  const auto multiply_subgraph = multiply_builder.compile();

  // The same subgraph called twice from one node.
  sg::StateGraph<S> same_builder;
  same_builder.add_node("call_same_subgraph", [add_subgraph](const S& s) {
    const auto result = add_subgraph.invoke(sg::set<&S::a>(s.a).set<&S::b>(s.b)).state;
    const auto another = add_subgraph.invoke(sg::set<&S::a>(result.result).set<&S::b>(10)).state;
    return sg::set<&S::result>(another.result);
  });
  same_builder.add_edge(sg::START, "call_same_subgraph");
  const auto parent_call_same_subgraph = same_builder.compile({.checkpointer = saver.get()});
  CHECK(parent_call_same_subgraph.invoke(sg::set<&S::a>(2).set<&S::b>(3), sgp::thread("1"))
            .state.result == 15);

  // Two subgraphs called from one node.
  sg::StateGraph<S> multiple_builder;
  multiple_builder.add_node(
      "call_multiple_subgraphs", [add_subgraph, multiply_subgraph](const S& s) {
        const auto add_result = add_subgraph.invoke(sg::set<&S::a>(s.a).set<&S::b>(s.b)).state;
        const auto multiply_result =
            multiply_subgraph.invoke(sg::set<&S::a>(s.a).set<&S::b>(s.b)).state;
        return sg::set<&S::add_result>(add_result.result)
            .set<&S::multiply_result>(multiply_result.result);
      });
  multiple_builder.add_edge(sg::START, "call_multiple_subgraphs");
  const auto parent_call_multiple_subgraphs =
      multiple_builder.compile({.checkpointer = saver.get()});
  const auto out =
      parent_call_multiple_subgraphs.invoke(sg::set<&S::a>(2).set<&S::b>(3), sgp::thread("2"));
  CHECK(out.state.add_result == 5);
  CHECK(out.state.multiply_result == 6);
}

// ---------------------------------------------------------------------------------------------
// test_multiple_subgraphs_checkpointer
// ---------------------------------------------------------------------------------------------

namespace {
// LangGraph's SubgraphState {sub_counter}, OtherSubgraphState {other_sub_counter} and
// ParentState {parent_counter} as one C++ state, so that the parent's stream events can hold the
// subgraphs' updates; each graph reads and writes only its own keys.
struct CountersState {
  int sub_counter = 0;
  int other_sub_counter = 0;
  int parent_counter = 0;
  static constexpr auto schema() {
    return std::tuple{
        sg::field<"sub_counter">(&CountersState::sub_counter, [](int a, int b) { return a + b; }),
        sg::field<"other_sub_counter">(&CountersState::other_sub_counter,
                                       [](int a, int b) { return a + b; }),
        sg::field<"parent_counter">(&CountersState::parent_counter)};
  }
};
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_multiple_subgraphs_checkpointer", Saver,
                   SG_PARITY_SAVERS) {
  using S = CountersState;
  Saver saver;
  sg::StateGraph<S> sub1_builder;
  sub1_builder.add_node("subgraph_node", [](const S&) { return sg::set<&S::sub_counter>(2); });
  sub1_builder.add_edge(sg::START, "subgraph_node");
  sg::CompileOptions persistent;
  persistent.subgraph_checkpointer = sg::SubgraphCheckpointer::persistent;  // checkpointer=True
  const auto sub_graph_1 = sub1_builder.compile(persistent);

  sg::StateGraph<S> sub2_builder;
  sub2_builder.add_node("other_subgraph_node",
                        [](const S&) { return sg::set<&S::other_sub_counter>(3); });
  sub2_builder.add_edge(sg::START, "other_subgraph_node");
  const auto sub_graph_2 = sub2_builder.compile();

  sg::StateGraph<S> parent_builder;
  parent_builder.add_node("parent_node", [sub_graph_1, sub_graph_2](const S& s) {
    const auto result = sub_graph_1.invoke(sg::set<&S::sub_counter>(s.parent_counter)).state;
    const auto other = sub_graph_2.invoke(sg::set<&S::other_sub_counter>(result.sub_counter)).state;
    return sg::set<&S::parent_counter>(other.other_sub_counter);
  });
  parent_builder.add_edge(sg::START, "parent_node");
  const auto parent_graph = parent_builder.compile({.checkpointer = saver.get()});

  CHECK(
      parent_graph.invoke(sg::set<&S::parent_counter>(0), sgp::thread("1")).state.parent_counter ==
      5);
  CHECK(
      parent_graph.invoke(sg::set<&S::parent_counter>(0), sgp::thread("1")).state.parent_counter ==
      7);

  auto config = sgp::thread("2");
  config.stream_subgraphs = true;
  for (int expected : {5, 7}) {
    const auto events =
        collect(parent_graph, sg::set<&S::parent_counter>(0), config, sg::StreamMode::updates);
    REQUIRE(events.size() == 3);
    // (("parent_node",), {"subgraph_node": {"sub_counter": 2}})
    CHECK(events[0].ns == Strings{"parent_node"});
    CHECK(line(events[0]) == R"(subgraph_node {"sub_counter":2})");
    // ((AnyStr("parent_node:"), "1"), {"other_subgraph_node": {"other_sub_counter": 3}})
    REQUIRE(events[1].ns.size() == 2);
    CHECK(events[1].ns[0].rfind("parent_node:", 0) == 0);
    CHECK(events[1].ns[1] == "1");
    CHECK(line(events[1]) == R"(other_subgraph_node {"other_sub_counter":3})");
    // ((), {"parent_node": {"parent_counter": 5 | 7}})
    CHECK(events[2].ns.empty());
    CHECK(line(events[2]) == "parent_node {\"parent_counter\":" + std::to_string(expected) + "}");
  }
}

// ---------------------------------------------------------------------------------------------
// test_node_destinations
// ---------------------------------------------------------------------------------------------

namespace {
struct FooAddState {
  std::string foo{};
  static constexpr auto schema() {
    return std::tuple{
        sg::field<"foo">(&FooAddState::foo, [](std::string a, std::string b) { return a + b; })};
  }
};

sg::CompiledGraph<FooAddState> destinations_subgraph() {
  using S = FooAddState;
  sg::StateGraph<S> sub;
  sub.add_node("node_a", [](const S& s) {
    const std::string go_to = s.foo == "a" ? "node_b" : "node_c";
    return sg::Command<S>{.update = sg::set<&S::foo>(s.foo), .go_to = {go_to}, .graph = sg::PARENT};
  });
  sub.add_edge(sg::START, "node_a");
  return sub.compile();
}

/// LangGraph's loop body: "child" (the subgraph, or a function calling it) with destinations
/// node_b and node_c. LangGraph also checks get_graph().edges (drawing: not ported) and repeats
/// the run with destinations given as a dict, which only labels those edges.
void node_destinations(sg::Node<FooAddState> child, bool child_is_graph,
                       const sg::CompiledGraph<FooAddState>& subgraph) {
  using S = FooAddState;
  sg::StateGraph<S> builder;
  builder.add_edge(sg::START, "child");
  if (child_is_graph) {
    builder.add_node("child", subgraph, {.destinations = {"node_b", "node_c"}});
  } else {
    builder.add_node("child", std::move(child), {.destinations = {"node_b", "node_c"}});
  }
  builder.add_node("node_b", [](const S&) { return sg::set<&S::foo>(std::string("b")); });
  builder.add_node("node_c", [](const S&) { return sg::set<&S::foo>(std::string("c")); });
  const auto compiled = builder.compile();
  const auto out = compiled.invoke(sg::set<&S::foo>(std::string()));
  CHECK(out.state.foo == "c");
}
}  // namespace

TEST_CASE("langgraph/test_pregel.py::test_node_destinations (subgraph node)") {
  const auto subgraph = destinations_subgraph();
  node_destinations([](const FooAddState&) {}, true, subgraph);
}

TEST_CASE("langgraph/test_pregel.py::test_node_destinations (subgraph called in a node)") {
  // LangGraph: def call_subgraph(state): return subgraph.invoke(state); the subgraph's
  // Command(graph=PARENT) reaches the parent through the node.
  const auto subgraph = destinations_subgraph();
  node_destinations(
      [subgraph](const FooAddState& s) {
        return sg::Update<FooAddState>::from_state(subgraph.invoke(s).state);
      },
      false, subgraph);
}

// ---------------------------------------------------------------------------------------------
// test_get_stream_writer
// ---------------------------------------------------------------------------------------------

namespace {
struct FooState {
  std::string foo{};
  static constexpr auto schema() { return std::tuple{sg::field<"foo">(&FooState::foo)}; }
};
}  // namespace

TEST_CASE("langgraph/test_pregel.py::test_get_stream_writer") {
  using S = FooState;
  sg::StateGraph<S> builder;
  builder.add_node("my_node", [](const S& state) {
    // get_stream_writer(): the current node's writer.
    sg::current_context()->write("custom!");
    return sg::Update<S>::from_state(state);
  });
  builder.add_edge(sg::START, "my_node");
  const auto graph = builder.compile();
  const auto input = sg::set<&S::foo>(std::string("bar"));

  CHECK(lines(collect(graph, input, {}, sg::StreamMode::custom)) == Strings{R"(custom "custom!")"});
  CHECK(lines(collect(graph, input, {}, sg::StreamMode::values)) ==
        Strings{R"(values {"foo":"bar"})", R"(values {"foo":"bar"})"});
  CHECK(lines(collect(graph, input, {}, sg::StreamMode::custom | sg::StreamMode::updates)) ==
        Strings{R"(custom "custom!")", R"(my_node {"foo":"bar"})"});
}

// ---------------------------------------------------------------------------------------------
// test_interrupt_subgraph_reenter_checkpointer_true
// ---------------------------------------------------------------------------------------------

namespace {
struct ReenterSub {
  std::string foo{};
  json bar{};  // LangGraph reads state.get("bar"): None until written
  static constexpr auto schema() {
    return std::tuple{sg::field<"foo">(&ReenterSub::foo), sg::field<"bar">(&ReenterSub::bar)};
  }
};
struct ReenterParent {
  std::string foo{};
  int counter = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"foo">(&ReenterParent::foo),
                      sg::field<"counter">(&ReenterParent::counter)};
  }
};

struct Recorder {
  std::mutex mu;
  Strings called;
  std::vector<json> bar_values;
  void call(const std::string& name) {
    std::lock_guard lock(mu);
    called.push_back(name);
  }
  void bar(const json& value) {
    std::lock_guard lock(mu);
    bar_values.push_back(value);
  }
};
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_interrupt_subgraph_reenter_checkpointer_true",
                   Saver, SG_PARITY_SAVERS) {
  using Sub = ReenterSub;
  using P = ReenterParent;
  Saver saver;
  auto rec = std::make_shared<Recorder>();

  sg::StateGraph<Sub> sub_builder;
  sub_builder.add_node("subnode_1", [rec](const Sub& s) {
    rec->call("subnode_1");
    rec->bar(s.bar);
    return sg::set<&Sub::foo>(std::string("subgraph_1"));
  });
  sub_builder.add_node("subnode_2", [rec](const Sub&) {
    rec->call("subnode_2");
    const auto value = sg::interrupt("Provide value").get<std::string>() + "baz";
    return sg::set<&Sub::foo>(std::string("subgraph_2")).set<&Sub::bar>(json(value));
  });
  sub_builder.add_edge(sg::START, "subnode_1").add_edge("subnode_1", "subnode_2");
  sg::CompileOptions sub_options;
  sub_options.subgraph_checkpointer = sg::SubgraphCheckpointer::persistent;  // checkpointer=True
  const auto subgraph = sub_builder.compile(sub_options);

  sg::StateGraph<P> parent_builder;
  parent_builder.add_node("call_subgraph", [rec, subgraph](const P& s) {
    rec->call("call_subgraph");
    // subgraph.invoke(state): the subgraph's input keys are foo (and bar).
    const auto out = subgraph.invoke(sg::set<&Sub::foo>(s.foo));
    return sg::set<&P::foo>(out.state.foo);
  });
  parent_builder.add_node("node", [rec](const P& s) {
    rec->call("parent");
    if (s.counter < 1) {
      return sg::Command<P>{.update = sg::set<&P::counter>(s.counter + 1),
                            .go_to = {"call_subgraph"}};
    }
    return sg::Command<P>{.update = sg::set<&P::foo>(s.foo + "|parent")};
  });
  parent_builder.add_edge(sg::START, "call_subgraph").add_edge("call_subgraph", "node");
  const auto parent = parent_builder.compile({.checkpointer = saver.get()});
  const auto config = sgp::thread("1");

  auto r = parent.invoke(sg::set<&P::foo>(std::string()).set<&P::counter>(0), config);
  CHECK(r.interrupted());
  CHECK(r.state.foo.empty());
  CHECK(r.state.counter == 0);
  REQUIRE(r.interrupts.size() == 1);
  CHECK(r.interrupts[0].value == "Provide value");
  CHECK_FALSE(r.interrupts[0].id.empty());

  r = parent.invoke(sg::Command<P>{.resume = json("bar")}, config);
  CHECK(r.interrupted());
  CHECK(r.state.foo == "subgraph_2");
  CHECK(r.state.counter == 1);
  REQUIRE(r.interrupts.size() == 1);
  CHECK(r.interrupts[0].value == "Provide value");

  r = parent.invoke(sg::Command<P>{.resume = json("qux")}, config);
  CHECK_FALSE(r.interrupted());
  CHECK(r.state.foo == "subgraph_2|parent");
  CHECK(r.state.counter == 1);
  {
    std::lock_guard lock(rec->mu);
    CHECK(rec->called == Strings{"call_subgraph", "subnode_1", "subnode_2", "call_subgraph",
                                 "subnode_2", "parent", "call_subgraph", "subnode_1", "subnode_2",
                                 "call_subgraph", "subnode_2", "parent"});
  }

  // A new turn of the parent.
  r = parent.invoke(sg::set<&P::foo>(std::string("meow")).set<&P::counter>(0), config);
  CHECK(r.interrupted());
  CHECK(r.state.foo == "meow");
  CHECK(r.state.counter == 0);
  REQUIRE(r.interrupts.size() == 1);
  CHECK(r.interrupts[0].value == "Provide value");
  // The subgraph kept its state values from the previous invocations.
  std::lock_guard lock(rec->mu);
  CHECK(rec->bar_values == std::vector<json>{json(), json("barbaz"), json("quxbaz")});
}

// ---------------------------------------------------------------------------------------------
// test_empty_invoke
// ---------------------------------------------------------------------------------------------

namespace {
struct EmptyInvokeState {
  Strings x1{};
  json x2 = json::object();
  static constexpr auto schema() {
    return std::tuple{sg::field<"x1">(&EmptyInvokeState::x1, sg::concat),
                      sg::field<"x2">(&EmptyInvokeState::x2, [](json a, json b) {
                        // reducer_merge_dicts: {**dict1, **dict2}
                        if (!a.is_object()) a = json::object();
                        for (auto it = b.begin(); it != b.end(); ++it) a[it.key()] = it.value();
                        return a;
                      })};
  }
};
}  // namespace

TEST_CASE("langgraph/test_pregel.py::test_empty_invoke") {
  using S = EmptyInvokeState;
  sg::StateGraph<S> graph;
  graph.add_node("x1_1_node", [](const S&) { return sg::set<&S::x1>(Strings{"111"}); });
  graph.add_node("x1_2_node", [](const S&) { return sg::set<&S::x1>(Strings{"222"}); });
  graph.add_node("x2_1_node", [](const S&) { return sg::set<&S::x2>(json{{"111", 111}}); });
  graph.add_node("x2_2_node", [](const S&) { return sg::set<&S::x2>(json{{"222", 222}}); });
  graph.add_edge("x1_1_node", "x1_2_node");
  graph.add_edge("x1_2_node", "x2_1_node");
  graph.add_edge("x2_1_node", "x2_2_node");
  graph.add_edge(sg::START, "x1_1_node");
  graph.add_edge("x2_2_node", sg::END);
  const auto compiled = graph.compile();
  CHECK(compiled.invoke(S{}).state.x2 == json{{"111", 111}, {"222", 222}});
}

// ---------------------------------------------------------------------------------------------
// test_parallel_interrupts / test_parallel_interrupts_double
// ---------------------------------------------------------------------------------------------

namespace {
struct PIChild {
  std::string prompt{};
  std::string human_input{};
  Strings human_inputs{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"prompt">(&PIChild::prompt),
                      sg::field<"human_input">(&PIChild::human_input),
                      sg::field<"human_inputs">(&PIChild::human_inputs, sg::concat)};
  }
};
struct PIParent {
  Strings prompts{};
  Strings human_inputs{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"prompts">(&PIParent::prompts),
                      sg::field<"human_inputs">(&PIParent::human_inputs, sg::concat)};
  }
};
}  // namespace

namespace {
/// The parent graph: a Send per prompt to the child graph, then cleanup. LangGraph sends
/// {"prompt": prompt}; a C++ subgraph node of another state type takes the parent's state, so
/// each Send carries a parent state whose only prompt is the child's (to_child reads it).
sg::CompiledGraph<PIParent> parallel_interrupts_graph(std::shared_ptr<sg::Checkpointer> saver,
                                                      bool twice) {
  using C = PIChild;
  using P = PIParent;
  sg::StateGraph<C> child_builder;
  child_builder.add_node("get_human_input", [twice](const C& s) {
    const auto human_input = sg::interrupt(s.prompt).get<std::string>();
    if (twice) return sg::set<&C::human_inputs>(Strings{human_input});
    return sg::set<&C::human_input>(human_input).set<&C::human_inputs>(Strings{human_input});
  });
  child_builder.add_edge(sg::START, "get_human_input");
  if (twice) {
    child_builder.add_node("get_dolphin_input", [](const C& s) {
      return sg::set<&C::human_inputs>(Strings{sg::interrupt(s.prompt).get<std::string>()});
    });
    child_builder.add_edge(sg::START, "get_dolphin_input");
  } else {
    child_builder.add_edge("get_human_input", sg::END);
  }
  const auto child_graph = child_builder.compile();

  sg::StateGraph<P> parent_builder;
  parent_builder.add_node(
      "child_graph", child_graph,
      [](const P& p) { return sg::set<&C::prompt>(p.prompts.empty() ? "" : p.prompts[0]); },
      [](const C& c) { return sg::set<&P::human_inputs>(c.human_inputs); });
  parent_builder.add_node("cleanup", [twice](const P& s) {
    if (s.human_inputs.size() != s.prompts.size() * (twice ? 2 : 1))
      throw std::runtime_error("cleanup: wrong number of human inputs");
  });
  parent_builder.add_conditional_edges(sg::START,
                                       [](const P& s) {
                                         std::vector<sg::Send> sends;
                                         for (const auto& prompt : s.prompts)
                                           sends.emplace_back("child_graph",
                                                              P{.prompts = {prompt}});
                                         return sends;
                                       },
                                       {"child_graph"});
  parent_builder.add_edge("child_graph", "cleanup").add_edge("cleanup", sg::END);
  return parent_builder.compile({.checkpointer = std::move(saver)});
}

/// LangGraph's client loop: stream, resume the first interrupt seen, until none is left.
int run_parallel_interrupts(const sg::CompiledGraph<PIParent>& app,
                            std::map<int, Strings>& events) {
  using P = PIParent;
  const auto config = sgp::thread("4f6a2b1c-parallel-interrupts");
  std::optional<sg::Command<P>> command;
  int invokes = 0;
  while (invokes < 10) {
    ++invokes;
    std::vector<sg::Interrupt> current;
    auto sink = [&](const sg::StreamEvent<P>& e) {
      std::string text = line(e);
      if (text == "cleanup {}") text = "cleanup null";  // LangGraph: {"cleanup": None}
      events[invokes].push_back(text);
      if (e.node == sg::INTERRUPT)
        current.insert(current.end(), e.interrupts.begin(), e.interrupts.end());
    };
    if (command) {
      (void)app.stream(*command, config, sg::StreamMode::updates, sink);
    } else {
      (void)app.stream(sg::set<&P::prompts>(Strings{"a", "b"}), config, sg::StreamMode::updates,
                       sink);
    }
    if (current.empty()) break;
    // Resume one interrupt at a time.
    command = sg::Command<P>{.resume = json{{current[0].id, "Resume #" + std::to_string(invokes)}}};
  }
  return invokes;
}
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_parallel_interrupts", Saver, SG_PARITY_SAVERS) {
  Saver saver;
  const auto app = parallel_interrupts_graph(saver.get(), false);
  std::map<int, Strings> events;
  CHECK(run_parallel_interrupts(app, events) == 3);
  CHECK(events.size() == 3);
  CHECK(sorted(events[1]) == sorted({R"(__interrupt__ ["a"])", R"(__interrupt__ ["b"])"}));
  const auto second = sorted(events[2]);
  CHECK((second ==
             sorted({R"(__interrupt__ ["a"])", R"(child_graph {"human_inputs":["Resume #1"]})"}) ||
         second ==
             sorted({R"(__interrupt__ ["b"])", R"(child_graph {"human_inputs":["Resume #1"]})"})));
  CHECK(sorted(events[3]) ==
        sorted({R"(child_graph {"human_inputs":["Resume #1"]} cached)",
                R"(child_graph {"human_inputs":["Resume #2"]})", "cleanup null"}));
}

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_parallel_interrupts_double", Saver,
                   SG_PARITY_SAVERS) {
  Saver saver;
  const auto app = parallel_interrupts_graph(saver.get(), true);
  std::map<int, Strings> events;
  CHECK(run_parallel_interrupts(app, events) == 5);
  CHECK(events.size() == 5);
}

// ---------------------------------------------------------------------------------------------
// test_bulk_state_updates
// ---------------------------------------------------------------------------------------------

namespace {
struct FooBazState {
  std::string foo{};
  std::string baz{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"foo">(&FooBazState::foo), sg::field<"baz">(&FooBazState::baz)};
  }
};
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_bulk_state_updates", Saver, SG_PARITY_SAVERS) {
  using S = FooBazState;
  using SU = sg::StateUpdate<S>;
  using Steps = std::vector<std::vector<SU>>;
  Saver saver;
  sg::StateGraph<S> builder;
  builder.add_node("node_a", [](const S&) { return sg::set<&S::foo>(std::string("bar")); });
  builder.add_node("node_b", [](const S&) { return sg::set<&S::baz>(std::string("qux")); });
  builder.add_edge(sg::START, "node_a").add_edge("node_a", "node_b");
  const auto graph = builder.compile({.checkpointer = saver.get()});

  auto config = sgp::thread("1");
  // First update with node_a.
  (void)graph.bulk_update_state(
      config, Steps{{SU{.values = sg::set<&S::foo>(std::string("bar")), .as_node = "node_a"}}});
  // Then a bulk update with both nodes.
  (void)graph.bulk_update_state(
      config, Steps{{SU{.values = sg::set<&S::foo>(std::string("updated")), .as_node = "node_a"},
                     SU{.values = sg::set<&S::baz>(std::string("new")), .as_node = "node_b"}}});
  auto state = graph.get_state(config);
  REQUIRE(state);
  CHECK(state->values.foo == "updated");
  CHECK(state->values.baz == "new");
  // Only two checkpoints.
  CHECK(saver.get()->list({.thread_id = "1"}).size() == 2);

  // Several supersteps at once.
  config = sgp::thread("2");
  (void)graph.bulk_update_state(
      config, Steps{{SU{.values = sg::set<&S::foo>(std::string("bar")), .as_node = "node_a"}},
                    {SU{.values = sg::set<&S::foo>(std::string("updated")), .as_node = "node_a"},
                     SU{.values = sg::set<&S::baz>(std::string("new")), .as_node = "node_b"}}});
  state = graph.get_state(config);
  REQUIRE(state);
  CHECK(state->values.foo == "updated");
  CHECK(state->values.baz == "new");
  CHECK(saver.get()->list({.thread_id = "2"}).size() == 2);

  // Several updates without as_node. (LangGraph's second update writes "bar", a key its state
  // does not have; the error is about the missing as_node.)
  CHECK_THROWS_AS((void)graph.bulk_update_state(
                      config, Steps{{SU{.values = sg::set<&S::foo>(std::string("error"))},
                                     SU{.values = sg::set<&S::baz>(std::string("error"))}}}),
                  sg::InvalidUpdateError);

  // No supersteps (LangGraph: ValueError).
  auto error = caught<sg::Error>([&] { (void)graph.bulk_update_state(config, Steps{}); });
  CHECK(error.of_type);
  CHECK(contains(error.what, "No supersteps provided"));

  // Supersteps without updates: [[], []].
  error = caught<sg::Error>([&] { (void)graph.bulk_update_state(config, Steps(2)); });
  CHECK(error.of_type);
  CHECK(contains(error.what, "No updates provided"));

  // __end__ or __copy__ in a bulk superstep.
  CHECK_THROWS_AS((void)graph.bulk_update_state(
                      config, Steps{{SU{.as_node = sg::END}, SU{.as_node = "__copy__"}}}),
                  sg::InvalidUpdateError);
}

// ---------------------------------------------------------------------------------------------
// test_update_as_input
// ---------------------------------------------------------------------------------------------

namespace {
/// values, next and step of each snapshot (LangGraph's map_snapshot).
template <class S>
Strings map_history(const std::vector<sg::StateSnapshot<S>>& history) {
  Strings out;
  for (const auto& s : history) {
    std::string next;
    for (const auto& n : s.next) next += (next.empty() ? "" : ",") + n;
    out.push_back("values=" + sg::state_to_json(s.values).dump() + " next=" + next +
                  " step=" + s.metadata.value("step", json()).dump());
  }
  return out;
}

template <class Saver>
void update_as_input(sg::Durability durability) {
  using S = FooState;
  using SU = sg::StateUpdate<S>;
  using Steps = std::vector<std::vector<SU>>;
  Saver saver;
  sg::StateGraph<S> builder;
  builder.add_node("agent", [](const S&) { return sg::set<&S::foo>(std::string("agent")); });
  builder.add_node("tool", [](const S&) { return sg::set<&S::foo>(std::string("tool")); });
  builder.add_edge(sg::START, "agent").add_edge("agent", "tool");
  const auto graph = builder.compile({.checkpointer = saver.get()});

  auto config = sgp::thread("1");
  config.durability = durability;
  CHECK(graph.invoke(sg::set<&S::foo>(std::string("input")), config).state.foo == "tool");
  CHECK(graph.invoke(sg::set<&S::foo>(std::string("input")), config).state.foo == "tool");
  const auto history = map_history(graph.get_state_history(sgp::thread("1")));

  auto turn = [](Steps& steps) {
    steps.push_back({SU{.values = sg::set<&S::foo>(std::string("input")), .as_node = "__input__"}});
    steps.push_back({SU{.values = sg::set<&S::foo>(std::string("input")), .as_node = "__start__"}});
    steps.push_back({SU{.values = sg::set<&S::foo>(std::string("agent")), .as_node = "agent"}});
    steps.push_back({SU{.values = sg::set<&S::foo>(std::string("tool")), .as_node = "tool"}});
  };
  Steps steps;
  turn(steps);  // first turn
  turn(steps);  // second turn
  (void)graph.bulk_update_state(sgp::thread("2"), steps);

  const auto state = graph.get_state(sgp::thread("2"));
  REQUIRE(state);
  CHECK(state->values.foo == "tool");

  const auto new_history = map_history(graph.get_state_history(sgp::thread("2")));
  if (durability != sg::Durability::exit) {
    CHECK(new_history == history);
  } else {
    REQUIRE(new_history.size() > 4);
    CHECK(Strings{new_history[0], new_history[4]} == history);
  }
}
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_update_as_input (durability=sync)", Saver,
                   SG_PARITY_SAVERS) {
  update_as_input<Saver>(sg::Durability::sync);
}
TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_update_as_input (durability=async)", Saver,
                   SG_PARITY_SAVERS) {
  update_as_input<Saver>(sg::Durability::async);
}
TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_update_as_input (durability=exit)", Saver,
                   SG_PARITY_SAVERS) {
  update_as_input<Saver>(sg::Durability::exit);
}

// ---------------------------------------------------------------------------------------------
// test_parent_command_goto
// ---------------------------------------------------------------------------------------------

namespace {
struct DialogState {
  Strings dialog_state{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"dialog_state">(&DialogState::dialog_state, sg::concat)};
  }
};
}  // namespace

namespace {
enum class TimeoutAt { none, inner, outer, both };

/// LangGraph sets `step_timeout = 1` on the inner graph, the outer graph or both; here a 1 s
/// NodeOptions::timeout on every node of that graph.
template <class Saver>
void parent_command_goto(sg::SubgraphCheckpointer subgraph_persist, TimeoutAt with_timeout) {
  using S = DialogState;
  Saver saver;
  const bool inner = with_timeout == TimeoutAt::inner || with_timeout == TimeoutAt::both;
  const bool outer = with_timeout == TimeoutAt::outer || with_timeout == TimeoutAt::both;
  const sg::NodeOptions inner_options{.timeout = inner ? 1000ms : 0ms};

  sg::StateGraph<S> sub_builder;
  sub_builder.add_node(
      "node_a_child", [](const S&) { return sg::set<&S::dialog_state>(Strings{"a_child_state"}); },
      inner_options);
  sub_builder.add_node(
      "node_b_child",
      [](const S&) {
        return sg::Command<S>{.update = sg::set<&S::dialog_state>(Strings{"b_child_state"}),
                              .go_to = {"node_b_parent"},
                              .graph = sg::PARENT};
      },
      inner_options);
  sub_builder.add_edge(sg::START, "node_a_child").add_edge("node_a_child", "node_b_child");
  sg::CompileOptions sub_options;
  sub_options.subgraph_checkpointer = subgraph_persist;
  const auto sub_graph = sub_builder.compile(sub_options);

  sg::StateGraph<S> main_builder;
  main_builder.add_node(
      "node_b_parent", [](const S&) { return sg::set<&S::dialog_state>(Strings{"node_b_parent"}); },
      {.timeout = outer ? 1000ms : 0ms});
  main_builder.add_edge(sg::START, "subgraph_node");
  main_builder.add_node("subgraph_node", sub_graph,
                        {.timeout = outer ? 1000ms : 0ms, .destinations = {"node_b_parent"}});
  const auto main_graph = main_builder.compile({.checkpointer = saver.get(), .name = "parent"});

  const auto out =
      main_graph.invoke(sg::set<&S::dialog_state>(Strings{"init_state"}), sgp::thread("1"));
  CHECK(out.state.dialog_state == Strings{"init_state", "b_child_state", "node_b_parent"});
}
}  // namespace

#define SG_PARENT_COMMAND_GOTO(PERSIST, PERSIST_NAME, TIMEOUT, TIMEOUT_NAME)               \
  TEST_CASE_TEMPLATE(                                                                      \
      "langgraph/test_pregel.py::test_parent_command_goto (subgraph_persist=" PERSIST_NAME \
      " with_timeout=" TIMEOUT_NAME ")",                                                   \
      Saver, SG_PARITY_SAVERS) {                                                           \
    parent_command_goto<Saver>(sg::SubgraphCheckpointer::PERSIST, TimeoutAt::TIMEOUT);     \
  }

SG_PARENT_COMMAND_GOTO(persistent, "True", none, "False")
SG_PARENT_COMMAND_GOTO(persistent, "True", inner, "inner")
SG_PARENT_COMMAND_GOTO(persistent, "True", outer, "outer")
SG_PARENT_COMMAND_GOTO(persistent, "True", both, "both")
SG_PARENT_COMMAND_GOTO(disabled, "False", none, "False")
SG_PARENT_COMMAND_GOTO(disabled, "False", inner, "inner")
SG_PARENT_COMMAND_GOTO(disabled, "False", outer, "outer")
SG_PARENT_COMMAND_GOTO(disabled, "False", both, "both")
#undef SG_PARENT_COMMAND_GOTO

// ---------------------------------------------------------------------------------------------
// test_parent_command_goto_deeply_nested
// ---------------------------------------------------------------------------------------------

namespace {
template <class Saver>
void parent_command_goto_deeply_nested(sg::SubgraphCheckpointer subgraph_persist) {
  using S = DialogState;
  Saver saver;
  sg::CompileOptions sub_options;
  sub_options.subgraph_checkpointer = subgraph_persist;

  // Level 3: the deepest subgraph issues Command.PARENT to sub_child_3 of its parent (sub_graph).
  sg::StateGraph<S> sub_sub_builder;
  sub_sub_builder.add_node("sub_sub_child", [](const S&) {
    return sg::Command<S>{.update = sg::set<&S::dialog_state>(Strings{"sub_sub_child"}),
                          .go_to = {"sub_child_3"},
                          .graph = sg::PARENT};
  });
  sub_sub_builder.add_edge(sg::START, "sub_sub_child");
  sub_options.name = "sub_sub_graph";
  const auto sub_sub_graph = sub_sub_builder.compile(sub_options);

  // Level 2: the middle subgraph containing level 3.
  sg::StateGraph<S> sub_builder;
  sub_builder.add_node("sub_child_1",
                       [](const S&) { return sg::set<&S::dialog_state>(Strings{"sub_child_1"}); });
  sub_builder.add_node("sub_child_2", sub_sub_graph, {.destinations = {"sub_child_3"}});
  sub_builder.add_node("sub_child_3",
                       [](const S&) { return sg::set<&S::dialog_state>(Strings{"sub_child_3"}); });
  sub_builder.add_edge(sg::START, "sub_child_1").add_edge("sub_child_1", "sub_child_2");
  sub_options.name = "sub_graph";
  const auto sub_graph = sub_builder.compile(sub_options);

  // Level 1: the main graph containing level 2.
  sg::StateGraph<S> builder;
  builder.add_node("child_1",
                   [](const S&) { return sg::set<&S::dialog_state>(Strings{"child_1"}); });
  builder.add_node("child_2", sub_graph);
  builder.add_edge(sg::START, "child_1").add_edge("child_1", "child_2");
  const auto graph = builder.compile({.checkpointer = saver.get(), .name = "main_graph"});

  const auto result = graph.invoke(sg::set<&S::dialog_state>(Strings{"init"}), sgp::thread("1"));
  // The subgraph's final state (its input included) merges into the parent through operator.add,
  // so the input appears twice.
  CHECK(result.state.dialog_state == Strings{"init", "child_1", "init", "child_1", "sub_child_1",
                                             "sub_sub_child", "sub_child_3"});
}
}  // namespace

TEST_CASE_TEMPLATE(
    "langgraph/test_pregel.py::test_parent_command_goto_deeply_nested (subgraph_persist=True)",
    Saver, SG_PARITY_SAVERS) {
  parent_command_goto_deeply_nested<Saver>(sg::SubgraphCheckpointer::persistent);
}
TEST_CASE_TEMPLATE(
    "langgraph/test_pregel.py::test_parent_command_goto_deeply_nested (subgraph_persist=False)",
    Saver, SG_PARITY_SAVERS) {
  parent_command_goto_deeply_nested<Saver>(sg::SubgraphCheckpointer::disabled);
}

// ---------------------------------------------------------------------------------------------
// test_timeout_with_parent_command
// ---------------------------------------------------------------------------------------------

namespace {
struct ValueState {
  std::string value{};
  static constexpr auto schema() { return std::tuple{sg::field<"value">(&ValueState::value)}; }
};

template <class Saver>
void timeout_with_parent_command(bool with_timeout) {
  using S = ValueState;
  Saver saver;
  sg::StateGraph<S> builder;
  builder.add_node("parent_cmd",
                   [](const S&) {
                     std::this_thread::sleep_for(100ms);  // some delay before the command
                     // LangGraph's update is {"key": "value"}, a key the state does not have.
                     return sg::Command<S>{.update = sg::set<&S::value>(std::string("value")),
                                           .go_to = {"test_cmd"},
                                           .graph = sg::PARENT};
                   },
                   {.timeout = with_timeout ? 1000ms : 0ms});  // LangGraph: graph.step_timeout = 1
  builder.set_entry_point("parent_cmd");
  const auto graph = builder.compile({.checkpointer = saver.get()});

  // LangGraph: the ParentCommand propagates to the caller (not a timeout), carrying
  // goto == "test_cmd" and the update. stategraph has no public exception carrying the command,
  // so only "an error that is not a timeout" is checked.
  const auto error = caught<sg::NodeTimeoutError>(
      [&] { (void)graph.invoke(sg::set<&S::value>(std::string("start")), sgp::thread("1")); });
  CHECK(error.what != "(no exception)");
  CHECK_FALSE(error.of_type);
}
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_timeout_with_parent_command (with_timeout=True)",
                   Saver, SG_PARITY_SAVERS) {
  timeout_with_parent_command<Saver>(true);
}
TEST_CASE_TEMPLATE(
    "langgraph/test_pregel.py::test_timeout_with_parent_command (with_timeout=False)", Saver,
    SG_PARITY_SAVERS) {
  timeout_with_parent_command<Saver>(false);
}

// ---------------------------------------------------------------------------------------------
// test_fork_and_update_task_results
// ---------------------------------------------------------------------------------------------

namespace {
struct NameState {
  std::string name{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"name">(&NameState::name, [](std::string a, std::string b) {
      return a.empty() ? b : a + " > " + b;
    })};
  }
};
}  // namespace

namespace {
json tree_checkpoint(const std::string& name) {
  return json::array({"checkpoint", json{{"values", json{{"name", name}}}}});
}
json tree_task(const std::string& node, const json& result) {
  return json::array({"task", json{{"name", node}, {"result", result}}});
}
json tree_task(const std::string& node, const std::string& name) {
  return tree_task(node, json{{"name", name}});
}

/// LangGraph's get_tree: the history as nested lists, checkpoints and their tasks' results, a list
/// of branches where a checkpoint has several children.
json get_tree(const std::vector<sg::StateSnapshot<NameState>>& history) {
  if (history.empty()) return json::array();
  std::map<std::string, std::size_t> index;
  std::vector<std::vector<std::size_t>> children(history.size());
  std::vector<std::size_t> roots;
  for (std::size_t k = history.size(); k-- > 0;) {
    const auto& item = history[k];
    index[item.config.checkpoint_id] = k;
    const auto parent =
        item.parent_config ? index.find(item.parent_config->checkpoint_id) : index.end();
    (parent != index.end() ? children[parent->second] : roots).push_back(k);
  }
  std::function<json(std::size_t)> node_to_tree = [&](std::size_t k) {
    json result = json::array({tree_checkpoint(history[k].values.name)});
    for (const auto& t : history[k].tasks) result.push_back(tree_task(t.name, t.result));
    if (children[k].size() > 1) {
      json branches = json::array();
      for (auto c : children[k]) branches.push_back(node_to_tree(c));
      result.push_back(branches);
    } else if (children[k].size() == 1) {
      for (const auto& x : node_to_tree(children[k][0])) result.push_back(x);
    }
    return result;
  };
  if (roots.size() == 1) return node_to_tree(roots[0]);
  json branches = json::array();
  for (auto r : roots) branches.push_back(node_to_tree(r));
  return branches;
}

/// LangGraph's update_state(config, [StateUpdate...], as_node="__copy__"): copies the
/// checkpoint, then applies the updates as one superstep on the copy.
template <class App>
sg::CheckpointConfig copy_and_update(const App& graph, const sg::CheckpointConfig& at,
                                     std::vector<sg::StateUpdate<NameState>> updates) {
  const auto copied = graph.update_state(sgp::at(at), sg::Update<NameState>{}, "__copy__");
  if (updates.empty()) return copied;
  return graph.bulk_update_state(sgp::at(copied), {std::move(updates)});
}
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_fork_and_update_task_results", Saver,
                   SG_PARITY_SAVERS) {
  using S = NameState;
  using SU = sg::StateUpdate<S>;
  Saver saver;
  sg::StateGraph<S> builder;
  builder.add_node("one", [](const S&) {
    return sg::Command<S>{.update = sg::set<&S::name>(std::string("one")),
                          .go_to = {sg::Send("two", S{})}};
  });
  builder.add_node("two", [](const S&) { return sg::set<&S::name>(std::string("two")); });
  builder.add_node("three", [](const S&) { return sg::set<&S::name>(std::string("three")); });
  builder.add_edge(sg::START, "one").add_edge("one", "two").add_edge("two", "three");
  const auto graph = builder.compile({.checkpointer = saver.get()});

  const auto cp = tree_checkpoint;
  auto tk = [](const std::string& node, const std::string& name) { return tree_task(node, name); };
  auto run = [&](const std::string& start) {
    return json::array({cp(start), tk("one", "one"), cp(start + " > one"), tk("two", "two"),
                        tk("two", "two"), cp(start + " > one > two > two"), tk("three", "three"),
                        cp(start + " > one > two > two > three")});
  };
  auto with_root = [&](const std::string& start, json rest) {
    json out = json::array({cp(""), tk("__start__", start)});
    for (auto& x : rest) out.push_back(x);
    return out;
  };

  auto config = sgp::thread("1");
  // The initial run.
  (void)graph.invoke(sg::set<&S::name>(std::string("start")), config);
  auto history = graph.get_state_history(config);
  const json first_run = with_root("start", run("start"));
  CHECK(get_tree(history) == first_run);

  // Update the start state.
  REQUIRE(history.size() > 4);
  (void)graph.resume(sgp::at(copy_and_update(
      graph, history[4].config,
      {SU{.values = sg::set<&S::name>(std::string("start*")), .as_node = "__start__"}})));
  history = graph.get_state_history(config);
  CHECK(get_tree(history) == json::array({first_run, with_root("start*", run("start*"))}));

  // Fork from task "one": start from the checkpoint that has the task "one".
  REQUIRE(history.size() > 3);
  CHECK(history[3].values.name == "start*");
  REQUIRE(history[3].tasks.size() == 1);
  CHECK(history[3].tasks[0].name == "one");
  (void)graph.resume(sgp::at(
      copy_and_update(graph, history[3].config,
                      {SU{.values = sg::set<&S::name>(std::string("one*")), .as_node = "one"}})));
  history = graph.get_state_history(config);
  const json one_star_branch = json::array(
      {cp("start*"), tk("one", "one*"), cp("start* > one*"), tk("two", "two"),
       cp("start* > one* > two"), tk("three", "three"), cp("start* > one* > two > three")});
  CHECK(get_tree(history) ==
        json::array({first_run, json::array({cp(""), tk("__start__", "start*"),
                                             json::array({run("start*"), one_star_branch})})}));

  config = sgp::thread("2");
  // Initialize the thread once again.
  (void)graph.invoke(sg::set<&S::name>(std::string("start")), config);
  history = graph.get_state_history(config);

  // Fork from task "two": start from the checkpoint that has the task "two".
  REQUIRE(history.size() > 2);
  CHECK(history[2].values.name == "start > one");
  (void)graph.resume(sgp::at(
      copy_and_update(graph, history[2].config,
                      {SU{.values = sg::set<&S::name>(std::string("two")), .as_node = "two"},
                       SU{.values = sg::set<&S::name>(std::string("two")), .as_node = "two"}})));
  history = graph.get_state_history(config);
  const auto after_two = [&](json inner) {
    return json::array({cp(""), tk("__start__", "start"), cp("start"), tk("one", "one"), inner});
  };
  const json two_branch = json::array({cp("start > one"), tk("two", "two"), tk("two", "two"),
                                       cp("start > one > two > two"), tk("three", "three"),
                                       cp("start > one > two > two > three")});
  CHECK(get_tree(history) == after_two(json::array({two_branch, two_branch})));

  // Fork task three.
  REQUIRE(history.size() > 1);
  CHECK(history[1].values.name == "start > one > two > two");
  REQUIRE(history[1].tasks.size() == 1);
  CHECK(history[1].tasks[0].name == "three");
  (void)graph.resume(sgp::at(copy_and_update(
      graph, history[1].config,
      {SU{.values = sg::set<&S::name>(std::string("three*")), .as_node = "three"}})));
  history = graph.get_state_history(config);
  const json three_branch = json::array(
      {cp("start > one > two > two"), tk("three", "three"), cp("start > one > two > two > three")});
  const json three_star_branch = json::array({cp("start > one > two > two"), tk("three", "three*"),
                                              cp("start > one > two > two > three*")});
  auto forked_two = [&](json branches) {
    return json::array({cp("start > one"), tk("two", "two"), tk("two", "two"), branches});
  };
  CHECK(get_tree(history) ==
        after_two(
            json::array({two_branch, forked_two(json::array({three_branch, three_star_branch}))})));

  // Regenerate task three.
  REQUIRE(history.size() > 3);
  CHECK(history[3].values.name == "start > one > two > two");
  REQUIRE(history[3].tasks.size() == 1);
  CHECK(history[3].tasks[0].name == "three");
  (void)graph.resume(sgp::at(copy_and_update(graph, history[3].config, {})));
  history = graph.get_state_history(config);
  CHECK(get_tree(history) ==
        after_two(json::array({two_branch, forked_two(json::array({three_branch, three_star_branch,
                                                                   three_branch}))})));
}

// ---------------------------------------------------------------------------------------------
// test_null_resume_disallowed_with_multiple_interrupts
// ---------------------------------------------------------------------------------------------

namespace {
struct TextsState {
  std::string text_1{};
  std::string text_2{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"text_1">(&TextsState::text_1),
                      sg::field<"text_2">(&TextsState::text_2)};
  }
};
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_null_resume_disallowed_with_multiple_interrupts",
                   Saver, SG_PARITY_SAVERS) {
  using S = TextsState;
  Saver saver;
  sg::StateGraph<S> builder;
  builder.add_node("human_node_1", [](const S& s) {
    return sg::set<&S::text_1>(
        sg::interrupt(json{{"text_to_revise", s.text_1}}).get<std::string>());
  });
  builder.add_node("human_node_2", [](const S& s) {
    return sg::set<&S::text_2>(
        sg::interrupt(json{{"text_to_revise", s.text_2}}).get<std::string>());
  });
  // Both nodes in parallel from START.
  builder.add_edge(sg::START, "human_node_1").add_edge(sg::START, "human_node_2");
  const auto graph = builder.compile({.checkpointer = saver.get()});
  const auto config = sgp::thread("2d4e6f80-null-resume");

  (void)graph.invoke(sg::set<&S::text_1>(std::string("original text 1"))
                         .set<&S::text_2>(std::string("original text 2")),
                     config);
  const auto state = graph.get_state(config);
  REQUIRE(state);
  json resume_map = json::object();
  for (const auto& i : state->interrupts)
    resume_map[i.id] =
        "resume for prompt: " + i.value["text_to_revise"].template get<std::string>();

  // LangGraph: RuntimeError.
  const auto error = caught<sg::Error>(
      [&] { (void)graph.invoke(sg::Command<S>{.resume = json("singular resume")}, config); });
  CHECK(error.of_type);
  CHECK(contains(error.what,
                 "When there are multiple pending interrupts, you must specify the interrupt id "
                 "when resuming."));

  const auto out = graph.invoke(sg::Command<S>{.resume = resume_map}, config);
  CHECK_FALSE(out.interrupted());
  CHECK(out.state.text_1 == "resume for prompt: original text 1");
  CHECK(out.state.text_2 == "resume for prompt: original text 2");
}

// ---------------------------------------------------------------------------------------------
// test_interrupt_stream_mode_values
// ---------------------------------------------------------------------------------------------

namespace {
struct RobotState {
  std::string robot_input{};
  std::string human_input{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"robot_input">(&RobotState::robot_input),
                      sg::field<"human_input">(&RobotState::human_input)};
  }
};
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_interrupt_stream_mode_values", Saver,
                   SG_PARITY_SAVERS) {
  using S = RobotState;
  Saver saver;
  sg::StateGraph<S> builder;
  builder.add_node("robot_input_node", [](const S&) {
    return sg::set<&S::robot_input>(std::string("beep boop i am a robot"));
  });
  builder.add_node("human_input_node", [](const S&) {
    return sg::Command<S>{
        .update = sg::set<&S::human_input>(sg::interrupt("interrupt").get<std::string>())};
  });
  builder.add_edge(sg::START, "robot_input_node").add_edge("robot_input_node", "human_input_node");
  const auto app = builder.compile({.checkpointer = saver.get()});
  const auto config = sgp::thread("8b7a6c5d-stream-values");

  // Input State(): an empty dict.
  const auto result =
      collect(app, sg::Update<S>{}, config, sg::StreamMode::updates | sg::StreamMode::values);
  CHECK(
      lines(result) ==
      Strings{R"(robot_input_node {"robot_input":"beep boop i am a robot"})",
              R"(values {"human_input":"","robot_input":"beep boop i am a robot"})",
              R"(__interrupt__ ["interrupt"])",
              R"(values {"human_input":"","robot_input":"beep boop i am a robot"} ["interrupt"])"});

  const auto resume_result = collect(app, sg::Command<S>{.resume = json("i am a human")}, config,
                                     sg::StreamMode::updates | sg::StreamMode::values);
  CHECK(lines(resume_result) ==
        Strings{R"(values {"human_input":"","robot_input":"beep boop i am a robot"})",
                R"(human_input_node {"human_input":"i am a human"})",
                R"(values {"human_input":"i am a human","robot_input":"beep boop i am a robot"})"});
}

// ---------------------------------------------------------------------------------------------
// test_supersteps_populate_task_results
// ---------------------------------------------------------------------------------------------

namespace {
struct NumTextState {
  int num = 0;
  std::string text{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"num">(&NumTextState::num), sg::field<"text">(&NumTextState::text)};
  }
};
}  // namespace

namespace {
json first_task_result(const std::vector<sg::StateSnapshot<NumTextState>>& history,
                       const std::string& node) {
  for (const auto& s : history)
    for (const auto& t : s.tasks)
      if (t.name == node) return t.result;
  return json();
}
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_supersteps_populate_task_results", Saver,
                   SG_PARITY_SAVERS) {
  using S = NumTextState;
  using SU = sg::StateUpdate<S>;
  using Steps = std::vector<std::vector<SU>>;
  Saver saver;
  sg::StateGraph<S> builder;
  builder.add_node("double", [](const S& s) {
    return sg::set<&S::num>(s.num * 2).set<&S::text>(s.text + s.text);
  });
  builder.add_edge(sg::START, "double").add_edge("double", sg::END);
  const auto graph = builder.compile({.checkpointer = saver.get()});

  // The reference run with invoke.
  (void)graph.invoke(sg::set<&S::num>(1).set<&S::text>(std::string("one")), sgp::thread("ref"));
  const auto ref_history = graph.get_state_history(sgp::thread("ref"));
  const auto ref_start_result = first_task_result(ref_history, "__start__");
  const auto ref_double_result = first_task_result(ref_history, "double");
  CHECK(ref_start_result == json{{"num", 1}, {"text", "one"}});
  CHECK(ref_double_result == json{{"num", 2}, {"text", "oneone"}});

  // The same with supersteps.
  (void)graph.bulk_update_state(
      sgp::thread("bulk"),
      Steps{{SU{.values = sg::Update<S>{}, .as_node = "__input__"}},
            {SU{.values = sg::set<&S::num>(1).set<&S::text>(std::string("one")),
                .as_node = "__start__"}},
            {SU{.values = sg::set<&S::num>(2).set<&S::text>(std::string("oneone")),
                .as_node = "double"}}});
  const auto bulk_history = graph.get_state_history(sgp::thread("bulk"));
  const auto bulk_start_result = first_task_result(bulk_history, "__start__");
  const auto bulk_double_result = first_task_result(bulk_history, "double");
  CHECK(bulk_start_result == ref_start_result);
  CHECK(bulk_start_result == json{{"num", 1}, {"text", "one"}});
  CHECK(bulk_double_result == ref_double_result);
  CHECK(bulk_double_result == json{{"num", 2}, {"text", "oneone"}});
}

// ---------------------------------------------------------------------------------------------
// test_multiple_writes_same_channel_from_same_node
// ---------------------------------------------------------------------------------------------

namespace {
struct JoinState {
  std::string foo{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"foo">(&JoinState::foo, [](std::string a, std::string b) {
      // ", ".join(x for x in [a, b] if x)
      if (a.empty()) return b;
      if (b.empty()) return a;
      return a + ", " + b;
    })};
  }
};
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_multiple_writes_same_channel_from_same_node",
                   Saver, SG_PARITY_SAVERS) {
  using S = JoinState;
  Saver saver;
  sg::StateGraph<S> builder;
  // LangGraph: Command(update=[("foo", "one.0"), ("foo", "one.1")]), two writes to one key from
  // one node. A C++ Update sets a field once, so the node returns two Commands.
  builder.add_node("one", [](const S&) -> std::vector<sg::Command<S>> {
    return {sg::Command<S>{.update = sg::set<&S::foo>(std::string("one.0"))},
            sg::Command<S>{.update = sg::set<&S::foo>(std::string("one.1"))}};
  });
  builder.add_node("two", [](const S&) { return sg::set<&S::foo>(std::string("two")); });
  builder.add_edge(sg::START, "one").add_edge("one", "two").add_edge("two", sg::END);
  const auto graph = builder.compile({.checkpointer = saver.get()});
  const auto config = sgp::thread("1");

  // LangGraph's "tasks" stream mode is stategraph's debug mode (task / task_result events; the
  // task event's "input" and "triggers" are not compared). LangGraph's one updates chunk
  // {"one": [{"foo": "one.0"}, {"foo": "one.1"}]} is one's updates in order here.
  Strings events;
  (void)graph.stream(sg::set<&S::foo>(std::string("input")), config,
                     sg::StreamMode::updates | sg::StreamMode::debug,
                     [&](const sg::StreamEvent<S>& e) {
                       if (e.mode == sg::StreamMode::debug) {
                         // LangGraph's debug mode is "tasks" plus "checkpoints": keep the tasks.
                         if (e.data.value("type", std::string()) == "checkpoint") return;
                         std::string text = e.data.value("type", std::string()) + " " +
                                            e.data["payload"].value("name", std::string());
                         if (e.data.value("type", std::string()) == "task_result")
                           text += " " + e.data["payload"].value("result", json()).dump();
                         events.push_back(text);
                       } else {
                         events.push_back(line(e));
                       }
                     });
  CHECK(events == Strings{"task one", R"(one {"foo":"one.0"})", R"(one {"foo":"one.1"})",
                          R"(task_result one {"foo":{"$writes":["one.0","one.1"]}})", "task two",
                          R"(two {"foo":"two"})", R"(task_result two {"foo":"two"})"});

  json history = json::array();
  for (const auto& s : graph.get_state_history(config)) {
    json tasks = json::array();
    for (const auto& t : s.tasks) tasks.push_back(json{{"name", t.name}, {"result", t.result}});
    history.push_back(json{{"tasks", tasks}, {"values", sg::state_to_json(s.values)}});
  }
  CHECK(history == json::parse(R"([
    {"tasks": [], "values": {"foo": "input, one.0, one.1, two"}},
    {"tasks": [{"name": "two", "result": {"foo": "two"}}], "values": {"foo": "input, one.0, one.1"}},
    {"tasks": [{"name": "one", "result": {"foo": {"$writes": ["one.0", "one.1"]}}}],
     "values": {"foo": "input"}},
    {"tasks": [{"name": "__start__", "result": {"foo": "input"}}], "values": {"foo": ""}}
  ])"));
}

// ---------------------------------------------------------------------------------------------
// test_overwrite_sequential / test_overwrite_parallel / test_overwrite_parallel_error
// ---------------------------------------------------------------------------------------------

namespace {
struct OverwriteState {
  Strings messages{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"messages">(&OverwriteState::messages, sg::concat)};
  }
};

/// Overwrite(value), or its JSON form {"__overwrite__": value}.
sg::Update<OverwriteState> overwrite_messages(const Strings& value, bool as_json) {
  if (as_json) {
    return sg::update_from_json<OverwriteState>(json{{"messages", json{{"__overwrite__", value}}}});
  }
  return sg::set<&OverwriteState::messages>(sg::overwrite(value));
}

sg::Update<OverwriteState> append_message(const std::string& value) {
  return sg::set<&OverwriteState::messages>(Strings{value});
}

template <class Saver>
void overwrite_sequential(bool as_json) {
  using S = OverwriteState;
  Saver saver;
  sg::StateGraph<S> builder;
  builder.add_node("node_a", [](const S&) { return append_message("a"); });
  builder.add_node("node_b", [as_json](const S&) { return overwrite_messages({"b"}, as_json); });
  builder.add_edge(sg::START, "node_a").add_edge("node_a", "node_b");
  const auto graph = builder.compile({.checkpointer = saver.get()});
  const auto result = graph.invoke(sg::set<&S::messages>(Strings{"START"}), sgp::thread("1"));
  // a is overwritten by b.
  CHECK(result.state.messages == Strings{"b"});
}

template <class Saver>
void overwrite_parallel(bool as_json) {
  using S = OverwriteState;
  Saver saver;
  sg::StateGraph<S> builder;
  builder.add_node("node_a", [](const S&) { return append_message("a"); });
  builder.add_node("node_b", [as_json](const S&) { return overwrite_messages({"b"}, as_json); });
  builder.add_node("node_c", [](const S&) { return append_message("c"); });
  builder.add_node("node_d", [](const S&) { return append_message("d"); });
  builder.add_edge(sg::START, "node_a")
      .add_edge("node_a", "node_b")
      .add_edge("node_a", "node_c")
      .add_edge("node_b", "node_d")
      .add_edge("node_c", "node_d");
  const auto graph = builder.compile({.checkpointer = saver.get()});
  const auto result = graph.invoke(sg::set<&S::messages>(Strings{"START"}), sgp::thread("1"));
  // a and c are overwritten by b, then d is written.
  CHECK(result.state.messages == Strings{"b", "d"});
}

template <class Saver>
void overwrite_parallel_error(bool as_json) {
  using S = OverwriteState;
  Saver saver;
  sg::StateGraph<S> builder;
  builder.add_node("node_a", [](const S&) { return append_message("a"); });
  builder.add_node("node_b", [as_json](const S&) { return overwrite_messages({"b"}, as_json); });
  builder.add_node("node_c", [as_json](const S&) { return overwrite_messages({"c"}, as_json); });
  builder.add_edge(sg::START, "node_a")
      .add_edge("node_a", "node_b")
      .add_edge("node_a", "node_c")
      .add_edge("node_b", sg::END)
      .add_edge("node_c", sg::END);
  const auto graph = builder.compile({.checkpointer = saver.get()});
  const auto error = caught<sg::InvalidUpdateError>(
      [&] { (void)graph.invoke(sg::set<&S::messages>(Strings{"START"}), sgp::thread("1")); });
  CHECK(error.of_type);
  CHECK(contains(error.what, "Can receive only one Overwrite value per super-step."));
}
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_overwrite_sequential (as_json=False)", Saver,
                   SG_PARITY_SAVERS) {
  overwrite_sequential<Saver>(false);
}
TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_overwrite_sequential (as_json=True)", Saver,
                   SG_PARITY_SAVERS) {
  overwrite_sequential<Saver>(true);
}
TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_overwrite_parallel (as_json=False)", Saver,
                   SG_PARITY_SAVERS) {
  overwrite_parallel<Saver>(false);
}
TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_overwrite_parallel (as_json=True)", Saver,
                   SG_PARITY_SAVERS) {
  overwrite_parallel<Saver>(true);
}
TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_overwrite_parallel_error (as_json=False)", Saver,
                   SG_PARITY_SAVERS) {
  overwrite_parallel_error<Saver>(false);
}
TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_overwrite_parallel_error (as_json=True)", Saver,
                   SG_PARITY_SAVERS) {
  overwrite_parallel_error<Saver>(true);
}

// ---------------------------------------------------------------------------------------------
// test_fork_does_not_apply_pending_writes
// ---------------------------------------------------------------------------------------------

namespace {
struct SumState {
  int value = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"value">(&SumState::value, [](int a, int b) { return a + b; })};
  }
};
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_fork_does_not_apply_pending_writes", Saver,
                   SG_PARITY_SAVERS) {
  using S = SumState;
  Saver saver;
  sg::StateGraph<S> builder;
  builder.add_node("node_a", [](const S&) { return sg::set<&S::value>(10); });
  builder.add_node("node_b", [](const S&) { return sg::set<&S::value>(100); });
  builder.add_edge(sg::START, "node_a").add_edge("node_a", "node_b");
  const auto graph = builder.compile({.checkpointer = saver.get()});
  const auto thread1 = sgp::thread("1");
  (void)graph.invoke(sg::set<&S::value>(1), thread1);

  const auto history = graph.get_state_history(thread1);
  const sg::StateSnapshot<S>* before_a = nullptr;
  for (const auto& s : history) {
    if (s.next == Strings{"node_a"}) {
      before_a = &s;
      break;
    }
  }
  REQUIRE(before_a != nullptr);
  const auto fork_config =
      graph.update_state(sgp::at(before_a->config), sg::set<&S::value>(20), std::string("node_a"));
  // Continue from the fork: node_b runs.
  const auto result = graph.resume(sgp::at(fork_config));
  // 1 (input) + 20 (the forked node_a) + 100 (node_b).
  CHECK(result.state.value == 121);
}

// ---------------------------------------------------------------------------------------------
// test_delta_channel_* (LangGraph's DeltaChannel over the messages reducer; stategraph stores a
// message list as a log plus per-checkpoint views: these check the same behaviour through
// add_messages)
// ---------------------------------------------------------------------------------------------

namespace {
using Msgs = sg::MessagesState;

sg::Update<Msgs> say(sg::Message message) {
  return sg::set<&Msgs::messages>(std::vector<sg::Message>{std::move(message)});
}

Strings contents(const std::vector<sg::Message>& messages) {
  Strings out;
  for (const auto& m : messages) out.push_back(m.content.str());
  return out;
}
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_delta_channel_end_to_end_inmemory", Saver,
                   SG_PARITY_SAVERS) {
  Saver saver;
  sg::StateGraph<Msgs> builder;
  builder.add_node("respond", [](const Msgs& s) {
    const auto n = std::to_string(s.messages.size());
    return say(sg::ai("reply-" + n, "ai-" + n));
  });
  builder.add_edge(sg::START, "respond");
  const auto graph = builder.compile({.checkpointer = saver.get()});
  const auto config = sgp::thread("diff-test-1");

  (void)graph.invoke(say(sg::human("hello", "h1")), config);
  (void)graph.invoke(say(sg::human("world", "h2")), config);
  (void)graph.invoke(say(sg::human("bye", "h3")), config);

  const auto state = graph.get_state(config);
  REQUIRE(state);
  // 3 human + 3 AI.
  CHECK(contents(state->values.messages) ==
        Strings{"hello", "reply-1", "world", "reply-3", "bye", "reply-5"});
}

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_delta_channel_time_travel", Saver,
                   SG_PARITY_SAVERS) {
  Saver saver;
  std::atomic<int> counter{0};
  sg::StateGraph<Msgs> builder;
  builder.add_node("respond", [&counter](const Msgs&) {
    const auto n = std::to_string(++counter);
    return say(sg::ai("ai-" + n, "ai-" + n));
  });
  builder.add_edge(sg::START, "respond");
  const auto graph = builder.compile({.checkpointer = saver.get()});
  const auto config = sgp::thread("diff-time-travel");

  // Two turns: h1 -> ai-1, h2 -> ai-2.
  (void)graph.invoke(say(sg::human("h1", "h1")), config);
  (void)graph.invoke(say(sg::human("h2", "h2")), config);

  // The first checkpoint (newest first) with two messages: h1 and ai-1.
  const auto history = graph.get_state_history(config);
  const sg::StateSnapshot<Msgs>* after_turn1 = nullptr;
  for (const auto& h : history) {
    if (h.values.messages.size() == 2) {
      after_turn1 = &h;
      break;
    }
  }
  REQUIRE(after_turn1 != nullptr);
  CHECK(contents(after_turn1->values.messages) == Strings{"h1", "ai-1"});

  // Continue from it with h3: h1, ai-1, h3, ai-N; turn 2's messages must not come back.
  const auto result = graph.invoke(say(sg::human("h3", "h3")), sgp::at(after_turn1->config));
  REQUIRE(result.state.messages.size() == 4);
  CHECK(result.state.messages[0].content.str() == "h1");
  CHECK(result.state.messages[1].content.str() == "ai-1");
  CHECK(result.state.messages[2].content.str() == "h3");
}

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_delta_channel_remove_message_end_to_end", Saver,
                   SG_PARITY_SAVERS) {
  Saver saver;
  sg::StateGraph<Msgs> builder;
  builder.add_node("respond", [](const Msgs&) { return say(sg::ai("reply", "ai-1")); });
  builder.add_node("delete_first", [](const Msgs& s) {
    // Removes the first message.
    return sg::set<&Msgs::messages>(sg::remove({s.messages.at(0).id}));
  });
  builder.add_edge(sg::START, "respond").add_edge("respond", "delete_first");
  const auto graph = builder.compile({.checkpointer = saver.get()});
  const auto config = sgp::thread("diff-remove-test");

  (void)graph.invoke(say(sg::human("hello", "h1")), config);
  auto state = graph.get_state(config);
  REQUIRE(state);
  // h1 was removed; only ai-1 remains.
  REQUIRE(state->values.messages.size() == 1);
  CHECK(state->values.messages[0].id == "ai-1");

  // A later turn starts from the checkpoint: h1 stays absent.
  (void)graph.invoke(say(sg::human("again", "h2")), config);
  state = graph.get_state(config);
  REQUIRE(state);
  for (const auto& m : state->values.messages) CHECK(m.id != "h1");
}

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_delta_channel_update_by_id_end_to_end", Saver,
                   SG_PARITY_SAVERS) {
  Saver saver;
  sg::StateGraph<Msgs> builder;
  // Re-sends h1 with new content.
  builder.add_node("update_msg", [](const Msgs&) { return say(sg::human("updated", "h1")); });
  builder.add_edge(sg::START, "update_msg");
  const auto graph = builder.compile({.checkpointer = saver.get()});
  const auto config = sgp::thread("diff-update-id-test");

  (void)graph.invoke(say(sg::human("original", "h1")), config);
  auto state = graph.get_state(config);
  REQUIRE(state);
  REQUIRE(state->values.messages.size() == 1);
  CHECK(state->values.messages[0].content.str() == "updated");
  CHECK(state->values.messages[0].id == "h1");

  // The updated state is the base of the next turn.
  (void)graph.invoke(say(sg::human("new", "h2")), config);
  state = graph.get_state(config);
  REQUIRE(state);
  Strings ids;
  for (const auto& m : state->values.messages) ids.push_back(m.id);
  CHECK(std::count(ids.begin(), ids.end(), "h1") == 1);  // updated, not duplicated
  CHECK(std::count(ids.begin(), ids.end(), "h2") == 1);
}

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_delta_channel_durability_exit_stores_snapshot",
                   Saver, SG_PARITY_SAVERS) {
  Saver saver;
  sg::StateGraph<Msgs> builder;
  builder.add_node("respond", [](const Msgs&) { return say(sg::ai("reply", "ai1")); });
  builder.add_edge(sg::START, "respond");
  const auto graph = builder.compile({.checkpointer = saver.get()});
  auto config = sgp::thread("delta-exit-test");
  config.durability = sg::Durability::exit;

  const auto result = graph.invoke(say(sg::human("hello", "h1")), config);
  CHECK(contents(result.state.messages) == Strings{"hello", "reply"});
  const auto state = graph.get_state(sgp::thread("delta-exit-test"));
  REQUIRE(state);
  CHECK(contents(state->values.messages) == Strings{"hello", "reply"});
}
