// SPDX-License-Identifier: MIT
// summarize_messages and SummarizationNode: LangMem's tests/short_term/test_summarization.py,
// ported with its expectations (token_counter=len is sg::count_messages), then the node in real
// graphs (checkpointed threads, LocalModel, the loopback server) and LangGraph's how-to node.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/core/state_graph.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/openai.hpp>
#include <stategraph/nodes/summarize.hpp>
#include <stategraph/reducers/messages_state.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <support/loopback_openai.hpp>

#include "fake_model.hpp"

namespace {

using sg::Message;
using sg_test::FakeChatModel;

Message H(std::string content, std::string id) {
  return sg::human(std::move(content), std::move(id));
}
Message A(std::string content, std::string id) {
  return sg::ai(std::move(content), std::move(id));
}

const sg::TokenCounter kLen{[](std::span<const Message> m) { return sg::count_messages(m); }};

sg::SummarizationOptions opts(std::int64_t max_tokens, std::int64_t max_summary_tokens,
                              sg::TokenCounter counter = sg::TokenCounter{}) {
  sg::SummarizationOptions o;
  o.max_tokens = max_tokens;
  o.max_summary_tokens = max_summary_tokens;
  o.token_counter = std::move(counter);
  return o;
}

std::vector<Message> tail(const std::vector<Message>& v, std::size_t n) {
  return {v.end() - static_cast<std::ptrdiff_t>(n), v.end()};
}
std::vector<Message> slice(const std::vector<Message>& v, std::size_t from, std::size_t to) {
  return {v.begin() + static_cast<std::ptrdiff_t>(from),
          v.begin() + static_cast<std::ptrdiff_t>(to)};
}
std::set<std::string> ids(const std::vector<Message>& v) {
  std::set<std::string> out;
  for (const auto& m : v) out.insert(m.id);
  return out;
}
bool has_summary(const Message& m) {
  std::string t = m.text();
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  return t.find("summary") != std::string::npos;
}
std::vector<std::string> contents(const std::vector<Message>& v) {
  std::vector<std::string> out;
  for (const auto& m : v) out.push_back(m.text());
  return out;
}

std::vector<Message> nine_messages() {
  return {H("Message 1", "1"),  A("Response 1", "2"), H("Message 2", "3"),
          A("Response 2", "4"), H("Message 3", "5"),  A("Response 3", "6"),
          H("Message 4", "7"),  A("Response 4", "8"), H("Latest message", "9")};
}

std::vector<Message> first_batch() {
  return {H("Message 1", "1"),       A("Response 1", "2"), H("Message 2", "3"),
          A("Response 2", "4"),      H("Message 3", "5"),  A("Response 3", "6"),
          H("Latest message 1", "7")};
}
std::vector<Message> second_batch() {
  return {A("Response to latest 1", "8"), H("Message 4", "9"),        A("Response 4", "10"),
          H("Message 5", "11"),           A("Response 5", "12"),      H("Message 6", "13"),
          A("Response 6", "14"),          H("Latest message 2", "15")};
}

}  // namespace

TEST_CASE("langmem: test_empty_input") {
  FakeChatModel model;
  auto result = sg::summarize_messages({}, std::nullopt, model, opts(10, 1));
  CHECK_FALSE(result.running_summary);
  CHECK(result.messages.empty());
  CHECK(model.invoke_calls().empty());

  const Message system_msg = sg::system("You are a helpful assistant.", "sys");
  result = sg::summarize_messages(std::vector{system_msg}, std::nullopt, model, opts(10, 1));
  CHECK_FALSE(result.running_summary);
  CHECK(result.messages == std::vector{system_msg});
}

TEST_CASE("langmem: test_no_summarization_needed") {
  FakeChatModel model;
  const std::vector messages{H("Message 1", "1"), A("Response 1", "2"), H("Message 2", "3")};
  auto result = sg::summarize_messages(messages, std::nullopt, model, opts(10, 1, kLen));
  CHECK_FALSE(result.running_summary);
  CHECK(result.messages == messages);
  CHECK(model.invoke_calls().empty());
}

