// SPDX-License-Identifier: MIT
// The buffer memories of seeds/000 (full buffer, window of k exchanges, token buffer) with the
// lesson's expected outputs, their modern equivalents as bounded histories, and the window as a
// pre-model hook in checkpointed graphs (LocalModel, the loopback OpenAI server).
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/core/state_graph.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/openai.hpp>
#include <stategraph/models/react_agent.hpp>
#include <stategraph/nodes/buffer_memory.hpp>
#include <stategraph/nodes/session_history.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <support/loopback_openai.hpp>

#include "fake_model.hpp"

namespace {

using nlohmann::json;
using sg::Message;

std::vector<std::string> typed_texts(const std::vector<Message>& messages) {
  std::vector<std::string> out;
  for (const auto& m : messages) out.push_back(std::string(to_string(m.type)) + ": " + m.text());
  return out;
}

std::vector<std::string> typed_texts(const json& messages) {
  return typed_texts(sg::messages_from_json(messages));
}

const sg::TokenCounter kMessageCount{
    [](std::span<const Message> m) { return sg::count_messages(m); }};

const std::string kStory =
    "Once upon a time, in a mystical land far beyond the mountains, there lived a magnificent "
    "dragon named Ember. Ember had scales that shimmered like rubies in the sunlight and wings "
    "that could span an entire valley. The dragon was known throughout the kingdom for its "
    "wisdom and gentle nature, despite its fearsome appearance.";

template <class Memory>
void save_dragon_story(Memory& memory) {
  memory.save_context({{"input", "Tell me a long story about a dragon."}}, {{"output", kStory}});
  memory.save_context({{"input", "What was the dragon's name?"}},
                      {{"output", "The dragon's name was Ember."}});
}

}  // namespace

TEST_CASE("ConversationBufferMemory returns the buffer as a string or as messages (seeds/000)") {
  sg::ConversationBufferMemory memory;
  memory.save_context({{"input", "Hello!"}}, {{"output", "Hi there! How can I help?"}});
  CHECK(memory.load_memory_variables() ==
        json{{"history", "Human: Hello!\nAI: Hi there! How can I help?"}});
  CHECK(memory.memory_variables() == std::vector<std::string>{"history"});

  sg::ConversationBufferMemory as_messages({.return_messages = true});
  as_messages.save_context({{"input", "Hello!"}}, {{"output", "Hi there! How can I help?"}});
  const json vars = as_messages.load_memory_variables();
  REQUIRE(vars.contains("history"));
  CHECK(typed_texts(vars["history"]) ==
        std::vector<std::string>{"human: Hello!", "ai: Hi there! How can I help?"});

  sg::ConversationBufferMemory custom(
      {.memory_key = "chat_history", .human_prefix = "User", .ai_prefix = "Assistant"});
  custom.save_context({{"input", "What's 2+2?"}}, {{"output", "2+2 equals 4."}});
  CHECK(custom.load_memory_variables() ==
        json{{"chat_history", "User: What's 2+2?\nAssistant: 2+2 equals 4."}});
}

TEST_CASE("ConversationBufferMemory exposes and clears its chat memory") {
  sg::ConversationBufferMemory memory({.return_messages = true});
  memory.save_context({{"input", "Hello"}}, {{"output", "Hi!"}});
  memory.save_context({{"input", "How are you?"}}, {{"output", "I'm doing well!"}});
  const auto messages = memory.chat_memory().messages();
  CHECK(messages.size() == 4);
  CHECK(typed_texts(messages) == std::vector<std::string>{"human: Hello", "ai: Hi!",
                                                          "human: How are you?",
                                                          "ai: I'm doing well!"});
  memory.clear();
  CHECK(memory.chat_memory().messages().empty());
  CHECK(memory.load_memory_variables() == json{{"history", json::array()}});
}

