// SPDX-License-Identifier: MIT
// LangGraph's tests/test_pregel.py, from test_parent_command to test_multi_resume (the first half
// of the tests from line 4744 on; test_pregel_2b.cpp has the rest). See README.md.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "parity.hpp"
#include "pregel_2_common.hpp"

using nlohmann::json;
using sg::parity::Strings;
namespace sgp = sg::parity;

namespace {

/// The text of what `f` throws ("(no exception)" when it does not).
template <class F>
std::string error_text(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

/// Every interrupt carried by the events has an id (LangGraph: `id=AnyStr()`).
template <class S>
bool interrupt_ids_set(const std::vector<sg::StreamEvent<S>>& events) {
  for (const auto& e : events)
    for (const auto& i : e.interrupts)
      if (i.id.empty()) return false;
  return true;
}

struct StrAdd {
  std::string operator()(std::string a, std::string b) const { return a + b; }
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// test_parent_command
// ---------------------------------------------------------------------------------------------

namespace {
// LangGraph's parent state: messages plus user_name, a key the child graph (a MessagesState
// graph) does not have. A C++ Command to the parent graph has the parent's state type, so the
// child graph here runs over the parent's state; the tool node writes only user_name.
struct ParentCmdState : sg::MessagesState {
  std::string user_name{};
  static constexpr auto schema() {
    return std::tuple_cat(sg::MessagesState::schema(),
                          std::tuple{sg::field<"user_name">(&ParentCmdState::user_name)});
  }
};
}  // namespace

namespace {
template <class Saver>
void parent_command(sg::SubgraphCheckpointer subgraph_persist) {
  using S = ParentCmdState;
  Saver saver;
  sg::StateGraph<S> sub;
  sub.add_node("tool", [](const S&) {
    return sg::Command<S>{.update = sg::set<&S::user_name>(std::string("Meow")),
                          .graph = sg::PARENT};
  });
  sub.add_edge(sg::START, "tool");
  sg::CompileOptions sub_options;
  sub_options.subgraph_checkpointer = subgraph_persist;
  const auto subgraph = sub.compile(sub_options);

  sg::StateGraph<S> builder;
  builder.add_node("alice", subgraph);
  builder.add_edge(sg::START, "alice");
  const auto graph = builder.compile({.checkpointer = saver.get()});

  auto config = sgp::thread("1");
  config.durability = sg::Durability::exit;
  const auto out = graph.invoke(
      sg::Update<S>{}.set<&S::messages>(std::vector<sg::Message>{sg::human("get user name")}),
      config);
  CHECK_FALSE(out.interrupted());
  REQUIRE(out.state.messages.size() == 1);
  CHECK(out.state.messages[0].type == sg::MessageType::human);
  CHECK(out.state.messages[0].content.str() == "get user name");
  CHECK_FALSE(out.state.messages[0].id.empty());
  CHECK(out.state.user_name == "Meow");

  const auto state = graph.get_state(sgp::thread("1"));
  REQUIRE(state);
  REQUIRE(state->values.messages.size() == 1);
  CHECK(state->values.messages[0].content.str() == "get user name");
  CHECK(state->values.user_name == "Meow");
  CHECK(state->next.empty());
  CHECK(state->config.thread_id == "1");
  CHECK(state->config.checkpoint_ns.empty());
  CHECK_FALSE(state->config.checkpoint_id.empty());
  CHECK(state->metadata.value("source", std::string()) == "loop");
  CHECK(state->metadata.value("step", -99) == 1);
  CHECK(state->metadata.value("parents", json()) == json::object());
  CHECK_FALSE(state->created_at.empty());
  CHECK_FALSE(state->parent_config.has_value());  // durability "exit": one checkpoint
  CHECK(state->tasks.empty());
  CHECK(state->interrupts.empty());
}
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_parent_command (subgraph_persist=True)", Saver,
                   SG_PARITY_SAVERS) {
  parent_command<Saver>(sg::SubgraphCheckpointer::persistent);
}

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_parent_command (subgraph_persist=False)", Saver,
                   SG_PARITY_SAVERS) {
  parent_command<Saver>(sg::SubgraphCheckpointer::disabled);
}

// ---------------------------------------------------------------------------------------------
// test_interrupt_subgraph
// ---------------------------------------------------------------------------------------------

namespace {
struct BazState {
  std::string baz{};
  static constexpr auto schema() { return std::tuple{sg::field<"baz">(&BazState::baz)}; }
};
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_interrupt_subgraph", Saver, SG_PARITY_SAVERS) {
  using S = BazState;
  Saver saver;
  sg::StateGraph<S> child;
  child.add_node("bar", [](const S&) {
    return sg::set<&S::baz>(sg::interrupt("Please provide baz value:").get<std::string>());
  });
  child.add_edge(sg::START, "bar");

  sg::StateGraph<S> builder;
  builder.add_node("foo", [](const S&) { return sg::set<&S::baz>(std::string("foo")); });
  builder.add_node("bar", child.compile());
  builder.add_edge(sg::START, "foo").add_edge("foo", "bar");
  const auto graph = builder.compile({.checkpointer = saver.get()});

  const auto thread1 = sgp::thread("1");
  // First run, interrupted at bar (LangGraph: a truthy result carrying the interrupt).
  const auto first = graph.invoke(sg::set<&S::baz>(std::string()), thread1);
  CHECK(first.interrupted());
  CHECK(first.interrupts.size() == 1);
  CHECK(first.state.baz == "foo");
  // Resume with an answer.
  const auto second = graph.invoke(sg::Command<S>{.resume = json("bar")}, thread1);
  CHECK_FALSE(second.interrupted());
  CHECK(second.state.baz == "bar");
}

// ---------------------------------------------------------------------------------------------
// test_interrupt_multiple
// ---------------------------------------------------------------------------------------------

namespace {
struct MyKeyState {
  std::string my_key{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"my_key">(&MyKeyState::my_key, StrAdd{})};
  }
};
}  // namespace

namespace {
template <class Saver>
void interrupt_multiple(bool map_style) {
  using S = MyKeyState;
  Saver saver;
  sg::StateGraph<S> builder;
  builder.add_node("node", [](const S&) {
    const auto answer = sg::interrupt(json{{"value", 1}}).get<std::string>();
    const auto answer2 = sg::interrupt(json{{"value", 2}}).get<std::string>();
    return sg::set<&S::my_key>(answer + " " + answer2);
  });
  builder.add_edge(sg::START, "node");
  const auto graph = builder.compile({.checkpointer = saver.get()});
  const auto thread1 = sgp::thread("1");

  // LangGraph's input also has "market": "DE", a key the state does not have (ignored).
  auto result =
      collect(graph, sg::set<&S::my_key>(std::string("DE")), thread1, sg::StreamMode::updates);
  CHECK(lines(result) == Strings{R"(__interrupt__ [{"value":1}])"});
  CHECK(interrupt_ids_set(result));
  REQUIRE(result.size() == 1);
  REQUIRE(result[0].interrupts.size() == 1);

  result =
      collect(graph,
              sg::Command<S>{.update = sg::set<&S::my_key>(std::string(" foofoo ")),
                             .resume = map_style ? json{{result[0].interrupts[0].id, "answer 1"}}
                                                 : json("answer 1")},
              thread1, sg::StreamMode::updates);
  CHECK(lines(result) == Strings{R"(__interrupt__ [{"value":2}])"});
  CHECK(interrupt_ids_set(result));
  REQUIRE(result.size() == 1);
  REQUIRE(result[0].interrupts.size() == 1);

  const auto last =
      collect(graph,
              sg::Command<S>{.resume = map_style ? json{{result[0].interrupts[0].id, "answer 2"}}
                                                 : json("answer 2")},
              thread1, sg::StreamMode::values);
  CHECK(lines(last) == Strings{R"(values {"my_key":"DE foofoo "})",
                               R"(values {"my_key":"DE foofoo answer 1 answer 2"})"});
}
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_interrupt_multiple (resume_style=null)", Saver,
                   SG_PARITY_SAVERS) {
  interrupt_multiple<Saver>(false);
}

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_interrupt_multiple (resume_style=map)", Saver,
                   SG_PARITY_SAVERS) {
  interrupt_multiple<Saver>(true);
}

