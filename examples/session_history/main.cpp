// SPDX-License-Identifier: MIT
// Message histories per session (seeds/003, LangChain's "How to add message history"): a model
// and a prompt wrapped with RunnableWithMessageHistory, their histories keyed by a session id,
// or by a user id and a conversation id, and stored as checkpointed threads of a RocksDB
// database, so a second run of this program resumes them.
//
//   session_history            # a temporary database, removed at exit
//   session_history DB         # DB is kept: run it again and session "1" remembers Bob
//
// The model is sg::LocalModel (offline, deterministic): it acknowledges statements and answers
// questions from the statements in its context ("I don't know that yet." when none matches).
#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/nodes/session_history.hpp>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

namespace {

void say(const sg::RunnableWithMessageHistory& chain, const nlohmann::json& input,
         const std::string& text, const sg::RunConfig& config, const std::string& who) {
  std::cout << "[" << who << "] human: " << text << '\n';
  std::cout << "[" << who << "] ai: " << chain.invoke_message(input, config).text() << '\n';
}

void run(const std::string& path) {
  auto saver = sg::RocksDbSaver::open(path);
  auto model = std::make_shared<sg::LocalModel>();

  std::cout << "== keyed by session_id: a chat model with its history ==\n";
  sg::RunnableWithMessageHistory runnable_with_history(model, sg::checkpointed_histories(saver));
  auto session = [](const std::string& id) {
    sg::RunConfig config;
    config.configurable = {{"session_id", id}};
    return config;
  };
  std::cout << "session 1 holds "
            << runnable_with_history.session_history(session("1"))->messages().size()
            << " messages before this run\n";
  for (const char* text : {"whats my name?", "hi! my name is bob.", "whats my name?"}) {
    say(runnable_with_history, nlohmann::json::array({sg::human(text)}), text, session("1"),
        "session 1");
  }
  // A new session id starts a new history: it does not remember.
  say(runnable_with_history, nlohmann::json::array({sg::human("whats my name?")}), "whats my name?",
      session("1a"), "session 1a");

  std::cout << "== keyed by user_id and conversation_id: a prompt with history ==\n";
  // Dictionary input: "input" is the new message, "history" receives the history, "language"
  // is for the prompt.
  sg::RunnableWithMessageHistory with_message_history(
      [model](const nlohmann::json& input, const sg::RunConfig&) -> nlohmann::json {
        std::vector<sg::Message> prompt{sg::system("You're an assistant who speaks in " +
                                                   input.at("language").get<std::string>() +
                                                   ". Respond in 20 words or fewer")};
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
  for (const char* text : {"hi! my name is bob.", "whats my name?"}) {  // remembers
    say(with_message_history, {{"language", "italian"}, {"input", text}}, text, config,
        "user 123, conversation 1");
  }
  config.configurable["user_id"] = "456";  // a new user_id: does not remember
  say(with_message_history, {{"language", "italian"}, {"input", "whats my name?"}},
      "whats my name?", config, "user 456, conversation 1");

  std::cout << "== a missing key ==\n";
  try {
    sg::RunConfig no_user;
    no_user.configurable = {{"conversation_id", "1"}};
    (void)with_message_history.invoke({{"language", "italian"}, {"input", "hi"}}, no_user);
  } catch (const sg::Error& e) {
    std::cout << "error: " << e.what() << '\n';
  }

  std::cout << "== stored threads ==\n";
  for (const auto& thread : saver->threads()) {
    std::cout << thread << ": "
              << sg::CheckpointedChatMessageHistory(saver, thread).messages().size()
              << " messages\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 2) {
    std::cerr << "usage: session_history [DB]\n";
    return 2;
  }
  try {
    if (argc == 2) {
      run(argv[1]);
      return 0;
    }
    std::string dir = (std::filesystem::temp_directory_path() / "session-history-XXXXXX").string();
    if (!mkdtemp(dir.data())) {
      std::cerr << "cannot create a temporary directory\n";
      return 1;
    }
    try {
      run(dir + "/db");
    } catch (...) {
      std::filesystem::remove_all(dir);
      throw;
    }
    std::filesystem::remove_all(dir);
  } catch (const std::exception& e) {
    std::cerr << "session_history: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