TEST_CASE("save_context chooses its keys as LangChain does and rejects what it cannot store") {
  sg::ConversationBufferMemory memory;
  // The memory key and "stop" are not prompt inputs; "output" wins among several outputs.
  memory.save_context({{"input", "a"}, {"history", "old"}, {"stop", "x"}},
                      {{"output", "b"}, {"extra", "c"}});
  CHECK(memory.buffer_as_str() == "Human: a\nAI: b");

  CHECK_THROWS_WITH_AS(memory.save_context({{"question", "q"}, {"topic", "t"}}, {{"output", "o"}}),
                       doctest::Contains("One input key expected got ['question', 'topic']"),
                       sg::Error);
  CHECK_THROWS_WITH_AS(memory.save_context({{"input", "q"}}, {{"text", "o"}, {"score", "1"}}),
                       doctest::Contains("Got multiple output keys: ['score', 'text'], cannot "
                                         "determine which to store in memory"),
                       sg::Error);
  CHECK_THROWS_WITH_AS(memory.save_context({{"input", 3}}, {{"output", "o"}}),
                       doctest::Contains("inputs[\"input\"] must be a string"), sg::Error);
  CHECK_THROWS_AS(memory.save_context(json::array(), {{"output", "o"}}), sg::Error);

  sg::ConversationBufferMemory keyed({.input_key = "question", .output_key = "text"});
  keyed.save_context({{"question", "q"}, {"topic", "t"}}, {{"text", "o"}, {"score", "1"}});
  CHECK(keyed.buffer_as_str() == "Human: q\nAI: o");
  CHECK_THROWS_WITH_AS(keyed.save_context({{"topic", "t"}}, {{"text", "o"}}),
                       doctest::Contains("no key 'question' (input_key)"), sg::Error);
  CHECK_THROWS_WITH_AS(keyed.save_context({{"question", "q"}}, {{"output", "o"}}),
                       doctest::Contains("no key 'text' (output_key)"), sg::Error);

  // Nothing of the rejected exchanges was stored.
  CHECK(memory.chat_memory().messages().size() == 2);
  CHECK(keyed.chat_memory().messages().size() == 2);
}

TEST_CASE("ConversationBufferWindowMemory returns the last k exchanges at read time") {
  sg::ConversationBufferWindowMemory memory(3, {.return_messages = true});
  for (int i = 1; i <= 5; ++i) {
    memory.save_context({{"input", "Message " + std::to_string(i)}},
                        {{"output", "Response " + std::to_string(i)}});
  }
  CHECK(typed_texts(memory.load_memory_variables()["history"]) ==
        std::vector<std::string>{"human: Message 3", "ai: Response 3", "human: Message 4",
                                 "ai: Response 4", "human: Message 5", "ai: Response 5"});
  CHECK(memory.chat_memory().messages().size() == 10);  // storage keeps everything

  sg::ConversationBufferWindowMemory one(1, {.human_prefix = "Customer", .ai_prefix = "Agent"},
                                         memory.chat_memory_ptr());
  CHECK(one.load_memory_variables() == json{{"history", "Customer: Message 5\nAgent: Response 5"}});
  sg::ConversationBufferWindowMemory none(0, {}, memory.chat_memory_ptr());
  CHECK(none.load_memory_variables() == json{{"history", ""}});
  CHECK(sg::ConversationBufferWindowMemory().k() == 5);
}

