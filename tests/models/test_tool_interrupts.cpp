// SPDX-License-Identifier: MIT
// Interrupts raised by tool calls that run at once in one tools step (ToolNode, and the tools
// nodes of create_react_agent and create_agent): every call's interrupt is reported, with an id
// of its own that does not depend on which call asks first, and each is resumed by id; plain
// tools (a thread each), asynchronous tools (coroutines on the node's executor) and both mixed.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/core/async.hpp>
#include <stategraph/models/agent.hpp>
#include <stategraph/models/react_agent.hpp>
#include <stategraph/models/tool_node.hpp>
#include <stategraph/reducers/messages_state.hpp>
#include <stategraph/stategraph.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/fake_tool_calling_model.hpp"

namespace {

namespace net = boost::asio;
using nlohmann::json;

struct AskArgs {
  std::string question{};
  static constexpr auto schema() { return std::tuple{sg::field<"question">(&AskArgs::question)}; }
};

/// What the asking tools of a test share: which of them is slow (1: ask_a, 2: ask_b, else none),
/// so that the other one asks first, and how often each ran.
struct Bench {
  std::atomic<int> slow{0};
  std::array<std::atomic<int>, 3> runs{};
};

constexpr auto kSlow = std::chrono::milliseconds(40);

/// A plain tool that asks `question` through its runtime's Context and answers
/// "<name>=<answer>".
sg::Tool plain_ask(const std::string& name, int index, std::shared_ptr<Bench> bench) {
  return sg::make_tool<AskArgs>(
      name, "Asks a human.", [name, index, bench](const AskArgs& a, const sg::ToolRuntime& rt) {
        ++bench->runs[static_cast<std::size_t>(index)];
        if (bench->slow == index) std::this_thread::sleep_for(kSlow);
        const json answer = rt.context->interrupt(json{{"question", a.question}});
        return name + "=" + answer.get<std::string>();
      });
}

/// The same as an asynchronous tool: it waits on a timer, then asks with sg::interrupt (which
/// finds the node's Context and the call's scope after the co_await).
sg::Tool async_ask(const std::string& name, int index, std::shared_ptr<Bench> bench) {
  const json schema = {{"type", "object"},
                       {"properties", {{"question", {{"type", "string"}}}}},
                       {"required", {"question"}}};
  return sg::Tool(
      name, "Asks a human.", schema,
      [name, index, bench](json args, sg::ToolRuntime) -> net::awaitable<sg::ToolResult> {
        ++bench->runs[static_cast<std::size_t>(index)];
        auto executor = co_await net::this_coro::executor;
        net::steady_timer timer(executor);
        timer.expires_after(bench->slow == index ? kSlow : std::chrono::milliseconds(1));
        co_await timer.async_wait(net::use_awaitable);
        const json answer = sg::interrupt(json{{"question", args.value("question", "")}});
        sg::ToolResult out;
        out.content = name + "=" + answer.get<std::string>();
        co_return out;
      });
}

enum class Kinds { plain, async, mixed };

std::vector<sg::Tool> ask_tools(Kinds kinds, const std::shared_ptr<Bench>& bench) {
  switch (kinds) {
    case Kinds::plain:
      return {plain_ask("ask_a", 1, bench), plain_ask("ask_b", 2, bench)};
    case Kinds::async:
      return {async_ask("ask_a", 1, bench), async_ask("ask_b", 2, bench)};
    case Kinds::mixed:
      break;
  }
  return {async_ask("ask_a", 1, bench), plain_ask("ask_b", 2, bench)};
}

const std::vector<sg::ToolCall> kCalls{{"call-a", "ask_a", {{"question", "a?"}}},
                                       {"call-b", "ask_b", {{"question", "b?"}}}};

sg::RunConfig thread(const std::string& id) {
  sg::RunConfig config;
  config.thread_id = id;
  return config;
}

template <class S>
std::vector<sg::Message> tool_messages(const sg::RunResult<S>& r) {
  std::vector<sg::Message> out;
  for (const auto& m : r.state.messages)
    if (m.type == sg::MessageType::tool) out.push_back(m);
  return out;
}

/// The tool messages answering kCalls with `a` and `b`.
template <class S>
void check_answers(const sg::RunResult<S>& r, const std::string& a, const std::string& b) {
  CHECK_FALSE(r.interrupted());
  const auto messages = tool_messages(r);
  REQUIRE(messages.size() == 2);
  CHECK(messages[0].tool_call_id == "call-a");
  CHECK(messages[0].text() == "ask_a=" + a);
  CHECK(messages[0].status == "success");
  CHECK(messages[1].tool_call_id == "call-b");
  CHECK(messages[1].text() == "ask_b=" + b);
}

/// A way to run a graph: invoke, or ainvoke on an io_context of the test's.
template <class S>
struct Runner {
  const sg::CompiledGraph<S>* app = nullptr;
  bool async = false;

