// SPDX-License-Identifier: MIT
// AnthropicChatModel against a real HTTP server on 127.0.0.1 (the loopback Anthropic server of
// tests/support, which checks requests as the API does), and its wire format on its own.
#include <stategraph/core/async.hpp>
#include <stategraph/models/anthropic.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/openai.hpp>
#include <stategraph/models/react_agent.hpp>
#include <stategraph/stategraph.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "anthropic_wire.hpp"
#include "support/loopback_anthropic.hpp"
#include "support/loopback_openai.hpp"
#include "support/recording_callbacks.hpp"

// g++ 12 wrongly reports awaitable frames freed by the frame's own operator delete as mismatched
// (GCC bug 109224; seen in sanitizer builds).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

// The helpers and the cases in a named namespace: the suite compiles in unity batches, whose
// anonymous namespaces are shared.
namespace anthropic_tests {

namespace net = boost::asio;
using namespace std::chrono_literals;
using nlohmann::json;
using sg::testing::anthropic_error;
using sg::testing::anthropic_json;
using sg::testing::anthropic_message;
using sg::testing::anthropic_sse;
using sg::testing::anthropic_stream_events;
using sg::testing::LoopbackAnthropic;
using sg::testing::LoopbackReply;
using Clock = std::chrono::steady_clock;

sg::AnthropicConfig config_for(const LoopbackAnthropic& server) {
  sg::AnthropicConfig config;
  config.base_url = server.base_url();
  config.api_key = "test-key";
  config.model = "claude-test";
  config.backoff_initial = 10ms;
  config.backoff_max = 40ms;
  return config;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Runs `f`, which must throw sg::ModelError, and returns it.
template <class F>
sg::ModelError model_error(F&& f) {
  try {
    f();
  } catch (const sg::ModelError& e) {
    return e;
  }
  FAIL("no ModelError was thrown");
  return sg::ModelError("none", "none");
}

/// Runs `f`, which must throw sg::Error, and returns its message.
template <class F>
std::string error_text(F&& f) {
  try {
    f();
  } catch (const sg::Error& e) {
    CHECK(std::string(e.code()) == std::string(sg::errc::kInvalidArgument));
    return e.what();
  }
  FAIL("no sg::Error was thrown");
  return {};
}

int threads_now() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

sg::ToolSpec weather_tool() {
  return {"get_weather",
          "The weather in a city.",
          {{"type", "object"},
           {"properties", {{"city", {{"type", "string"}}}}},
           {"required", {"city"}}}};
}

sg::ToolSpec time_tool() {
  return {"get_time", "The time in a zone.", {{"properties", {{"tz", {{"type", "string"}}}}}}};
}

/// A reply with text, two parallel tool_use blocks and the usage of a cache read and write.
json parallel_tool_message() {
  return anthropic_message("msg_parallel",
                           {{{"type", "text"}, {"text", "Let me check both."}},
                            {{"type", "tool_use"},
                             {"id", "toolu_a"},
                             {"name", "get_weather"},
                             {"input", {{"city", "Paris"}}}},
                            {{"type", "tool_use"},
                             {"id", "toolu_b"},
                             {"name", "get_time"},
                             {"input", {{"tz", "Europe/Paris"}}}}},
                           "tool_use",
                           {{"input_tokens", 12},
                            {"cache_creation_input_tokens", 100},
                            {"cache_read_input_tokens", 2000},
                            {"output_tokens", 30}},
                           "claude-test");
}

/// A reply that thought first (with a signature), then called a tool.
json thinking_message() {
  return anthropic_message("msg_thinking",
                           {{{"type", "thinking"},
                             {"thinking", "The user wants Paris weather; I should call the tool."},
                             {"signature", "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"}},
                            {{"type", "redacted_thinking"}, {"data", "EmwKAhgBEgy3va3pzix"}},
                            {{"type", "tool_use"},
                             {"id", "toolu_t"},
                             {"name", "get_weather"},
                             {"input", {{"city", "Paris"}}}}},
                           "tool_use", {{"input_tokens", 50}, {"output_tokens", 80}},
                           "claude-test");
}

/// A reply that used the web search server tool, as the API gives it: text, the server tool's
/// call (server_tool_use), its result (web_search_tool_result) and a text citing the result.
json web_search_message() {
  return anthropic_message("msg_search", json::parse(R"([
    {"type": "text", "text": "Let me search for that."},
    {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search",
     "input": {"query": "Paris weather today"}, "caller": {"type": "direct"}},
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": [
      {"type": "web_search_result", "url": "https://weather.example/paris",
       "title": "Paris: sunny, 21 C", "encrypted_content": "EqgfCioIARgBIiQ3YTI2",
       "page_age": "1 hour ago"}]},
    {"type": "text", "text": "It is sunny in Paris.", "citations": [
      {"type": "web_search_result_location", "url": "https://weather.example/paris",
       "title": "Paris: sunny, 21 C", "encrypted_index": "Eo8BCioIAhgBIiQy",
       "cited_text": "Sunny, 21 C"}]}])"),
                           "end_turn",
                           {{"input_tokens", 2100},
                            {"output_tokens", 60},
                            {"server_tool_use", {{"web_search_requests", 1}}}},
                           "claude-test");
}

/// The conversation both providers get in the tests below.
std::vector<sg::Message> shared_conversation() {
  sg::Message call =
      sg::ai("Let me check.", {sg::ToolCall{"toolu_1", "get_weather", {{"city", "Paris"}}},
                               sg::ToolCall{"toolu_2", "get_time", {{"tz", "CET"}}}});
  sg::Message failed = sg::tool("unknown zone", "toolu_2");
  failed.status = "error";
  return {
      sg::system("You are terse."),
      sg::human("What is the weather in Paris?"),
      sg::human(sg::Content::Blocks{
          {{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,iVBORw0KGgo="}}}},
          json("and in this picture?")}),
      call,
      sg::tool("18 C", "toolu_1"),
      failed,
      sg::ai("It is 18 C."),
      sg::human("Thanks")};
}

/// Request bodies kept for the SDK type check (SG_ANTHROPIC_BODIES_TS).
std::vector<json>& sent_bodies() {
  static std::vector<json> bodies;
  return bodies;
}

TEST_CASE(
    "anthropic: messages map to the Messages API: system on top, turns merged, tool results") {
  const sg::AnthropicConfig config;
  const json body = sg::detail::messages_request_body(config, shared_conversation(), {}, false);
  CHECK(body == json::parse(R"({
    "model": "claude-sonnet-4-5", "max_tokens": 4096, "system": "You are terse.",
    "messages": [
      {"role": "user", "content": [
        {"type": "text", "text": "What is the weather in Paris?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": "iVBORw0KGgo="}},
        {"type": "text", "text": "and in this picture?"}]},
      {"role": "assistant", "content": [
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {"tz": "CET"}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18 C"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "unknown zone",
         "is_error": true}]},
      {"role": "assistant", "content": "It is 18 C."},
      {"role": "user", "content": "Thanks"}]})"));

  // Options: tools (a schema without a type gets "object"), each tool_choice, temperature,
  // max_tokens, stop sequences, stream.
  sg::ChatOptions options;
  options.tools = {weather_tool(), time_tool()};
  options.temperature = 0.25;
  options.max_tokens = 300;
  options.stop = {"END"};
  const std::vector<sg::Message> one = {sg::human("hi")};
  json b = sg::detail::messages_request_body(config, one, options, true);
  CHECK(b["max_tokens"] == 300);
  CHECK(b["temperature"] == 0.25);
  CHECK(b["stop_sequences"] == json::array({"END"}));
  CHECK(b["stream"] == true);
  CHECK(b["tools"] == json::parse(R"([
    {"name": "get_weather", "description": "The weather in a city.",
     "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                      "required": ["city"]}},
    {"name": "get_time", "description": "The time in a zone.",
     "input_schema": {"type": "object", "properties": {"tz": {"type": "string"}}}}])"));
  CHECK_FALSE(b.contains("tool_choice"));
  for (const auto& [choice, expected] : std::vector<std::pair<std::string, json>>{
           {"auto", {{"type", "auto"}}},
           {"required", {{"type", "any"}}},
           {"none", {{"type", "none"}}},
           {"get_time", {{"type", "tool"}, {"name", "get_time"}}}}) {
    options.tool_choice = choice;
    CAPTURE(choice);
    CHECK(sg::detail::messages_request_body(config, one, options, false)["tool_choice"] ==
          expected);
  }
}

TEST_CASE("anthropic: images in LangChain's and OpenAI's forms become image blocks") {
  const std::vector<sg::Message> images = {sg::human(sg::Content::Blocks{
      {{"type", "image"}, {"base64", "AAAA"}, {"mime_type", "image/jpeg"}},
      {{"type", "image"}, {"source_type", "base64"}, {"data", "BBBB"}, {"mime_type", "image/gif"}},
      {{"type", "image"}, {"url", "https://example.test/a.png"}},
      {{"type", "image"}, {"source_type", "url"}, {"url", "http://example.test/b.png"}},
      {{"type", "image_url"}, {"image_url", "https://example.test/c.webp"}},
      {{"type", "image"},
       {"source", {{"type", "base64"}, {"media_type", "image/webp"}, {"data", "CCCC"}}}}})};
  const json body = sg::detail::messages_request_body({}, images, {}, false);
  CHECK(body["messages"][0]["content"] == json::parse(R"([
    {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "AAAA"}},
    {"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": "BBBB"}},
    {"type": "image", "source": {"type": "url", "url": "https://example.test/a.png"}},
    {"type": "image", "source": {"type": "url", "url": "http://example.test/b.png"}},
    {"type": "image", "source": {"type": "url", "url": "https://example.test/c.webp"}},
    {"type": "image", "source": {"type": "base64", "media_type": "image/webp", "data": "CCCC"}}
  ])"));
  // A tool result keeps its text and image blocks.
  const std::vector<sg::Message> with_result = {
      sg::human("draw"), sg::ai("", {sg::ToolCall{"toolu_d", "draw", json::object()}}),
      sg::tool(sg::Content::Blocks{json("a square:"),
                                   {{"type", "image_url"},
                                    {"image_url", {{"url", "data:image/png;base64,DDDD"}}}}},
               "toolu_d")};
  CHECK(
      sg::detail::messages_request_body({}, with_result, {}, false)["messages"][2] ==
      json::parse(R"({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_d",
          "content": [{"type": "text", "text": "a square:"},
                      {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                   "data": "DDDD"}}]}]})"));
}

