// SPDX-License-Identifier: MIT
// Chat message histories (in memory, checkpointed threads) and RunnableWithMessageHistory:
// LangChain's tests/unit_tests/runnables/test_history.py ported with its expectations, then the
// flows of seeds/003 with LocalModel, the loopback OpenAI server and RocksDB across reopenings.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/core/state_graph.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/openai.hpp>
#include <stategraph/nodes/session_history.hpp>
#include <stategraph/reducers/messages_state.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <support/loopback_openai.hpp>
#include <support/temp_dir.hpp>

#include <atomic>
#include <stdexcept>
#include <thread>

namespace {

using nlohmann::json;
using sg::Message;

sg::RunConfig session(const std::string& id) {
  sg::RunConfig config;
  config.configurable = {{"session_id", id}};
  return config;
}

/// "you said: " and the human texts of `messages`, one a line (LangChain's test runnable).
std::string you_said(const std::vector<Message>& messages, const std::string& extra = {}) {
  std::string out = "you said: ";
  bool first = true;
  for (const auto& m : messages) {
    if (m.type != sg::MessageType::human) continue;
    out += (first ? "" : "\n") + m.text();
    first = false;
  }
  if (!extra.empty()) out += (first ? "" : "\n") + extra;
  return out;
}

std::vector<std::string> texts(const std::vector<Message>& messages) {
  std::vector<std::string> out;
  for (const auto& m : messages) out.push_back(std::string(to_string(m.type)) + ":" + m.text());
  return out;
}

}  // namespace

TEST_CASE("InMemoryChatMessageHistory has LangChain's interface and rejects RemoveMessages") {
  sg::InMemoryChatMessageHistory history;
  history.add_message(sg::system("system"));
  history.add_user_message("human 1");
  history.add_ai_message("ai");
  history.add_message(sg::human("human 2"));
  CHECK(history.to_string() == "System: system\nHuman: human 1\nAI: ai\nHuman: human 2");

  const std::vector bad{sg::human("kept?"), sg::remove_message("x")};
  CHECK_THROWS_WITH_AS(history.add_messages(bad), doctest::Contains("is a RemoveMessage"),
                       sg::Error);
  CHECK(history.messages().size() == 4);  // nothing of the bad batch was added

  history.keep_last(2);
  CHECK(texts(history.messages()) == std::vector<std::string>{"ai:ai", "human:human 2"});
  history.keep_last(5);
  CHECK(history.messages().size() == 2);
  history.clear();
  CHECK(history.messages().empty());
}

TEST_CASE("CheckpointedChatMessageHistory stores a session as a checkpointed thread") {
  auto saver = std::make_shared<sg::InMemorySaver>();
  sg::CheckpointedChatMessageHistory history(saver, "history/session_id=1");
  CHECK(history.messages().empty());
  history.add_messages(std::vector{sg::human("hello"), sg::ai("hi!")});
  history.add_message(sg::human("bye"));

  auto stored = history.messages();
  REQUIRE(stored.size() == 3);
  for (const auto& m : stored) CHECK_FALSE(m.id.empty());  // add_messages gives ids
  CHECK(saver->threads() == std::vector<std::string>{"history/session_id=1"});
  // One checkpoint per change (update_state as the node "history").
  sg::ListOptions list;
  list.thread_id = "history/session_id=1";
  CHECK(saver->list(list).size() == 2);

  // A second object on the same thread sees the same history; a message with a stored id
  // replaces it.
  sg::CheckpointedChatMessageHistory again(saver, "history/session_id=1");
  Message edited = sg::human("goodbye", stored[2].id);
  again.add_message(edited);
  CHECK(texts(history.messages()) ==
        std::vector<std::string>{"human:hello", "ai:hi!", "human:goodbye"});

  // keep_last removes the oldest with RemoveMessages, in one more checkpoint.
  history.keep_last(1);
  CHECK(texts(history.messages()) == std::vector<std::string>{"human:goodbye"});
  CHECK(saver->list(list).size() == 4);

  CHECK_THROWS_AS(history.add_messages(std::vector{sg::remove_message(stored[2].id)}), sg::Error);
  CHECK(history.messages().size() == 1);

  history.clear();  // deletes the thread
  CHECK(history.messages().empty());
  CHECK(saver->threads().empty());
  history.add_message(sg::human("fresh start"));
  CHECK(texts(history.messages()) == std::vector<std::string>{"human:fresh start"});

  CHECK_THROWS_AS(sg::CheckpointedChatMessageHistory(nullptr, "t"), sg::Error);
  CHECK_THROWS_AS(sg::CheckpointedChatMessageHistory(saver, ""), sg::Error);
}