  template <class In>
  sg::RunResult<S> operator()(In input, const sg::RunConfig& config) const {
    if (!async) return app->invoke(std::move(input), config);
    net::io_context io;
    std::optional<sg::RunResult<S>> result;
    std::exception_ptr error;
    net::co_spawn(
        io,
        [&]() -> net::awaitable<void> {
          sg::RunConfig cfg = config;
          auto r = co_await app->ainvoke(std::move(input), std::move(cfg));
          result = std::move(r);
        },
        [&error](std::exception_ptr e) { error = e; });
    io.run();
    if (error) std::rethrow_exception(error);
    return std::move(*result);
  }
};

/// Both calls interrupt: both interrupts, in call order, with distinct ids that a re-run of the
/// step (the other call asking first) gives again. Returns their ids.
template <class S>
std::pair<std::string, std::string> both_interrupt(const Runner<S>& run, sg::Update<S> input,
                                                   const sg::RunConfig& config, Bench& bench) {
  bench.slow = 1;  // ask_b asks first
  const auto r = run(std::move(input), config);
  REQUIRE(r.interrupted());
  REQUIRE(r.interrupts.size() == 2);
  CHECK(r.interrupts[0].value == json{{"question", "a?"}});
  CHECK(r.interrupts[1].value == json{{"question", "b?"}});
  CHECK(r.interrupts[0].node == "tools");
  CHECK(r.interrupts[0].id != r.interrupts[1].id);
  CHECK(r.interrupts[0].id.size() == 16);
  const auto state = run.app->get_state(config);
  REQUIRE(state);
  REQUIRE(state->interrupts.size() == 2);
  CHECK(state->interrupts[0].id == r.interrupts[0].id);
  CHECK(state->interrupts[1].id == r.interrupts[1].id);

  bench.slow = 2;  // ask_a asks first this time
  const auto again = run(std::nullopt, config);
  REQUIRE(again.interrupts.size() == 2);
  CHECK(again.interrupts[0].id == r.interrupts[0].id);
  CHECK(again.interrupts[1].id == r.interrupts[1].id);
  CHECK(again.interrupts[0].value == json{{"question", "a?"}});
  bench.slow = 0;
  return {r.interrupts[0].id, r.interrupts[1].id};
}

/// The scenarios every tools node goes through, each on a thread of its own: resumed one call
/// at a time by id (each order), both at once, and the last pending one with a plain value.
template <class S>
void check_parallel_interrupts(const Runner<S>& run, const std::function<sg::Update<S>()>& input,
                               Bench& bench, const std::string& prefix) {
  {
    INFO("resumed one by id, then the other");
    const auto config = thread(prefix + "-one-by-one");
    const auto [id_a, id_b] = both_interrupt(run, input(), config, bench);
    // Two are pending: a single value does not say which it answers.
    CHECK_THROWS_WITH_AS((void)run(sg::Command<S>{.resume = json("x")}, config),
                         doctest::Contains("multiple pending interrupts"), sg::Error);
    bench.slow = 1;
    const auto first = run(sg::Command<S>{.resume = json{{id_a, "yes"}}}, config);
    REQUIRE(first.interrupted());
    REQUIRE(first.interrupts.size() == 1);
    CHECK(first.interrupts[0].id == id_b);
    CHECK(first.interrupts[0].value == json{{"question", "b?"}});
    const auto state = run.app->get_state(config);
    REQUIRE(state);
    REQUIRE(state->interrupts.size() == 1);
    CHECK(state->interrupts[0].id == id_b);
    bench.slow = 2;
    const auto done = run(sg::Command<S>{.resume = json{{id_b, "no"}}}, config);
    check_answers(done, "yes", "no");
  }
  {
    INFO("the second call resumed first");
    const auto config = thread(prefix + "-reversed");
    const auto [id_a, id_b] = both_interrupt(run, input(), config, bench);
    const auto first = run(sg::Command<S>{.resume = json{{id_b, "B"}}}, config);
    REQUIRE(first.interrupts.size() == 1);
    CHECK(first.interrupts[0].id == id_a);
    // One interrupt left: a plain value answers it.
    const auto done = run(sg::Command<S>{.resume = json("A")}, config);
    check_answers(done, "A", "B");
  }
  {
    INFO("both resumed at once");
    const auto config = thread(prefix + "-both");
    const auto [id_a, id_b] = both_interrupt(run, input(), config, bench);
    const auto done = run(sg::Command<S>{.resume = json{{id_a, "1"}, {id_b, "2"}}}, config);
    check_answers(done, "1", "2");
  }
}

sg::CompiledGraph<sg::MessagesState> tool_node_graph(std::vector<sg::Tool> tools,
                                                     std::shared_ptr<sg::Checkpointer> saver) {
  sg::StateGraph<sg::MessagesState> g;
  g.add_node("tools", sg::ToolNode<sg::MessagesState>(std::move(tools)));
  g.add_edge(sg::START, "tools");
  return g.compile({.checkpointer = std::move(saver)});
}

sg::Update<sg::MessagesState> tool_node_input() {
  sg::Update<sg::MessagesState> u;
  u.set<&sg::MessagesState::messages>(
      std::vector<sg::Message>{sg::human("go"), sg::ai("", kCalls, "ai-1")});
  return u;
}

template <class S>
sg::Update<S> ask(const std::string& text) {
  sg::Update<S> u;
  u.template set<&S::messages>(std::vector<sg::Message>{sg::human(text, "human-1")});
  return u;
}

/// The model of the agents: the two calls, then an answer without calls.
std::shared_ptr<sg::test::FakeToolCallingModel> two_calls_model() {
  return std::make_shared<sg::test::FakeToolCallingModel>(
      std::vector<std::vector<sg::ToolCall>>{kCalls, {}});
}

}  // namespace