// ---------------------------------------------------------------------------------------------
// test_interrupt_loop
// ---------------------------------------------------------------------------------------------

namespace {
struct AgeState {
  int age = 0;
  std::string other{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"age">(&AgeState::age), sg::field<"other">(&AgeState::other)};
  }
};
}  // namespace

namespace {
bool is_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_interrupt_loop", Saver, SG_PARITY_SAVERS) {
  using S = AgeState;
  Saver saver;
  sg::StateGraph<S> builder;
  builder.add_node("node", [](const S&) {
    std::string question = "How old are you?";
    int value = -1;
    for (int i = 0; i < 10; ++i) {
      const auto answer = sg::interrupt(question).get<std::string>();
      if (!is_digits(answer) || std::stoi(answer) < 18) {
        question = "invalid response";
      } else {
        value = std::stoi(answer);
        break;
      }
    }
    return sg::set<&S::age>(value);
  });
  builder.add_edge(sg::START, "node");
  const auto graph = builder.compile({.checkpointer = saver.get()});
  const auto thread1 = sgp::thread("1");

  auto events = collect(graph, sg::set<&S::other>(std::string()), thread1, sg::StreamMode::updates);
  CHECK(lines(events) == Strings{R"(__interrupt__ ["How old are you?"])"});
  CHECK(interrupt_ids_set(events));

