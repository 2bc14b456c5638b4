// SPDX-License-Identifier: MIT
#pragma once
// Summarization middleware for create_agent, as LangChain's SummarizationMiddleware: before a
// model call, once the conversation reaches a trigger (a message count, a token count or a
// fraction of the model's input window), the older messages are replaced by one human message
// holding their summary, and only the most recent part (`keep`) is kept as it is. The cut never
// separates an AI tool call from its tool results.
//
//   auto agent = sg::create_agent(
//       model, tools,
//       {.middleware = {sg::summarization_middleware(
//            summarizer, {.trigger = {sg::ContextSize::tokens(4000)},
//                         .keep = sg::ContextSize::messages(20)})}});
//
// The thread's state is rewritten (remove_message(kRemoveAllMessages), the summary, the kept
// messages), so the checkpoints hold the summarized conversation, as LangChain's do.

#include <stategraph/core/message.hpp>
#include <stategraph/models/agent.hpp>
#include <stategraph/models/chat_model.hpp>
#include <stategraph/reducers/message_utils.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sg {

/// LangChain's DEFAULT_SUMMARY_PROMPT: the prompt of the summarizing call; {messages} is the
/// conversation to summarize, one "Role: text" line per message (get_buffer_string).
inline constexpr std::string_view kSummarizationMiddlewarePrompt =
    R"(<role>
Context Extraction Assistant
</role>

<primary_objective>
Your sole objective in this task is to extract the highest quality/most relevant context from the conversation history below.
</primary_objective>

<objective_information>
You're nearing the total number of input tokens you can accept, so you must extract the highest quality/most relevant pieces of information from your conversation history.
This context will then overwrite the conversation history presented below. Because of this, ensure the context you extract is only the most important information to your overall goal.
</objective_information>

<instructions>
The conversation history below will be replaced with the context you extract in this step. Because of this, you must do your very best to extract and record all of the most important context from the conversation history.
You want to ensure that you don't repeat any actions you've already completed, so the context you extract from the conversation history should be focused on the most important information to your overall goal.
</instructions>

The user will message you with the full message history you'll be extracting context from, to then replace. Carefully read over it all, and think deeply about what information is most important to your overall goal that should be saved:

With all of this in mind, please carefully read over the entire conversation history, and extract the most important and relevant context to replace it so that you can free up space in the conversation history.
Respond ONLY with the extracted context. Do not include any additional information, or text before or after the extracted context.

<messages>
Messages to summarize:
{messages}
</messages>)";

/// The text that precedes the summary in the summary message.
inline constexpr std::string_view kSummaryMessagePrefix =
    "Here is a summary of the conversation to date:\n\n";

/// An amount of context (LangChain's ContextSize tuple): a number of messages, a number of
/// tokens, or a fraction (0 < f <= 1) of the model's maximum input tokens. A plain value type.
struct ContextSize {
  enum class Kind { messages, tokens, fraction };
  Kind kind = Kind::messages;
  /// A whole number of messages or tokens, or the fraction.
  double value = 0;

  [[nodiscard]] static ContextSize messages(std::int64_t count) {
    return {Kind::messages, static_cast<double>(count)};
  }
  [[nodiscard]] static ContextSize tokens(std::int64_t count) {
    return {Kind::tokens, static_cast<double>(count)};
  }
  [[nodiscard]] static ContextSize fraction(double share) { return {Kind::fraction, share}; }

  friend bool operator==(const ContextSize&, const ContextSize&) = default;
};

/// Options of summarization_middleware (LangChain's constructor arguments).
struct SummarizationMiddlewareOptions {
  /// When to summarize: as soon as any one is reached (messages: the count >= n; tokens: the
  /// count >= n; fraction: tokens >= int(max_input_tokens * f), at least 1). Empty: never.
  std::vector<ContextSize> trigger{};
  /// What is kept unsummarized: the last n messages, or the longest suffix that fits n tokens
  /// (or int(max_input_tokens * f) tokens).
  ContextSize keep = ContextSize::messages(20);
  /// Counts the tokens of the conversation (default: count_tokens_approximately).
  TokenCounter token_counter{};
  /// The summarizing prompt (fmt syntax: {messages}; a literal brace is doubled).
  std::string summary_prompt = std::string(kSummarizationMiddlewarePrompt);
  /// The most tokens of the messages sent to be summarized (trim_messages: the last ones,
  /// starting on a human message, the boundary message possibly cut); nullopt: no trimming.
  std::optional<std::int64_t> trim_tokens_to_summarize = 4000;
  /// The model's maximum input tokens (LangChain's model profile), needed by fractions.
  std::optional<std::int64_t> max_input_tokens{};
  /// Options of the summarizing call.
  ChatOptions model_options{};
};

