// SPDX-License-Identifier: MIT
// ContextEditingMiddleware and ClearToolUsesEdit: LangChain's test_context_editing.py
// expectations, the edit on its own, and create_agent runs (where, unlike LangChain, only the
// model's view of the conversation is edited).
#include <stategraph/models/agent.hpp>
#include <stategraph/models/context_editing_middleware.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "support/fake_tool_calling_model.hpp"

namespace {

using sg::CreateAgentState;
using sg::test::FakeToolCallingModel;

/// An input of the agent's state: these messages.
sg::Update<CreateAgentState> ctx_edit_ask(std::vector<sg::Message> messages) {
  sg::Update<CreateAgentState> u;
  u.set<&CreateAgentState::messages>(std::move(messages));
  return u;
}

sg::ToolCall ctx_edit_call(std::string name, nlohmann::json args, std::string id) {
  return sg::ToolCall{std::move(id), std::move(name), std::move(args)};
}

std::string ctx_edit_repeat(const std::string& text, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += text;
  return out;
}

/// LangChain's _TokenCountingChatModel ("model" counting): the length of each message's content.
sg::TokenCounter ctx_edit_content_length() {
  return [](const sg::Message& m) {
    return static_cast<std::int64_t>(m.content.is_string()
                                         ? m.content.str().size()
                                         : nlohmann::json(m.content.blocks()).dump().size());
  };
}

/// Runs the middleware's wrap_model_call on `messages` and returns what the next handler got.
std::vector<sg::Message> ctx_edit_wrap(const sg::AgentMiddleware& m,
                                       std::vector<sg::Message> messages) {
  REQUIRE(m.wrap_model_call);
  std::vector<sg::Message> seen;
  sg::ModelRequest request;
  request.messages = std::move(messages);
  boost::asio::io_context io;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        sg::ModelHandler next =
            [&](sg::ModelRequest r) -> boost::asio::awaitable<sg::ModelResponse> {
          seen = r.messages;
          co_return sg::ModelResponse{{sg::ai("mock response")}, nullptr};
        };
        (void)co_await m.wrap_model_call(std::move(request), next);
      },
      boost::asio::detached);
  io.run();
  return seen;
}

struct CtxEditArgs {
  std::string q{};
  static constexpr auto schema() { return std::tuple{sg::field<"q">(&CtxEditArgs::q)}; }
};

bool ctx_edit_cleared(const sg::Message& m) {
  return m.response_metadata.is_object() && m.response_metadata.contains("context_editing") &&
         m.response_metadata["context_editing"].value("cleared", false);
}

}  // namespace

TEST_CASE("context editing: no edit below the trigger (test_no_edit_when_below_trigger)") {
  const std::vector<sg::Message> messages{
      sg::ai("", {ctx_edit_call("search", nlohmann::json::object(), "call-1")}),
      sg::tool("12345", "call-1")};
  const auto m = sg::context_editing_middleware({.edits = {{.trigger = 50}}});
  CHECK(m.name == "ContextEditingMiddleware");
  const auto seen = ctx_edit_wrap(m, messages);
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].text() == "");
  CHECK(seen[1].text() == "12345");
  CHECK(seen == messages);
}

TEST_CASE("context editing: clears tool outputs and inputs (test_clear_tool_outputs_and_inputs)") {
  const nlohmann::json args = {{"query", "foo"}};
  const sg::Content::Blocks content{
      {{"type", "tool_call"}, {"id", "call-2"}, {"name", "search"}, {"args", args}}};
  const std::vector<sg::Message> messages{
      sg::ai(content, {ctx_edit_call("search", args, "call-2")}),
      sg::tool(std::string(200, 'x'), "call-2")};
  const auto m = sg::context_editing_middleware({.edits = {{.trigger = 50,
                                                            .clear_at_least = 10,
                                                            .keep = 0,
                                                            .clear_tool_inputs = true,
                                                            .placeholder = "[cleared output]"}}});
  const auto seen = ctx_edit_wrap(m, messages);
  REQUIRE(seen.size() == 2);
  const auto& cleared_tool = seen[1];
  CHECK(cleared_tool.type == sg::MessageType::tool);
  CHECK(cleared_tool.text() == "[cleared output]");
  CHECK(cleared_tool.response_metadata["context_editing"] ==
        nlohmann::json{{"cleared", true}, {"strategy", "clear_tool_uses"}});
  CHECK(cleared_tool.tool_call_id == "call-2");
  const auto& cleared_ai = seen[0];
  CHECK(cleared_ai.tool_calls.at(0).args == nlohmann::json::object());
  CHECK(cleared_ai.response_metadata["context_editing"]["cleared_tool_inputs"] ==
        nlohmann::json{"call-2"});
  CHECK(cleared_ai.content == messages[0].content);  // only the call's arguments change
}

