// SPDX-License-Identifier: MIT
#pragma once
// Session histories: LangChain's BaseChatMessageHistory (in memory, or persisted as a
// checkpointed thread so that it survives the process) and RunnableWithMessageHistory, which
// loads a session's history before calling a model or a function and saves the new messages
// after, the session being chosen by configurable values of the RunConfig.
//
//   auto saver = sg::RocksDbSaver::open("histories");
//   sg::RunnableWithMessageHistory chat(model, sg::checkpointed_histories(saver));
//   sg::RunConfig config;
//   config.configurable = {{"session_id", "1"}};
//   chat.invoke_message(sg::human("hi - my name is bob!"), config);
//   chat.invoke_message(sg::human("whats my name?"), config);  // sees the first turn

#include <stategraph/core/checkpointer.hpp>
#include <stategraph/core/graph_types.hpp>
#include <stategraph/core/message.hpp>
#include <stategraph/models/chat_model.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sg {

/// A conversation's stored messages (LangChain's BaseChatMessageHistory). Implementations are
/// thread-safe: each call is atomic on its own (a read-then-add sequence is not).
class ChatMessageHistory {
 public:
  virtual ~ChatMessageHistory() = default;

  /// The messages, oldest first (a copy).
  [[nodiscard]] virtual std::vector<Message> messages() const = 0;
  /// Appends `messages` in order. Throws sg::Error (errc::kInvalidArgument) for a RemoveMessage
  /// among them; then nothing is added.
  virtual void add_messages(std::span<const Message> messages) = 0;
  /// Removes every message.
  virtual void clear() = 0;
  /// Keeps only the last `n` messages (all when there are fewer): how windows and token limits
  /// prune a history. The default reads, clears and adds back; implementations may do better.
  virtual void keep_last(std::size_t n);

  /// add_messages of one message.
  void add_message(const Message& message);
  /// Adds a human message with this text.
  void add_user_message(std::string text);
  /// Adds an AI message with this text.
  void add_ai_message(std::string text);
  /// get_buffer_string(messages()): "Human: ...\nAI: ..." (LangChain's str(history)).
  [[nodiscard]] std::string to_string() const;
};

/// A history in memory (LangChain's InMemoryChatMessageHistory). Thread-safe.
class InMemoryChatMessageHistory final : public ChatMessageHistory {
 public:
  InMemoryChatMessageHistory() = default;
  explicit InMemoryChatMessageHistory(std::vector<Message> messages);

  [[nodiscard]] std::vector<Message> messages() const override;
  void add_messages(std::span<const Message> messages) override;
  void clear() override;
  void keep_last(std::size_t n) override;

 private:
  mutable std::mutex mu_;
  std::vector<Message> messages_;
};

/// A history stored as a thread of `saver` (any Checkpointer: InMemorySaver, RocksDbSaver, ...):
/// a small graph over sg::MessagesState whose every change is one checkpoint (source "update",
/// as node "history"), so the history survives the process with a persistent saver and its
/// past versions stay inspectable with the thread's state history. Messages are merged with
/// add_messages: those without an id get one, and a message whose id is already stored replaces
/// it. keep_last removes the older messages with RemoveMessages; clear() deletes the thread.
/// Throws what the saver throws (sg::CheckpointError). Thread-safe; two objects on one thread
/// must not add at the same time (use one object per session, as checkpointed_histories does).
class CheckpointedChatMessageHistory final : public ChatMessageHistory {
 public:
  /// Throws sg::Error (errc::kInvalidArgument) for a null saver or an empty thread id.
  CheckpointedChatMessageHistory(std::shared_ptr<Checkpointer> saver, std::string thread_id);
  ~CheckpointedChatMessageHistory() override;
  CheckpointedChatMessageHistory(const CheckpointedChatMessageHistory&) = delete;
  CheckpointedChatMessageHistory& operator=(const CheckpointedChatMessageHistory&) = delete;

  [[nodiscard]] std::vector<Message> messages() const override;
  void add_messages(std::span<const Message> messages) override;
  void clear() override;
  void keep_last(std::size_t n) override;

  /// The checkpointer's thread holding this history.
  [[nodiscard]] const std::string& thread_id() const noexcept { return thread_id_; }

 private:
  struct Graph;
  std::shared_ptr<const Graph> graph_;
  std::string thread_id_;
  mutable std::mutex mu_;
};

/// The values of the configurable keys a session is looked up by, by key name
/// (e.g. {"session_id": "1"} or {"conversation_id": "1", "user_id": "123"}).
using SessionKeys = std::map<std::string, std::string>;

/// LangChain's get_session_history: the history of a session. Called once per invocation.
using SessionHistoryFactory =
    std::function<std::shared_ptr<ChatMessageHistory>(const SessionKeys& keys)>;

/// The thread id a session is stored under: `prefix` then "/key=value" per key (sorted by key),
/// with '%', '/' and '=' in the values written as %XX so that different keys never share a
/// thread ("history/session_id=1", "history/conversation_id=1/user_id=123"). Thread-safe.
[[nodiscard]] std::string session_thread_id(std::string_view prefix, const SessionKeys& keys);

