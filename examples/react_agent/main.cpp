// SPDX-License-Identifier: MIT
// A ReAct agent with two tools. The model comes from sg::default_chat_model(): the offline
// LocalModel, or any OpenAI-compatible server when OPENAI_BASE_URL is set.
//
//   ./react_agent "Please multiply 6 and 7, and get weather in Paris."

#include <stategraph/models/local_model.hpp>
#include <stategraph/models/react_agent.hpp>

#include <iostream>
#include <map>

namespace {

// A tool's arguments are a struct with a schema, like a graph state; the JSON schema the model
// sees is derived from it.
struct Multiply {
  double a = 0;
  double b = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"a">(&Multiply::a), sg::field<"b">(&Multiply::b)};
  }
};

struct City {
  std::string city{};
  static constexpr auto schema() { return std::tuple{sg::field<"city">(&City::city)}; }
};

}  // namespace

int main(int argc, char** argv) {
  const std::string question =
      argc > 1 ? argv[1] : "Please multiply 6 and 7, and get weather in Paris.";

  std::vector<sg::Tool> tools{
      sg::make_tool<Multiply>("multiply", "Multiplies two numbers.",
                              [](const Multiply& x) { return x.a * x.b; },
                              {{"a", "the first factor"}, {"b", "the second factor"}}),
      sg::make_tool<City>("get_weather", "Today's weather in a city.",
                          [](const City& c) { return "Sunny, 21 C in " + c.city; })};

  sg::ReactAgentOptions options;
  options.system_prompt = "You are a helpful assistant. Use the tools when they help.";
  auto agent = sg::create_react_agent(sg::default_chat_model(), std::move(tools), options);

  sg::Update<sg::AgentState> input;
  input.set<&sg::AgentState::messages>(std::vector<sg::Message>{sg::human(question)});
  std::cout << "user: " << question << '\n';

  // Stream the model's tokens as they come, and every tool result (messages mode). A tool call
  // streams in pieces (its name, then its arguments a few characters at a time): each is printed
  // once whole, when the tools start.
  bool in_reply = false;
  std::map<int, sg::ToolCallChunk> calls;  // by index in the reply
  const auto print_calls = [&] {
    for (const auto& [index, call] : calls) {
      std::cout << (in_reply ? "\n" : "") << "calls " << call.name << ' ' << call.args << '\n';
      in_reply = false;
    }
    calls.clear();
  };
  auto result = agent.stream(std::move(input), {}, sg::StreamMode::messages,
                             [&](const sg::StreamEvent<sg::AgentState>& e) {
                               const sg::Message& m = e.message->message;
                               if (m.type == sg::MessageType::tool) {
                                 print_calls();
                                 std::cout << (in_reply ? "\n" : "") << "tool " << m.name << ": "
                                           << m.text() << '\n';
                                 in_reply = false;
                                 return;
                               }
                               for (const auto& piece : e.message->tool_call_chunks) {
                                 sg::ToolCallChunk& call = calls[piece.index];
                                 call.name += piece.name;
                                 call.args += piece.args;
                               }
                               if (!m.text().empty()) {
                                 if (!in_reply) std::cout << "assistant: ";
                                 std::cout << m.text() << std::flush;
                                 in_reply = true;
                               }
                             });
  print_calls();
  if (in_reply) std::cout << '\n';
  std::cout << "(" << result.state.messages.size() << " messages in the conversation)\n";
}