TEST_CASE("context editing: keeps the last tool results (test_respects_keep_last_tool_results)") {
  std::vector<sg::Message> conversation;
  for (const std::string id : {"a", "b", "c"}) {
    conversation.push_back(
        sg::ai("", {ctx_edit_call("tool", {{"input", "call-" + id}}, "call-" + id)}));
    conversation.push_back(sg::tool(ctx_edit_repeat("tool-output-" + id, 5), "call-" + id));
  }
  const auto m = sg::context_editing_middleware(
      {.edits = {{.trigger = 50, .keep = 1, .placeholder = "[cleared]"}},
       .token_counter = ctx_edit_content_length()});
  const auto seen = ctx_edit_wrap(m, conversation);
  REQUIRE(seen.size() == 6);
  CHECK(seen[1].text() == "[cleared]");
  CHECK(seen[3].text() == "[cleared]");
  CHECK(seen[5].type == sg::MessageType::tool);
  CHECK(seen[5].text() == ctx_edit_repeat("tool-output-c", 5));
  CHECK(seen[0].tool_calls == conversation[0].tool_calls);  // clear_tool_inputs is off
}

TEST_CASE(
    "context editing: excluded tools are skipped, clearing goes on "
    "(test_exclude_tools_prevents_clearing)") {
  std::vector<sg::Message> messages{
      sg::ai("", {ctx_edit_call("search", {{"query", "foo"}}, "call-search")}),
      sg::tool(ctx_edit_repeat("search-results", 20), "call-search"),
      sg::ai("", {ctx_edit_call("calculator", {{"a", 1}, {"b", 2}}, "call-calc")}),
      sg::tool("42", "call-calc")};
  const sg::ClearToolUsesEdit edit{.trigger = 50,
                                   .clear_at_least = 10,
                                   .keep = 0,
                                   .exclude_tools = {"search"},
                                   .placeholder = "[cleared]"};
  const auto seen = ctx_edit_wrap(sg::context_editing_middleware({.edits = {edit}}), messages);
  REQUIRE(seen.size() == 4);
  CHECK(seen[1].text() == ctx_edit_repeat("search-results", 20));
  CHECK(seen[3].text() == "[cleared]");

  // The tool message's own name, when it has one, is what exclude_tools names.
  messages[1].name = "calculator";
  messages[3].name = "search";
  CHECK(sg::apply_clear_tool_uses(messages, edit, {}) == 1);
  CHECK(messages[1].text() == "[cleared]");
  CHECK(messages[3].text() == "42");
}

TEST_CASE(
    "context editing: trigger and keep as the newer API's (\"tokens\", 50) and "
    "(\"messages\", n) (test_new_api_*)") {
  // ("tokens", 50) triggers at >= 50 tokens: trigger = 49 here.
  std::vector<sg::Message> one{
      sg::ai("", {ctx_edit_call("search", nlohmann::json::object(), "call-1")}),
      sg::tool(std::string(200, 'x'), "call-1")};
  CHECK(sg::apply_clear_tool_uses(one, {.trigger = 49, .keep = 0}, {}) == 1);
  CHECK(one[1].text() == "[cleared]");

  std::vector<sg::Message> five;
  for (int i = 0; i < 5; ++i) {
    const std::string id = "call-" + std::to_string(i);
    five.push_back(sg::ai("", {ctx_edit_call("tool", nlohmann::json::object(), id)}));
    five.push_back(sg::tool(std::string(50, 'x'), id));
  }
  CHECK(sg::apply_clear_tool_uses(five, {.trigger = 49, .keep = 2}, {}) == 3);
  int cleared = 0;
  int preserved = 0;
  for (const auto& m : five) {
    if (m.type != sg::MessageType::tool) continue;
    (m.text() == "[cleared]" ? cleared : preserved) += 1;
  }
  CHECK(cleared == 3);
  CHECK(preserved == 2);
  CHECK(five[7].text() == std::string(50, 'x'));
  CHECK(five[9].text() == std::string(50, 'x'));
}

