// SPDX-License-Identifier: MIT
#pragma once
// Short-term memory techniques: a token-limited
// buffer pruned FIFO, by importance or both (system messages are always kept), recency
// weighting, compression (summarizing with a model, or keeping only the important), context
// switching between topics, attention windows over embeddings, memory statistics; and the
// pruning as graph pieces that work on a thread's checkpointed messages.
//
//   sg::ShortTermMemorySystem memory({.max_tokens = 8000, .embedder = embedder, .llm = model});
//   memory.add_interaction(sg::system("You are a helpful AI assistant."));
//   memory.add_interaction(sg::ai("A common example is email spam filtering..."), 0.7);
//   auto context = memory.context_for_llm("How does spam filtering work?");
//   std::cout << memory.stats().utilization;
//
//   // In a graph: what the model sees (pre-model hook) or what the thread keeps (a node).
//   auto agent = sg::create_react_agent(model, tools,
//                                       {.pre_model_hook = sg::prune_hook<sg::AgentState>(
//                                            {.max_tokens = 512})});
//   graph.add_node("prune", sg::prune_node<State>({.max_tokens = 512}));

#include <stategraph/core/context.hpp>
#include <stategraph/core/update.hpp>
#include <stategraph/models/chat_model.hpp>
#include <stategraph/reducers/message_utils.hpp>
#include <stategraph/store/store.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sg {

/// The key of a message's importance in additional_kwargs (graph state keeps it there).
inline constexpr std::string_view kImportanceKey = "importance";

/// A message's importance: additional_kwargs["importance"], or 1.0 when absent. Throws sg::Error
/// (errc::kInvalidArgument) when it is present but not a finite number. Thread-safe.
[[nodiscard]] double importance_of(const Message& message);
/// `message` with additional_kwargs["importance"] = importance. Throws sg::Error
/// (errc::kInvalidArgument) for a non-finite importance. Thread-safe.
[[nodiscard]] Message with_importance(Message message, double importance);

/// How a buffer over its limits drops messages (a PruningStrategy, plus the basic
/// buffer's rule).
enum class PruningStrategy {
  /// The oldest message, whatever its type (the seed's basic ShortTermMemoryBuffer).
  oldest,
  /// The oldest message that is not a system message.
  fifo,
  /// The least important non-system message (the oldest of equals).
  importance,
  /// The oldest non-system message below the importance threshold; when none is left, FIFO.
  hybrid,
};

/// Limits and rule of pruning. A message list is over its limits when its tokens (the sum of
/// each message's count) exceed max_tokens or it holds more than max_messages; pruning then drops
/// one message at a time by `strategy` while it stays over and holds more than one message, and
/// stops early when the strategy finds nothing it may drop (only system messages left).
struct PruneOptions {
  std::int64_t max_tokens = 8000;
  /// The seed's max_entries (its basic buffer: 100); none: no limit on the count.
  std::optional<std::size_t> max_messages{};
  PruningStrategy strategy = PruningStrategy::hybrid;
  /// hybrid: messages below this importance go first.
  double importance_threshold = 0.5;
  TokenCounter token_counter{};
};

/// Throws sg::Error (errc::kInvalidArgument) for max_tokens <= 0, max_messages 0 or a
/// non-finite importance_threshold. Thread-safe.
void check_prune_options(const PruneOptions& options);

/// The messages pruning keeps, in order (importance read with importance_of). Throws what
/// check_prune_options and importance_of throw, and what the counter throws. Thread-safe.
[[nodiscard]] std::vector<Message> prune_messages(std::span<const Message> messages,
                                                  const PruneOptions& options);

/// RemoveMessages for the messages prune_messages drops, oldest first. Throws sg::Error
/// (errc::kInvalidArgument) for a dropped message without an id, and what prune_messages
/// throws. Thread-safe.
[[nodiscard]] std::vector<Message> pruned_removals(std::span<const Message> messages,
                                                   const PruneOptions& options);

/// A pre-model hook (LangGraph's `pre_model_hook` returning `llm_input_messages`): puts
/// prune_messages(state.*Messages) into state.*LlmInput, what the model sees; the thread keeps
/// every message. Usable as ReactAgentOptions::pre_model_hook with S = AgentState. Throws at
/// construction what check_prune_options throws; the hook throws what prune_messages throws.
/// Thread-safe.
template <class S, auto Messages = &S::messages, auto LlmInput = &S::llm_input_messages>
[[nodiscard]] auto prune_hook(PruneOptions options) {
  check_prune_options(options);
  return [options = std::move(options)](const S& state, Context&) {
    Update<S> update;
    update.template set<LlmInput>(prune_messages(state.*Messages, options));
    return update;
  };
}