TEST_CASE("a checkpointed history survives reopening a RocksDB database") {
  sg::test::TempDir dir;
  const std::string path = dir.sub("db");
  {
    auto histories = sg::checkpointed_histories(sg::RocksDbSaver::open(path));
    auto h = histories({{"session_id", "ticket-1"}});
    h->add_messages(std::vector{sg::human("my order is 45678"), sg::ai("Noted.")});
  }
  auto saver = sg::RocksDbSaver::open(path);
  auto histories = sg::checkpointed_histories(saver);
  auto h = histories({{"session_id", "ticket-1"}});
  CHECK(texts(h->messages()) == std::vector<std::string>{"human:my order is 45678", "ai:Noted."});
  CHECK(histories({{"session_id", "ticket-2"}})->messages().empty());
  // The thread is an ordinary graph thread: a graph over MessagesState reads it.
  sg::StateGraph<sg::MessagesState> g;
  g.add_node("noop", [](const sg::MessagesState&) { return sg::Update<sg::MessagesState>{}; });
  g.add_edge(sg::START, "noop");
  const auto app = g.compile({.checkpointer = saver});
  sg::RunConfig config;
  config.thread_id = "history/session_id=ticket-1";
  CHECK(app.get_state(config)->values.messages.size() == 2);
}

TEST_CASE("session_thread_id keeps different sessions on different threads") {
  CHECK(sg::session_thread_id("history", {{"session_id", "1"}}) == "history/session_id=1");
  CHECK(sg::session_thread_id("h", {{"user_id", "123"}, {"conversation_id", "1"}}) ==
        "h/conversation_id=1/user_id=123");
  // Values holding the separators cannot forge another session's thread.
  const auto a = sg::session_thread_id("h", {{"a", "x/b=y"}});
  const auto b = sg::session_thread_id("h", {{"a", "x"}, {"b", "y"}});
  CHECK(a == "h/a=x%2Fb%3Dy");
  CHECK(a != b);
  CHECK(sg::session_thread_id("h", {{"a", "50%"}}) == "h/a=50%25");
}

TEST_CASE("history factories return one history per session") {
  auto memory = sg::in_memory_histories();
  auto one = memory({{"session_id", "1"}});
  CHECK(one == memory({{"session_id", "1"}}));
  CHECK(one != memory({{"session_id", "2"}}));
  auto saved = sg::checkpointed_histories(std::make_shared<sg::InMemorySaver>(), "chat");
  auto h = std::dynamic_pointer_cast<sg::CheckpointedChatMessageHistory>(
      saved({{"user_id", "123"}, {"conversation_id", "1"}}));
  REQUIRE(h);
  CHECK(h->thread_id() == "chat/conversation_id=1/user_id=123");
  CHECK_THROWS_AS(sg::checkpointed_histories(nullptr), sg::Error);
}

// --- LangChain's test_history.py ------------------------------------------------------------

