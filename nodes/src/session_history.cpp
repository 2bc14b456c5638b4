// SPDX-License-Identifier: MIT
#include <stategraph/core/error.hpp>
#include <stategraph/core/state_graph.hpp>
#include <stategraph/nodes/session_history.hpp>
#include <stategraph/reducers/message_utils.hpp>
#include <stategraph/reducers/messages_state.hpp>

#include <algorithm>
#include <cstdio>
#include <utility>

namespace sg {
namespace {

constexpr const char* kHistoryNode = "history";

void check_addable(std::span<const Message> messages) {
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].type == MessageType::remove) {
      throw Error(errc::kInvalidArgument,
                  "add_messages: message " + std::to_string(i) +
                      " is a RemoveMessage; a chat message history holds conversation messages "
                      "(use keep_last or clear to remove messages)");
    }
  }
}

/// A JSON list of names for error messages: ["a", "b"].
std::string name_list(const std::vector<std::string>& names) {
  return nlohmann::json(names).dump();
}

}  // namespace

// --- ChatMessageHistory ----------------------------------------------------------------------

void ChatMessageHistory::keep_last(std::size_t n) {
  std::vector<Message> all = messages();
  if (all.size() <= n) return;
  std::vector<Message> tail(all.end() - static_cast<std::ptrdiff_t>(n), all.end());
  clear();
  add_messages(tail);
}

void ChatMessageHistory::add_message(const Message& message) {
  add_messages(std::span<const Message>(&message, 1));
}

void ChatMessageHistory::add_user_message(std::string text) {
  add_message(human(std::move(text)));
}

void ChatMessageHistory::add_ai_message(std::string text) {
  add_message(ai(std::move(text)));
}

std::string ChatMessageHistory::to_string() const {
  return get_buffer_string(messages());
}

// --- InMemoryChatMessageHistory --------------------------------------------------------------

InMemoryChatMessageHistory::InMemoryChatMessageHistory(std::vector<Message> messages) {
  check_addable(messages);
  messages_ = std::move(messages);
}

std::vector<Message> InMemoryChatMessageHistory::messages() const {
  std::lock_guard lock(mu_);
  return messages_;
}

void InMemoryChatMessageHistory::add_messages(std::span<const Message> messages) {
  check_addable(messages);
  std::lock_guard lock(mu_);
  messages_.insert(messages_.end(), messages.begin(), messages.end());
}

void InMemoryChatMessageHistory::clear() {
  std::lock_guard lock(mu_);
  messages_.clear();
}

void InMemoryChatMessageHistory::keep_last(std::size_t n) {
  std::lock_guard lock(mu_);
  if (messages_.size() <= n) return;
  messages_.erase(messages_.begin(), messages_.end() - static_cast<std::ptrdiff_t>(n));
}

// --- CheckpointedChatMessageHistory ----------------------------------------------------------

struct CheckpointedChatMessageHistory::Graph {
  std::shared_ptr<Checkpointer> saver;
  CompiledGraph<MessagesState> app;

  explicit Graph(std::shared_ptr<Checkpointer> checkpointer)
      : saver(std::move(checkpointer)), app(build(saver)) {}

  static CompiledGraph<MessagesState> build(const std::shared_ptr<Checkpointer>& saver) {
    // The node never runs: every change is an update_state as this node, whose only edge
    // leads to END, so nothing is left to run after it.
    StateGraph<MessagesState> graph;
    graph.add_node(kHistoryNode, [](const MessagesState&) { return Update<MessagesState>{}; });
    graph.add_edge(START, kHistoryNode);
    return graph.compile({.checkpointer = saver, .name = "chat_message_history"});
  }
};

CheckpointedChatMessageHistory::CheckpointedChatMessageHistory(std::shared_ptr<Checkpointer> saver,
                                                               std::string thread_id)
    : thread_id_(std::move(thread_id)) {
  if (!saver) {
    throw Error(errc::kInvalidArgument, "CheckpointedChatMessageHistory: the saver is null");
  }
  if (thread_id_.empty()) {
    throw Error(errc::kInvalidArgument, "CheckpointedChatMessageHistory: the thread id is empty");
  }
  graph_ = std::make_shared<const Graph>(std::move(saver));
}

CheckpointedChatMessageHistory::~CheckpointedChatMessageHistory() = default;

