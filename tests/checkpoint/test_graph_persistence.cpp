// SPDX-License-Identifier: MIT
// Graphs with a checkpointer: thread memory, state inspection and updates, time travel, pending
// writes, interrupts and resume (also after reopening the database), durability modes, subgraphs,
// and storage that does not grow with the conversation.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/core/channels.hpp>
#include <stategraph/core/detail/hash.hpp>
#include <stategraph/stategraph.hpp>

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <exception>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "support/plain_saver.hpp"
#include "support/saver_factories.hpp"
#include "support/temp_dir.hpp"

using nlohmann::json;

namespace {

struct Chat : sg::MessagesState {
  int x = 0;
  std::vector<std::string> log{};
  static constexpr auto schema() {
    return std::tuple_cat(
        sg::MessagesState::schema(),
        std::tuple{sg::field<"x">(&Chat::x), sg::field<"log">(&Chat::log, sg::concat)});
  }
};

using sg::test::MemoryFactory;
using sg::test::RocksFactory;

sg::RunConfig thread(const std::string& id) {
  sg::RunConfig config;
  config.thread_id = id;
  return config;
}

sg::Update<Chat> say(const std::string& text) {
  return sg::Update<Chat>{}.set<&Chat::messages>(sg::human(text));
}
sg::Update<Chat> log(const std::string& entry) {
  return sg::Update<Chat>{}.set<&Chat::log>(entry);
}

/// START -> a -> b -> END; a and b append to the log and count.
sg::CompiledGraph<Chat> chain(std::shared_ptr<sg::Checkpointer> saver,
                              sg::CompileOptions options = {}) {
  sg::StateGraph<Chat> g;
  g.add_node("a", [](const Chat& s) { return log("a").set<&Chat::x>(s.x + 1); });
  g.add_node("b", [](const Chat& s) { return log("b").set<&Chat::x>(s.x + 10); });
  g.add_edge(sg::START, "a").add_edge("a", "b");
  options.checkpointer = std::move(saver);
  return g.compile(options);
}

std::vector<std::string> sources(sg::Checkpointer& saver, const std::string& tid) {
  std::vector<std::string> out;
  for (const auto& t : saver.list({.thread_id = tid, .checkpoint_ns = ""})) {
    out.push_back(t.metadata["source"].get<std::string>() +
                  std::to_string(t.metadata["step"].get<int>()));
  }
  return out;
}

}  // namespace

TEST_CASE_TEMPLATE("a thread continues from its latest state", F, SG_SAVER_FACTORIES) {
  F factory;
  auto saver = factory.make();
  const auto app = chain(saver);
  auto first = app.invoke(say("hi"), thread("t1"));
  CHECK(first.state.x == 11);
  CHECK(first.state.log == std::vector<std::string>{"a", "b"});
  auto second = app.invoke(say("again"), thread("t1"));
  CHECK(second.state.x == 22);
  CHECK(second.state.messages.size() == 2);
  CHECK(second.state.log == std::vector<std::string>{"a", "b", "a", "b"});
  CHECK(app.invoke(say("other"), thread("t2")).state.x == 11);

  // LangGraph's checkpoint sequence: input -1, loop 0 (START), loop 1, loop 2, then input 3, ...
  CHECK(sources(*saver, "t1") == std::vector<std::string>{"loop6", "loop5", "loop4", "input3",
                                                          "loop2", "loop1", "loop0", "input-1"});
  const auto latest = saver->get_tuple({"t1", "", ""});
  REQUIRE(latest);
  CHECK(latest->checkpoint.channel_values["x"] == 22);
  CHECK(latest->checkpoint.channel_values["messages"].size() == 2);
  CHECK(latest->metadata.contains("run_id"));
}

TEST_CASE_TEMPLATE("get_state, history, update_state, replay and fork", F, SG_SAVER_FACTORIES) {
  F factory;
  auto saver = factory.make();
  const auto app = chain(saver);
  const auto config = thread("t");
  (void)app.invoke(say("hi"), config);

  auto state = app.get_state(config);
  REQUIRE(state);
  CHECK(state->values.x == 11);
  CHECK(state->next.empty());
  CHECK(state->metadata["source"] == "loop");
  CHECK(state->metadata["step"] == 2);
  CHECK(state->config.thread_id == "t");
  CHECK(state->parent_config);
  CHECK_FALSE(state->created_at.empty());
  CHECK_FALSE(app.get_state(thread("nobody")));

  const auto history = app.get_state_history(config);
  REQUIRE(history.size() == 4);
  CHECK(history[0].values.x == 11);
  CHECK(history[1].next == std::vector<std::string>{"b"});
  CHECK(history[1].values.x == 1);
  CHECK(history[3].metadata["source"] == "input");
  CHECK(app.get_state_history(config, {.filter = {{"source", "input"}}}).size() == 1);

  // update_state as "a": a's reducers, then a's edge: b runs next.
  const auto updated = app.update_state(config, log("manual"), "a");
  state = app.get_state(config);
  CHECK(state->config.checkpoint_id == updated.checkpoint_id);
  CHECK(state->metadata["source"] == "update");
  CHECK(state->metadata["step"] == 3);
  CHECK(state->next == std::vector<std::string>{"b"});
  CHECK(state->values.log == std::vector<std::string>{"a", "b", "manual"});
  auto resumed = app.resume(config);
  CHECK(resumed.state.x == 21);
  CHECK(resumed.state.log.back() == "b");

  // update_state without as_node: the last node that ran (b); END: nothing next.
  (void)app.update_state(config, sg::Update<Chat>{}.set<&Chat::x>(0));
  CHECK(app.get_state(config)->next.empty());
  (void)app.update_state(config, sg::Update<Chat>{}.set<&Chat::x>(5), std::string(sg::END));
  CHECK(app.get_state(config)->values.x == 5);

  // Replay from the checkpoint after "a" ran the first time: a new branch re-runs b.
  sg::RunConfig replay = config;
  replay.checkpoint_id = history[1].config.checkpoint_id;
  const auto replayed = app.resume(replay);
  CHECK(replayed.state.x == 11);
  CHECK(replayed.state.log == std::vector<std::string>{"a", "b"});
  CHECK(app.get_state(config)->values.x == 11);  // the newest branch
  const auto fork_history = app.get_state_history(config, {.limit = 2});
  CHECK(fork_history[1].metadata["source"] == "fork");
  // Older checkpoints are untouched.
  sg::RunConfig old = config;
  old.checkpoint_id = history[0].config.checkpoint_id;
  CHECK(app.get_state(old)->values.x == 11);

  // Fork with update_state on an old checkpoint.
  old.checkpoint_id = history[2].config.checkpoint_id;  // after START: a is next
  const auto forked = app.update_state(old, sg::Update<Chat>{}.set<&Chat::x>(1000), "__start__");
  CHECK(saver->get_tuple({"t", "", forked.checkpoint_id})->parent_config->checkpoint_id ==
        old.checkpoint_id);
  CHECK(app.resume(config).state.x == 1011);
  // The new branches did not touch the values of the first run's checkpoints.
  for (const auto& h : history) {
    sg::RunConfig at = config;
    at.checkpoint_id = h.config.checkpoint_id;
    CHECK(app.get_state(at)->values.x == h.values.x);
    CHECK(app.get_state(at)->values.log == h.values.log);
  }

  CHECK_THROWS_AS((void)app.update_state(config, sg::Update<Chat>{}, std::string("nope")),
                  sg::Error);
}

