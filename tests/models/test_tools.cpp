// SPDX-License-Identifier: MIT
// Tools and ToolNode: schemas from argument structs, tool messages in call order, errors as
// tool messages (LangGraph's templates), concurrency, injected state and store, Commands.
#include <stategraph/models/tool_node.hpp>
#include <stategraph/reducers/messages_state.hpp>
#include <stategraph/stategraph.hpp>
#include <stategraph/store/memory_store.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace {

struct MulArgs {
  double a = 0;
  double b = 0;
  std::optional<std::string> note{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"a">(&MulArgs::a), sg::field<"b">(&MulArgs::b),
                      sg::field<"note">(&MulArgs::note)};
  }
};

struct SleepArgs {
  int ms = 0;
  static constexpr auto schema() { return std::tuple{sg::field<"ms">(&SleepArgs::ms)}; }
};

struct ToolChat : sg::MessagesState {
  std::string user{};
  static constexpr auto schema() {
    return std::tuple_cat(sg::MessagesState::schema(),
                          std::tuple{sg::field<"user">(&ToolChat::user)});
  }
};

struct NoArgs {
  static constexpr auto schema() { return std::tuple{}; }
};

sg::Tool multiply_tool() {
  return sg::make_tool<MulArgs>("multiply", "Multiplies two numbers.",
                                [](const MulArgs& x) { return x.a * x.b; },
                                {{"a", "the first factor"}});
}

sg::Update<ToolChat> with_messages(std::vector<sg::Message> messages) {
  sg::Update<ToolChat> u;
  u.set<&ToolChat::messages>(std::move(messages));
  return u;
}

sg::RunResult<ToolChat> run_tools(const sg::CompiledGraph<ToolChat>& app,
                                  std::vector<sg::ToolCall> calls) {
  std::vector<sg::Message> input{sg::human("go"), sg::ai("", std::move(calls), "ai-1")};
  return app.invoke(with_messages(std::move(input)));
}

sg::CompiledGraph<ToolChat> tool_graph(std::vector<sg::Tool> tools,
                                       sg::ToolNodeOptions options = {},
                                       std::shared_ptr<sg::Store> store = nullptr) {
  sg::StateGraph<ToolChat> g;
  g.add_node("tools", sg::ToolNode<ToolChat>(std::move(tools), options));
  g.add_edge(sg::START, "tools");
  sg::CompileOptions compile;
  compile.store = std::move(store);
  return g.compile(std::move(compile));
}

}  // namespace

TEST_CASE("make_tool derives the JSON schema from the argument struct") {
  const sg::Tool t = multiply_tool();
  CHECK(t.name() == "multiply");
  CHECK(t.spec().parameters == nlohmann::json::parse(R"({"type": "object", "required": ["a", "b"],
          "properties": {"a": {"type": "number", "description": "the first factor"},
                         "b": {"type": "number"}, "note": {"type": "string"}}})"));
  CHECK(t.call({{"a", 6}, {"b", 7}}, {}).content == 42.0);
  CHECK_THROWS_WITH_AS((void)t.call({{"a", 6}}, {}), "tool 'multiply': missing argument 'b'",
                       sg::Error);
  CHECK_THROWS_AS((void)t.call({{"a", "six"}, {"b", 7}}, {}), sg::Error);
  CHECK_THROWS_AS((void)sg::make_tool<MulArgs>("m", "", [](const MulArgs&) { return 1; },
                                               {{"zzz", "no such argument"}}),
                  sg::Error);
  CHECK_THROWS_AS(
      sg::Tool("", "", nlohmann::json::object(), [](auto&, auto&) { return sg::ToolResult{}; }),
      sg::Error);
  CHECK(sg::make_tool<NoArgs>("now", "", [](const NoArgs&) { return "noon"; }).spec().parameters ==
        nlohmann::json::parse(R"({"type": "object", "properties": {}, "required": []})"));
}

