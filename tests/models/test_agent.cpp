// SPDX-License-Identifier: MIT
// create_agent's graph: the order of middleware hooks and wrappers (LangChain's
// test_create_agent_invoke and test_wrap_tool_call expectations), jumps, and the repair of
// orphaned tool calls.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/core/async.hpp>
#include <stategraph/models/agent.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/react_agent.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/fake_tool_calling_model.hpp"

namespace {

namespace net = boost::asio;
using sg::CreateAgentState;
using sg::test::FakeToolCallingModel;

/// A thread-safe call log.
struct Log {
  std::mutex mu;
  std::vector<std::string> calls;
  void add(std::string entry) {
    std::lock_guard lock(mu);
    calls.push_back(std::move(entry));
  }
};

struct ValueArgs {
  std::string value{};
  static constexpr auto schema() { return std::tuple{sg::field<"value">(&ValueArgs::value)}; }
};

/// LangChain's my_tool: logs "my_tool" and answers the value in upper case.
sg::Tool upper_tool(Log& log) {
  return sg::make_tool<ValueArgs>("my_tool", "Upper-cases a value.", [&log](const ValueArgs& a) {
    log.add("my_tool");
    std::string out = a.value;
    for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
  });
}

/// A middleware logging "<name>.before_model", "<name>.wrap_model_call" and
/// "<name>.after_model" (LangChain's NoopSeven and NoopEight).
sg::AgentMiddleware logging_middleware(const std::string& name, Log& log) {
  sg::AgentMiddleware m;
  m.name = name;
  m.before_model = [&log, name](const CreateAgentState&, sg::Context&) {
    log.add(name + ".before_model");
    return std::optional<sg::HookResult>();
  };
  m.wrap_model_call = [&log, name](sg::ModelRequest request,
                                   sg::ModelHandler next) -> net::awaitable<sg::ModelResponse> {
    log.add(name + ".wrap_model_call");
    co_return co_await next(std::move(request));
  };
  m.after_model = [&log, name](const CreateAgentState&, sg::Context&) {
    log.add(name + ".after_model");
    return std::optional<sg::HookResult>();
  };
  return m;
}

template <class S = CreateAgentState>
sg::Update<S> ask(std::vector<sg::Message> messages) {
  sg::Update<S> u;
  u.template set<&S::messages>(std::move(messages));
  return u;
}

sg::ToolCall call(std::string name, nlohmann::json args, std::string id) {
  return sg::ToolCall{std::move(id), std::move(name), std::move(args)};
}

}  // namespace

TEST_CASE(
    "create_agent runs before_model in order, wrap_model_call outermost first, after_model "
    "in reverse (test_create_agent_invoke)") {
  Log log;
  auto model = std::make_shared<FakeToolCallingModel>(
      std::vector<std::vector<sg::ToolCall>>{{call("my_tool", {{"value", "yo"}}, "1")}, {}});
  sg::AgentOptions options;
  options.system_prompt = "You are a helpful assistant.";
  options.middleware = {logging_middleware("NoopSeven", log), logging_middleware("NoopEight", log)};
  auto agent = sg::create_agent(model, {upper_tool(log)}, options);
  auto result = agent.invoke(ask({sg::human("hello")}));
  CHECK(log.calls ==
        std::vector<std::string>{"NoopSeven.before_model", "NoopEight.before_model",
                                 "NoopSeven.wrap_model_call", "NoopEight.wrap_model_call",
                                 "NoopEight.after_model", "NoopSeven.after_model", "my_tool",
                                 "NoopSeven.before_model", "NoopEight.before_model",
                                 "NoopSeven.wrap_model_call", "NoopEight.wrap_model_call",
                                 "NoopEight.after_model", "NoopSeven.after_model"});
  const auto& m = result.state.messages;
  REQUIRE(m.size() == 4);
  CHECK(m[0].text() == "hello");
  CHECK(m[1].type == sg::MessageType::ai);
  CHECK(m[1].text() == "You are a helpful assistant.-hello");
  CHECK(m[1].id == "0");
  CHECK(m[1].tool_calls == std::vector<sg::ToolCall>{call("my_tool", {{"value", "yo"}}, "1")});
  CHECK(m[2].type == sg::MessageType::tool);
  CHECK(m[2].text() == "YO");
  CHECK(m[2].name == "my_tool");
  CHECK(m[2].tool_call_id == "1");
  CHECK(m[3].text() == "You are a helpful assistant.-hello-You are a helpful assistant.-hello-YO");
  CHECK(m[3].id == "1");
}

