// SPDX-License-Identifier: MIT
// LangGraph's tests/test_time_travel.py, part A (sections 1-4, 6, 7 and the append-only history
// tests of section 8; part B has the subgraph interrupt and stateful-subgraph tests): replay
// (invoke from a checkpoint id) and fork (update_state, then invoke), on plain graphs, with
// interrupts and with subgraphs.
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

/// "[a, b]": a list value as LangGraph's test prints it.
std::string bracket(const Strings& v) {
  return joined(v, "[", "]");
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

/// Adds a subgraph whose state shares no key with the parent's: LangGraph passes it no input
/// and takes nothing back from it.
template <class P, class C>
void add_isolated(sg::StateGraph<P>& g, std::string name, const sg::CompiledGraph<C>& sub) {
  g.add_node(
      std::move(name), sub, [](const P&) { return sg::Update<C>{}; },
      [](const C&) { return sg::Update<P>{}; });
}

/// START -> node_a -> ask_human (interrupt "What is your input?") -> node_b.
Graph a_ask_b(std::shared_ptr<sg::Checkpointer> saver, Log& calls) {
  sg::StateGraph<State> g;
  g.add_node("node_a", step(calls, "node_a", "a"));
  g.add_node("ask_human", ask(calls, "ask_human", "What is your input?", "human:"));
  g.add_node("node_b", step(calls, "node_b", "b"));
  g.add_edge(sg::START, "node_a").add_edge("node_a", "ask_human").add_edge("ask_human", "node_b");
  return g.compile({.checkpointer = std::move(saver)});
}

/// START -> node_a -> node_b.
Graph a_b(std::shared_ptr<sg::Checkpointer> saver, Log& calls) {
  sg::StateGraph<State> g;
  g.add_node("node_a", step(calls, "node_a", "a"));
  g.add_node("node_b", step(calls, "node_b", "b"));
  g.add_edge(sg::START, "node_a").add_edge("node_a", "node_b");
  return g.compile({.checkpointer = std::move(saver)});
}

/// START -> parent_node -> subgraph (step_a -> step_b) -> post_process; no interrupt.
Graph parent_sub_post(std::shared_ptr<sg::Checkpointer> saver, Log& calls) {
  sg::StateGraph<State> sub;
  sub.add_node("step_a", step(calls, "step_a", "sub_a"));
  sub.add_node("step_b", step(calls, "step_b", "sub_b"));
  sub.add_edge(sg::START, "step_a").add_edge("step_a", "step_b");
  sg::StateGraph<State> g;
  g.add_node("parent_node", step(calls, "parent_node", "parent"));
  g.add_node("subgraph", sub.compile());
  g.add_node("post_process", step(calls, "post_process", "post"));
  g.add_edge(sg::START, "parent_node")
      .add_edge("parent_node", "subgraph")
      .add_edge("subgraph", "post_process");
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

/// "source (next) [values]" per checkpoint, newest first (LangGraph's _checkpoint_summary).
List rows(const History<State>& h) {
  Strings out;
  for (const auto& s : h) {
    out.push_back(s.metadata.value("source", std::string("?")) + " " + paren(s.next) + " " +
                  bracket(s.values.value));
  }
  return out;
}

List values_of(const History<State>& h) {
  Strings out;
  for (const auto& s : h) out.push_back(bracket(s.values.value));
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
std::set<std::string> ids_of(const History<S>& h) {
  std::set<std::string> out;
  for (const auto& s : h) out.insert(s.config.checkpoint_id);
  return out;
}

/// The oldest checkpoint (by created_at) whose id is not in `old_ids`.
template <class S>
sg::StateSnapshot<S> oldest_new(const History<S>& h, const std::set<std::string>& old_ids) {
  std::vector<sg::StateSnapshot<S>> fresh;
  for (const auto& s : h)
    if (!old_ids.count(s.config.checkpoint_id)) fresh.push_back(s);
  if (fresh.empty()) throw std::runtime_error("no new checkpoint");
  return *std::min_element(fresh.begin(), fresh.end(), [](const auto& a, const auto& b) {
    return std::tie(a.created_at, a.config.checkpoint_id) <
           std::tie(b.created_at, b.config.checkpoint_id);
  });
}

template <class S>
std::string parent_id(const sg::StateSnapshot<S>& s) {
  return s.parent_config ? s.parent_config->checkpoint_id : std::string("<none>");
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

}  // namespace

// ---------------------------------------------------------------------------------------------
// Section 1: replay and fork basics (no interrupt, no subgraph)

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_replay_reruns_nodes_after_checkpoint",
                   Saver, SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  const auto app = a_b(saver.get(), calls);
  const auto config = thread("1");
  CHECK(List(app.invoke(State{}, config).state.value) == List{"a", "b"});
  CHECK(calls.all() == List{"node_a", "node_b"});

  const auto before_b = newest_with_next(app.get_state_history(config), {"node_b"});
  calls.clear();
  const auto replay = app.resume(at(before_b.config));
  CHECK(List(replay.state.value) == List{"a", "b"});
  CHECK(calls.has("node_b"));
  CHECK_FALSE(calls.has("node_a"));
}

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_replay_from_final_checkpoint_is_noop",
                   Saver, SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  sg::StateGraph<State> g;
  g.add_node("node_a", step(calls, "node_a", "a"));
  g.add_edge(sg::START, "node_a");
  const auto app = g.compile({.checkpointer = saver.get()});
  const auto config = thread("1");
  CHECK(List(app.invoke(State{}, config).state.value) == List{"a"});
  const auto state = app.get_state(config);
  REQUIRE(state);
  CHECK(state->next.empty());

  calls.clear();
  const auto replay = app.resume(at(state->config));
  CHECK(List(replay.state.value) == List{"a"});
  CHECK(calls.all() == List{});
}

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_fork_reruns_with_modified_state", Saver,
                   SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  const auto app = a_b(saver.get(), calls);
  const auto config = thread("1");
  (void)app.invoke(State{}, config);
  const auto before_b = newest_with_next(app.get_state_history(config), {"node_b"});

  calls.clear();
  const auto fork = app.update_state(at(before_b.config), val({"x"}));
  const auto result = app.resume(at(fork));
  CHECK(calls.has("node_b"));
  CHECK(List(result.state.value) == List{"a", "x", "b"});
}

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_multiple_forks_from_same_checkpoint", Saver,
                   SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  const auto app = a_b(saver.get(), calls);
  const auto config = thread("1");
  (void)app.invoke(State{}, config);
  const auto before_b = newest_with_next(app.get_state_history(config), {"node_b"});

  const auto fork1 = app.update_state(at(before_b.config), val({"fork1"}));
  const auto result1 = app.resume(at(fork1)).state.value;
  const auto fork2 = app.update_state(at(before_b.config), val({"fork2"}));
  const auto result2 = app.resume(at(fork2)).state.value;
  CHECK(contains(result1, "fork1"));
  CHECK_FALSE(contains(result1, "fork2"));
  CHECK(contains(result2, "fork2"));
  CHECK_FALSE(contains(result2, "fork1"));
}