TEST_CASE("langmem: test_summarize_first_time") {
  FakeChatModel model({sg::ai("This is a summary of the conversation.")});
  const auto messages = nine_messages();
  auto result = sg::summarize_messages(messages, std::nullopt, model, opts(6, 1, kLen));
  CHECK(model.invoke_calls().size() == 1);
  REQUIRE(result.messages.size() == 4);
  CHECK(result.messages[0].type == sg::MessageType::system);
  CHECK(has_summary(result.messages[0]));
  CHECK(slice(result.messages, 1, 4) == tail(messages, 3));
  REQUIRE(result.running_summary);
  const auto summary_value = *result.running_summary;
  CHECK(summary_value.summary == "This is a summary of the conversation.");
  CHECK(summary_value.summarized_message_ids == ids(slice(messages, 0, 6)));

  // Subsequent invocation: no new summary needed.
  result = sg::summarize_messages(messages, summary_value, model, opts(6, 1, kLen));
  REQUIRE(result.messages.size() == 4);
  CHECK(result.messages[0].type == sg::MessageType::system);
  CHECK(result.messages[0].text() ==
        "Summary of the conversation so far: This is a summary of the conversation.");
  CHECK(slice(result.messages, 1, 4) == tail(messages, 3));
  CHECK(model.invoke_calls().size() == 1);
}

TEST_CASE("langmem: test_max_tokens_before_summary") {
  FakeChatModel model({sg::ai("This is a summary of the conversation.")});
  const auto messages = nine_messages();
  auto o = opts(6, 1, kLen);
  o.max_tokens_before_summary = 8;
  auto result = sg::summarize_messages(messages, std::nullopt, model, o);
  CHECK(model.invoke_calls().size() == 1);
  REQUIRE(result.messages.size() == 2);
  CHECK(result.messages[0].type == sg::MessageType::system);
  CHECK(has_summary(result.messages[0]));
  CHECK(result.messages[1] == messages.back());
  REQUIRE(result.running_summary);
  const auto summary_value = *result.running_summary;
  CHECK(summary_value.summary == "This is a summary of the conversation.");
  CHECK(summary_value.summarized_message_ids == ids(slice(messages, 0, 8)));

  result = sg::summarize_messages(messages, summary_value, model, o);
  REQUIRE(result.messages.size() == 2);
  CHECK(result.messages[0].text() ==
        "Summary of the conversation so far: This is a summary of the conversation.");
  CHECK(result.messages[1] == messages.back());
}

TEST_CASE("langmem: test_with_system_message") {
  FakeChatModel model({sg::ai("Summary with system message present.")});
  std::vector<Message> messages{sg::system("You are a helpful assistant.", "0")};
  for (auto& m : nine_messages()) messages.push_back(m);
  auto result = sg::summarize_messages(messages, std::nullopt, model, opts(6, 1, kLen));
  const auto calls = model.invoke_calls();
  REQUIRE(calls.size() == 1);
  auto expected_prompt = slice(messages, 1, 7);
  expected_prompt.push_back(sg::human("Create a summary of the conversation above:"));
  CHECK(calls[0] == expected_prompt);
  REQUIRE(result.messages.size() == 5);
  CHECK(result.messages[0].type == sg::MessageType::system);
  CHECK(result.messages[0] == messages[0]);
  CHECK(result.messages[1].type == sg::MessageType::system);
  CHECK(has_summary(result.messages[1]));
  CHECK(slice(result.messages, 2, 5) == tail(messages, 3));
}

TEST_CASE("langmem: test_approximate_token_counter") {
  FakeChatModel model({sg::ai("Summary with empty messages.")});
  const std::vector messages{H("", "1"),          A("Response 1", "2"), H("Message 2", "3"),
                             A("", "4"),          H("Message 3", "5"),  A("Response 3", "6"),
                             H("Message 4", "7"), A("Response 4", "8"), H("Latest message", "9")};
  auto result = sg::summarize_messages(messages, std::nullopt, model, opts(50, 10));
  REQUIRE(result.messages.size() == 2);
  CHECK(has_summary(result.messages[0]));
  CHECK(result.messages[1] == messages.back());
}

