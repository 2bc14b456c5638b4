// SPDX-License-Identifier: MIT
// Structured output (LangChain's response_format): an agent's final answer as a typed C++ struct.
// 1. The provider's native structured output (sg::provider_output<T>): the model answers with JSON
//    matching T's schema, which the agent validates and delivers in `structured_response`.
// 2. Structured output as a tool call (sg::tool_output<T>): T's schema is one more tool the model
//    answers with; a call whose arguments do not validate is answered with the error and the
//    model tries again.
//
// The model is sg::LocalModel (offline): in part 1 it follows its rules (it calls the tool the
// question names, then fills the schema's number and text from the tool's result); in part 2 its
// replies are scripted. The program checks its results and exits 1 on a wrong one.
#include <stategraph/models/agent.hpp>
#include <stategraph/models/local_model.hpp>

#include <iostream>

namespace {

using State = sg::CreateAgentState;

struct Numbers {
  double a = 0;
  double b = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"a">(&Numbers::a), sg::field<"b">(&Numbers::b)};
  }
};

/// The typed answer of part 1.
struct Product {
  double result = 0;
  std::string explanation{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"result">(&Product::result),
                      sg::field<"explanation">(&Product::explanation)};
  }
};

/// The typed answer of part 2.
struct WeatherReport {
  std::string city{};
  double temperature = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"city">(&WeatherReport::city),
                      sg::field<"temperature">(&WeatherReport::temperature)};
  }
};

sg::Update<State> ask(std::string text) {
  return sg::Update<State>{}.set<&State::messages>(sg::human(std::move(text)));
}

void print(const std::vector<sg::Message>& messages) {
  for (const auto& m : messages) {
    std::cout << "  " << to_string(m.type) << ": " << m.text();
    for (const auto& c : m.tool_calls)
      std::cout << " [calls " << c.name << ' ' << c.args.dump() << ']';
    std::cout << '\n';
  }
}

}  // namespace

int main() {
  bool ok = true;

  std::cout << "-- 1. provider_output<Product>\n";
  const auto multiply = sg::make_tool<Numbers>("multiply", "Multiplies two numbers.",
                                               [](const Numbers& n) { return n.a * n.b; });
  const auto native = sg::create_agent(std::make_shared<sg::LocalModel>(), {multiply},
                                       {.response_format = sg::provider_output<Product>()});
  const auto first = native.invoke(ask("multiply 6 and 7"));
  print(first.state.messages);
  const Product product = sg::structured_response<Product>(first.state);
  std::cout << "  structured_response: result=" << product.result << " explanation=\""
            << product.explanation << "\"\n";
  ok = ok && product.result == 42 && product.explanation == "The multiply tool says: 42.0";

  std::cout << "-- 2. tool_output<WeatherReport>, a bad answer retried\n";
  auto scripted = std::make_shared<sg::LocalModel>();
  scripted->script(
      {sg::ai("", {sg::ToolCall{"r1", "WeatherReport", {{"city", "Paris"}}}}),
       sg::ai("",
              {sg::ToolCall{"r2", "WeatherReport", {{"city", "Paris"}, {"temperature", 21}}}})});
  const auto reporter =
      sg::create_agent(scripted, {}, {.response_format = sg::tool_output<WeatherReport>()});
  const auto second = reporter.invoke(ask("Report the weather in Paris."));
  print(second.state.messages);
  const WeatherReport report = sg::structured_response<WeatherReport>(second.state);
  std::cout << "  structured_response: " << report.city << ", " << report.temperature << " C\n";
  ok = ok && report.city == "Paris" && report.temperature == 21 &&
       second.state.messages.size() == 5 && second.state.messages[2].status == "error";
  std::cout << (ok ? "ok\n" : "FAILED\n");
  return ok ? 0 : 1;
}