TEST_CASE("ToolNode: parallel tool calls that interrupt are all reported and resumed by id") {
  for (const Kinds kinds : {Kinds::plain, Kinds::async, Kinds::mixed}) {
    CAPTURE(static_cast<int>(kinds));
    auto bench = std::make_shared<Bench>();
    const auto app =
        tool_node_graph(ask_tools(kinds, bench), std::make_shared<sg::InMemorySaver>());
    check_parallel_interrupts<sg::MessagesState>({&app, false}, tool_node_input, *bench,
                                                 "kinds" + std::to_string(static_cast<int>(kinds)));
  }
}

TEST_CASE("ToolNode: parallel interrupts under ainvoke, on the run's strand") {
  for (const Kinds kinds : {Kinds::async, Kinds::mixed, Kinds::plain}) {
    CAPTURE(static_cast<int>(kinds));
    auto bench = std::make_shared<Bench>();
    const auto app =
        tool_node_graph(ask_tools(kinds, bench), std::make_shared<sg::InMemorySaver>());
    check_parallel_interrupts<sg::MessagesState>({&app, true}, tool_node_input, *bench,
                                                 "kinds" + std::to_string(static_cast<int>(kinds)));
  }
}

TEST_CASE("ToolNode: the ids of parallel interrupts do not depend on thread timing") {
  // Many runs, each with a random call asking first: the ids of each thread's step are the
  // same whatever the order, and each id answers its own call.
  auto bench = std::make_shared<Bench>();
  auto saver = std::make_shared<sg::InMemorySaver>();
  for (const Kinds kinds : {Kinds::plain, Kinds::async, Kinds::mixed}) {
    const auto app = tool_node_graph(ask_tools(kinds, bench), saver);
    for (int i = 0; i < 6; ++i) {
      const auto config =
          thread("timing-" + std::to_string(static_cast<int>(kinds)) + "-" + std::to_string(i));
      bench->slow = 1 + i % 2;
      const auto r = app.invoke(tool_node_input(), config);
      REQUIRE(r.interrupts.size() == 2);
      bench->slow = 2 - i % 2;
      const auto again = app.invoke(std::nullopt, config);
      REQUIRE(again.interrupts.size() == 2);
      CHECK(again.interrupts[0].id == r.interrupts[0].id);
      CHECK(again.interrupts[1].id == r.interrupts[1].id);
      bench->slow = 0;
      const auto done =
          app.invoke(sg::Command<sg::MessagesState>{.resume = json{{r.interrupts[1].id, "second"},
                                                                   {r.interrupts[0].id, "first"}}},
                     config);
      check_answers(done, "first", "second");
    }
  }
}