TEST_CASE_TEMPLATE("a failed step keeps its siblings' writes, they do not run again", F,
                   SG_SAVER_FACTORIES) {
  F factory;
  auto saver = factory.make();
  std::atomic<int> ok_runs{0};
  std::atomic<int> flaky_runs{0};
  std::atomic<bool> fail{true};
  sg::StateGraph<Chat> g;
  g.add_node("ok", [&](const Chat&) {
    ++ok_runs;
    return log("ok");
  });
  g.add_node("flaky", [&](const Chat&) {
    ++flaky_runs;
    if (fail) throw std::runtime_error("boom");
    return log("flaky");
  });
  g.add_node("join", [](const Chat& s) {
    return sg::Update<Chat>{}.set<&Chat::x>(static_cast<int>(s.log.size()));
  });
  g.add_edge(sg::START, "ok").add_edge(sg::START, "flaky").add_edge({"ok", "flaky"}, "join");
  const auto app = g.compile({.checkpointer = saver});
  const auto config = thread("t");
  CHECK_THROWS_AS((void)app.invoke(say("go"), config), sg::NodeError);
  CHECK(ok_runs == 1);
  const auto state = app.get_state(config);
  REQUIRE(state->tasks.size() == 2);
  CHECK(state->tasks[0].name == "flaky");
  CHECK(state->tasks[0].error == "boom");
  CHECK(state->tasks[1].error.empty());

  fail = false;
  const auto out = app.resume(config);
  CHECK(ok_runs == 1);  // not run again
  CHECK(flaky_runs == 2);
  CHECK(out.state.log == std::vector<std::string>{"flaky", "ok"});
  CHECK(out.state.x == 2);
}

TEST_CASE_TEMPLATE(
    "a write that fails to apply fails the run with its own error; the thread "
    "keeps its last checkpoint",
    F, SG_SAVER_FACTORIES) {
  F factory;
  auto saver = factory.make();
  sg::StateGraph<Chat> g;
  // A last-value field and a removal of a message that is not there: applying fails.
  g.add_node("bad", [](const Chat&) {
    return sg::Update<Chat>{}.set<&Chat::x>(7).set<&Chat::messages>(
        std::vector<sg::Message>{sg::remove_message("missing")});
  });
  g.add_edge(sg::START, "bad");
  const auto app = g.compile({.checkpointer = saver});
  for (auto durability : {sg::Durability::sync, sg::Durability::async}) {
    auto config = thread(durability == sg::Durability::sync ? "sync" : "async");
    config.durability = durability;
    CHECK_THROWS_AS((void)app.invoke(say("hi"), config), sg::InvalidUpdateError);
    const auto state = app.get_state(config);
    REQUIRE(state);
    CHECK(state->values.x == 0);
    CHECK(state->next == std::vector<std::string>{"bad"});
  }
}

TEST_CASE_TEMPLATE("interrupts resume with Command{resume}", F, SG_SAVER_FACTORIES) {
  F factory;
  auto saver = factory.make();
  std::atomic<int> runs{0};
  sg::StateGraph<Chat> g;
  g.add_node("ask", [&](const Chat&) {
    ++runs;
    const auto name = sg::interrupt("name?").get<std::string>();
    const auto age = sg::interrupt({{"question", "age?"}, {"name", name}}).get<int>();
    return log(name + ":" + std::to_string(age));
  });
  g.add_node("sibling", [](const Chat&) { return log("sibling"); });
  g.add_edge(sg::START, "ask").add_edge(sg::START, "sibling");
  const auto app = g.compile({.checkpointer = saver});
  const auto config = thread("t");

  auto r1 = app.invoke(say("start"), config);
  REQUIRE(r1.interrupted());
  REQUIRE(r1.interrupts.size() == 1);
  CHECK(r1.interrupts[0].value == "name?");
  CHECK(app.get_state(config)->interrupts.size() == 1);

  auto r2 = app.invoke(sg::Command<Chat>{.resume = json("ada")}, config);
  REQUIRE(r2.interrupted());
  CHECK(r2.interrupts[0].value == json{{"question", "age?"}, {"name", "ada"}});

  auto r3 = app.invoke(sg::Command<Chat>{.resume = json{{r2.interrupts[0].id, 36}}}, config);
  CHECK_FALSE(r3.interrupted());
  CHECK(r3.state.log == std::vector<std::string>{"ada:36", "sibling"});
  CHECK(runs == 3);  // the node re-runs from the start on each resume
}