std::vector<Message> CheckpointedChatMessageHistory::messages() const {
  RunConfig config;
  config.thread_id = thread_id_;
  std::lock_guard lock(mu_);
  auto snapshot = graph_->app.get_state(config);
  if (!snapshot) return {};
  return std::move(snapshot->values.messages);
}

void CheckpointedChatMessageHistory::add_messages(std::span<const Message> messages) {
  check_addable(messages);
  if (messages.empty()) return;
  RunConfig config;
  config.thread_id = thread_id_;
  std::lock_guard lock(mu_);
  graph_->app.update_state(config,
                           Update<MessagesState>{}.set<&MessagesState::messages>(
                               std::vector<Message>(messages.begin(), messages.end())),
                           std::string(kHistoryNode));
}

void CheckpointedChatMessageHistory::clear() {
  std::lock_guard lock(mu_);
  graph_->saver->delete_thread(thread_id_);
}

void CheckpointedChatMessageHistory::keep_last(std::size_t n) {
  RunConfig config;
  config.thread_id = thread_id_;
  std::lock_guard lock(mu_);
  auto snapshot = graph_->app.get_state(config);
  if (!snapshot || snapshot->values.messages.size() <= n) return;
  const auto& stored = snapshot->values.messages;
  std::vector<Message> removals;
  removals.reserve(stored.size() - n);
  for (std::size_t i = 0; i + n < stored.size(); ++i)
    removals.push_back(remove_message(stored[i].id));
  graph_->app.update_state(
      config, Update<MessagesState>{}.set<&MessagesState::messages>(std::move(removals)),
      std::string(kHistoryNode));
}

// --- factories -------------------------------------------------------------------------------

std::string session_thread_id(std::string_view prefix, const SessionKeys& keys) {
  std::string out(prefix);
  for (const auto& [key, value] : keys) {
    out += '/';
    out += key;
    out += '=';
    for (const char c : value) {
      if (c == '%' || c == '/' || c == '=') {
        char escaped[4];
        std::snprintf(escaped, sizeof escaped, "%%%02X", static_cast<unsigned char>(c));
        out += escaped;
      } else {
        out += c;
      }
    }
  }
  return out;
}

namespace {

/// One history per session, made by `make` on first use. Thread-safe.
template <class Make>
SessionHistoryFactory cached_histories(Make make) {
  struct Cache {
    std::mutex mu;
    std::map<SessionKeys, std::shared_ptr<ChatMessageHistory>> histories;
  };
  auto cache = std::make_shared<Cache>();
  return [cache, make = std::move(make)](const SessionKeys& keys) {
    std::lock_guard lock(cache->mu);
    auto& slot = cache->histories[keys];
    if (!slot) slot = make(keys);
    return slot;
  };
}

}  // namespace

SessionHistoryFactory in_memory_histories() {
  return cached_histories(
      [](const SessionKeys&) { return std::make_shared<InMemoryChatMessageHistory>(); });
}

SessionHistoryFactory checkpointed_histories(std::shared_ptr<Checkpointer> saver,
                                             std::string prefix) {
  if (!saver) throw Error(errc::kInvalidArgument, "checkpointed_histories: the saver is null");
  return cached_histories([saver = std::move(saver),
                           prefix = std::move(prefix)](const SessionKeys& keys) {
    return std::make_shared<CheckpointedChatMessageHistory>(saver, session_thread_id(prefix, keys));
  });
}

// --- RunnableWithMessageHistory --------------------------------------------------------------