TEST_CASE("RunnableWithMessageHistory: messages input (test_input_messages)") {
  sg::RunnableWithMessageHistory with_history(
      [](const json& input, const sg::RunConfig&) -> json {
        return you_said(sg::messages_from_json(input));
      },
      sg::in_memory_histories());
  const auto config = session("1");
  CHECK(with_history.invoke(json::array({sg::human("hello")}), config) == "you said: hello");
  CHECK(with_history.invoke(json::array({sg::human("good bye")}), config) ==
        "you said: hello\ngood bye");
  // The string output was saved as an AI message.
  CHECK(texts(with_history.session_history(config)->messages()) ==
        std::vector<std::string>{"human:hello", "ai:you said: hello", "human:good bye",
                                 "ai:you said: hello\ngood bye"});
}

TEST_CASE("RunnableWithMessageHistory: dict input with an input key (test_input_dict)") {
  sg::RunnableWithMessageHistory with_history(
      [](const json& input, const sg::RunConfig&) -> json {
        return you_said(sg::messages_from_json(input.at("messages")));
      },
      sg::in_memory_histories(), {.input_messages_key = "messages"});
  const auto config = session("2");
  CHECK(with_history.invoke({{"messages", json::array({sg::human("hello")})}}, config) ==
        "you said: hello");
  CHECK(with_history.invoke({{"messages", json::array({sg::human("good bye")})}}, config) ==
        "you said: hello\ngood bye");
}

TEST_CASE("RunnableWithMessageHistory: a history key (test_input_dict_with_history_key)") {
  sg::RunnableWithMessageHistory with_history(
      [](const json& input, const sg::RunConfig&) -> json {
        return you_said(sg::messages_from_json(input.at("history")),
                        input.at("input").get<std::string>());
      },
      sg::in_memory_histories(),
      {.input_messages_key = "input", .history_messages_key = "history"});
  const auto config = session("3");
  CHECK(with_history.invoke({{"input", "hello"}}, config) == "you said: hello");
  CHECK(with_history.invoke({{"input", "good bye"}}, config) == "you said: hello\ngood bye");
}

TEST_CASE("RunnableWithMessageHistory: message, message list and dict outputs") {
  auto reply = [](const json& input) {
    return sg::ai(you_said(sg::messages_from_json(input.at("history")),
                           input.at("input").get<std::string>()));
  };
  const sg::MessageHistoryOptions keys{.input_messages_key = "input",
                                       .history_messages_key = "history"};

  // test_output_message
  sg::RunnableWithMessageHistory one(
      [&](const json& input, const sg::RunConfig&) -> json { return reply(input); },
      sg::in_memory_histories(), keys);
  CHECK(sg::message_from_json(one.invoke({{"input", "hello"}}, session("4"))) ==
        sg::ai("you said: hello"));
  CHECK(one.invoke_message({{"input", "good bye"}}, session("4")) ==
        sg::ai("you said: hello\ngood bye"));

  // test_output_messages
  sg::RunnableWithMessageHistory list(
      [&](const json& input, const sg::RunConfig&) -> json { return json::array({reply(input)}); },
      sg::in_memory_histories(), keys);
  CHECK(list.invoke({{"input", "hello"}}, session("5")) ==
        json::array({sg::ai("you said: hello")}));
  CHECK(list.invoke({{"input", "good bye"}}, session("5")) ==
        json::array({sg::ai("you said: hello\ngood bye")}));

  // test_output_dict
  auto dict_keys = keys;
  dict_keys.output_messages_key = "output";
  sg::RunnableWithMessageHistory dict(
      [&](const json& input, const sg::RunConfig&) -> json {
        return {{"output", json::array({reply(input)})}, {"other", 1}};
      },
      sg::in_memory_histories(), dict_keys);
  CHECK(dict.invoke({{"input", "hello"}}, session("6"))["output"] ==
        json::array({sg::ai("you said: hello")}));
  CHECK(dict.invoke({{"input", "good bye"}}, session("6"))["output"] ==
        json::array({sg::ai("you said: hello\ngood bye")}));
  CHECK(dict.session_history(session("6"))->messages().size() == 4);
}

