// SPDX-License-Identifier: MIT
// The ReAct agent end to end over real HTTP: OpenAIChatModel against the loopback OpenAI-wire
// server, which answers first with tool calls (streamed in split deltas), then with text.
#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/core/async.hpp>
#include <stategraph/models/openai.hpp>
#include <stategraph/models/react_agent.hpp>

#include <doctest/doctest.h>

#include <functional>

#include "support/loopback_openai.hpp"
#include "support/temp_dir.hpp"

namespace {

struct HttpMulArgs {
  double a = 0;
  double b = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"a">(&HttpMulArgs::a), sg::field<"b">(&HttpMulArgs::b)};
  }
};

nlohmann::json tool_call_completion() {
  return nlohmann::json::parse(R"({
    "id": "chatcmpl-1", "object": "chat.completion", "model": "loopback",
    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant",
      "content": null, "tool_calls": [{"id": "call_a", "type": "function",
        "function": {"name": "multiply", "arguments": "{\"a\": 6, \"b\": 7}"}}]}}],
    "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}})");
}

std::vector<nlohmann::json> tool_call_chunks() {
  auto chunk = [](nlohmann::json delta, nlohmann::json finish = nullptr) {
    return nlohmann::json{
        {"id", "chatcmpl-2"},
        {"object", "chat.completion.chunk"},
        {"model", "loopback"},
        {"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}};
  };
  return {chunk({{"role", "assistant"}, {"content", nullptr}}),
          chunk({{"tool_calls",
                  {{{"index", 0},
                    {"id", "call_b"},
                    {"type", "function"},
                    {"function", {{"name", "multiply"}, {"arguments", "{\"a\": "}}}}}}}),
          chunk({{"tool_calls", {{{"index", 0}, {"function", {{"arguments", "3, \"b\": 5}"}}}}}}}),
          chunk(nlohmann::json::object(), "tool_calls")};
}

sg::Update<sg::AgentState> ask_http(std::string text) {
  sg::Update<sg::AgentState> u;
  u.set<&sg::AgentState::messages>(std::vector<sg::Message>{sg::human(std::move(text))});
  return u;
}

}  // namespace

TEST_CASE("the ReAct agent over HTTP: tool calls, tool results sent back, the answer") {
  sg::testing::LoopbackOpenAI server;
  server.push(sg::testing::LoopbackReply::json(tool_call_completion()));
  server.push(sg::testing::LoopbackReply::text("6 times 7 is 42."));
  sg::OpenAIConfig config;
  config.base_url = server.base_url();
  config.model = "loopback";
  auto model = std::make_shared<sg::OpenAIChatModel>(config);
  sg::ReactAgentOptions options;
  options.system_prompt = "Be brief.";
  auto agent = sg::create_react_agent(
      model,
      {sg::make_tool<HttpMulArgs>("multiply", "Multiplies.",
                                  [](const HttpMulArgs& x) { return x.a * x.b; })},
      options);
  auto r = agent.invoke(ask_http("What is 6 times 7?"));
  REQUIRE(r.state.messages.size() == 4);
  CHECK(r.state.messages[1].tool_calls.at(0).args == nlohmann::json{{"a", 6}, {"b", 7}});
  CHECK(r.state.messages[2].text() == "42.0");
  CHECK(r.state.messages[3].text() == "6 times 7 is 42.");

  const auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  const auto first = requests[0].json();
  CHECK(first["model"] == "loopback");
  CHECK(first["messages"][0] == nlohmann::json{{"role", "system"}, {"content", "Be brief."}});
  CHECK(first["tools"][0]["function"]["name"] == "multiply");
  CHECK(first["tools"][0]["function"]["parameters"]["required"] == nlohmann::json{"a", "b"});
  const auto second = requests[1].json();
  REQUIRE(second["messages"].size() == 4);
  CHECK(second["messages"][2]["tool_calls"][0]["id"] == "call_a");
  CHECK(second["messages"][3]["role"] == "tool");
  CHECK(second["messages"][3]["tool_call_id"] == "call_a");
  CHECK(second["messages"][3]["content"] == "42.0");
}

TEST_CASE("the ReAct agent over HTTP in messages mode: streamed tool-call deltas and tokens") {
  sg::testing::LoopbackOpenAI server;
  server.push(sg::testing::LoopbackReply::sse(tool_call_chunks()));
  // Then the default echo assistant streams its answer word by word.
  sg::OpenAIConfig config;
  config.base_url = server.base_url();
  auto model = std::make_shared<sg::OpenAIChatModel>(config);
  auto agent = sg::create_react_agent(
      model, {sg::make_tool<HttpMulArgs>("multiply", "Multiplies.",
                                         [](const HttpMulArgs& x) { return x.a * x.b; })});
  std::string call_args;
  std::string tokens;
  std::vector<std::string> tool_messages;
  auto result = agent.stream(ask_http("multiply 3 and 5"), {}, sg::StreamMode::messages,
                             [&](const sg::StreamEvent<sg::AgentState>& e) {
                               for (const auto& c : e.message->tool_call_chunks)
                                 call_args += c.args;
                               if (e.complete && e.message->message.type == sg::MessageType::tool)
                                 tool_messages.push_back(e.message->message.text());
                               if (!e.complete && e.node == "agent")
                                 tokens += e.message->message.text();
                             });
  CHECK(call_args == "{\"a\": 3, \"b\": 5}");
  CHECK(tool_messages == std::vector<std::string>{"15.0"});
  REQUIRE(result.state.messages.size() == 4);
  CHECK(result.state.messages[1].tool_calls.at(0).args == nlohmann::json{{"a", 3}, {"b", 5}});
  CHECK(tokens == result.state.messages[3].text());
  CHECK(server.requests().at(0).json()["stream"] == true);
}

TEST_CASE("the ReAct agent when its model server resets or hangs: a clear error, then it resumes") {
  // Issue 18's fault injection: the model call fails mid-run (every attempt's connection reset,
  // or no answer within the timeout). The run ends with a ModelError, the thread keeps the
  // question and the tool results of the steps that finished, and a resume once the server works
  // continues from there: no step is repeated, nothing is lost.
  using sg::testing::LoopbackReply;
  sg::test::TempDir dir;
  sg::testing::LoopbackOpenAI server;
  sg::OpenAIConfig config;
  config.base_url = server.base_url();
  config.model = "loopback";
  config.max_retries = 1;
  config.total_timeout = std::chrono::milliseconds(400);
  auto model = std::make_shared<sg::OpenAIChatModel>(config);
  sg::ReactAgentOptions options;
  options.checkpointer = sg::RocksDbSaver::open(dir.sub("db"));
  auto agent = sg::create_react_agent(
      model,
      {sg::make_tool<HttpMulArgs>("multiply", "Multiplies.",
                                  [](const HttpMulArgs& x) { return x.a * x.b; })},
      options);
  sg::RunConfig config_t;
  config_t.thread_id = "t";
  // A node's failure is a NodeError naming the node; the model's error is its cause.
  const auto model_error_code = [&](const std::function<void()>& run) -> std::string {
    try {
      run();
    } catch (const sg::NodeError& e) {
      CHECK(e.node() == "agent");
      try {
        std::rethrow_exception(e.cause());
      } catch (const sg::ModelError& cause) {
        return cause.code();
      }
    }
    return "(no error)";
  };
  const auto texts = [&] {
    std::vector<std::string> out;
    const auto state = agent.get_state(config_t);
    for (const auto& m : state->values.messages) out.push_back(m.text());
    return out;
  };

  // The first model call answers with a tool call; the second's connections are reset.
  server.push(LoopbackReply::json(tool_call_completion()));
  server.push(LoopbackReply::dropped());
  server.push(LoopbackReply::dropped());
  CHECK(model_error_code([&] { (void)agent.invoke(ask_http("What is 6 times 7?"), config_t); }) ==
        sg::errc::kModelConnection);
  CHECK(server.request_count() == 3);
  CHECK(texts() == std::vector<std::string>{"What is 6 times 7?", "", "42.0"});
  CHECK(agent.get_state(config_t)->next == std::vector<std::string>{"agent"});

  // It hangs: no answer within total_timeout (a timeout is not retried).
  LoopbackReply hang = LoopbackReply::text("too late");
  hang.delay = std::chrono::seconds(3);
  server.push(hang);
  CHECK(model_error_code([&] { (void)agent.resume(config_t); }) == sg::errc::kModelTimeout);
  CHECK(texts() == std::vector<std::string>{"What is 6 times 7?", "", "42.0"});

  // The server works again: the run resumes at the model call, the tool does not run again.
  server.push(LoopbackReply::text("6 times 7 is 42."));
  const auto resumed = agent.resume(config_t);
  CHECK(texts() == std::vector<std::string>{"What is 6 times 7?", "", "42.0", "6 times 7 is 42."});
  CHECK(resumed.next.empty());
  CHECK(server.request_count() == 5);
}
