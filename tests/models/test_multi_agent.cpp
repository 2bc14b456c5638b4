// SPDX-License-Identifier: MIT
// Handoffs, create_supervisor and create_swarm, with the scripts and expected states of
// langgraph-supervisor's and langgraph-swarm's tests.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/models/middleware.hpp>
#include <stategraph/models/multi_agent.hpp>

#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "support/fake_tool_calling_model.hpp"

namespace {

using sg::CreateAgentState;
using sg::test::ScriptedChatModel;

sg::Message calls(std::vector<sg::ToolCall> tool_calls, std::string name = {}) {
  sg::Message m = sg::ai("", std::move(tool_calls));
  m.name = std::move(name);
  return m;
}

sg::Message says(std::string text, std::string name = {}) {
  sg::Message m = sg::ai(std::move(text));
  m.name = std::move(name);
  return m;
}

sg::ToolCall ma_call(std::string name, nlohmann::json args, std::string id) {
  return sg::ToolCall{std::move(id), std::move(name), std::move(args)};
}

struct AddArgs {
  double a = 0;
  double b = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"a">(&AddArgs::a), sg::field<"b">(&AddArgs::b)};
  }
};

struct IntAddArgs {
  int a = 0;
  int b = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"a">(&IntAddArgs::a), sg::field<"b">(&IntAddArgs::b)};
  }
};

struct QueryArgs {
  std::string query{};
  static constexpr auto schema() { return std::tuple{sg::field<"query">(&QueryArgs::query)}; }
};

const std::string kSearchResult =
    "Here are the headcounts for each of the FAANG companies in 2024:\n1. **Facebook (Meta)**: "
    "67,317 employees.\n2. **Apple**: 164,000 employees.\n3. **Amazon**: 1,551,000 "
    "employees.\n4. **Netflix**: 14,000 employees.\n5. **Google (Alphabet)**: 181,269 "
    "employees.";
const std::string kResearchAnswer =
    "The headcount for the FAANG companies in 2024 is as follows:\n\n1. **Facebook (Meta)**: "
    "67,317 employees\n2. **Amazon**: 1,551,000 employees\n3. **Apple**: 164,000 employees\n4. "
    "**Netflix**: 14,000 employees\n5. **Google (Alphabet)**: 181,269 employees\n\nTo find the "
    "combined headcount, simply add these numbers together.";
const std::string kFinal =
    "The combined headcount of the FAANG companies in 2024 is 1,977,586 employees.";

/// The agents and the supervisor of test_supervisor_basic_workflow.
sg::CompiledGraph<CreateAgentState> faang_supervisor(sg::AgentOutputMode mode) {
  auto supervisor_model = std::make_shared<ScriptedChatModel>(std::vector<sg::Message>{
      calls({ma_call("transfer_to_research_expert", nlohmann::json::object(),
                     "call_gyQSgJQm5jJtPcF5ITe8GGGF")}),
      calls({ma_call("transfer_to_math_expert", nlohmann::json::object(),
                     "call_zCExWE54g4B4oFZcwBh3Wumg")}),
      says(kFinal)});
  auto research_model = std::make_shared<ScriptedChatModel>(
      std::vector<sg::Message>{calls({ma_call("web_search", {{"query", "FAANG headcount 2024"}},
                                              "call_4sLYp7usFcIZBFcNsOGQiFzV")}),
                               says(kResearchAnswer)});
  auto math_model = std::make_shared<ScriptedChatModel>(std::vector<sg::Message>{
      calls({ma_call("add", {{"a", 67317}, {"b", 1551000}}, "call_BRvA6oAlgMA1whIkAn9gE3AS"),
             ma_call("add", {{"a", 164000}, {"b", 14000}}, "call_OLVb4v0pNDlsBsKBwDK4wb1W"),
             ma_call("add", {{"a", 181269}, {"b", 0}}, "call_5VEHaInDusJ9MU3i3tVJN6Hr")}),
      calls({ma_call("add", {{"a", 1618317}, {"b", 178000}}, "call_FdfUz8Gm3S5OQaVq2oQpMxeN"),
             ma_call("add", {{"a", 181269}, {"b", 0}}, "call_j5nna1KwGiI60wnVHM2319r6")}),
      calls({ma_call("add", {{"a", 1796317}, {"b", 181269}}, "call_4fNHtFvfOvsaSPb8YK1qNAiR")}),
      says(kFinal)});
  auto add =
      sg::make_tool<AddArgs>("add", "Add two numbers.", [](const AddArgs& x) { return x.a + x.b; });
  auto web_search = sg::make_tool<QueryArgs>("web_search", "Search the web for information.",
                                             [](const QueryArgs&) { return kSearchResult; });
  auto math = sg::create_agent(math_model, {add}, {.name = "math_expert"});
  auto research = sg::create_agent(research_model, {web_search}, {.name = "research_expert"});
  return sg::create_supervisor({math, research}, supervisor_model, {.output_mode = mode});
}

