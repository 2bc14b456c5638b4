// SPDX-License-Identifier: MIT
// LangGraph's tests/test_subgraph_persistence.py (a graph invoked from inside a parent's node,
// with checkpointer None / False / True) and tests/test_parent_command.py (Command.PARENT from a
// graph invoked inside a node).
//
// LangGraph -> stategraph:
//   inner.invoke(...) inside a node      the same call in the node's function (a compiled graph
//                                        invoked from inside a node runs as a subgraph of that
//                                        node's run)
//   compile(checkpointer=False / True)   CompileOptions::subgraph_checkpointer disabled /
//                                        persistent
#include <atomic>
#include <mutex>
#include <ostream>
#include <stdexcept>

#include "parity.hpp"

using json = nlohmann::json;
using sg::parity::Strings;
using sg::parity::thread;

namespace {

/// A list of strings that doctest prints on failure.
struct List {
  Strings items{};
  List() = default;
  List(std::initializer_list<std::string> list) : items(list) {}
  List(Strings list) : items(std::move(list)) {}  // NOLINT: implicit by design
  friend bool operator==(const List&, const List&) = default;
  friend std::ostream& operator<<(std::ostream& os, const List& l) {
    os << "{";
    for (std::size_t i = 0; i < l.items.size(); ++i)
      os << (i ? ", " : "") << '"' << l.items[i] << '"';
    return os << "}";
  }
};

/// ParentState: result: str.
struct Result {
  std::string result{};
  static constexpr auto schema() { return std::tuple{sg::field<"result">(&Result::result)}; }
};

/// ChildState of test_child_with_own_thread_id_keeps_namespace: count: int.
struct Count {
  int count = 0;
  static constexpr auto schema() { return std::tuple{sg::field<"count">(&Count::count)}; }
};

}  // namespace

namespace {

using Msgs = sg::MessagesState;

sg::Update<Msgs> say(std::string text) {
  return sg::Update<Msgs>{}.set<&Msgs::messages>(sg::human(std::move(text)));
}
sg::Update<Msgs> reply(std::string text) {
  return sg::Update<Msgs>{}.set<&Msgs::messages>(sg::ai(std::move(text)));
}

/// The texts of the messages (LangGraph's [m.text for m in resp["messages"]]).
List texts(const std::vector<sg::Message>& messages) {
  Strings out;
  for (const auto& m : messages) out.push_back(m.text());
  return out;
}

std::string last_text(const Msgs& s) {
  return s.messages.empty() ? std::string() : s.messages.back().text();
}

/// What the subgraph runs returned, one List per completed call; safe from any thread.
class Runs {
 public:
  void add(List run) {
    std::lock_guard lock(mu_);
    runs_.push_back(std::move(run));
  }
  [[nodiscard]] List at(std::size_t i) const {
    std::lock_guard lock(mu_);
    return i < runs_.size() ? runs_[i] : List{"<no run>"};
  }
  [[nodiscard]] std::size_t size() const {
    std::lock_guard lock(mu_);
    return runs_.size();
  }

