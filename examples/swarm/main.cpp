// SPDX-License-Identifier: MIT
// A swarm (langgraph-swarm's create_swarm): Alice does arithmetic, Bob speaks like a pirate; each
// can hand the conversation to the other, and the thread remembers who is talking. The second
// turn goes to Bob directly, who hands over to Alice for the sum.
//
// The model is one sg::LocalModel (offline) with scripted replies, so the run is deterministic;
// the tools run for real. The program checks the turns and exits 1 on a wrong result.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/multi_agent.hpp>

#include <iostream>

namespace {

struct Numbers {
  int a = 0;
  int b = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"a">(&Numbers::a), sg::field<"b">(&Numbers::b)};
  }
};

sg::Message call(const std::string& tool, nlohmann::json args, const std::string& id) {
  return sg::ai("", {sg::ToolCall{id, tool, std::move(args)}});
}

sg::Update<sg::SwarmState> say(std::string text) {
  return sg::Update<sg::SwarmState>{}.set<&sg::SwarmState::messages>(sg::human(std::move(text)));
}

}  // namespace

int main() {
  auto model = std::make_shared<sg::LocalModel>();
  model->script({call("transfer_to_bob", nlohmann::json::object(), "c1"),
                 sg::ai("Ahoy, matey! Bob the pirate be at yer service."),
                 call("transfer_to_alice", nlohmann::json::object(), "c2"),
                 call("add", {{"a", 5}, {"b", 7}}, "c3"), sg::ai("The sum of 5 and 7 is 12.")});
  auto alice =
      sg::create_agent(model,
                       {sg::make_tool<Numbers>("add", "Adds two numbers.",
                                               [](const Numbers& n) { return n.a + n.b; }),
                        sg::create_handoff_tool("Bob")},
                       {.system_prompt = "You are Alice, an addition expert.", .name = "Alice"});
  auto bob =
      sg::create_agent(model,
                       {sg::create_handoff_tool(
                           "Alice", {.description = "Transfer to Alice, she can help with math"})},
                       {.system_prompt = "You are Bob, you speak like a pirate.", .name = "Bob"});
  const auto swarm = sg::create_swarm({alice, bob}, "Alice",
                                      {.checkpointer = std::make_shared<sg::InMemorySaver>()});
  sg::RunConfig thread;
  thread.thread_id = "swarm";
  bool ok = true;
  for (const auto* text : {"I'd like to speak to Bob", "what's 5 + 7?"}) {
    std::cout << "-- " << text << '\n';
    auto turn = swarm.invoke(say(text), thread);
    std::cout << "   " << turn.state.messages.back().name << ": "
              << turn.state.messages.back().text()
              << "\n   active agent: " << turn.state.active_agent << '\n';
    ok = ok && turn.state.active_agent == (std::string(text).starts_with("I'd") ? "Bob" : "Alice");
  }
  const auto final_state = swarm.get_state(thread);
  ok = ok && final_state && final_state->values.messages.size() == 10 &&
       final_state->values.messages.back().text() == "The sum of 5 and 7 is 12.";
  std::cout << (ok ? "ok\n" : "FAILED\n");
  return ok ? 0 : 1;
}
