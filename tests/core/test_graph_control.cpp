// SPDX-License-Identifier: MIT
// Control flow and observation: Send, Command, subgraphs, interrupts, streaming.
#include <stategraph/stategraph.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {

struct TopicLog {
  std::vector<std::string> items{};
  std::string topic{};
  int count = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"items">(&TopicLog::items, sg::concat),
                      sg::field<"topic">(&TopicLog::topic), sg::field<"count">(&TopicLog::count)};
  }
};

sg::Update<TopicLog> topic_item(std::string name) {
  return sg::set<&TopicLog::items>(std::move(name));
}

struct SummaryChat : sg::MessagesState {
  std::string summary{};
  static constexpr auto schema() {
    return std::tuple_cat(sg::MessagesState::schema(),
                          std::tuple{sg::field<"summary">(&SummaryChat::summary)});
  }
};

struct Job {
  std::string subject{};
  int delay_ms = 0;
};

}  // namespace

TEST_CASE("Send: map-reduce with a custom argument type, results in send order") {
  sg::StateGraph<TopicLog> g;
  g.add_node("plan",
             [](const TopicLog&) { return sg::set<&TopicLog::topic>(std::string("animals")); });
  g.add_node("joke", [](const Job& job) {
    std::this_thread::sleep_for(std::chrono::milliseconds(job.delay_ms));
    return topic_item("joke about " + job.subject);
  });
  g.add_node("done", [](const TopicLog& s) {
    return sg::set<&TopicLog::count>(static_cast<int>(s.items.size()));
  });
  g.add_edge(sg::START, "plan");
  g.add_conditional_edges("plan", [](const TopicLog& s) {
    std::vector<sg::Send> sends;
    int delay = 8;
    for (const char* subject : {"cats", "dogs", "owls", "bees"}) {
      sends.emplace_back("joke", Job{std::string(subject) + " (" + s.topic + ")", delay});
      delay -= 2;  // later sends finish first
    }
    return sends;
  });
  g.add_edge("joke", "done");
  const auto out = g.compile().invoke(sg::Update<TopicLog>{});
  CHECK(out.state.items ==
        std::vector<std::string>{"joke about cats (animals)", "joke about dogs (animals)",
                                 "joke about owls (animals)", "joke about bees (animals)"});
  CHECK(out.state.count == 4);
}

TEST_CASE("Send with a state argument, and a Send to a missing node") {
  sg::StateGraph<TopicLog> g;
  g.add_node("worker", [](const TopicLog& arg) { return topic_item(arg.topic); });
  g.add_conditional_edges(sg::START, [](const TopicLog&) {
    return std::vector<sg::Send>{sg::Send("worker", TopicLog{.topic = "a"}),
                                 sg::Send("worker", TopicLog{.topic = "b"})};
  });
  CHECK(g.compile().invoke(sg::Update<TopicLog>{}).state.items ==
        std::vector<std::string>{"a", "b"});

  sg::StateGraph<TopicLog> bad;
  bad.add_node("a", [](const TopicLog&) { return sg::Update<TopicLog>{}; });
  bad.add_conditional_edges(sg::START,
                            [](const TopicLog&) { return sg::Send("nobody", TopicLog{}); });
  bad.add_edge("a", sg::END);
  // "a" is reachable because an unmapped router may go anywhere.
  CHECK_THROWS_WITH_AS((void)bad.compile().invoke(sg::Update<TopicLog>{}),
                       "the conditional edge after node '__start__' returned unknown node 'nobody'",
                       sg::Error);
}

TEST_CASE("Command: update plus goto, added to the static edges") {
  sg::StateGraph<TopicLog> g;
  g.add_node("a",
             [](const TopicLog&) {
               return sg::Command<TopicLog>{.update = topic_item("a"), .go_to = {"c"}};
             },
             {.destinations = {"c"}});
  g.add_node("b", [](const TopicLog&) { return topic_item("b"); });
  g.add_node("c", [](const TopicLog&) { return topic_item("c"); });
  g.add_edge(sg::START, "a").add_edge("a", "b");
  CHECK(g.compile().invoke(sg::Update<TopicLog>{}).state.items ==
        std::vector<std::string>{"a", "b", "c"});
}

TEST_CASE("Command with Send and a route to END") {
  sg::StateGraph<TopicLog> g;
  g.add_node("fan", [](const TopicLog&) {
    return sg::Command<TopicLog>{
        .go_to = {sg::Send("leaf", Job{"x"}), sg::Send("leaf", Job{"y"}), sg::END}};
  });
  g.add_node("leaf", [](const Job& j) { return topic_item(j.subject); });
  g.add_edge(sg::START, "fan");
  CHECK(g.compile().invoke(sg::Update<TopicLog>{}).state.items ==
        std::vector<std::string>{"x", "y"});
}

