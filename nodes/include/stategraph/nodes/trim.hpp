// SPDX-License-Identifier: MIT
#pragma once
// Short-term memory by cutting: what the model sees (a trimming pre-model hook) and what the
// thread keeps (deleting old messages by id, or a keep-slice update).
//
//   auto agent = sg::create_react_agent(model, tools, {.pre_model_hook = sg::trim_hook<
//       sg::AgentState>({.max_tokens = 384, .start_on = {sg::MessageType::human},
//                        .end_on = {sg::MessageType::human, sg::MessageType::tool}})});
//   graph.add_node("forget", sg::delete_old_messages<State>(2));  // keep the last two

#include <stategraph/core/context.hpp>
#include <stategraph/core/list_update.hpp>
#include <stategraph/core/update.hpp>
#include <stategraph/reducers/message_utils.hpp>

#include <cstddef>
#include <span>
#include <vector>

namespace sg {

/// RemoveMessages deleting every message of `messages` but the last `keep_last`, oldest first
/// (LangGraph's `[RemoveMessage(id=m.id) for m in messages[:-keep_last]]`). With
/// `keep_tool_pairs`, the cut moves earlier so that the kept messages do not start with tool
/// results whose AI tool call would be deleted. Throws sg::Error (errc::kInvalidArgument) for a
/// message without an id. Thread-safe.
[[nodiscard]] std::vector<Message> remove_old_messages(std::span<const Message> messages,
                                                       std::size_t keep_last,
                                                       bool keep_tool_pairs = false);

/// A pre-model hook (LangGraph's `pre_model_hook` returning `llm_input_messages`): puts
/// trim_messages(state.*Messages, options) into state.*LlmInput, the messages the model sees;
/// the thread's conversation stays whole. Usable as ReactAgentOptions::pre_model_hook with
/// S = AgentState. The hook throws what trim_messages throws. Thread-safe.
template <class S, auto Messages = &S::messages, auto LlmInput = &S::llm_input_messages>
[[nodiscard]] auto trim_hook(TrimOptions options) {
  return [options = std::move(options)](const S& state, Context&) {
    Update<S> update;
    update.template set<LlmInput>(trim_messages(state.*Messages, options));
    return update;
  };
}

/// How delete_old_messages edits the list.
enum class DeleteMode {
  /// RemoveMessage per deleted message (a field reduced with add_messages).
  remove_messages,
  /// One keep-slice update `keep_last(n)` (a list field whose reducer takes a KeepSlice, the
  /// reducer pattern of LangGraph's memory concepts).
  keep_slice,
};

/// A node deleting all but the last `keep_last` messages of state.*Messages from the thread
/// (LangGraph's delete-messages how-to). Writes nothing when there is nothing to delete. The
/// node throws what remove_old_messages throws. Thread-safe.
template <class S, auto Messages = &S::messages>
[[nodiscard]] auto delete_old_messages(std::size_t keep_last,
                                       DeleteMode mode = DeleteMode::remove_messages) {
  return [keep_last, mode](const S& state) {
    Update<S> update;
    const auto& messages = state.*Messages;
    if (messages.size() <= keep_last) return update;
    if (mode == DeleteMode::keep_slice) {
      update.template set<Messages>(sg::keep_last(keep_last));
    } else {
      update.template set<Messages>(remove_old_messages(messages, keep_last));
    }
    return update;
  };
}

}  // namespace sg
