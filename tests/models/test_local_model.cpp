// SPDX-License-Identifier: MIT
// LocalModel: the offline default model's documented rules, streaming, usage, cancellation.
#include <stategraph/models/local_model.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <doctest/doctest.h>

#include <utility>

namespace {

std::vector<sg::Message> chat(std::initializer_list<std::string> turns) {
  std::vector<sg::Message> out;
  bool human = true;
  for (const auto& t : turns) {
    out.push_back(human ? sg::human(t) : sg::ai(t));
    human = !human;
  }
  return out;
}

}  // namespace

TEST_CASE("LocalModel acknowledges statements and recalls them when asked") {
  sg::LocalModel model;
  auto m = chat({"My name is Ada.", "Noted: my name is Ada.", "I live in Paris.",
                 "Noted: I live in Paris.", "Where do I live?"});
  const sg::Message reply = model.invoke(m);
  CHECK(reply.type == sg::MessageType::ai);
  CHECK(reply.text() == "You told me: I live in Paris.");
  CHECK_FALSE(reply.id.empty());
  CHECK(reply.response_metadata["model_name"] == "stategraph-local");
  CHECK(reply.response_metadata["finish_reason"] == "stop");
  CHECK(reply.usage_metadata["input_tokens"].get<int>() > 0);
  CHECK(reply.usage_metadata["total_tokens"].get<int>() ==
        reply.usage_metadata["input_tokens"].get<int>() +
            reply.usage_metadata["output_tokens"].get<int>());
  CHECK(model.invoke(chat({"My name is Ada."})).text() == "Noted: my name is Ada.");
  CHECK(model.invoke(chat({"What is my name?"})).text() == "I don't know that yet.");
  // A fact that only a summary (a system message) still holds is recalled from it.
  std::vector<sg::Message> summarized{
      sg::system("Summary of conversation earlier: My name is Ada."),
      sg::human("What is my name?")};
  CHECK(model.invoke(summarized).text() == "You told me: my name is Ada.");
  // Two calls on the same input: the same text, different ids.
  CHECK(model.invoke(m).text() == reply.text());
  CHECK(model.invoke(m).id != reply.id);
}

TEST_CASE("LocalModel summarizes extractively within max_tokens, extending a summary") {
  sg::LocalModel model;
  auto m = chat({"My name is Ada.", "Noted.", "I live in Paris.", "Noted.", "What is 2+2?", "4",
                 "My cat is called Tom."});
  m.push_back(sg::human("Create a summary of the conversation above:"));
  CHECK(model.invoke(m).text() == "My name is Ada. I live in Paris. My cat is called Tom.");

  sg::ChatOptions small;
  small.max_tokens = 12;  // room for the newest statements only
  CHECK(model.invoke(m, small).text() == "I live in Paris. My cat is called Tom.");

  std::vector<sg::Message> extend{
      sg::human("I like tea."),
      sg::human("This is summary of the conversation so far: My name is Ada.\n\nExtend this "
                "summary by taking into account the new messages above:")};
  CHECK(model.invoke(extend).text() == "My name is Ada. I like tea.");
}

TEST_CASE("LocalModel streams word by word, and the chunks add up to the reply") {
  sg::LocalModel model;
  std::vector<sg::MessageChunk> chunks;
  const sg::Message reply =
      model.stream(chat({"I live in Paris.", "Noted.", "Where do I live?"}), {},
                   [&](const sg::MessageChunk& c) { chunks.push_back(c); });
  REQUIRE(chunks.size() == 8);  // 7 words and a last chunk with the metadata
  std::string text;
  for (const auto& c : chunks) {
    CHECK(c.message.id == reply.id);
    text += c.message.text();
  }
  CHECK(text == reply.text());
  CHECK(chunks.back().message.usage_metadata == reply.usage_metadata);
  CHECK(chunks.back().message.response_metadata["finish_reason"] == "stop");
}

TEST_CASE("LocalModel calls the tools a message names, then reports their results") {
  sg::LocalModel model;
  sg::ChatOptions options;
  options.tools = {
      sg::ToolSpec{"multiply",
                   "Multiplies.",
                   {{"type", "object"},
                    {"properties", {{"a", {{"type", "number"}}}, {"b", {{"type", "number"}}}}}}},
      sg::ToolSpec{"get_weather",
                   "Weather of a city.",
                   {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}};
  auto m = chat({"Please multiply 6 and 7, and get weather in Paris."});
  const sg::Message reply = model.invoke(m, options);
  REQUIRE(reply.tool_calls.size() == 2);
  CHECK(reply.tool_calls[0].name == "multiply");
  CHECK(reply.tool_calls[0].args == nlohmann::json{{"a", 6.0}, {"b", 7.0}});
  CHECK(reply.tool_calls[1].name == "get_weather");
  CHECK(reply.tool_calls[1].args == nlohmann::json{{"city", "Paris"}});
  CHECK(reply.response_metadata["finish_reason"] == "tool_calls");
  CHECK(reply.tool_calls[0].id != reply.tool_calls[1].id);

  m.push_back(reply);
  sg::Message r1 = sg::tool("42", reply.tool_calls[0].id);
  r1.name = "multiply";
  sg::Message r2 = sg::tool("Sunny", reply.tool_calls[1].id);
  r2.name = "get_weather";
  m.push_back(r1);
  m.push_back(r2);
  CHECK(model.invoke(m, options).text() ==
        "Here is what the tools returned: multiply: 42; get_weather: Sunny.");
  options.tool_choice = "none";
  CHECK(model.invoke(chat({"multiply 2 and 3"}), options).tool_calls.empty());
}

TEST_CASE("LocalModel follows a script first, and honours cancellation") {
  sg::LocalModel model;
  model.script({sg::ai("", {sg::ToolCall{"c1", "lookup", {{"q", "x"}}}}), sg::ai("scripted")});
  CHECK(model.scripted() == 2);
  CHECK(model.invoke(chat({"hi"})).tool_calls.at(0).id == "c1");
  CHECK(model.invoke(chat({"hi"})).text() == "scripted");
  CHECK(model.invoke(chat({"hi"})).text() == "Noted: hi.");

  sg::ChatOptions options;
  options.cancellation = sg::CancellationToken::create();
  options.cancellation.cancel();
  CHECK_THROWS_AS((void)model.invoke(chat({"hi"}), options), sg::CancelledError);
}

TEST_CASE("LocalModel: structured output fills the schema, and the awaitable form") {
  sg::LocalModel model;
  sg::ChatOptions options;
  options.response_format = sg::ResponseFormat{
      "answer",
      {{"type", "object"},
       {"properties", {{"text", {{"type", "string"}}}, {"n", {{"type", "integer"}}}}}},
      true};
  const auto j = sg::parse_structured(model.invoke(chat({"I am 36 years old."}), options));
  CHECK(j["text"] == "Noted: I am 36 years old.");
  CHECK(j["n"] == 36);
  CHECK_THROWS_AS((void)sg::parse_structured(sg::ai("not json")), sg::ModelError);

  boost::asio::io_context io;
  sg::Message out;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        std::vector<sg::Message> input = chat({"My name is Ada."});
        sg::Message r = co_await model.ainvoke(std::move(input));
        out = std::move(r);
      },
      boost::asio::detached);
  io.run();
  CHECK(out.text() == "Noted: my name is Ada.");
}