/// A get_session_history keeping one InMemoryChatMessageHistory per session (the same object
/// for the same keys; LangChain's `store` dict). The factory is thread-safe.
[[nodiscard]] SessionHistoryFactory in_memory_histories();

/// A get_session_history keeping one CheckpointedChatMessageHistory per session, on thread
/// session_thread_id(prefix, keys) of `saver`; the same object for the same keys. Throws
/// sg::Error (errc::kInvalidArgument) for a null saver. The factory is thread-safe.
[[nodiscard]] SessionHistoryFactory checkpointed_histories(std::shared_ptr<Checkpointer> saver,
                                                           std::string prefix = "history");

/// Options of RunnableWithMessageHistory (LangChain's keyword arguments).
struct MessageHistoryOptions {
  /// The key of a dict input holding the new message(s) (a string, a message or a list of
  /// them). Empty: the input is the message(s), or a dict's single key, or its "input" key.
  std::string input_messages_key{};
  /// The key of a dict output holding the reply message(s). Empty: the output is the
  /// message(s) (a string is an AI message), or a dict's single key, or its "output" key.
  std::string output_messages_key{};
  /// The key of the dict input the history is put in. Empty: the history is prepended to the
  /// new messages (in the input_messages_key entry of a dict input).
  std::string history_messages_key{};
  /// The configurable keys the session is looked up by (LangChain's history_factory_config,
  /// by id): all must be in RunConfig::configurable.
  std::vector<std::string> history_factory_config{"session_id"};
};

/// LangChain's RunnableWithMessageHistory: wraps a runnable so that every invocation loads the
/// session's history (get_session_history with the values of
/// options.history_factory_config from RunConfig::configurable) into its input, runs it, and
/// then adds the new input messages and the output messages to the history.
///
/// The input is JSON: a string (a human message), a message, a list of messages, or a dict
/// (an object that is not message-shaped, or any object when input_messages_key or
/// history_messages_key is set). The history goes to input[history_messages_key] when that is
/// set; otherwise it is prepended to the new messages, which then replace the input (a list) or
/// its input_messages_key entry. The output is read the same way (a string is an AI message).
///
/// Throws sg::Error (errc::kInvalidArgument) naming the missing configurable keys with an
/// example config ("Missing keys [\"session_id\"] in config.configurable ..."), naming a missing
/// input or output key, or for an input or output that holds no messages; then the history is
/// unchanged. Propagates the runnable's and the history's errors (the history is unchanged when
/// the runnable fails). Thread-safe if the runnable, the factory and the histories are; two
/// concurrent invocations on one session may interleave their messages.
class RunnableWithMessageHistory {
 public:
  /// A runnable over JSON: gets the input with the history inserted and the run's config.
  using Runnable = std::function<nlohmann::json(const nlohmann::json& input, const RunConfig&)>;
  /// A runnable over messages: gets the history then the new messages, returns the reply.
  using MessagesRunnable = std::function<Message(const std::vector<Message>& messages)>;

  /// Throws sg::Error (errc::kInvalidArgument) for an empty runnable or factory, or an empty
  /// history_factory_config.
  RunnableWithMessageHistory(Runnable runnable, SessionHistoryFactory get_session_history,
                             MessageHistoryOptions options = {});
  /// Wraps a function over messages: it gets the history, then the new messages of the input
  /// (also with a dict input and history_messages_key), and its reply is saved.
  RunnableWithMessageHistory(MessagesRunnable runnable, SessionHistoryFactory get_session_history,
                             MessageHistoryOptions options = {});
  /// Wraps a chat model as the function over messages above; `model_options` go with every call.
  /// Throws sg::Error (errc::kInvalidArgument) for a null model.
  RunnableWithMessageHistory(std::shared_ptr<const ChatModel> model,
                             SessionHistoryFactory get_session_history,
                             MessageHistoryOptions options = {}, ChatOptions model_options = {});

  /// Runs the wrapped runnable on `input` with the session's history; returns its output.
  nlohmann::json invoke(const nlohmann::json& input, const RunConfig& config) const;
  /// invoke, then the last output message (the reply saved to the history). Throws sg::Error
  /// (errc::kInvalidArgument) when the output holds no message (the input is saved all the same).
  Message invoke_message(const nlohmann::json& input, const RunConfig& config) const;

  /// The history `config` selects (get_session_history with its configurable values). Throws
  /// sg::Error (errc::kInvalidArgument) naming missing keys, as invoke.
  [[nodiscard]] std::shared_ptr<ChatMessageHistory> session_history(const RunConfig& config) const;

  [[nodiscard]] const MessageHistoryOptions& options() const noexcept { return options_; }

 private:
  struct Turn;
  [[nodiscard]] Turn run(const nlohmann::json& input, const RunConfig& config) const;
  void check() const;

  Runnable runnable_;                   // or
  MessagesRunnable messages_runnable_;  // (one of the two is set)
  SessionHistoryFactory factory_;
  MessageHistoryOptions options_;
};

}  // namespace sg