TEST_CASE("anthropic: messages the API cannot take are clear errors naming the message") {
  const sg::AnthropicConfig config;
  auto body_of = [&](std::vector<sg::Message> messages, sg::ChatOptions options = {}) {
    return sg::detail::messages_request_body(config, messages, options, false);
  };
  std::string text = error_text([&] { (void)body_of({sg::human("a"), sg::system("late")}); });
  CHECK(text.find("message 1") != std::string::npos);
  CHECK(text.find("system message") != std::string::npos);
  text = error_text([&] { (void)body_of({sg::human("a"), sg::remove_message("x")}); });
  CHECK(text.find("RemoveMessage") != std::string::npos);
  text = error_text([&] {
    (void)body_of({sg::human(sg::Content::Blocks{
        {{"type", "image_url"}, {"image_url", {{"url", "file:///etc/passwd"}}}}})});
  });
  CHECK(text.find("message 0") != std::string::npos);
  CHECK(text.find("neither a data URL nor an http(s) URL") != std::string::npos);
  text = error_text([&] {
    (void)body_of({sg::human(sg::Content::Blocks{
        {{"type", "image_url"}, {"image_url", {{"url", "data:image/png,rawbytes"}}}}})});
  });
  CHECK(text.find("base64") != std::string::npos);
  text = error_text([&] { (void)body_of({sg::human("a"), sg::tool("r", "")}); });
  CHECK(text.find("tool_call_id") != std::string::npos);
  text = error_text([&] {
    (void)body_of(
        {sg::system(sg::Content::Blocks{{{"type", "image"}, {"url", "https://x.test/a.png"}}}),
         sg::human("a")});
  });
  CHECK(text.find("text blocks only") != std::string::npos);
  sg::ChatOptions format;
  format.response_format = sg::ResponseFormat{"items", {{"type", "array"}}, true};
  text = error_text([&] { (void)body_of({sg::human("a")}, format); });
  CHECK(text.find("object schema") != std::string::npos);
  format.response_format = sg::ResponseFormat{"get_weather", {{"type", "object"}}, true};
  format.tools = {weather_tool()};
  text = error_text([&] { (void)body_of({sg::human("a")}, format); });
  CHECK(text.find("also a tool's") != std::string::npos);
  sg::AnthropicConfig thinking;
  thinking.thinking_budget = 2000;
  sg::ChatOptions small;
  small.max_tokens = 1500;
  text = error_text(
      [&] { (void)sg::detail::messages_request_body(thinking, {sg::human("a")}, small, false); });
  CHECK(text.find("thinking_budget") != std::string::npos);
}

TEST_CASE("anthropic: cache_control on a block or a message marks prompt-caching breakpoints") {
  const json ephemeral = {{"type", "ephemeral"}};
  sg::Message cached_human = sg::human("A long document ...");
  cached_human.additional_kwargs = {{"cache_control", ephemeral}};
  sg::Message cached_system = sg::system("Long instructions.");
  cached_system.additional_kwargs = {{"cache_control", {{"type", "ephemeral"}, {"ttl", "1h"}}}};
  sg::Message cached_tool = sg::tool("big result", "toolu_c");
  cached_tool.additional_kwargs = {{"cache_control", ephemeral}};
  const std::vector<sg::Message> messages = {
      cached_system,
      sg::human(sg::Content::Blocks{
          {{"type", "text"}, {"text", "block one"}, {"cache_control", ephemeral}},
          json("block two")}),
      sg::ai("", {sg::ToolCall{"toolu_c", "fetch", json::object()}}), cached_tool, cached_human};
  const json body = sg::detail::messages_request_body({}, messages, {}, false);
  CHECK(body["system"] == json::parse(R"([{"type": "text", "text": "Long instructions.",
                                           "cache_control": {"type": "ephemeral", "ttl": "1h"}}])"));
  CHECK(body["messages"][0]["content"] == json::parse(R"([
    {"type": "text", "text": "block one", "cache_control": {"type": "ephemeral"}},
    {"type": "text", "text": "block two"}])"));
  CHECK(body["messages"][2]["content"] == json::parse(R"([
    {"type": "tool_result", "tool_use_id": "toolu_c", "content": "big result",
     "cache_control": {"type": "ephemeral"}},
    {"type": "text", "text": "A long document ...", "cache_control": {"type": "ephemeral"}}])"));
}

TEST_CASE("anthropic: replies become LangChain's ai messages: text, blocks, tool calls, usage") {
  const sg::Message text = sg::detail::parse_anthropic_message(
      anthropic_message("msg_1", {{{"type", "text"}, {"text", "Hello!"}, {"citations", nullptr}}},
                        "end_turn", {{"input_tokens", 10}, {"output_tokens", 3}}, "claude-x"),
      "");
  CHECK(text.content == sg::Content("Hello!"));
  CHECK(text.id == "msg_1");
  CHECK(text.usage_metadata ==
        json({{"input_tokens", 10}, {"output_tokens", 3}, {"total_tokens", 13}}));
  CHECK(text.response_metadata == json({{"model_name", "claude-x"},
                                        {"model", "claude-x"},
                                        {"stop_reason", "end_turn"},
                                        {"finish_reason", "end_turn"}}));

  const sg::Message tools = sg::detail::parse_anthropic_message(parallel_tool_message(), "");
  REQUIRE(tools.content.is_blocks());
  CHECK(tools.content.blocks().size() == 3);
  CHECK(tools.text() == "Let me check both.");
  REQUIRE(tools.tool_calls.size() == 2);
  CHECK(tools.tool_calls[0] == sg::ToolCall{"toolu_a", "get_weather", {{"city", "Paris"}}});
  CHECK(tools.tool_calls[1] == sg::ToolCall{"toolu_b", "get_time", {{"tz", "Europe/Paris"}}});
  // LangChain's usage: input_tokens counts the cached tokens too.
  CHECK(tools.usage_metadata == json::parse(R"({"input_tokens": 2112, "output_tokens": 30,
    "total_tokens": 2142, "input_token_details": {"cache_read": 2000, "cache_creation": 100}})"));

  const sg::Message thought = sg::detail::parse_anthropic_message(thinking_message(), "");
  REQUIRE(thought.content.is_blocks());
  CHECK(thought.content.blocks()[0] ==
        json({{"type", "thinking"},
              {"thinking", "The user wants Paris weather; I should call the tool."},
              {"signature", "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"}}));
  CHECK(thought.content.blocks()[1] ==
        json({{"type", "redacted_thinking"}, {"data", "EmwKAhgBEgy3va3pzix"}}));
  CHECK(thought.tool_calls.size() == 1);

  // The TTL split of a cache write, as LangChain reports it.
  const json usage = sg::detail::anthropic_usage_metadata(
      {{"input_tokens", 5},
       {"cache_creation_input_tokens", 30},
       {"cache_read_input_tokens", 0},
       {"cache_creation", {{"ephemeral_5m_input_tokens", 10}, {"ephemeral_1h_input_tokens", 20}}},
       {"output_tokens", 1}});
  CHECK(usage["input_tokens"] == 35);
  CHECK(usage["input_token_details"] == json({{"cache_read", 0},
                                              {"cache_creation", 30},
                                              {"ephemeral_5m_input_tokens", 10},
                                              {"ephemeral_1h_input_tokens", 20}}));

  CHECK_THROWS_AS((void)sg::detail::parse_anthropic_message(json::array(), ""), sg::ModelError);
  CHECK_THROWS_AS((void)sg::detail::parse_anthropic_message({{"id", "x"}}, ""), sg::ModelError);
  CHECK_THROWS_AS(
      (void)sg::detail::parse_anthropic_message(
          {{"type", "error"}, {"error", {{"type", "api_error"}, {"message", "x"}}}}, ""),
      sg::ModelError);
}