TEST_CASE("subgraph with the same state: messages merge by id") {
  sg::StateGraph<SummaryChat> inner;
  inner.add_node("reply", [](const SummaryChat& s) {
    return sg::Update<SummaryChat>{}
        .set<&SummaryChat::messages>(sg::ai("inner saw " + std::to_string(s.messages.size()), "r1"))
        .set<&SummaryChat::summary>(std::string("from inner"));
  });
  inner.add_edge(sg::START, "reply");
  const auto sub = inner.compile({.name = "inner"});

  sg::StateGraph<SummaryChat> outer;
  outer.add_node("greet", [](const SummaryChat&) {
    return sg::Update<SummaryChat>{}.set<&SummaryChat::messages>(sg::human("hi", "h1"));
  });
  outer.add_node("inner", sub);
  outer.add_edge(sg::START, "greet").add_edge("greet", "inner");
  const auto out = outer.compile().invoke(sg::Update<SummaryChat>{});
  REQUIRE(out.state.messages.size() == 2);
  CHECK(out.state.messages[0].id == "h1");
  CHECK(out.state.messages[1].content.str() == "inner saw 1");
  CHECK(out.state.summary == "from inner");
}

TEST_CASE("subgraph with its own state type") {
  sg::StateGraph<TopicLog> inner;
  inner.add_node("count", [](const TopicLog& s) {
    return sg::set<&TopicLog::count>(static_cast<int>(s.topic.size()));
  });
  inner.add_edge(sg::START, "count");
  const auto sub = inner.compile();

  sg::StateGraph<SummaryChat> outer;
  outer.add_node(
      "measure", sub, [](const SummaryChat& s) { return sg::set<&TopicLog::topic>(s.summary); },
      [](const TopicLog& out) {
        return sg::Update<SummaryChat>{}.set<&SummaryChat::messages>(
            sg::ai("length " + std::to_string(out.count), "m"));
      });
  outer.add_edge(sg::START, "measure");
  const auto out = outer.compile().invoke(
      sg::Update<SummaryChat>{}.set<&SummaryChat::summary>(std::string("twelve chars")));
  REQUIRE(out.state.messages.size() == 1);
  CHECK(out.state.messages[0].content.str() == "length 12");
}

TEST_CASE("subgraph_schemas lists the subgraphs as LangGraph's get_subgraphs") {
  // outer (SummaryChat): "plain", "log" (TopicLog, which holds "deep", TopicLog too), "chat"
  // (SummaryChat).
  sg::StateGraph<TopicLog> deepest;
  deepest.add_node("n", [](const TopicLog&) { return sg::Update<TopicLog>{}; });
  deepest.add_edge(sg::START, "n");
  sg::StateGraph<TopicLog> log;
  log.add_node("deep", deepest.compile());
  log.add_edge(sg::START, "deep");
  sg::StateGraph<SummaryChat> chat;
  chat.add_node("n", [](const SummaryChat&) { return sg::Update<SummaryChat>{}; });
  chat.add_edge(sg::START, "n");
  sg::StateGraph<SummaryChat> outer;
  outer.add_node("plain", [](const SummaryChat&) { return sg::Update<SummaryChat>{}; });
  outer.add_node(
      "log", log.compile(), [](const SummaryChat&) { return sg::Update<TopicLog>{}; },
      [](const TopicLog&) { return sg::Update<SummaryChat>{}; });
  outer.add_node("chat", chat.compile());
  outer.add_edge(sg::START, "plain").add_edge("plain", "log").add_edge("log", "chat");
  const auto graph = outer.compile();

  const auto names = [](const std::vector<std::pair<std::string, nlohmann::json>>& listed) {
    std::vector<std::string> out;
    for (const auto& [ns, schema] : listed) out.push_back(ns);
    return out;
  };
  const auto direct = graph.subgraph_schemas();
  CHECK(names(direct) == std::vector<std::string>{"log", "chat"});  // in node order
  CHECK(direct[0].second == sg::json_schema_of<TopicLog>());
  CHECK(direct[1].second == sg::json_schema_of<SummaryChat>());
  CHECK(names(graph.subgraph_schemas(std::nullopt, true)) ==
        std::vector<std::string>{"log", "log|deep", "chat"});
  CHECK(names(graph.subgraph_schemas("chat")) == std::vector<std::string>{"chat"});
  // A nested namespace is found only when recursing, as in LangGraph.
  CHECK(graph.subgraph_schemas("log|deep").empty());
  const auto deep = graph.subgraph_schemas("log|deep", true);
  CHECK(names(deep) == std::vector<std::string>{"log|deep"});
  CHECK(deep[0].second == sg::json_schema_of<TopicLog>());
  CHECK(graph.subgraph_schemas("plain").empty());  // not a subgraph
  CHECK(graph.subgraph_schemas("nope", true).empty());
}