sg::Update<CreateAgentState> user(std::vector<sg::Message> messages) {
  return sg::Update<CreateAgentState>{}.set<&CreateAgentState::messages>(std::move(messages));
}

/// type:name:content, and the tool calls' names.
std::string describe(const sg::Message& m) {
  std::string out = std::string(sg::to_string(m.type)) + ":" + m.name + ":" + m.text();
  for (const auto& c : m.tool_calls) out += " ->" + c.name;
  return out;
}

}  // namespace

TEST_CASE("supervisor: the basic workflow hands each agent's last message back (last_message)") {
  const auto app = faang_supervisor(sg::AgentOutputMode::last_message);
  const auto result = app.invoke(
      user({sg::human("what's the combined headcount of the FAANG companies in 2024?")}));
  const auto& m = result.state.messages;
  REQUIRE(m.size() == 12);
  CHECK(describe(m[1]) == "ai:supervisor: ->transfer_to_research_expert");
  CHECK(m[1].tool_calls[0].id == "call_gyQSgJQm5jJtPcF5ITe8GGGF");
  CHECK(describe(m[2]) ==
        "tool:transfer_to_research_expert:Successfully transferred to research_expert");
  CHECK(m[2].tool_call_id == "call_gyQSgJQm5jJtPcF5ITe8GGGF");
  CHECK(describe(m[3]) == "ai:research_expert:" + kResearchAnswer);
  CHECK(describe(m[4]) ==
        "ai:research_expert:Transferring back to supervisor ->transfer_back_to_supervisor");
  CHECK(describe(m[5]) ==
        "tool:transfer_back_to_supervisor:Successfully transferred back to supervisor");
  CHECK(m[5].tool_call_id == m[4].tool_calls[0].id);
  CHECK(describe(m[6]) == "ai:supervisor: ->transfer_to_math_expert");
  CHECK(describe(m[7]) == "tool:transfer_to_math_expert:Successfully transferred to math_expert");
  CHECK(describe(m[8]) == "ai:math_expert:" + kFinal);
  CHECK(describe(m[9]) ==
        "ai:math_expert:Transferring back to supervisor ->transfer_back_to_supervisor");
  CHECK(m[10].text() == "Successfully transferred back to supervisor");
  CHECK(describe(m[11]) == "ai:supervisor:" + kFinal);
}

