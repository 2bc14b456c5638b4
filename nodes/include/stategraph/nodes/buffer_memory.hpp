// SPDX-License-Identifier: MIT
#pragma once
// Buffer memories (LangChain's ConversationBufferMemory, ConversationBufferWindowMemory and
// ConversationTokenBufferMemory) over any ChatMessageHistory, their modern equivalents as
// bounded histories for RunnableWithMessageHistory, and the window as a graph piece.
//
//   sg::ConversationBufferWindowMemory memory(3, {.return_messages = true});
//   memory.save_context({{"input", "Message 1"}}, {{"output", "Response 1"}});
//   nlohmann::json vars = memory.load_memory_variables();   // {"history": [...last 6...]}
//
//   // In a graph: the model sees the last 2 exchanges and the current turn.
//   sg::ReactAgentOptions options;
//   options.pre_model_hook = sg::buffer_window_hook<sg::AgentState>(2);
//   auto agent = sg::create_react_agent(model, tools, options);
//
// The token buffer in a graph is trim_hook (trim.hpp) with max_tokens = max_token_limit.

#include <stategraph/core/context.hpp>
#include <stategraph/core/update.hpp>
#include <stategraph/nodes/session_history.hpp>
#include <stategraph/reducers/message_utils.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace sg {

/// The options every buffer memory shares (LangChain's BaseChatMemory and buffer fields).
struct ChatMemoryOptions {
  /// The variable load_memory_variables returns the history under.
  std::string memory_key = "history";
  /// True: the history as a JSON list of messages; false: get_buffer_string of it.
  bool return_messages = false;
  /// Prefixes of the string form.
  std::string human_prefix = "Human";
  std::string ai_prefix = "AI";
  /// The key of save_context's inputs holding the human text. Empty: the single input key that
  /// is not a memory variable or "stop".
  std::string input_key{};
  /// The key of save_context's outputs holding the AI text. Empty: the single output key, else
  /// "output".
  std::string output_key{};
};

/// What the buffer memories share (LangChain's BaseChatMemory): a history (chat_memory) that
/// save_context adds each exchange to, and load_memory_variables reading what the memory
/// returns. Thread-safe: save_context, clear and load_memory_variables are serialized.
class BaseChatMemory {
 public:
  /// `chat_memory` defaults to a new InMemoryChatMessageHistory.
  explicit BaseChatMemory(ChatMemoryOptions options = {},
                          std::shared_ptr<ChatMessageHistory> chat_memory = nullptr);
  virtual ~BaseChatMemory() = default;
  BaseChatMemory(const BaseChatMemory&) = delete;
  BaseChatMemory& operator=(const BaseChatMemory&) = delete;

  /// {memory_key}.
  [[nodiscard]] std::vector<std::string> memory_variables() const { return {options_.memory_key}; }
  /// {memory_key: buffer_as_str()} or, with return_messages, {memory_key: the messages as
  /// JSON}. Throws what the history throws.
  [[nodiscard]] nlohmann::json load_memory_variables() const;
  /// Adds the exchange as a human message (the input text) and an AI message (the output
  /// text). `inputs` and `outputs` are JSON objects whose chosen values are strings (or lists of
  /// content blocks). Throws sg::Error (errc::kInvalidArgument) with LangChain's wording when
  /// the keys cannot be chosen ("One input key expected got [...]", "Got multiple output keys
  /// ..."), for a missing input_key or output_key, or a value that is not text; then nothing is
  /// added.
  void save_context(const nlohmann::json& inputs, const nlohmann::json& outputs);
  /// Clears the history.
  void clear();

  /// The messages load_memory_variables returns.
  [[nodiscard]] std::vector<Message> buffer_as_messages() const;
  /// get_buffer_string of them with the prefixes.
  [[nodiscard]] std::string buffer_as_str() const;

  /// The history the exchanges are stored in.
  [[nodiscard]] ChatMessageHistory& chat_memory() const noexcept { return *chat_memory_; }
  /// The same history, shared (e.g. to read it through another memory).
  [[nodiscard]] std::shared_ptr<ChatMessageHistory> chat_memory_ptr() const noexcept {
    return chat_memory_;
  }
  [[nodiscard]] const ChatMemoryOptions& options() const noexcept { return options_; }

 protected:
  /// What this memory returns of `stored` (all of it by default).
  [[nodiscard]] virtual std::vector<Message> select(std::vector<Message> stored) const {
    return stored;
  }
  /// Called after an exchange was added, under the memory's lock (token pruning).
  virtual void after_save() {}

 private:
  ChatMemoryOptions options_;
  std::shared_ptr<ChatMessageHistory> chat_memory_;
  mutable std::mutex mu_;
};

/// LangChain's ConversationBufferMemory: returns every stored message. Thread-safe.
class ConversationBufferMemory final : public BaseChatMemory {
 public:
  using BaseChatMemory::BaseChatMemory;
};

/// LangChain's ConversationBufferWindowMemory: returns the last 2*k messages (k exchanges), or
/// none when k <= 0; the window is applied when reading, the history keeps everything.
/// Thread-safe.
class ConversationBufferWindowMemory final : public BaseChatMemory {
 public:
  explicit ConversationBufferWindowMemory(int k = 5, ChatMemoryOptions options = {},
                                          std::shared_ptr<ChatMessageHistory> chat_memory = nullptr)
      : BaseChatMemory(std::move(options), std::move(chat_memory)), k_(k) {}