TEST_CASE(
    "create_agent: a before_model hook that jumps to end ends the run (test_create_agent_"
    "jump)") {
  Log log;
  auto model = std::make_shared<FakeToolCallingModel>();
  auto seven = logging_middleware("NoopSeven", log);
  sg::AgentMiddleware eight;
  eight.name = "NoopEight";
  eight.can_jump_to = {"end"};
  eight.before_model = [&log](const CreateAgentState&, sg::Context&) {
    log.add("NoopEight.before_model");
    return std::optional<sg::HookResult>(sg::HookResult{{}, "end"});
  };
  auto agent = sg::create_agent(model, {upper_tool(log)}, {.middleware = {seven, eight}});
  auto result = agent.invoke(ask({}));
  CHECK(result.state.messages.empty());
  CHECK(log.calls == std::vector<std::string>{"NoopSeven.before_model", "NoopEight.before_model"});
  CHECK(model->inputs().empty());
  // A jump not declared in can_jump_to is an error, not a silent no-op.
  sg::AgentMiddleware undeclared = eight;
  undeclared.name = "Undeclared";
  undeclared.can_jump_to.clear();
  auto bad = sg::create_agent(model, {}, {.middleware = {undeclared}});
  CHECK_THROWS_WITH(
      (void)bad.invoke(ask({sg::human("hi")})),
      doctest::Contains(
          "middleware 'Undeclared' jumped to 'end', which is not in its can_jump_to"));
}

TEST_CASE(
    "create_agent: before_agent hooks run in order, after_agent hooks in reverse, once per "
    "invocation") {
  Log log;
  const auto hook = [&log](std::string entry) {
    return [&log, entry](const CreateAgentState&, sg::Context&) {
      log.add(entry);
      return std::optional<sg::HookResult>();
    };
  };
  sg::AgentMiddleware before_one{.name = "before_one", .before_agent = hook("before_1")};
  sg::AgentMiddleware before_two{.name = "before_two", .before_agent = hook("before_2")};
  sg::AgentMiddleware after_one{.name = "after_one", .after_agent = hook("after_1")};
  sg::AgentMiddleware after_two{.name = "after_two", .after_agent = hook("after_2")};
  auto model = std::make_shared<FakeToolCallingModel>();
  auto agent =
      sg::create_agent(model, {}, {.middleware = {before_one, before_two, after_one, after_two}});
  (void)agent.invoke(ask({sg::human("hi")}));
  CHECK(log.calls == std::vector<std::string>{"before_1", "before_2", "after_2", "after_1"});

  // One before_agent and one after_agent around three model calls (two tool loops); a second
  // invocation of the thread logs the same again.
  log.calls.clear();
  sg::AgentMiddleware all{.name = "all",
                          .before_agent = hook("before_agent"),
                          .before_model = hook("before_model"),
                          .after_model = hook("after_model"),
                          .after_agent = hook("after_agent")};
  auto looping = std::make_shared<FakeToolCallingModel>(std::vector<std::vector<sg::ToolCall>>{
      {call("my_tool", {{"value", "a"}}, "1")}, {call("my_tool", {{"value", "b"}}, "2")}, {}});
  auto saver = std::make_shared<sg::InMemorySaver>();
  auto threaded =
      sg::create_agent(looping, {upper_tool(log)}, {.middleware = {all}, .checkpointer = saver});
  sg::RunConfig config;
  config.thread_id = "t";
  (void)threaded.invoke(ask({sg::human("hi")}), config);
  const std::vector<std::string> one_run{
      "before_agent", "before_model", "after_model",  "my_tool",     "before_model",
      "after_model",  "my_tool",      "before_model", "after_model", "after_agent"};
  CHECK(log.calls == one_run);
  log.calls.clear();
  (void)threaded.invoke(ask({sg::human("again")}), config);
  CHECK(log.calls == one_run);  // the model's script cycles: the same three calls again
}