TEST_CASE("supervisor: full_history hands back every message of each agent") {
  const auto app = faang_supervisor(sg::AgentOutputMode::full_history);
  const auto result = app.invoke(
      user({sg::human("what's the combined headcount of the FAANG companies in 2024?")}));
  const auto& m = result.state.messages;
  REQUIRE(m.size() == 23);
  CHECK(describe(m[1]) == "ai:supervisor: ->transfer_to_research_expert");
  CHECK(describe(m[3]) == "ai:research_expert: ->web_search");
  CHECK(describe(m[4]) == "tool:web_search:" + kSearchResult);
  CHECK(describe(m[5]) == "ai:research_expert:" + kResearchAnswer);
  CHECK(describe(m[8]) == "ai:supervisor: ->transfer_to_math_expert");
  CHECK(describe(m[10]) == "ai:math_expert: ->add ->add ->add");
  CHECK(m[11].text() == "1618317.0");
  CHECK(m[12].text() == "178000.0");
  CHECK(m[13].text() == "181269.0");
  CHECK(describe(m[14]) == "ai:math_expert: ->add ->add");
  CHECK(describe(m[17]) == "ai:math_expert: ->add");
  CHECK(m[18].text() == "1977586.0");
  CHECK(describe(m[19]) == "ai:math_expert:" + kFinal);
  CHECK(describe(m[22]) == "ai:supervisor:" + kFinal);
}

TEST_CASE("supervisor: add_handoff_messages=false hides the handoffs from the agents") {
  auto echo_model = std::make_shared<ScriptedChatModel>(
      std::vector<sg::Message>{says("Echo 1!"), says("Echo 2!")});
  auto supervisor_model = std::make_shared<ScriptedChatModel>(
      std::vector<sg::Message>{calls({ma_call("transfer_to_echo_agent", nlohmann::json::object(),
                                              "call_gyQSgJQm5jJtPcF5ITe8GGGF")}),
                               says("boo"),
                               calls({ma_call("transfer_to_echo_agent", nlohmann::json::object(),
                                              "call_gyQSgJQm5jJtPcF5ITe8GGGG")}),
                               says("END")});
  auto echo = sg::create_agent(echo_model, {}, {.name = "echo_agent"});
  const auto app = sg::create_supervisor({echo}, supervisor_model, {.add_handoff_messages = false});
  auto first = app.invoke(user({sg::human("Scooby-dooby-doo")}));
  REQUIRE(echo_model->inputs().size() == 1);
  REQUIRE(echo_model->inputs()[0].size() == 1);
  CHECK(describe(echo_model->inputs()[0][0]) == "human::Scooby-dooby-doo");
  std::vector<std::string> got;
  for (const auto& m : first.state.messages) got.push_back(describe(m));
  CHECK(got == std::vector<std::string>{"human::Scooby-dooby-doo", "ai:echo_agent:Echo 1!",
                                        "ai:supervisor:boo"});

  auto messages = first.state.messages;
  messages.push_back(sg::human("Huh take two?"));
  (void)app.invoke(user(messages));
  REQUIRE(echo_model->inputs().size() == 2);
  got.clear();
  const auto inputs = echo_model->inputs();
  for (const auto& m : inputs[1]) got.push_back(describe(m));
  CHECK(got == std::vector<std::string>{"human::Scooby-dooby-doo", "ai:echo_agent:Echo 1!",
                                        "ai:supervisor:boo", "human::Huh take two?"});
}

TEST_CASE("supervisor: forward_message answers with an agent's message as it is") {
  auto echo_model =
      std::make_shared<ScriptedChatModel>(std::vector<sg::Message>{says("Echo: test forwarding!")});
  auto supervisor_model = std::make_shared<ScriptedChatModel>(std::vector<sg::Message>{
      calls({ma_call("transfer_to_echo_agent", nlohmann::json::object(),
                     "call_gyQSgJQm5jJtPcF5ITe8GGGF")}),
      calls({ma_call("forward_message", {{"from_agent", "echo_agent"}}, "abcd123")})});
  auto echo = sg::create_agent(echo_model, {}, {.name = "echo_agent"});
  const auto app = sg::create_supervisor(
      {echo}, supervisor_model, {.tools = {sg::create_forward_message_tool("supervisor")}});
  auto result = app.invoke(user({sg::human("Scooby-dooby-doo")}));
  std::vector<std::string> got;
  for (const auto& m : result.state.messages) got.push_back(describe(m));
  CHECK(got == std::vector<std::string>{
                   "human::Scooby-dooby-doo", "ai:supervisor: ->transfer_to_echo_agent",
                   "tool:transfer_to_echo_agent:Successfully transferred to echo_agent",
                   "ai:echo_agent:Echo: test forwarding!",
                   "ai:echo_agent:Transferring back to supervisor ->transfer_back_to_supervisor",
                   "tool:transfer_back_to_supervisor:Successfully transferred back to supervisor",
                   "ai:supervisor:Echo: test forwarding!"});
}