// ---------------------------------------------------------------------------------------------
// Section 2: replay and fork with interrupts (no subgraph)

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_replay_from_before_interrupt_refires",
                   Saver, SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  const auto app = a_ask_b(saver.get(), calls);
  const auto config = thread("1");

  const auto first = app.invoke(State{}, config);
  CHECK_FALSE(first.interrupts.empty());
  CHECK(calls.count("ask_human") == 1);

  const auto done = app.invoke(resume_with<State>("hello"), config);
  CHECK(List(done.state.value) == List{"a", "human:hello", "b"});
  CHECK(calls.count("ask_human") == 2);  // re-executes on resume

  const auto before_ask = oldest_with_next(app.get_state_history(config), {"ask_human"});
  const auto replay = app.resume(at(before_ask.config));
  CHECK(first_interrupt(replay) == "What is your input?");
  CHECK(List(replay.state.value) == List{"a"});
  CHECK(calls.count("ask_human") == 3);  // re-executed again
  CHECK(calls.count("node_a") == 1);     // before the checkpoint
  CHECK(calls.count("node_b") == 1);     // after the interrupt
}

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_replay_from_before_interrupt_then_resume",
                   Saver, SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  const auto app = a_ask_b(saver.get(), calls);
  const auto config = thread("1");
  (void)app.invoke(State{}, config);
  (void)app.invoke(resume_with<State>("old_answer"), config);

  const auto original = app.get_state_history(config);
  CHECK(rows(original) == List{
                              "loop () [a, human:old_answer, b]",
                              "loop (node_b) [a, human:old_answer]",
                              "loop (ask_human) [a]",
                              "loop (node_a) []",
                              "input (__start__) []",
                          });

  // Replay from the checkpoint before ask_human: the interrupt fires again.
  const auto before_ask = newest_with_next(original, {"ask_human"});
  calls.clear();
  const auto replay = app.resume(at(before_ask.config));
  CHECK(first_interrupt(replay) == "What is your input?");
  CHECK(calls.has("ask_human"));
  CHECK_FALSE(calls.has("node_a"));

  // A fork checkpoint, branching from the replay point, is now the latest.
  CHECK(source_nexts(app.get_state_history(config)) == List{
                                                           "fork (ask_human)",
                                                           "loop ()",
                                                           "loop (node_b)",
                                                           "loop (ask_human)",
                                                           "loop (node_a)",
                                                           "input (__start__)",
                                                       });

  calls.clear();
  const auto final_result = app.invoke(resume_with<State>("new_answer"), config);
  CHECK(List(final_result.state.value) == List{"a", "human:new_answer", "b"});
  CHECK(calls.has("ask_human"));
  CHECK(calls.has("node_b"));
  CHECK(rows(app.get_state_history(config)) == List{
                                                   // the new branch (from the fork)
                                                   "loop () [a, human:new_answer, b]",
                                                   "loop (node_b) [a, human:new_answer]",
                                                   "fork (ask_human) [a]",
                                                   // the original branch (preserved)
                                                   "loop () [a, human:old_answer, b]",
                                                   "loop (node_b) [a, human:old_answer]",
                                                   "loop (ask_human) [a]",
                                                   "loop (node_a) []",
                                                   "input (__start__) []",
                                               });
}

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_replay_interrupt_stable_across_replays",
                   Saver, SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  const auto app = a_ask_b(saver.get(), calls);
  const auto config = thread("1");
  (void)app.invoke(State{}, config);
  (void)app.invoke(resume_with<State>("cached_answer"), config);
  const auto before_ask = oldest_with_next(app.get_state_history(config), {"ask_human"});

  std::vector<sg::RunResult<State>> results;
  for (int i = 0; i < 3; ++i) results.push_back(app.resume(at(before_ask.config)));
  // Each replay makes a fork with new interrupt ids: compare values only.
  for (const auto& r : results) {
    CHECK_FALSE(r.interrupts.empty());
    CHECK(first_interrupt(r) == first_interrupt(results[0]));
    CHECK(List(r.state.value) == List(results[0].state.value));
  }
}

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_fork_from_before_interrupt_refires", Saver,
                   SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  const auto app = a_ask_b(saver.get(), calls);
  const auto config = thread("1");
  (void)app.invoke(State{}, config);
  (void)app.invoke(resume_with<State>("hello"), config);
  const auto before_ask = oldest_with_next(app.get_state_history(config), {"ask_human"});

  calls.clear();
  const auto fork = app.update_state(at(before_ask.config), val({"forked"}));
  const auto forked = app.resume(at(fork));
  CHECK(first_interrupt(forked) == "What is your input?");

  // Resume the forked interrupt (through the fork's config) with another answer.
  const auto final_result = app.invoke(resume_with<State>("world"), at(fork));
  CHECK_FALSE(final_result.interrupted());
  CHECK(List(final_result.state.value) == List{"a", "forked", "human:world", "b"});
}

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_fork_from_interrupt_checkpoint_refires",
                   Saver, SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  const auto app = a_ask_b(saver.get(), calls);
  const auto config = thread("1");
  (void)app.invoke(State{}, config);
  (void)app.invoke(resume_with<State>("hello"), config);

  // The checkpoint where the interrupt fired: ask_human next, with a task holding interrupts.
  const auto history = app.get_state_history(config);
  const auto it = std::find_if(history.begin(), history.end(), [](const auto& s) {
    return s.next == Strings{"ask_human"} && has_interrupts(s);
  });
  REQUIRE(it != history.end());

  const auto fork = app.update_state(at(it->config), val({"forked"}));
  CHECK_FALSE(app.resume(at(fork)).interrupts.empty());
  const auto final_result = app.invoke(resume_with<State>("different"), at(fork));
  CHECK(contains(final_result.state.value, "human:different"));
}