TEST_CASE("RunnableWithMessageHistory: several session keys (test_using_custom_config_specs)") {
  std::map<sg::SessionKeys, std::shared_ptr<sg::InMemoryChatMessageHistory>> store;
  sg::RunnableWithMessageHistory with_history(
      [](const json& input, const sg::RunConfig&) -> json {
        return json::array({sg::ai(you_said(sg::messages_from_json(input.at("messages"))))});
      },
      [&](const sg::SessionKeys& keys) {
        auto& slot = store[keys];
        if (!slot) slot = std::make_shared<sg::InMemoryChatMessageHistory>();
        return slot;
      },
      {.input_messages_key = "messages",
       .history_messages_key = "history",
       .history_factory_config = {"user_id", "conversation_id"}});
  sg::RunConfig user1;
  user1.configurable = {{"user_id", "user1"}, {"conversation_id", "1"}};
  sg::RunConfig user2;
  user2.configurable = {{"user_id", "user2"}, {"conversation_id", 1}};  // a number works too

  CHECK(with_history.invoke({{"messages", json::array({sg::human("hello")})}}, user1) ==
        json::array({sg::ai("you said: hello")}));
  CHECK(with_history.invoke({{"messages", json::array({sg::human("goodbye")})}}, user1) ==
        json::array({sg::ai("you said: goodbye")}));
  CHECK(with_history.invoke({{"messages", json::array({sg::human("meow")})}}, user2) ==
        json::array({sg::ai("you said: meow")}));
  REQUIRE(store.size() == 2);
  const sg::SessionKeys k1{{"conversation_id", "1"}, {"user_id", "user1"}};
  const sg::SessionKeys k2{{"conversation_id", "1"}, {"user_id", "user2"}};
  CHECK(texts(store.at(k1)->messages()) ==
        std::vector<std::string>{"human:hello", "ai:you said: hello", "human:goodbye",
                                 "ai:you said: goodbye"});
  CHECK(texts(store.at(k2)->messages()) ==
        std::vector<std::string>{"human:meow", "ai:you said: meow"});
}

TEST_CASE("RunnableWithMessageHistory over a function of messages gets history then input") {
  std::vector<std::vector<std::string>> seen;
  auto histories = sg::in_memory_histories();
  sg::RunnableWithMessageHistory with_history(
      [&](const std::vector<Message>& messages) {
        seen.push_back(texts(messages));
        return sg::ai("reply " + std::to_string(messages.size()));
      },
      histories, {.input_messages_key = "question", .history_messages_key = "history"});
  CHECK(with_history.invoke({{"question", "one"}, {"lang", "en"}}, session("f")) ==
        json(sg::ai("reply 1")));
  CHECK(with_history.invoke_message({{"question", json::array({sg::human("two")})}}, session("f"))
            .text() == "reply 3");
  REQUIRE(seen.size() == 2);
  CHECK(seen[1] == std::vector<std::string>{"human:one", "ai:reply 1", "human:two"});
  CHECK(histories({{"session_id", "f"}})->messages().size() == 4);
  CHECK_THROWS_AS(
      sg::RunnableWithMessageHistory(sg::RunnableWithMessageHistory::MessagesRunnable{}, histories),
      sg::Error);
}