 private:
  mutable std::mutex mu_;
  std::vector<List> runs_;
};

/// process (interrupt "continue?", then "Processing: <last>") -> respond ("Done").
sg::CompiledGraph<Msgs> process_respond() {
  sg::StateGraph<Msgs> g;
  g.add_node("process", [](const Msgs& s) {
    (void)sg::interrupt("continue?");
    return reply("Processing: " + last_text(s));
  });
  g.add_node("respond", [](const Msgs&) { return reply("Done"); });
  g.add_edge(sg::START, "process").add_edge("process", "respond");
  return g.compile();
}

/// echo ("<prefix><last>").
sg::CompiledGraph<Msgs> echo(std::string prefix, sg::CompileOptions options = {}) {
  sg::StateGraph<Msgs> g;
  g.add_node("echo",
             [prefix = std::move(prefix)](const Msgs& s) { return reply(prefix + last_text(s)); });
  g.add_edge(sg::START, "echo");
  return g.compile(std::move(options));
}

/// LangGraph's stateful wrapper: START -> node (inner), compiled with checkpointer=True.
sg::CompiledGraph<Msgs> stateful(const std::string& node, const sg::CompiledGraph<Msgs>& inner) {
  sg::StateGraph<Msgs> g;
  g.add_node(node, inner);
  g.add_edge(sg::START, node);
  sg::CompileOptions options;
  options.subgraph_checkpointer = sg::SubgraphCheckpointer::persistent;
  return g.compile(options);
}

/// START -> node (fn), with the saver.
template <class F>
sg::CompiledGraph<Result> parent_of(const std::string& node, F fn,
                                    std::shared_ptr<sg::Checkpointer> saver) {
  sg::StateGraph<Result> g;
  g.add_node(node, std::move(fn));
  g.add_edge(sg::START, node);
  return g.compile({.checkpointer = std::move(saver)});
}

sg::Update<Result> result_of(std::string text) {
  return sg::set<&Result::result>(std::move(text));
}

/// LangGraph's {"result": "", "__interrupt__": [Interrupt(value="continue?", id=AnyStr())]}.
void check_continue_interrupt(const sg::RunResult<Result>& r) {
  CHECK(r.state.result == "");
  REQUIRE(r.interrupts.size() == 1);
  CHECK(r.interrupts[0].value == json("continue?"));
  CHECK_FALSE(r.interrupts[0].id.empty());
}

}  // namespace

// ---- checkpointer=None (stateless)

TEST_CASE_TEMPLATE("langgraph/test_subgraph_persistence.py::test_stateless_interrupt_resume", Saver,
                   SG_PARITY_SAVERS) {
  // The subgraph (no checkpointer of its own) pauses and resumes through the parent's.
  Saver saver;
  const auto inner = process_respond();
  const auto parent = parent_of(
      "call_inner",
      [inner](const Result&) {
        const auto resp = inner.invoke(say("apples"));
        return result_of(last_text(resp.state));
      },
      saver.get());
  const auto config = thread("stateless-interrupt");

  check_continue_interrupt(parent.invoke(Result{}, config));
  const auto done = parent.invoke(sg::Command<Result>{.resume = json(true)}, config);
  CHECK_FALSE(done.interrupted());
  CHECK(done.state.result == "Done");
}

TEST_CASE_TEMPLATE("langgraph/test_subgraph_persistence.py::test_stateless_state_resets", Saver,
                   SG_PARITY_SAVERS) {
  Saver saver;
  const auto inner = echo("Processing: ");
  Runs subgraph_messages;
  std::atomic<int> call_count{0};
  const auto parent = parent_of(
      "call_inner",
      [inner, &subgraph_messages, &call_count](const Result&) {
        const std::string topic = ++call_count == 1 ? "apples" : "bananas";
        const auto resp = inner.invoke(say("tell me about " + topic));
        subgraph_messages.add(texts(resp.state.messages));
        return result_of(last_text(resp.state));
      },
      saver.get());
  const auto config = thread("stateless");

  CHECK(parent.invoke(Result{}, config).state.result == "Processing: tell me about apples");
  CHECK(parent.invoke(Result{}, config).state.result == "Processing: tell me about bananas");
  // Each call starts from an empty history.
  CHECK(subgraph_messages.at(0) ==
        List{"tell me about apples", "Processing: tell me about apples"});
  CHECK(subgraph_messages.at(1) ==
        List{"tell me about bananas", "Processing: tell me about bananas"});
}