TEST_CASE("supervisor and handoff tools: names, descriptions and the errors of bad agents") {
  CHECK(sg::normalize_agent_name("  travel booking   assistant ") == "travel_booking_assistant");
  const auto tool = sg::create_handoff_tool("travel booking assistant");
  CHECK(tool.name() == "transfer_to_travel_booking_assistant");
  CHECK(tool.spec().description == "Ask agent 'travel booking assistant' for help");
  auto model = std::make_shared<ScriptedChatModel>(std::vector<sg::Message>{});
  auto unnamed = sg::create_agent(model, {});
  CHECK_THROWS_WITH((void)sg::create_supervisor({unnamed}, model),
                    doctest::Contains("Please specify a name when you create your agent"));
  auto a = sg::create_agent(model, {}, {.name = "a"});
  CHECK_THROWS_WITH((void)sg::create_supervisor({a, a}, model),
                    "Agent with name 'a' already exists. Agent names must be unique.");
  auto b = sg::create_agent(model, {}, {.name = "b"});
  CHECK_THROWS_WITH(
      (void)sg::create_supervisor({a, b}, model, {.tools = {sg::create_handoff_tool("a")}}),
      "When providing custom handoff tools, you must provide them for all subagents. Missing "
      "handoff tools for agents 'b'.");
  const auto prefixed =
      sg::create_supervisor({a, b}, model, {.handoff_tool_prefix = "delegate_to"});
  CHECK(prefixed.nodes() == std::vector<std::string>{"supervisor", "a", "b"});
}

TEST_CASE("swarm: agents hand the conversation over, the active agent stays on the thread") {
  auto model = std::make_shared<ScriptedChatModel>(std::vector<sg::Message>{
      calls({ma_call("transfer_to_bob", nlohmann::json::object(), "call_1LlFyjm6iIhDjdn7juWuPYr4")},
            "Alice"),
      says("Ahoy, matey! Bob the pirate be at yer service. What be ye needin' help with today on "
           "the high seas? Arrr!",
           "Bob"),
      calls(
          {ma_call("transfer_to_alice", nlohmann::json::object(), "call_T6pNmo2jTfZEK3a9avQ14f8Q")},
          "Bob"),
      calls({ma_call("add", {{"a", 5}, {"b", 7}}, "call_4kLYO1amR2NfhAxfECkALCr1")}, "Alice"),
      says("The sum of 5 and 7 is 12.", "Alice")});
  auto add = sg::make_tool<IntAddArgs>("add", "Add two numbers",
                                       [](const IntAddArgs& x) { return x.a + x.b; });
  auto alice =
      sg::create_agent(model, {add, sg::create_handoff_tool("Bob")},
                       {.system_prompt = "You are Alice, an addition expert.", .name = "Alice"});
  auto bob =
      sg::create_agent(model,
                       {sg::create_handoff_tool(
                           "Alice", {.description = "Transfer to Alice, she can help with math"})},
                       {.system_prompt = "You are Bob, you speak like a pirate.", .name = "Bob"});
  const auto swarm = sg::create_swarm({alice, bob}, "Alice",
                                      {.checkpointer = std::make_shared<sg::InMemorySaver>()});
  sg::RunConfig thread;
  thread.thread_id = "1";
  const auto ask = [](std::string text) {
    return sg::Update<sg::SwarmState>{}.set<&sg::SwarmState::messages>(
        std::vector<sg::Message>{sg::human(std::move(text))});
  };
  auto turn1 = swarm.invoke(ask("i'd like to speak to Bob"), thread);
  REQUIRE(turn1.state.messages.size() == 4);
  CHECK(turn1.state.messages[2].text() == "Successfully transferred to Bob");
  CHECK(turn1.state.messages[2].name == "transfer_to_bob");
  CHECK(turn1.state.messages[3].text().starts_with("Ahoy, matey! Bob the pirate"));
  CHECK(turn1.state.active_agent == "Bob");

  auto turn2 = swarm.invoke(ask("what's 5 + 7?"), thread);
  const auto& m = turn2.state.messages;
  REQUIRE(m.size() == 10);
  CHECK(m[5].name == "Bob");
  CHECK(m[6].text() == "Successfully transferred to Alice");
  CHECK(m[7].tool_calls.at(0).name == "add");
  CHECK(m[8].text() == "12");
  CHECK(m[9].text() == "The sum of 5 and 7 is 12.");
  CHECK(turn2.state.active_agent == "Alice");
  // Bob's model call saw Bob's prompt, Alice's saw hers.
  const auto inputs = model->inputs();
  CHECK(inputs[1].front().text() == "You are Bob, you speak like a pirate.");
  CHECK(inputs[3].front().text() == "You are Alice, an addition expert.");
}

