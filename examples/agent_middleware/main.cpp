// SPDX-License-Identifier: MIT
// create_agent with middleware (LangChain 1.x's agent): a reviewer approves tool calls in the
// format agent UIs render (HumanInterrupt), model and tool calls are capped, a flaky tool is
// retried, and e-mail addresses are redacted before the model sees them.
//
// The model is sg::LocalModel (offline, deterministic): it calls the tool the last human message
// names, then answers with the tools' results. The program checks what it prints and exits 1 on
// a wrong result, so the tests run it as it is.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/middleware.hpp>
#include <stategraph/models/pii_middleware.hpp>

#include <atomic>
#include <chrono>
#include <iostream>
#include <stdexcept>

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

void print_messages(const std::vector<sg::Message>& messages) {
  for (const auto& m : messages) {
    std::cout << "  " << to_string(m.type) << ": " << m.text();
    for (const auto& call : m.tool_calls)
      std::cout << "[calls " << call.name << ' ' << call.args.dump() << ']';
    std::cout << '\n';
  }
}

sg::Update<State> say(std::string text) {
  return sg::Update<State>{}.set<&State::messages>(sg::human(std::move(text)));
}

bool expect(bool ok, const std::string& what) {
  if (!ok) std::cerr << "unexpected: " << what << '\n';
  return ok;
}

}  // namespace

int main() {
  // get_weather fails on its first call: the retry middleware calls it again.
  std::atomic<int> weather_calls{0};
  const std::vector<sg::Tool> tools{
      sg::make_tool<City>("get_weather", "Today's weather in a city.",
                          [&weather_calls](const City& c) -> std::string {
                            if (++weather_calls == 1)
                              throw std::runtime_error("weather service busy");
                            return "Sunny, 21 C in " + c.city;
                          }),
      sg::make_tool<Numbers>("multiply", "Multiplies two numbers.",
                             [](const Numbers& n) { return n.a * n.b; })};

  sg::HumanInTheLoopOptions approvals;
  approvals.interrupt_on["get_weather"] = {.config = {.allow_ignore = true}};
  sg::AgentOptions options;
  options.system_prompt = "You are a helpful assistant.";
  options.middleware = {
      sg::pii_middleware({.pii_type = "email"}),
      sg::model_call_limit_middleware({.run_limit = 4}),
      sg::tool_retry_middleware({.initial_delay = std::chrono::milliseconds(10)}),
      sg::human_in_the_loop_middleware(approvals),
  };
  options.checkpointer = std::make_shared<sg::InMemorySaver>();
  const auto agent = sg::create_agent(std::make_shared<sg::LocalModel>(), tools, options);

  sg::RunConfig thread;
  thread.thread_id = "approvals";
  bool ok = true;

  // 1. The model asks for get_weather: the run stops for a reviewer.
  std::cout << "-- ask: get_weather Paris (mail me at ada@example.com)\n";
  auto paused = agent.invoke(say("get_weather Paris (mail me at ada@example.com)"), thread);
  print_messages(paused.state.messages);
  ok &= expect(paused.interrupted(), "no interrupt");
  const nlohmann::json request = paused.interrupts.at(0).value;
  std::cout << "interrupt from " << paused.interrupts[0].node << ":\n" << request.dump(2) << '\n';
  ok &= expect(request[0]["action_request"]["action"] == "get_weather", "the reviewed action");
  ok &= expect(paused.state.messages[0].text().find("[REDACTED_EMAIL]") != std::string::npos,
               "the e-mail address was not redacted");

  // 2. The reviewer edits the city; the call runs (twice: the first attempt fails).
  std::cout << "-- resume: edit the city to Lyon\n";
  sg::Command<State> edit;
  edit.resume = nlohmann::json::array({sg::edit_response("get_weather", {{"city", "Lyon"}})});
  auto done = agent.invoke(edit, thread);
  print_messages(done.state.messages);
  ok &= expect(!done.interrupted(), "the run did not end");
  ok &= expect(weather_calls == 2, "get_weather was not retried");
  ok &= expect(done.state.messages.at(2).text() == "Sunny, 21 C in Lyon", "the edited call");

  // 3. multiply needs no approval; get_weather is ignored, which ends the run.
  std::cout << "-- ask: multiply 6 and 7\n";
  auto product = agent.invoke(say("multiply 6 and 7"), thread);
  print_messages(product.state.messages);
  ok &= expect(!product.interrupted(), "multiply needs no approval");
  ok &= expect(product.state.messages.back().text().find("42") != std::string::npos, "6 x 7");
  std::cout << "-- ask: get_weather Oslo, then ignore the call\n";
  auto again = agent.invoke(say("get_weather Oslo"), thread);
  sg::Command<State> ignore;
  ignore.resume = nlohmann::json::array({sg::ignore_response()});
  auto ignored = agent.invoke(ignore, thread);
  print_messages(ignored.state.messages);
  ok &= expect(again.interrupted() && !ignored.interrupted(), "the ignored call");
  ok &= expect(ignored.state.messages.back().text() ==
                   "User ignored the tool call for `get_weather` with id " +
                       ignored.state.messages.back().tool_call_id,
               "the ignored call's answer");
  std::cout << (ok ? "ok\n" : "FAILED\n");
  return ok ? 0 : 1;
}
