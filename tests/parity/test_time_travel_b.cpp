// SPDX-License-Identifier: MIT
// LangGraph's tests/test_time_travel.py, part B (section 5: subgraphs with interrupts, and the
// stateful-subgraph tests of section 8; part A has the rest): replay (invoke from a checkpoint id)
// and fork (update_state, then invoke) with subgraphs.
//
// LangGraph -> stategraph:
//   graph.invoke(None, snapshot.config)          app.resume(at(snapshot.config))
//   graph.invoke(Command(resume=v), cfg)         app.invoke(resume_with<S>(v), cfg)
//   graph.update_state(cfg, values[, as_node])   app.update_state(at(cfg), update[, as_node])
//   get_state(subgraphs=True).tasks[0].state     the subgraph namespace's latest checkpoint, read
//                                                from the saver (subgraph_checkpoint())
//   subgraph compile(checkpointer=True)          SubgraphCheckpointer::persistent
#include "time_travel_common.hpp"

namespace {

/// Adds a subgraph whose state shares no key with the parent's: LangGraph passes it no input
/// and takes nothing back from it.
template <class P, class C>
void add_isolated(sg::StateGraph<P>& g, std::string name, const sg::CompiledGraph<C>& sub) {
  g.add_node(
      std::move(name), sub, [](const P&) { return sg::Update<C>{}; },
      [](const C&) { return sg::Update<P>{}; });
}

/// The subgraph START -> step_a -> ask_human (interrupt "Provide input:") -> step_b.
Graph sub_a_ask_b(Log& calls, sg::CompileOptions options) {
  sg::StateGraph<State> g;
  g.add_node("step_a", step(calls, "step_a", "sub_a"));
  g.add_node("ask_human", ask(calls, "ask_human", "Provide input:", "human:"));
  g.add_node("step_b", step(calls, "step_b", "sub_b"));
  g.add_edge(sg::START, "step_a").add_edge("step_a", "ask_human").add_edge("ask_human", "step_b");
  return g.compile(std::move(options));
}

/// START -> router -> subgraph_node (sub) -> post_process.
Graph router_sub_post(const Graph& sub, std::shared_ptr<sg::Checkpointer> saver, Log& calls) {
  sg::StateGraph<State> g;
  g.add_node("router", step(calls, "router", "routed"));
  g.add_node("subgraph_node", sub);
  g.add_node("post_process", step(calls, "post_process", "post"));
  g.add_edge(sg::START, "router")
      .add_edge("router", "subgraph_node")
      .add_edge("subgraph_node", "post_process");
  return g.compile({.checkpointer = std::move(saver)});
}

template <class S>
List nexts(const History<S>& h) {
  Strings out;
  for (const auto& s : h) out.push_back(paren(s.next));
  return out;
}

template <class S>
List sources(const History<S>& h) {
  Strings out;
  for (const auto& s : h) out.push_back(s.metadata.value("source", std::string("?")));
  return out;
}

/// "source (next)" per checkpoint, newest first.
template <class S>
List source_nexts(const History<S>& h) {
  Strings out;
  for (const auto& s : h)
    out.push_back(s.metadata.value("source", std::string("?")) + " " + paren(s.next));
  return out;
}

/// LangGraph's next(s for s in history if s.next == next): the newest such checkpoint.
template <class S>
sg::StateSnapshot<S> newest_with_next(const History<S>& h, const Strings& next) {
  for (const auto& s : h)
    if (s.next == next) return s;
  throw std::runtime_error("no checkpoint of the history runs next " + paren(next));
}

/// LangGraph's [s for s in history if s.next == next][-1]: the oldest such checkpoint.
template <class S>
sg::StateSnapshot<S> oldest_with_next(const History<S>& h, const Strings& next) {
  for (auto it = h.rbegin(); it != h.rend(); ++it)
    if (it->next == next) return *it;
  throw std::runtime_error("no checkpoint of the history runs next " + paren(next));
}

template <class S>
bool has_interrupts(const sg::StateSnapshot<S>& s) {
  return std::any_of(s.tasks.begin(), s.tasks.end(),
                     [](const sg::TaskState& t) { return !t.interrupts.empty(); });
}

template <class S>
std::string parent_id(const sg::StateSnapshot<S>& s) {
  return s.parent_config ? s.parent_config->checkpoint_id : std::string("<none>");
}

/// "[a, b]": a list value as LangGraph's test prints it.
std::string bracket(const Strings& v) {
  return joined(v, "[", "]");
}
/// "source (next) [values]" per checkpoint, newest first (LangGraph's _checkpoint_summary).
List rows(const History<State>& h) {
  Strings out;
  for (const auto& s : h) {
    out.push_back(s.metadata.value("source", std::string("?")) + " " + paren(s.next) + " " +
                  bracket(s.values.value));
  }
  return out;
}

/// A subgraph node that records "<name>:[its state]" in `started` before interrupt() and in
/// `observed` after it (LangGraph's started / observed lists), then appends "<tag>:<answer>".
auto observing_ask(Log& started, Log& observed, std::string name, std::string question,
                   std::string tag) {
  return [&started, &observed, name = std::move(name), question = std::move(question),
          tag = std::move(tag)](const State& s) {
    started.add(name + ":" + bracket(s.value));
    const auto answer = sg::interrupt(question).get<std::string>();
    observed.add(name + ":" + bracket(s.value));
    return val({tag + ":" + answer});
  };
}

/// The latest checkpoint of the subgraph at `path` (node names from the root graph, e.g.
/// {"outer", "inner"}), whatever task ids its namespace carries. LangGraph's
/// get_state(config, subgraphs=True).tasks[0].state.config (one level per tasks[0].state).
sg::CheckpointConfig subgraph_checkpoint(sg::KvCheckpointer& saver, const std::string& thread_id,
                                         const Strings& path) {
  for (const auto& ns : saver.namespaces(thread_id)) {
    Strings nodes;
    std::size_t begin = 0;
    while (begin <= ns.size() && !ns.empty()) {
      const std::size_t end = std::min(ns.find('|', begin), ns.size());
      const std::string part = ns.substr(begin, end - begin);
      nodes.push_back(part.substr(0, part.find(':')));
      begin = end + 1;
    }
    if (nodes == path) {
      if (auto tuple = saver.get_tuple({thread_id, ns, ""})) return tuple->config;
    }
  }
  throw std::runtime_error("no checkpoint in the subgraph namespace " + paren(path));
}

/// A subgraph node that records "<name>:[its state]" and appends `out`.
auto observing_step(Log& observed, std::string name, std::string out) {
  return [&observed, name = std::move(name), out = std::move(out)](const State& s) {
    observed.add(name + ":" + bracket(s.value));
    return val({out});
  };
}

/// LangGraph's subgraph compile(checkpointer=True).
sg::CompileOptions persistent() {
  sg::CompileOptions options;
  options.subgraph_checkpointer = sg::SubgraphCheckpointer::persistent;
  return options;
}

/// The subgraph START -> step_a -> ask_1 ("Question 1?") -> ask_2 ("Question 2?") -> END.
Graph ask_twice(Log& calls, sg::CompileOptions options) {
  sg::StateGraph<State> g;
  g.add_node("step_a", step(calls, "step_a", "step_a_done"));
  g.add_node("ask_1", ask(calls, "ask_1", "Question 1?", "ask_1:"));
  g.add_node("ask_2", ask(calls, "ask_2", "Question 2?", "ask_2:"));
  g.add_edge(sg::START, "step_a")
      .add_edge("step_a", "ask_1")
      .add_edge("ask_1", "ask_2")
      .add_edge("ask_2", sg::END);
  return g.compile(std::move(options));
}

/// START -> node (the subgraph `sub`).
Graph wrap(const std::string& node, const Graph& sub, sg::CompileOptions options) {
  sg::StateGraph<State> g;
  g.add_node(node, sub);
  g.add_edge(sg::START, node);
  return g.compile(std::move(options));
}

/// START -> outer (persistent) -> inner (persistent): step_a -> ask_1 -> ask_2.
Graph three_levels(std::shared_ptr<sg::Checkpointer> saver, Log& calls) {
  const auto inner = ask_twice(calls, persistent());
  const auto middle = wrap("inner", inner, persistent());
  return wrap("outer", middle, {.checkpointer = std::move(saver)});
}

/// START -> parent_node -> sub_node (persistent, isolated state: step_a -> step_b, both ask).
sg::CompiledGraph<Results> parent_then_asking_sub(std::shared_ptr<sg::Checkpointer> saver,
                                                  Log& started, Log& observed) {
  sg::StateGraph<State> sub;
  sub.add_node("step_a", observing_ask(started, observed, "step_a", "question_a", "a"));
  sub.add_node("step_b", observing_ask(started, observed, "step_b", "question_b", "b"));
  sub.add_edge(sg::START, "step_a").add_edge("step_a", "step_b");
  sg::StateGraph<Results> g;
  g.add_node("parent_node",
             [](const Results&) { return sg::set<&Results::results>(Strings{"p"}); });
  add_isolated(g, "sub_node", sub.compile(persistent()));
  g.add_edge(sg::START, "parent_node").add_edge("parent_node", "sub_node");
  return g.compile({.checkpointer = std::move(saver)});
}

/// START -> parent_node -> sub_node (persistent, isolated state: sub_step appends "s").
sg::CompiledGraph<Results> parent_then_sub(std::shared_ptr<sg::Checkpointer> saver, Log& observed) {
  sg::StateGraph<State> sub;
  sub.add_node("sub_step", observing_step(observed, "sub_step", "s"));
  sub.add_edge(sg::START, "sub_step");
  sg::StateGraph<Results> g;
  g.add_node("parent_node",
             [](const Results&) { return sg::set<&Results::results>(Strings{"p"}); });
  add_isolated(g, "sub_node", sub.compile(persistent()));
  g.add_edge(sg::START, "parent_node").add_edge("parent_node", "sub_node");
  return g.compile({.checkpointer = std::move(saver)});
}

/// parent_step -> mid_node (persistent: mid_step -> inner_node (persistent: inner_step)).
sg::CompiledGraph<Results> nested_three(std::shared_ptr<sg::Checkpointer> saver, Log& observed) {
  sg::StateGraph<State> inner;  // InnerState: inner_trail
  inner.add_node("inner_step", observing_step(observed, "inner_step", "inner"));
  inner.add_edge(sg::START, "inner_step");
  sg::StateGraph<State> mid;  // MidState: mid_trail
  mid.add_node("mid_step", observing_step(observed, "mid_step", "mid"));
  add_isolated(mid, "inner_node", inner.compile(persistent()));
  mid.add_edge(sg::START, "mid_step").add_edge("mid_step", "inner_node");
  sg::StateGraph<Results> g;
  g.add_node("parent_step",
             [](const Results&) { return sg::set<&Results::results>(Strings{"p"}); });
  add_isolated(g, "mid_node", mid.compile(persistent()));
  g.add_edge(sg::START, "parent_step").add_edge("parent_step", "mid_node");
  return g.compile({.checkpointer = std::move(saver)});
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Section 5: subgraph with interrupt

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_subgraph_interrupt_replay_from_parent",
                   Saver, SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  const auto app = router_sub_post(sub_a_ask_b(calls, persistent()), saver.get(), calls);
  const auto config = thread("1");
  CHECK_FALSE(app.invoke(State{}, config).interrupts.empty());
  const auto done = app.invoke(resume_with<State>("answer"), config).state.value;
  CHECK(contains(done, "human:answer"));
  CHECK(contains(done, "sub_b"));
  CHECK(contains(done, "post"));

  // Replay from before the subgraph: it starts fresh and its interrupt fires again.
  const auto before_sub = oldest_with_next(app.get_state_history(config), {"subgraph_node"});
  calls.clear();
  CHECK_FALSE(app.resume(at(before_sub.config)).interrupts.empty());
  CHECK(calls.has("step_a"));
  CHECK(calls.has("ask_human"));
  CHECK_FALSE(calls.has("step_b"));
}

TEST_CASE_TEMPLATE(
    "langgraph/test_time_travel.py::test_subgraph_interrupt_replay_from_interrupt_checkpoint",
    Saver, SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  const auto app = router_sub_post(sub_a_ask_b(calls, persistent()), saver.get(), calls);
  const auto config = thread("1");
  (void)app.invoke(State{}, config);

  // get_state(subgraphs=True): the parent has a task, and the subgraph a checkpoint.
  const auto parent_state = app.get_state(config);
  REQUIRE(parent_state);
  CHECK_FALSE(parent_state->tasks.empty());
  CHECK_NOTHROW((void)subgraph_checkpoint(*saver.get(), "1", {"subgraph_node"}));

  (void)app.invoke(resume_with<State>("answer"), config);
  const auto history = app.get_state_history(config);
  const auto it = std::find_if(history.begin(), history.end(), [](const auto& s) {
    return s.next == Strings{"subgraph_node"} && has_interrupts(s);
  });
  REQUIRE(it != history.end());

  // The subgraph starts fresh during replay: step_a runs, ask_human interrupts again.
  calls.clear();
  CHECK_FALSE(app.resume(at(it->config)).interrupts.empty());
  CHECK(calls.has("step_a"));
  CHECK(calls.has("ask_human"));
  CHECK_FALSE(calls.has("step_b"));
}

TEST_CASE_TEMPLATE(
    "langgraph/test_time_travel.py::test_subgraph_interrupt_replay_from_parent_then_resume", Saver,
    SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  const auto app = router_sub_post(sub_a_ask_b(calls, persistent()), saver.get(), calls);
  const auto config = thread("1");
  (void)app.invoke(State{}, config);
  (void)app.invoke(resume_with<State>("old_answer"), config);

  const auto original = app.get_state_history(config);
  CHECK(nexts(original) ==
        List{"()", "(post_process)", "(subgraph_node)", "(router)", "(__start__)"});
  const auto interrupt_checkpoint = newest_with_next(original, {"subgraph_node"});

  calls.clear();
  const auto replay = app.resume(at(interrupt_checkpoint.config));
  CHECK(first_interrupt(replay) == "Provide input:");
  CHECK(calls.has("step_a"));
  CHECK(calls.has("ask_human"));
  CHECK_FALSE(calls.has("step_b"));

  // A fork checkpoint (interrupt pending) is the latest; its parent is the replay point.
  const auto post_replay = app.get_state_history(config);
  CHECK(nexts(post_replay) == List{"(subgraph_node)", "()", "(post_process)", "(subgraph_node)",
                                   "(router)", "(__start__)"});
  CHECK(sources(post_replay) == List{"fork", "loop", "loop", "loop", "loop", "input"});
  REQUIRE_FALSE(post_replay.empty());
  CHECK(parent_id(post_replay[0]) == interrupt_checkpoint.config.checkpoint_id);

  calls.clear();
  const auto final_result = app.invoke(resume_with<State>("new_answer"), config);
  CHECK(final_result.interrupts.empty());
  CHECK(contains(final_result.state.value, "human:new_answer"));
  CHECK(contains(final_result.state.value, "sub_b"));
  CHECK(contains(final_result.state.value, "post"));
  CHECK(calls.has("ask_human"));
  CHECK(calls.has("step_b"));
  CHECK(calls.has("post_process"));

  const auto final_history = app.get_state_history(config);
  CHECK(nexts(final_history) == List{"()", "(post_process)", "(subgraph_node)", "()",
                                     "(post_process)", "(subgraph_node)", "(router)",
                                     "(__start__)"});
  CHECK(sources(final_history) ==
        List{"loop", "loop", "fork", "loop", "loop", "loop", "loop", "input"});
}

TEST_CASE_TEMPLATE(
    "langgraph/"
    "test_time_travel.py::test_subgraph_interrupt_resume_with_explicit_head_checkpoint_id",
    Saver, SG_PARITY_SAVERS) {
  // Resuming with the head checkpoint id in the config is a resume, not time travel: the
  // subgraph continues from its interrupted node.
  Saver saver;
  Log calls;
  const auto app =
      wrap("subgraph_node", sub_a_ask_b(calls, persistent()), {.checkpointer = saver.get()});
  const auto config = thread("1");
  (void)app.invoke(State{}, config);
  CHECK(calls.all() == List{"step_a", "ask_human"});

  const auto head = app.get_state(config);
  REQUIRE(head);
  calls.clear();
  sg::RunConfig resume_config = thread("1");
  resume_config.checkpoint_id = head->config.checkpoint_id;
  resume_config.checkpoint_ns = "";
  const auto result = app.invoke(resume_with<State>("answer"), resume_config);
  CHECK(calls.all() == List{"ask_human", "step_b"});
  CHECK(result.interrupts.empty());
  CHECK(List(result.state.value) == List{"sub_a", "human:answer", "sub_b"});
}

TEST_CASE_TEMPLATE(
    "langgraph/test_time_travel.py::test_subgraph_replay_loads_accumulated_state_then_resume",
    Saver, SG_PARITY_SAVERS) {
  // The persistent subgraph loads, on replay, the state it had at the replayed parent
  // checkpoint (the end of the 1st invocation).
  Saver saver;
  Log started;
  sg::StateGraph<State> sub;  // SubState: value
  sub.add_node("step_a", [&started](const State& s) {
    started.add(bracket(s.value));
    return val({"a:" + sg::interrupt("question_a").get<std::string>()});
  });
  sub.add_edge(sg::START, "step_a");
  sg::StateGraph<Results> g;
  g.add_node("parent_node",
             [](const Results&) { return sg::set<&Results::results>(Strings{"p"}); });
  add_isolated(g, "sub_node", sub.compile(persistent()));
  g.add_edge(sg::START, "parent_node").add_edge("parent_node", "sub_node");
  const auto app = g.compile({.checkpointer = saver.get()});
  const auto config = thread("1");

  (void)app.invoke(Results{}, config);
  (void)app.invoke(resume_with<Results>("a1"), config);
  CHECK(started.at(0) == "[]");  // a fresh subgraph

  started.clear();
  (void)app.invoke(Results{}, config);
  (void)app.invoke(resume_with<Results>("a2"), config);
  CHECK(started.at(0) == "[a:a1]");  // kept from the 1st invocation

  const auto original = app.get_state_history(config);
  CHECK(nexts(original) == List{"()", "(sub_node)", "(parent_node)", "(__start__)", "()",
                                "(sub_node)", "(parent_node)", "(__start__)"});

  // Replay from before sub_node in the 2nd invocation (the newest match).
  const auto before_sub_2nd = newest_with_next(original, {"sub_node"});
  started.clear();
  CHECK_FALSE(app.resume(at(before_sub_2nd.config)).interrupts.empty());
  CHECK(started.at(0) == "[a:a1]");

  const auto post_replay = app.get_state_history(config);
  CHECK(nexts(post_replay) == List{"(sub_node)", "()", "(sub_node)", "(parent_node)", "(__start__)",
                                   "()", "(sub_node)", "(parent_node)", "(__start__)"});
  CHECK(sources(post_replay) ==
        List{"fork", "loop", "loop", "loop", "input", "loop", "loop", "loop", "input"});

  started.clear();
  const auto final_result = app.invoke(resume_with<Results>("a3"), config);
  CHECK(final_result.interrupts.empty());
  CHECK(List(final_result.state.results) == List{"p", "p"});

  const auto final_history = app.get_state_history(config);
  CHECK(nexts(final_history) == List{"()", "(sub_node)", "()", "(sub_node)", "(parent_node)",
                                     "(__start__)", "()", "(sub_node)", "(parent_node)",
                                     "(__start__)"});
  CHECK(sources(final_history) ==
        List{"loop", "fork", "loop", "loop", "loop", "input", "loop", "loop", "loop", "input"});
}

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_subgraph_interrupt_full_flow", Saver,
                   SG_PARITY_SAVERS) {
  // Fork from the subgraph's own checkpoint, answer the re-fired interrupt: the subgraph and
  // then the parent complete.
  Saver saver;
  Log calls;
  const auto app = router_sub_post(sub_a_ask_b(calls, persistent()), saver.get(), calls);
  const auto config = thread("1");
  CHECK_FALSE(app.invoke(State{}, config).interrupts.empty());
  CHECK(calls.has("router"));
  CHECK(calls.has("step_a"));
  CHECK(calls.has("ask_human"));

  const auto sub_config = subgraph_checkpoint(*saver.get(), "1", {"subgraph_node"});
  calls.clear();
  const auto fork = app.update_state(at(sub_config), val({"sub_forked"}));
  CHECK(first_interrupt(app.resume(at(fork))) == "Provide input:");

  calls.clear();
  const auto final_result = app.invoke(resume_with<State>("new_answer"), at(fork));
  CHECK(calls.has("ask_human"));
  CHECK(contains(final_result.state.value, "human:new_answer"));
  CHECK(calls.has("step_b"));
  CHECK(contains(final_result.state.value, "sub_b"));
  CHECK(calls.has("post_process"));
  CHECK(contains(final_result.state.value, "post"));
}