TEST_CASE("a subgraph node's Command to the parent graph") {
  sg::StateGraph<TopicLog> inner;
  inner.add_node("escalate", [](const TopicLog&) {
    return sg::Command<TopicLog>{
        .update = topic_item("escalated"), .go_to = {"handler"}, .graph = sg::PARENT};
  });
  inner.add_edge(sg::START, "escalate");
  sg::StateGraph<TopicLog> outer;
  outer.add_node("sub", inner.compile());
  outer.add_node("handler", [](const TopicLog&) { return topic_item("handled"); });
  outer.add_edge(sg::START, "sub");
  CHECK(outer.compile().invoke(sg::Update<TopicLog>{}).state.items ==
        std::vector<std::string>{"escalated", "handled"});
  // At the root there is no parent.
  CHECK_THROWS_AS((void)inner.compile().invoke(sg::Update<TopicLog>{}), sg::Error);
}

TEST_CASE("static interrupts: before and after nodes") {
  sg::StateGraph<TopicLog> g;
  g.add_node("draft", [](const TopicLog&) { return topic_item("draft"); });
  g.add_node("review", [](const TopicLog&) { return topic_item("review"); });
  g.add_node("send", [](const TopicLog&) { return topic_item("send"); });
  g.add_edge(sg::START, "draft").add_edge("draft", "review").add_edge("review", "send");

  auto before = g.compile({.interrupt_before = {"send"}}).invoke(sg::Update<TopicLog>{});
  CHECK(before.interrupted());
  CHECK(before.interrupts.empty());
  CHECK(before.next == std::vector<std::string>{"send"});
  CHECK(before.state.items == std::vector<std::string>{"draft", "review"});

  auto after = g.compile({.interrupt_after = {"draft"}}).invoke(sg::Update<TopicLog>{});
  CHECK(after.interrupted());
  CHECK(after.next == std::vector<std::string>{"review"});
  CHECK(after.state.items == std::vector<std::string>{"draft"});

  sg::RunConfig config;
  config.interrupt_before = {"review"};
  auto run_level = g.compile().invoke(sg::Update<TopicLog>{}, config);
  CHECK(run_level.next == std::vector<std::string>{"review"});

  auto all = g.compile({.interrupt_before = {"*"}}).invoke(sg::Update<TopicLog>{});
  CHECK(all.next == std::vector<std::string>{"draft"});
}

TEST_CASE("sg::interrupt inside a node: an interrupted result carrying the value") {
  std::atomic<int> after_interrupt{0};
  sg::StateGraph<TopicLog> g;
  g.add_node("prepare", [](const TopicLog&) { return topic_item("prepared"); });
  g.add_node("ask", [&after_interrupt](const TopicLog& s) {
    const auto answer = sg::interrupt({{"question", "approve?"}, {"items", s.items.size()}});
    ++after_interrupt;
    return topic_item(answer.get<std::string>());
  });
  g.add_node("other", [](const TopicLog&) { return topic_item("other"); });
  g.add_edge(sg::START, "prepare").add_edge("prepare", "ask").add_edge("prepare", "other");
  const auto app = g.compile();
  const auto out = app.invoke(sg::Update<TopicLog>{});
  CHECK(out.interrupted());
  REQUIRE(out.interrupts.size() == 1);
  CHECK(out.interrupts[0].node == "ask");
  CHECK(out.interrupts[0].value == nlohmann::json{{"question", "approve?"}, {"items", 1}});
  CHECK(out.interrupts[0].id.size() == 16);
  // LangGraph: the writes of the step's tasks that finished ("other") are applied to the
  // returned state; only the interrupted task runs on resume.
  CHECK(out.next == std::vector<std::string>{"ask"});
  CHECK(out.state.items == std::vector<std::string>{"prepared", "other"});
  CHECK(after_interrupt == 0);
  // Resuming needs a checkpointer (see the checkpointing docs).
  CHECK_THROWS_WITH_AS((void)app.invoke(sg::Command<TopicLog>{.resume = nlohmann::json("yes")}),
                       "Cannot use Command(resume=...) without checkpointer", sg::Error);
}

