// SPDX-License-Identifier: MIT
#pragma once
// Composable memory (LlamaIndex's SimpleComposableMemory): a primary chat buffer plus
// secondary sources such as a vector memory in the store; what the secondary sources retrieve
// for an input is injected into the system message, leaving out what the primary already holds.
//
//   auto store = std::make_shared<sg::InMemoryStore>(sg::TtlConfig{}, sg::IndexConfig{
//       .embeddings = std::make_shared<sg::HashedNgramEmbeddings>()});
//   auto vectors = std::make_shared<sg::VectorMemory>(store, sg::Namespace{"memories"},
//                                                     sg::VectorMemoryOptions{.similarity_top_k =
//                                                     1});
//   sg::SimpleComposableMemory memory(std::make_shared<sg::ChatMemoryBuffer>(), {vectors});
//   memory.put(sg::human("Jerry likes juice."));
//   std::vector<sg::Message> messages = memory.get("What does Bob like?");
//
//   // In a graph: the thread's messages are the primary memory.
//   auto agent = sg::create_react_agent(model, tools, {.pre_model_hook =
//       sg::composable_memory_hook<sg::AgentState>({vectors})});
//   graph.add_node("remember", sg::remember_turn<State>(vectors));

#include <stategraph/core/context.hpp>
#include <stategraph/core/error.hpp>
#include <stategraph/core/update.hpp>
#include <stategraph/reducers/message_utils.hpp>
#include <stategraph/store/store.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sg {

/// A memory (LlamaIndex's BaseMemory): messages go in with put/set, come out with get (for an
/// input such as the user's latest message). Implementations say whether they are thread-safe.
class ChatMemory {
 public:
  virtual ~ChatMemory() = default;
  /// The messages for `input` (nullopt: no input).
  [[nodiscard]] virtual std::vector<Message> get(const std::optional<std::string>& input) = 0;
  [[nodiscard]] std::vector<Message> get() { return get(std::nullopt); }
  /// Every stored message. Throws sg::Error (errc::kInvalidArgument) when the memory cannot list
  /// them (VectorMemory).
  [[nodiscard]] virtual std::vector<Message> get_all() = 0;
  virtual void put(const Message& message) = 0;
  /// put for each message, in order (implementations may do it in one go).
  virtual void put_messages(std::span<const Message> messages);
  /// Replaces the stored messages.
  virtual void set(std::vector<Message> messages) = 0;
  virtual void reset() = 0;
};

/// LlamaIndex's "user", "assistant", "system", "tool". Throws sg::Error
/// (errc::kInvalidArgument) for MessageType::remove. Thread-safe.
[[nodiscard]] std::string_view chat_role(MessageType type);

/// ChatMemoryBuffer.get's window: from the whole history, drop the oldest message while the
/// tokens (the sum of each message's count) plus initial_token_count exceed token_limit and more
/// than one message is left; after a drop, tool and assistant messages at the front go too (a
/// history never starts with them; LlamaIndex drops at most one of each, so parallel tool results
/// could lead). A single message over the limit gives {}. Throws sg::Error
/// (errc::kInvalidArgument) for token_limit < 1 or initial_token_count > token_limit;
/// propagates the counter's errors. Thread-safe.
[[nodiscard]] std::vector<Message> chat_memory_window(std::span<const Message> history,
                                                      std::int64_t token_limit,
                                                      const TokenCounter& token_counter = {},
                                                      std::int64_t initial_token_count = 0);

/// Options of ChatMemoryBuffer (LlamaIndex's defaults: token_limit 3000).
struct ChatMemoryBufferOptions {
  std::int64_t token_limit = 3000;
  TokenCounter token_counter{};
};

/// LlamaIndex's ChatMemoryBuffer: keeps every message; get returns chat_memory_window of them
/// (the input is ignored). Thread-safe.
class ChatMemoryBuffer final : public ChatMemory {
 public:
  /// Throws sg::Error (errc::kInvalidArgument) for token_limit < 1.
  explicit ChatMemoryBuffer(ChatMemoryBufferOptions options = {},
                            std::vector<Message> chat_history = {});

  using ChatMemory::get;
  [[nodiscard]] std::vector<Message> get(const std::optional<std::string>& input) override;
  /// The window with `initial_token_count` tokens already used. Throws as chat_memory_window.
  [[nodiscard]] std::vector<Message> get(const std::optional<std::string>& input,
                                         std::int64_t initial_token_count);
  [[nodiscard]] std::vector<Message> get_all() override;
  /// Throws sg::Error (errc::kInvalidArgument) for a RemoveMessage.
  void put(const Message& message) override;
  void set(std::vector<Message> messages) override;
  void reset() override;
  [[nodiscard]] std::int64_t token_limit() const noexcept { return options_.token_limit; }

 private:
  ChatMemoryBufferOptions options_;
  std::mutex mu_;
  std::vector<Message> history_;
};

