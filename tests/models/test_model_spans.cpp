// SPDX-License-Identifier: MIT
// Model and tool calls report their spans to the run's callbacks, send the model span's
// traceparent to the model server, and log failures.
#include <stategraph/core/log.hpp>
#include <stategraph/models/openai.hpp>
#include <stategraph/models/react_agent.hpp>

#include <doctest/doctest.h>

#include <mutex>

#include "support/loopback_openai.hpp"
#include "support/recording_callbacks.hpp"

namespace {

struct SpanAddArgs {
  int a = 0;
  int b = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"a">(&SpanAddArgs::a), sg::field<"b">(&SpanAddArgs::b)};
  }
};

sg::Update<sg::AgentState> span_question(std::string text) {
  sg::Update<sg::AgentState> u;
  u.set<&sg::AgentState::messages>(std::vector<sg::Message>{sg::human(std::move(text))});
  return u;
}

sg::CompiledGraph<sg::AgentState> span_agent(const sg::testing::LoopbackOpenAI& server,
                                             int max_retries = 2) {
  sg::OpenAIConfig config;
  config.base_url = server.base_url();
  config.model = "loopback-model";
  config.max_retries = max_retries;
  config.backoff_initial = std::chrono::milliseconds(1);
  return sg::create_react_agent(
      std::make_shared<sg::OpenAIChatModel>(config),
      {sg::make_tool<SpanAddArgs>("add", "Adds.", [](const SpanAddArgs& x) { return x.a + x.b; }),
       sg::make_tool<SpanAddArgs>("fail", "Fails.", [](const SpanAddArgs&) -> int {
         throw std::runtime_error("the tool broke");
       })});
}

}  // namespace

TEST_CASE("model and tool calls in a ReAct run: spans, GenAI data, traceparent sent onward") {
  sg::testing::LoopbackOpenAI server({.call_tool = "add", .tool_args = {{"a", 2}, {"b", 3}}});
  auto recorder = std::make_shared<sg::testing::RecordingCallbacks>();
  sg::RunConfig config;
  config.callbacks.push_back(recorder);
  config.thread_id = "thread-7";
  const auto result =
      span_agent(server).stream(span_question("add 2 and 3"), config, sg::StreamMode::messages,
                                [](const sg::StreamEvent<sg::AgentState>&) {});
  REQUIRE(result.state.messages.size() == 4);

  const auto models = recorder->ended(sg::SpanKind::model);
  REQUIRE(models.size() == 2);
  const auto agent_nodes = recorder->ended(sg::SpanKind::node, "agent");
  REQUIRE(agent_nodes.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CAPTURE(i);
    const sg::Span& m = models[i];
    CHECK(m.name == "loopback-model");
    CHECK(m.provider == "openai");
    CHECK(m.node == "agent");
    CHECK(m.thread_id == "thread-7");
    CHECK(m.status == sg::SpanStatus::ok);
    CHECK(m.parent_span_id == agent_nodes[i].context.span_id);
    CHECK(m.context.trace_id == agent_nodes[i].context.trace_id);
    CHECK(m.input_tokens > 0);
    CHECK(m.output_tokens > 0);
    // The model server got the model span as its parent.
    CHECK(server.requests().at(i).header("traceparent") == m.context.traceparent());
  }
  // The model start carried the messages; a streamed reply reported its tokens.
  const auto starts = recorder->named("model_start");
  REQUIRE(starts.size() == 2);
  CHECK(starts[0].messages == 1);
  CHECK(starts[1].messages == 3);
  CHECK(!recorder->named("model_token").empty());

  const auto tools = recorder->ended(sg::SpanKind::tool, "add");
  REQUIRE(tools.size() == 1);
  CHECK(tools[0].status == sg::SpanStatus::ok);
  CHECK(tools[0].tool_call_id == result.state.messages[1].tool_calls.at(0).id);
  CHECK(tools[0].parent_span_id == recorder->ended(sg::SpanKind::node, "tools")[0].context.span_id);
  CHECK(recorder->named("tool_start").at(0).tool_arguments == 2);
}

TEST_CASE("a failing model call: an error span and a log line with the cause") {
  sg::testing::LoopbackOpenAI server;
  for (int i = 0; i < 2; ++i) server.push(sg::testing::LoopbackReply::error(500, "model down"));
  auto recorder = std::make_shared<sg::testing::RecordingCallbacks>();
  std::mutex mu;
  std::vector<std::pair<std::string, nlohmann::json>> logged;
  sg::set_log_sink(
      [&](const sg::LogRecord& r) {
        std::lock_guard lock(mu);
        logged.emplace_back(std::string(r.message), r.fields);
      },
      sg::LogLevel::warn);
  sg::RunConfig config;
  config.callbacks.push_back(recorder);
  config.run_id = "run-failing";
  CHECK_THROWS_AS(span_agent(server, 1).invoke(span_question("hi"), config), sg::Error);
  sg::set_log_sink(nullptr);

  const auto models = recorder->ended(sg::SpanKind::model);
  REQUIRE(models.size() == 1);
  CHECK(models[0].status == sg::SpanStatus::error);
  CHECK(models[0].error_type == "model.http_status");
  CHECK(models[0].error.find("model down") != std::string::npos);
  CHECK(recorder->ended(sg::SpanKind::run)[0].status == sg::SpanStatus::error);

  bool retried = false;
  bool failed = false;
  for (const auto& [message, fields] : logged) {
    if (message == "model request retried") {
      retried = true;
      CHECK(fields["status"] == 500);
      CHECK(fields["url"] == server.base_url() + "/chat/completions");
    }
    if (message == "model call failed") {
      failed = true;
      CHECK(fields["code"] == "model.http_status");
      CHECK(fields["run_id"] == "run-failing");
      CHECK(fields["node"] == "agent");
      CHECK(fields["error"].get<std::string>().find("model down") != std::string::npos);
    }
  }
  CHECK(retried);
  CHECK(failed);
}

TEST_CASE("a tool that fails: an error span, the agent goes on") {
  sg::testing::LoopbackOpenAI server({.call_tool = "fail", .tool_args = {{"a", 1}, {"b", 1}}});
  auto recorder = std::make_shared<sg::testing::RecordingCallbacks>();
  sg::RunConfig config;
  config.callbacks.push_back(recorder);
  const auto result = span_agent(server).invoke(span_question("try it"), config);
  CHECK(result.state.messages.at(2).status == "error");
  const auto tools = recorder->ended(sg::SpanKind::tool, "fail");
  REQUIRE(tools.size() == 1);
  CHECK(tools[0].status == sg::SpanStatus::error);
  CHECK(tools[0].error_type == "tool_error");
  CAPTURE(tools[0].error);
  CHECK(tools[0].error.find("the tool broke") != std::string::npos);
  // Without callbacks, no traceparent goes to the model server.
  const std::size_t before = server.requests().size();
  (void)span_agent(server).invoke(span_question("again"));
  CHECK(server.requests().at(before).header("traceparent").empty());
}
