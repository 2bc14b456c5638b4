// SPDX-License-Identifier: MIT
// trim_hook (what the model sees), delete_old_messages and remove_old_messages (what the thread
// keeps), in real graphs: the ReAct agent on LocalModel, checkpointed threads.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/core/state_graph.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/react_agent.hpp>
#include <stategraph/nodes/trim.hpp>
#include <stategraph/reducers/messages_state.hpp>

#include <doctest/doctest.h>

#include "fake_model.hpp"

namespace {

using sg::Message;

std::vector<Message> turns(int n) {
  std::vector<Message> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(sg::human("question " + std::to_string(i), "h" + std::to_string(i)));
    out.push_back(sg::ai("answer " + std::to_string(i), "a" + std::to_string(i)));
  }
  return out;
}

std::vector<std::string> removed_ids(const std::vector<Message>& removals) {
  std::vector<std::string> out;
  for (const auto& m : removals) {
    CHECK(m.type == sg::MessageType::remove);
    out.push_back(m.id);
  }
  return out;
}

// A list field reduced with concat: it takes keep-slice updates (LangGraph's memory concepts).
struct LogState {
  std::vector<Message> messages{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"messages">(&LogState::messages, sg::concat)};
  }
};

}  // namespace

TEST_CASE("remove_old_messages removes all but the last K, oldest first") {
  const auto messages = turns(3);
  CHECK(removed_ids(sg::remove_old_messages(messages, 2)) ==
        std::vector<std::string>{"h0", "a0", "h1", "a1"});
  CHECK(sg::remove_old_messages(messages, 6).empty());
  CHECK(sg::remove_old_messages(messages, 60).empty());
  CHECK(sg::remove_old_messages(messages, 0).size() == 6);

  // keep_tool_pairs: the kept part never starts with results whose tool call is removed.
  const std::vector with_tools{sg::human("weather?", "h"),
                               sg::ai("", {sg::ToolCall{"c1", "weather", {}}}, "call"),
                               sg::tool("sunny", "c1", "t1"), sg::ai("It is sunny.", "a")};
  CHECK(removed_ids(sg::remove_old_messages(with_tools, 2)) ==
        std::vector<std::string>{"h", "call"});  // LangGraph's plain slice
  CHECK(removed_ids(sg::remove_old_messages(with_tools, 2, true)) == std::vector<std::string>{"h"});

  std::vector<Message> no_id{sg::human("no id"), sg::ai("x", "a")};
  CHECK_THROWS_WITH_AS(sg::remove_old_messages(no_id, 1), doctest::Contains("has no id"),
                       sg::Error);
}

TEST_CASE("delete_old_messages removes from a checkpointed thread, by id or by keep-slice") {
  sg::StateGraph<sg::MessagesState> g;
  g.add_node("chat", [](const sg::MessagesState& s) {
    return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(
        sg::ai("reply to " + s.messages.back().text()));
  });
  g.add_node("forget", sg::delete_old_messages<sg::MessagesState>(2));
  g.add_edge(sg::START, "chat");
  g.add_edge("chat", "forget");
  const auto app = g.compile({.checkpointer = std::make_shared<sg::InMemorySaver>()});
  sg::RunConfig config;
  config.thread_id = "t";
  for (const char* text : {"one", "two", "three"}) {
    app.invoke(sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(sg::human(text)),
               config);
  }
  const auto state = app.get_state(config)->values;
  REQUIRE(state.messages.size() == 2);
  CHECK(state.messages[0].text() == "three");
  CHECK(state.messages[1].text() == "reply to three");

  sg::StateGraph<LogState> log;
  log.add_node("add", [](const LogState& s) {
    return sg::Update<LogState>{}.set<&LogState::messages>(
        sg::ai("entry " + std::to_string(s.messages.size())));
  });
  log.add_node("forget", sg::delete_old_messages<LogState>(3, sg::DeleteMode::keep_slice));
  log.add_edge(sg::START, "add");
  log.add_edge("add", "forget");
  const auto log_app = log.compile({.checkpointer = std::make_shared<sg::InMemorySaver>()});
  for (int i = 0; i < 5; ++i) log_app.invoke(sg::Update<LogState>{}, config);
  const auto kept = log_app.get_state(config)->values.messages;
  REQUIRE(kept.size() == 3);
  CHECK(kept.back().text() == "entry 3");
}

TEST_CASE("trim_hook shows the model the trimmed context while the thread keeps everything") {
  auto model = std::make_shared<sg_test::FakeChatModel>(std::vector{sg::ai("ok")});
  sg::TrimOptions trim;
  trim.max_tokens = 3;
  trim.token_counter = [](std::span<const Message> m) { return sg::count_messages(m); };
  trim.start_on = {sg::MessageType::human};
  sg::ReactAgentOptions options;
  options.pre_model_hook = sg::trim_hook<sg::AgentState>(trim);
  options.checkpointer = std::make_shared<sg::InMemorySaver>();
  const auto agent = sg::create_react_agent(model, {}, options);
  sg::RunConfig config;
  config.thread_id = "t";
  for (int i = 0; i < 4; ++i) {
    agent.invoke(sg::Update<sg::AgentState>{}.set<&sg::AgentState::messages>(
                     sg::human("question " + std::to_string(i))),
                 config);
  }
  const auto calls = model->invoke_calls();
  REQUIRE(calls.size() == 4);
  // The last call saw at most three messages, starting on a human one.
  REQUIRE(calls.back().size() == 3);
  CHECK(calls.back().front().text() == "question 2");
  CHECK(calls.back().back().text() == "question 3");
  CHECK(agent.get_state(config)->values.messages.size() == 8);
}

TEST_CASE("with LocalModel, a fact trimmed from the context is really forgotten") {
  auto model = std::make_shared<sg::LocalModel>();
  auto run = [&](std::int64_t max_tokens) {
    sg::TrimOptions trim;
    trim.max_tokens = max_tokens;
    trim.start_on = {sg::MessageType::human};
    trim.end_on = {sg::MessageType::human};
    const auto agent =
        sg::create_react_agent(model, {},
                               {.pre_model_hook = sg::trim_hook<sg::AgentState>(trim),
                                .checkpointer = std::make_shared<sg::InMemorySaver>()});
    sg::RunConfig config;
    config.thread_id = "ada";
    std::string last;
    for (const char* text :
         {"My name is Ada.", "I live in Lisbon.", "I like green tea.", "What is my name?"}) {
      last =
          agent
              .invoke(sg::Update<sg::AgentState>{}.set<&sg::AgentState::messages>(sg::human(text)),
                      config)
              .state.messages.back()
              .text();
    }
    return last;
  };
  CHECK(run(1000) == "You told me: my name is Ada.");
  CHECK(run(30) == "I don't know that yet.");
}
