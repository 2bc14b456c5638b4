// SPDX-License-Identifier: MIT
// create_react_agent end to end on LocalModel: tool calls, the loop, the system prompt, the
// pre-model hook, the recursion limit, checkpoints, and the messages stream mode.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/core/async.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/react_agent.hpp>
#include <stategraph/reducers/message_utils.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <doctest/doctest.h>

#include <utility>

namespace {

struct AgentMulArgs {
  double a = 0;
  double b = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"a">(&AgentMulArgs::a), sg::field<"b">(&AgentMulArgs::b)};
  }
};

struct CityArgs {
  std::string city{};
  static constexpr auto schema() { return std::tuple{sg::field<"city">(&CityArgs::city)}; }
};

std::vector<sg::Tool> agent_tools() {
  return {sg::make_tool<AgentMulArgs>("multiply", "Multiplies two numbers.",
                                      [](const AgentMulArgs& x) { return x.a * x.b; }),
          sg::make_tool<CityArgs>("get_weather", "The weather in a city.",
                                  [](const CityArgs& c) { return "Sunny in " + c.city; })};
}

sg::Update<sg::AgentState> ask(std::string text) {
  sg::Update<sg::AgentState> u;
  u.set<&sg::AgentState::messages>(std::vector<sg::Message>{sg::human(std::move(text))});
  return u;
}

std::vector<std::string> kinds(const std::vector<sg::Message>& messages) {
  std::vector<std::string> out;
  for (const auto& m : messages)
    out.push_back(std::string(sg::to_string(m.type)) + (m.tool_calls.empty() ? "" : "+calls"));
  return out;
}

}  // namespace

TEST_CASE("the ReAct agent calls tools, feeds their results back and answers (LocalModel)") {
  auto model = std::make_shared<sg::LocalModel>();
  auto agent = sg::create_react_agent(model, agent_tools());
  auto r = agent.invoke(ask("Please multiply 6 and 7, and get weather in Paris."));
  CHECK(kinds(r.state.messages) ==
        std::vector<std::string>{"human", "ai+calls", "tool", "tool", "ai"});
  CHECK(r.state.messages[2].text() == "42.0");
  CHECK(r.state.messages[3].text() == "Sunny in Paris");
  CHECK(r.state.messages.back().text() ==
        "Here is what the tools returned: multiply: 42.0; get_weather: Sunny in Paris.");
  // No tool named: a direct answer, one model call.
  auto direct = agent.invoke(ask("My name is Ada."));
  CHECK(kinds(direct.state.messages) == std::vector<std::string>{"human", "ai"});
}

TEST_CASE("the ReAct agent: scripted tool calls, a system prompt, recursion limit") {
  auto model = std::make_shared<sg::LocalModel>();
  model->script({sg::ai("", {sg::ToolCall{"k1", "multiply", {{"a", 2}, {"b", 3}}}}),
                 sg::ai("", {sg::ToolCall{"k2", "multiply", {{"a", 6}, {"b", 6}}}}),
                 sg::ai("done")});
  sg::ReactAgentOptions options;
  options.system_prompt = "You are a calculator.";
  auto agent = sg::create_react_agent(model, agent_tools(), options);
  auto r = agent.invoke(ask("compute"));
  CHECK(kinds(r.state.messages) ==
        std::vector<std::string>{"human", "ai+calls", "tool", "ai+calls", "tool", "ai"});
  CHECK(r.state.messages[4].text() == "36.0");
  CHECK(r.state.messages.back().text() == "done");
  for (const auto& m : r.state.messages) CHECK(m.type != sg::MessageType::system);  // not stored

  // Two steps left when the model asks for tools: LangGraph's "need more steps" answer.
  model->script({sg::ai("", {sg::ToolCall{"k3", "multiply", {{"a", 1}, {"b", 1}}}}, "ai-9")});
  sg::RunConfig config;
  config.recursion_limit = 2;
  auto limited = agent.invoke(ask("compute"), config);
  CHECK(limited.state.messages.back().text() == sg::kNeedMoreSteps);
  CHECK(limited.state.messages.back().id == "ai-9");
  CHECK(limited.state.messages.back().tool_calls.empty());
}