TEST_CASE_TEMPLATE(
    "langgraph/test_time_travel.py::test_subgraph_interrupt_full_flow_no_sub_checkpointer", Saver,
    SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  const auto app = router_sub_post(sub_a_ask_b(calls, {}), saver.get(), calls);
  const auto config = thread("1");
  CHECK_FALSE(app.invoke(State{}, config).interrupts.empty());
  const auto original = app.invoke(resume_with<State>("original"), config).state.value;
  CHECK(contains(original, "human:original"));
  CHECK(contains(original, "post"));

  // Fork from the parent checkpoint before the subgraph.
  const auto before_sub = oldest_with_next(app.get_state_history(config), {"subgraph_node"});
  calls.clear();
  const auto fork = app.update_state(at(before_sub.config), val({"forked"}));
  CHECK(first_interrupt(app.resume(at(fork))) == "Provide input:");

  calls.clear();
  const auto final_result = app.invoke(resume_with<State>("new_answer"), at(fork));
  CHECK(contains(final_result.state.value, "human:new_answer"));
  CHECK(calls.has("step_b"));
  CHECK(contains(final_result.state.value, "sub_b"));
  CHECK(calls.has("post_process"));
  CHECK(contains(final_result.state.value, "post"));
}

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_subgraph_replay_from_subgraph_checkpoint",
                   Saver, SG_PARITY_SAVERS) {
  // Replay the parent from the subgraph's own checkpoint (no fork): the subgraph resumes there
  // and the parent completes afterwards.
  Saver saver;
  Log calls;
  const auto app = router_sub_post(sub_a_ask_b(calls, persistent()), saver.get(), calls);
  const auto config = thread("1");
  CHECK_FALSE(app.invoke(State{}, config).interrupts.empty());
  const auto sub_config = subgraph_checkpoint(*saver.get(), "1", {"subgraph_node"});

  calls.clear();
  CHECK(first_interrupt(app.resume(at(sub_config))) == "Provide input:");

  calls.clear();
  const auto final_result = app.invoke(resume_with<State>("replayed_answer"), at(sub_config));
  CHECK(calls.has("ask_human"));
  CHECK(contains(final_result.state.value, "human:replayed_answer"));
  CHECK(calls.has("step_b"));
  CHECK(contains(final_result.state.value, "sub_b"));
  CHECK(calls.has("post_process"));
  CHECK(contains(final_result.state.value, "post"));
}

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_subgraph_time_travel_to_first_interrupt",
                   Saver, SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  const auto app = wrap("executor", ask_twice(calls, persistent()), {.checkpointer = saver.get()});
  const auto config = thread("1");
  CHECK(first_interrupt(app.invoke(State{}, config)) == "Question 1?");
  const auto sub_at_first = subgraph_checkpoint(*saver.get(), "1", {"executor"});
  CHECK(first_interrupt(app.invoke(resume_with<State>("answer_1"), config)) == "Question 2?");
  CHECK(app.invoke(resume_with<State>("answer_2"), config).interrupts.empty());

  // Replay from the subgraph checkpoint at the 1st interrupt: ask_1 fires again, step_a does
  // not run.
  calls.clear();
  CHECK(first_interrupt(app.resume(at(sub_at_first))) == "Question 1?");
  CHECK_FALSE(calls.has("step_a"));
  CHECK(calls.has("ask_1"));

  // Fork from the same checkpoint.
  calls.clear();
  const auto fork = app.update_state(at(sub_at_first), val({"forked"}));
  CHECK(first_interrupt(app.resume(at(fork))) == "Question 1?");
  CHECK_FALSE(calls.has("step_a"));
  CHECK(calls.has("ask_1"));
}

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_subgraph_time_travel_to_second_interrupt",
                   Saver, SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  const auto app = wrap("executor", ask_twice(calls, persistent()), {.checkpointer = saver.get()});
  const auto config = thread("1");
  CHECK(first_interrupt(app.invoke(State{}, config)) == "Question 1?");
  CHECK(first_interrupt(app.invoke(resume_with<State>("answer_1"), config)) == "Question 2?");
  const auto sub_config = subgraph_checkpoint(*saver.get(), "1", {"executor"});
  CHECK(app.invoke(resume_with<State>("answer_2"), config).interrupts.empty());

  calls.clear();
  CHECK(first_interrupt(app.resume(at(sub_config))) == "Question 2?");
  CHECK_FALSE(calls.has("step_a"));
  CHECK_FALSE(calls.has("ask_1"));

  calls.clear();
  const auto fork = app.update_state(at(sub_config), val({"forked"}));
  CHECK(first_interrupt(app.resume(at(fork))) == "Question 2?");
  CHECK_FALSE(calls.has("step_a"));
  CHECK_FALSE(calls.has("ask_1"));
}