TEST_CASE_TEMPLATE("a resuming Command that cannot apply fails its run and saves nothing", F,
                   SG_SAVER_FACTORIES) {
  // Found by the http_request fuzz target: a Command whose goto named no node was saved against
  // the checkpoint before it failed, and so failed every later read of the thread (the server
  // answered 500 to its state); so did an update a reducer refuses.
  F factory;
  auto saver = factory.make();
  sg::StateGraph<Chat> g;
  g.add_node("ask", [](const Chat&) { return log(sg::interrupt("name?").get<std::string>()); });
  g.add_edge(sg::START, "ask");
  const auto app = g.compile({.checkpointer = saver});
  const auto config = thread("t");
  REQUIRE(app.invoke(say("start"), config).interrupted());
  CHECK_THROWS_WITH_AS((void)app.invoke(sg::Command<Chat>{.go_to = {"nowhere"}}, config),
                       doctest::Contains("unknown node 'nowhere'"), sg::Error);
  const sg::Message remove = sg::remove_message("no-such-message");
  CHECK_THROWS_AS(
      (void)app.invoke(sg::Command<Chat>{.update = sg::Update<Chat>{}.set<&Chat::messages>(remove),
                                         .resume = json("ada")},
                       config),
      sg::Error);
  const auto state = app.get_state(config);
  REQUIRE(state);
  CHECK(state->next == std::vector<std::string>{"ask"});
  CHECK(state->tasks.at(0).interrupts.size() == 1);
  const auto resumed = app.invoke(sg::Command<Chat>{.resume = json("ada")}, config);
  CHECK_FALSE(resumed.interrupted());
  CHECK(resumed.state.log == std::vector<std::string>{"ada"});
}

TEST_CASE_TEMPLATE(
    "a resume value the node rejects fails the run, and the next resume value is taken", F,
    SG_SAVER_FACTORIES) {
  // As LangGraph: a task that fails keeps only its error, not the resume values it consumed, so
  // the interrupt is still pending and takes the next Command's value.
  F factory;
  auto saver = factory.make();
  sg::StateGraph<Chat> g;
  g.add_node("ask", [](const Chat&) {
    const auto answer = sg::interrupt("yes or no?").get<std::string>();
    if (answer != "yes" && answer != "no") throw std::invalid_argument("answer yes or no");
    return log(answer);
  });
  g.add_edge(sg::START, "ask");
  const auto app = g.compile({.checkpointer = saver});
  const auto config = thread("t");
  REQUIRE(app.invoke(say("start"), config).interrupted());
  CHECK_THROWS_WITH((void)app.invoke(sg::Command<Chat>{.resume = json("maybe")}, config),
                    doctest::Contains("answer yes or no"));
  const auto state = app.get_state(config);
  REQUIRE(state);
  CHECK(state->next == std::vector<std::string>{"ask"});
  REQUIRE(state->tasks.size() == 1);
  CHECK(state->tasks[0].error == "answer yes or no");
  CHECK(state->tasks[0].interrupts.size() == 1);
  const auto resumed = app.invoke(sg::Command<Chat>{.resume = json("yes")}, config);
  CHECK_FALSE(resumed.interrupted());
  CHECK(resumed.state.log == std::vector<std::string>{"yes"});
}

TEST_CASE("a checkpointer without deltas gets plain values and behaves like InMemorySaver") {
  // Four turns of a chat whose node appends a reply and, from the third turn, removes the oldest
  // message; an interrupt and its resume; a state update; history. Run on a checkpointer
  // written from the public interface alone (sg::test::PlainSaver) and on InMemorySaver.
  auto scenario = [](std::shared_ptr<sg::Checkpointer> saver) {
    sg::StateGraph<Chat> g;
    g.add_node("reply", [](const Chat& s) {
      auto u = sg::Update<Chat>{}.set<&Chat::messages>(
          sg::ai("re: " + s.messages.back().text(), "r" + std::to_string(s.messages.size())));
      return u.set<&Chat::x>(s.x + 1);
    });
    g.add_node("trim", [](const Chat& s) {
      auto u = log("trim");
      if (s.messages.size() > 4) u.set<&Chat::messages>(sg::remove_message(s.messages[0].id));
      return u;
    });
    g.add_node("ask", [](const Chat&) { return log(sg::interrupt("ok?").get<std::string>()); });
    g.add_edge(sg::START, "reply").add_edge("reply", "trim").add_edge("trim", "ask");
    const auto app = g.compile({.checkpointer = saver});
    const auto config = thread("t");
    json out = json::array();
    for (int turn = 0; turn < 4; ++turn) {
      auto r = app.invoke(sg::Update<Chat>{}.set<&Chat::messages>(sg::human(
                              "turn " + std::to_string(turn), "h" + std::to_string(turn))),
                          config);
      CHECK(r.interrupted());
      r = app.invoke(sg::Command<Chat>{.resume = json("yes")}, config);
      CHECK_FALSE(r.interrupted());
      out.push_back(sg::state_to_json(r.state));
    }
    app.update_state(config, sg::Update<Chat>{}.set<&Chat::x>(100));
    out.push_back(sg::state_to_json(app.get_state(config)->values));
    for (const auto& snapshot : app.get_state_history(config)) {
      out.push_back({sg::state_to_json(snapshot.values), snapshot.next, snapshot.tasks.size()});
    }
    return out;
  };
  auto plain = std::make_shared<sg::test::PlainSaver>();
  const json with_plain = scenario(plain);
  const json with_memory = scenario(std::make_shared<sg::InMemorySaver>());
  CHECK(plain->puts > 20);
  CHECK(plain->encoded == 0);
  CHECK(with_plain.size() == with_memory.size());
  CHECK(with_plain == with_memory);
  // The plain checkpointer got the messages as a plain list.
  const auto latest = plain->get_tuple({"t", "", ""});
  REQUIRE(latest);
  CHECK(latest->checkpoint.channel_values["messages"].is_array());
  CHECK(latest->checkpoint.channel_values["messages"].size() == 6);
}

