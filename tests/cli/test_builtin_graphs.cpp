// SPDX-License-Identifier: MIT
// The registry of built-in graphs (cli/src/builtin_graphs.hpp) run in-process: the `agent`
// echo graph of the server contract (reply, sleep, cancellation), the ReAct agent and the
// summarize-and-trim chat on the offline LocalModel, with a checkpointer from the options.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/core/error.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <thread>

#include "builtin_graphs.hpp"

namespace {

template <class S>
sg::Update<S> input_of(std::vector<sg::Message> messages) {
  return sg::Update<S>{}.template set<&S::messages>(std::move(messages));
}

sg::CompiledGraph<sg::MessagesState> registry_echo_graph(
    const sg::cli::BuiltinGraphOptions& options = {}) {
  const auto* entry = sg::cli::find_builtin_graph("agent");
  REQUIRE(entry != nullptr);
  return std::get<sg::CompiledGraph<sg::MessagesState>>(entry->build(options));
}

}  // namespace

TEST_CASE("built-in graphs: the registry is sorted and finds each by name") {
  const auto& graphs = sg::cli::builtin_graphs();
  REQUIRE(graphs.size() == 5);
  CHECK(graphs[0].name == "agent");
  CHECK(graphs[1].name == "approval_agent");
  CHECK(graphs[2].name == "interrupt_agent");
  CHECK(graphs[3].name == "react_agent");
  CHECK(graphs[4].name == "summarize_and_trim");
  CHECK(sg::cli::find_builtin_graph("nope") == nullptr);
  CHECK(sg::cli::builtin_graph_names() ==
        "agent, approval_agent, interrupt_agent, react_agent, summarize_and_trim");
  for (const auto& g : graphs) {
    CHECK(!g.description.empty());
    CHECK(!sg::cli::graph_nodes(g.build({})).empty());
  }
}

TEST_CASE("built-in graphs: agent echoes the last human message, with an id") {
  const auto app = registry_echo_graph();
  const auto r = app.invoke(input_of<sg::MessagesState>(
      {sg::human("first"), sg::ai("an answer"), sg::human("hi there"), sg::system("note")}));
  REQUIRE(r.state.messages.size() == 5);
  const sg::Message& reply = r.state.messages.back();
  CHECK(reply.type == sg::MessageType::ai);
  CHECK(reply.text() == "echo: hi there");
  CHECK(!reply.id.empty());  // the reducer assigns one

  const auto none = app.invoke(input_of<sg::MessagesState>({sg::system("no human here")}));
  CHECK(none.state.messages.back().text() == "echo: ");
  CHECK(sg::cli::graph_nodes(app) == std::vector<std::string>{"echo"});
}

TEST_CASE("built-in graphs: agent waits on sleep:<ms>, and a cancel ends the wait at once") {
  const auto app = registry_echo_graph();
  const auto start = std::chrono::steady_clock::now();
  const auto r = app.invoke(input_of<sg::MessagesState>({sg::human("sleep:120 then answer")}));
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(120));
  CHECK(r.state.messages.back().text() == "echo: sleep:120 then answer");

  // A thread whose run is cancelled mid-sleep keeps no reply.
  const auto saver = std::make_shared<sg::InMemorySaver>();
  const auto persisted = registry_echo_graph({.checkpointer = saver});
  sg::RunConfig config;
  config.thread_id = "t";
  config.cancellation = sg::CancellationToken::create();
  const auto cancelled_at = std::chrono::steady_clock::now();
  auto run = std::async(std::launch::async, [&] {
    return persisted.invoke(input_of<sg::MessagesState>({sg::human("sleep:60000")}), config);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  config.cancellation.cancel();
  CHECK_THROWS_AS(run.get(), sg::CancelledError);
  CHECK(std::chrono::steady_clock::now() - cancelled_at < std::chrono::seconds(5));
  const auto state = persisted.get_state(config);
  REQUIRE(state.has_value());
  for (const auto& m : state->values.messages) CHECK(m.type != sg::MessageType::ai);
}

TEST_CASE("built-in graphs: react_agent and summarize_and_trim run on the LocalModel") {
  const auto* react = sg::cli::find_builtin_graph("react_agent");
  REQUIRE(react != nullptr);
  const auto agent = std::get<sg::CompiledGraph<sg::AgentState>>(react->build({}));
  const auto r = agent.invoke(input_of<sg::AgentState>({sg::human("Please multiply 6 and 7.")}));
  REQUIRE(r.state.messages.size() == 4);
  CHECK(r.state.messages[2].type == sg::MessageType::tool);
  CHECK(r.state.messages[2].text() == "42.0");

  const auto* trim = sg::cli::find_builtin_graph("summarize_and_trim");
  REQUIRE(trim != nullptr);
  const auto saver = std::make_shared<sg::InMemorySaver>();
  const auto chat =
      std::get<sg::CompiledGraph<sg::SummaryTrimState>>(trim->build({.checkpointer = saver}));
  sg::RunConfig config;
  config.thread_id = "ada";
  (void)chat.invoke(input_of<sg::SummaryTrimState>({sg::human("My name is Ada.")}), config);
  const auto answer =
      chat.invoke(input_of<sg::SummaryTrimState>({sg::human("What is my name?")}), config);
  CHECK(answer.state.messages.back().text() == "You told me: my name is Ada.");
  CHECK(answer.state.turns == 2);
}

TEST_CASE("built-in graphs: interrupt_agent asks, then answers with the resume value") {
  sg::cli::BuiltinGraphOptions options;
  options.checkpointer = std::make_shared<sg::InMemorySaver>();
  const auto app = std::get<sg::CompiledGraph<sg::MessagesState>>(
      sg::cli::find_builtin_graph("interrupt_agent")->build(options));
  sg::RunConfig config;
  config.thread_id = "t";
  const auto asked = app.invoke(input_of<sg::MessagesState>({sg::human("go")}), config);
  REQUIRE(asked.interrupted());
  REQUIRE(asked.interrupts.size() == 1);
  CHECK(asked.interrupts[0].value == nlohmann::json{{"question", "what next?"}});
  const auto resumed = app.invoke(sg::Command<sg::MessagesState>{.resume = "yes"}, config);
  CHECK(!resumed.interrupted());
  CHECK(resumed.state.messages.back().text() == "resumed: yes");
  CHECK(app.invoke(input_of<sg::MessagesState>({sg::human("go")}), config).interrupted());
  const auto object =
      app.invoke(sg::Command<sg::MessagesState>{.resume = nlohmann::json{{"a", 1}}}, config);
  CHECK(object.state.messages.back().text() == R"(resumed: {"a":1})");
}