// ---------------------------------------------------------------------------------------------
// Section 3: multiple / sequential interrupts

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_sequential_interrupts_fork_from_middle",
                   Saver, SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  sg::StateGraph<State> g;
  g.add_node("node_a", step(calls, "node_a", "a"));
  g.add_node("interrupt_1", ask(calls, "interrupt_1", "First question?", "i1:"));
  g.add_node("interrupt_2", ask(calls, "interrupt_2", "Second question?", "i2:"));
  g.add_node("node_b", step(calls, "node_b", "b"));
  g.add_edge(sg::START, "node_a")
      .add_edge("node_a", "interrupt_1")
      .add_edge("interrupt_1", "interrupt_2")
      .add_edge("interrupt_2", "node_b");
  const auto app = g.compile({.checkpointer = saver.get()});
  const auto config = thread("1");

  CHECK(first_interrupt(app.invoke(State{}, config)) == "First question?");
  CHECK(first_interrupt(app.invoke(resume_with<State>("ans1"), config)) == "Second question?");
  const auto done = app.invoke(resume_with<State>("ans2"), config);
  CHECK(List(done.state.value) == List{"a", "i1:ans1", "i2:ans2", "b"});
  const auto history = app.get_state_history(config);

  // Fork from between the two interrupts: only the second fires again.
  const auto between = oldest_with_next(history, {"interrupt_2"});
  const auto fork = app.update_state(at(between.config), val({"mid_fork"}));
  CHECK(first_interrupt(app.resume(at(fork))) == "Second question?");
  const auto final_result = app.invoke(resume_with<State>("new_b"), at(fork));
  CHECK(contains(final_result.state.value, "i2:new_b"));
  CHECK(contains(final_result.state.value, "i1:ans1"));

  // Replay from before the first interrupt: the first fires again, the second does not run.
  const auto before_i1 = oldest_with_next(history, {"interrupt_1"});
  calls.clear();
  const auto replay = app.resume(at(before_i1.config));
  CHECK(first_interrupt(replay) == "First question?");
  CHECK(calls.has("interrupt_1"));
  CHECK_FALSE(calls.has("interrupt_2"));
}

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_multiple_interrupts_in_one_node", Saver,
                   SG_PARITY_SAVERS) {
  Saver saver;
  sg::StateGraph<State> g;
  g.add_node("ask", [](const State&) {
    const auto answer1 = sg::interrupt("First question?").get<std::string>();
    const auto answer2 = sg::interrupt("Second question?").get<std::string>();
    return val({"a1:" + answer1, "a2:" + answer2});
  });
  g.add_node("after", [](const State&) { return val({"done"}); });
  g.add_edge(sg::START, "ask").add_edge("ask", "after");
  const auto app = g.compile({.checkpointer = saver.get()});
  const auto config = thread("1");

  CHECK(first_interrupt(app.invoke(State{}, config)) == "First question?");
  // Each resume names the current checkpoint explicitly.
  const auto interrupt_state = app.get_state(config);
  REQUIRE(interrupt_state);
  const auto second = app.invoke(resume_with<State>("ans1"), at(interrupt_state->config));
  CHECK(first_interrupt(second) == "Second question?");
  const auto interrupt_state2 = app.get_state(config);
  REQUIRE(interrupt_state2);
  const auto done = app.invoke(resume_with<State>("ans2"), at(interrupt_state2->config));
  CHECK_FALSE(done.interrupted());
  CHECK(List(done.state.value) == List{"a1:ans1", "a2:ans2", "done"});

  const auto before_ask = oldest_with_next(app.get_state_history(config), {"ask"});
  CHECK(first_interrupt(app.resume(at(before_ask.config))) == "First question?");
}