TEST_CASE_TEMPLATE(
    "langgraph/test_subgraph_persistence.py::test_stateless_state_resets_with_interrupt", Saver,
    SG_PARITY_SAVERS) {
  // call_count counts node runs: the resumed run (count 2) gets "bananas" as input, but the
  // resumed subgraph continues from its checkpoint (apples) and ignores it.
  Saver saver;
  const auto inner = process_respond();
  Runs subgraph_messages;
  std::atomic<int> call_count{0};
  const auto parent = parent_of(
      "call_inner",
      [inner, &subgraph_messages, &call_count](const Result&) {
        const std::string topic = ++call_count == 1 ? "apples" : "bananas";
        const auto resp = inner.invoke(say("tell me about " + topic));
        subgraph_messages.add(texts(resp.state.messages));
        return result_of(last_text(resp.state));
      },
      saver.get());
  const auto config = thread("stateless-interrupts");

  for (int round = 0; round < 2; ++round) {
    CAPTURE(round);
    check_continue_interrupt(parent.invoke(Result{}, config));
    CHECK(parent.invoke(sg::Command<Result>{.resume = json(true)}, config).state.result == "Done");
  }
  CHECK(subgraph_messages.at(0) ==
        List{"tell me about apples", "Processing: tell me about apples", "Done"});
  CHECK(subgraph_messages.at(1) ==
        List{"tell me about bananas", "Processing: tell me about bananas", "Done"});
}

// ---- checkpointer=False

TEST_CASE_TEMPLATE("langgraph/test_subgraph_persistence.py::test_checkpointer_false_no_persistence",
                   Saver, SG_PARITY_SAVERS) {
  Saver saver;
  sg::CompileOptions disabled;
  disabled.subgraph_checkpointer = sg::SubgraphCheckpointer::disabled;
  const auto inner = echo("Processed: ", disabled);
  Runs subgraph_messages;
  std::atomic<int> call_count{0};
  const auto parent = parent_of(
      "call_inner",
      [inner, &subgraph_messages, &call_count](const Result&) {
        const std::string topic = ++call_count == 1 ? "apples" : "bananas";
        const auto resp = inner.invoke(say("tell me about " + topic));
        subgraph_messages.add(texts(resp.state.messages));
        return result_of(last_text(resp.state));
      },
      saver.get());
  const auto config = thread("no-persistence");

  CHECK(parent.invoke(Result{}, config).state.result == "Processed: tell me about apples");
  CHECK(parent.invoke(Result{}, config).state.result == "Processed: tell me about bananas");
  CHECK(subgraph_messages.at(0) == List{"tell me about apples", "Processed: tell me about apples"});
  CHECK(subgraph_messages.at(1) ==
        List{"tell me about bananas", "Processed: tell me about bananas"});
}

// ---- checkpointer=True (stateful)

TEST_CASE_TEMPLATE("langgraph/test_subgraph_persistence.py::test_stateful_state_accumulates", Saver,
                   SG_PARITY_SAVERS) {
  // The wrapper compiled with checkpointer=True keeps its messages across parent invocations.
  Saver saver;
  const auto wrapper = stateful("agent", echo("Processing: "));
  Runs subgraph_messages;
  const auto parent = parent_of(
      "call_inner",
      [wrapper, &subgraph_messages](const Result&) {
        const std::string topic = subgraph_messages.size() == 0 ? "apples" : "bananas";
        const auto resp = wrapper.invoke(say("tell me about " + topic));
        subgraph_messages.add(texts(resp.state.messages));
        return result_of(last_text(resp.state));
      },
      saver.get());
  const auto config = thread("stateful");

  CHECK(parent.invoke(Result{}, config).state.result == "Processing: tell me about apples");
  CHECK(parent.invoke(Result{}, config).state.result == "Processing: tell me about bananas");
  CHECK(subgraph_messages.at(0) ==
        List{"tell me about apples", "Processing: tell me about apples"});
  CHECK(subgraph_messages.at(1) == List{"tell me about apples", "Processing: tell me about apples",
                                        "tell me about bananas",
                                        "Processing: tell me about bananas"});
}