namespace {

constexpr std::string_view kWho = "RunnableWithMessageHistory: ";

/// True for a JSON object that is a message rather than a dict of inputs or outputs.
bool message_shaped(const nlohmann::json& value) {
  if (!value.is_object()) return false;
  if (value.contains("lc")) return true;
  const bool typed = value.contains("type") || value.contains("role");
  return typed && (value.contains("content") || value.contains("data"));
}

/// LangChain's _get_input_messages / _get_output_messages once the dict key is resolved: a
/// string is a message of `string_type`, a message a one-element list, a list a list (a list
/// holding one list: that list).
std::vector<Message> to_messages(const nlohmann::json& value, MessageType string_type,
                                 std::string_view what) {
  if (value.is_string()) {
    Message m = string_type == MessageType::ai ? ai(value.get<std::string>())
                                               : human(value.get<std::string>());
    return {std::move(m)};
  }
  if (message_shaped(value)) return {message_from_json(value)};
  if (value.is_array()) {
    if (!value.empty() && value[0].is_array()) {
      if (value.size() != 1) {
        throw Error(errc::kInvalidArgument, std::string(kWho) + "the " + std::string(what) +
                                                " is a list of " + std::to_string(value.size()) +
                                                " lists; expected one list of messages");
      }
      return messages_from_json(value[0]);
    }
    return messages_from_json(value);
  }
  throw Error(errc::kInvalidArgument, std::string(kWho) +
                                          "expected a string, a message or a list "
                                          "of messages as the " +
                                          std::string(what) + "; got " + value.dump());
}

/// The key of a dict input or output that holds the messages: `key` when set, else the single
/// key, else `fallback`.
std::string dict_key(const nlohmann::json& dict, const std::string& key,
                     std::string_view fallback) {
  if (!key.empty()) return key;
  if (dict.size() == 1) return dict.begin().key();
  return std::string(fallback);
}

const nlohmann::json& dict_entry(const nlohmann::json& dict, const std::string& key,
                                 std::string_view option, std::string_view what) {
  const auto it = dict.find(key);
  if (it != dict.end()) return *it;
  std::vector<std::string> keys;
  for (auto k = dict.begin(); k != dict.end(); ++k) keys.push_back(k.key());
  throw Error(errc::kInvalidArgument, std::string(kWho) + "the " + std::string(what) +
                                          " has no key \"" + key + "\" (" + std::string(option) +
                                          "); its keys are " + name_list(keys) +
                                          "; e.g. invoke({\"" + key + "\": \"foo\"}, config)");
}

bool is_dict_input(const nlohmann::json& input, const MessageHistoryOptions& options) {
  if (!input.is_object()) return false;
  return !options.input_messages_key.empty() || !options.history_messages_key.empty() ||
         !message_shaped(input);
}

/// The new messages of an input (LangChain's _get_input_messages).
std::vector<Message> input_messages(const nlohmann::json& input,
                                    const MessageHistoryOptions& options) {
  if (is_dict_input(input, options)) {
    const std::string key = dict_key(input, options.input_messages_key, "input");
    return to_messages(dict_entry(input, key, "input_messages_key", "input"), MessageType::human,
                       "input");
  }
  return to_messages(input, MessageType::human, "input");
}

/// The messages of an output (LangChain's _get_output_messages).
std::vector<Message> output_messages(const nlohmann::json& output,
                                     const MessageHistoryOptions& options) {
  if (output.is_object() && (!options.output_messages_key.empty() || !message_shaped(output))) {
    const std::string key = dict_key(output, options.output_messages_key, "output");
    return to_messages(dict_entry(output, key, "output_messages_key", "output"), MessageType::ai,
                       "output");
  }
  return to_messages(output, MessageType::ai, "output");
}

std::string config_value(const nlohmann::json& value, const std::string& key) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number() || value.is_boolean()) return value.dump();
  throw Error(errc::kInvalidArgument, std::string(kWho) + "config.configurable[\"" + key +
                                          "\"] must be a string or a number; got " + value.dump());
}

using MessagesRunnable = RunnableWithMessageHistory::MessagesRunnable;

MessagesRunnable over_model(std::shared_ptr<const ChatModel> model, ChatOptions model_options) {
  if (!model) throw Error(errc::kInvalidArgument, std::string(kWho) + "the model is null");
  return [model = std::move(model),
          model_options = std::move(model_options)](const std::vector<Message>& messages) {
    return model->invoke(messages, model_options);
  };
}

}  // namespace

struct RunnableWithMessageHistory::Turn {
  std::shared_ptr<ChatMessageHistory> history;
  std::vector<Message> new_messages;  // the input's, then the output's
  std::size_t output_count = 0;
  nlohmann::json output;
};

RunnableWithMessageHistory::RunnableWithMessageHistory(Runnable runnable,
                                                       SessionHistoryFactory get_session_history,
                                                       MessageHistoryOptions options)
    : runnable_(std::move(runnable)),
      factory_(std::move(get_session_history)),
      options_(std::move(options)) {
  check();
}

RunnableWithMessageHistory::RunnableWithMessageHistory(MessagesRunnable runnable,
                                                       SessionHistoryFactory get_session_history,
                                                       MessageHistoryOptions options)
    : messages_runnable_(std::move(runnable)),
      factory_(std::move(get_session_history)),
      options_(std::move(options)) {
  check();
}