/// Options of VectorMemory (LlamaIndex's retriever default: the 2 most similar batches).
struct VectorMemoryOptions {
  std::size_t similarity_top_k = 2;
  /// A user or system message starts a batch; the messages after it join that batch, so a
  /// retrieved batch is a whole exchange. Off: one batch per message.
  bool batch_by_user_message = true;
};

/// LlamaIndex's VectorMemory on an sg::Store with an IndexConfig: each batch of messages is an
/// item under `ns` whose value is {"text": the messages' texts joined by " ", "messages": [...]}
/// with "text" embedded; the batch being filled is re-put as it grows (its key: "batch-" + its
/// first message's id, or a random uuid for a message without id, so re-putting a turn replaces
/// it). get(input) returns every message of the top-k batches for the input (best first); get()
/// without input returns {}. A batch whose text is empty is not stored (as LlamaIndex). The
/// memory owns `ns` and the namespaces under it. Store errors propagate (a store without an
/// IndexConfig fails get with sg::Error errc::kInvalidArgument). Thread-safe (one lock; the
/// batch being filled is process state, as LlamaIndex's cur_batch_textnode).
class VectorMemory final : public ChatMemory {
 public:
  /// Throws sg::Error (errc::kInvalidArgument) for a null store or similarity_top_k 0, and
  /// InvalidNamespaceError for a bad namespace.
  VectorMemory(std::shared_ptr<Store> store, Namespace ns, VectorMemoryOptions options = {});

  using ChatMemory::get;
  [[nodiscard]] std::vector<Message> get(const std::optional<std::string>& input) override;
  /// Throws sg::Error (errc::kInvalidArgument): a vector memory only retrieves for an input.
  [[nodiscard]] std::vector<Message> get_all() override;
  /// Throws sg::Error (errc::kInvalidArgument) for a RemoveMessage.
  void put(const Message& message) override;
  /// As put for each message, with one store write per batch.
  void put_messages(std::span<const Message> messages) override;
  /// reset, then put_messages.
  void set(std::vector<Message> messages) override;
  /// Deletes every batch under the namespace.
  void reset() override;
  /// Copies every batch to `target` (reset first) in the same store: a VectorMemory there
  /// (LlamaIndex's vector_memory.copy(deep=True)). Throws as the constructor.
  [[nodiscard]] std::shared_ptr<VectorMemory> copy_to(Namespace target) const;

  [[nodiscard]] const Namespace& ns() const noexcept { return ns_; }
  [[nodiscard]] const VectorMemoryOptions& options() const noexcept { return options_; }

 private:
  struct Batch {
    std::string key;
    std::string text;
    std::vector<Message> messages;
  };
  void add_locked(const Message& message);
  void commit_locked();
  void put_locked(std::span<const Message> messages);
  void reset_locked();

  std::shared_ptr<Store> store_;
  Namespace ns_;
  VectorMemoryOptions options_;
  mutable std::mutex mu_;
  std::optional<Batch> batch_;
};

/// LlamaIndex's DEFAULT_INTRO_HISTORY_MESSAGE and DEFAULT_OUTRO_HISTORY_MESSAGE.
inline constexpr std::string_view kMemoryIntro =
    "Below are a set of relevant dialogues retrieved from potentially several memory sources:";
inline constexpr std::string_view kMemoryOutro =
    "This is the end of the retrieved message dialogues.";
/// The system message made when the primary memory has none.
inline constexpr std::string_view kDefaultMemorySystemPrompt = "You are a helpful assistant.";

/// LlamaIndex's _format_secondary_messages: "\n\n" + intro + "\n", then per source i (from 1)
/// "\n=====Relevant messages from memory source i=====\n\n", a "\tROLE: content\n" line per
/// message (ROLE upper-case chat_role; content "None" for a message with tool calls and no
/// text, as Python prints it) and "\n=====End of relevant messages from memory source
/// i======\n\n", then the outro. Throws sg::Error (errc::kInvalidArgument) for a RemoveMessage.
/// Thread-safe.
[[nodiscard]] std::string format_secondary_messages(
    const std::vector<std::vector<Message>>& secondary);

/// True when two messages are the same for composing (LlamaIndex compares role and content):
/// same type, content, tool calls and tool_call_id; ids are not compared. Thread-safe.
[[nodiscard]] bool same_memory_message(const Message& a, const Message& b);

/// LlamaIndex's _compose_message_histories after the gets: drops from each secondary history
/// the messages `primary` holds (same_memory_message), skips those left empty, and injects
/// format_secondary_messages of the rest into the system message: a leading system message is
/// cut at kMemoryIntro, stripped of surrounding whitespace and extended (it keeps its id);
/// otherwise a system message kDefaultMemorySystemPrompt + block is inserted first. Returns
/// `primary` unchanged when nothing is left to inject. Throws as format_secondary_messages.
/// Thread-safe.
[[nodiscard]] std::vector<Message> compose_memory(
    std::vector<Message> primary, const std::vector<std::vector<Message>>& secondary);