TEST_CASE("an interrupted RocksDB thread resumes after the process reopens the database") {
  sg::test::TempDir dir;
  const std::string path = dir.sub("db");
  auto build = [](std::shared_ptr<sg::Checkpointer> saver) {
    sg::StateGraph<Chat> g;
    g.add_node("draft", [](const Chat&) { return log("draft"); });
    g.add_node("approve",
               [](const Chat&) { return log(sg::interrupt("approve?").get<std::string>()); });
    g.add_node("send", [](const Chat&) { return log("sent"); });
    g.add_edge(sg::START, "draft").add_edge("draft", "approve").add_edge("approve", "send");
    return g.compile({.checkpointer = std::move(saver), .interrupt_before = {"draft"}});
  };
  {
    const auto app = build(sg::RocksDbSaver::open(path));
    const auto r = app.invoke(say("go"), thread("t"));
    CHECK(r.next == std::vector<std::string>{"draft"});
  }
  {
    const auto app = build(sg::RocksDbSaver::open(path));
    const auto r = app.resume(thread("t"));  // past the breakpoint, to the interrupt
    REQUIRE(r.interrupted());
    CHECK(r.interrupts.at(0).value == "approve?");
  }
  const auto app = build(sg::RocksDbSaver::open(path));
  const auto r = app.invoke(sg::Command<Chat>{.resume = json("yes")}, thread("t"));
  CHECK_FALSE(r.interrupted());
  CHECK(r.state.log == std::vector<std::string>{"draft", "yes", "sent"});
}

TEST_CASE("two pending interrupts need the map form") {
  auto saver = std::make_shared<sg::InMemorySaver>();
  sg::StateGraph<Chat> g;
  g.add_node("a", [](const Chat&) { return log("a=" + sg::interrupt("a?").get<std::string>()); });
  g.add_node("b", [](const Chat&) { return log("b=" + sg::interrupt("b?").get<std::string>()); });
  g.add_edge(sg::START, "a").add_edge(sg::START, "b");
  const auto app = g.compile({.checkpointer = saver});
  const auto r = app.invoke(say("go"), thread("t"));
  REQUIRE(r.interrupts.size() == 2);
  // LangGraph's wording (users search for it).
  CHECK_THROWS_WITH_AS((void)app.invoke(sg::Command<Chat>{.resume = json("x")}, thread("t")),
                       "When there are multiple pending interrupts, you must specify the interrupt "
                       "id when resuming. Docs: https://docs.langchain.com/oss/python/langgraph/"
                       "add-human-in-the-loop#resume-multiple-interrupts-with-one-invocation.",
                       sg::Error);
  const auto done = app.invoke(
      sg::Command<Chat>{.resume = json{{r.interrupts[0].id, "1"}, {r.interrupts[1].id, "2"}}},
      thread("t"));
  CHECK(done.state.log == std::vector<std::string>{"a=1", "b=2"});
}

TEST_CASE("static breakpoints resume with resume()") {
  auto saver = std::make_shared<sg::InMemorySaver>();
  const auto app = chain(saver, {.interrupt_before = {"b"}, .interrupt_after = {"a"}});
  const auto config = thread("t");
  auto r = app.invoke(say("hi"), config);
  CHECK(r.next == std::vector<std::string>{"b"});
  CHECK(r.state.x == 1);
  // LangGraph: a resumed run does not stop before its first step (nothing changed since the
  // interrupt: _loop.py sets versions_seen["__interrupt__"] on resume), so "b" runs.
  r = app.resume(config);
  CHECK_FALSE(r.interrupted());
  CHECK(r.state.x == 11);
  // A new run stops after "a" and then before "b" again.
  r = app.invoke(say("again"), config);
  CHECK(r.next == std::vector<std::string>{"b"});
  CHECK(r.state.x == 12);
}

TEST_CASE_TEMPLATE("fork_checkpoint: a copy in another thread runs the same next node", F,
                   SG_SAVER_FACTORIES) {
  F factory;
  auto saver = factory.make();
  const auto app = chain(saver, {.interrupt_before = {"b"}});
  auto r = app.invoke(say("hi"), thread("t1"));
  REQUIRE(r.next == std::vector<std::string>{"b"});
  const auto source = saver->get_tuple({.thread_id = "t1"});
  REQUIRE(source);
  const auto copy = sg::fork_checkpoint(*saver, *source, {.thread_id = "t2", .sibling = false});
  CHECK(copy.thread_id == "t2");
  const auto forked = saver->get_tuple({.thread_id = "t2"});
  REQUIRE(forked);
  CHECK(forked->config.checkpoint_id == copy.checkpoint_id);
  CHECK(forked->parent_config->checkpoint_id == source->config.checkpoint_id);
  CHECK(forked->metadata["source"] == "fork");
  CHECK(forked->metadata["step"] == source->metadata["step"].template get<int>() + 1);
  CHECK(forked->checkpoint.channel_values == source->checkpoint.channel_values);
  // Every version is new and above the thread's; the next node is still "b".
  for (const auto& [channel, v] : forked->checkpoint.channel_versions)
    CHECK(v > source->checkpoint.channel_versions.at(channel));
  CHECK(app.get_state(thread("t2"))->next == std::vector<std::string>{"b"});
  r = app.resume(thread("t2"));
  CHECK(r.state.x == 11);
  CHECK(r.state.log == std::vector<std::string>{"a", "b"});
  // Lists continue on the fork: a new turn appends to the copied messages and log.
  r = app.invoke(say("more"), thread("t2"));
  CHECK(r.state.messages.size() == 2);
  CHECK(app.resume(thread("t2")).state.log == std::vector<std::string>{"a", "b", "a", "b"});
  // The source thread is untouched; a fork into an existing thread is refused.
  CHECK(app.get_state(thread("t1"))->values.log == std::vector<std::string>{"a"});
  CHECK_THROWS_AS((void)sg::fork_checkpoint(*saver, *source, {.thread_id = "t2"}),
                  sg::CheckpointError);
  CHECK(saver->get_tuple({.thread_id = "t2"})->checkpoint.channel_values["x"] == 22);
}

TEST_CASE_TEMPLATE("durability modes give the same state", F, SG_SAVER_FACTORIES) {
  F factory;
  for (auto mode : {sg::Durability::sync, sg::Durability::async, sg::Durability::exit}) {
    auto saver = factory.make();
    const auto app = chain(saver);
    auto config = thread("t");
    config.durability = mode;
    CHECK(app.invoke(say("1"), config).state.x == 11);
    CHECK(app.invoke(say("2"), config).state.x == 22);
    CHECK(app.get_state(config)->values.x == 22);
    const auto stored = saver->list({.thread_id = "t"}).size();
    CHECK(stored == (mode == sg::Durability::exit ? 2U : 8U));
  }
}