RunnableWithMessageHistory::RunnableWithMessageHistory(std::shared_ptr<const ChatModel> model,
                                                       SessionHistoryFactory get_session_history,
                                                       MessageHistoryOptions options,
                                                       ChatOptions model_options)
    : RunnableWithMessageHistory(over_model(std::move(model), std::move(model_options)),
                                 std::move(get_session_history), std::move(options)) {}

void RunnableWithMessageHistory::check() const {
  if (!runnable_ && !messages_runnable_) {
    throw Error(errc::kInvalidArgument, std::string(kWho) + "the runnable is empty");
  }
  if (!factory_) {
    throw Error(errc::kInvalidArgument, std::string(kWho) + "get_session_history is empty");
  }
  if (options_.history_factory_config.empty()) {
    throw Error(errc::kInvalidArgument, std::string(kWho) +
                                            "history_factory_config names no key (the default is "
                                            "{\"session_id\"})");
  }
}

std::shared_ptr<ChatMessageHistory> RunnableWithMessageHistory::session_history(
    const RunConfig& config) const {
  const auto& expected = options_.history_factory_config;
  const nlohmann::json& configurable = config.configurable;
  std::vector<std::string> missing;
  for (const auto& key : expected) {
    if (!configurable.is_object() || !configurable.contains(key)) missing.push_back(key);
  }
  if (!missing.empty()) {
    std::sort(missing.begin(), missing.end());
    std::vector<std::string> sorted = expected;
    std::sort(sorted.begin(), sorted.end());
    nlohmann::json example = nlohmann::json::object();
    for (const auto& key : missing) example[key] = "[your-value-here]";
    const std::string example_input = options_.input_messages_key.empty()
                                          ? std::string("\"foo\"")
                                          : "{\"" + options_.input_messages_key + "\": \"foo\"}";
    throw Error(errc::kInvalidArgument,
                "Missing keys " + name_list(missing) +
                    " in config.configurable. Expected keys are " + name_list(sorted) +
                    ". Pass them in the RunConfig; e.g. config.configurable = " + example.dump() +
                    "; chain.invoke(" + example_input + ", config)");
  }
  SessionKeys keys;
  for (const auto& key : expected) keys[key] = config_value(configurable[key], key);
  auto history = factory_(keys);
  if (!history) {
    throw Error(errc::kInvalidArgument, std::string(kWho) +
                                            "get_session_history returned no history for " +
                                            nlohmann::json(keys).dump());
  }
  return history;
}

RunnableWithMessageHistory::Turn RunnableWithMessageHistory::run(const nlohmann::json& input,
                                                                 const RunConfig& config) const {
  Turn turn;
  turn.history = session_history(config);
  turn.new_messages = input_messages(input, options_);  // checks the input before the run
  std::vector<Message> history = turn.history->messages();

  std::vector<Message> replies;
  if (messages_runnable_) {
    // The messages the JSON input would carry, without the round trip through JSON.
    history.insert(history.end(), turn.new_messages.begin(), turn.new_messages.end());
    replies.push_back(messages_runnable_(history));
    turn.output = message_to_json(replies.back());
  } else {
    nlohmann::json bound;
    if (!options_.history_messages_key.empty()) {
      bound = input;
      bound[options_.history_messages_key] = messages_to_json(history);
    } else {
      nlohmann::json all = messages_to_json(history);
      for (const auto& m : turn.new_messages) all.push_back(message_to_json(m));
      if (!options_.input_messages_key.empty()) {
        bound = input;
        bound[options_.input_messages_key] = std::move(all);
      } else {
        bound = std::move(all);
      }
    }
    turn.output = runnable_(bound, config);
    replies = output_messages(turn.output, options_);
  }
  turn.output_count = replies.size();
  for (auto& m : replies) turn.new_messages.push_back(std::move(m));
  turn.history->add_messages(turn.new_messages);
  return turn;
}

nlohmann::json RunnableWithMessageHistory::invoke(const nlohmann::json& input,
                                                  const RunConfig& config) const {
  return run(input, config).output;
}

Message RunnableWithMessageHistory::invoke_message(const nlohmann::json& input,
                                                   const RunConfig& config) const {
  Turn turn = run(input, config);
  if (turn.output_count == 0) {
    throw Error(errc::kInvalidArgument,
                std::string(kWho) + "the output holds no message: " + turn.output.dump());
  }
  return std::move(turn.new_messages.back());
}

}  // namespace sg