TEST_CASE(
    "create_agent: wrap_tool_call wrappers nest, the first outermost, and may short-"
    "circuit (test_wrap_tool_call)") {
  Log log;
  const auto wrapper = [&log](std::string name, bool short_circuit) {
    return
        [&log, name, short_circuit](sg::ToolCallRequest request,
                                    sg::ToolHandler next) -> net::awaitable<sg::ToolCallOutcome> {
          if (short_circuit) {
            log.add(name + "_short_circuit");
            sg::Message answer = sg::tool("inner_result", request.call.id);
            co_return sg::ToolCallOutcome{std::move(answer), {}};
          }
          log.add(name + "_before");
          sg::ToolCallOutcome out = co_await next(std::move(request));
          log.add(name + "_after");
          if (name == "outer" && out.message)
            out.message->content = sg::Content("outer_wrapped: " + out.message->text());
          co_return out;
        };
  };
  const auto run = [&](std::vector<sg::AgentMiddleware> middleware) {
    log.calls.clear();
    auto model = std::make_shared<FakeToolCallingModel>(
        std::vector<std::vector<sg::ToolCall>>{{call("my_tool", {{"value", "x"}}, "1")}, {}});
    auto agent = sg::create_agent(model, {upper_tool(log)}, {.middleware = std::move(middleware)});
    return agent.invoke(ask({sg::human("go")})).state.messages.at(2).text();
  };
  sg::AgentMiddleware outer{.name = "outer", .wrap_tool_call = wrapper("outer", false)};
  sg::AgentMiddleware middle{.name = "middle", .wrap_tool_call = wrapper("middle", false)};
  sg::AgentMiddleware inner{.name = "inner", .wrap_tool_call = wrapper("inner", false)};
  CHECK(run({outer, inner}) == "outer_wrapped: X");
  CHECK(log.calls == std::vector<std::string>{"outer_before", "inner_before", "my_tool",
                                              "inner_after", "outer_after"});
  (void)run({outer, middle, inner});
  CHECK(log.calls == std::vector<std::string>{"outer_before", "middle_before", "inner_before",
                                              "my_tool", "inner_after", "middle_after",
                                              "outer_after"});
  sg::AgentMiddleware shorting{.name = "inner", .wrap_tool_call = wrapper("inner", true)};
  CHECK(run({outer, shorting}) == "outer_wrapped: inner_result");
  CHECK(log.calls ==
        std::vector<std::string>{"outer_before", "inner_short_circuit", "outer_after"});
}

TEST_CASE("create_agent: wrap_model_call may change the request: messages, model and tools") {
  Log log;
  auto model = std::make_shared<FakeToolCallingModel>();
  auto other = std::make_shared<FakeToolCallingModel>();
  sg::AgentMiddleware nice{
      .name = "nice",
      .wrap_model_call = [](sg::ModelRequest request,
                            sg::ModelHandler next) -> net::awaitable<sg::ModelResponse> {
        request.messages.push_back(sg::human("remember to be nice!"));
        co_return co_await next(std::move(request));
      }};
  auto agent = sg::create_agent(
      model, {}, {.system_prompt = "You are a helpful assistant.", .middleware = {nice}});
  auto result = agent.invoke(ask({sg::human("Hello")}));
  // Only the model sees the added message (LangChain's request list is the state's own list, so
  // there it leaks into the state too).
  REQUIRE(result.state.messages.size() == 2);
  CHECK(result.state.messages[1].text() ==
        "You are a helpful assistant.-Hello-remember to be nice!");

  // Dynamic selection: another model, and only the tools a request keeps.
  sg::AgentMiddleware select{
      .name = "select",
      .wrap_model_call = [other](sg::ModelRequest request,
                                 sg::ModelHandler next) -> net::awaitable<sg::ModelResponse> {
        request.model = other;
        std::erase_if(request.tools, [](const sg::Tool& t) { return t.name() != "my_tool"; });
        co_return co_await next(std::move(request));
      }};
  auto narrowed = sg::create_agent(
      model,
      {upper_tool(log),
       sg::make_tool<ValueArgs>("unused", "Unused.", [](const ValueArgs& a) { return a.value; })},
      {.middleware = {select}});
  const std::size_t before = model->inputs().size();
  (void)narrowed.invoke(ask({sg::human("Hi")}));
  CHECK(model->inputs().size() == before);
  REQUIRE(other->options().size() == 1);
  REQUIRE(other->options()[0].tools.size() == 1);
  CHECK(other->options()[0].tools[0].name == "my_tool");
}