  events = collect(graph, sg::Command<S>{.resume = json("13")}, thread1, sg::StreamMode::updates);
  CHECK(lines(events) == Strings{R"(__interrupt__ ["invalid response"])"});

  events = collect(graph, sg::Command<S>{.resume = json("15")}, thread1, sg::StreamMode::updates);
  CHECK(lines(events) == Strings{R"(__interrupt__ ["invalid response"])"});

  events = collect(graph, sg::Command<S>{.resume = json("19")}, thread1, sg::StreamMode::updates);
  CHECK(lines(events) == Strings{R"(node {"age":19})"});
}

// ---------------------------------------------------------------------------------------------
// test_dict_mixed_return
// ---------------------------------------------------------------------------------------------

namespace {
struct FooAddState {
  std::string foo{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"foo">(&FooAddState::foo, StrAdd{})};
  }
};
}  // namespace

TEST_CASE("langgraph/test_pregel.py::test_dict_mixed_return") {
  // LangGraph's node returns [Command(update={"foo": "a"}), {"foo": "b"}]: a list of Commands
  // (the plain update as a Command without goto).
  using S = FooAddState;
  sg::StateGraph<S> graph;
  graph.add_node("my_node", [](const S&) -> std::vector<sg::Command<S>> {
    return {sg::Command<S>{.update = sg::set<&S::foo>(std::string("a"))},
            sg::Command<S>{.update = sg::set<&S::foo>(std::string("b"))}};
  });
  graph.add_edge(sg::START, "my_node");
  CHECK(graph.compile().invoke(sg::set<&S::foo>(std::string())).state.foo == "ab");
}

// ---------------------------------------------------------------------------------------------
// test_command_with_static_breakpoints
// ---------------------------------------------------------------------------------------------

namespace {
struct FooState {
  std::string foo{};
  static constexpr auto schema() { return std::tuple{sg::field<"foo">(&FooState::foo)}; }
};
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_command_with_static_breakpoints", Saver,
                   SG_PARITY_SAVERS) {
  using S = FooState;
  Saver saver;
  sg::StateGraph<S> builder;
  builder.add_node("node1", [](const S& s) { return sg::set<&S::foo>(s.foo + "|node-1"); });
  builder.add_node("node2", [](const S& s) { return sg::set<&S::foo>(s.foo + "|node-2"); });
  builder.add_edge(sg::START, "node1").add_edge("node1", "node2");
  const auto graph = builder.compile({.checkpointer = saver.get(), .interrupt_before = {"node1"}});
  const auto config = sgp::thread("5b0f1c2e-static-breakpoints");

  // Start the graph and interrupt at the first node.
  const auto first = graph.invoke(sg::set<&S::foo>(std::string("abc")), config);
  CHECK(first.interrupted());
  const auto result = graph.invoke(sg::Command<S>{.resume = json("node1")}, config);
  CHECK_FALSE(result.interrupted());
  CHECK(result.state.foo == "abc|node-1|node-2");
}

// ---------------------------------------------------------------------------------------------
// test_multistep_plan
// ---------------------------------------------------------------------------------------------

namespace {
// plan: list[str | list[str]], absent until the planner writes it (null here).
struct PlanState : sg::MessagesState {
  json plan{};
  static constexpr auto schema() {
    return std::tuple_cat(sg::MessagesState::schema(),
                          std::tuple{sg::field<"plan">(&PlanState::plan)});
  }
};

std::vector<sg::Goto> plan_gotos(const json& step) {
  std::vector<sg::Goto> out;
  if (step.is_array()) {
    for (const auto& s : step) out.emplace_back(s.get<std::string>());
  } else {
    out.emplace_back(step.get<std::string>());
  }
  return out;
}
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_multistep_plan", Saver, SG_PARITY_SAVERS) {
  using S = PlanState;
  Saver saver;
  sg::StateGraph<S> builder;
  builder.add_node("planner", [](const S& s) {
    if (s.plan.is_null()) {
      // Create a plan, go to its first step, keep the rest in the state.
      const json plan = json::array({"step1", json::array({"step2", "step3"}), "step4"});
      json rest = json::array();
      for (std::size_t i = 1; i < plan.size(); ++i) rest.push_back(plan[i]);
      return sg::Command<S>{.update = sg::Update<S>{}.set<&S::plan>(rest),
                            .go_to = plan_gotos(plan[0])};
    }
    if (!s.plan.empty()) {
      json rest = json::array();
      for (std::size_t i = 1; i < s.plan.size(); ++i) rest.push_back(s.plan[i]);
      return sg::Command<S>{.update = sg::Update<S>{}.set<&S::plan>(rest),
                            .go_to = plan_gotos(s.plan[0])};
    }
    return sg::Command<S>{};  // the end of the plan
  });
  for (const char* step : {"step1", "step2", "step3", "step4"}) {
    builder.add_node(step, [name = std::string(step)](const S&) {
      return sg::Command<S>{.update = sg::Update<S>{}.set<&S::messages>(sg::human(name)),
                            .go_to = {"planner"}};
    });
  }
  builder.add_edge(sg::START, "planner");
  const auto graph = builder.compile({.checkpointer = saver.get()});