TEST_CASE_TEMPLATE(
    "langgraph/test_subgraph_persistence.py::test_stateful_state_accumulates_with_interrupt", Saver,
    SG_PARITY_SAVERS) {
  Saver saver;
  const auto wrapper = stateful("agent", process_respond());
  Runs subgraph_messages;
  const auto parent = parent_of(
      "call_inner",
      [wrapper, &subgraph_messages](const Result&) {
        const std::string topic = subgraph_messages.size() == 0 ? "apples" : "bananas";
        const auto resp = wrapper.invoke(say("tell me about " + topic));
        subgraph_messages.add(texts(resp.state.messages));
        return result_of(last_text(resp.state));
      },
      saver.get());
  const auto config = thread("stateful-interrupts");

  for (int round = 0; round < 2; ++round) {
    CAPTURE(round);
    check_continue_interrupt(parent.invoke(Result{}, config));
    CHECK(parent.invoke(sg::Command<Result>{.resume = json(true)}, config).state.result == "Done");
  }
  CHECK(subgraph_messages.at(0) ==
        List{"tell me about apples", "Processing: tell me about apples", "Done"});
  CHECK(subgraph_messages.at(1) == List{"tell me about apples", "Processing: tell me about apples",
                                        "Done", "tell me about bananas",
                                        "Processing: tell me about bananas", "Done"});
}

TEST_CASE_TEMPLATE("langgraph/test_subgraph_persistence.py::test_stateful_interrupt_resume", Saver,
                   SG_PARITY_SAVERS) {
  Saver saver;
  const auto wrapper = stateful("agent", process_respond());
  Runs subgraph_messages;
  const auto parent = parent_of(
      "call_inner",
      [wrapper, &subgraph_messages](const Result&) {
        const std::string topic = subgraph_messages.size() == 0 ? "apples" : "bananas";
        const auto resp = wrapper.invoke(say("tell me about " + topic));
        subgraph_messages.add(texts(resp.state.messages));
        return result_of(last_text(resp.state));
      },
      saver.get());
  const auto config = thread("stateful-resume");

  check_continue_interrupt(parent.invoke(Result{}, config));
  CHECK(parent.invoke(sg::Command<Result>{.resume = json(true)}, config).state.result == "Done");
  CHECK(subgraph_messages.at(0) ==
        List{"tell me about apples", "Processing: tell me about apples", "Done"});

  check_continue_interrupt(parent.invoke(Result{}, config));
  CHECK(parent.invoke(sg::Command<Result>{.resume = json(true)}, config).state.result == "Done");
  CHECK(subgraph_messages.at(1) == List{"tell me about apples", "Processing: tell me about apples",
                                        "Done", "tell me about bananas",
                                        "Processing: tell me about bananas", "Done"});
}

TEST_CASE_TEMPLATE("langgraph/test_subgraph_persistence.py::test_stateful_namespace_isolation",
                   Saver, SG_PARITY_SAVERS) {
  // Two stateful wrappers with different node names, both called from one node, keep separate
  // histories.
  Saver saver;
  const auto fruit = stateful("fruit_agent", echo("Fruit: "));
  const auto veggie = stateful("veggie_agent", echo("Veggie: "));
  Runs fruit_msgs;
  Runs veggie_msgs;
  std::atomic<int> call_count{0};
  const auto parent = parent_of(
      "call_both",
      [fruit, veggie, &fruit_msgs, &veggie_msgs, &call_count](const Result&) {
        const std::string suffix = ++call_count == 1 ? "round 1" : "round 2";
        const auto f = fruit.invoke(say("cherries " + suffix));
        const auto v = veggie.invoke(say("broccoli " + suffix));
        fruit_msgs.add(texts(f.state.messages));
        veggie_msgs.add(texts(v.state.messages));
        return result_of(last_text(f.state));
      },
      saver.get());
  const auto config = thread("isolation");

  CHECK(parent.invoke(Result{}, config).state.result == "Fruit: cherries round 1");
  CHECK(parent.invoke(Result{}, config).state.result == "Fruit: cherries round 2");
  CHECK(fruit_msgs.at(0) == List{"cherries round 1", "Fruit: cherries round 1"});
  CHECK(veggie_msgs.at(0) == List{"broccoli round 1", "Veggie: broccoli round 1"});
  CHECK(fruit_msgs.at(1) == List{"cherries round 1", "Fruit: cherries round 1", "cherries round 2",
                                 "Fruit: cherries round 2"});
  CHECK(veggie_msgs.at(1) == List{"broccoli round 1", "Veggie: broccoli round 1",
                                  "broccoli round 2", "Veggie: broccoli round 2"});
}