TEST_CASE("create_agent checks its middleware") {
  auto model = std::make_shared<FakeToolCallingModel>();
  sg::AgentMiddleware a{.name = "a"};
  CHECK_THROWS_WITH((void)sg::create_agent(model, {}, {.middleware = {a, a}}),
                    "two middleware are named 'a'");
  CHECK_THROWS_WITH((void)sg::create_agent(model, {}, {.middleware = {sg::AgentMiddleware{}}}),
                    "a middleware needs a name");
  sg::AgentMiddleware jumper{.name = "j", .can_jump_to = {"elsewhere"}};
  CHECK_THROWS_WITH(
      (void)sg::create_agent(model, {}, {.middleware = {jumper}}),
      "middleware 'j' may jump to 'elsewhere': a jump goes to \"model\", \"tools\" or \"end\"");
  CHECK_THROWS_WITH((void)sg::create_agent(nullptr, {}), "create_agent needs a model");
}

TEST_CASE(
    "create_agent: a tool's error fails the run by default, bad arguments become an error "
    "message the model sees") {
  auto model = std::make_shared<FakeToolCallingModel>(
      std::vector<std::vector<sg::ToolCall>>{{call("my_tool", {{"wrong", 1}}, "1")}, {}});
  Log log;
  auto agent = sg::create_agent(model, {upper_tool(log)});
  auto result = agent.invoke(ask({sg::human("go")}));
  REQUIRE(result.state.messages.size() == 4);
  CHECK(result.state.messages[2].status == "error");
  CHECK(result.state.messages[2].text() ==
        "Error: tool 'my_tool': missing argument 'value'\n Please fix your mistakes.");
  auto failing = sg::make_tool<ValueArgs>("my_tool", "Fails.", [](const ValueArgs&) -> std::string {
    throw std::runtime_error("Failed: test");
  });
  auto model2 = std::make_shared<FakeToolCallingModel>(
      std::vector<std::vector<sg::ToolCall>>{{call("my_tool", {{"value", "x"}}, "1")}, {}});
  auto failing_agent = sg::create_agent(model2, {failing});
  CHECK_THROWS_WITH((void)failing_agent.invoke(ask({sg::human("go")})),
                    doctest::Contains("Failed: test"));
}

TEST_CASE("repair_tool_calls answers orphaned tool calls after the AI message's answers") {
  std::vector<sg::Message> history{
      sg::human("hi"),
      sg::ai("", {call("a", {}, "1"), call("b", {}, "2")}, "ai-1"),
      sg::tool("done a", "1"),
      sg::human("never mind"),
  };
  const auto repaired = sg::repair_tool_calls(history);
  REQUIRE(repaired.size() == 5);
  CHECK(repaired[2].tool_call_id == "1");
  CHECK(repaired[3].type == sg::MessageType::tool);
  CHECK(repaired[3].tool_call_id == "2");
  CHECK(repaired[3].name == "b");
  CHECK(repaired[3].status == "error");
  CHECK(repaired[3].text() ==
        "Tool call b with id 2 was cancelled - another message came in before it could be "
        "completed.");
  CHECK(repaired[4].text() == "never mind");
  const std::vector<sg::Message> fine{sg::human("hi"), sg::ai("hello", "ai-2")};
  CHECK(sg::repair_tool_calls(fine) == fine);
}