TEST_CASE_TEMPLATE("a run on a thread sees every change made since the last run", F,
                   SG_SAVER_FACTORIES) {
  // A compiled graph keeps the final state of the threads it ran (recent_threads) and uses it
  // only while it is still the thread's latest checkpoint.
  F factory;
  auto saver = factory.make();
  const auto app = chain(saver);
  const auto other = chain(saver);
  const auto uncached = chain(saver, {.recent_threads = 0});
  const auto config = thread("t");
  CHECK(app.invoke(say("1"), config).state.x == 11);
  CHECK(other.invoke(say("2"), config).state.x == 22);  // another graph on the same thread
  CHECK(app.invoke(say("3"), config).state.x == 33);
  (void)app.update_state(config, sg::Update<Chat>{}.set<&Chat::x>(100), std::string(sg::END));
  const auto after_update = app.invoke(say("4"), config);
  CHECK(after_update.state.x == 111);
  CHECK(after_update.state.messages.size() == 4);
  saver->delete_thread("t");
  CHECK(app.invoke(say("5"), config).state.x == 11);  // a deleted thread starts again
  saver->copy_thread("elsewhere", "t");               // replaced by an empty thread
  CHECK(app.invoke(say("6"), config).state.messages.size() == 1);

  // Replaying an older checkpoint, then continuing: the same as a graph without the cache.
  for (const auto* g : {&app, &uncached}) {
    const auto tid = g == &app ? std::string("r1") : std::string("r2");
    (void)g->invoke(say("a"), thread(tid));
    (void)g->invoke(say("b"), thread(tid));
    const auto history = g->get_state_history(thread(tid));
    sg::RunConfig replay = thread(tid);
    replay.checkpoint_id = history[4].config.checkpoint_id;  // after the first run
    CHECK(g->resume(replay).state.x == 11);
    const auto next = g->invoke(say("c"), thread(tid));
    CHECK(next.state.x == 22);
    CHECK(next.state.messages.size() == 2);
  }
}

TEST_CASE("Send arguments are checkpointed and restored") {
  auto saver = std::make_shared<sg::InMemorySaver>();
  std::atomic<int> worker_runs{0};
  std::atomic<bool> fail{true};
  sg::StateGraph<Chat> g;
  g.add_node("worker", [&](const std::string& job) {
    ++worker_runs;
    if (job == "b" && fail) throw std::runtime_error("b failed");
    return log("done " + job);
  });
  g.add_conditional_edges(sg::START, [](const Chat&) {
    return std::vector<sg::Send>{sg::Send("worker", std::string("a")),
                                 sg::Send("worker", std::string("b"))};
  });
  const auto app = g.compile({.checkpointer = saver});
  CHECK_THROWS_AS((void)app.invoke(say("go"), thread("t")), sg::NodeError);
  fail = false;
  const auto out = app.resume(thread("t"));
  CHECK(out.state.log == std::vector<std::string>{"done a", "done b"});
  CHECK(worker_runs == 3);
}

TEST_CASE("a subgraph checkpoints under its namespace and resumes its interrupt") {
  auto saver = std::make_shared<sg::InMemorySaver>();
  sg::StateGraph<Chat> inner;
  inner.add_node("ask", [](const Chat&) {
    return log("inner=" + sg::interrupt("inner?").get<std::string>());
  });
  inner.add_edge(sg::START, "ask");
  sg::StateGraph<Chat> outer;
  outer.add_node("before", [](const Chat&) { return log("before"); });
  outer.add_node("sub", inner.compile());
  outer.add_edge(sg::START, "before").add_edge("before", "sub");
  const auto app = outer.compile({.checkpointer = saver});
  const auto r = app.invoke(say("go"), thread("t"));
  REQUIRE(r.interrupted());
  bool child_ns = false;
  for (const auto& ns : saver->namespaces("t")) child_ns = child_ns || ns.rfind("sub:", 0) == 0;
  CHECK(child_ns);
  const auto done = app.invoke(sg::Command<Chat>{.resume = json("42")}, thread("t"));
  CHECK_FALSE(done.interrupted());
  CHECK(done.state.log == std::vector<std::string>{"before", "before", "inner=42"});
}

TEST_CASE("bytes stored per superstep do not grow with the conversation") {
  auto saver = std::make_shared<sg::InMemorySaver>();
  sg::StateGraph<Chat> g;
  g.add_node("talk", [](const Chat& s) {
    return sg::Update<Chat>{}.set<&Chat::messages>(
        sg::ai(std::string(200, 'x'), "m" + std::to_string(s.messages.size())));
  });
  g.add_edge(sg::START, "talk");
  g.add_conditional_edges("talk",
                          [](const Chat& s) { return s.messages.size() >= 600 ? sg::END : "talk"; },
                          {"talk", sg::END});
  const auto app = g.compile({.checkpointer = saver});
  std::vector<std::size_t> bytes;
  auto config = thread("t");
  config.recursion_limit = 10000;
  config.durability = sg::Durability::sync;  // measured right after each step
  (void)app.stream(say("start"), config, sg::StreamMode::values,
                   [&](const sg::StreamEvent<Chat>&) { bytes.push_back(saver->stored_bytes()); });
  REQUIRE(bytes.size() > 500);
  const auto early = bytes[60] - bytes[50];
  const auto late = bytes[560] - bytes[550];
  CHECK(late <= early + early / 10);  // flat, not proportional to the 550 messages
  const auto final_state = app.get_state(config);
  CHECK(final_state->values.messages.size() == 600);
  CHECK(final_state->values.messages.back().content.str().size() == 200);
}