TEST_CASE_TEMPLATE(
    "langgraph/test_subgraph_persistence.py::test_child_with_own_thread_id_keeps_namespace", Saver,
    SG_PARITY_SAVERS) {
  // A graph with its own checkpointer, invoked inside a parent node with its own thread id,
  // stores its checkpoints under its own (root) namespace, not the parent task's.
  Saver saver;
  sg::StateGraph<Count> child_builder;
  child_builder.add_node("n", [](const Count& s) { return sg::set<&Count::count>(s.count + 1); });
  child_builder.add_edge(sg::START, "n");
  const auto child = child_builder.compile({.checkpointer = saver.get()});
  const auto child_config = thread("child-thread");

  sg::StateGraph<Result> parent_builder;
  parent_builder.add_node("p", [child, child_config](const Result&) {
    (void)child.invoke(sg::Update<Count>{}, child_config);
    return sg::set<&Result::result>(std::string("ok"));
  });
  parent_builder.add_edge(sg::START, "p");
  const auto parent = parent_builder.compile({.checkpointer = saver.get()});
  const auto parent_config = thread("parent-thread");

  (void)parent.invoke(Result{}, parent_config);
  const auto state1 = child.get_state(child_config);
  REQUIRE(state1);
  CHECK(state1->values.count == 1);
  CHECK(state1->config.checkpoint_ns == "");

  (void)parent.invoke(Result{}, parent_config);
  const auto state2 = child.get_state(child_config);
  REQUIRE(state2);
  CHECK(state2->values.count == 2);
}

// ---- tests/test_parent_command.py

namespace {
struct JumpParent {
  int jump_from_idx = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"jump_from_idx">(&JumpParent::jump_from_idx)};
  }
};
struct JumpChild {
  bool jump = false;
  static constexpr auto schema() { return std::tuple{sg::field<"jump">(&JumpChild::jump)}; }
};
}  // namespace

TEST_CASE("langgraph/test_parent_command.py::test_parent_command_from_nested_subgraph") {
  // A graph invoked inside parent_first returns Command(graph=PARENT, goto="parent_second"):
  // parent_first stops there (the code after the call never runs) and parent_second runs.
  sg::StateGraph<JumpChild> child_builder;
  child_builder.add_node("node", [](const JumpChild& s) -> sg::Command<JumpChild> {
    if (s.jump) return {.go_to = {"parent_second"}, .graph = sg::PARENT};
    return {.update = sg::Update<JumpChild>::from_state(s)};
  });
  child_builder.add_edge(sg::START, "node");
  const auto child_0 = child_builder.compile();
  const auto child_1 = child_builder.compile();

  sg::StateGraph<JumpParent> parent_builder;
  parent_builder.add_node("parent_first", [child_0, child_1](const JumpParent& s) {
    (void)child_0.invoke(sg::set<&JumpChild::jump>(s.jump_from_idx == 1));
    if (s.jump_from_idx == 1) throw std::logic_error("Shouldn't be here");
    (void)child_1.invoke(sg::set<&JumpChild::jump>(s.jump_from_idx == 2));
    if (s.jump_from_idx == 2) throw std::logic_error("Shouldn't be here");
    return sg::Update<JumpParent>::from_state(s);
  });
  parent_builder.add_node(
      "parent_second", [](const JumpParent& s) { return sg::Update<JumpParent>::from_state(s); });
  parent_builder.add_edge(sg::START, "parent_first");
  parent_builder.add_edge("parent_second", sg::END);
  // LangGraph compiles this graph although parent_second has no incoming edge.
  const auto graph = parent_builder.compile();

  CHECK(graph.invoke(JumpParent{.jump_from_idx = 1}).state.jump_from_idx == 1);
  CHECK(graph.invoke(JumpParent{.jump_from_idx = 2}).state.jump_from_idx == 2);
}