TEST_CASE("an agent run cancelled mid-tool leaves a history the next model call accepts") {
  auto model = std::make_shared<FakeToolCallingModel>(
      std::vector<std::vector<sg::ToolCall>>{{call("slow", {{"value", "x"}}, "call-1")}, {}, {}});
  std::atomic<bool> started{false};
  auto slow = sg::make_tool<ValueArgs>(
      "slow", "Waits until the run is cancelled.",
      [&started](const ValueArgs&, const sg::ToolRuntime& runtime) -> std::string {
        started = true;
        while (!runtime.context->cancelled())
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        runtime.context->throw_if_cancelled();
        return "never";
      });
  auto saver = std::make_shared<sg::InMemorySaver>();
  const auto check_agent = [&]<class S>(const sg::CompiledGraph<S>& agent) {
    sg::RunConfig config;
    config.thread_id = "cancelled";
    config.cancellation = sg::CancellationToken::create();
    std::thread canceller([&] {
      while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      config.cancellation.cancel();
    });
    CHECK_THROWS_AS((void)agent.invoke(ask<S>({sg::human("start")}), config), sg::CancelledError);
    canceller.join();
    sg::RunConfig next;
    next.thread_id = "cancelled";
    auto result = agent.invoke(ask<S>({sg::human("something else")}), next);
    const auto seen = model->inputs().back();
    REQUIRE(seen.size() == 4);
    CHECK(seen[1].tool_calls.size() == 1);
    CHECK(seen[2].type == sg::MessageType::tool);
    CHECK(seen[2].tool_call_id == "call-1");
    CHECK(seen[2].text() == sg::cancelled_tool_call_text(call("slow", {}, "call-1")));
    CHECK(seen[3].text() == "something else");
    return result;
  };
  SUBCASE("create_agent") {
    auto agent = sg::create_agent(model, {slow}, {.checkpointer = saver});
    (void)check_agent(agent);
  }
  SUBCASE("create_react_agent") {
    auto agent = sg::create_react_agent(model, {slow}, {.checkpointer = saver});
    (void)check_agent(agent);
  }
}

// --- Structured output (LangChain's test_response_format expectations) ---------------------------

namespace {

struct WeatherBaseModel {
  double temperature = 0;
  std::string condition{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"temperature">(&WeatherBaseModel::temperature),
                      sg::field<"condition">(&WeatherBaseModel::condition)};
  }
};

const nlohmann::json kWeatherData = {{"temperature", 75.0}, {"condition", "sunny"}};

sg::Tool get_weather_tool() {
  return sg::make_tool<ValueArgs>("get_weather", "The weather.", [](const ValueArgs&) {
    return std::string("The weather is sunny and 75°F.");
  });
}

std::vector<std::string> kinds_of(const std::vector<sg::Message>& messages) {
  std::vector<std::string> out;
  for (const auto& m : messages) out.emplace_back(sg::to_string(m.type));
  return out;
}

}  // namespace