TEST_CASE("an interrupt in a subgraph interrupts the parent") {
  sg::StateGraph<TopicLog> inner;
  inner.add_node("ask", [](const TopicLog&) {
    return topic_item(sg::interrupt("inner question").get<std::string>());
  });
  inner.add_edge(sg::START, "ask");
  sg::StateGraph<TopicLog> outer;
  outer.add_node("sub", inner.compile());
  outer.add_edge(sg::START, "sub");
  const auto out = outer.compile().invoke(sg::Update<TopicLog>{});
  CHECK(out.interrupted());
  REQUIRE(out.interrupts.size() == 1);
  CHECK(out.interrupts[0].value == "inner question");
  CHECK(out.next == std::vector<std::string>{"sub"});
}

TEST_CASE("stream modes: values, updates, custom, debug, in order") {
  sg::StateGraph<TopicLog> g;
  g.add_node("a", [](const TopicLog&, sg::Context& ctx) {
    ctx.write({{"progress", 50}});
    ctx.write({{"progress", 100}});
    return topic_item("a");
  });
  g.add_node("b", [](const TopicLog& s) {
    return sg::set<&TopicLog::count>(static_cast<int>(s.items.size()));
  });
  g.add_edge(sg::START, "a").add_edge("a", "b");
  const auto app = g.compile();

  std::vector<std::string> trace;
  const auto result = app.stream(
      topic_item("input"), {},
      sg::StreamMode::values | sg::StreamMode::updates | sg::StreamMode::custom,
      [&](const sg::StreamEvent<TopicLog>& e) {
        std::string line = std::string(sg::to_string(e.mode)) + "@" + std::to_string(e.step);
        if (e.mode == sg::StreamMode::values)
          line += " items=" + std::to_string(e.values->items.size());
        if (e.mode == sg::StreamMode::updates) line += " " + e.node;
        if (e.mode == sg::StreamMode::custom) line += " " + e.node + " " + e.data.dump();
        trace.push_back(line);
      });
  CHECK(trace == std::vector<std::string>{"values@0 items=1", "custom@1 a {\"progress\":50}",
                                          "custom@1 a {\"progress\":100}", "updates@1 a",
                                          "values@1 items=2", "updates@2 b", "values@2 items=2"});
  CHECK(result.state.count == 2);

  std::vector<nlohmann::json> debug;
  (void)app.stream(sg::Update<TopicLog>{}, {}, sg::StreamMode::debug,
                   [&](const sg::StreamEvent<TopicLog>& e) { debug.push_back(e.data); });
  REQUIRE(debug.size() == 4);
  CHECK(debug[0]["type"] == "task");
  CHECK(debug[0]["payload"]["name"] == "a");
  CHECK(debug[1]["type"] == "task_result");
  CHECK(debug[1]["payload"]["result"] == nlohmann::json{{"items", {"a"}}});
  CHECK(debug[3]["payload"]["result"] == nlohmann::json{{"count", 1}});
}

TEST_CASE("stream as an iterable, errors reach the loop") {
  sg::StateGraph<TopicLog> g;
  g.add_node("a", [](const TopicLog&) { return topic_item("a"); });
  g.add_node("b", [](const TopicLog&) { return topic_item("b"); });
  g.add_edge(sg::START, "a").add_edge("a", "b");
  const auto app = g.compile();
  std::vector<std::string> nodes;
  auto events = app.stream(sg::Update<TopicLog>{}, sg::RunConfig{}, sg::StreamMode::updates);
  for (auto& e : events) nodes.push_back(e.node);
  CHECK(nodes == std::vector<std::string>{"a", "b"});
  CHECK(events.result().state.items == std::vector<std::string>{"a", "b"});

  sg::StateGraph<TopicLog> failing;
  failing.add_node("ok", [](const TopicLog&) { return topic_item("ok"); });
  failing.add_node(
      "bad", [](const TopicLog&) -> sg::Update<TopicLog> { throw std::runtime_error("nope"); });
  failing.add_edge(sg::START, "ok").add_edge("ok", "bad");
  auto stream =
      failing.compile().stream(sg::Update<TopicLog>{}, sg::RunConfig{}, sg::StreamMode::updates);
  std::vector<std::string> seen;
  CHECK_THROWS_AS(
      [&] {
        for (auto& e : stream) seen.push_back(e.node);
      }(),
      sg::NodeError);
  CHECK(seen == std::vector<std::string>{"ok"});
}