TEST_CASE("anthropic: the stream accumulator gives the reply the JSON message gives") {
  for (const json& message :
       {parallel_tool_message(), thinking_message(),
        anthropic_message("msg_t", {{{"type", "text"}, {"text", "Bonjour, ça va ? Très bien."}}},
                          "end_turn", {{"input_tokens", 3}, {"output_tokens", 7}})}) {
    for (const bool blocks : {false, true}) {
      CAPTURE(message.dump());
      CAPTURE(blocks);
      sg::detail::AnthropicStreamAccumulator accumulator("", blocks);
      std::vector<sg::MessageChunk> chunks;
      for (const json& event : anthropic_stream_events(message, 3)) {
        if (auto chunk = accumulator.add(event)) chunks.push_back(std::move(*chunk));
      }
      CHECK(accumulator.finished());
      const sg::Message expected = sg::detail::parse_anthropic_message(message, "");
      CHECK(accumulator.result() == expected);
      // Every chunk carries the reply's id; the text and the tool-call fragments add up.
      std::string text;
      std::map<int, std::string> args;
      for (const auto& c : chunks) {
        CHECK(c.message.id == message["id"]);
        text += c.message.text();
        for (const auto& t : c.tool_call_chunks) args[t.index] += t.args;
        if (!blocks && c.message.content.is_blocks()) {  // only thinking goes as blocks then
          for (const auto& b : c.message.content.blocks()) CHECK(b["type"] != "text");
        }
      }
      CHECK(text == expected.text());
      for (std::size_t i = 0; i < expected.tool_calls.size(); ++i) {
        const int index = static_cast<int>(i) + (message["id"] == "msg_thinking" ? 2 : 1);
        CHECK(json::parse(args[index]) == expected.tool_calls[i].args);
      }
      // The last chunk has the stop reason and the whole usage.
      CHECK(chunks.back().message.response_metadata["stop_reason"] == message["stop_reason"]);
      CHECK(chunks.back().message.usage_metadata == expected.usage_metadata);
    }
  }
}