TEST_CASE_TEMPLATE(
    "langgraph/test_time_travel.py::test_subgraph_time_travel_resume_from_first_interrupt", Saver,
    SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  const auto app = wrap("executor", ask_twice(calls, persistent()), {.checkpointer = saver.get()});
  const auto config = thread("1");
  (void)app.invoke(State{}, config);
  const auto sub_at_first = subgraph_checkpoint(*saver.get(), "1", {"executor"});
  (void)app.invoke(resume_with<State>("answer_1"), config);
  (void)app.invoke(resume_with<State>("answer_2"), config);
  CHECK(rows(app.get_state_history(config)) ==
        List{
            "loop () [step_a_done, ask_1:answer_1, ask_2:answer_2]",
            "loop (executor) []",
            "input (__start__) []",
        });

  calls.clear();
  CHECK(first_interrupt(app.resume(at(sub_at_first))) == "Question 1?");
  CHECK_FALSE(calls.has("step_a"));
  // The fork is now the latest parent checkpoint.
  CHECK(source_nexts(app.get_state_history(config)) ==
        List{"fork (executor)", "loop ()", "loop (executor)", "input (__start__)"});

  calls.clear();
  CHECK(first_interrupt(app.invoke(resume_with<State>("new_answer_1"), config)) == "Question 2?");
  CHECK(calls.has("ask_1"));
  calls.clear();
  const auto done = app.invoke(resume_with<State>("new_answer_2"), config);
  CHECK(List(done.state.value) == List{"step_a_done", "ask_1:new_answer_1", "ask_2:new_answer_2"});

  CHECK(rows(app.get_state_history(config)) ==
        List{
            // the new branch (from the time-travel fork)
            "loop () [step_a_done, ask_1:new_answer_1, ask_2:new_answer_2]",
            "fork (executor) []",
            // the original branch (preserved)
            "loop () [step_a_done, ask_1:answer_1, ask_2:answer_2]",
            "loop (executor) []",
            "input (__start__) []",
        });
}