// ---------------------------------------------------------------------------------------------
// Section 4: subgraph without interrupt

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_subgraph_replay_from_before", Saver,
                   SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  const auto app = parent_sub_post(saver.get(), calls);
  const auto config = thread("1");
  const auto result = app.invoke(State{}, config).state.value;
  CHECK(contains(result, "sub_a"));
  CHECK(contains(result, "sub_b"));
  CHECK(contains(result, "post"));

  const auto before_sub = newest_with_next(app.get_state_history(config), {"subgraph"});
  calls.clear();
  const auto replay = app.resume(at(before_sub.config)).state.value;
  CHECK(contains(replay, "sub_a"));
  CHECK(contains(replay, "sub_b"));
  CHECK(contains(replay, "post"));
  CHECK_FALSE(calls.has("parent_node"));
}

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_subgraph_fork_from_before", Saver,
                   SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  const auto app = parent_sub_post(saver.get(), calls);
  const auto config = thread("1");
  (void)app.invoke(State{}, config);
  const auto before_sub = newest_with_next(app.get_state_history(config), {"subgraph"});

  calls.clear();
  const auto fork = app.update_state(at(before_sub.config), val({"forked"}));
  const auto result = app.resume(at(fork)).state.value;
  CHECK(calls.has("step_a"));
  CHECK(calls.has("step_b"));
  CHECK(calls.has("post_process"));
  CHECK(contains(result, "forked"));
  CHECK(contains(result, "sub_a"));
  CHECK(contains(result, "sub_b"));
}