/// LlamaIndex's SimpleComposableMemory: put goes to every source, get(input) is the primary's
/// get with what the secondary sources get for the input injected (compose_memory), set goes to
/// the primary and is put_messages to the secondary sources, reset resets all (reset only the
/// primary through primary()). Thread-safe if its sources are.
class SimpleComposableMemory final : public ChatMemory {
 public:
  /// Throws sg::Error (errc::kInvalidArgument) for a null primary or a null secondary source.
  explicit SimpleComposableMemory(
      std::shared_ptr<ChatMemory> primary = std::make_shared<ChatMemoryBuffer>(),
      std::vector<std::shared_ptr<ChatMemory>> secondary = {});

  using ChatMemory::get;
  [[nodiscard]] std::vector<Message> get(const std::optional<std::string>& input) override;
  /// The primary's get_all.
  [[nodiscard]] std::vector<Message> get_all() override;
  void put(const Message& message) override;
  void put_messages(std::span<const Message> messages) override;
  void set(std::vector<Message> messages) override;
  void reset() override;

  [[nodiscard]] ChatMemory& primary() const noexcept { return *primary_; }
  [[nodiscard]] const std::vector<std::shared_ptr<ChatMemory>>& secondary() const noexcept {
    return secondary_;
  }

 private:
  std::shared_ptr<ChatMemory> primary_;
  std::vector<std::shared_ptr<ChatMemory>> secondary_;
};

/// Options of composable_memory_hook.
struct ComposableMemoryHookOptions {
  /// The thread's messages the model sees: chat_memory_window with this limit.
  std::int64_t token_limit = 3000;
  TokenCounter token_counter{};
  /// Leads the window as its system message when it has none ("" : none; injection then makes
  /// kDefaultMemorySystemPrompt). Give the system prompt here rather than to the agent, so that
  /// the recalled dialogues extend it instead of adding a second system message.
  std::string system_prompt{};
};

/// The messages composable_memory_hook gives the model: the thread's window (plus the system
/// prompt) with what each source gets for the last human message's text injected. Throws
/// sg::Error (errc::kInvalidArgument) for a null source; propagates chat_memory_window's and the
/// sources' errors. Thread-safe if the sources are.
[[nodiscard]] std::vector<Message> compose_thread_memory(
    std::span<const Message> thread, const std::vector<std::shared_ptr<ChatMemory>>& secondary,
    const ComposableMemoryHookOptions& options);

/// Throws sg::Error (errc::kInvalidArgument) for a null source or token_limit < 1.
void check_composable_memory_hook(const std::vector<std::shared_ptr<ChatMemory>>& secondary,
                                  const ComposableMemoryHookOptions& options);

/// A pre-model hook (LangGraph's `pre_model_hook` returning `llm_input_messages`) making the
/// thread's checkpointed messages the primary memory of a SimpleComposableMemory over
/// `secondary`: state.*LlmInput = compose_thread_memory(state.*Messages, ...). Usable as
/// ReactAgentOptions::pre_model_hook with S = AgentState. Throws sg::Error
/// (errc::kInvalidArgument) at construction for a null source or token_limit < 1; the hook
/// throws what compose_thread_memory throws. Thread-safe if the sources are.
template <class S, auto Messages = &S::messages, auto LlmInput = &S::llm_input_messages>
[[nodiscard]] auto composable_memory_hook(std::vector<std::shared_ptr<ChatMemory>> secondary,
                                          ComposableMemoryHookOptions options = {}) {
  check_composable_memory_hook(secondary, options);
  return
      [secondary = std::move(secondary), options = std::move(options)](const S& state, Context&) {
        Update<S> update;
        update.template set<LlmInput>(compose_thread_memory(state.*Messages, secondary, options));
        return update;
      };
}

/// The thread's last turn: from its last human message to the end (all of it without one).
/// Thread-safe.
[[nodiscard]] std::span<const Message> last_turn(std::span<const Message> thread);

/// A node putting the thread's last turn into `memory` (put_messages), e.g. at the end of each
/// turn so that other threads can recall it. Writes nothing to the state. With a VectorMemory,
/// running it again for the same turn replaces the turn's batch. Throws sg::Error
/// (errc::kInvalidArgument) at construction for a null memory; the node propagates the memory's
/// errors. Thread-safe if the memory is.
template <class S, auto Messages = &S::messages>
[[nodiscard]] auto remember_turn(std::shared_ptr<ChatMemory> memory) {
  if (!memory) throw Error(errc::kInvalidArgument, "remember_turn needs a memory");
  return [memory = std::move(memory)](const S& state) {
    memory->put_messages(last_turn(state.*Messages));
    return Update<S>{};
  };
}

}  // namespace sg