TEST_CASE("ConversationTokenBufferMemory prunes the history after each save") {
  // With the approximate counter the dragon story and its follow-up fit 200 tokens.
  sg::ConversationTokenBufferMemory roomy(200, {}, {.return_messages = true});
  save_dragon_story(roomy);
  const auto all = roomy.chat_memory().messages();
  CHECK(all.size() == 4);
  CHECK(sg::count_tokens_approximately(all) <= 200);

  // A smaller budget drops the long story: the oldest messages go first, and for good.
  const std::int64_t tail_tokens = sg::count_tokens_approximately(std::vector{
      sg::human("What was the dragon's name?"), sg::ai("The dragon's name was Ember.")});
  sg::ConversationTokenBufferMemory tight(tail_tokens + 5, {}, {.return_messages = true});
  save_dragon_story(tight);
  const json history = tight.load_memory_variables()["history"];
  CHECK(history.size() == 2);  // "Messages retained: 2"
  CHECK(typed_texts(history) == std::vector<std::string>{"human: What was the dragon's name?",
                                                         "ai: The dragon's name was Ember."});
  CHECK(tight.chat_memory().messages().size() == 2);

  // Any counter; an exchange may be split, as in LangChain.
  sg::ConversationTokenBufferMemory three(3, kMessageCount);
  save_dragon_story(three);
  CHECK(three.buffer_as_str() ==
        "AI: " + kStory + "\nHuman: What was the dragon's name?\nAI: The dragon's name was Ember.");
  sg::ConversationTokenBufferMemory zero(0, kMessageCount);
  save_dragon_story(zero);
  CHECK(zero.chat_memory().messages().empty());

  CHECK(sg::ConversationTokenBufferMemory().max_token_limit() == 2000);
  CHECK_THROWS_WITH_AS(sg::ConversationTokenBufferMemory(-1),
                       doctest::Contains("must not be negative"), sg::Error);
}

TEST_CASE("buffer memories work over a checkpointed history") {
  auto saver = std::make_shared<sg::InMemorySaver>();
  auto histories = sg::checkpointed_histories(saver);
  {
    sg::ConversationTokenBufferMemory memory(2, kMessageCount, {},
                                             histories({{"session_id", "s"}}));
    for (int i = 1; i <= 3; ++i) {
      memory.save_context({{"input", "q" + std::to_string(i)}},
                          {{"output", "a" + std::to_string(i)}});
    }
  }
  // A new memory on the same session reads the pruned, checkpointed history.
  sg::ConversationBufferMemory reader({}, histories({{"session_id", "s"}}));
  CHECK(reader.buffer_as_str() == "Human: q3\nAI: a3");
  sg::CheckpointedChatMessageHistory thread(saver, "history/session_id=s");
  CHECK(thread.messages().size() == 2);
}

TEST_CASE("WindowedChatMessageHistory prunes beyond the window and counts what it saw") {
  sg::WindowedChatMessageHistory history(2);
  for (int i = 1; i <= 3; ++i) {
    history.add_messages(
        std::vector{sg::human("q" + std::to_string(i)), sg::ai("a" + std::to_string(i))});
  }
  CHECK(history.total_messages_seen() == 6);
  CHECK(history.window_size() == 2);
  CHECK(typed_texts(history.messages()) ==
        std::vector<std::string>{"human: q2", "ai: a2", "human: q3", "ai: a3"});
  CHECK_THROWS_AS(history.add_messages(std::vector{sg::remove_message("x")}), sg::Error);
  CHECK(history.total_messages_seen() == 6);  // a rejected batch is not counted

  // Over a checkpointed thread the pruning is RemoveMessages in the thread.
  auto saver = std::make_shared<sg::InMemorySaver>();
  auto thread = std::make_shared<sg::CheckpointedChatMessageHistory>(saver, "t");
  sg::WindowedChatMessageHistory windowed(1, thread);
  windowed.add_messages(std::vector{sg::human("q1"), sg::ai("a1")});
  windowed.add_messages(std::vector{sg::human("q2"), sg::ai("a2")});
  CHECK(typed_texts(thread->messages()) == std::vector<std::string>{"human: q2", "ai: a2"});
}

TEST_CASE("TokenLimitedChatMessageHistory keeps the newest messages within the limit") {
  sg::TokenLimitedChatMessageHistory history(3, kMessageCount);
  history.add_messages(std::vector{sg::human("q1"), sg::ai("a1")});
  history.add_messages(std::vector{sg::human("q2"), sg::ai("a2")});
  CHECK(typed_texts(history.messages()) ==
        std::vector<std::string>{"ai: a1", "human: q2", "ai: a2"});
  sg::TokenLimitedChatMessageHistory approx;  // 2000 approximate tokens
  approx.add_messages(std::vector{sg::human(std::string(9000, 'x')), sg::human("short")});
  CHECK(typed_texts(approx.messages()) == std::vector<std::string>{"human: short"});
  CHECK_THROWS_AS(sg::TokenLimitedChatMessageHistory(-5), sg::Error);
}