TEST_CASE("structured output as a tool call: the answer ends the run, typed") {
  auto model = std::make_shared<FakeToolCallingModel>(std::vector<std::vector<sg::ToolCall>>{
      {call("get_weather", {{"value", "x"}}, "1")}, {call("WeatherBaseModel", kWeatherData, "2")}});
  auto format = sg::tool_output<WeatherBaseModel>();
  CHECK(format.name == "WeatherBaseModel");
  auto agent = sg::create_agent(model, {get_weather_tool()}, {.response_format = format});
  auto result = agent.invoke(ask({sg::human("What's the weather?")}));
  const auto& m = result.state.messages;
  CHECK(kinds_of(m) == std::vector<std::string>{"human", "ai", "tool", "ai", "tool"});
  CHECK(m[2].text() == "The weather is sunny and 75°F.");
  CHECK(m[4].text() ==
        "Returning structured response: {\"condition\":\"sunny\",\"temperature\":75.0}");
  CHECK(m[4].name == "WeatherBaseModel");
  CHECK(result.state.structured_response == kWeatherData);
  const auto weather = sg::structured_response<WeatherBaseModel>(result.state);
  CHECK(weather.temperature == 75.0);
  CHECK(weather.condition == "sunny");
  // The structured tool is offered beside the agent's tools, and a tool call is required.
  const auto options = model->options();
  REQUIRE(options[0].tools.size() == 2);
  CHECK(options[0].tools[1].name == "WeatherBaseModel");
  CHECK(options[0].tools[1].parameters == sg::json_schema_of<WeatherBaseModel>());
  CHECK(options[0].tool_choice == "required");
}

TEST_CASE("structured output as a tool call: two answers at once, or a bad one, are retried") {
  SUBCASE("multiple structured responses") {
    auto model = std::make_shared<FakeToolCallingModel>(std::vector<std::vector<sg::ToolCall>>{
        {call("WeatherBaseModel", kWeatherData, "1"), call("WeatherBaseModel", kWeatherData, "2")},
        {call("WeatherBaseModel", kWeatherData, "3")}});
    auto agent = sg::create_agent(model, {get_weather_tool()},
                                  {.response_format = sg::tool_output<WeatherBaseModel>()});
    auto result = agent.invoke(ask({sg::human("weather")}));
    const auto& m = result.state.messages;
    CHECK(kinds_of(m) == std::vector<std::string>{"human", "ai", "tool", "tool", "ai", "tool"});
    const std::string error =
        "Error: Model incorrectly returned multiple structured responses (WeatherBaseModel, "
        "WeatherBaseModel) when only one is expected.\n Please fix your mistakes.";
    CHECK(m[2].text() == error);
    CHECK(m[3].text() == error);
    CHECK(result.state.structured_response == kWeatherData);
  }
  SUBCASE("a reply that does not validate") {
    auto model = std::make_shared<FakeToolCallingModel>(std::vector<std::vector<sg::ToolCall>>{
        {call("WeatherBaseModel", {{"temperature", "hot"}}, "1")},
        {call("WeatherBaseModel", kWeatherData, "2")}});
    auto agent =
        sg::create_agent(model, {}, {.response_format = sg::tool_output<WeatherBaseModel>()});
    auto result = agent.invoke(ask({sg::human("weather")}));
    const auto& m = result.state.messages;
    CHECK(kinds_of(m) == std::vector<std::string>{"human", "ai", "tool", "ai", "tool"});
    CHECK(m[2].text().starts_with(
        "Error: Failed to parse structured output for tool 'WeatherBaseModel': "));
    CHECK(m[2].status == "error");
    CHECK(result.state.structured_response == kWeatherData);
  }
  SUBCASE("without retries the run fails, naming the tool") {
    auto model = std::make_shared<FakeToolCallingModel>(std::vector<std::vector<sg::ToolCall>>{
        {call("WeatherBaseModel", {{"temperature", "hot"}}, "1")}});
    auto format = sg::tool_output<WeatherBaseModel>();
    format.handle_errors = false;
    auto agent = sg::create_agent(model, {}, {.response_format = format});
    CHECK_THROWS_WITH((void)agent.invoke(ask({sg::human("weather")})),
                      doctest::Contains("Failed to parse structured output for tool "
                                        "'WeatherBaseModel'"));
  }
  SUBCASE("retries are capped") {
    auto model = std::make_shared<FakeToolCallingModel>(std::vector<std::vector<sg::ToolCall>>{
        {call("WeatherBaseModel", {{"temperature", "hot"}}, "1")}});
    auto format = sg::tool_output<WeatherBaseModel>();
    format.max_retries = 2;
    auto agent = sg::create_agent(model, {}, {.response_format = format});
    CHECK_THROWS_WITH((void)agent.invoke(ask({sg::human("weather")})),
                      doctest::Contains("Failed to parse structured output"));
    CHECK(model->inputs().size() == 3);
  }
  SUBCASE("a custom tool message") {
    auto model = std::make_shared<FakeToolCallingModel>(
        std::vector<std::vector<sg::ToolCall>>{{call("WeatherBaseModel", kWeatherData, "1")}});
    auto format = sg::tool_output<WeatherBaseModel>();
    format.tool_message_content = "Weather recorded.";
    auto agent = sg::create_agent(model, {}, {.response_format = format});
    CHECK(agent.invoke(ask({sg::human("weather")})).state.messages.back().text() ==
          "Weather recorded.");
  }
}