TEST_CASE("langmem: test_large_number_of_messages") {
  FakeChatModel model({sg::ai("Summary of many messages.")});
  std::vector<Message> messages;
  for (int i = 0; i < 20; ++i) {
    messages.push_back(H("Human message " + std::to_string(i), "h" + std::to_string(i)));
    messages.push_back(A("AI response " + std::to_string(i), "a" + std::to_string(i)));
  }
  messages.push_back(H("Final message", "h" + std::to_string(messages.size())));
  auto result = sg::summarize_messages(messages, std::nullopt, model, opts(22, 0, kLen));
  REQUIRE(result.messages.size() == 20);
  CHECK(has_summary(result.messages[0]));
  CHECK(slice(result.messages, 1, 20) == slice(messages, 22, messages.size()));
  CHECK(model.invoke_calls().size() == 1);
}

namespace {

// test_subsequent_summarization_with_new_messages and its variants: the second call summarizes
// only new messages, extends the first summary, and keeps the last three.
void check_second_summary(const FakeChatModel& model, const sg::SummarizationResult& result2,
                          const std::vector<Message>& messages2, std::size_t summarized_ids,
                          std::size_t offset = 0) {
  const auto calls = model.invoke_calls();
  REQUIRE(calls.size() == 2);
  const auto& second_call = calls[1];
  const std::string prompt = second_call.back().text();
  CHECK(prompt.find("First summary of the conversation") != std::string::npos);
  CHECK(prompt.find("Extend this summary") != std::string::npos);
  REQUIRE(second_call.size() == 5);
  CHECK(contents(slice(second_call, 0, 4)) ==
        std::vector<std::string>{"Message 4", "Response 4", "Message 5", "Response 5"});
  REQUIRE(result2.messages.size() == 4 + offset);
  CHECK(has_summary(result2.messages[offset]));
  CHECK(tail(result2.messages, 3) == tail(messages2, 3));
  REQUIRE(result2.running_summary);
  CHECK(result2.running_summary->summary == "Updated summary including new messages.");
  CHECK(result2.running_summary->summarized_message_ids.size() == summarized_ids);
}

void subsequent_summarization(std::int64_t max_tokens, std::int64_t max_summary_tokens,
                              sg::TokenCounter counter) {
  FakeChatModel model({sg::ai("First summary of the conversation."),
                       sg::ai("Updated summary including new messages.")});
  const auto messages1 = first_batch();
  const auto o = opts(max_tokens, max_summary_tokens, std::move(counter));
  auto result = sg::summarize_messages(messages1, std::nullopt, model, o);
  CHECK(has_summary(result.messages[0]));
  REQUIRE(result.messages.size() == 2);
  CHECK(result.messages.back() == messages1.back());
  CHECK(model.invoke_calls().size() == 1);
  REQUIRE(result.running_summary);
  const auto summary_value = *result.running_summary;
  CHECK(summary_value.summary == "First summary of the conversation.");
  CHECK(summary_value.summarized_message_ids.size() == 6);

  auto messages2 = messages1;
  for (auto& m : second_batch()) messages2.push_back(m);
  auto result2 = sg::summarize_messages(messages2, summary_value, model, o);
  check_second_summary(model, result2, messages2, messages2.size() - 3);
}

}  // namespace

TEST_CASE("langmem: test_subsequent_summarization_with_new_messages") {
  subsequent_summarization(6, 1, kLen);
}

TEST_CASE("langmem: test_subsequent_summarization_with_new_messages_approximate_token_counter") {
  subsequent_summarization(45, 15, sg::TokenCounter{});
}