TEST_CASE("ToolNode answers every call in call order, errors as tool messages") {
  sg::Tool fail = sg::make_tool<NoArgs>("fail", "Always fails.", [](const NoArgs&) -> std::string {
    throw std::runtime_error("the disk is full");
  });
  const auto app = tool_graph({multiply_tool(), fail});
  auto r = run_tools(app, {sg::ToolCall{"c1", "multiply", {{"a", 6}, {"b", 7}}},
                           sg::ToolCall{"c2", "fail", nlohmann::json::object()},
                           sg::ToolCall{"c3", "nope", nlohmann::json::object()},
                           sg::ToolCall{"c4", "multiply", {{"a", 1}}}});
  REQUIRE(r.state.messages.size() == 6);
  const auto& m = r.state.messages;
  CHECK(m[2].type == sg::MessageType::tool);
  CHECK(m[2].tool_call_id == "c1");
  CHECK(m[2].name == "multiply");
  CHECK(m[2].text() == "42.0");
  CHECK(m[2].status == "success");
  CHECK(m[3].tool_call_id == "c2");
  CHECK(m[3].status == "error");
  CHECK(m[3].text() == "Error: the disk is full\n Please fix your mistakes.");
  CHECK(m[4].text() == "Error: nope is not a valid tool, try one of [multiply, fail].");
  CHECK(m[4].status == "error");
  CHECK(m[5].text() == "Error: tool 'multiply': missing argument 'b'\n Please fix your mistakes.");
  for (const auto& msg : m) CHECK_FALSE(msg.id.empty());

  SUBCASE("rethrown when error handling is off") {
    const auto strict = tool_graph({multiply_tool(), fail}, sg::ToolNodeOptions{false});
    CHECK_THROWS_WITH(run_tools(strict, {sg::ToolCall{"c2", "fail", nlohmann::json::object()}}),
                      doctest::Contains("the disk is full"));
  }
  SUBCASE("the last message must be an AI message") {
    CHECK_THROWS_WITH(app.invoke(with_messages({sg::human("x")})),
                      doctest::Contains("not an AI message"));
  }
}

TEST_CASE("ToolNode runs the calls of one message concurrently") {
  std::atomic<int> in_flight{0};
  std::atomic<int> most{0};
  sg::Tool sleepy = sg::make_tool<SleepArgs>("sleep", "Sleeps.", [&](const SleepArgs& a) {
    const int now = ++in_flight;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(a.ms));
    --in_flight;
    return a.ms;
  });
  const auto app = tool_graph({sleepy});
  std::vector<sg::ToolCall> calls;
  for (int i = 0; i < 4; ++i)
    calls.push_back({"c" + std::to_string(i), "sleep", {{"ms", 60 - 10 * i}}});
  auto r = run_tools(app, calls);
  CHECK(most.load() == 4);
  REQUIRE(r.state.messages.size() == 6);
  for (int i = 0; i < 4; ++i) CHECK(r.state.messages[2 + i].text() == std::to_string(60 - 10 * i));
}

TEST_CASE("tools read the state and the store, and may return a Command") {
  auto store = std::make_shared<sg::InMemoryStore>();
  store->put({"prefs"}, "ada", {{"color", "green"}});
  sg::Tool prefs = sg::make_tool<NoArgs>("prefs", "The user's preferences.",
                                         [](const NoArgs&, const sg::ToolRuntime& rt) {
                                           const std::string user = rt.state_as<ToolChat>().user;
                                           auto item = rt.store->get({"prefs"}, user);
                                           return item ? item->value : nlohmann::json(nullptr);
                                         });
  sg::Tool rename = sg::make_tool<NoArgs>(
      "rename", "Renames the user.", [](const NoArgs&, const sg::ToolRuntime& rt) {
        sg::Command<ToolChat> c;
        c.update = sg::set<&ToolChat::user>(std::string("bob"));
        c.update.set<&ToolChat::messages>(
            std::vector<sg::Message>{sg::tool("renamed", rt.call->id)});
        return c;
      });
  const auto app = tool_graph({prefs, rename}, {}, store);
  std::vector<sg::Message> input{
      sg::human("go"),
      sg::ai("", {sg::ToolCall{"c1", "prefs", {}}, sg::ToolCall{"c2", "rename", {}}}, "ai-1")};
  sg::Update<ToolChat> in = with_messages(std::move(input));
  in.set<&ToolChat::user>(std::string("ada"));
  auto r = app.invoke(std::move(in));
  REQUIRE(r.state.messages.size() == 4);
  CHECK(r.state.messages[2].text() == R"({"color":"green"})");
  CHECK(r.state.messages[3].text() == "renamed");
  CHECK(r.state.user == "bob");
  CHECK_THROWS_AS((void)sg::ToolRuntime{}.state_as<ToolChat>(), sg::Error);
}

TEST_CASE("tools_condition routes on the last message's tool calls") {
  ToolChat s;
  CHECK(sg::tools_condition(s) == sg::END);
  s.messages = {sg::ai("x")};
  CHECK(sg::tools_condition(s) == sg::END);
  s.messages = {sg::ai("", {sg::ToolCall{"c", "t", {}}})};
  CHECK(sg::tools_condition(s) == "tools");
  CHECK_THROWS_AS(sg::ToolNode<ToolChat>({multiply_tool(), multiply_tool()}), sg::Error);
}