TEST_CASE_TEMPLATE(
    "langgraph/test_time_travel.py::test_subgraph_time_travel_resume_from_second_interrupt", Saver,
    SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  const auto app = wrap("executor", ask_twice(calls, persistent()), {.checkpointer = saver.get()});
  const auto config = thread("1");
  (void)app.invoke(State{}, config);
  (void)app.invoke(resume_with<State>("answer_1"), config);
  const auto sub_at_second = subgraph_checkpoint(*saver.get(), "1", {"executor"});
  (void)app.invoke(resume_with<State>("answer_2"), config);
  CHECK(rows(app.get_state_history(config)) ==
        List{
            "loop () [step_a_done, ask_1:answer_1, ask_2:answer_2]",
            "loop (executor) []",
            "input (__start__) []",
        });

  calls.clear();
  CHECK(first_interrupt(app.resume(at(sub_at_second))) == "Question 2?");
  CHECK_FALSE(calls.has("step_a"));
  CHECK_FALSE(calls.has("ask_1"));  // already answered
  CHECK(source_nexts(app.get_state_history(config)) ==
        List{"fork (executor)", "loop ()", "loop (executor)", "input (__start__)"});

  // Answer ask_2 again: ask_1's original answer is kept.
  calls.clear();
  const auto done = app.invoke(resume_with<State>("new_answer_2"), config);
  CHECK(List(done.state.value) == List{"step_a_done", "ask_1:answer_1", "ask_2:new_answer_2"});
  CHECK(rows(app.get_state_history(config)) ==
        List{
            "loop () [step_a_done, ask_1:answer_1, ask_2:new_answer_2]",
            "fork (executor) []",
            "loop () [step_a_done, ask_1:answer_1, ask_2:answer_2]",
            "loop (executor) []",
            "input (__start__) []",
        });
}

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_subgraph_time_travel_checkpoint_pattern",
                   Saver, SG_PARITY_SAVERS) {
  Saver saver;
  sg::StateGraph<State> executor;
  executor.add_node(
      "ask", [](const State&) { return val({"a:" + sg::interrupt("Q?").get<std::string>()}); });
  executor.add_edge(sg::START, "ask");
  const auto app = wrap("executor", executor.compile(persistent()), {.checkpointer = saver.get()});
  const auto config = thread("1");

  (void)app.invoke(State{}, config);
  const auto sub_config = subgraph_checkpoint(*saver.get(), "1", {"executor"});
  // LangGraph's sub_config["configurable"]["checkpoint_map"][""]: the parent checkpoint whose
  // task ran the subgraph.
  const auto replay_point = app.get_state(config);
  REQUIRE(replay_point);
  (void)app.invoke(resume_with<State>("first"), config);
  CHECK(rows(app.get_state_history(config)) ==
        List{"loop () [a:first]", "loop (executor) []", "input (__start__) []"});

  (void)app.resume(at(sub_config));  // time travel to the interrupt
  const auto post_tt = app.get_state_history(config);
  CHECK(source_nexts(post_tt) ==
        List{"fork (executor)", "loop ()", "loop (executor)", "input (__start__)"});
  REQUIRE_FALSE(post_tt.empty());
  CHECK(parent_id(post_tt[0]) == replay_point->config.checkpoint_id);

  const auto result = app.invoke(resume_with<State>("second"), config);
  CHECK(List(result.state.value) == List{"a:second"});
  CHECK(rows(app.get_state_history(config)) == List{
                                                   "loop () [a:second]",
                                                   "fork (executor) []",
                                                   "loop () [a:first]",
                                                   "loop (executor) []",
                                                   "input (__start__) []",
                                               });
}

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_subgraph_time_travel_after_completion",
                   Saver, SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  const auto app = wrap("executor", ask_twice(calls, persistent()), {.checkpointer = saver.get()});
  const auto config = thread("1");
  (void)app.invoke(State{}, config);
  (void)app.invoke(resume_with<State>("answer_1"), config);
  (void)app.invoke(resume_with<State>("answer_2"), config);
  const auto final_state = app.get_state(config);
  REQUIRE(final_state);
  CHECK(final_state->tasks.empty());

  // Replaying the final parent checkpoint does nothing.
  calls.clear();
  const auto replay = app.resume(at(final_state->config));
  CHECK(replay.interrupts.empty());
  CHECK_FALSE(calls.has("step_a"));
  CHECK_FALSE(calls.has("ask_1"));
  CHECK_FALSE(calls.has("ask_2"));
  CHECK(contains(replay.state.value, "step_a_done"));
  CHECK(contains(replay.state.value, "ask_1:answer_1"));
  CHECK(contains(replay.state.value, "ask_2:answer_2"));
}

