// SPDX-License-Identifier: MIT
#pragma once
// The summarize-and-trim chat graph: the graph of `stategraph demo` and `stategraph chat`. The
// model reads the system prompt with the running summary and the recent turns that fit a token
// budget (trim_messages); once the conversation passes a larger budget, summarize_conversation
// extends the summary and deletes all but the last few messages (LangGraph's how-to, with tokens
// instead of a message count).
//
//   auto app = sg::summarize_and_trim_graph(sg::default_chat_model())
//                  .compile({.checkpointer = sg::RocksDbSaver::open("stategraph-data")});
//   sg::RunConfig thread;
//   thread.thread_id = "demo";
//   app.invoke(sg::Update<sg::SummaryTrimState>{}.set<&sg::SummaryTrimState::messages>(
//                  sg::human("My name is Ada.")), thread);
#include <stategraph/core/state_graph.hpp>
#include <stategraph/models/chat_model.hpp>
#include <stategraph/nodes/summarize.hpp>
#include <stategraph/reducers/message_utils.hpp>
#include <stategraph/reducers/messages_state.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sg {

/// The state of summarize_and_trim_graph: the thread's messages (add_messages), the running
/// summary (last value) and the turns the model answered (summed).
struct SummaryTrimState : MessagesState {
  std::string summary{};
  std::int64_t turns = 0;
  static constexpr auto schema() {
    return std::tuple_cat(
        MessagesState::schema(),
        std::tuple{field<"summary">(&SummaryTrimState::summary),
                   field<"turns">(&SummaryTrimState::turns,
                                  [](std::int64_t a, std::int64_t b) { return a + b; })});
  }
};

/// Options of summarize_and_trim_graph.
struct SummaryTrimOptions {
  /// The system message; the summary, when there is one, follows it in the same message.
  std::string system_prompt = "You are a helpful assistant.";
  /// Tokens of the thread's messages past which they are summarized.
  std::int64_t summarize_after_tokens = 384;
  /// Messages kept after summarizing (the recent turns).
  std::size_t keep_last = 4;
  /// The most tokens of the conversation the model reads (the system message not counted);
  /// trim_messages keeps the last messages, starting on a human message. The newest message is
  /// always read, even past the budget.
  std::int64_t context_tokens = 256;
  /// Counts tokens for both budgets (default: count_tokens_approximately).
  TokenCounter token_counter{};
  /// Options of the reply calls.
  ChatOptions model_options{};
  /// Prompts and options of the summary calls (keep_last is taken from above).
  SummarizeConversationOptions summary_options{};
};

/// The messages the model reads in `state`: the system message (with the summary) and the
/// trimmed conversation. Throws what the token counter throws. Thread-safe.
[[nodiscard]] std::vector<Message> summary_trim_context(const SummaryTrimState& state,
                                                        const SummaryTrimOptions& options);

/// Whether the thread's messages pass options.summarize_after_tokens. Thread-safe.
[[nodiscard]] bool needs_summary(const SummaryTrimState& state, const SummaryTrimOptions& options);

/// START -> "chat" (the model answers summary_trim_context) -> "summarize_conversation" when
/// needs_summary -> END. Throws sg::Error (errc::kInvalidArgument) for a null model or a budget
/// that is not positive, or context_tokens above summarize_after_tokens. The nodes propagate the
/// model's errors. Thread-safe once compiled.
[[nodiscard]] StateGraph<SummaryTrimState> summarize_and_trim_graph(
    std::shared_ptr<const ChatModel> model, SummaryTrimOptions options = {});

}  // namespace sg