namespace {

/// An asynchronous tool that waits (on timers, holding no thread) until `expected` calls are in
/// flight at once, then answers with its thread's id; it gives up after 2 s and fails.
sg::Tool rendezvous_tool(std::shared_ptr<std::atomic<int>> in_flight, int expected) {
  return sg::Tool(
      "meet", "Waits for the others.", nlohmann::json::object(),
      [in_flight, expected](nlohmann::json args,
                            sg::ToolRuntime runtime) -> boost::asio::awaitable<sg::ToolResult> {
        ++*in_flight;
        auto executor = co_await boost::asio::this_coro::executor;
        boost::asio::steady_timer timer(executor);
        for (int i = 0; i < 400 && in_flight->load() < expected; ++i) {
          timer.expires_after(std::chrono::milliseconds(5));
          co_await timer.async_wait(boost::asio::use_awaitable);
        }
        if (in_flight->load() < expected) throw std::runtime_error("the others never came");
        if (args.is_object() && args.value("fail", false))
          throw std::runtime_error("asked to fail");
        std::ostringstream thread;
        thread << std::this_thread::get_id();
        sg::ToolResult out;
        out.content = {{"id", runtime.call->id}, {"thread", thread.str()}};
        co_return out;
      });
}

}  // namespace

TEST_CASE("asynchronous tools: ToolNode awaits them all at once on the run's thread") {
  auto in_flight = std::make_shared<std::atomic<int>>(0);
  const auto app = tool_graph({rendezvous_tool(in_flight, 3), multiply_tool()});
  const std::vector<sg::ToolCall> calls{{"c1", "meet", {}},
                                        {"c2", "meet", {}},
                                        {"c3", "meet", {}},
                                        {"c4", "multiply", {{"a", 6}, {"b", 7}}}};

  SUBCASE("invoke: on the task's thread") {
    auto r = run_tools(app, calls);
    REQUIRE(r.state.messages.size() == 6);
    std::set<std::string> threads;
    for (int i = 0; i < 3; ++i) {
      const auto reply = nlohmann::json::parse(r.state.messages[2 + i].text());
      CHECK(reply["id"] == "c" + std::to_string(i + 1));
      CHECK(r.state.messages[2 + i].status == "success");
      threads.insert(reply["thread"].get<std::string>());
    }
    CHECK(threads.size() == 1);
    CHECK(r.state.messages[5].text() == "42.0");
  }
  SUBCASE("ainvoke on one io_context thread: no thread per call") {
    boost::asio::io_context io;
    std::optional<sg::RunResult<ToolChat>> result;
    std::vector<sg::Message> input{sg::human("go"), sg::ai("", calls, "ai-1")};
    auto update = with_messages(std::move(input));
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
          auto r = co_await app.ainvoke(std::move(update));
          result = std::move(r);
        },
        boost::asio::detached);
    io.run();
    REQUIRE(result);
    std::ostringstream here;
    here << std::this_thread::get_id();
    for (int i = 0; i < 3; ++i)
      CHECK(nlohmann::json::parse(result->state.messages[2 + i].text())["thread"] == here.str());
    CHECK(result->state.messages[5].text() == "42.0");
  }
}

TEST_CASE("asynchronous tools: errors follow handle_errors, Tool::call runs them to the end") {
  auto in_flight = std::make_shared<std::atomic<int>>(0);
  const sg::Tool meet = rendezvous_tool(in_flight, 1);
  CHECK(meet.is_async());
  CHECK_FALSE(multiply_tool().is_async());
  sg::ToolCall call{"c0", "meet", {}};
  sg::ToolRuntime runtime{&call, nullptr, nullptr, nullptr};
  CHECK(meet.call({}, runtime).content["id"] == "c0");
  CHECK_THROWS_WITH_AS((void)meet.call({{"fail", true}}, runtime), "asked to fail",
                       std::runtime_error);
  CHECK_THROWS_AS(sg::Tool("t", "", nlohmann::json::object(), sg::Tool::AsyncFn{}), sg::Error);

  const std::vector<sg::ToolCall> calls{{"c1", "meet", {{"fail", true}}}, {"c2", "meet", {}}};
  auto r = run_tools(tool_graph({meet}), calls);
  REQUIRE(r.state.messages.size() == 4);
  CHECK(r.state.messages[2].status == "error");
  CHECK(r.state.messages[2].text() == "Error: asked to fail\n Please fix your mistakes.");
  CHECK(r.state.messages[3].status == "success");
  CHECK_THROWS_WITH(run_tools(tool_graph({meet}, sg::ToolNodeOptions{false}), calls),
                    doctest::Contains("asked to fail"));
}