TEST_CASE("anthropic: streamed tool input split anywhere, and input that is not JSON") {
  // The documented tool-use stream, its input in uneven fragments (an empty one first).
  const std::vector<json> events = {
      json::parse(R"({"type": "message_start", "message": {"id": "msg_s", "type": "message",
        "role": "assistant", "content": [], "model": "claude-test", "stop_reason": null,
        "stop_sequence": null, "usage": {"input_tokens": 472, "output_tokens": 2}}})"),
      json::parse(R"({"type": "content_block_start", "index": 0,
        "content_block": {"type": "text", "text": ""}})"),
      json::parse(R"({"type": "content_block_delta", "index": 0,
        "delta": {"type": "text_delta", "text": "Okay, let me check"}})"),
      json::parse(R"({"type": "content_block_stop", "index": 0})"),
      json::parse(R"({"type": "content_block_start", "index": 1, "content_block":
        {"type": "tool_use", "id": "toolu_01T1", "name": "get_weather", "input": {}}})"),
      json::parse(R"({"type": "content_block_delta", "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": ""}})"),
      json::parse(R"({"type": "content_block_delta", "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": "{\"location\":"}})"),
      json::parse(R"({"type": "content_block_delta", "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": " \"San Fra"}})"),
      json::parse(R"({"type": "content_block_delta", "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": "ncisco, CA\"}"}})"),
      json::parse(R"({"type": "content_block_stop", "index": 1})"),
      json::parse(R"({"type": "content_block_start", "index": 2, "content_block":
        {"type": "tool_use", "id": "toolu_02", "name": "search", "input": {}}})"),
      json::parse(R"({"type": "content_block_delta", "index": 2,
        "delta": {"type": "input_json_delta", "partial_json": "{\"q\": \"x\""}})"),
      json::parse(R"({"type": "content_block_stop", "index": 2})"),
      json::parse(R"({"type": "message_delta", "delta": {"stop_reason": "tool_use",
        "stop_sequence": null}, "usage": {"output_tokens": 89}})"),
      json::parse(R"({"type": "message_stop"})")};
  sg::detail::AnthropicStreamAccumulator accumulator("", true);
  std::vector<sg::MessageChunk> chunks;
  for (const auto& e : events) {
    if (auto c = accumulator.add(e)) chunks.push_back(*c);
  }
  REQUIRE(chunks.size() == 8);
  CHECK(chunks[0].message.content ==
        sg::Content(
            sg::Content::Blocks{{{"type", "text"}, {"text", "Okay, let me check"}, {"index", 0}}}));
  CHECK(chunks[1].tool_call_chunks ==
        std::vector<sg::ToolCallChunk>{{"toolu_01T1", "get_weather", "", 1}});
  CHECK(chunks[2].tool_call_chunks ==
        std::vector<sg::ToolCallChunk>{{"", "", "{\"location\":", 1}});
  CHECK(chunks[7].message.usage_metadata ==
        json({{"input_tokens", 472}, {"output_tokens", 89}, {"total_tokens", 561}}));
  const sg::Message reply = accumulator.result();
  REQUIRE(reply.tool_calls.size() == 1);
  CHECK(reply.tool_calls[0].args == json({{"location", "San Francisco, CA"}}));
  REQUIRE(reply.invalid_tool_calls.size() == 1);
  CHECK(reply.invalid_tool_calls[0].id == "toolu_02");
  CHECK(reply.invalid_tool_calls[0].args == "{\"q\": \"x\"");
  CHECK(reply.invalid_tool_calls[0].error.find("not valid JSON") != std::string::npos);
  // Sent back, the invalid call is left out (no input the API would take), the valid one kept.
  const json back = sg::detail::messages_request_body({}, {sg::human("q"), reply}, {}, false);
  CHECK(back["messages"][1]["content"] == json::parse(R"([
    {"type": "text", "text": "Okay, let me check"},
    {"type": "tool_use", "id": "toolu_01T1", "name": "get_weather",
     "input": {"location": "San Francisco, CA"}}])"));

  // Events out of order or malformed are invalid responses; an error event has its status.
  auto fails_with = [](std::vector<json> list) {
    sg::detail::AnthropicStreamAccumulator a("", false);
    try {
      for (const auto& e : list) (void)a.add(e);
    } catch (const sg::ModelError& e) {
      return std::string(e.code()) + " " + std::to_string(e.http_status()) + " " + e.what();
    }
    return std::string("no error");
  };
  CHECK(fails_with({events[1]}).rfind("model.invalid_response", 0) == 0);
  CHECK(fails_with({events[0], events[2]}).find("did not start") != std::string::npos);
  CHECK(fails_with({events[0], json::parse(R"({"index": 0})")}).find("without a type") !=
        std::string::npos);
  CHECK(fails_with({events[0], json::parse(R"({"type": "error", "error": {"type":
        "overloaded_error", "message": "Overloaded"}})")}) ==
        "model.http_status 529 messages: the stream reported an error: overloaded_error: "
        "Overloaded");
  // Unknown events and deltas are skipped, as the API asks clients to.
  CHECK(fails_with({events[0], json::parse(R"({"type": "future_event", "x": 1})"), events[1],
                    json::parse(R"({"type": "content_block_delta", "index": 0,
                                    "delta": {"type": "future_delta"}})")}) == "no error");
}

TEST_CASE("anthropic: a plain reply over HTTP: content, id, usage, metadata, headers, path") {
  LoopbackAnthropic server;
  sg::AnthropicConfig config = config_for(server);
  config.headers = {{"anthropic-beta", "token-efficient-tools-2025-02-19"}};
  const sg::AnthropicChatModel model(config);
  CHECK(model.provider() == "anthropic");
  CHECK(model.model_name() == "claude-test");
  const sg::Message reply = model.invoke({sg::system("Be brief."), sg::human("hello there")});
  CHECK(reply.type == sg::MessageType::ai);
  CHECK(reply.content == sg::Content("echo: hello there"));
  CHECK(reply.id == "msg_loopback_1");
  CHECK(reply.usage_metadata["input_tokens"] == 4);
  CHECK(reply.usage_metadata["output_tokens"] == 3);
  CHECK(reply.response_metadata["model_name"] == "claude-test");
  CHECK(reply.response_metadata["finish_reason"] == "end_turn");
  const auto request = server.requests().at(0);
  CHECK(request.method == "POST");
  CHECK(request.target == "/v1/messages");
  CHECK(request.header("x-api-key") == "test-key");
  CHECK(request.header("anthropic-version") == "2023-06-01");
  CHECK(request.header("anthropic-beta") == "token-efficient-tools-2025-02-19");
  CHECK(request.header("content-type") == "application/json");
  CHECK(request.header("authorization").empty());
  CHECK(request.json() == json::parse(R"({"model": "claude-test", "max_tokens": 4096,
    "system": "Be brief.", "messages": [{"role": "user", "content": "hello there"}]})"));
  sent_bodies().push_back(request.json());

  // A base URL that already ends with /v1 is not given a second one.
  config.base_url = server.base_url() + "/v1/";
  (void)sg::AnthropicChatModel(config).invoke({sg::human("again")});
  CHECK(server.requests().at(1).target == "/v1/messages");
}

TEST_CASE("anthropic: a tool-use round trip with parallel calls, checked by the server") {
  LoopbackAnthropic server;
  server.push(anthropic_json(parallel_tool_message()));
  const sg::AnthropicChatModel model(config_for(server));
  sg::ChatOptions options;
  options.tools = {weather_tool(), time_tool()};
  options.tool_choice = "required";
  std::vector<sg::Message> conversation = {sg::human("Weather and time in Paris?")};
  const sg::Message calls = model.invoke(conversation, options);
  REQUIRE(calls.tool_calls.size() == 2);
  conversation.push_back(calls);
  conversation.push_back(sg::tool("18 C and sunny", calls.tool_calls[0].id));
  conversation.push_back(sg::tool("14:05", calls.tool_calls[1].id));
  const sg::Message answer = model.invoke(conversation, options);
  CHECK(answer.text() == "the tools said: 18 C and sunny 14:05");  // the server accepted it
  const json second = server.requests().at(1).json();
  CHECK(second["tool_choice"] == json({{"type", "any"}}));
  CHECK(second["messages"] == json::parse(R"([
    {"role": "user", "content": "Weather and time in Paris?"},
    {"role": "assistant", "content": [
      {"type": "text", "text": "Let me check both."},
      {"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {"city": "Paris"}},
      {"type": "tool_use", "id": "toolu_b", "name": "get_time", "input": {"tz": "Europe/Paris"}}]},
    {"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "toolu_a", "content": "18 C and sunny"},
      {"type": "tool_result", "tool_use_id": "toolu_b", "content": "14:05"}]}])"));
  for (const auto& r : server.requests()) sent_bodies().push_back(r.json());

  // A tool result without its tool_use is refused by the server: the mapping did not hide it.
  conversation.erase(conversation.begin() + 1);
  conversation.pop_back();
  const sg::ModelError e = model_error([&] { (void)model.invoke(conversation, options); });
  CHECK(e.http_status() == 400);
  CHECK(std::string(e.what()).find("invalid_request_error: messages.") != std::string::npos);
}

TEST_CASE("anthropic: streaming: chunks as they arrive, split across reads, equal to the JSON") {
  LoopbackAnthropic server;
  const sg::AnthropicChatModel model(config_for(server));
  sg::ChatOptions options;
  options.tools = {weather_tool(), time_tool()};
  const json message = parallel_tool_message();
  // The event stream cut into 7-byte pieces, each its own HTTP chunk, with a pause between.
  std::string wire;
  for (const auto& c : anthropic_sse(anthropic_stream_events(message)).chunks) wire += c;
  std::vector<std::string> pieces;
  for (std::size_t i = 0; i < wire.size(); i += 7) pieces.push_back(wire.substr(i, 7));
  LoopbackReply split = LoopbackReply::raw_stream(pieces);
  split.gap = 1ms;
  server.push(split);
  server.push(anthropic_json(message));
  std::vector<sg::MessageChunk> chunks;
  const sg::Message streamed = model.stream(
      {sg::human("both?")}, options, [&](const sg::MessageChunk& c) { chunks.push_back(c); });
  const sg::Message whole = model.invoke({sg::human("both?")}, options);
  CHECK(streamed == whole);
  CHECK(server.requests().at(0).json()["stream"] == true);
  CHECK(server.requests().at(0).header("accept") == "text/event-stream");
  sent_bodies().push_back(server.requests().at(0).json());
  // With tools, text chunks are blocks with their index (as LangChain's); tool calls stream as
  // tool-call chunks by content block index.
  std::map<int, std::string> args;
  std::map<int, std::string> names;
  std::string text;
  for (const auto& c : chunks) {
    CHECK(c.message.id == "msg_parallel");
    text += c.message.text();
    for (const auto& t : c.tool_call_chunks) {
      args[t.index] += t.args;
      names[t.index] += t.name;
    }
  }
  CHECK(text == "Let me check both.");
  CHECK(names == std::map<int, std::string>{{1, "get_weather"}, {2, "get_time"}});
  CHECK(json::parse(args[1]) == json({{"city", "Paris"}}));
  CHECK(json::parse(args[2]) == json({{"tz", "Europe/Paris"}}));
  CHECK(chunks.size() > 10);

  // Without tools, the default echo streams its text as strings.
  std::string echoed;
  const sg::Message echo =
      model.stream({sg::human("one two three")}, {}, [&](const sg::MessageChunk& c) {
        CHECK(c.message.content.is_string());
        echoed += c.message.text();
      });
  CHECK(echoed == "echo: one two three");
  CHECK(echo.content == sg::Content("echo: one two three"));
}

TEST_CASE("anthropic: extended thinking is kept as blocks and sent back with its signature") {
  LoopbackAnthropic server;
  sg::AnthropicConfig config = config_for(server);
  config.thinking_budget = 2048;
  config.max_tokens = 8000;
  const sg::AnthropicChatModel model(config);
  server.push(anthropic_sse(anthropic_stream_events(thinking_message(), 5)));
  sg::ChatOptions options;
  options.tools = {weather_tool()};
  std::vector<sg::Message> conversation = {sg::human("Weather in Paris?")};
  std::string thinking;
  std::string signature;
  const sg::Message reply = model.stream(conversation, options, [&](const sg::MessageChunk& c) {
    if (!c.message.content.is_blocks()) return;
    for (const auto& b : c.message.content.blocks()) {
      if (b["type"] != "thinking") continue;
      thinking += b.value("thinking", "");
      signature += b.value("signature", "");
      CHECK(b["index"] == 0);
    }
  });
  CHECK(thinking == "The user wants Paris weather; I should call the tool.");
  CHECK(signature == "EqQBCgIYAhIM1gbcDa9GJwZA2b3h");
  CHECK(reply == sg::detail::parse_anthropic_message(thinking_message(), ""));
  const json first = server.requests().at(0).json();
  CHECK(first["thinking"] == json({{"type", "enabled"}, {"budget_tokens", 2048}}));
  CHECK(first["max_tokens"] == 8000);

  conversation.push_back(reply);
  conversation.push_back(sg::tool("18 C", "toolu_t"));
  const sg::Message answer = model.invoke(conversation, options);  // the server checks signatures
  CHECK(answer.text() == "the tools said: 18 C");
  const json second = server.requests().at(1).json();
  CHECK(second["messages"][1]["content"] == json::parse(R"([
    {"type": "thinking", "thinking": "The user wants Paris weather; I should call the tool.",
     "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"},
    {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
    {"type": "tool_use", "id": "toolu_t", "name": "get_weather", "input": {"city": "Paris"}}])"));
  sent_bodies().push_back(first);
  sent_bodies().push_back(second);
}

TEST_CASE("anthropic: cache_control reaches the server and usage reports cache reads and writes") {
  LoopbackAnthropic server;
  const sg::AnthropicChatModel model(config_for(server));
  const json usage = {{"input_tokens", 20},
                      {"cache_creation_input_tokens", 1500},
                      {"cache_read_input_tokens", 0},
                      {"output_tokens", 5}};
  const json read_usage = {{"input_tokens", 22},
                           {"cache_creation_input_tokens", 0},
                           {"cache_read_input_tokens", 1500},
                           {"output_tokens", 6}};
  server.push(anthropic_json(anthropic_message(
      "msg_c1", {{{"type", "text"}, {"text", "Summary one."}}}, "end_turn", usage)));
  server.push(anthropic_sse(anthropic_stream_events(anthropic_message(
      "msg_c2", {{{"type", "text"}, {"text", "Summary two."}}}, "end_turn", read_usage))));
  sg::Message document = sg::system("A very long reference document ...");
  document.additional_kwargs = {{"cache_control", {{"type", "ephemeral"}}}};
  const std::vector<sg::Message> conversation = {document, sg::human("Summarize it.")};
  const sg::Message written = model.invoke(conversation);
  CHECK(written.usage_metadata == json::parse(R"({"input_tokens": 1520, "output_tokens": 5,
    "total_tokens": 1525, "input_token_details": {"cache_read": 0, "cache_creation": 1500}})"));
  const sg::Message read = model.stream(conversation, {}, [](const sg::MessageChunk&) {});
  CHECK(read.usage_metadata == json::parse(R"({"input_tokens": 1522, "output_tokens": 6,
    "total_tokens": 1528, "input_token_details": {"cache_read": 1500, "cache_creation": 0}})"));
  for (const auto& r : server.requests()) {
    CHECK(r.json()["system"] == json::parse(R"([{"type": "text",
      "text": "A very long reference document ...", "cache_control": {"type": "ephemeral"}}])"));
    sent_bodies().push_back(r.json());
  }
}

TEST_CASE("anthropic: retries follow retry-after on 429, 529 and overloaded_error") {
  LoopbackAnthropic server;
  server.push(anthropic_error(429, "rate_limit_error",
                              "Number of requests has exceeded your rate limit",
                              {{"retry-after", "1"}}));
  server.push(anthropic_error(529, "overloaded_error", "Overloaded", {{"retry-after-ms", "30"}}));
  const sg::AnthropicChatModel model(config_for(server));
  const auto start = Clock::now();
  const sg::Message reply = model.invoke({sg::human("again")});
  const double waited = seconds_since(start);
  CHECK(reply.text() == "echo: again");
  CHECK(server.request_count() == 3);
  CHECK(waited >= 0.9);
  CHECK(waited < 5.0);

  // overloaded_error as the stream's first event (nothing delivered yet): retried.
  server.push(anthropic_sse({json::parse(R"({"type": "message_start", "message": {"id": "msg_o",
      "type": "message", "role": "assistant", "content": [], "model": "claude-test",
      "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 1}}})"),
                             json::parse(R"({"type": "error", "error": {"type": "overloaded_error",
      "message": "Overloaded"}})")}));
  std::string text;
  const sg::Message streamed = model.stream(
      {sg::human("stream it")}, {}, [&](const sg::MessageChunk& c) { text += c.message.text(); });
  CHECK(streamed.text() == "echo: stream it");
  CHECK(text == "echo: stream it");
  CHECK(server.request_count() == 5);

  // An overloaded_error body with another status is retried too; a 400 is not.
  server.push(anthropic_error(503, "overloaded_error", "Overloaded"));
  server.push(anthropic_error(400, "invalid_request_error", "max_tokens: too large"));
  const sg::ModelError e = model_error([&] { (void)model.invoke({sg::human("x")}); });
  CHECK(e.code() == sg::errc::kModelHttpStatus);
  CHECK(e.http_status() == 400);
  CHECK(std::string(e.what()).find("invalid_request_error: max_tokens: too large") !=
        std::string::npos);
  CHECK(json::parse(e.body_excerpt())["error"]["type"] == "invalid_request_error");
  CHECK(server.request_count() == 7);
}

TEST_CASE("anthropic: errors are ModelError with the status, mid-stream errors are not retried") {
  LoopbackAnthropic server;
  sg::AnthropicConfig config = config_for(server);
  config.max_retries = 1;
  const sg::AnthropicChatModel model(config);
  server.push(anthropic_error(401, "authentication_error", "invalid x-api-key"));
  sg::ModelError e = model_error([&] { (void)model.invoke({sg::human("hi")}); });
  CHECK(e.code() == sg::errc::kModelHttpStatus);
  CHECK(e.http_status() == 401);
  CHECK(std::string(e.what()).find("authentication_error: invalid x-api-key") != std::string::npos);
  CHECK(server.request_count() == 1);

  // The retries exhausted: the last error.
  server.push(anthropic_error(529, "overloaded_error", "Overloaded 1"));
  server.push(anthropic_error(529, "overloaded_error", "Overloaded 2"));
  e = model_error([&] { (void)model.invoke({sg::human("hi")}); });
  CHECK(e.http_status() == 529);
  CHECK(std::string(e.what()).find("Overloaded 2") != std::string::npos);
  CHECK(server.request_count() == 3);

  // An error event after chunks were delivered fails the call at once, with its status.
  std::vector<json> events = anthropic_stream_events(
      anthropic_message("msg_m", {{{"type", "text"}, {"text", "a long answer that breaks"}}},
                        "end_turn", {{"input_tokens", 1}, {"output_tokens", 5}}));
  events.resize(5);  // message_start, ping, block start, two text deltas
  events.push_back(json::parse(
      R"({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})"));
  server.push(anthropic_sse(events));
  std::string got;
  e = model_error([&] {
    (void)model.stream({sg::human("hi")}, {},
                       [&](const sg::MessageChunk& c) { got += c.message.text(); });
  });
  CHECK(got == "a long a");
  CHECK(e.code() == sg::errc::kModelHttpStatus);
  CHECK(e.http_status() == 529);
  CHECK(std::string(e.what()).find("overloaded_error: Overloaded") != std::string::npos);
  CHECK(server.request_count() == 4);

  // A stream cut before message_stop after chunks: a connection error, not retried.
  events.pop_back();
  LoopbackReply cut = anthropic_sse(events);
  cut.drop_after_chunks = 5;
  server.push(cut);
  e = model_error(
      [&] { (void)model.stream({sg::human("hi")}, {}, [](const sg::MessageChunk&) {}); });
  CHECK(e.code() == sg::errc::kModelConnection);
  CHECK(server.request_count() == 5);
}

TEST_CASE("anthropic: malformed JSON and malformed SSE are invalid responses") {
  LoopbackAnthropic server;
  sg::AnthropicConfig config = config_for(server);
  config.max_retries = 0;
  const sg::AnthropicChatModel model(config);
  LoopbackReply broken = LoopbackReply::json(nullptr);
  broken.body = "{\"id\": \"msg_x\", \"content\": [";
  server.push(broken);
  sg::ModelError e = model_error([&] { (void)model.invoke({sg::human("x")}); });
  CHECK(e.code() == sg::errc::kModelInvalidResponse);
  CHECK(std::string(e.what()).find("not JSON") != std::string::npos);

  server.push(LoopbackReply::json({{"id", "msg_x"}, {"type", "message"}}));
  e = model_error([&] { (void)model.invoke({sg::human("x")}); });
  CHECK(e.code() == sg::errc::kModelInvalidResponse);
  CHECK(std::string(e.what()).find("no content") != std::string::npos);

  server.push(LoopbackReply::raw_stream({"event: message_start\ndata: {not json\n\n"}));
  e = model_error(
      [&] { (void)model.stream({sg::human("x")}, {}, [](const sg::MessageChunk&) {}); });
  CHECK(e.code() == sg::errc::kModelInvalidResponse);
  CHECK(std::string(e.what()).find("not JSON") != std::string::npos);

  server.push(LoopbackReply::raw_stream({"this is not an event stream"}));
  e = model_error(
      [&] { (void)model.stream({sg::human("x")}, {}, [](const sg::MessageChunk&) {}); });
  CHECK(e.code() == sg::errc::kModelInvalidResponse);
  CHECK(std::string(e.what()).find("Messages API events") != std::string::npos);

  server.push(anthropic_sse({json::parse(R"({"type": "content_block_delta", "index": 0,
      "delta": {"type": "text_delta", "text": "x"}})")}));
  e = model_error(
      [&] { (void)model.stream({sg::human("x")}, {}, [](const sg::MessageChunk&) {}); });
  CHECK(e.code() == sg::errc::kModelInvalidResponse);
  CHECK(std::string(e.what()).find("before message_start") != std::string::npos);
  CHECK(server.request_count() == 5);
}

TEST_CASE("anthropic: bad configuration fails before any request, and from_env") {
  LoopbackAnthropic server;
  auto config_error = [](sg::AnthropicConfig config) {
    try {
      const sg::AnthropicChatModel model(std::move(config));
    } catch (const sg::ModelError& e) {
      return std::string(e.code()) + " " + e.what();
    }
    return std::string("no error");
  };
  sg::AnthropicConfig config = config_for(server);
  CHECK(config_error(config) == "no error");
  for (const std::string& url : {std::string(), std::string("127.0.0.1:1"), std::string("ftp://x"),
                                 std::string("http://"), std::string("http://h:99999")}) {
    CAPTURE(url);
    sg::AnthropicConfig bad = config;
    bad.base_url = url;
    CHECK(config_error(bad).rfind("model.config", 0) == 0);
  }
  sg::AnthropicConfig keyless = config;
  keyless.base_url = "https://api.anthropic.com";
  keyless.api_key = "";
  CHECK(config_error(keyless).find("ANTHROPIC_API_KEY") != std::string::npos);
  sg::AnthropicConfig c = config;
  c.model = "";
  CHECK(config_error(c).find("no model") != std::string::npos);
  c = config;
  c.max_tokens = 0;
  CHECK(config_error(c).rfind("model.config", 0) == 0);
  c = config;
  c.thinking_budget = 500;
  CHECK(config_error(c).find("thinking_budget") != std::string::npos);
  c.thinking_budget = 4096;  // not below max_tokens 4096
  CHECK(config_error(c).find("thinking_budget") != std::string::npos);
  c = config;
  c.max_retries = -1;
  CHECK(config_error(c).find("AnthropicConfig::max_retries") != std::string::npos);
  c = config;
  c.total_timeout = -1ms;
  CHECK(config_error(c).find("negative timeout") != std::string::npos);
  CHECK(server.request_count() == 0);

  ::setenv("ANTHROPIC_BASE_URL", "http://localhost:8082", 1);
  ::setenv("ANTHROPIC_API_KEY", "sk-ant-env", 1);
  ::setenv("STATEGRAPH_MODEL", "claude-haiku-4-5", 1);
  sg::AnthropicConfig env = sg::AnthropicConfig::from_env();
  CHECK(env.base_url == "http://localhost:8082");
  CHECK(env.api_key == "sk-ant-env");
  CHECK(env.model == "claude-haiku-4-5");
  ::unsetenv("ANTHROPIC_BASE_URL");
  ::unsetenv("ANTHROPIC_API_KEY");
  ::unsetenv("STATEGRAPH_MODEL");
  env = sg::AnthropicConfig::from_env();
  CHECK(env.base_url == "https://api.anthropic.com");
  CHECK(env.api_key.empty());
  CHECK(env.model == "claude-sonnet-4-5");
  CHECK(env.anthropic_version == "2023-06-01");
}

TEST_CASE("anthropic: default_chat_model picks Anthropic from the environment") {
  LoopbackAnthropic server;
  const char* saved_names[] = {"OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
                               "STATEGRAPH_MODEL"};
  std::vector<std::optional<std::string>> saved;
  for (const char* name : saved_names) {
    const char* value = std::getenv(name);
    saved.push_back(value ? std::optional<std::string>(value) : std::nullopt);
    ::unsetenv(name);
  }
  CHECK(sg::default_chat_model()->provider() == "local");
  ::setenv("ANTHROPIC_API_KEY", "sk-ant-test", 1);
  auto model = sg::default_chat_model();
  CHECK(model->provider() == "anthropic");
  CHECK(model->model_name() == "claude-sonnet-4-5");
  ::unsetenv("ANTHROPIC_API_KEY");
  ::setenv("ANTHROPIC_BASE_URL", server.base_url().c_str(), 1);
  ::setenv("STATEGRAPH_MODEL", "claude-from-env", 1);
  model = sg::default_chat_model();
  CHECK(model->provider() == "anthropic");
  // It works: a keyless local gateway still gets the version header; the loopback wants a key.
  CHECK_THROWS_AS((void)model->invoke({sg::human("hi")}), sg::ModelError);
  CHECK(server.requests().at(0).header("anthropic-version") == "2023-06-01");
  CHECK(server.requests().at(0).json()["model"] == "claude-from-env");
  // OPENAI_BASE_URL, set on purpose for stategraph, wins over the Anthropic variables.
  ::setenv("ANTHROPIC_API_KEY", "sk-ant-test", 1);
  ::setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1", 1);
  CHECK(sg::default_chat_model()->provider() == "openai");
  for (std::size_t i = 0; i < saved.size(); ++i) {
    if (saved[i]) {
      ::setenv(saved_names[i], saved[i]->c_str(), 1);
    } else {
      ::unsetenv(saved_names[i]);
    }
  }
}

TEST_CASE("anthropic: structured output is a forced tool call whose input is the reply's text") {
  LoopbackAnthropic server;
  const sg::AnthropicChatModel model(config_for(server));
  const json answer = {{"city", "Paris"}, {"temperature", 21}};
  const json forced = anthropic_message(
      "msg_f", {{{"type", "tool_use"}, {"id", "toolu_f"}, {"name", "weather"}, {"input", answer}}},
      "tool_use", {{"input_tokens", 9}, {"output_tokens", 12}});
  server.push(anthropic_json(forced));
  server.push(anthropic_sse(anthropic_stream_events(forced, 5)));
  sg::ChatOptions options;
  options.response_format = sg::ResponseFormat{
      "weather",
      {{"type", "object"},
       {"description", "The weather report."},
       {"properties", {{"city", {{"type", "string"}}}, {"temperature", {{"type", "number"}}}}}},
      true};
  const sg::Message reply = model.invoke({sg::human("weather?")}, options);
  CHECK(sg::parse_structured(reply) == answer);
  CHECK(reply.tool_calls.empty());
  CHECK(reply.content.is_string());
  std::string streamed_text;
  const sg::Message streamed =
      model.stream({sg::human("weather?")}, options, [&](const sg::MessageChunk& c) {
        CHECK(c.tool_call_chunks.empty());
        streamed_text += c.message.text();
      });
  CHECK(streamed == reply);
  CHECK(json::parse(streamed_text) == answer);
  const json body = server.requests().at(0).json();
  CHECK(body["tools"] == json::parse(R"([{"name": "weather", "description": "The weather report.",
    "input_schema": {"type": "object", "description": "The weather report.",
      "properties": {"city": {"type": "string"}, "temperature": {"type": "number"}}}}])"));
  CHECK(body["tool_choice"] == json({{"type", "tool"}, {"name", "weather"}}));
  sent_bodies().push_back(body);
  sent_bodies().push_back(server.requests().at(1).json());

  // With tools too, the model may call one of them or answer: tool_choice any.
  options.tools = {weather_tool()};
  options.response_format->name = "report";
  const sg::Message with_tools = model.invoke({sg::human("weather?")}, options);
  CHECK(with_tools.text() == "echo: weather?");  // the loopback echoes; parse_structured refuses it
  CHECK_THROWS_AS((void)sg::parse_structured(with_tools), sg::ModelError);
  const json tools_body = server.requests().at(2).json();
  CHECK(tools_body["tool_choice"] == json({{"type", "any"}}));
  CHECK(tools_body["tools"].size() == 2);
  sent_bodies().push_back(tools_body);
}

TEST_CASE("anthropic: cancellation aborts a blocking and an awaiting call at once") {
  LoopbackAnthropic server({.delay = 5s});
  const sg::AnthropicChatModel model(config_for(server));
  sg::ChatOptions options;
  options.cancellation = sg::CancellationToken::create();
  std::thread canceller([token = options.cancellation] {
    std::this_thread::sleep_for(150ms);
    token.cancel();
  });
  auto start = Clock::now();
  CHECK_THROWS_AS((void)model.invoke({sg::human("x")}, options), sg::CancelledError);
  CHECK(seconds_since(start) < 1.0);
  canceller.join();

  // Awaiting, during a retry-after wait.
  server.push(anthropic_error(529, "overloaded_error", "Overloaded", {{"retry-after", "30"}}));
  net::io_context io;
  sg::ChatOptions awaited;
  awaited.cancellation = sg::CancellationToken::create();
  bool cancelled = false;
  net::co_spawn(
      io,
      [&]() -> net::awaitable<void> {
        try {
          const std::vector<sg::Message> input = {sg::human("x")};
          const sg::Message reply = co_await model.ainvoke(input, awaited);
        } catch (const sg::CancelledError&) {
          cancelled = true;
        }
      },
      net::detached);
  net::steady_timer timer(io, 200ms);
  timer.async_wait([&](const boost::system::error_code&) { awaited.cancellation.cancel(); });
  start = Clock::now();
  io.run();
  CHECK(cancelled);
  CHECK(seconds_since(start) < 1.0);
  CHECK(server.request_count() == 2);
}

TEST_CASE("anthropic: 100 concurrent awaiting calls on one io_context thread hold no thread") {
  LoopbackAnthropic server({.delay = 300ms, .threads = 2});
  const sg::AnthropicChatModel model(config_for(server));
  net::io_context io;
  std::vector<std::string> replies(100);
  int failures = 0;
  int most_threads = 0;
  const int threads_before = threads_now();
  for (int i = 0; i < 100; ++i) {
    net::co_spawn(
        io,
        [&, i]() -> net::awaitable<void> {
          try {
            const std::vector<sg::Message> input = {sg::human("call " + std::to_string(i))};
            sg::ChatOptions call_options;
            if (i % 2 == 0) {
              const sg::Message reply = co_await model.ainvoke(input, call_options);
              replies[static_cast<std::size_t>(i)] = reply.text();
            } else {
              const sg::ChunkHandler ignore = [](const sg::MessageChunk&) {};
              const sg::Message reply = co_await model.astream(input, call_options, ignore);
              replies[static_cast<std::size_t>(i)] = reply.text();
            }
          } catch (const std::exception& e) {
            ++failures;
            MESSAGE(e.what());
          }
        },
        net::detached);
  }
  net::steady_timer probe(io, 150ms);
  probe.async_wait([&](const boost::system::error_code&) { most_threads = threads_now(); });
  const auto start = Clock::now();
  io.run();
  const double took = seconds_since(start);
  CHECK(failures == 0);
  for (int i = 0; i < 100; ++i)
    CHECK(replies[static_cast<std::size_t>(i)] == "echo: call " + std::to_string(i));
  CHECK(took < 3.0);  // 100 × 300 ms one after the other would be 30 s
  CHECK(most_threads - threads_before < 10);
  CHECK(server.server().stats().max_in_flight >= 50);
  MESSAGE("100 calls in " << took << " s, threads " << threads_before << " -> " << most_threads);
}

TEST_CASE("anthropic: the same sg::Message list goes to OpenAI and to Anthropic") {
  sg::testing::LoopbackOpenAI openai_server;
  LoopbackAnthropic anthropic_server;
  sg::OpenAIConfig openai_config;
  openai_config.base_url = openai_server.base_url();
  openai_config.model = "gpt-test";
  const sg::OpenAIChatModel openai(openai_config);
  const sg::AnthropicChatModel anthropic(config_for(anthropic_server));
  sg::ChatOptions options;
  options.tools = {weather_tool(), time_tool()};
  const std::vector<sg::Message> conversation = shared_conversation();
  const sg::Message a = openai.invoke(conversation, options);
  const sg::Message b = anthropic.invoke(conversation, options);
  CHECK(a.text() == "echo: Thanks");
  CHECK(b.text() == "echo: Thanks");
  const json to_openai = openai_server.requests().at(0).json();
  const json to_anthropic = anthropic_server.requests().at(0).json();
  // OpenAI: one message per sg::Message, system inline, tool results as tool messages.
  REQUIRE(to_openai["messages"].size() == 8);
  CHECK(to_openai["messages"][0] == json({{"role", "system"}, {"content", "You are terse."}}));
  CHECK(to_openai["messages"][3]["tool_calls"][1]["function"]["arguments"] == "{\"tz\":\"CET\"}");
  CHECK(to_openai["messages"][5] ==
        json({{"role", "tool"}, {"content", "unknown zone"}, {"tool_call_id", "toolu_2"}}));
  CHECK(to_openai["tools"][0]["function"]["parameters"] == weather_tool().parameters);
  // Anthropic: system on top, turns merged, tool results as blocks (the server checked them).
  CHECK(to_anthropic["system"] == "You are terse.");
  REQUIRE(to_anthropic["messages"].size() == 5);
  CHECK(to_anthropic["messages"][2]["content"][1] == json({{"type", "tool_result"},
                                                           {"tool_use_id", "toolu_2"},
                                                           {"content", "unknown zone"},
                                                           {"is_error", true}}));
  CHECK(to_anthropic["tools"][0]["input_schema"] == weather_tool().parameters);
  sent_bodies().push_back(to_anthropic);
}

struct AddArgs {
  int a = 0;
  int b = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"a">(&AddArgs::a), sg::field<"b">(&AddArgs::b)};
  }
};

TEST_CASE("anthropic: create_react_agent runs on AnthropicChatModel end to end") {
  LoopbackAnthropic server({.call_tool = "add", .tool_args = {{"a", 2}, {"b", 3}}});
  auto agent =
      sg::create_react_agent(std::make_shared<sg::AnthropicChatModel>(config_for(server)),
                             {sg::make_tool<AddArgs>("add", "Adds two integers.",
                                                     [](const AddArgs& x) { return x.a + x.b; })},
                             {.system_prompt = "You add numbers."});
  auto recorder = std::make_shared<sg::testing::RecordingCallbacks>();
  sg::RunConfig run;
  run.callbacks.push_back(recorder);
  sg::Update<sg::AgentState> input;
  input.set<&sg::AgentState::messages>(std::vector<sg::Message>{sg::human("add 2 and 3")});
  std::string streamed;
  const auto result = agent.stream(input, run, sg::StreamMode::messages,
                                   [&](const sg::StreamEvent<sg::AgentState>& e) {
                                     if (e.message) streamed += e.message->message.text();
                                   });
  const auto& messages = result.state.messages;
  REQUIRE(messages.size() == 4);
  REQUIRE(messages[1].tool_calls.size() == 1);
  CHECK(messages[1].tool_calls[0].name == "add");
  CHECK(messages[2].type == sg::MessageType::tool);
  CHECK(messages[2].text() == "5");
  CHECK(messages[3].text() == "the tools said: 5");
  CHECK(streamed.find("the tools said: 5") != std::string::npos);
  REQUIRE(server.request_count() == 2);
  const json second = server.requests().at(1).json();
  CHECK(second["system"] == "You add numbers.");
  CHECK(second["messages"][2]["content"][0] ==
        json({{"type", "tool_result"}, {"tool_use_id", "toolu_loopback_1"}, {"content", "5"}}));
  CHECK(second["stream"] == true);  // the run streams messages
  // Model spans as OpenAI's: provider, tokens, and the span sent as traceparent.
  const auto spans = recorder->ended(sg::SpanKind::model);
  REQUIRE(spans.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(spans[i].provider == "anthropic");
    CHECK(spans[i].name == "claude-test");
    CHECK(spans[i].input_tokens > 0);
    CHECK(server.requests().at(i).header("traceparent") == spans[i].context.traceparent());
  }
  for (const auto& r : server.requests()) sent_bodies().push_back(r.json());
}

TEST_CASE("anthropic: server tool blocks are kept in the content, streamed or not, not calls") {
  const json message = web_search_message();
  const json& blocks = message["content"];
  // Unstreamed: every block as the API gave it; the server tool's call is no tool call.
  const sg::Message reply = sg::detail::parse_anthropic_message(message, "");
  CHECK(reply.content == sg::Content(sg::Content::Blocks(blocks.begin(), blocks.end())));
  CHECK(reply.tool_calls.empty());
  CHECK(reply.invalid_tool_calls.empty());
  CHECK(reply.text() == "Let me search for that.It is sunny in Paris.");

  // Streamed as the API streams it: the server_tool_use block starts with input {} and its
  // input follows as input_json_delta fragments; the result block comes whole.
  const std::vector<json> events = anthropic_stream_events(message, 5);
  std::size_t fragments = 0;
  for (const json& e : events) {
    if (e["type"] == "content_block_start" && e["index"] == 1)
      CHECK(e["content_block"]["input"] == json::object());
    if (e["type"] == "content_block_delta" && e["index"] == 1) {
      CHECK(e["delta"]["type"] == "input_json_delta");
      ++fragments;
    }
  }
  CHECK(fragments > 3);
  for (const bool as_blocks : {false, true}) {
    CAPTURE(as_blocks);
    sg::detail::AnthropicStreamAccumulator accumulator("", as_blocks);
    std::map<int, json> shown;  // the blocks shown whole, by index
    std::string input;          // the server tool's input fragments
    std::string text;
    for (const json& e : events) {
      const std::optional<sg::MessageChunk> chunk = accumulator.add(e);
      if (!chunk) continue;
      CHECK(chunk->tool_call_chunks.empty());
      text += chunk->message.text();
      if (!chunk->message.content.is_blocks()) continue;
      for (const auto& b : chunk->message.content.blocks()) {
        if (b["type"] == "input_json_delta") {
          CHECK(b["index"] == 1);
          input += b["partial_json"].get<std::string>();
        } else if (b["type"] != "text") {
          shown[b["index"].get<int>()] = b;
        }
      }
    }
    CHECK(text == reply.text());
    CHECK(json::parse(input) == blocks[1]["input"]);
    json call = blocks[1];
    call["input"] = json::object();
    call["index"] = 1;
    json result = blocks[2];
    result["index"] = 2;
    CHECK(shown == std::map<int, json>{{1, call}, {2, result}});
    CHECK(accumulator.result() == reply);  // the server tool's input parsed, as unstreamed
  }

  // A server tool call with no input in its start (as the docs show web_fetch's), input that is
  // not JSON, and one without input fragments: the text is kept as partial_json, the input stays
  // an object, and the blocks go back as the API takes them.
  const json start = events[0];
  const std::vector<json> odd = {
      start,
      json::parse(R"({"type": "content_block_start", "index": 0, "content_block":
        {"type": "server_tool_use", "id": "srvtoolu_02", "name": "web_fetch"}})"),
      json::parse(R"({"type": "content_block_delta", "index": 0,
        "delta": {"type": "input_json_delta", "partial_json": "{\"url\": \"https://ex"}})"),
      json::parse(R"({"type": "content_block_stop", "index": 0})"),
      json::parse(R"({"type": "content_block_start", "index": 1, "content_block":
        {"type": "server_tool_use", "id": "srvtoolu_03", "name": "code_execution"}})"),
      json::parse(R"({"type": "content_block_stop", "index": 1})"),
      json::parse(R"({"type": "content_block_start", "index": 2, "content_block":
        {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_03", "content":
         {"type": "code_execution_result", "stdout": "4\n", "stderr": "", "return_code": 0,
          "content": []}}})"),
      json::parse(R"({"type": "content_block_stop", "index": 2})"),
      json::parse(R"({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
        "usage": {"output_tokens": 9}})"),
      json::parse(R"({"type": "message_stop"})")};
  sg::detail::AnthropicStreamAccumulator accumulator("", true);
  for (const json& e : odd) (void)accumulator.add(e);
  const sg::Message kept = accumulator.result();
  CHECK(kept.tool_calls.empty());
  CHECK(kept.invalid_tool_calls.empty());
  REQUIRE(kept.content.is_blocks());
  REQUIRE(kept.content.blocks().size() == 3);
  CHECK(kept.content.blocks()[0] == json::parse(R"({"type": "server_tool_use",
    "id": "srvtoolu_02", "name": "web_fetch", "input": {},
    "partial_json": "{\"url\": \"https://ex"})"));
  CHECK(kept.content.blocks()[1] == json::parse(R"({"type": "server_tool_use",
    "id": "srvtoolu_03", "name": "code_execution", "input": {}})"));
  CHECK(kept.content.blocks()[2] == odd[6]["content_block"]);
  const json back = sg::detail::messages_request_body({}, {sg::human("q"), kept}, {}, false);
  CHECK(back["messages"][1]["content"] == json::array({
                                              {{"type", "server_tool_use"},
                                               {"id", "srvtoolu_02"},
                                               {"name", "web_fetch"},
                                               {"input", json::object()}},
                                              kept.content.blocks()[1],
                                              kept.content.blocks()[2],
                                          }));

  // input_json_delta stays refused for a block that takes no input.
  for (const std::size_t index : {0U, 2U}) {  // a text block, a server tool's result
    CAPTURE(index);
    sg::detail::AnthropicStreamAccumulator a("", true);
    std::string error = "no error";
    try {
      for (const json& e : events) {
        if (e["type"] == "content_block_stop" && e["index"] == index) {
          (void)a.add({{"type", "content_block_delta"},
                       {"index", index},
                       {"delta", {{"type", "input_json_delta"}, {"partial_json", "{}"}}}});
        }
        (void)a.add(e);
      }
    } catch (const sg::ModelError& e) {
      error = std::string(e.code()) + " " + e.what();
    }
    CHECK(error ==
          std::string("model.invalid_response Anthropic reply: an input_json_delta for a ") +
              (index == 0 ? "text" : "web_search_tool_result") + " block");
  }
}