TEST_CASE("langmem: test_last_ai_with_tool_calls") {
  FakeChatModel model({sg::ai("Summary without tool calls.")});
  const std::vector messages{H("Message 1", "1"),
                             sg::ai("",
                                    {sg::ToolCall{"1", "tool_1", {{"arg1", "value1"}}},
                                     sg::ToolCall{"2", "tool_2", {{"arg1", "value1"}}}},
                                    "2"),
                             [] {
                               auto m = sg::tool("Call tool 1", "1", "3");
                               m.name = "tool_1";
                               return m;
                             }(),
                             [] {
                               auto m = sg::tool("Call tool 2", "2", "4");
                               m.name = "tool_2";
                               return m;
                             }(),
                             A("Response 1", "5"),
                             H("Message 2", "6")};
  auto o = opts(6, 1, kLen);
  o.max_tokens_before_summary = 2;
  auto result = sg::summarize_messages(messages, std::nullopt, model, o);
  REQUIRE(result.messages.size() == 3);
  CHECK(result.messages[0].type == sg::MessageType::system);
  CHECK(tail(result.messages, 2) == tail(messages, 2));
  REQUIRE(result.running_summary);
  CHECK(result.running_summary->summarized_message_ids == ids(slice(messages, 0, 4)));
}

TEST_CASE("langmem: test_missing_message_ids") {
  FakeChatModel model;
  const std::vector messages{H("Message 1", "1"), sg::ai("Response")};
  CHECK_THROWS_WITH_AS(sg::summarize_messages(messages, std::nullopt, model, opts(10, 1)),
                       "Messages are required to have ID field.", sg::Error);
}

TEST_CASE("langmem: test_duplicate_message_ids") {
  FakeChatModel model({sg::ai("Summary")});
  const std::vector messages1{H("Message 1", "1"), A("Response 1", "2"), H("Message 2", "3")};
  auto result = sg::summarize_messages(messages1, std::nullopt, model, opts(2, 1, kLen));
  auto messages = messages1;
  messages.push_back(A("Response 2", "4"));
  messages.push_back(H("Message 3", "1"));  // a duplicate id
  CHECK_THROWS_WITH_AS(
      sg::summarize_messages(messages, result.running_summary, model, opts(5, 1, kLen)),
      doctest::Contains("has already been summarized"), sg::Error);
}

TEST_CASE("langmem: test_summarization_updated_messages") {
  FakeChatModel model({sg::ai("First summary of the conversation."),
                       sg::ai("Updated summary including new messages.")});
  const auto messages1 = first_batch();
  const auto o = opts(6, 1, kLen);
  auto result = sg::summarize_messages(messages1, std::nullopt, model, o);
  REQUIRE(result.messages.size() == 2);
  REQUIRE(result.running_summary);
  CHECK(result.running_summary->summarized_message_ids.size() == 6);
  // The summarized list (summary message first) is passed back with the new messages.
  auto messages2 = result.messages;
  for (auto& m : second_batch()) messages2.push_back(m);
  auto result2 = sg::summarize_messages(messages2, result.running_summary, model, o);
  check_second_summary(model, result2, messages2, 12);
}

TEST_CASE("summarize_messages rejects bad budgets and bad prompts before calling the model") {
  FakeChatModel model;
  const auto messages = nine_messages();
  CHECK_THROWS_WITH_AS(sg::summarize_messages(messages, std::nullopt, model, opts(6, 6)),
                       "`max_summary_tokens` must be less than `max_tokens`.", sg::Error);
  CHECK_THROWS_AS(sg::summarize_messages(messages, std::nullopt, model, opts(0, -1)), sg::Error);
  auto bad = opts(6, 1, kLen);
  bad.prompts.final_summary = "Summary: {summary";
  CHECK_THROWS_WITH_AS(sg::summarize_messages(messages, std::nullopt, model, bad),
                       doctest::Contains("bad prompt template"), sg::Error);
}

TEST_CASE("RunningSummary round-trips through JSON") {
  sg::RunningSummary s{"the summary", {"b", "a"}, "b"};
  const nlohmann::json j = s;
  CHECK(
      j.dump() ==
      R"({"last_summarized_message_id":"b","summarized_message_ids":["a","b"],"summary":"the summary"})");
  CHECK(j.get<sg::RunningSummary>() == s);
  s.last_summarized_message_id.reset();
  CHECK(nlohmann::json(s).get<sg::RunningSummary>() == s);
  CHECK_THROWS_AS(nlohmann::json::parse(R"({"summary":1})").get<sg::RunningSummary>(),
                  nlohmann::json::exception);
}

