// SPDX-License-Identifier: MIT
#pragma once

#include <stategraph/core/message.hpp>

#include <concepts>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace sg {

/// Options of count_tokens_approximately (langchain-core's defaults).
struct ApproximateTokenOptions {
  double chars_per_token = 4.0;
  double extra_tokens_per_message = 3.0;
  bool count_name = true;
};

/// langchain-core's `count_tokens_approximately`: per message, ceil(chars / chars_per_token) +
/// extra_tokens_per_message, where chars = code points of string content (or of Python's
/// `repr` of list content) + the `repr` of an AI message's tool calls (string content only) +
/// a tool message's tool_call_id + the OpenAI role name + the name (if count_name); the total
/// is rounded up. Throws sg::Error for a RemoveMessage (it has no role). Thread-safe.
[[nodiscard]] std::int64_t count_tokens_approximately(std::span<const Message> messages,
                                                      const ApproximateTokenOptions& options = {});

/// Counts, per message, the whitespace-separated words of its text plus `extra_per_message`
/// (for list content, the words of each `{"type": "text"}` block). The counter of the golden
/// vectors ("words+3"). Thread-safe.
[[nodiscard]] std::int64_t count_words(std::span<const Message> messages,
                                       std::int64_t extra_per_message = 3);

/// Counts one token per message (LangChain's `token_counter=len`). Thread-safe.
[[nodiscard]] inline std::int64_t count_messages(std::span<const Message> messages) noexcept {
  return static_cast<std::int64_t>(messages.size());
}

/// A token counter over a list of messages. Built from a function over a list
/// (`std::int64_t(std::span<const sg::Message>)`) or over one message
/// (`std::int64_t(const sg::Message&)`, summed over the list). Defaults to
/// count_tokens_approximately. Thread-safe if the wrapped function is.
class TokenCounter {
 public:
  using ListFn = std::function<std::int64_t(std::span<const Message>)>;

  TokenCounter() : fn_([](std::span<const Message> m) { return count_tokens_approximately(m); }) {}

  template <class F>
  requires(!std::same_as<std::decay_t<F>, TokenCounter> &&
           std::invocable<const F&, std::span<const Message>>) TokenCounter(F fn)
      : fn_(std::move(fn)) {}  // NOLINT: implicit by design

  template <class F>
  requires(!std::invocable<const F&, std::span<const Message>> &&
           std::invocable<const F&, const Message&>)
      TokenCounter(F fn)  // NOLINT: implicit by design
      : fn_([per_message = std::move(fn)](std::span<const Message> messages) {
          std::int64_t total = 0;
          for (const auto& m : messages) total += static_cast<std::int64_t>(per_message(m));
          return total;
        }) {}

  /// The number of tokens of `messages`. Propagates what the wrapped function throws.
  [[nodiscard]] std::int64_t operator()(std::span<const Message> messages) const {
    return fn_(messages);
  }
  /// The number of tokens of one message. Propagates what the wrapped function throws.
  [[nodiscard]] std::int64_t operator()(const Message& message) const {
    return fn_(std::span<const Message>(&message, 1));
  }

 private:
  ListFn fn_;
};

/// Splits text for a partial message; the pieces concatenate back to the text.
using TextSplitter = std::function<std::vector<std::string>(std::string_view)>;

/// The default splitter: splits on "\n", keeping the "\n" at the end of every piece but the
/// last ("a\nb" -> {"a\n", "b"}). Thread-safe.
[[nodiscard]] std::vector<std::string> split_lines(std::string_view text);

enum class TrimStrategy { first, last };

/// Parses "first" or "last". Throws sg::Error (code "argument.invalid") with LangChain's wording
/// for anything else. Thread-safe.
[[nodiscard]] TrimStrategy parse_trim_strategy(std::string_view name);

/// Options of trim_messages (LangChain's `trim_messages`). `max_tokens` is required.
struct TrimOptions {
  std::int64_t max_tokens = 0;
  TokenCounter token_counter{};
  TrimStrategy strategy = TrimStrategy::last;
  /// Split the boundary message when only part of it fits: drop whole content blocks, else
  /// split its text with `text_splitter`.
  bool allow_partial = false;
  /// strategy last only: after trimming, drop leading messages until one of these types.
  std::vector<MessageType> start_on{};
  /// Drop trailing messages until one of these types (before trimming for last, after for first).
  std::vector<MessageType> end_on{};
  /// strategy last only: keep a system message at index 0; its tokens come off the budget first
  /// and it is always kept (LangChain Python's behaviour).
  bool include_system = false;
  /// Defaults to split_lines.
  TextSplitter text_splitter{};
};

/// LangChain's `trim_messages`: keeps the first or last messages that fit `max_tokens`.
/// The input is not modified. Throws sg::Error (code "argument.invalid") for start_on or
/// include_system with strategy first, with LangChain's wording; propagates counter errors.
/// With start_on human and end_on {human, tool}, the result never starts with an orphan tool
/// message or ends on an AI tool call without its results. Thread-safe.
[[nodiscard]] std::vector<Message> trim_messages(std::span<const Message> messages,
                                                 const TrimOptions& options);

/// Options of filter_messages. An empty list means "not given".
struct FilterOptions {
  std::vector<std::string> include_names{};
  std::vector<std::string> exclude_names{};
  std::vector<MessageType> include_types{};
  std::vector<MessageType> exclude_types{};
  std::vector<std::string> include_ids{};
  std::vector<std::string> exclude_ids{};
};

/// LangChain's `filter_messages`: drops a message matching any exclude option; then, when any
/// include option is given, keeps a message only if it matches at least one. Thread-safe.
[[nodiscard]] std::vector<Message> filter_messages(std::span<const Message> messages,
                                                   const FilterOptions& options);

/// LangChain's `merge_message_runs`: merges consecutive messages of the same type (never tool
/// or remove messages). Two string contents are joined with `separator`; otherwise the result
/// is a list of content blocks. The merged message keeps the first id, drops the name,
/// concatenates tool calls and merges additional_kwargs and usage_metadata. Thread-safe.
[[nodiscard]] std::vector<Message> merge_message_runs(std::span<const Message> messages,
                                                      std::string_view separator = "\n");

/// LangChain's `get_buffer_string`: one line per message, "<prefix>: <text>" with prefixes
/// human_prefix, ai_prefix, "System" and "Tool", joined by "\n". Throws sg::Error for a
/// RemoveMessage. Thread-safe.
[[nodiscard]] std::string get_buffer_string(std::span<const Message> messages,
                                            std::string_view human_prefix = "Human",
                                            std::string_view ai_prefix = "AI");

}  // namespace sg