TEST_CASE("anthropic: server tool use over HTTP, streamed and not, goes back unchanged") {
  LoopbackAnthropic server;
  const sg::AnthropicChatModel model(config_for(server));
  const json message = web_search_message();
  server.push(anthropic_json(message));
  server.push(anthropic_sse(anthropic_stream_events(message, 6)));
  sg::ChatOptions options;
  options.tools = {weather_tool()};
  std::vector<sg::Message> conversation = {sg::human("Weather in Paris today?")};
  const sg::Message whole = model.invoke(conversation, options);
  std::vector<std::string> shown;
  const sg::Message streamed = model.stream(conversation, options, [&](const sg::MessageChunk& c) {
    CHECK(c.tool_call_chunks.empty());  // the API ran the search: nothing to call
    if (!c.message.content.is_blocks()) return;
    for (const auto& b : c.message.content.blocks()) {
      if (b["type"] != "text" && b["type"] != "input_json_delta") shown.push_back(b["type"]);
    }
  });
  CHECK(shown == std::vector<std::string>{"server_tool_use", "web_search_tool_result"});
  CHECK(streamed == whole);
  CHECK(whole.tool_calls.empty());
  CHECK(whole.content ==
        sg::Content(sg::Content::Blocks(message["content"].begin(), message["content"].end())));

  // The next call sends the blocks back as they came, and the server's checks take them.
  conversation.push_back(streamed);
  conversation.push_back(sg::human("And tomorrow?"));
  const sg::Message answer = model.invoke(conversation, options);
  CHECK(answer.text() == "echo: And tomorrow?");
  const json next = server.requests().at(2).json();
  CHECK(next["messages"] == json::array({
                                {{"role", "user"}, {"content", "Weather in Paris today?"}},
                                {{"role", "assistant"}, {"content", message["content"]}},
                                {{"role", "user"}, {"content", "And tomorrow?"}},
                            }));
  for (const auto& r : server.requests()) sent_bodies().push_back(r.json());

  // The server's checks have teeth: a result without its server_tool_use, a field the API does
  // not have.
  auto refused = [&](const sg::Content::Blocks& blocks) {
    std::vector<sg::Message> edited = conversation;
    edited[1].content = blocks;
    const sg::ModelError e = model_error([&] { (void)model.invoke(edited, options); });
    CHECK(e.http_status() == 400);
    return std::string(e.what());
  };
  sg::Content::Blocks blocks = streamed.content.blocks();
  blocks.erase(blocks.begin() + 1);
  CHECK(refused(blocks).find("does not match a server_tool_use block") != std::string::npos);
  blocks = streamed.content.blocks();
  blocks[2]["streamed"] = true;
  CHECK(refused(blocks).find("messages.1.content.2.streamed: Extra inputs are not permitted") !=
        std::string::npos);
}