TEST_CASE_TEMPLATE("a concat list is stored as edits: flat bytes, every checkpoint reads back", F,
                   SG_SAVER_FACTORIES) {
  F factory;
  auto saver = factory.make();
  auto plain = std::make_shared<sg::test::PlainSaver>();
  // Appends 3 entries a step; step 150 keeps the last 20 (a keep-slice edit), step 200 replaces
  // the list (an Overwrite).
  auto build = [](std::shared_ptr<sg::Checkpointer> to) {
    sg::StateGraph<Chat> g;
    g.add_node("grow", [](const Chat& s) {
      auto next = sg::Update<Chat>{}.set<&Chat::x>(s.x + 1);
      if (s.x == 150) return next.set<&Chat::log>(sg::keep_last(20));
      if (s.x == 200)
        return next.set<&Chat::log>(sg::overwrite(std::vector<std::string>{"o1", "o2"}));
      const std::string n = std::to_string(s.x);
      return sg::Update<Chat>{}
          .set<&Chat::log>(sg::append(std::string(100, 'a') + n, "b" + n, "c" + n))
          .set<&Chat::x>(s.x + 1);
    });
    g.add_edge(sg::START, "grow");
    g.add_conditional_edges("grow", [](const Chat& s) { return s.x >= 300 ? sg::END : "grow"; },
                            {"grow", sg::END});
    return g.compile({.checkpointer = std::move(to)});
  };
  auto config = thread("t");
  config.recursion_limit = 1000;
  config.durability = sg::Durability::sync;
  std::vector<std::size_t> bytes;
  auto* memory = dynamic_cast<sg::InMemorySaver*>(saver.get());
  const auto app = build(saver);
  (void)app.stream(log("start"), config, sg::StreamMode::values, [&](const sg::StreamEvent<Chat>&) {
    if (memory) bytes.push_back(memory->stored_bytes());
  });
  (void)build(plain).invoke(log("start"), config);
  // Every checkpoint of the thread reads back the list the plain saver got as a whole value.
  const auto ours = saver->list({.thread_id = "t", .checkpoint_ns = ""});
  const auto theirs = plain->list({.thread_id = "t", .checkpoint_ns = ""});
  REQUIRE(ours.size() == theirs.size());
  REQUIRE(ours.size() > 300);
  for (std::size_t i = 0; i < ours.size(); ++i) {
    CHECK(ours[i].checkpoint.channel_values.value("log", json()) ==
          theirs[i].checkpoint.channel_values.value("log", json()));
  }
  const auto final_state = app.get_state(config);
  CHECK(final_state->values.log.size() == 2 + 3 * 99);
  CHECK(final_state->values.log.front() == "o1");
  CHECK(final_state->values.log.back() == "c299");
  if (memory) {
    // Stored whole, a step would cost about 3x more late (~420 entries) than early (~130).
    REQUIRE(bytes.size() > 290);
    const auto early = bytes[54] - bytes[40];
    const auto late = bytes[294] - bytes[280];
    CHECK(late <= early + early / 10);
  }
}

TEST_CASE("errors: no thread id, nothing to resume, unknown checkpoint, corrupt data") {
  auto saver = std::make_shared<sg::InMemorySaver>();
  const auto app = chain(saver);
  CHECK_THROWS_WITH_AS((void)app.invoke(say("x")),
                       "a graph with a checkpointer needs RunConfig::thread_id", sg::Error);
  CHECK_THROWS_WITH_AS(
      (void)app.resume(thread("empty")),
      "Received no input for __start__: thread 'empty' has no checkpoint to resume",
      sg::EmptyInputError);
  auto config = thread("t");
  (void)app.invoke(say("x"), config);
  config.checkpoint_id = "no-such-id";
  CHECK_THROWS_AS((void)app.resume(config), sg::Error);
  CHECK_THROWS_AS((void)chain(nullptr).get_state(thread("t")), sg::Error);

  // A checkpoint whose field does not fit the state.
  auto latest = saver->get_tuple({"t", "", ""});
  sg::Checkpoint bad = latest->checkpoint;
  bad.id = sg::new_checkpoint_id(9);
  bad.channel_values = {{"x", "not a number"}};
  bad.channel_versions["x"] = 999;
  saver->put(latest->config, bad, {{"source", "loop"}, {"step", 9}}, {{"x", 999}});
  CHECK_THROWS_AS((void)app.get_state(thread("t")), sg::CheckpointError);
}

TEST_CASE_TEMPLATE("many threads run graphs and read checkpoints at once", F, SG_SAVER_FACTORIES) {
  // One saver, one compiled graph, four writer threads (each its own conversation thread, with
  // sync and async durability) and a reader listing and loading everyone's checkpoints.
  F factory;
  auto saver = factory.make();
  const auto app = chain(saver);
  constexpr int kWriters = 4;
  constexpr int kTurns = 15;
  std::atomic<int> running{kWriters};
  std::atomic<int> reads{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      sg::RunConfig config = thread("w" + std::to_string(w));
      for (int turn = 0; turn < kTurns; ++turn) {
        config.durability = turn % 2 ? sg::Durability::async : sg::Durability::sync;
        app.invoke(say("turn " + std::to_string(turn)), config);
        // The reader has read while writers are mid-run before they go on.
        while (turn == 0 && reads.load() == 0) std::this_thread::yield();
      }
      --running;
    });
  }
  // A consistent snapshot: x counts the log's entries (a adds 1, b adds 10).
  auto consistent = [](const json& values) {
    int expected = 0;
    for (const auto& entry : values.value("log", json::array())) expected += entry == "a" ? 1 : 10;
    return values.value("x", 0) == expected;
  };
  threads.emplace_back([&] {
    while (running.load() > 0) {
      for (const auto& id : saver->threads()) {
        for (const auto& t : saver->list({.thread_id = id, .checkpoint_ns = "", .limit = 3})) {
          CHECK(consistent(t.checkpoint.channel_values));
          ++reads;
        }
        if (auto latest = saver->get_tuple({id, "", ""})) {
          CHECK(consistent(latest->checkpoint.channel_values));
          ++reads;
        }
      }
    }
  });
  for (auto& t : threads) t.join();
  MESSAGE("concurrent reads: " << reads.load());
  CHECK(reads.load() > 0);
  for (int w = 0; w < kWriters; ++w) {
    const std::string id = "w" + std::to_string(w);
    const auto latest = saver->get_tuple({id, "", ""});
    REQUIRE(latest);
    CHECK(latest->checkpoint.channel_values["x"] == 11 * kTurns);
    CHECK(latest->checkpoint.channel_values["messages"].size() == kTurns);
    CHECK(latest->checkpoint.channel_values["log"].size() == 2 * kTurns);
    CHECK(saver->list({.thread_id = id, .checkpoint_ns = ""}).size() == 4 * kTurns);
  }
}