// ---------------------------------------------------------------------------------------------
// Section 6: __copy__ / update_state(None)

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_copy_fork_retriggers_interrupt", Saver,
                   SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  const auto app = a_ask_b(saver.get(), calls);
  const auto config = thread("1");
  (void)app.invoke(State{}, config);
  (void)app.invoke(resume_with<State>("hello"), config);
  const auto before_ask = oldest_with_next(app.get_state_history(config), {"ask_human"});

  calls.clear();
  const auto fork = app.update_state(at(before_ask.config), sg::Update<State>{}, "__copy__");
  CHECK(first_interrupt(app.resume(at(fork))) == "What is your input?");
  const auto final_result = app.invoke(resume_with<State>("new_answer"), at(fork));
  CHECK_FALSE(final_result.interrupted());
  CHECK(List(final_result.state.value) == List{"a", "human:new_answer", "b"});
}

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_copy_fork_creates_sibling_checkpoint",
                   Saver, SG_PARITY_SAVERS) {
  Saver saver;
  Log calls;
  const auto app = a_b(saver.get(), calls);
  const auto config = thread("1");
  (void)app.invoke(State{}, config);
  const auto before_b = newest_with_next(app.get_state_history(config), {"node_b"});

  const auto copy = app.update_state(at(before_b.config), sg::Update<State>{}, "__copy__");
  const auto copy_state = app.get_state(at(copy));
  REQUIRE(copy_state);
  CHECK(copy_state->metadata.value("source", "") == "fork");

  const auto regular = app.update_state(at(before_b.config), val({"x"}));
  const auto regular_state = app.get_state(at(regular));
  REQUIRE(regular_state);
  CHECK(regular_state->metadata.value("source", "") == "update");
}

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_update_state_with_none_values", Saver,
                   SG_PARITY_SAVERS) {
  // update_state(config, None) without __copy__: the normal update path (source "update"); the
  // interrupt fires again from it.
  Saver saver;
  Log calls;
  const auto app = a_ask_b(saver.get(), calls);
  const auto config = thread("1");
  (void)app.invoke(State{}, config);
  (void)app.invoke(resume_with<State>("hello"), config);
  const auto before_ask = oldest_with_next(app.get_state_history(config), {"ask_human"});

  const auto fork = app.update_state(at(before_ask.config), sg::Update<State>{});
  CHECK(first_interrupt(app.resume(at(fork))) == "What is your input?");
  const auto fork_state = app.get_state(at(fork));
  REQUIRE(fork_state);
  CHECK(fork_state->metadata.value("source", "") == "update");
}

// ---------------------------------------------------------------------------------------------
// Section 7: observability

namespace {
/// ParentState and SubState of section 7: data: str.
struct Data {
  std::string data{};
  static constexpr auto schema() { return std::tuple{sg::field<"data">(&Data::data)}; }
};
}  // namespace

TEST_CASE_TEMPLATE(
    "langgraph/test_time_travel.py::test_get_state_with_subgraphs_returns_subgraph_state", Saver,
    SG_PARITY_SAVERS) {
  Saver saver;
  sg::StateGraph<Data> sub;
  sub.add_node("process", [](const Data&) {
    (void)sg::interrupt("Continue?");
    return sg::set<&Data::data>(std::string("processed"));
  });
  sub.add_edge(sg::START, "process");
  sg::StateGraph<Data> g;
  g.add_node("sub", sub.compile());
  g.add_edge(sg::START, "sub");
  const auto app = g.compile({.checkpointer = saver.get()});
  const auto config = thread("1");
  (void)app.invoke(Data{.data = "input"}, config);

  // get_state(subgraphs=True): the parent's task, and the subgraph's own checkpoint config.
  const auto state = app.get_state(config);
  REQUIRE(state);
  CHECK_FALSE(state->tasks.empty());
  const auto sub_config = subgraph_checkpoint(*saver.get(), "1", {"sub"});
  CHECK(sub_config.thread_id == "1");
  CHECK_FALSE(sub_config.checkpoint_id.empty());
}

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_checkpoint_ns_accessible_in_subgraph",
                   Saver, SG_PARITY_SAVERS) {
  Saver saver;
  std::string checkpoint_ns = "<unset>";
  std::string thread_id = "<unset>";
  sg::StateGraph<Data> sub;
  sub.add_node("inner", [&](const Data&, sg::Context& ctx) {
    checkpoint_ns = ctx.config().checkpoint_ns;
    thread_id = ctx.config().thread_id;
    return sg::set<&Data::data>(std::string("done"));
  });
  sub.add_edge(sg::START, "inner");
  sg::StateGraph<Data> g;
  g.add_node("outer", sub.compile());
  g.add_edge(sg::START, "outer");
  const auto app = g.compile({.checkpointer = saver.get()});
  (void)app.invoke(Data{.data = "test"}, thread("1"));
  CHECK(checkpoint_ns != "<unset>");
  CHECK(checkpoint_ns != "");
  CHECK(thread_id == "1");
}