/// Throws sg::Error (errc::kInvalidArgument) with LangChain's texts for options that are not
/// allowed: "Fractional trigger values must be between 0 and 1, got 1.5.", "trigger thresholds
/// must be greater than 0, got 0." (and the same for keep), "tokens trigger values must be
/// integers, got 2.5.", "Unsupported context size type 7 for keep.", a fraction without
/// max_input_tokens ("Model profile information is required to use fractional token limits,
/// ..."), a max_input_tokens or trim_tokens_to_summarize that is not positive, or a
/// summary_prompt that does not format. Thread-safe.
void check_summarization_middleware_options(const SummarizationMiddlewareOptions& options);

/// Whether a conversation of `messages` counting `total_tokens` reaches one of the options'
/// triggers. A fraction is skipped without max_input_tokens. Does not check the options.
/// Thread-safe.
[[nodiscard]] bool should_summarize(std::span<const Message> messages, std::int64_t total_tokens,
                                    const SummarizationMiddlewareOptions& options);

/// `cutoff` moved so that it does not start the kept messages on a tool message: back to the AI
/// message that made one of the calls answered by the tool messages starting there, else past
/// those tool messages. Unchanged when it does not point at a tool message (or is past the end).
/// Thread-safe.
[[nodiscard]] std::size_t safe_summarization_cutoff(std::span<const Message> messages,
                                                    std::size_t cutoff);

/// The index of the first message kept by options.keep (the messages before it are
/// summarized; 0: nothing to summarize): messages keeps the last n (0 when there are no more);
/// tokens and fraction keep the longest suffix that fits (binary search; at least the last
/// message is summarized away when nothing fits, unless it is the only one); then
/// safe_summarization_cutoff. A fraction without max_input_tokens keeps 20 messages. Propagates
/// what the token counter throws. Does not check the options. Thread-safe if the counter is.
[[nodiscard]] std::size_t summarization_cutoff(std::span<const Message> messages,
                                               const SummarizationMiddlewareOptions& options);

/// The messages sent to be summarized: trim_messages to trim_tokens_to_summarize (strategy last,
/// start_on human, allow_partial, include_system), all of them without a limit, or the last 15
/// when trimming throws. Thread-safe if the counter is.
[[nodiscard]] std::vector<Message> messages_to_summarize(
    std::span<const Message> messages, const SummarizationMiddlewareOptions& options);

/// The summary of `messages`: the model's reply (stripped of surrounding whitespace) to one
/// human message, summary_prompt with {messages} = get_buffer_string of messages_to_summarize.
/// "No previous conversation history." when `messages` is empty, "Previous conversation was too
/// long to summarize." when nothing is left to send, "Error generating summary: WHAT" when the
/// model (or the prompt's formatting) throws. Rethrows CancelledError. Thread-safe if the model
/// and the counter are.
[[nodiscard]] std::string summarize_conversation_history(
    const ChatModel& model, std::span<const Message> messages,
    const SummarizationMiddlewareOptions& options);

/// The summary message: a human message kSummaryMessagePrefix + `summary`, with
/// additional_kwargs {"lc_source": "summarization"}. Thread-safe.
[[nodiscard]] Message summarization_message(const std::string& summary);

/// The middleware's before_model step (LangChain's before_model): nullopt when no trigger is
/// reached or summarization_cutoff is 0; else the messages update
/// [remove_message(kRemoveAllMessages), summarization_message(summary of the messages before the
/// cutoff), the messages from the cutoff on]. Does not check the options. Propagates what the
/// token counter throws. Thread-safe if the model and the counter are.
[[nodiscard]] std::optional<std::vector<Message>> summarization_update(
    const ChatModel& model, std::span<const Message> messages,
    const SummarizationMiddlewareOptions& options);

/// The middleware "SummarizationMiddleware" (as LangChain's SummarizationMiddleware): a
/// before_model hook writing summarization_update to the state's messages. The summarizing call
/// is a blocking model call made from the hook. Throws sg::Error (errc::kInvalidArgument) for a
/// null model or what check_summarization_middleware_options throws; the hook throws what the
/// token counter throws. Thread-safe if the model and the counter are.
[[nodiscard]] AgentMiddleware summarization_middleware(std::shared_ptr<const ChatModel> model,
                                                       SummarizationMiddlewareOptions options);

}  // namespace sg