TEST_CASE_TEMPLATE(
    "langgraph/test_time_travel.py::test_3_levels_deep_time_travel_to_first_interrupt", Saver,
    SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  const auto app = three_levels(saver.get(), calls);
  const auto config = thread("1");
  CHECK(first_interrupt(app.invoke(State{}, config)) == "Question 1?");
  const auto inner_config = subgraph_checkpoint(*saver.get(), "1", {"outer", "inner"});
  (void)app.invoke(resume_with<State>("answer_1"), config);
  (void)app.invoke(resume_with<State>("answer_2"), config);

  calls.clear();
  CHECK(first_interrupt(app.resume(at(inner_config))) == "Question 1?");
  CHECK_FALSE(calls.has("step_a"));
  CHECK(calls.has("ask_1"));

  calls.clear();
  const auto fork = app.update_state(at(inner_config), val({"forked"}));
  CHECK(first_interrupt(app.resume(at(fork))) == "Question 1?");
  CHECK_FALSE(calls.has("step_a"));
  CHECK(calls.has("ask_1"));
}

TEST_CASE_TEMPLATE(
    "langgraph/test_time_travel.py::test_3_levels_deep_time_travel_to_second_interrupt", Saver,
    SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  const auto app = three_levels(saver.get(), calls);
  const auto config = thread("1");
  (void)app.invoke(State{}, config);
  CHECK(first_interrupt(app.invoke(resume_with<State>("answer_1"), config)) == "Question 2?");
  const auto inner_config = subgraph_checkpoint(*saver.get(), "1", {"outer", "inner"});
  (void)app.invoke(resume_with<State>("answer_2"), config);

  calls.clear();
  CHECK(first_interrupt(app.resume(at(inner_config))) == "Question 2?");
  CHECK_FALSE(calls.has("step_a"));
  CHECK_FALSE(calls.has("ask_1"));

  calls.clear();
  const auto fork = app.update_state(at(inner_config), val({"forked"}));
  CHECK(first_interrupt(app.resume(at(fork))) == "Question 2?");
  CHECK_FALSE(calls.has("step_a"));
  CHECK_FALSE(calls.has("ask_1"));
}