TEST_CASE("last_exchanges keeps whole exchanges, tool results with their turn") {
  const std::vector<Message> messages{
      sg::system("be brief", "s"),
      sg::human("q1", "h1"),
      sg::ai("a1", "a1"),
      sg::human("weather?", "h2"),
      sg::ai("", {sg::ToolCall{"c1", "weather", {}}}, "call"),
      sg::tool("sunny", "c1", "t1"),
      sg::ai("It is sunny.", "a2"),
      sg::human("thanks", "h3"),
  };
  auto ids = [](const std::vector<Message>& ms) {
    std::vector<std::string> out;
    for (const auto& m : ms) out.push_back(m.id);
    return out;
  };
  CHECK(ids(sg::last_exchanges(messages, 1)) == std::vector<std::string>{"h3"});
  CHECK(ids(sg::last_exchanges(messages, 2)) ==
        std::vector<std::string>{"h2", "call", "t1", "a2", "h3"});
  CHECK(ids(sg::last_exchanges(messages, 2, true)) ==
        std::vector<std::string>{"s", "h2", "call", "t1", "a2", "h3"});
  CHECK(ids(sg::last_exchanges(messages, 3)) ==
        std::vector<std::string>{"h1", "a1", "h2", "call", "t1", "a2", "h3"});
  CHECK(sg::last_exchanges(messages, 10).size() == 7);  // the system message is not a turn
  CHECK(sg::last_exchanges(messages, 0).empty());
  CHECK(ids(sg::last_exchanges(messages, 0, true)) == std::vector<std::string>{"s"});
}

TEST_CASE("buffer_window_hook shows the model k exchanges and the current turn") {
  auto model = std::make_shared<sg_test::FakeChatModel>(std::vector{sg::ai("ok")});
  sg::ReactAgentOptions options;
  options.pre_model_hook = sg::buffer_window_hook<sg::AgentState>(2);
  options.checkpointer = std::make_shared<sg::InMemorySaver>();
  const auto agent = sg::create_react_agent(model, {}, options);
  sg::RunConfig config;
  config.thread_id = "t";
  for (int i = 0; i < 5; ++i) {
    agent.invoke(sg::Update<sg::AgentState>{}.set<&sg::AgentState::messages>(
                     sg::human("question " + std::to_string(i))),
                 config);
  }
  const auto calls = model->invoke_calls();
  REQUIRE(calls.size() == 5);
  CHECK(calls[1].size() == 3);
  REQUIRE(calls[4].size() == 5);  // two exchanges, then the question
  CHECK(calls[4].front().text() == "question 2");
  CHECK(calls[4].back().text() == "question 4");
  CHECK(agent.get_state(config)->values.messages.size() == 10);  // the thread keeps everything
}