TEST_CASE("swarm: the errors of bad agents and defaults") {
  auto model = std::make_shared<ScriptedChatModel>(std::vector<sg::Message>{});
  auto a = sg::create_agent(model, {}, {.name = "a"});
  CHECK_THROWS_WITH((void)sg::create_swarm({}, "a"), "agents list cannot be empty");
  CHECK_THROWS_WITH((void)sg::create_swarm({a}, "b"),
                    "Default active agent 'b' not found in agent names [\"a\"]");
}

TEST_CASE("supervisor: an approval inside an agent interrupts the team and resumes into it") {
  auto supervisor_model = std::make_shared<ScriptedChatModel>(std::vector<sg::Message>{
      calls({ma_call("transfer_to_weather_expert", nlohmann::json::object(), "s1")}),
      says("Sunny in Paris.")});
  auto weather_model = std::make_shared<ScriptedChatModel>(std::vector<sg::Message>{
      calls({ma_call("get_weather", {{"query", "Paris"}}, "w1")}), says("It is sunny.")});
  int runs = 0;
  auto get_weather =
      sg::make_tool<QueryArgs>("get_weather", "The weather.", [&runs](const QueryArgs& q) {
        ++runs;
        return "Sunny in " + q.query;
      });
  sg::HumanInTheLoopOptions approvals;
  approvals.interrupt_on["get_weather"] = {};
  auto weather = sg::create_agent(
      weather_model, {get_weather},
      {.middleware = {sg::human_in_the_loop_middleware(approvals)}, .name = "weather_expert"});
  const auto team = sg::create_supervisor({weather}, supervisor_model,
                                          {.checkpointer = std::make_shared<sg::InMemorySaver>()});
  sg::RunConfig thread;
  thread.thread_id = "team";
  auto paused = team.invoke(user({sg::human("weather in Paris?")}), thread);
  REQUIRE(paused.interrupted());
  REQUIRE(paused.interrupts.size() == 1);
  CHECK(paused.interrupts[0].value[0]["action_request"]["action"] == "get_weather");
  CHECK(runs == 0);
  sg::Command<CreateAgentState> accept;
  accept.resume = nlohmann::json::array({sg::accept_response()});
  auto done = team.invoke(accept, thread);
  CHECK_FALSE(done.interrupted());
  CHECK(runs == 1);
  CHECK(done.state.messages.back().text() == "Sunny in Paris.");
  CHECK(done.state.messages.back().name == "supervisor");
}