// ---------------------------------------------------------------------------------------------
// Section 8: stateful vs stateless subgraphs on replay; append-only history

TEST_CASE_TEMPLATE(
    "langgraph/test_time_travel.py::test_replay_creates_branch_preserving_old_checkpoints", Saver,
    SG_PARITY_SAVERS) {
  Saver saver;
  std::atomic<int> call_count{0};
  sg::StateGraph<State> g;
  g.add_node("node_a", [](const State&) { return val({"a"}); });
  g.add_node("node_b", [&](const State&) { return val({"b" + std::to_string(++call_count)}); });
  g.add_node("node_c", [](const State&) { return val({"c"}); });
  g.add_edge(sg::START, "node_a").add_edge("node_a", "node_b").add_edge("node_b", "node_c");
  const auto app = g.compile({.checkpointer = saver.get()});
  const auto config = thread("1");
  CHECK(List(app.invoke(State{}, config).state.value) == List{"a", "b1", "c"});

  const auto original = app.get_state_history(config);
  CHECK(original.size() == 5);
  CHECK(nexts(original) == List{"()", "(node_c)", "(node_b)", "(node_a)", "(__start__)"});
  CHECK(values_of(original) == List{"[a, b1, c]", "[a, b1]", "[a]", "[]", "[]"});
  const auto original_ids = ids_of(original);

  const auto before_b = newest_with_next(original, {"node_b"});
  const auto replay = app.resume(at(before_b.config));
  CHECK(List(replay.state.value) == List{"a", "b2", "c"});

  // 5 original + 1 fork + 2 new checkpoints.
  const auto post = app.get_state_history(config);
  CHECK(post.size() == 8);
  CHECK(nexts(post) == List{"()", "(node_c)", "(node_b)", "()", "(node_c)", "(node_b)", "(node_a)",
                            "(__start__)"});
  CHECK(values_of(post) ==
        List{"[a, b2, c]", "[a, b2]", "[a]", "[a, b1, c]", "[a, b1]", "[a]", "[]", "[]"});
  const auto post_ids = ids_of(post);
  CHECK(std::includes(post_ids.begin(), post_ids.end(), original_ids.begin(), original_ids.end()));
  // The new branch's oldest checkpoint branches from the replay point.
  CHECK(parent_id(oldest_new(post, original_ids)) == before_b.config.checkpoint_id);

  const auto latest = app.get_state(config);
  REQUIRE(latest);
  CHECK(List(latest->values.value) == List{"a", "b2", "c"});
  CHECK_FALSE(original_ids.count(latest->config.checkpoint_id));
}

namespace {
/// ParentState of the branch-in-subgraph tests: value and sub_value, both operator.add lists.
struct Split {
  std::vector<std::string> value{};
  std::vector<std::string> sub_value{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"value">(&Split::value, sg::concat),
                      sg::field<"sub_value">(&Split::sub_value, sg::concat)};
  }
};
/// Their SubState: sub_value.
struct SubValue {
  std::vector<std::string> sub_value{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"sub_value">(&SubValue::sub_value, sg::concat)};
  }
};