TEST_CASE("RunnableWithMessageHistory: missing keys and bad input are clear errors") {
  int calls = 0;
  auto histories = sg::in_memory_histories();
  sg::RunnableWithMessageHistory with_history(
      [&](const json& input, const sg::RunConfig&) -> json {
        ++calls;
        return you_said(sg::messages_from_json(input.at("input")));
      },
      histories, {.input_messages_key = "input"});

  CHECK_THROWS_WITH_AS(
      with_history.invoke({{"input", "hi"}}, sg::RunConfig{}),
      "Missing keys [\"session_id\"] in config.configurable. Expected keys are [\"session_id\"]. "
      "Pass them in the RunConfig; e.g. config.configurable = "
      "{\"session_id\":\"[your-value-here]\"}"
      "; chain.invoke({\"input\": \"foo\"}, config)",
      sg::Error);
  sg::RunConfig other;
  other.configurable = {{"user_id", "1"}};
  CHECK_THROWS_WITH_AS(with_history.invoke({{"input", "hi"}}, other),
                       doctest::Contains("Missing keys [\"session_id\"]"), sg::Error);

  CHECK_THROWS_WITH_AS(with_history.invoke({{"text", "hi"}}, session("e")),
                       doctest::Contains("the input has no key \"input\" (input_messages_key)"),
                       sg::Error);
  CHECK_THROWS_WITH_AS(with_history.invoke({{"input", 42}}, session("e")),
                       doctest::Contains("expected a string, a message or a list of messages"),
                       sg::Error);
  sg::RunConfig bad_value;
  bad_value.configurable = {{"session_id", json::array({1})}};
  CHECK_THROWS_WITH_AS(with_history.invoke({{"input", "hi"}}, bad_value),
                       doctest::Contains("must be a string or a number"), sg::Error);
  CHECK(calls == 0);
  CHECK(histories({{"session_id", "e"}})->messages().empty());

  // A failing runnable leaves the history as it was.
  sg::RunnableWithMessageHistory failing(
      [](const json&, const sg::RunConfig&) -> json { throw std::runtime_error("model down"); },
      histories);
  CHECK_THROWS_WITH(failing.invoke("hi", session("e")), "model down");
  CHECK(histories({{"session_id", "e"}})->messages().empty());

  // An output without messages saves the input only, and invoke_message says so.
  sg::RunnableWithMessageHistory silent(
      [](const json&, const sg::RunConfig&) -> json { return json::array(); }, histories);
  CHECK_THROWS_WITH_AS(silent.invoke_message("hi", session("s")),
                       doctest::Contains("the output holds no message"), sg::Error);
  CHECK(texts(histories({{"session_id", "s"}})->messages()) ==
        std::vector<std::string>{"human:hi"});

  CHECK_THROWS_AS(
      sg::RunnableWithMessageHistory(sg::RunnableWithMessageHistory::Runnable{}, histories),
      sg::Error);
  CHECK_THROWS_AS(sg::RunnableWithMessageHistory(std::shared_ptr<const sg::ChatModel>{}, histories),
                  sg::Error);
  CHECK_THROWS_AS(sg::RunnableWithMessageHistory(std::make_shared<sg::LocalModel>(), histories,
                                                 {.history_factory_config = {}}),
                  sg::Error);
}

// --- seeds/003 with real models ---------------------------------------------------------------