/// A node deleting from the thread (RemoveMessages; the field is reduced with add_messages) the
/// messages prune_messages drops from state.*Messages. Writes nothing when nothing is dropped.
/// Throws at construction what check_prune_options throws; the node throws what
/// pruned_removals throws. Thread-safe.
template <class S, auto Messages = &S::messages>
[[nodiscard]] auto prune_node(PruneOptions options) {
  check_prune_options(options);
  return [options = std::move(options)](const S& state) {
    Update<S> update;
    auto removals = pruned_removals(state.*Messages, options);
    if (!removals.empty()) update.template set<Messages>(std::move(removals));
    return update;
  };
}

using MemoryClock = std::chrono::system_clock;

/// One message of a ShortTermMemoryBuffer with the seed's MemoryEntry bookkeeping.
struct MemoryEntry {
  Message message{};
  double importance = 1.0;
  MemoryClock::time_point timestamp{};
  /// The message's tokens (the buffer's counter over this message alone).
  std::int64_t tokens = 0;
};

/// Recency weighting (the seed's RecencyWeightedMemory).
struct RecencyOptions {
  double decay_rate = 0.1;
  double half_life_minutes = 5.0;
};

/// The seed's recency weight: exp(-decay_rate * age_minutes / half_life_minutes), where a
/// timestamp in the future counts as age 0. Thread-safe.
[[nodiscard]] double recency_weight(MemoryClock::time_point timestamp, MemoryClock::time_point now,
                                    const RecencyOptions& options);

/// Options of a ShortTermMemoryBuffer: its pruning and recency weighting, and the clock that
/// stamps entries (default: the system clock).
struct ShortTermMemoryOptions {
  std::int64_t max_tokens = 8000;
  std::optional<std::size_t> max_messages{};
  PruningStrategy strategy = PruningStrategy::hybrid;
  double importance_threshold = 0.5;
  RecencyOptions recency{};
  TokenCounter token_counter{};
  std::function<MemoryClock::time_point()> clock{};
};

/// A memory buffer (ShortTermMemoryBuffer, AdvancedMemoryBuffer and
/// RecencyWeightedMemory in one): messages with importance and a timestamp, a running token
/// total, pruned after every add. Not synchronized: use from one thread at a time.
class ShortTermMemoryBuffer {
 public:
  /// Throws sg::Error (errc::kInvalidArgument) for the options check_prune_options rejects, a
  /// negative decay rate or a half-life <= 0.
  explicit ShortTermMemoryBuffer(ShortTermMemoryOptions options = {});

  /// Appends `message` with `importance` (default: importance_of(message)) stamped now, then
  /// prunes. Throws sg::Error (errc::kInvalidArgument) for a RemoveMessage or a non-finite
  /// importance (the buffer is then unchanged); propagates the counter's errors.
  void add(Message message);
  void add(Message message, double importance);
  /// Appends entries (their tokens are recounted, a zero timestamp is stamped now), then prunes.
  /// Throws as add.
  void append(std::vector<MemoryEntry> entries);
  /// Replaces every entry without pruning (what compression does). Throws as add.
  void replace(std::vector<MemoryEntry> entries);
  /// Sets the importance of entry `index`. Throws sg::Error (errc::kInvalidArgument) for an index
  /// out of range or a non-finite importance.
  void set_importance(std::size_t index, double importance);
  void clear() noexcept;

  [[nodiscard]] const std::vector<MemoryEntry>& entries() const noexcept { return entries_; }
  /// The messages, oldest first (the seed's get_context).
  [[nodiscard]] std::vector<Message> context() const;
  /// The messages by effective importance, highest first, equal ones oldest first (the seed's
  /// get_weighted_context).
  [[nodiscard]] std::vector<Message> weighted_context() const;
  /// importance * recency_weight(timestamp, now).
  [[nodiscard]] double effective_importance(const MemoryEntry& entry) const;
  [[nodiscard]] std::int64_t current_tokens() const noexcept { return total_tokens_; }
  [[nodiscard]] std::int64_t max_tokens() const noexcept { return options_.max_tokens; }
  [[nodiscard]] const ShortTermMemoryOptions& options() const noexcept { return options_; }
  [[nodiscard]] MemoryClock::time_point now() const;