  const auto out =
      graph.invoke(sg::Update<S>{}.set<&S::messages>(sg::human("start")), sgp::thread("1"));
  Strings contents;
  for (const auto& m : out.state.messages) {
    CHECK(m.type == sg::MessageType::human);
    CHECK_FALSE(m.id.empty());
    contents.push_back(m.content.str());
  }
  CHECK(contents == Strings{"start", "step1", "step2", "step3", "step4"});
  CHECK(out.state.plan == json::array());
}

// ---------------------------------------------------------------------------------------------
// test_command_goto_with_static_breakpoints
// ---------------------------------------------------------------------------------------------

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_command_goto_with_static_breakpoints", Saver,
                   SG_PARITY_SAVERS) {
  using S = FooAddState;
  Saver saver;
  sg::StateGraph<S> builder;
  builder.add_node("node1", [](const S&) { return sg::set<&S::foo>(std::string("|node-1")); });
  builder.add_node("node2", [](const S&) { return sg::set<&S::foo>(std::string("|node-2")); });
  builder.add_edge(sg::START, "node1").add_edge("node1", "node2");
  const auto graph = builder.compile({.checkpointer = saver.get(), .interrupt_before = {"node1"}});
  const auto config = sgp::thread("0c9d7f1a-goto-breakpoints");

  // Start the graph and interrupt at the first node.
  CHECK(graph.invoke(sg::set<&S::foo>(std::string("abc")), config).interrupted());
  const auto result = graph.invoke(sg::Command<S>{.go_to = {"node2"}}, config);
  CHECK_FALSE(result.interrupted());
  CHECK(result.state.foo == "abc|node-1|node-2|node-2");
}

// ---------------------------------------------------------------------------------------------
// test_parallel_node_execution
// ---------------------------------------------------------------------------------------------

namespace {
struct ResultsState {
  Strings results{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"results">(&ResultsState::results, sg::concat)};
  }
};
}  // namespace

TEST_CASE("langgraph/test_pregel.py::test_parallel_node_execution") {
  // LangGraph sleeps 1 s and 2 s and expects less than 3 s; the same proportions, 10x shorter.
  using S = ResultsState;
  sg::StateGraph<S> builder;
  builder.add_node("slow", [](const S&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return sg::set<&S::results>(std::string("slow"));
  });
  builder.add_node("fast", [](const S&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return sg::set<&S::results>(std::string("fast"));
  });
  builder.add_edge(sg::START, "slow").add_edge(sg::START, "fast");
  const auto graph = builder.compile();

  const auto start = std::chrono::steady_clock::now();
  const auto result = graph.invoke(sg::set<&S::results>(Strings{}));
  const auto duration = std::chrono::steady_clock::now() - start;

  REQUIRE_FALSE(result.state.results.empty());
  CHECK(contains(result.state.results[0], "fast"));
  CHECK(duration < std::chrono::milliseconds(300));
}

// ---------------------------------------------------------------------------------------------
// test_multiple_interrupt_state_persistence
// ---------------------------------------------------------------------------------------------

namespace {
struct StepsState {
  Strings steps{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"steps">(&StepsState::steps, sg::concat)};
  }
};
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_multiple_interrupt_state_persistence", Saver,
                   SG_PARITY_SAVERS) {
  using S = StepsState;
  Saver saver;
  sg::StateGraph<S> builder;
  builder.add_node("node", [](const S&) {
    const auto first = sg::interrupt("First interrupt").get<std::string>();
    const auto second = sg::interrupt("Second interrupt").get<std::string>();
    return sg::set<&S::steps>(Strings{first, second});
  });
  builder.add_edge(sg::START, "node");
  const auto app = builder.compile({.checkpointer = saver.get()});
  const auto config = sgp::thread("1");

  // First execution: the first interrupt; the node has not returned, the state is empty.
  (void)app.invoke(sg::set<&S::steps>(Strings{}), config);
  auto state = app.get_state(config);
  REQUIRE(state);
  CHECK(state->values.steps.empty());

  // Resume after the first interrupt: the second one.
  (void)app.invoke(sg::Command<S>{.resume = json("step1")}, config);
  state = app.get_state(config);
  REQUIRE(state);
  CHECK(state->values.steps.empty());

  // Resume after the second interrupt: the node completes.
  const auto result = app.invoke(sg::Command<S>{.resume = json("step2")}, config);
  CHECK(result.state.steps == Strings{"step1", "step2"});
  state = app.get_state(config);
  REQUIRE(state);
  CHECK(state->values.steps == Strings{"step1", "step2"});
}