TEST_CASE_TEMPLATE(
    "langgraph/test_time_travel.py::test_3_levels_deep_time_travel_to_middle_subgraph", Saver,
    SG_PARITY_SAVERS) {
  // Time travel to the middle subgraph's checkpoint at the 2nd interrupt: it replays the inner
  // subgraph from the right point.
  Saver saver;
  Log calls;
  const auto app = three_levels(saver.get(), calls);
  const auto config = thread("1");
  (void)app.invoke(State{}, config);
  (void)app.invoke(resume_with<State>("answer_1"), config);
  const auto mid_config = subgraph_checkpoint(*saver.get(), "1", {"outer"});
  (void)app.invoke(resume_with<State>("answer_2"), config);

  calls.clear();
  CHECK_FALSE(app.resume(at(mid_config)).interrupts.empty());
  calls.clear();
  const auto fork = app.update_state(at(mid_config), val({"forked"}));
  CHECK_FALSE(app.resume(at(fork)).interrupts.empty());
}

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_3_levels_deep_middle_has_interrupts", Saver,
                   SG_PARITY_SAVERS) {
  // outer (persistent): pre (interrupt) -> inner (persistent): step_a -> ask_1 (interrupt).
  Saver saver;
  Log calls;
  sg::StateGraph<State> inner;
  inner.add_node("step_a", step(calls, "step_a", "step_a_done"));
  inner.add_node("ask_1", ask(calls, "ask_1", "Question 1?", "ask_1:"));
  inner.add_edge(sg::START, "step_a").add_edge("step_a", "ask_1").add_edge("ask_1", sg::END);
  sg::StateGraph<State> middle;
  middle.add_node("pre", ask(calls, "pre", "Pre-question?", "pre:"));
  middle.add_node("inner", inner.compile(persistent()));
  middle.add_edge(sg::START, "pre").add_edge("pre", "inner").add_edge("inner", sg::END);
  const auto app = wrap("outer", middle.compile(persistent()), {.checkpointer = saver.get()});
  const auto config = thread("1");

  CHECK(first_interrupt(app.invoke(State{}, config)) == "Pre-question?");
  const auto mid_at_pre = subgraph_checkpoint(*saver.get(), "1", {"outer"});
  CHECK(first_interrupt(app.invoke(resume_with<State>("pre_answer"), config)) == "Question 1?");
  const auto mid_at_ask1 = subgraph_checkpoint(*saver.get(), "1", {"outer"});
  CHECK(app.invoke(resume_with<State>("answer_1"), config).interrupts.empty());

  // Time travel to the middle checkpoint at the pre interrupt: only pre runs (and fires again).
  calls.clear();
  CHECK(first_interrupt(app.resume(at(mid_at_pre))) == "Pre-question?");
  CHECK(calls.has("pre"));
  CHECK_FALSE(calls.has("step_a"));
  CHECK_FALSE(calls.has("ask_1"));

  calls.clear();
  auto fork = app.update_state(at(mid_at_pre), val({"forked"}));
  CHECK(first_interrupt(app.resume(at(fork))) == "Pre-question?");
  CHECK(calls.has("pre"));
  CHECK_FALSE(calls.has("step_a"));

  // Time travel to the middle checkpoint at the ask_1 interrupt: pre does not run again.
  calls.clear();
  CHECK(first_interrupt(app.resume(at(mid_at_ask1))) == "Question 1?");
  CHECK_FALSE(calls.has("pre"));
  CHECK(calls.has("ask_1"));

  calls.clear();
  fork = app.update_state(at(mid_at_ask1), val({"forked"}));
  CHECK(first_interrupt(app.resume(at(fork))) == "Question 1?");
  CHECK_FALSE(calls.has("pre"));
  CHECK(calls.has("ask_1"));
}