TEST_CASE("the ReAct agent's pre-model hook trims what the model sees, not the thread") {
  auto model = std::make_shared<sg::LocalModel>();
  sg::ReactAgentOptions options;
  options.pre_model_hook = [](const sg::AgentState& s, sg::Context&) {
    sg::TrimOptions trim;
    trim.max_tokens = 2;
    trim.token_counter = sg::TokenCounter([](const sg::Message&) { return std::int64_t{1}; });
    sg::Update<sg::AgentState> u;
    u.set<&sg::AgentState::llm_input_messages>(sg::trim_messages(s.messages, trim));
    return u;
  };
  options.checkpointer = std::make_shared<sg::InMemorySaver>();
  auto agent = sg::create_react_agent(model, {}, options);
  sg::RunConfig config;
  config.thread_id = "t1";
  (void)agent.invoke(ask("My name is Ada."), config);
  (void)agent.invoke(ask("I live in Paris."), config);
  auto r = agent.invoke(ask("What is my name?"), config);
  // The model saw only the last two messages: the name was trimmed away.
  CHECK(r.state.messages.back().text() == "I don't know that yet.");
  CHECK(r.state.messages.size() == 6);  // the thread keeps everything
  auto again = agent.invoke(ask("Where do I live?"), config);
  CHECK(again.state.messages.back().text() == "I don't know that yet.");

  // Without the hook the model sees the whole thread and remembers.
  sg::ReactAgentOptions plain;
  plain.checkpointer = std::make_shared<sg::InMemorySaver>();
  auto full = sg::create_react_agent(model, {}, plain);
  (void)full.invoke(ask("My name is Ada."), config);
  (void)full.invoke(ask("I live in Paris."), config);
  CHECK(full.invoke(ask("What is my name?"), config).state.messages.back().text() ==
        "You told me: my name is Ada.");
}

TEST_CASE("messages mode: the agent's tokens and tool messages stream, in both forms") {
  auto model = std::make_shared<sg::LocalModel>();
  auto agent = sg::create_react_agent(model, agent_tools());
  for (bool async : {false, true}) {
    CAPTURE(async);
    std::vector<std::string> seen;
    std::string streamed;
    auto on_event = [&](const sg::StreamEvent<sg::AgentState>& e) {
      REQUIRE(e.mode == sg::StreamMode::messages);
      const auto& m = e.message->message;
      if (!e.complete) streamed += m.text();
      seen.push_back(e.node + (e.complete ? ":whole:" : ":chunk:") +
                     std::string(sg::to_string(m.type)) + ":" + e.data.value("ls_model_name", "-") +
                     ":" + std::to_string(e.data.value("langgraph_step", -1)));
    };
    auto input = ask("get weather in Oslo");
    sg::RunConfig config;
    if (!async) {
      agent.stream(std::move(input), config, sg::StreamMode::messages, on_event);
    } else {
      boost::asio::io_context io;
      boost::asio::co_spawn(
          io,
          [&]() -> boost::asio::awaitable<void> {
            co_await agent.astream(std::move(input), config, sg::StreamMode::messages, on_event);
          },
          boost::asio::detached);
      io.run();
    }
    // Step 1: the tool-call reply (one chunk with the call); step 2: the tool message, whole;
    // step 3: the answer word by word, then its metadata chunk.
    REQUIRE(seen.size() >= 5);
    CHECK(seen[0] == "agent:chunk:ai:stategraph-local:1");
    CHECK(seen[1] == "tools:whole:tool:-:2");
    CHECK(seen[2] == "agent:chunk:ai:stategraph-local:3");
    CHECK(seen.back() == "agent:chunk:ai:stategraph-local:3");
    CHECK(streamed == "The get_weather tool says: Sunny in Oslo");
  }
}

TEST_CASE("a cancelled run stops the agent's model call") {
  auto model = std::make_shared<sg::LocalModel>();
  auto agent = sg::create_react_agent(model, agent_tools());
  sg::RunConfig config;
  config.cancellation = sg::CancellationToken::create();
  config.cancellation.cancel();
  CHECK_THROWS_AS((void)agent.invoke(ask("hi"), config), sg::CancelledError);
}