TEST_CASE("dropping an unfinished stream cancels the run") {
  std::atomic<int> steps{0};
  sg::StateGraph<TopicLog> g;
  g.add_node("loop", [&steps](const TopicLog&, sg::Context& ctx) {
    ++steps;
    for (int i = 0; i < 10 && !ctx.cancelled(); ++i) std::this_thread::sleep_for(1ms);
    return topic_item("x");
  });
  g.add_edge(sg::START, "loop");
  g.add_conditional_edges("loop", [](const TopicLog&) { return "loop"; }, {"loop", sg::END});
  sg::RunConfig config;
  config.recursion_limit = 1000000;
  {
    auto events = g.compile().stream(sg::Update<TopicLog>{}, config, sg::StreamMode::updates);
    auto it = events.begin();
    ++it;
    CHECK(it->node == "loop");
  }  // the destructor cancels and joins
  const int after = steps;
  std::this_thread::sleep_for(20ms);
  CHECK(steps == after);
}

TEST_CASE("a stream delivers each task's output as it finishes, with the pool busy too") {
  // LangGraph streams a task's output when the task completes, while its siblings still run.
  // Here one of the pool's two workers is busy with other work: the run's second task is not
  // started by the pool, and must not hold back the first one's output either.
  auto pool = std::make_shared<sg::ThreadPool>(2);
  std::atomic<bool> release{false};
  pool->post([&release] {
    while (!release.load()) std::this_thread::sleep_for(1ms);
  });
  std::atomic<bool> long_done{false};
  sg::StateGraph<TopicLog> g;
  g.add_node("a_short", [](const TopicLog&) {
    std::this_thread::sleep_for(50ms);
    return topic_item("a_short");
  });
  g.add_node("b_long", [&long_done](const TopicLog&) {
    std::this_thread::sleep_for(500ms);
    long_done = true;
    return topic_item("b_long");
  });
  g.add_edge(sg::START, "a_short").add_edge(sg::START, "b_long");
  const auto app = g.compile({.pool = pool});
  std::vector<std::string> order;
  const auto result = app.stream(sg::Update<TopicLog>{}, {}, sg::StreamMode::updates,
                                 [&](const sg::StreamEvent<TopicLog>& e) {
                                   order.push_back(e.node + (long_done ? " after" : " before"));
                                 });
  release = true;
  CHECK(order == std::vector<std::string>{"a_short before", "b_long after"});
  CHECK(result.state.items == std::vector<std::string>{"a_short", "b_long"});
}

TEST_CASE("a stream on a pool busy with other work still runs its tasks") {
  auto pool = std::make_shared<sg::ThreadPool>(1);
  std::atomic<bool> release{false};
  pool->post([&release] {
    while (!release.load()) std::this_thread::sleep_for(1ms);
  });
  sg::StateGraph<TopicLog> g;
  g.add_node("a", [](const TopicLog&) { return topic_item("a"); });
  g.add_node("b", [](const TopicLog&) { return topic_item("b"); });
  g.add_edge(sg::START, "a").add_edge(sg::START, "b");
  const auto app = g.compile({.pool = pool});
  std::vector<std::string> nodes;
  const auto result =
      app.stream(sg::Update<TopicLog>{}, {}, sg::StreamMode::updates,
                 [&](const sg::StreamEvent<TopicLog>& e) { nodes.push_back(e.node); });
  release = true;
  CHECK(result.state.items == std::vector<std::string>{"a", "b"});
  CHECK(nodes.size() == 2);
}

TEST_CASE("subgraph events stream with their namespace") {
  sg::StateGraph<TopicLog> inner;
  inner.add_node("leaf", [](const TopicLog&, sg::Context& ctx) {
    ctx.write("from leaf");
    return topic_item("leaf");
  });
  inner.add_edge(sg::START, "leaf");
  sg::StateGraph<TopicLog> outer;
  outer.add_node("sub", inner.compile());
  outer.add_edge(sg::START, "sub");
  const auto app = outer.compile();

  sg::RunConfig config;
  config.stream_subgraphs = true;
  std::vector<std::string> trace;
  (void)app.stream(sg::Update<TopicLog>{}, config, sg::StreamMode::updates | sg::StreamMode::custom,
                   [&](const sg::StreamEvent<TopicLog>& e) {
                     std::string ns;
                     for (const auto& part : e.ns) ns += part.substr(0, part.find(':')) + "/";
                     trace.push_back(ns + std::string(sg::to_string(e.mode)) + ":" + e.node);
                   });
  CHECK(trace == std::vector<std::string>{"sub/custom:leaf", "sub/updates:leaf", "updates:sub"});

  trace.clear();
  (void)app.stream(sg::Update<TopicLog>{}, {}, sg::StreamMode::updates,
                   [&](const sg::StreamEvent<TopicLog>& e) { trace.push_back(e.node); });
  CHECK(trace == std::vector<std::string>{"sub"});
}
