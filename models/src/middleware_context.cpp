// SPDX-License-Identifier: MIT
// ContextEditingMiddleware: ClearToolUsesEdit applied to each model request's messages.
#include <stategraph/models/context_editing_middleware.hpp>

#include <algorithm>
#include <memory>
#include <set>
#include <utility>

// g++ 12 wrongly reports awaitable frames freed by the frame's own operator delete as mismatched
// (GCC bug 109224).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace sg {
namespace net = boost::asio;

namespace {

/// response_metadata["context_editing"], as an object (a copy; empty when absent).
nlohmann::json ctx_edit_entry(const Message& m) {
  if (m.response_metadata.is_object()) {
    const auto it = m.response_metadata.find("context_editing");
    if (it != m.response_metadata.end() && it->is_object()) return *it;
  }
  return nlohmann::json::object();
}

bool ctx_edit_already_cleared(const Message& m) {
  const nlohmann::json entry = ctx_edit_entry(m);
  const auto it = entry.find("cleared");
  if (it == entry.end() || it->is_null()) return false;
  if (it->is_boolean()) return it->get<bool>();
  if (it->is_number()) return *it != 0;
  return !it->empty() && *it != "";
}

void ctx_edit_set_entry(Message& m, nlohmann::json entry) {
  if (!m.response_metadata.is_object()) m.response_metadata = nlohmann::json::object();
  m.response_metadata["context_editing"] = std::move(entry);
}

/// Clears the arguments of call `call_id` of `ai` and records its id in the AI message's
/// response_metadata["context_editing"]["cleared_tool_inputs"] (sorted, without duplicates).
void ctx_edit_clear_inputs(Message& ai, const std::string& call_id) {
  bool cleared = false;
  for (auto& call : ai.tool_calls) {
    if (call.id != call_id) continue;
    call.args = nlohmann::json::object();
    cleared = true;
  }
  if (!cleared) return;
  nlohmann::json entry = ctx_edit_entry(ai);
  std::set<std::string> ids;
  if (const auto it = entry.find("cleared_tool_inputs"); it != entry.end() && it->is_array())
    for (const auto& id : *it)
      if (id.is_string()) ids.insert(id.get<std::string>());
  ids.insert(call_id);
  entry["cleared_tool_inputs"] = std::vector<std::string>(ids.begin(), ids.end());
  ctx_edit_set_entry(ai, std::move(entry));
}

}  // namespace

std::size_t apply_clear_tool_uses(std::vector<Message>& messages, const ClearToolUsesEdit& edit,
                                  const TokenCounter& count_tokens) {
  const std::int64_t tokens = count_tokens(messages);
  if (tokens <= edit.trigger) return 0;

  std::vector<std::size_t> candidates;
  for (std::size_t i = 0; i < messages.size(); ++i)
    if (messages[i].type == MessageType::tool) candidates.push_back(i);
  candidates.resize(edit.keep >= candidates.size() ? 0 : candidates.size() - edit.keep);

  std::size_t cleared = 0;
  for (const std::size_t idx : candidates) {
    const Message& tool_message = messages[idx];
    if (ctx_edit_already_cleared(tool_message)) continue;
    // The nearest AI message before it must hold its call.
    std::size_t ai_at = idx;
    while (ai_at > 0 && messages[ai_at - 1].type != MessageType::ai) --ai_at;
    if (ai_at == 0) continue;
    --ai_at;
    const auto& calls = messages[ai_at].tool_calls;
    const auto call = std::find_if(calls.begin(), calls.end(), [&](const ToolCall& c) {
      return c.id == tool_message.tool_call_id;
    });
    if (call == calls.end()) continue;
    const std::string& tool_name = tool_message.name.empty() ? call->name : tool_message.name;
    if (std::find(edit.exclude_tools.begin(), edit.exclude_tools.end(), tool_name) !=
        edit.exclude_tools.end())
      continue;

    const std::string call_id = tool_message.tool_call_id;
    Message& target = messages[idx];
    target.content = Content(edit.placeholder);
    nlohmann::json entry = {{"cleared", true}, {"strategy", "clear_tool_uses"}};
    ctx_edit_set_entry(target, std::move(entry));
    ++cleared;
    if (edit.clear_tool_inputs) ctx_edit_clear_inputs(messages[ai_at], call_id);

    if (edit.clear_at_least > 0) {
      const std::int64_t reclaimed = std::max<std::int64_t>(0, tokens - count_tokens(messages));
      if (reclaimed >= edit.clear_at_least) break;
    }
  }
  return cleared;
}

AgentMiddleware context_editing_middleware(ContextEditingOptions options) {
  if (options.edits.empty()) options.edits.emplace_back();
  auto shared = std::make_shared<const ContextEditingOptions>(std::move(options));
  AgentMiddleware m;
  m.name = "ContextEditingMiddleware";
  m.wrap_model_call = [shared](ModelRequest request,
                               ModelHandler next) -> net::awaitable<ModelResponse> {
    if (!request.messages.empty())
      for (const auto& edit : shared->edits)
        (void)apply_clear_tool_uses(request.messages, edit, shared->token_counter);
    co_return co_await next(std::move(request));
  };
  return m;
}

}  // namespace sg