namespace {

// LangMem's example state: the conversation, what the model sees, the running summary.
struct SummaryState : sg::MessagesState {
  std::vector<Message> summarized_messages{};
  std::optional<sg::RunningSummary> running_summary{};
  static constexpr auto schema() {
    return std::tuple_cat(
        sg::MessagesState::schema(),
        std::tuple{sg::field<"summarized_messages">(&SummaryState::summarized_messages),
                   sg::field<"running_summary">(&SummaryState::running_summary)});
  }
};

template <class Node>
sg::CompiledGraph<SummaryState> one_node_graph(Node node,
                                               std::shared_ptr<sg::Checkpointer> saver = {}) {
  sg::StateGraph<SummaryState> g;
  g.add_node("summarize", std::move(node));
  g.add_edge(sg::START, "summarize");
  return g.compile({.checkpointer = std::move(saver)});
}

}  // namespace

TEST_CASE("langmem: test_summarization_node") {
  auto model = std::make_shared<FakeChatModel>(
      std::vector{sg::ai("This is a summary of the conversation.")});
  const auto messages = nine_messages();
  const auto app = one_node_graph(sg::SummarizationNode<SummaryState>(model, opts(6, 1, kLen)));
  SummaryState input;
  input.messages = messages;
  auto result = app.invoke(input).state;
  CHECK(model->invoke_calls().size() == 1);
  REQUIRE(result.summarized_messages.size() == 4);
  CHECK(result.summarized_messages[0].type == sg::MessageType::system);
  CHECK(has_summary(result.summarized_messages[0]));
  CHECK(slice(result.summarized_messages, 1, 4) == tail(messages, 3));
  CHECK(result.messages == messages);  // the conversation itself is untouched
  REQUIRE(result.running_summary);
  const auto summary_value = *result.running_summary;
  CHECK(summary_value.summary == "This is a summary of the conversation.");
  CHECK(summary_value.summarized_message_ids == ids(slice(messages, 0, 6)));

  input.running_summary = summary_value;
  result = app.invoke(input).state;
  REQUIRE(result.summarized_messages.size() == 4);
  CHECK(result.summarized_messages[0].text() ==
        "Summary of the conversation so far: This is a summary of the conversation.");
  CHECK(slice(result.summarized_messages, 1, 4) == tail(messages, 3));
  CHECK(model->invoke_calls().size() == 1);
}

TEST_CASE("langmem: test_summarization_node_same_key (a checkpointed thread)") {
  auto model = std::make_shared<FakeChatModel>(
      std::vector{sg::ai("First summary of the conversation."),
                  sg::ai("Updated summary including new messages.")});
  const auto app = one_node_graph(
      sg::SummarizationNode<SummaryState, &SummaryState::messages, &SummaryState::messages>(
          model, opts(6, 1, kLen)),
      std::make_shared<sg::InMemorySaver>());
  sg::RunConfig config;
  config.thread_id = "1";
  const auto messages1 = first_batch();
  auto update = [](std::vector<Message> m) {
    return sg::Update<SummaryState>{}.set<&SummaryState::messages>(std::move(m));
  };
  auto result = app.invoke(update(messages1), config).state;
  // The node wrote [RemoveMessage(REMOVE_ALL), summary, "Latest message 1"]: the thread now
  // holds the summary and the unsummarized message.
  REQUIRE(result.messages.size() == 2);
  CHECK(has_summary(result.messages[0]));
  CHECK(result.messages[1] == messages1.back());
  CHECK(model->invoke_calls().size() == 1);
  REQUIRE(result.running_summary);
  CHECK(result.running_summary->summary == "First summary of the conversation.");
  CHECK(result.running_summary->summarized_message_ids.size() == 6);

  // The next turn of the thread adds the new messages to the summarized list.
  result = app.invoke(update(second_batch()), config).state;
  auto messages2 = std::vector<Message>{messages1.back()};
  for (auto& m : second_batch()) messages2.push_back(m);
  const auto calls = model->invoke_calls();
  REQUIRE(calls.size() == 2);
  CHECK(calls[1].back().text().find("First summary of the conversation") != std::string::npos);
  REQUIRE(calls[1].size() == 5);
  CHECK(contents(slice(calls[1], 0, 4)) ==
        std::vector<std::string>{"Message 4", "Response 4", "Message 5", "Response 5"});
  REQUIRE(result.messages.size() == 4);  // summary + the last three
  CHECK(has_summary(result.messages[0]));
  CHECK(tail(result.messages, 3) == tail(messages2, 3));
  REQUIRE(result.running_summary);
  CHECK(result.running_summary->summary == "Updated summary including new messages.");
  CHECK(result.running_summary->summarized_message_ids.size() == 12);

  // The running summary was checkpointed: a fresh read of the thread has it.
  const auto snapshot = app.get_state(config);
  REQUIRE(snapshot);
  CHECK(snapshot->values.running_summary == result.running_summary);
}