TEST_CASE("with LocalModel, a fact outside the window is forgotten, a full buffer keeps it") {
  // The lesson's ConversationChain: load the memory, call the model, save the exchange.
  auto chat = [](sg::BaseChatMemory& memory) {
    sg::LocalModel model;
    std::string last;
    for (const char* text :
         {"My name is Ada.", "I live in Lisbon.", "I like green tea.", "What is my name?"}) {
      auto messages = sg::messages_from_json(memory.load_memory_variables()["history"]);
      messages.push_back(sg::human(text));
      last = model.invoke(messages).text();
      memory.save_context({{"input", text}}, {{"response", last}});
    }
    return last;
  };
  sg::ConversationBufferMemory full({.return_messages = true});
  CHECK(chat(full) == "You told me: my name is Ada.");
  sg::ConversationBufferWindowMemory window(2, {.return_messages = true});
  CHECK(chat(window) == "I don't know that yet.");
  sg::ConversationTokenBufferMemory tokens(40, {}, {.return_messages = true});
  CHECK(chat(tokens) == "I don't know that yet.");

  // The same through the hook in a checkpointed ReAct agent.
  auto agent_chat = [](std::size_t k) {
    sg::ReactAgentOptions options;
    options.pre_model_hook = sg::buffer_window_hook<sg::AgentState>(k);
    options.checkpointer = std::make_shared<sg::InMemorySaver>();
    const auto agent = sg::create_react_agent(std::make_shared<sg::LocalModel>(), {}, options);
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
  CHECK(agent_chat(3) == "You told me: my name is Ada.");
  CHECK(agent_chat(2) == "I don't know that yet.");
}

TEST_CASE("a window memory over the loopback OpenAI server sends 2k messages and the input") {
  sg::testing::LoopbackOpenAI server;
  sg::OpenAIConfig openai;
  openai.base_url = server.base_url();
  openai.api_key = "test";
  const sg::OpenAIChatModel model(openai);
  sg::ConversationBufferWindowMemory memory(1, {.return_messages = true});
  for (int i = 1; i <= 3; ++i) {
    const std::string text = "turn " + std::to_string(i);
    auto messages = sg::messages_from_json(memory.load_memory_variables()["history"]);
    messages.push_back(sg::human(text));
    const Message reply = model.invoke(messages);
    CHECK(reply.text() == "echo: " + text);
    memory.save_context({{"input", text}}, {{"output", reply.text()}});
  }
  const auto requests = server.requests();
  REQUIRE(requests.size() == 3);
  const auto sent = requests[2].json()["messages"];
  REQUIRE(sent.size() == 3);
  CHECK(sent[0]["content"] == "turn 2");
  CHECK(sent[1]["content"] == "echo: turn 2");
  CHECK(sent[2]["content"] == "turn 3");

  // The hook in a graph, over the same server.
  sg::testing::LoopbackOpenAI server2;
  openai.base_url = server2.base_url();
  const auto agent =
      sg::create_react_agent(std::make_shared<sg::OpenAIChatModel>(openai), {},
                             {.pre_model_hook = sg::buffer_window_hook<sg::AgentState>(1),
                              .checkpointer = std::make_shared<sg::InMemorySaver>()});
  sg::RunConfig config;
  config.thread_id = "w";
  for (int i = 1; i <= 3; ++i) {
    agent.invoke(sg::Update<sg::AgentState>{}.set<&sg::AgentState::messages>(
                     sg::human("turn " + std::to_string(i))),
                 config);
  }
  const auto graph_requests = server2.requests();
  REQUIRE(graph_requests.size() == 3);
  CHECK(graph_requests[2].json()["messages"].size() == 3);
  CHECK(graph_requests[2].json()["messages"][0]["content"] == "turn 2");

  // The modern pattern: a windowed history behind RunnableWithMessageHistory.
  sg::testing::LoopbackOpenAI server3;
  openai.base_url = server3.base_url();
  auto history = std::make_shared<sg::WindowedChatMessageHistory>(2);
  sg::RunnableWithMessageHistory chat(std::make_shared<sg::OpenAIChatModel>(openai),
                                      [history](const sg::SessionKeys&) { return history; });
  config.configurable = {{"session_id", "w"}};
  for (int i = 1; i <= 4; ++i) (void)chat.invoke_message("turn " + std::to_string(i), config);
  const auto chat_requests = server3.requests();
  REQUIRE(chat_requests.size() == 4);
  CHECK(chat_requests[3].json()["messages"].size() == 5);  // 2 exchanges and the input
  CHECK(chat_requests[3].json()["messages"][0]["content"] == "turn 2");
  CHECK(history->total_messages_seen() == 8);
  CHECK(history->messages().size() == 4);
}