namespace {

/// An InMemorySaver whose checkpoint writes take 2 ms, counting what it stored.
class SlowSaver final : public sg::Checkpointer {
 public:
  sg::CheckpointConfig put(const sg::CheckpointConfig& config, const sg::Checkpoint& checkpoint,
                           const json& metadata, const sg::ChannelVersions& versions) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    auto out = inner_.put(config, checkpoint, metadata, versions);
    ++stored;
    return out;
  }
  std::vector<sg::CheckpointConfig> put_all(const std::vector<sg::CheckpointPut>& puts) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    auto out = inner_.put_all(puts);
    stored += static_cast<int>(puts.size());
    return out;
  }
  void put_writes(const sg::CheckpointConfig& config,
                  const std::vector<std::pair<std::string, json>>& writes,
                  const std::string& task_id, const std::string& task_path) override {
    inner_.put_writes(config, writes, task_id, task_path);
  }
  std::optional<sg::CheckpointTuple> get_tuple(const sg::CheckpointConfig& config) override {
    return inner_.get_tuple(config);
  }
  std::vector<sg::CheckpointTuple> list(const sg::ListOptions& options) override {
    return inner_.list(options);
  }
  std::vector<std::string> threads() override { return inner_.threads(); }
  void delete_thread(const std::string& thread_id) override { inner_.delete_thread(thread_id); }
  void copy_thread(const std::string& source, const std::string& target) override {
    inner_.copy_thread(source, target);
  }
  void prune(const std::vector<std::string>& threads, sg::PruneStrategy strategy) override {
    inner_.prune(threads, strategy);
  }
  [[nodiscard]] sg::Durability default_durability() const noexcept override {
    return sg::Durability::async;
  }

  std::atomic<int> stored{0};

 private:
  sg::InMemorySaver inner_;
};

}  // namespace

TEST_CASE("async durability: short steps do not run far ahead of a slow saver") {
  auto saver = std::make_shared<SlowSaver>();
  sg::StateGraph<Chat> g;
  std::atomic<int> max_lag{0};
  g.add_node("tick", [&](const Chat& s, sg::Context& ctx) {
    // Checkpoints made so far: the input one and one per finished step.
    const int made = ctx.step() + 1;
    max_lag = std::max(max_lag.load(), made - saver->stored.load());
    return sg::Update<Chat>{}.set<&Chat::x>(s.x + 1);
  });
  g.add_edge(sg::START, "tick");
  g.add_conditional_edges("tick", [](const Chat& s) { return s.x >= 120 ? sg::END : "tick"; },
                          {"tick", sg::END});
  const auto app = g.compile({.checkpointer = saver});
  sg::RunConfig config = thread("slow");
  config.recursion_limit = 1000;
  const auto result = app.invoke(sg::Update<Chat>{}.set<&Chat::x>(0), config);
  CHECK(result.state.x == 120);
  // Every checkpoint is stored when invoke returns.
  CHECK(saver->stored.load() == 122);
  // A batch queued, one being stored, and the step that found them: never many more.
  CHECK(max_lag.load() <= 2 * static_cast<int>(sg::detail::kAsyncWriteBatch) + 2);
  MESSAGE("largest lag of stored checkpoints behind steps: " << max_lag.load());
}

TEST_CASE_TEMPLATE("delete_thread removes a thread's checkpoints, the next run starts afresh", F,
                   SG_SAVER_FACTORIES) {
  F factory;
  auto saver = factory.make();
  const auto app = chain(saver);
  (void)app.invoke(say("hi"), thread("t"));
  (void)app.invoke(say("again"), thread("t"));
  (void)app.invoke(say("other"), thread("u"));
  app.delete_thread("t");
  CHECK_FALSE(app.get_state(thread("t")));
  CHECK(app.get_state_history(thread("t")).empty());
  const auto fresh = app.invoke(say("new"), thread("t"));
  CHECK(fresh.state.x == 11);  // not 33: nothing of the deleted thread is used
  CHECK(fresh.state.messages.size() == 1);
  CHECK(app.get_state(thread("u"))->values.x == 11);  // other threads are untouched
  const auto no_saver = chain(nullptr);
  CHECK_THROWS_AS(no_saver.delete_thread("t"), sg::Error);
}

TEST_CASE_TEMPLATE("threads go on correctly after the saver's caches were dropped for many threads",
                   F, SG_SAVER_FACTORIES) {
  // KvCheckpointer keeps per-thread caches for the threads it used last (set_cached_threads; 64
  // here: 4 in each of its 16 shards) and drops the others': a thread whose caches were dropped
  // must continue from what is stored (records, inline values, message logs) exactly as from the
  // caches, and one written all along from its caches. 400 threads put about 25 in each shard.
  F factory;
  auto saver = factory.make();
  saver->set_cached_threads(64);
  const auto app = chain(saver);
  (void)app.invoke(say("first"), thread("t0"));
  for (int i = 1; i <= 400; ++i) {
    (void)app.invoke(say("x"), thread("t" + std::to_string(i)));
    if (i % 10 == 0) (void)app.invoke(say("hot " + std::to_string(i)), thread("hot"));
  }
  const auto hot = app.get_state(thread("hot"))->values;
  CHECK(hot.x == 40 * 11);
  REQUIRE(hot.messages.size() == 40);
  CHECK(hot.messages.front().text() == "hot 10");
  CHECK(hot.messages.back().text() == "hot 400");
  const auto next = app.invoke(say("second"), thread("t0"));
  CHECK(next.state.x == 22);
  CHECK(next.state.log == std::vector<std::string>{"a", "b", "a", "b"});
  REQUIRE(next.state.messages.size() == 2);
  CHECK(next.state.messages[0].text() == "first");
  CHECK(next.state.messages[1].text() == "second");
  CHECK(app.get_state_history(thread("t0")).size() == 8);
  CHECK(app.get_state(thread("t400"))->values.x == 11);
}

