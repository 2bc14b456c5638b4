// SPDX-License-Identifier: MIT
// A supervisor that delegates to two agents (langgraph-supervisor's create_supervisor): it hands
// the conversation to the weather expert, then to the math expert, each of which calls its tool
// and hands back its last message; the supervisor then answers.
//
// The models are sg::LocalModel (offline) with scripted replies, so the run is deterministic; the
// tools run for real. The program checks the conversation and exits 1 on a wrong result.
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/multi_agent.hpp>

#include <iostream>

namespace {

using State = sg::CreateAgentState;

struct City {
  std::string city{};
  static constexpr auto schema() { return std::tuple{sg::field<"city">(&City::city)}; }
};

struct Numbers {
  double a = 0;
  double b = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"a">(&Numbers::a), sg::field<"b">(&Numbers::b)};
  }
};

sg::Message call(const std::string& tool, nlohmann::json args, const std::string& id) {
  return sg::ai("", {sg::ToolCall{id, tool, std::move(args)}});
}

}  // namespace

int main() {
  auto weather_model = std::make_shared<sg::LocalModel>();
  weather_model->script(
      {call("get_weather", {{"city", "Paris"}}, "w1"), sg::ai("It is sunny, 21 C in Paris.")});
  auto math_model = std::make_shared<sg::LocalModel>();
  math_model->script({call("multiply", {{"a", 6}, {"b", 7}}, "m1"), sg::ai("6 times 7 is 42.")});
  auto supervisor_model = std::make_shared<sg::LocalModel>();
  supervisor_model->script({call("transfer_to_weather_expert", nlohmann::json::object(), "s1"),
                            call("transfer_to_math_expert", nlohmann::json::object(), "s2"),
                            sg::ai("In Paris it is sunny and 21 C; 6 times 7 is 42.")});

  auto weather = sg::create_agent(
      weather_model,
      {sg::make_tool<City>("get_weather", "Today's weather in a city.",
                           [](const City& c) { return "Sunny, 21 C in " + c.city; })},
      {.system_prompt = "You answer questions about the weather.", .name = "weather_expert"});
  auto math = sg::create_agent(math_model,
                               {sg::make_tool<Numbers>("multiply", "Multiplies two numbers.",
                                                       [](const Numbers& n) { return n.a * n.b; })},
                               {.system_prompt = "You do arithmetic.", .name = "math_expert"});
  const auto team = sg::create_supervisor(
      {weather, math}, supervisor_model,
      {.system_prompt = "You manage a weather expert and a math expert. Delegate, then answer."});

  auto result = team.invoke(sg::Update<State>{}.set<&State::messages>(
      sg::human("What's the weather in Paris, and what is 6 times 7?")));
  for (const auto& m : result.state.messages) {
    std::cout << to_string(m.type) << (m.name.empty() ? "" : " (" + m.name + ")") << ": "
              << m.text();
    for (const auto& c : m.tool_calls) std::cout << " [calls " << c.name << ']';
    std::cout << '\n';
  }
  const auto& m = result.state.messages;
  const bool ok = m.size() == 12 && m[3].name == "weather_expert" && m[8].name == "math_expert" &&
                  m.back().name == "supervisor" &&
                  m.back().text() == "In Paris it is sunny and 21 C; 6 times 7 is 42.";
  std::cout << (ok ? "ok\n" : "FAILED\n");
  return ok ? 0 : 1;
}