TEST_CASE("context editing: apply_clear_tool_uses in detail") {
  const auto counter = ctx_edit_content_length();
  SUBCASE("the trigger is exclusive; a second pass skips what is already cleared") {
    std::vector<sg::Message> messages{
        sg::ai("", {ctx_edit_call("t", nlohmann::json::object(), "1")}),
        sg::tool("0123456789", "1"),
        sg::ai("", {ctx_edit_call("t", nlohmann::json::object(), "2")}), sg::tool("abc", "2")};
    CHECK(sg::apply_clear_tool_uses(messages, {.trigger = 13, .keep = 0}, counter) == 0);
    CHECK(sg::apply_clear_tool_uses(messages, {.trigger = 12, .keep = 0}, counter) == 2);
    CHECK(ctx_edit_cleared(messages[1]));
    CHECK(ctx_edit_cleared(messages[3]));
    CHECK(sg::apply_clear_tool_uses(messages, {.trigger = 0, .keep = 0}, counter) == 0);
  }
  SUBCASE("keep at least the number of tool messages clears nothing") {
    std::vector<sg::Message> messages{
        sg::ai("", {ctx_edit_call("t", nlohmann::json::object(), "1")}),
        sg::tool("0123456789", "1")};
    CHECK(sg::apply_clear_tool_uses(messages, {.trigger = 0, .keep = 1}, counter) == 0);
    CHECK(sg::apply_clear_tool_uses(messages, {.trigger = 0, .keep = 5}, counter) == 0);
  }
  SUBCASE("the nearest AI message before the result must hold its call") {
    std::vector<sg::Message> messages{
        sg::ai("", {ctx_edit_call("t", nlohmann::json::object(), "1")}), sg::ai("thinking"),
        sg::tool("0123456789", "1"), sg::tool("orphan", "nobody")};
    CHECK(sg::apply_clear_tool_uses(messages, {.trigger = 0, .keep = 0}, counter) == 0);
  }
  SUBCASE("clear_at_least stops once enough was reclaimed; inputs are listed sorted") {
    std::vector<sg::Message> messages{sg::ai("", {ctx_edit_call("t", {{"q", 1}}, "call-b"),
                                                  ctx_edit_call("t", {{"q", 2}}, "call-a")}),
                                      sg::tool(std::string(100, 'b'), "call-b"),
                                      sg::tool(std::string(100, 'a'), "call-a"),
                                      sg::ai("", {ctx_edit_call("t", {{"q", 3}}, "call-c")}),
                                      sg::tool(std::string(100, 'c'), "call-c")};
    messages[0].response_metadata = {{"model_name", "m"}};
    CHECK(sg::apply_clear_tool_uses(
              messages, {.trigger = 0, .clear_at_least = 150, .keep = 0, .clear_tool_inputs = true},
              counter) == 2);
    CHECK(messages[0].tool_calls[0].args == nlohmann::json::object());
    CHECK(messages[0].tool_calls[1].args == nlohmann::json::object());
    CHECK(messages[0].response_metadata ==
          nlohmann::json{{"model_name", "m"},
                         {"context_editing", {{"cleared_tool_inputs", {"call-a", "call-b"}}}}});
    CHECK(messages[4].text() == std::string(100, 'c'));
    CHECK(messages[3].tool_calls[0].args == nlohmann::json{{"q", 3}});
  }
  SUBCASE("the approximate count is the default") {
    std::vector<sg::Message> messages{
        sg::ai("", {ctx_edit_call("t", nlohmann::json::object(), "1")}),
        sg::tool("0123456789", "1")};
    const std::int64_t tokens = sg::count_tokens_approximately(messages);
    CHECK(sg::apply_clear_tool_uses(messages, {.trigger = tokens, .keep = 0}, {}) == 0);
    CHECK(sg::apply_clear_tool_uses(messages, {.trigger = tokens - 1, .keep = 0}, {}) == 1);
  }
  CHECK(sg::ContextEditingOptions{}.edits.size() == 1);
  CHECK(sg::ContextEditingOptions{}.edits[0].trigger == 100'000);
  CHECK(sg::ContextEditingOptions{}.edits[0].keep == 3);
  CHECK(sg::ContextEditingOptions{}.edits[0].placeholder == "[cleared]");
}

TEST_CASE(
    "context editing: in create_agent the model sees the cleared results, the state keeps "
    "them whole") {
  auto big = sg::make_tool<CtxEditArgs>("fetch", "Fetches a page.", [](const CtxEditArgs& a) {
    return ctx_edit_repeat("page " + a.q + " ", 100);
  });
  auto model = std::make_shared<FakeToolCallingModel>(
      std::vector<std::vector<sg::ToolCall>>{{ctx_edit_call("fetch", {{"q", "1"}}, "c1")},
                                             {ctx_edit_call("fetch", {{"q", "2"}}, "c2")},
                                             {}});
  auto agent =
      sg::create_agent(model, {big},
                       {.system_prompt = "sys",
                        .middleware = {sg::context_editing_middleware(
                            {.edits = {{.trigger = 200, .keep = 1, .clear_tool_inputs = true}}})}});
  auto result = agent.invoke(ctx_edit_ask(std::vector{sg::human("read both pages")}));

  const auto inputs = model->inputs();
  REQUIRE(inputs.size() == 3);
  // The second call: one tool result, kept.
  REQUIRE(inputs[1].size() == 4);  // system, human, ai, tool
  CHECK(inputs[1][3].text() == ctx_edit_repeat("page 1 ", 100));
  // The third call: the first result cleared, with its call's arguments; the last one kept.
  REQUIRE(inputs[2].size() == 6);
  CHECK(inputs[2][0].type == sg::MessageType::system);
  CHECK(inputs[2][3].text() == "[cleared]");
  CHECK(ctx_edit_cleared(inputs[2][3]));
  CHECK(inputs[2][2].tool_calls.at(0).args == nlohmann::json::object());
  CHECK(inputs[2][5].text() == ctx_edit_repeat("page 2 ", 100));

  // The state is not edited.
  const auto& m = result.state.messages;
  REQUIRE(m.size() == 6);
  CHECK(m[2].text() == ctx_edit_repeat("page 1 ", 100));
  CHECK_FALSE(ctx_edit_cleared(m[2]));
  CHECK(m[1].tool_calls.at(0).args == nlohmann::json{{"q", "1"}});
  CHECK(m[4].text() == ctx_edit_repeat("page 2 ", 100));
}