// ---------------------------------------------------------------------------------------------
// test_concurrent_execution_thread_safety
// ---------------------------------------------------------------------------------------------

namespace {
struct CounterState {
  int counter = 0;
  static constexpr auto schema() {
    return std::tuple{
        sg::field<"counter">(&CounterState::counter, [](int a, int b) { return a + b; })};
  }
};
}  // namespace

TEST_CASE("langgraph/test_pregel.py::test_concurrent_execution_thread_safety") {
  using S = CounterState;
  sg::StateGraph<S> builder;
  builder.add_node("node", [](const S&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return sg::set<&S::counter>(1);
  });
  builder.add_edge(sg::START, "node");
  const auto graph = builder.compile();

  std::mutex mu;
  std::vector<int> results;
  std::vector<std::thread> threads;
  for (int i = 0; i < 10; ++i) {
    threads.emplace_back([&] {
      const auto result = graph.invoke(sg::set<&S::counter>(0));
      std::lock_guard lock(mu);
      results.push_back(result.state.counter);
    });
  }
  for (auto& t : threads) t.join();

  CHECK(results.size() == 10);
  for (int r : results) CHECK(r == 1);
}

// ---------------------------------------------------------------------------------------------
// test_checkpoint_recovery
// ---------------------------------------------------------------------------------------------

namespace {
struct RecoveryState {
  Strings steps{};
  int attempt = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"steps">(&RecoveryState::steps, sg::concat),
                      sg::field<"attempt">(&RecoveryState::attempt)};
  }
};

template <class Saver>
void checkpoint_recovery(sg::Durability durability) {
  using S = RecoveryState;
  Saver saver;
  sg::StateGraph<S> builder;
  builder.add_node("node1", [](const S& s) {
    // Fails on the first attempt, succeeds on retry.
    if (s.attempt == 1) throw std::runtime_error("Simulated failure");
    return sg::set<&S::steps>(std::string("node1"));
  });
  builder.add_node("node2", [](const S&) { return sg::set<&S::steps>(std::string("node2")); });
  builder.add_edge(sg::START, "node1").add_edge("node1", "node2");
  const auto graph = builder.compile({.checkpointer = saver.get()});
  auto config = sgp::thread("1");
  config.durability = durability;

  // The first attempt fails (LangGraph: the node's RuntimeError; here wrapped in NodeError).
  const auto error = caught<sg::NodeError>([&] {
    (void)graph.invoke(sg::set<&S::steps>(Strings{"start"}).set<&S::attempt>(1), config);
  });
  CHECK(error.of_type);
  CHECK(contains(error.what, "Simulated failure"));

  // The checkpoint state: the input saved, node1 to run again, its error recorded
  // (LangGraph's text is Python's repr, "RuntimeError('Simulated failure')").
  auto state = graph.get_state(config);
  REQUIRE(state);
  CHECK(state->values.steps == Strings{"start"});
  CHECK(state->values.attempt == 1);
  CHECK(state->next == Strings{"node1"});
  REQUIRE_FALSE(state->tasks.empty());
  CHECK(contains(state->tasks[0].error, "Simulated failure"));

  // Retry with an updated attempt count.
  const auto result = graph.invoke(sg::set<&S::steps>(Strings{}).set<&S::attempt>(2), config);
  CHECK(result.state.steps == Strings{"start", "node1", "node2"});
  CHECK(result.state.attempt == 2);

  // The history shows both attempts.
  const auto history = graph.get_state_history(config);
  if (durability != sg::Durability::exit) {
    CHECK(history.size() == 6);  // initial + failed attempt + successful attempt
  } else {
    CHECK(history.size() == 2);  // error + success
  }
  // The error was recorded in a checkpoint.
  const sg::StateSnapshot<S>* failed = nullptr;
  for (const auto& h : history) {
    if (!h.tasks.empty() && !h.tasks[0].error.empty()) {
      failed = &h;
      break;
    }
  }
  REQUIRE(failed != nullptr);
  CHECK(contains(failed->tasks[0].error, "Simulated failure"));

  // Deleting the thread leaves it empty.
  saver.get()->delete_thread("1");
  CHECK_FALSE(saver.get()->get_tuple({"1", "", ""}).has_value());
  CHECK(graph.get_state_history(config).empty());
}
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_checkpoint_recovery (durability=sync)", Saver,
                   SG_PARITY_SAVERS) {
  checkpoint_recovery<Saver>(sg::Durability::sync);
}

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_checkpoint_recovery (durability=async)", Saver,
                   SG_PARITY_SAVERS) {
  checkpoint_recovery<Saver>(sg::Durability::async);
}

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_checkpoint_recovery (durability=exit)", Saver,
                   SG_PARITY_SAVERS) {
  checkpoint_recovery<Saver>(sg::Durability::exit);
}