TEST_CASE("SummarizationNode with LocalModel keeps early facts in the summary of a thread") {
  auto model = std::make_shared<sg::LocalModel>();
  sg::StateGraph<SummaryState> g;
  // LangMem's advice: summarize well before the budget (so the summarized part is not trimmed)
  // and cap the summary with the model's max_tokens.
  auto o = opts(120, 40);
  o.max_tokens_before_summary = 60;
  o.model_options.max_tokens = 40;
  g.add_node("summarize", sg::SummarizationNode<SummaryState>(model, o));
  g.add_node("chat",
             [model](const SummaryState& s) -> boost::asio::awaitable<sg::Update<SummaryState>> {
               const Message reply = co_await model->ainvoke(s.summarized_messages);
               co_return sg::Update<SummaryState>{}.set<&SummaryState::messages>(reply);
             });
  g.add_edge(sg::START, "summarize");
  g.add_edge("summarize", "chat");
  const auto app = g.compile({.checkpointer = std::make_shared<sg::InMemorySaver>()});
  sg::RunConfig config;
  config.thread_id = "facts";
  std::string last;
  for (const char* text :
       {"My name is Ada.", "I live in Lisbon.", "I like green tea.", "My cat is called Turing.",
        "I work on compilers.", "What is my name?"}) {
    auto r = app.invoke(sg::Update<SummaryState>{}.set<&SummaryState::messages>(sg::human(text)),
                        config);
    last = r.state.messages.back().text();
  }
  const auto state = app.get_state(config)->values;
  REQUIRE(state.running_summary);  // the budget forced at least one summary
  CHECK(state.running_summary->summary.find("Ada") != std::string::npos);
  CHECK(sg::count_tokens_approximately(state.summarized_messages) <= 120);
  CHECK(state.summarized_messages.size() < state.messages.size());
  CHECK(state.summarized_messages.front().text().starts_with("Summary of the conversation so far"));
  CHECK(last == "You told me: my name is Ada.");
}

TEST_CASE("summarize_messages over the loopback OpenAI server sends LangMem's prompt") {
  sg::testing::LoopbackOpenAI server;
  server.push(sg::testing::LoopbackReply::text("Ada lives in Lisbon."));
  sg::OpenAIConfig config;
  config.base_url = server.base_url();
  config.api_key = "test";
  const sg::OpenAIChatModel model(config);
  const auto messages = first_batch();
  auto result = sg::summarize_messages(messages, std::nullopt, model, opts(6, 1, kLen));
  REQUIRE(result.running_summary);
  CHECK(result.running_summary->summary == "Ada lives in Lisbon.");
  CHECK(result.messages.front().text() ==
        "Summary of the conversation so far: Ada lives in Lisbon.");
  const auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  const auto sent = requests[0].json()["messages"];
  REQUIRE(sent.size() == 7);
  CHECK(sent[0]["role"] == "user");
  CHECK(sent[0]["content"] == "Message 1");
  CHECK(sent[5]["role"] == "assistant");
  CHECK(sent[6]["content"] == "Create a summary of the conversation above:");
}