 private:
  MemoryEntry make_entry(Message message, double importance) const;
  /// make_entry for each, keeping a timestamp that is set; all or nothing.
  std::vector<MemoryEntry> checked_entries(std::vector<MemoryEntry> entries) const;
  void enforce_limits();

  ShortTermMemoryOptions options_;
  std::vector<MemoryEntry> entries_;
  std::int64_t total_tokens_ = 0;
};

/// A compression strategy (the seed's CompressionStrategy): turns old entries into fewer.
class Compressor {
 public:
  virtual ~Compressor() = default;
  [[nodiscard]] virtual std::vector<MemoryEntry> compress(std::vector<MemoryEntry> entries) = 0;
};

/// The seed's SummarizationCompressor's default prompt.
inline constexpr std::string_view kSegmentSummaryPrompt =
    "Summarize the following conversation segment in 2-3 sentences, preserving key facts, "
    "decisions, and context:";

/// The seed's SummarizationCompressor: fewer than 3 entries are returned as they are; otherwise
/// the model is asked once (the conversation as get_buffer_string text, then the prompt, as two
/// human messages) and the entries become one system message "[Previous conversation summary]:
/// <reply>" of importance 0.8. Throws sg::Error (errc::kInvalidArgument) at construction for a
/// null model; compress propagates the model's errors. Thread-safe if the model is.
class SummarizationCompressor final : public Compressor {
 public:
  explicit SummarizationCompressor(std::shared_ptr<const ChatModel> model,
                                   std::string prompt = std::string(kSegmentSummaryPrompt),
                                   ChatOptions model_options = {});
  [[nodiscard]] std::vector<MemoryEntry> compress(std::vector<MemoryEntry> entries) override;

 private:
  std::shared_ptr<const ChatModel> model_;
  std::string prompt_;
  ChatOptions model_options_;
};

/// The seed's SelectiveCompressor: keeps the entries of importance >= threshold; when any are
/// dropped, a system note "[N messages omitted for brevity]" of importance 0.3 leads them.
/// Throws sg::Error (errc::kInvalidArgument) at construction for a non-finite threshold.
/// Thread-safe.
class SelectiveCompressor final : public Compressor {
 public:
  explicit SelectiveCompressor(double importance_threshold = 0.7);
  [[nodiscard]] std::vector<MemoryEntry> compress(std::vector<MemoryEntry> entries) override;

 private:
  double threshold_;
};

/// The seed's CompressionPipeline: when a buffer holds more than threshold * max_tokens tokens,
/// its oldest third (entries / 3) goes through every compressor in turn and the result replaces
/// it. Not synchronized.
class CompressionPipeline {
 public:
  /// Throws sg::Error (errc::kInvalidArgument) for a null compressor or a threshold outside
  /// (0, 1].
  explicit CompressionPipeline(std::vector<std::shared_ptr<Compressor>> compressors,
                               double threshold = 0.8);
  [[nodiscard]] bool should_compress(const ShortTermMemoryBuffer& buffer) const;
  /// Compresses when should_compress; true when it did. Propagates the compressors' errors (the
  /// buffer is then unchanged).
  bool compress_if_needed(ShortTermMemoryBuffer& buffer) const;

 private:
  std::vector<std::shared_ptr<Compressor>> compressors_;
  double threshold_;
};

/// The seed's ContextManager: one buffer per topic, an active one and a stack of the ones
/// switched away from. Not synchronized.
class ContextManager {
 public:
  /// Every context's buffer gets these options (the seed: max_tokens_per_context = 4000).
  /// Throws what ShortTermMemoryBuffer's constructor throws.
  explicit ContextManager(ShortTermMemoryOptions per_context = {.max_tokens = 4000});

  /// Creates an empty context. Throws sg::Error (errc::kInvalidArgument) for an empty name or
  /// one that exists (its messages would be lost).
  ShortTermMemoryBuffer& create_context(const std::string& name);
  /// Makes `name` active, creating it if needed. Switching away from an active context pushes
  /// it on the stack and, with preserve_summary, raises the importance of its last entry to at
  /// least 0.9. Switching to the active context does nothing (the seed would push it again).
  /// Throws sg::Error (errc::kInvalidArgument) for an empty name.
  void switch_context(const std::string& name, bool preserve_summary = true);
  /// Pops the stack into the active context; nullopt (and no change) when it is empty.
  std::optional<std::string> return_to_previous();
  /// Appends the entries of `source` to `target` with 0.7 times their importance, prunes
  /// `target` and deletes `source` (an active `source` hands over to `target`; it leaves the
  /// stack). Throws sg::Error (errc::kInvalidArgument) for an unknown context or source ==
  /// target, changing nothing.
  void merge_contexts(const std::string& source, const std::string& target);

