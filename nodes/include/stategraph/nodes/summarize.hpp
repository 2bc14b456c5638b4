// SPDX-License-Identifier: MIT
#pragma once
// Short-term memory by summarizing: LangMem's summarize_messages / SummarizationNode (a running
// summary that is extended, never splitting a tool call from its results) and LangGraph's
// "add summary of conversation history" how-to (summarize, keep the last K, remove the rest).
//
//   struct State : sg::MessagesState {
//     std::vector<sg::Message> summarized_messages;    // what the model sees (last value)
//     std::optional<sg::RunningSummary> running_summary;
//     static constexpr auto schema() { ... }
//   };
//   graph.add_node("summarize", sg::SummarizationNode<State>(model, {.max_tokens = 256,
//                                                                    .max_summary_tokens = 128}));

#include <stategraph/core/async.hpp>  // the nodes below are coroutine nodes
#include <stategraph/core/graph_types.hpp>
#include <stategraph/core/update.hpp>
#include <stategraph/models/chat_model.hpp>
#include <stategraph/nodes/trim.hpp>
#include <stategraph/reducers/message_utils.hpp>

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace sg {

/// LangMem's RunningSummary: the latest summary, the ids of every message it covers, and the
/// last of them (messages up to it, by position, count as summarized).
struct RunningSummary {
  std::string summary;
  std::set<std::string> summarized_message_ids;
  std::optional<std::string> last_summarized_message_id;

  friend bool operator==(const RunningSummary&, const RunningSummary&) = default;
};

/// {"summary", "summarized_message_ids" (sorted), "last_summarized_message_id" (or null)}.
void to_json(nlohmann::json& j, const RunningSummary& summary);
/// The inverse of to_json. Throws nlohmann::json::exception for a wrong shape.
void from_json(const nlohmann::json& j, RunningSummary& summary);

/// The prompts of summarize_messages (LangMem's defaults). `initial` and `existing` are sent as
/// a human message after the messages to summarize; `existing` may use {existing_summary}.
/// `final_summary` (a system message, may use {summary}) leads the returned messages. fmt
/// syntax: a literal brace is doubled.
struct SummaryPrompts {
  std::string initial = "Create a summary of the conversation above:";
  std::string existing =
      "This is summary of the conversation so far: {existing_summary}\n\n"
      "Extend this summary by taking into account the new messages above:";
  std::string final_summary = "Summary of the conversation so far: {summary}";
};

/// Options of summarize_messages (LangMem's parameters).
struct SummarizationOptions {
  /// The most tokens of the returned messages; also the most sent to the summarizing model.
  std::int64_t max_tokens = 0;
  /// Tokens of unsummarized messages that trigger a summary (default: max_tokens).
  std::optional<std::int64_t> max_tokens_before_summary{};
  /// Tokens budgeted for the summary (not passed to the model: cap its reply with
  /// ChatOptions::max_tokens in `model_options`). Must be less than max_tokens.
  std::int64_t max_summary_tokens = 256;
  TokenCounter token_counter{};
  SummaryPrompts prompts{};
  /// Options of the summarizing model call.
  ChatOptions model_options{};
};

/// What summarize_messages returns: the messages for the model (the system message, a summary
/// system message, the unsummarized tail; the input unchanged when there is no summary) and the
/// running summary (nullopt when none was ever made).
struct SummarizationResult {
  std::vector<Message> messages;
  std::optional<RunningSummary> running_summary;
};

/// LangMem's summarize_messages. Walking the unsummarized messages (after a leading system
/// message, which is never summarized) oldest first, it summarizes up to the first message at
/// which their tokens reach max_tokens_before_summary while the rest fits max_tokens minus
/// max_summary_tokens and the system message; the tool results of a trailing AI tool call are
/// summarized with it. Tokens to summarize beyond max_tokens (minus the running summary) are
/// trimmed first (trim_messages last, start_on human, allow_partial). Calls `model` at most once.
/// Throws sg::Error (errc::kInvalidArgument) when max_summary_tokens >= max_tokens, for a
/// message without an id, or one already summarized past the running summary's last message;
/// propagates the model's errors. Thread-safe if the model and the counter are.
[[nodiscard]] SummarizationResult summarize_messages(
    std::span<const Message> messages, const std::optional<RunningSummary>& running_summary,
    const ChatModel& model, const SummarizationOptions& options);

/// summarize_messages for coroutine nodes (the model call is awaited). Same errors.
[[nodiscard]] boost::asio::awaitable<SummarizationResult> asummarize_messages(
    std::vector<Message> messages, std::optional<RunningSummary> running_summary,
    std::shared_ptr<const ChatModel> model, SummarizationOptions options);

/// Throws sg::Error (errc::kInvalidArgument) for a null model, max_tokens <= 0,
/// max_summary_tokens >= max_tokens, or a negative max_tokens_before_summary.
void check_summarization_options(const ChatModel* model, const SummarizationOptions& options);

/// LangMem's SummarizationNode: a coroutine node running asummarize_messages over
/// state.*InputMessages and state.*Summary (a std::optional<RunningSummary> field, LangMem's
/// context["running_summary"]). It writes the result to state.*OutputMessages (best a
/// last-value field: what the model reads) and, when there is a summary, state.*Summary. When
/// the input and output fields are the same, the written list starts with
/// RemoveMessage(kRemoveAllMessages) so that the conversation is replaced (the field must be
/// reduced with add_messages). Throws at construction sg::Error (errc::kInvalidArgument) for a
/// null model or max_summary_tokens >= max_tokens; the node throws what summarize_messages
/// throws. Copyable; thread-safe.
template <class S, auto InputMessages = &S::messages, auto OutputMessages = &S::summarized_messages,
          auto Summary = &S::running_summary>
class SummarizationNode {
 public:
  SummarizationNode(std::shared_ptr<const ChatModel> model, SummarizationOptions options)
      : model_(std::move(model)), options_(std::move(options)) {
    check_summarization_options(model_.get(), options_);
  }

  boost::asio::awaitable<Update<S>> operator()(const S& state) const {
    const std::optional<RunningSummary>& previous = state.*Summary;
    SummarizationResult result =
        co_await asummarize_messages(state.*InputMessages, previous, model_, options_);
    Update<S> update;
    if (result.running_summary) {
      if constexpr (same_field()) {
        result.messages.insert(result.messages.begin(),
                               remove_message(std::string(kRemoveAllMessages)));
      }
      update.template set<Summary>(std::move(result.running_summary));
    }
    update.template set<OutputMessages>(std::move(result.messages));
    co_return update;
  }

 private:
  static constexpr bool same_field() {
    if constexpr (std::is_same_v<decltype(InputMessages), decltype(OutputMessages)>) {
      return InputMessages == OutputMessages;
    } else {
      return false;
    }
  }

  std::shared_ptr<const ChatModel> model_;
  SummarizationOptions options_;
};

/// Options of summarize_conversation (LangGraph's how-to).
struct SummarizeConversationOptions {
  /// Messages kept after summarizing (the how-to keeps 2).
  std::size_t keep_last = 2;
  /// The prompt appended as a human message when there is no summary yet.
  std::string initial_prompt = "Create a summary of the conversation above:";
  /// The prompt when a summary exists; {summary} is the existing summary (fmt syntax).
  std::string existing_prompt =
      "This is summary of the conversation to date: {summary}\n\n"
      "Extend the summary by taking into account the new messages above:";
  ChatOptions model_options{};
};

/// The prompt summarize_conversation sends: `messages`, then a human message asking to create
/// (or, with a non-empty `summary`, to extend) the summary. Thread-safe.
[[nodiscard]] std::vector<Message> summarize_conversation_prompt(
    std::span<const Message> messages, const std::string& summary,
    const SummarizeConversationOptions& options);

/// Throws sg::Error (errc::kInvalidArgument) for a null model.
void check_summarize_conversation(const ChatModel* model);

/// LangGraph's summarize_conversation node (a coroutine node): asks the model for a summary of
/// state.*Messages extending state.*SummaryText, writes it to state.*SummaryText and deletes all
/// but the last keep_last messages with RemoveMessages (the tool results kept never lose their
/// AI tool call). Pair it with should_summarize. Throws sg::Error (errc::kInvalidArgument) at
/// construction for a null model; the node propagates the model's errors. Thread-safe.
template <class S, auto Messages = &S::messages, auto SummaryText = &S::summary>
[[nodiscard]] auto summarize_conversation(std::shared_ptr<const ChatModel> model,
                                          SummarizeConversationOptions options = {}) {
  check_summarize_conversation(model.get());
  return [model = std::move(model),
          options = std::move(options)](const S& state) -> boost::asio::awaitable<Update<S>> {
    const std::string& summary = state.*SummaryText;
    std::vector<Message> prompt = summarize_conversation_prompt(state.*Messages, summary, options);
    const Message reply = co_await model->ainvoke(std::move(prompt), options.model_options);
    std::vector<Message> removals =
        remove_old_messages(state.*Messages, options.keep_last, /*keep_tool_pairs=*/true);
    Update<S> update;
    update.template set<SummaryText>(reply.text());
    update.template set<Messages>(std::move(removals));
    co_return update;
  };
}

/// The how-to's router: "summarize_conversation" (or `target`) when state.*Messages holds more
/// than `max_messages` messages, else END. Thread-safe.
template <class S, auto Messages = &S::messages>
[[nodiscard]] auto should_summarize(std::size_t max_messages = 6,
                                    std::string target = "summarize_conversation") {
  return [max_messages, target = std::move(target)](const S& state) -> std::string {
    return (state.*Messages).size() > max_messages ? target : std::string(END);
  };
}

}  // namespace sg