// ---------------------------------------------------------------------------------------------
// Section 8: stateful subgraphs on replay

TEST_CASE_TEMPLATE(
    "langgraph/test_time_travel.py::test_stateful_subgraph_retains_state_on_parent_replay", Saver,
    SG_PARITY_SAVERS) {
  Saver saver;
  Log started;
  Log observed;
  const auto app = parent_then_asking_sub(saver.get(), started, observed);
  const auto config = thread("1");

  (void)app.invoke(Results{}, config);
  (void)app.invoke(resume_with<Results>("a1"), config);
  (void)app.invoke(resume_with<Results>("b1"), config);
  CHECK(observed.at(0) == "step_a:[]");  // a fresh subgraph
  CHECK(observed.at(1) == "step_b:[a:a1]");

  observed.clear();
  (void)app.invoke(Results{}, config);
  (void)app.invoke(resume_with<Results>("a2"), config);
  (void)app.invoke(resume_with<Results>("b2"), config);
  CHECK(observed.at(0) == "step_a:[a:a1, b:b1]");  // kept from the 1st invocation
  CHECK(observed.at(1) == "step_b:[a:a1, b:b1, a:a2]");

  // Replay from before sub_node in the 2nd invocation: the subgraph sees the state it had
  // then (the end of the 1st invocation), not its latest.
  const auto before_sub_2nd = newest_with_next(app.get_state_history(config), {"sub_node"});
  started.clear();
  CHECK_FALSE(app.resume(at(before_sub_2nd.config)).interrupts.empty());
  CHECK(started.at(0) == "step_a:[a:a1, b:b1]");
}

TEST_CASE_TEMPLATE(
    "langgraph/test_time_travel.py::test_stateful_subgraph_retains_state_on_parent_fork", Saver,
    SG_PARITY_SAVERS) {
  Saver saver;
  Log started;
  Log observed;
  const auto app = parent_then_asking_sub(saver.get(), started, observed);
  const auto config = thread("1");
  for (const char* round : {"1", "2"}) {
    (void)app.invoke(Results{}, config);
    (void)app.invoke(resume_with<Results>(std::string("a") + round), config);
    (void)app.invoke(resume_with<Results>(std::string("b") + round), config);
  }

  const auto before_sub_2nd = newest_with_next(app.get_state_history(config), {"sub_node"});
  const auto fork =
      app.update_state(at(before_sub_2nd.config), sg::set<&Results::results>(Strings{"forked"}));
  started.clear();
  CHECK_FALSE(app.resume(at(fork)).interrupts.empty());
  // LangGraph's `observed` records on entry here: our `started`.
  CHECK(started.at(0) == "step_a:[a:a1, b:b1]");
}

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_stateful_subgraph_loads_state_across_ticks",
                   Saver, SG_PARITY_SAVERS) {
  // node_a -> node_b -> sub_node: replaying from node_a of the 2nd invocation, the subgraph
  // (in a later step) loads the state it had at the end of the 1st invocation.
  Saver saver;
  Log observed;
  sg::StateGraph<State> sub;
  sub.add_node("sub_step", observing_step(observed, "sub_step", "s"));
  sub.add_edge(sg::START, "sub_step");
  sg::StateGraph<Results> g;
  g.add_node("node_a", [](const Results&) { return sg::set<&Results::results>(Strings{"a"}); });
  g.add_node("node_b", [](const Results&) { return sg::set<&Results::results>(Strings{"b"}); });
  add_isolated(g, "sub_node", sub.compile(persistent()));
  g.add_edge(sg::START, "node_a").add_edge("node_a", "node_b").add_edge("node_b", "sub_node");
  const auto app = g.compile({.checkpointer = saver.get()});
  const auto config = thread("1");

  (void)app.invoke(Results{}, config);
  CHECK(observed.at(0) == "sub_step:[]");
  observed.clear();
  (void)app.invoke(Results{}, config);
  CHECK(observed.at(0) == "sub_step:[s]");

  const auto before_a_2nd = newest_with_next(app.get_state_history(config), {"node_a"});
  observed.clear();
  (void)app.resume(at(before_a_2nd.config));
  CHECK(observed.at(0) == "sub_step:[s]");
}

TEST_CASE_TEMPLATE(
    "langgraph/test_time_travel.py::test_stateful_subgraph_loads_latest_after_replay", Saver,
    SG_PARITY_SAVERS) {
  // After a replay, the next invocation loads the subgraph state the replay made, not the one
  // of the replayed checkpoint.
  Saver saver;
  Log observed;
  const auto app = parent_then_sub(saver.get(), observed);
  const auto config = thread("1");
  (void)app.invoke(Results{}, config);
  CHECK(observed.last() == "sub_step:[]");
  (void)app.invoke(Results{}, config);
  CHECK(observed.last() == "sub_step:[s]");

  const auto before_parent_2nd = newest_with_next(app.get_state_history(config), {"parent_node"});
  observed.clear();
  (void)app.resume(at(before_parent_2nd.config));
  CHECK(observed.at(0) == "sub_step:[s]");

  observed.clear();
  (void)app.invoke(Results{}, config);
  CHECK(observed.at(0) == "sub_step:[s, s]");
}

TEST_CASE_TEMPLATE(
    "langgraph/test_time_travel.py::test_three_level_nested_subgraph_loads_state_on_replay", Saver,
    SG_PARITY_SAVERS) {
  Saver saver;
  Log observed;
  const auto app = nested_three(saver.get(), observed);
  const auto config = thread("1");
  (void)app.invoke(Results{}, config);
  CHECK(observed.all() == List{"mid_step:[]", "inner_step:[]"});
  observed.clear();
  (void)app.invoke(Results{}, config);
  CHECK(observed.all() == List{"mid_step:[mid]", "inner_step:[inner]"});

  const auto before_parent_2nd = newest_with_next(app.get_state_history(config), {"parent_step"});
  observed.clear();
  (void)app.resume(at(before_parent_2nd.config));
  CHECK(observed.all() == List{"mid_step:[mid]", "inner_step:[inner]"});

  observed.clear();
  (void)app.invoke(Results{}, config);
  CHECK(observed.all() == List{"mid_step:[mid, mid]", "inner_step:[inner, inner]"});
}