// ---------------------------------------------------------------------------------------------
// test_multiple_updates
// ---------------------------------------------------------------------------------------------

TEST_CASE("langgraph/test_pregel.py::test_multiple_updates") {
  using S = FooAddState;
  sg::StateGraph<S> builder;
  builder.add_sequence({{"node_a",
                         [](const S&) -> std::vector<sg::Command<S>> {
                           return {sg::Command<S>{.update = sg::set<&S::foo>(std::string("a1"))},
                                   sg::Command<S>{.update = sg::set<&S::foo>(std::string("a2"))}};
                         }},
                        {"node_b", [](const S&) { return sg::set<&S::foo>(std::string("b")); }}});
  builder.add_edge(sg::START, "node_a");
  const auto graph = builder.compile();

  CHECK(graph.invoke(sg::set<&S::foo>(std::string())).state.foo == "a1a2b");

  // LangGraph streams node_a's updates as one chunk with a list,
  // {"node_a": [{"foo": "a1"}, {"foo": "a2"}]}; a C++ StreamEvent holds one update, so here they
  // are node_a's updates in order.
  const auto events =
      collect(graph, sg::set<&S::foo>(std::string()), sg::RunConfig{}, sg::StreamMode::updates);
  CHECK(lines(events) ==
        Strings{R"(node_a {"foo":"a1"})", R"(node_a {"foo":"a2"})", R"(node_b {"foo":"b"})"});
}

// ---------------------------------------------------------------------------------------------
// test_node_before_interrupt_resume_graph_api
// ---------------------------------------------------------------------------------------------

namespace {
struct TopicsState {
  Strings topics{};
  Strings answers{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"topics">(&TopicsState::topics),
                      sg::field<"answers">(&TopicsState::answers, sg::concat)};
  }
};
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_node_before_interrupt_resume_graph_api", Saver,
                   SG_PARITY_SAVERS) {
  using S = TopicsState;
  Saver saver;
  sg::StateGraph<S> builder;
  builder.add_node("setup", [](const S& s) {
    Strings topics;
    for (std::size_t i = 0; i < s.topics.size(); ++i)
      topics.push_back("topic " + std::to_string(i + 1));
    return sg::set<&S::topics>(topics);
  });
  builder.add_node("ask", [](const S& s) {
    Strings answers;
    for (const auto& topic : s.topics)
      answers.push_back(sg::interrupt("Whats the answer for " + topic + "?").get<std::string>());
    return sg::set<&S::answers>(answers);
  });
  builder.add_edge(sg::START, "setup").add_edge("setup", "ask").add_edge("ask", sg::END);
  const auto graph = builder.compile({.checkpointer = saver.get()});
  const auto config = sgp::thread("1");

  // setup runs, then ask interrupts on the first topic.
  auto result =
      graph.invoke(sg::set<&S::topics>(Strings{"a", "b"}).set<&S::answers>(Strings{}), config);
  CHECK(result.interrupted());
  REQUIRE(result.interrupts.size() == 1);
  CHECK(result.interrupts[0].value == "Whats the answer for topic 1?");

  // The answer for topic 1: the second interrupt.
  result = graph.invoke(sg::Command<S>{.resume = json("answer1")}, config);
  CHECK(result.interrupted());
  REQUIRE(result.interrupts.size() == 1);
  CHECK(result.interrupts[0].value == "Whats the answer for topic 2?");

  // The answer for topic 2: done.
  result = graph.invoke(sg::Command<S>{.resume = json("answer2")}, config);
  CHECK_FALSE(result.interrupted());
  CHECK(result.state.topics == Strings{"topic 1", "topic 2"});
  CHECK(result.state.answers == Strings{"answer1", "answer2"});
}

// ---------------------------------------------------------------------------------------------
// test_multiple_nodes_before_interrupt_resume_graph_api
// ---------------------------------------------------------------------------------------------

namespace {
struct ValueAnswerState {
  int value = 0;
  std::string answer{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"value">(&ValueAnswerState::value),
                      sg::field<"answer">(&ValueAnswerState::answer)};
  }
};
}  // namespace