TEST_CASE("RunnableWithMessageHistory over LocalModel remembers per session (seeds/003)") {
  auto saver = std::make_shared<sg::InMemorySaver>();
  // Messages input, message output: the model itself.
  sg::RunnableWithMessageHistory chat(std::make_shared<sg::LocalModel>(),
                                      sg::checkpointed_histories(saver));
  CHECK(chat.invoke_message(json::array({sg::human("hi! my name is bob.")}), session("1")).text() ==
        "Noted: my name is bob.");
  CHECK(chat.invoke_message(json::array({sg::human("whats my name?")}), session("1")).text() ==
        "You told me: my name is bob.");
  CHECK(chat.invoke_message(json::array({sg::human("whats my name?")}), session("1a")).text() ==
        "I don't know that yet.");
  CHECK(saver->threads() ==
        std::vector<std::string>{"history/session_id=1", "history/session_id=1a"});

  // Dictionary input with input and history keys, keyed by user_id + conversation_id: the
  // runnable builds its prompt (a system message, the history, the question).
  auto model = std::make_shared<sg::LocalModel>();
  sg::RunnableWithMessageHistory with_message_history(
      [model](const json& input, const sg::RunConfig&) -> json {
        std::vector<Message> prompt{sg::system("You're an assistant who speaks in " +
                                               input.at("language").get<std::string>())};
        for (auto& m : sg::messages_from_json(input.at("history"))) prompt.push_back(m);
        prompt.push_back(sg::human(input.at("input").get<std::string>()));
        return model->invoke(prompt);
      },
      sg::checkpointed_histories(saver),
      {.input_messages_key = "input",
       .history_messages_key = "history",
       .history_factory_config = {"user_id", "conversation_id"}});
  sg::RunConfig config;
  config.configurable = {{"user_id", "123"}, {"conversation_id", "1"}};
  with_message_history.invoke({{"language", "italian"}, {"input", "hi! my name is bob."}}, config);
  CHECK(with_message_history
            .invoke_message({{"language", "italian"}, {"input", "whats my name?"}}, config)
            .text() == "You told me: my name is bob.");  // remembers
  config.configurable["user_id"] = "456";
  CHECK(with_message_history
            .invoke_message({{"language", "italian"}, {"input", "whats my name?"}}, config)
            .text() == "I don't know that yet.");  // a new user_id does not remember
  CHECK(sg::CheckpointedChatMessageHistory(saver, "history/conversation_id=1/user_id=123")
            .messages()
            .size() == 4);
}

TEST_CASE("RunnableWithMessageHistory over the loopback OpenAI server sends the history") {
  sg::testing::LoopbackOpenAI server;  // echoes the last user message
  sg::OpenAIConfig openai;
  openai.base_url = server.base_url();
  openai.api_key = "test";
  auto model = std::make_shared<sg::OpenAIChatModel>(openai);
  auto saver = std::make_shared<sg::InMemorySaver>();
  sg::RunnableWithMessageHistory chat(model, sg::checkpointed_histories(saver),
                                      {.input_messages_key = "input_messages"});

  const auto first = chat.invoke_message(
      {{"input_messages", json::array({sg::human("hi - im bob!")})}}, session("4"));
  CHECK(first.text() == "echo: hi - im bob!");
  chat.invoke_message({{"input_messages", json::array({sg::human("whats my name?")})}},
                      session("4"));
  chat.invoke_message({{"input_messages", json::array({sg::human("whats my name?")})}},
                      session("4a"));

  const auto requests = server.requests();
  REQUIRE(requests.size() == 3);
  const auto second = requests[1].json()["messages"];
  REQUIRE(second.size() == 3);
  CHECK(second[0]["role"] == "user");
  CHECK(second[0]["content"] == "hi - im bob!");
  CHECK(second[1]["role"] == "assistant");
  CHECK(second[1]["content"] == "echo: hi - im bob!");
  CHECK(second[2]["content"] == "whats my name?");
  CHECK(requests[2].json()["messages"].size() == 1);  // a new session starts empty
  CHECK(sg::CheckpointedChatMessageHistory(saver, "history/session_id=4").messages().size() == 4);
}

TEST_CASE("RunnableWithMessageHistory serves concurrent sessions on one checkpointer") {
  auto saver = std::make_shared<sg::InMemorySaver>();
  sg::RunnableWithMessageHistory chat(
      [](const std::vector<Message>& messages) {
        return sg::ai("seen " + std::to_string(messages.size()));
      },
      sg::checkpointed_histories(saver));
  constexpr int kThreads = 6;
  constexpr int kTurns = 15;
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kTurns; ++i) {
        const auto reply =
            chat.invoke_message("turn " + std::to_string(i), session("s" + std::to_string(t)));
        // Each session sees only its own turns: 2 per earlier turn, then the new message.
        if (reply.text() != "seen " + std::to_string(2 * i + 1)) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(wrong == 0);
  CHECK(saver->threads().size() == kThreads);
  for (int t = 0; t < kThreads; ++t) {
    CHECK(chat.session_history(session("s" + std::to_string(t)))->messages().size() == 2 * kTurns);
  }
}