TEST_CASE("ToolNode: one interrupting call among parallel ones, and a call that fails") {
  auto bench = std::make_shared<Bench>();
  sg::Tool fine = sg::make_tool<AskArgs>("fine", "Answers.", [bench](const AskArgs& a) {
    ++bench->runs[0];
    return "fine:" + a.question;
  });
  sg::Tool broken = sg::make_tool<AskArgs>(
      "broken", "Fails.", [](const AskArgs&) -> std::string { throw std::runtime_error("down"); });
  auto saver = std::make_shared<sg::InMemorySaver>();

  SUBCASE("the finished call runs again with the task; the interrupted one gets its answer") {
    const auto app = tool_node_graph({fine, plain_ask("ask_b", 2, bench)}, saver);
    sg::Update<sg::MessagesState> input;
    input.set<&sg::MessagesState::messages>(std::vector<sg::Message>{
        sg::human("go"),
        sg::ai("",
               {{"call-a", "fine", {{"question", "x"}}}, {"call-b", "ask_b", {{"question", "b?"}}}},
               "ai-1")});
    const auto r = app.invoke(input, thread("one"));
    REQUIRE(r.interrupts.size() == 1);
    CHECK(r.interrupts[0].value == json{{"question", "b?"}});
    // A single pending interrupt takes a plain value.
    const auto done =
        app.invoke(sg::Command<sg::MessagesState>{.resume = json("ok")}, thread("one"));
    const auto messages = tool_messages(done);
    REQUIRE(messages.size() == 2);
    CHECK(messages[0].text() == "fine:x");
    CHECK(messages[1].text() == "ask_b=ok");
    CHECK(bench->runs[0] == 2);  // the task re-ran whole
  }
  SUBCASE("an error that is not an interrupt fails the node, interrupts or not") {
    sg::StateGraph<sg::MessagesState> g;
    g.add_node("tools", sg::ToolNode<sg::MessagesState>({broken, plain_ask("ask_b", 2, bench)},
                                                        {.handle_errors = false}));
    g.add_edge(sg::START, "tools");
    const auto app = g.compile({.checkpointer = saver});
    sg::Update<sg::MessagesState> input;
    input.set<&sg::MessagesState::messages>(std::vector<sg::Message>{
        sg::human("go"), sg::ai("",
                                {{"call-b", "ask_b", {{"question", "b?"}}},
                                 {"call-x", "broken", {{"question", "x"}}}},
                                "ai-1")});
    CHECK_THROWS_WITH_AS((void)app.invoke(input, thread("two")), doctest::Contains("down"),
                         sg::NodeError);
  }
}

TEST_CASE("ToolNode: one call keeps the ids and positional resume of any node") {
  // One call runs in no scope of its own: its interrupts are the task's, k-th id for the k-th
  // call, resumed in order by plain values (as before parallel calls had scopes).
  auto bench = std::make_shared<Bench>();
  sg::Tool twice = sg::make_tool<AskArgs>("twice", "Asks twice.", [](const AskArgs&) {
    const auto first = sg::interrupt("first?").get<std::string>();
    const auto second = sg::interrupt("second?").get<std::string>();
    return first + "+" + second;
  });
  std::string task_id;
  sg::StateGraph<sg::MessagesState> g;
  auto tools = sg::ToolNode<sg::MessagesState>({twice});
  g.add_node("tools",
             [tools, &task_id](const sg::MessagesState& s, sg::Context& ctx)
                 -> net::awaitable<std::vector<sg::Command<sg::MessagesState>>> {
               task_id = std::string(ctx.task_id());
               auto out = co_await tools(s, ctx);
               co_return out;
             });
  g.add_edge(sg::START, "tools");
  const auto app = g.compile({.checkpointer = std::make_shared<sg::InMemorySaver>()});
  sg::Update<sg::MessagesState> input;
  input.set<&sg::MessagesState::messages>(std::vector<sg::Message>{
      sg::human("go"), sg::ai("", {{"call-1", "twice", {{"question", "q"}}}}, "ai-1")});
  const auto config = thread("single");
  const auto r1 = app.invoke(input, config);
  REQUIRE(r1.interrupts.size() == 1);
  // LangGraph-style ids: FNV-1a of the task id, then the call's index.
  const auto expected = [&](std::size_t k) {
    std::uint64_t h = 1469598103934665603ULL;
    for (const char c : task_id) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    h = (h ^ k) * 1099511628211ULL;
    std::string out(16, '0');
    for (int i = 15; i >= 0; --i, h >>= 4)
      out[static_cast<std::size_t>(i)] = "0123456789abcdef"[h & 0xF];
    return out;
  };
  CHECK(r1.interrupts[0].id == expected(0));
  const auto r2 = app.invoke(sg::Command<sg::MessagesState>{.resume = json("one")}, config);
  REQUIRE(r2.interrupts.size() == 1);
  CHECK(r2.interrupts[0].id == expected(1));
  CHECK(r2.interrupts[0].value == "second?");
  const auto done = app.invoke(sg::Command<sg::MessagesState>{.resume = json("two")}, config);
  const auto messages = tool_messages(done);
  REQUIRE(messages.size() == 1);
  CHECK(messages[0].text() == "one+two");
}