TEST_CASE("anthropic: request bodies of every shape, for the SDK type check") {
  // Sends a conversation of every shape (the cases above add theirs when run in the same
  // process) and, with SG_ANTHROPIC_BODIES_TS set, writes every body sent as a TypeScript file
  // that types each with the official SDK's MessageCreateParams (tests/anthropic/run.sh).
  LoopbackAnthropic server({.call_tool = "get_weather"});
  sg::AnthropicConfig config = config_for(server);
  config.thinking_budget = 1024;
  config.max_tokens = 2048;
  const sg::AnthropicChatModel thinking(config);
  const sg::AnthropicChatModel plain(config_for(server));
  sg::ChatOptions options;
  options.tools = {weather_tool(), time_tool()};
  options.temperature = 0.5;
  options.stop = {"STOP", "END"};
  std::vector<sg::Message> conversation = shared_conversation();
  conversation.push_back(sg::human(sg::Content::Blocks{
      {{"type", "image"}, {"url", "https://example.test/cat.png"}},
      {{"type", "text"}, {"text", "What is this?"}, {"cache_control", {{"type", "ephemeral"}}}}}));
  for (const char* choice : {"", "auto", "required", "none", "get_time"}) {
    options.tool_choice = choice;
    (void)plain.invoke(conversation, options);
  }
  options.tool_choice.clear();
  const sg::Message reply = thinking.stream(conversation, options, [](const sg::MessageChunk&) {});
  conversation.push_back(reply);
  for (const auto& call : reply.tool_calls) {  // a result with text and an image
    conversation.push_back(sg::tool(
        sg::Content::Blocks{json("sunny, see the map:"),
                            {{"type", "image_url"},
                             {"image_url", {{"url", "data:image/png;base64,iVBORw0KGgo="}}}}},
        call.id));
  }
  (void)thinking.invoke(conversation, options);
  for (const auto& r : server.requests()) sent_bodies().push_back(r.json());
  CHECK(server.request_count() == 7);  // all accepted by the server's checks

  const char* path = std::getenv("SG_ANTHROPIC_BODIES_TS");
  if (!path) return;
  std::ofstream out(path);
  REQUIRE(out);
  out << "// Generated by tests/models/test_anthropic.cpp: the request bodies AnthropicChatModel "
         "sent.\nimport type Anthropic from '@anthropic-ai/sdk';\n\n";
  for (std::size_t i = 0; i < sent_bodies().size(); ++i) {
    const json& body = sent_bodies()[i];
    const bool stream = body.value("stream", false);
    out << "export const body" << i << ": Anthropic.MessageCreateParams"
        << (stream ? "Streaming" : "NonStreaming") << " = " << body.dump(2) << ";\n\n";
  }
  MESSAGE(sent_bodies().size() << " request bodies written to " << path);
  CHECK(sent_bodies().size() >= 20);
}

}  // namespace anthropic_tests
