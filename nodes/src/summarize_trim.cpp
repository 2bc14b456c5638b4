// SPDX-License-Identifier: MIT
#include <stategraph/core/async.hpp>
#include <stategraph/core/error.hpp>
#include <stategraph/nodes/summarize_trim.hpp>

#include <utility>

namespace sg {

std::vector<Message> summary_trim_context(const SummaryTrimState& state,
                                          const SummaryTrimOptions& options) {
  std::string system_text = options.system_prompt;
  if (!state.summary.empty()) {
    if (!system_text.empty()) system_text += "\n\n";
    system_text += "Summary of the conversation so far: " + state.summary;
  }
  std::vector<Message> context;
  if (!system_text.empty()) context.push_back(system(system_text));
  TrimOptions trim;
  trim.max_tokens = options.context_tokens;
  trim.token_counter = options.token_counter;
  trim.start_on = {MessageType::human};
  trim.end_on = {MessageType::human, MessageType::tool};
  std::vector<Message> recent = trim_messages(state.messages, trim);
  if (recent.empty() && !state.messages.empty()) recent.push_back(state.messages.back());
  context.insert(context.end(), std::make_move_iterator(recent.begin()),
                 std::make_move_iterator(recent.end()));
  return context;
}

bool needs_summary(const SummaryTrimState& state, const SummaryTrimOptions& options) {
  return options.token_counter(state.messages) > options.summarize_after_tokens;
}

StateGraph<SummaryTrimState> summarize_and_trim_graph(std::shared_ptr<const ChatModel> model,
                                                      SummaryTrimOptions options) {
  if (!model) throw Error(errc::kInvalidArgument, "summarize_and_trim_graph needs a model");
  if (options.context_tokens <= 0 || options.summarize_after_tokens <= 0) {
    throw Error(errc::kInvalidArgument,
                "summarize_and_trim_graph: context_tokens and summarize_after_tokens must be "
                "positive");
  }
  if (options.context_tokens > options.summarize_after_tokens) {
    throw Error(errc::kInvalidArgument,
                "summarize_and_trim_graph: context_tokens must not exceed summarize_after_tokens");
  }
  SummarizeConversationOptions summary_options = options.summary_options;
  summary_options.keep_last = options.keep_last;
  auto shared = std::make_shared<const SummaryTrimOptions>(std::move(options));

  StateGraph<SummaryTrimState> graph;
  graph.add_node(
      "chat",
      [model,
       shared](const SummaryTrimState& state) -> boost::asio::awaitable<Update<SummaryTrimState>> {
        std::vector<Message> context = summary_trim_context(state, *shared);
        const Message reply = co_await model->ainvoke(std::move(context), shared->model_options);
        Update<SummaryTrimState> update;
        update.set<&SummaryTrimState::messages>(reply);
        update.set<&SummaryTrimState::turns>(std::int64_t{1});
        co_return update;
      });
  graph.add_node("summarize_conversation",
                 summarize_conversation<SummaryTrimState>(model, std::move(summary_options)));
  graph.add_edge(START, "chat");
  graph.add_conditional_edges("chat",
                              [shared](const SummaryTrimState& state) -> std::string {
                                return needs_summary(state, *shared) ? "summarize_conversation"
                                                                     : std::string(END);
                              },
                              {"summarize_conversation", END});
  graph.add_edge("summarize_conversation", END);
  return graph;
}

}  // namespace sg