  [[nodiscard]] int k() const noexcept { return k_; }

 protected:
  [[nodiscard]] std::vector<Message> select(std::vector<Message> stored) const override;

 private:
  int k_;
};

/// LangChain's ConversationTokenBufferMemory: after each save_context, the oldest messages are
/// removed from the history until `token_counter` counts at most max_token_limit (pruned
/// messages are gone; an exchange may be split). Throws sg::Error (errc::kInvalidArgument) at
/// construction for a negative limit; save_context propagates the counter's errors.
/// Thread-safe.
class ConversationTokenBufferMemory final : public BaseChatMemory {
 public:
  explicit ConversationTokenBufferMemory(std::int64_t max_token_limit = 2000,
                                         TokenCounter token_counter = {},
                                         ChatMemoryOptions options = {},
                                         std::shared_ptr<ChatMessageHistory> chat_memory = nullptr);

  [[nodiscard]] std::int64_t max_token_limit() const noexcept { return max_token_limit_; }

 protected:
  void after_save() override;

 private:
  std::int64_t max_token_limit_;
  TokenCounter token_counter_;
};

/// The window of the seed's modern pattern (a history for RunnableWithMessageHistory): after
/// every add_messages, only the last 2*window_size messages (window_size exchanges) are kept in
/// `inner`; total_messages_seen counts every message added through this object, pruned ones
/// included. Thread-safe.
class WindowedChatMessageHistory final : public ChatMessageHistory {
 public:
  /// `inner` defaults to a new InMemoryChatMessageHistory.
  explicit WindowedChatMessageHistory(std::size_t window_size,
                                      std::shared_ptr<ChatMessageHistory> inner = nullptr);

  [[nodiscard]] std::vector<Message> messages() const override { return inner_->messages(); }
  void add_messages(std::span<const Message> messages) override;
  void clear() override { inner_->clear(); }
  void keep_last(std::size_t n) override { inner_->keep_last(n); }

  [[nodiscard]] std::size_t window_size() const noexcept { return window_size_; }
  /// Messages added through this object since it was made, pruned or not.
  [[nodiscard]] std::size_t total_messages_seen() const;

 private:
  std::size_t window_size_;
  std::shared_ptr<ChatMessageHistory> inner_;
  mutable std::mutex mu_;
  std::size_t total_seen_ = 0;
};

/// The token limit of the seed's modern pattern: after every add_messages, the oldest messages
/// of `inner` are removed until `token_counter` counts at most max_tokens. Throws sg::Error
/// (errc::kInvalidArgument) at construction for a negative limit. Thread-safe.
class TokenLimitedChatMessageHistory final : public ChatMessageHistory {
 public:
  explicit TokenLimitedChatMessageHistory(std::int64_t max_tokens = 2000,
                                          TokenCounter token_counter = {},
                                          std::shared_ptr<ChatMessageHistory> inner = nullptr);

  [[nodiscard]] std::vector<Message> messages() const override { return inner_->messages(); }
  void add_messages(std::span<const Message> messages) override;
  void clear() override { inner_->clear(); }
  void keep_last(std::size_t n) override { inner_->keep_last(n); }

  [[nodiscard]] std::int64_t max_tokens() const noexcept { return max_tokens_; }

 private:
  std::int64_t max_tokens_;
  TokenCounter token_counter_;
  std::shared_ptr<ChatMessageHistory> inner_;
  std::mutex mu_;
};

/// How many of the last messages of `messages` fit `max_tokens` by `token_counter` (the oldest
/// dropped first; trim_messages' last strategy). Propagates the counter's errors. Thread-safe.
[[nodiscard]] std::size_t messages_within(std::span<const Message> messages,
                                          std::int64_t max_tokens,
                                          const TokenCounter& token_counter);

/// The messages of the last `k` exchanges: from the k-th human message counted from the end
/// (AI replies and tool results stay with their turn); with `include_system`, a system message
/// at index 0 is kept too. k = 0: nothing (or the system message). Thread-safe.
[[nodiscard]] std::vector<Message> last_exchanges(std::span<const Message> messages, std::size_t k,
                                                  bool include_system = false);

/// A pre-model hook (as trim_hook) putting the last `k` exchanges before the current turn plus
/// the current turn (last_exchanges(state.*Messages, k + 1, include_system)) into
/// state.*LlmInput: the model sees ConversationBufferWindowMemory(k)'s history and the new
/// input, the thread keeps everything. Usable as ReactAgentOptions::pre_model_hook with
/// S = AgentState. Thread-safe.
template <class S, auto Messages = &S::messages, auto LlmInput = &S::llm_input_messages>
[[nodiscard]] auto buffer_window_hook(std::size_t k, bool include_system = false) {
  return [k, include_system](const S& state, Context&) {
    Update<S> update;
    update.template set<LlmInput>(last_exchanges(state.*Messages, k + 1, include_system));
    return update;
  };
}

}  // namespace sg