/// parent_start -> sub_graph (sub_step appends "sub<n>") -> parent_end. The subgraph reads and
/// returns the shared key sub_value.
sg::CompiledGraph<Split> split_graph(std::shared_ptr<sg::Checkpointer> saver,
                                     std::atomic<int>& sub_calls) {
  sg::StateGraph<SubValue> sub;
  sub.add_node("sub_step", [&sub_calls](const SubValue&) {
    return sg::set<&SubValue::sub_value>(Strings{"sub" + std::to_string(++sub_calls)});
  });
  sub.add_edge(sg::START, "sub_step");
  sg::StateGraph<Split> g;
  g.add_node("parent_start",
             [](const Split&) { return sg::set<&Split::value>(Strings{"p_start"}); });
  g.add_node(
      "sub_graph", sub.compile(),
      [](const Split& s) { return sg::set<&SubValue::sub_value>(s.sub_value); },
      [](const SubValue& s) { return sg::set<&Split::sub_value>(s.sub_value); });
  g.add_node("parent_end", [](const Split&) { return sg::set<&Split::value>(Strings{"p_end"}); });
  g.add_edge(sg::START, "parent_start")
      .add_edge("parent_start", "sub_graph")
      .add_edge("sub_graph", "parent_end");
  return g.compile({.checkpointer = std::move(saver)});
}
}  // namespace

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_replay_creates_branch_in_subgraph", Saver,
                   SG_PARITY_SAVERS) {
  Saver saver;
  std::atomic<int> sub_calls{0};
  const auto app = split_graph(saver.get(), sub_calls);
  const auto config = thread("1");
  const auto result = app.invoke(Split{}, config).state;
  CHECK(List(result.value) == List{"p_start", "p_end"});
  CHECK(List(result.sub_value) == List{"sub1"});

  const auto original = app.get_state_history(config);
  const auto original_ids = ids_of(original);
  const auto before_sub = newest_with_next(original, {"sub_graph"});
  const auto replay = app.resume(at(before_sub.config)).state;
  CHECK(List(replay.value) == List{"p_start", "p_end"});
  CHECK(List(replay.sub_value) == List{"sub2"});

  const auto post = app.get_state_history(config);
  const auto post_ids = ids_of(post);
  CHECK(std::includes(post_ids.begin(), post_ids.end(), original_ids.begin(), original_ids.end()));
  CHECK(post_ids.size() - original_ids.size() >= 2);  // sub_graph + parent_end at least
  CHECK(parent_id(oldest_new(post, original_ids)) == before_sub.config.checkpoint_id);

  const auto latest = app.get_state(config);
  REQUIRE(latest);
  CHECK_FALSE(original_ids.count(latest->config.checkpoint_id));
  CHECK(List(latest->values.value) == List{"p_start", "p_end"});
  CHECK(List(latest->values.sub_value) == List{"sub2"});
}

TEST_CASE_TEMPLATE(
    "langgraph/test_time_travel.py::test_fork_creates_branch_preserving_old_checkpoints", Saver,
    SG_PARITY_SAVERS) {
  Saver saver;
  std::atomic<int> call_count{0};
  sg::StateGraph<State> g;
  g.add_node("node_a", [](const State&) { return val({"a"}); });
  g.add_node("node_b", [&](const State&) { return val({"b" + std::to_string(++call_count)}); });
  g.add_node("node_c", [](const State&) { return val({"c"}); });
  g.add_edge(sg::START, "node_a").add_edge("node_a", "node_b").add_edge("node_b", "node_c");
  const auto app = g.compile({.checkpointer = saver.get()});
  const auto config = thread("1");
  CHECK(List(app.invoke(State{}, config).state.value) == List{"a", "b1", "c"});

  const auto original = app.get_state_history(config);
  CHECK(original.size() == 5);
  CHECK(nexts(original) == List{"()", "(node_c)", "(node_b)", "(node_a)", "(__start__)"});
  CHECK(values_of(original) == List{"[a, b1, c]", "[a, b1]", "[a]", "[]", "[]"});
  const auto original_ids = ids_of(original);

  const auto before_b = newest_with_next(original, {"node_b"});
  const auto fork = app.update_state(at(before_b.config), val({"x"}));
  CHECK(List(app.resume(at(fork)).state.value) == List{"a", "x", "b2", "c"});

  // 5 original + the update_state checkpoint + 2 new nodes: replaying an update checkpoint
  // makes no second fork.
  const auto post = app.get_state_history(config);
  CHECK(post.size() == 8);
  CHECK(nexts(post) == List{"()", "(node_c)", "(node_b)", "()", "(node_c)", "(node_b)", "(node_a)",
                            "(__start__)"});
  CHECK(values_of(post) ==
        List{"[a, x, b2, c]", "[a, x, b2]", "[a, x]", "[a, b1, c]", "[a, b1]", "[a]", "[]", "[]"});
  const auto post_ids = ids_of(post);
  CHECK(std::includes(post_ids.begin(), post_ids.end(), original_ids.begin(), original_ids.end()));
  CHECK(parent_id(oldest_new(post, original_ids)) == before_b.config.checkpoint_id);

  const auto latest = app.get_state(config);
  REQUIRE(latest);
  CHECK(List(latest->values.value) == List{"a", "x", "b2", "c"});
  CHECK_FALSE(original_ids.count(latest->config.checkpoint_id));
}