TEST_CASE("structured output beside an ordinary tool call: the tool runs, then the run ends") {
  auto regular = sg::make_tool<ValueArgs>("regular_tool", "A tool.", [](const ValueArgs& a) {
    return "Regular tool result for: " + a.value;
  });
  auto model = std::make_shared<FakeToolCallingModel>(std::vector<std::vector<sg::ToolCall>>{
      {call("WeatherBaseModel", {{"temperature", 72.0}, {"condition", "sunny"}},
            "structured_call_1"),
       call("regular_tool", {{"value", "test query"}}, "regular_call_1")}});
  auto agent =
      sg::create_agent(model, {regular}, {.response_format = sg::tool_output<WeatherBaseModel>()});
  auto result = agent.invoke(ask({sg::human("weather")}));
  const auto& m = result.state.messages;
  CHECK(m.size() == 4);
  CHECK(std::any_of(m.begin(), m.end(), [](const sg::Message& x) {
    return x.text() == "Regular tool result for: test query";
  }));
  CHECK(sg::structured_response<WeatherBaseModel>(result.state).temperature == 72.0);
  CHECK(model->inputs().size() == 1);
}

TEST_CASE("structured output from the provider: json_schema, validated, retried") {
  auto model = std::make_shared<FakeToolCallingModel>(
      std::vector<std::vector<sg::ToolCall>>{{call("get_weather", {{"value", "x"}}, "1")}},
      kWeatherData);
  auto agent = sg::create_agent(model, {get_weather_tool()},
                                {.response_format = sg::provider_output<WeatherBaseModel>()});
  auto result = agent.invoke(ask({sg::human("weather")}));
  CHECK(kinds_of(result.state.messages) == std::vector<std::string>{"human", "ai", "tool", "ai"});
  CHECK(result.state.structured_response == kWeatherData);
  const auto options = model->options();
  REQUIRE(options[0].response_format);
  CHECK(options[0].response_format->name == "WeatherBaseModel");
  CHECK(options[0].response_format->schema == sg::json_schema_of<WeatherBaseModel>());
  CHECK_FALSE(options[0].response_format->strict);
  CHECK(options[0].tools.size() == 1);

  // A reply that is not the schema's JSON is answered with the error and asked again; only the
  // good reply is kept.
  auto local = std::make_shared<sg::LocalModel>();
  local->script(
      {sg::ai("not json"), sg::ai(R"({"temperature": "hot"})"), sg::ai(kWeatherData.dump())});
  auto retrying =
      sg::create_agent(local, {}, {.response_format = sg::provider_output<WeatherBaseModel>()});
  auto retried = retrying.invoke(ask({sg::human("weather")}));
  CHECK(kinds_of(retried.state.messages) == std::vector<std::string>{"human", "ai"});
  CHECK(retried.state.structured_response == kWeatherData);
  CHECK(local->scripted() == 0);
  local->script({sg::ai("not json")});
  auto format = sg::provider_output<WeatherBaseModel>();
  format.handle_errors = false;
  auto strict = sg::create_agent(local, {}, {.response_format = format});
  CHECK_THROWS_WITH((void)strict.invoke(ask({sg::human("weather")})),
                    doctest::Contains("Native structured output expected valid JSON for "
                                      "WeatherBaseModel, but parsing failed: "));
}