TEST_CASE_TEMPLATE(
    "langgraph/test_time_travel.py::test_three_level_nested_subgraph_loads_state_on_fork", Saver,
    SG_PARITY_SAVERS) {
  Saver saver;
  Log observed;
  const auto app = nested_three(saver.get(), observed);
  const auto config = thread("1");
  (void)app.invoke(Results{}, config);
  (void)app.invoke(Results{}, config);

  const auto before_parent_2nd = newest_with_next(app.get_state_history(config), {"parent_step"});
  const auto fork =
      app.update_state(at(before_parent_2nd.config), sg::set<&Results::results>(Strings{"forked"}));
  observed.clear();
  (void)app.resume(at(fork));
  CHECK(observed.all() == List{"mid_step:[mid]", "inner_step:[inner]"});
}

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_replay_from_first_invocation_checkpoint",
                   Saver, SG_PARITY_SAVERS) {
  // Replaying the 1st invocation: no subgraph checkpoint existed yet, so it starts empty.
  Saver saver;
  Log observed;
  const auto app = parent_then_sub(saver.get(), observed);
  const auto config = thread("1");
  (void)app.invoke(Results{}, config);
  (void)app.invoke(Results{}, config);

  const auto before_sub_1st = oldest_with_next(app.get_state_history(config), {"sub_node"});
  observed.clear();
  (void)app.resume(at(before_sub_1st.config));
  CHECK(observed.at(0) == "sub_step:[]");
}

TEST_CASE_TEMPLATE(
    "langgraph/test_time_travel.py::test_parallel_subgraph_nodes_load_correct_state_on_replay",
    Saver, SG_PARITY_SAVERS) {
  // Two persistent subgraphs fanned out from parent_step each load their own state.
  Saver saver;
  Log observed;
  sg::StateGraph<State> sub_a;  // SubStateA: a_trail
  sub_a.add_node("sub_a_step", observing_step(observed, "sub_a", "a"));
  sub_a.add_edge(sg::START, "sub_a_step");
  sg::StateGraph<State> sub_b;  // SubStateB: b_trail
  sub_b.add_node("sub_b_step", observing_step(observed, "sub_b", "b"));
  sub_b.add_edge(sg::START, "sub_b_step");
  sg::StateGraph<Results> g;
  g.add_node("parent_step",
             [](const Results&) { return sg::set<&Results::results>(Strings{"p"}); });
  add_isolated(g, "sub_a_node", sub_a.compile(persistent()));
  add_isolated(g, "sub_b_node", sub_b.compile(persistent()));
  g.add_edge(sg::START, "parent_step")
      .add_edge("parent_step", "sub_a_node")
      .add_edge("parent_step", "sub_b_node");
  const auto app = g.compile({.checkpointer = saver.get()});
  const auto config = thread("1");

  (void)app.invoke(Results{}, config);
  CHECK(observed.starting_with("sub_a:").items.at(0) == "sub_a:[]");
  CHECK(observed.starting_with("sub_b:").items.at(0) == "sub_b:[]");
  observed.clear();
  (void)app.invoke(Results{}, config);
  CHECK(observed.starting_with("sub_a:").items.at(0) == "sub_a:[a]");
  CHECK(observed.starting_with("sub_b:").items.at(0) == "sub_b:[b]");

  const auto before_parent_2nd = newest_with_next(app.get_state_history(config), {"parent_step"});
  observed.clear();
  (void)app.resume(at(before_parent_2nd.config));
  CHECK(observed.starting_with("sub_a:").items.at(0) == "sub_a:[a]");
  CHECK(observed.starting_with("sub_b:").items.at(0) == "sub_b:[b]");

  observed.clear();
  (void)app.invoke(Results{}, config);
  CHECK(observed.starting_with("sub_a:").items.at(0) == "sub_a:[a, a]");
  CHECK(observed.starting_with("sub_b:").items.at(0) == "sub_b:[b, b]");
}

namespace {
/// ParentState of the loop test: counter (last value) and results (operator.add).
struct Counter {
  int counter = 0;
  std::vector<std::string> results{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"counter">(&Counter::counter),
                      sg::field<"results">(&Counter::results, sg::concat)};
  }
};
}  // namespace

TEST_CASE_TEMPLATE(
    "langgraph/test_time_travel.py::test_subgraph_called_in_loop_loads_state_on_replay", Saver,
    SG_PARITY_SAVERS) {
  // inc -> sub_node -> (inc while counter < 2): the persistent subgraph runs twice per
  // invocation; a replay restores its state from the right point of the parent's timeline.
  Saver saver;
  Log observed;
  sg::StateGraph<State> sub;  // SubState: sub_trail
  sub.add_node("sub_step", observing_step(observed, "sub_step", "s"));
  sub.add_edge(sg::START, "sub_step");
  sg::StateGraph<Counter> g;
  g.add_node("inc", [](const Counter& s) {
    return sg::set<&Counter::counter>(s.counter + 1)
        .set<&Counter::results>(Strings{"inc:" + std::to_string(s.counter)});
  });
  add_isolated(g, "sub_node", sub.compile(persistent()));
  g.add_edge(sg::START, "inc").add_edge("inc", "sub_node");
  g.add_conditional_edges("sub_node",
                          [](const Counter& s) { return s.counter < 2 ? "inc" : sg::END; },
                          {"inc", sg::END});
  const auto app = g.compile({.checkpointer = saver.get()});
  const auto config = thread("1");

  (void)app.invoke(Counter{}, config);
  CHECK(observed.all() == List{"sub_step:[]", "sub_step:[s]"});
  observed.clear();
  (void)app.invoke(Counter{}, config);
  CHECK(observed.all() == List{"sub_step:[s, s]", "sub_step:[s, s, s]"});

  // The newest checkpoint before inc with counter == k (the 2nd invocation's).
  const auto history = app.get_state_history(config);
  auto before_inc = [&](int counter) {
    for (const auto& s : history)
      if (s.next == Strings{"inc"} && s.values.counter == counter) return s;
    throw std::runtime_error("no checkpoint before inc with counter " + std::to_string(counter));
  };

  // From the start of the 2nd invocation's loop: both calls again, from the 1st's end state.
  observed.clear();
  (void)app.resume(at(before_inc(0).config));
  CHECK(observed.all() == List{"sub_step:[s, s]", "sub_step:[s, s, s]"});

  // From mid-loop: one call, with the state after the 2nd invocation's first call.
  observed.clear();
  (void)app.resume(at(before_inc(1).config));
  CHECK(observed.all() == List{"sub_step:[s, s, s]"});
}