TEST_CASE_TEMPLATE("langgraph/test_time_travel.py::test_fork_creates_branch_in_subgraph", Saver,
                   SG_PARITY_SAVERS) {
  Saver saver;
  std::atomic<int> sub_calls{0};
  const auto app = split_graph(saver.get(), sub_calls);
  const auto config = thread("1");
  const auto result = app.invoke(Split{}, config).state;
  CHECK(List(result.value) == List{"p_start", "p_end"});
  CHECK(List(result.sub_value) == List{"sub1"});

  const auto original = app.get_state_history(config);
  const auto original_ids = ids_of(original);
  const auto before_sub = newest_with_next(original, {"sub_graph"});
  const auto fork =
      app.update_state(at(before_sub.config), sg::set<&Split::value>(Strings{"extra"}));
  const auto forked = app.resume(at(fork)).state;
  CHECK(List(forked.value) == List{"p_start", "extra", "p_end"});
  CHECK(List(forked.sub_value) == List{"sub2"});

  const auto post = app.get_state_history(config);
  const auto post_ids = ids_of(post);
  CHECK(std::includes(post_ids.begin(), post_ids.end(), original_ids.begin(), original_ids.end()));
  CHECK(post_ids.size() - original_ids.size() >= 3);  // the fork + sub_graph + parent_end
  CHECK(parent_id(oldest_new(post, original_ids)) == before_sub.config.checkpoint_id);

  const auto latest = app.get_state(config);
  REQUIRE(latest);
  CHECK(post_ids.count(latest->config.checkpoint_id));
  CHECK_FALSE(original_ids.count(latest->config.checkpoint_id));
  CHECK(List(latest->values.value) == List{"p_start", "extra", "p_end"});
  CHECK(List(latest->values.sub_value) == List{"sub2"});
}

TEST_CASE_TEMPLATE(
    "langgraph/test_time_travel.py::test_stateless_subgraph_starts_fresh_on_parent_replay", Saver,
    SG_PARITY_SAVERS) {
  // A subgraph without its own checkpointer starts empty on every call, replays included.
  Saver saver;
  Log started;
  Log observed;
  sg::StateGraph<State> sub;
  sub.add_node("step_a", observing_ask(started, observed, "step_a", "question_a", "a"));
  sub.add_node("step_b", observing_ask(started, observed, "step_b", "question_b", "b"));
  sub.add_edge(sg::START, "step_a").add_edge("step_a", "step_b");
  sg::StateGraph<Results> g;
  g.add_node("parent_node",
             [](const Results&) { return sg::set<&Results::results>(Strings{"p"}); });
  add_isolated(g, "sub_node", sub.compile());
  g.add_edge(sg::START, "parent_node").add_edge("parent_node", "sub_node");
  const auto app = g.compile({.checkpointer = saver.get()});
  const auto config = thread("1");

  (void)app.invoke(Results{}, config);
  (void)app.invoke(resume_with<Results>("a1"), config);
  (void)app.invoke(resume_with<Results>("b1"), config);
  CHECK(observed.at(0) == "step_a:[]");
  CHECK(observed.at(1) == "step_b:[a:a1]");

  observed.clear();
  (void)app.invoke(Results{}, config);
  (void)app.invoke(resume_with<Results>("a2"), config);
  (void)app.invoke(resume_with<Results>("b2"), config);
  CHECK(observed.at(0) == "step_a:[]");  // no memory of the 1st invocation
  CHECK(observed.at(1) == "step_b:[a:a2]");

  const auto before_sub_2nd = newest_with_next(app.get_state_history(config), {"sub_node"});
  started.clear();
  CHECK_FALSE(app.resume(at(before_sub_2nd.config)).interrupts.empty());
  CHECK(started.at(0) == "step_a:[]");
}