TEST_CASE("create_react_agent: parallel tool calls that interrupt are resumed by id") {
  for (const Kinds kinds : {Kinds::plain, Kinds::async, Kinds::mixed}) {
    CAPTURE(static_cast<int>(kinds));
    auto bench = std::make_shared<Bench>();
    auto model = two_calls_model();
    const auto app = sg::create_react_agent(
        model, ask_tools(kinds, bench), {.checkpointer = std::make_shared<sg::InMemorySaver>()});
    check_parallel_interrupts<sg::AgentState>(
        {&app, false}, [] { return ask<sg::AgentState>("go"); }, *bench,
        "react" + std::to_string(static_cast<int>(kinds)));
  }
}

TEST_CASE("create_agent: parallel tool calls that interrupt are resumed by id") {
  for (const Kinds kinds : {Kinds::plain, Kinds::async, Kinds::mixed}) {
    CAPTURE(static_cast<int>(kinds));
    auto bench = std::make_shared<Bench>();
    auto model = two_calls_model();
    const auto app = sg::create_agent(model, ask_tools(kinds, bench),
                                      {.checkpointer = std::make_shared<sg::InMemorySaver>()});
    check_parallel_interrupts<sg::CreateAgentState>(
        {&app, false}, [] { return ask<sg::CreateAgentState>("go"); }, *bench,
        "agent" + std::to_string(static_cast<int>(kinds)));
  }
}

TEST_CASE("create_agent: interrupts from a wrap_tool_call middleware, one per call") {
  // The middleware asks before each call (after a co_await); the tool runs with the answer.
  sg::AgentMiddleware approve;
  approve.name = "approve";
  approve.wrap_tool_call = [](sg::ToolCallRequest request,
                              sg::ToolHandler next) -> net::awaitable<sg::ToolCallOutcome> {
    auto executor = co_await net::this_coro::executor;
    net::steady_timer timer(executor);
    timer.expires_after(request.call.name == "echo_a" ? kSlow : std::chrono::milliseconds(1));
    co_await timer.async_wait(net::use_awaitable);
    const json answer = sg::interrupt(json{{"approve", request.call.id}});
    request.call.args["question"] = answer;
    auto out = co_await next(std::move(request));
    co_return out;
  };
  const auto echo = [](const std::string& name) {
    return sg::make_tool<AskArgs>(name, "Echoes.",
                                  [name](const AskArgs& a) { return name + "=" + a.question; });
  };
  auto model =
      std::make_shared<sg::test::FakeToolCallingModel>(std::vector<std::vector<sg::ToolCall>>{
          {{"call-a", "echo_a", {{"question", "a"}}}, {"call-b", "echo_b", {{"question", "b"}}}},
          {}});
  const auto app = sg::create_agent(
      model, {echo("echo_a"), echo("echo_b")},
      {.middleware = {approve}, .checkpointer = std::make_shared<sg::InMemorySaver>()});
  const auto config = thread("approve");
  const auto r = app.invoke(ask<sg::CreateAgentState>("go"), config);
  REQUIRE(r.interrupts.size() == 2);
  CHECK(r.interrupts[0].value == json{{"approve", "call-a"}});
  CHECK(r.interrupts[1].value == json{{"approve", "call-b"}});
  const auto first = app.invoke(
      sg::Command<sg::CreateAgentState>{.resume = json{{r.interrupts[1].id, "B"}}}, config);
  REQUIRE(first.interrupts.size() == 1);
  CHECK(first.interrupts[0].id == r.interrupts[0].id);
  const auto done = app.invoke(
      sg::Command<sg::CreateAgentState>{.resume = json{{r.interrupts[0].id, "A"}}}, config);
  CHECK_FALSE(done.interrupted());
  const auto messages = tool_messages(done);
  REQUIRE(messages.size() == 2);
  CHECK(messages[0].text() == "echo_a=A");
  CHECK(messages[1].text() == "echo_b=B");
  CHECK(model->inputs().size() == 2);  // the model ran once before the tools, once after
}