  /// The active context's buffer, or null.
  [[nodiscard]] ShortTermMemoryBuffer* active_buffer();
  [[nodiscard]] const std::optional<std::string>& active_context() const noexcept {
    return active_;
  }
  /// The buffer of `name`, or null.
  [[nodiscard]] ShortTermMemoryBuffer* find(const std::string& name);
  [[nodiscard]] std::size_t context_count() const noexcept { return contexts_.size(); }
  [[nodiscard]] const std::vector<std::string>& stack() const noexcept { return stack_; }

 private:
  ShortTermMemoryOptions per_context_;
  std::map<std::string, ShortTermMemoryBuffer> contexts_;
  std::optional<std::string> active_;
  std::vector<std::string> stack_;
};

/// Cosine similarity of two vectors (0 when either is zero). Throws sg::Error
/// (errc::kInvalidArgument) for different sizes. Thread-safe.
[[nodiscard]] double cosine_similarity(std::span<const float> a, std::span<const float> b);

/// The seed's AttentionWindow::get_relevant_window: every entry is scored by the cosine
/// similarity of its text's embedding to the query's (one embed call for all); from the best
/// (ties: the newest first), each entry and its two neighbours join the window while they fit
/// `window_tokens`, stopping at the first entry that does not fit. Returns the chosen messages
/// in their original order. Throws sg::Error (errc::kInvalidArgument) for window_tokens <= 0 or
/// when the embedder returns the wrong number of vectors; propagates the embedder's errors.
/// Thread-safe if the embedder is.
[[nodiscard]] std::vector<Message> attention_window(std::span<const MemoryEntry> entries,
                                                    std::string_view query, Embeddings& embedder,
                                                    std::int64_t window_tokens = 2000);

/// The seed's get_memory_stats.
struct MemoryStats {
  std::size_t total_entries = 0;
  std::int64_t total_tokens = 0;
  std::int64_t max_tokens = 0;
  /// total_tokens / max_tokens.
  double utilization = 0;
  std::optional<std::string> active_context{};
  std::size_t context_count = 0;
};

/// Options of a ShortTermMemorySystem (the seed's constructor arguments).
struct ShortTermMemorySystemOptions {
  std::int64_t max_tokens = 8000;
  /// Compress when the buffer is above this share of max_tokens.
  double compression_threshold = 0.8;
  bool enable_attention = true;
  std::int64_t attention_window_tokens = 2000;
  /// For attention windows; none: context_for_llm returns the whole buffer.
  std::shared_ptr<Embeddings> embedder{};
  /// For summarizing compression; none: only selective compression.
  std::shared_ptr<const ChatModel> llm{};
  TokenCounter token_counter{};
  std::function<MemoryClock::time_point()> clock{};
};

/// A ShortTermMemorySystem: a recency-weighted hybrid buffer, a context manager whose
/// contexts get half its tokens, compression (summarizing with `llm` if given, then selective)
/// and attention windows. Not synchronized.
class ShortTermMemorySystem {
 public:
  /// Throws sg::Error (errc::kInvalidArgument) for bad options (as the buffer, the pipeline).
  explicit ShortTermMemorySystem(ShortTermMemorySystemOptions options = {});

  /// Adds a message to the buffer, or (with `context`) switches to that context and adds it
  /// there; then compresses the main buffer if needed. Throws as ShortTermMemoryBuffer::add and
  /// propagates the model's errors.
  void add_interaction(Message message, double importance = 1.0,
                       const std::optional<std::string>& context = std::nullopt);
  /// The attention window for `query` (when attention is on and there is an embedder), else the
  /// whole buffer. Throws what attention_window throws.
  [[nodiscard]] std::vector<Message> context_for_llm(
      const std::optional<std::string>& query = std::nullopt);
  [[nodiscard]] MemoryStats stats() const;

  [[nodiscard]] ShortTermMemoryBuffer& buffer() noexcept { return buffer_; }
  [[nodiscard]] ContextManager& contexts() noexcept { return contexts_; }

 private:
  ShortTermMemorySystemOptions options_;
  ShortTermMemoryBuffer buffer_;
  ContextManager contexts_;
  CompressionPipeline pipeline_;
};

}  // namespace sg
