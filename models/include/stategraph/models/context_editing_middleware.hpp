// SPDX-License-Identifier: MIT
#pragma once
// Context editing middleware for create_agent, as LangChain's ContextEditingMiddleware: once the
// conversation grows past a token threshold, the older tool results are replaced by a
// placeholder (and, optionally, the arguments of the calls that asked for them are cleared)
// before the model sees them.
//
//   auto agent = sg::create_agent(
//       model, tools,
//       {.middleware = {sg::context_editing_middleware(
//            {.edits = {{.trigger = 50'000, .keep = 5, .exclude_tools = {"memory"}}}})}});
//
// Unlike LangChain's, which edits the state's message list in place, the edit here changes only
// what the model sees: ModelRequest::messages is a copy of the state's list, and the state (so
// the thread's checkpoints) keeps every tool result whole. The edits are thus made again, from
// the whole conversation, before every model call: with `clear_at_least`, a later call may
// clear more than LangChain (whose state already holds the earlier calls' placeholders) would.

#include <stategraph/core/message.hpp>
#include <stategraph/models/agent.hpp>
#include <stategraph/reducers/message_utils.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sg {

/// The placeholder of a cleared tool result.
inline constexpr std::string_view kClearedToolPlaceholder = "[cleared]";

/// The "clear tool uses" edit (LangChain's ClearToolUsesEdit). When the messages count more than
/// `trigger` tokens, every tool message but the last `keep` whose call is found in the nearest
/// preceding AI message, and whose tool (the message's name, else the call's) is not in
/// `exclude_tools`, becomes `placeholder`; its response_metadata gets
/// `"context_editing": {"cleared": true, "strategy": "clear_tool_uses"}`. With
/// `clear_tool_inputs` that call's arguments become `{}` and the AI message's
/// response_metadata["context_editing"]["cleared_tool_inputs"] lists the cleared call ids,
/// sorted. With `clear_at_least` > 0 the clearing stops once that many tokens were reclaimed.
/// Already cleared messages are skipped. A plain value type.
struct ClearToolUsesEdit {
  std::int64_t trigger = 100'000;
  std::int64_t clear_at_least = 0;
  std::size_t keep = 3;
  bool clear_tool_inputs = false;
  std::vector<std::string> exclude_tools{};
  std::string placeholder = std::string(kClearedToolPlaceholder);
};

/// Options of context_editing_middleware.
struct ContextEditingOptions {
  /// The edits, applied in order. Empty means one default ClearToolUsesEdit (as LangChain).
  std::vector<ClearToolUsesEdit> edits{ClearToolUsesEdit{}};
  /// How the messages are counted (the request's messages, without the system prompt):
  /// count_tokens_approximately by default, or a function over the list (LangChain's "model"
  /// method is such a function).
  TokenCounter token_counter{};
};

/// Applies `edit` to `messages` in place (see ClearToolUsesEdit) and returns the number of tool
/// messages it cleared. Propagates what `count_tokens` throws (count_tokens_approximately throws
/// sg::Error for a RemoveMessage). Thread-safe for distinct lists.
std::size_t apply_clear_tool_uses(std::vector<Message>& messages, const ClearToolUsesEdit& edit,
                                  const TokenCounter& count_tokens);

/// The middleware "ContextEditingMiddleware": a wrap_model_call that applies the edits to the
/// request's messages (when there are any) before calling the next handler. It throws what the
/// token counter throws. Thread-safe if the token counter is.
[[nodiscard]] AgentMiddleware context_editing_middleware(ContextEditingOptions options = {});

}  // namespace sg