namespace {

/// The id of a task's k-th interrupt() call, as the executor has always made it: FNV-1a of the
/// task id (from a seed a digit short of the usual one, kept for saved ids), then k.
std::string interrupt_id_of(std::string_view task_id, std::size_t k) {
  std::uint64_t h = sg::detail::fnv1a(task_id, 1469598103934665603ULL);
  h = (h ^ k) * 1099511628211ULL;
  std::string out(16, '0');
  sg::detail::hex16(h, out.data());
  return out;
}

/// The value of the resume write a task saved against the thread's latest checkpoint.
json saved_resume(sg::Checkpointer& saver, const std::string& tid, std::string_view task_id) {
  const auto tuple = saver.get_tuple({tid, "", ""});
  REQUIRE(tuple);
  for (const auto& w : tuple->pending_writes)
    if (w.task_id == task_id && w.channel == sg::kResumeChannel) return w.value;
  return nullptr;
}

/// A node that runs two parts at once, each on a thread of its own in an interrupt scope (as
/// ToolNode runs its calls); what they throw is thrown as one GraphInterrupt.
sg::Update<Chat> two_parts(sg::Context& ctx, std::string& task_id) {
  task_id = std::string(ctx.task_id());
  std::array<sg::detail::InterruptScope, 2> scopes;
  std::array<std::string, 2> answers;
  std::array<std::exception_ptr, 2> errors;
  std::vector<std::thread> threads;
  sg::detail::ensure_parts_shared(sg::detail::ContextAccess::task(ctx));  // before the parts run
  for (std::size_t i = 0; i < 2; ++i) {
    scopes[i].task = &sg::detail::ContextAccess::task(ctx);
    scopes[i].key = std::to_string(i);
    threads.emplace_back([&, i] {
      sg::detail::InterruptScopeGuard in_scope(&scopes[i]);
      try {
        answers[i] = ctx.interrupt("part " + std::to_string(i)).get<std::string>();
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<sg::Interrupt> interrupts;
  for (const auto& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (sg::detail::GraphInterrupt& gi) {
      interrupts.insert(interrupts.end(), gi.interrupts.begin(), gi.interrupts.end());
    }
  }
  if (!interrupts.empty()) throw sg::detail::GraphInterrupt{std::move(interrupts)};
  return log(answers[0] + "," + answers[1]);
}

}  // namespace

TEST_CASE_TEMPLATE("a node's interrupt ids are its task id's hash and the call's index", F,
                   SG_SAVER_FACTORIES) {
  // Saved interrupts and the resume maps of clients carry these ids: they must not change.
  F factory;
  auto saver = factory.make();
  std::string task_id;
  sg::StateGraph<Chat> g;
  g.add_node("ask", [&task_id](const Chat&, sg::Context& ctx) {
    task_id = std::string(ctx.task_id());
    const auto name = ctx.interrupt("name?").get<std::string>();
    return log(name + ":" + sg::interrupt("age?").dump());
  });
  g.add_edge(sg::START, "ask");
  const auto app = g.compile({.checkpointer = saver});
  const auto r1 = app.invoke(say("go"), thread("t"));
  REQUIRE(r1.interrupts.size() == 1);
  CHECK(r1.interrupts[0].id == interrupt_id_of(task_id, 0));
  const auto r2 = app.invoke(sg::Command<Chat>{.resume = json("ada")}, thread("t"));
  REQUIRE(r2.interrupts.size() == 1);
  CHECK(r2.interrupts[0].id == interrupt_id_of(task_id, 1));
  // Resume values by position: the array LangGraph saves.
  CHECK(saved_resume(*saver, "t", task_id) == json::array({"ada"}));
  const auto done = app.invoke(sg::Command<Chat>{.resume = json(36)}, thread("t"));
  CHECK(done.state.log == std::vector<std::string>{"ada:36"});
}

TEST_CASE_TEMPLATE("interrupt scopes: parts of a task that interrupt at once resume by id", F,
                   SG_SAVER_FACTORIES) {
  F factory;
  auto saver = factory.make();
  std::string task_id;
  std::atomic<int> runs{0};
  sg::StateGraph<Chat> g;
  g.add_node("parts", [&](const Chat&, sg::Context& ctx) {
    ++runs;
    return two_parts(ctx, task_id);
  });
  g.add_edge(sg::START, "parts");
  const auto app = g.compile({.checkpointer = saver});

  const auto r1 = app.invoke(say("go"), thread("t"));
  REQUIRE(r1.interrupts.size() == 2);
  CHECK(r1.interrupts[0].value == "part 0");
  CHECK(r1.interrupts[1].value == "part 1");
  const std::string id0 = r1.interrupts[0].id;
  const std::string id1 = r1.interrupts[1].id;
  CHECK(id0 != id1);
  CHECK(id0 != interrupt_id_of(task_id, 0));  // a scope's ids are its own
  CHECK(app.get_state(thread("t"))->interrupts.size() == 2);
  CHECK_THROWS_WITH_AS((void)app.invoke(sg::Command<Chat>{.resume = json("x")}, thread("t")),
                       doctest::Contains("multiple pending interrupts"), sg::Error);

  const auto r2 = app.invoke(sg::Command<Chat>{.resume = json{{id1, "one"}}}, thread("t"));
  REQUIRE(r2.interrupts.size() == 1);
  CHECK(r2.interrupts[0].id == id0);
  CHECK(r2.interrupts[0].value == "part 0");
  // The values of scoped interrupts are saved by id, next to the positional ones.
  CHECK(saved_resume(*saver, "t", task_id) ==
        json{{"values", json::array()}, {"by_id", {{id1, "one"}}}});
  const auto state = app.get_state(thread("t"));
  REQUIRE(state->interrupts.size() == 1);
  CHECK(state->interrupts[0].id == id0);

  // One interrupt is left: a plain value answers it.
  const auto done = app.invoke(sg::Command<Chat>{.resume = json("zero")}, thread("t"));
  CHECK_FALSE(done.interrupted());
  CHECK(done.state.log == std::vector<std::string>{"zero,one"});
  CHECK(runs == 3);
}