TEST_CASE_TEMPLATE(
    "langgraph/test_pregel.py::test_multiple_nodes_before_interrupt_resume_graph_api", Saver,
    SG_PARITY_SAVERS) {
  using S = ValueAnswerState;
  Saver saver;
  sg::StateGraph<S> builder;
  builder.add_node("step_a", [](const S& s) { return sg::set<&S::value>(s.value + 1); });
  builder.add_node("step_b", [](const S& s) { return sg::set<&S::value>(s.value * 2); });
  builder.add_node("ask", [](const S& s) {
    return sg::set<&S::answer>(
        sg::interrupt("Result so far is " + std::to_string(s.value) + ". What next?")
            .get<std::string>());
  });
  builder.add_edge(sg::START, "step_a")
      .add_edge("step_a", "step_b")
      .add_edge("step_b", "ask")
      .add_edge("ask", sg::END);
  const auto graph = builder.compile({.checkpointer = saver.get()});
  const auto config = sgp::thread("1");

  auto result = graph.invoke(sg::set<&S::value>(5).set<&S::answer>(std::string()), config);
  CHECK(result.interrupted());
  REQUIRE_FALSE(result.interrupts.empty());
  CHECK(result.interrupts[0].value == "Result so far is 12. What next?");

  result = graph.invoke(sg::Command<S>{.resume = json("continue")}, config);
  CHECK_FALSE(result.interrupted());
  CHECK(result.state.value == 12);
  CHECK(result.state.answer == "continue");
}

// ---------------------------------------------------------------------------------------------
// test_node_before_multiple_interrupt_cycles_graph_api
// ---------------------------------------------------------------------------------------------

namespace {
struct CountDataState {
  int count = 0;
  std::string data{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"count">(&CountDataState::count),
                      sg::field<"data">(&CountDataState::data)};
  }
};
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_node_before_multiple_interrupt_cycles_graph_api",
                   Saver, SG_PARITY_SAVERS) {
  using S = CountDataState;
  Saver saver;
  sg::StateGraph<S> builder;
  builder.add_node("prepare", [](const S& s) { return sg::set<&S::count>(s.count + 10); });
  builder.add_node("multi_interrupt", [](const S&) {
    const auto first = sg::interrupt("First question?").get<std::string>();
    const auto second = sg::interrupt("Second question?").get<std::string>();
    return sg::set<&S::data>(first + "," + second);
  });
  builder.add_edge(sg::START, "prepare")
      .add_edge("prepare", "multi_interrupt")
      .add_edge("multi_interrupt", sg::END);
  const auto graph = builder.compile({.checkpointer = saver.get()});
  const auto config = sgp::thread("1");

  auto result = graph.invoke(sg::set<&S::count>(0).set<&S::data>(std::string()), config);
  CHECK(result.interrupted());
  REQUIRE_FALSE(result.interrupts.empty());
  CHECK(result.interrupts[0].value == "First question?");

  result = graph.invoke(sg::Command<S>{.resume = json("first_answer")}, config);
  CHECK(result.interrupted());
  REQUIRE_FALSE(result.interrupts.empty());
  CHECK(result.interrupts[0].value == "Second question?");

  result = graph.invoke(sg::Command<S>{.resume = json("second_answer")}, config);
  CHECK_FALSE(result.interrupted());
  CHECK(result.state.count == 10);
  CHECK(result.state.data == "first_answer,second_answer");
}

// ---------------------------------------------------------------------------------------------
// test_double_interrupt_subgraph
// ---------------------------------------------------------------------------------------------

namespace {
// `input` is a str in LangGraph's TypedDict, but the test resumes with True and expects
// {"input": True}: a JSON value here.
struct AgentInputState {
  json input{};
  static constexpr auto schema() { return std::tuple{sg::field<"input">(&AgentInputState::input)}; }
};
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_double_interrupt_subgraph", Saver,
                   SG_PARITY_SAVERS) {
  using S = AgentInputState;
  Saver saver;
  sg::StateGraph<S> subgraph_builder;
  subgraph_builder.add_node(
      "node_1", [](const S&) { return sg::set<&S::input>(sg::interrupt("interrupt node 1")); });
  subgraph_builder.add_node(
      "node_2", [](const S&) { return sg::set<&S::input>(sg::interrupt("interrupt node 2")); });
  subgraph_builder.add_edge(sg::START, "node_1")
      .add_edge("node_1", "node_2")
      .add_edge("node_2", sg::END);

  // The subgraph on its own, with a checkpointer.
  {
    const auto subgraph = subgraph_builder.compile({.checkpointer = saver.get()});
    const auto thread = sgp::thread("7a1e0f54-double-interrupt-sub");
    auto events =
        collect(subgraph, sg::set<&S::input>(json("test")), thread, sg::StreamMode::updates);
    CHECK(lines(events) == Strings{R"(__interrupt__ ["interrupt node 1"])"});
    CHECK(interrupt_ids_set(events));
    // Resume from the first interrupt.
    events =
        collect(subgraph, sg::Command<S>{.resume = json("123")}, thread, sg::StreamMode::updates);
    CHECK(lines(events) ==
          Strings{R"(node_1 {"input":"123"})", R"(__interrupt__ ["interrupt node 2"])"});
    // Resume from the second interrupt.
    events =
        collect(subgraph, sg::Command<S>{.resume = json("123")}, thread, sg::StreamMode::updates);
    CHECK(lines(events) == Strings{R"(node_2 {"input":"123"})"});
  }

  // The subgraph invoked from inside a node of a parent graph.
  const auto subgraph = subgraph_builder.compile();
  sg::StateGraph<S> parent_builder;
  parent_builder.add_node("invoke_sub_agent", [subgraph](const S& state) {
    return sg::Update<S>::from_state(subgraph.invoke(state).state);
  });
  parent_builder.add_edge(sg::START, "invoke_sub_agent").add_edge("invoke_sub_agent", sg::END);
  const auto parent_agent = parent_builder.compile({.checkpointer = saver.get()});
  const auto thread = sgp::thread("3c2b9d6e-double-interrupt-parent");

  auto events =
      collect(parent_agent, sg::set<&S::input>(json("test")), thread, sg::StreamMode::updates);
  CHECK(lines(events) == Strings{R"(__interrupt__ ["interrupt node 1"])"});
  // Resume from the first interrupt.
  events =
      collect(parent_agent, sg::Command<S>{.resume = json(true)}, thread, sg::StreamMode::updates);
  CHECK(lines(events) == Strings{R"(__interrupt__ ["interrupt node 2"])"});
  // Resume from the second interrupt.
  events =
      collect(parent_agent, sg::Command<S>{.resume = json(true)}, thread, sg::StreamMode::updates);
  CHECK(lines(events) == Strings{R"(invoke_sub_agent {"input":true})"});
}

// ---------------------------------------------------------------------------------------------
// test_multi_resume
// ---------------------------------------------------------------------------------------------

namespace {
struct MultiResumeChild {
  std::string prompt{};
  std::string human_input{};
  Strings human_inputs{};  // a plain (last value) list in LangGraph's ChildState
  static constexpr auto schema() {
    return std::tuple{sg::field<"prompt">(&MultiResumeChild::prompt),
                      sg::field<"human_input">(&MultiResumeChild::human_input),
                      sg::field<"human_inputs">(&MultiResumeChild::human_inputs)};
  }
};

struct MultiResumeParent {
  Strings prompts{};
  Strings human_inputs{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"prompts">(&MultiResumeParent::prompts),
                      sg::field<"human_inputs">(&MultiResumeParent::human_inputs, sg::concat)};
  }
};
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_multi_resume", Saver, SG_PARITY_SAVERS) {
  using C = MultiResumeChild;
  using P = MultiResumeParent;
  Saver saver;
  sg::StateGraph<C> child_builder;
  child_builder.add_node("get_human_input", [](const C& s) {
    const auto human_input = sg::interrupt(s.prompt).get<std::string>();
    return sg::set<&C::human_input>(human_input).set<&C::human_inputs>(Strings{human_input});
  });
  child_builder.add_edge(sg::START, "get_human_input").add_edge("get_human_input", sg::END);
  // LangGraph compiles the child with the same checkpointer as the parent.
  const auto child_graph = child_builder.compile({.checkpointer = saver.get()});

  sg::StateGraph<P> parent_builder;
  // LangGraph sends {"prompt": prompt} to the child graph node. A C++ subgraph node of another
  // state type takes the parent's state type, so each Send carries a parent state whose only
  // prompt is the child's, and to_child makes it the child's input.
  parent_builder.add_node(
      "child_graph", child_graph,
      [](const P& p) { return sg::set<&C::prompt>(p.prompts.empty() ? "" : p.prompts[0]); },
      [](const C& c) { return sg::set<&P::human_inputs>(c.human_inputs); });
  parent_builder.add_node("cleanup", [](const P& s) {
    if (s.human_inputs.size() != s.prompts.size())
      throw std::runtime_error("assert len(human_inputs) == len(prompts)");
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
  const auto parent_graph = parent_builder.compile({.checkpointer = saver.get()});
  const auto config = sgp::thread("9e8d7c6b-multi-resume");

  const Strings prompts{"a", "b", "c", "d", "e"};
  const auto events = parent_graph.invoke(sg::set<&P::prompts>(prompts), config);
  CHECK(events.interrupts.size() == prompts.size());
  std::set<std::string> interrupt_values_seen;
  for (const auto& i : events.interrupts)
    interrupt_values_seen.insert(i.value.template get<std::string>());
  CHECK(interrupt_values_seen == std::set<std::string>(prompts.begin(), prompts.end()));

  const auto state = parent_graph.get_state(config);
  REQUIRE(state);
  json resume_map = json::object();
  for (const auto& i : state->interrupts)
    resume_map[i.id] = "human input for prompt " + i.value.template get<std::string>();

  const auto result = parent_graph.invoke(sg::Command<P>{.resume = resume_map}, config);
  CHECK_FALSE(result.interrupted());
  CHECK(result.state.prompts == prompts);
  Strings expected;
  for (const auto& p : prompts) expected.push_back("human input for prompt " + p);
  CHECK(result.state.human_inputs == expected);
}
