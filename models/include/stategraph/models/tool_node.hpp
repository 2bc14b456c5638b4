// SPDX-License-Identifier: MIT
#pragma once
// LangGraph's prebuilt ToolNode and tools_condition.
//
//   g.add_node("tools", sg::ToolNode<sg::MessagesState>({add, search}));
//   g.add_conditional_edges("agent", sg::tools_condition<sg::MessagesState>);

#include <stategraph/core/async.hpp>
#include <stategraph/core/context.hpp>
#include <stategraph/core/graph_types.hpp>
#include <stategraph/core/update.hpp>
#include <stategraph/models/tool.hpp>

#include <any>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>  // before Boost.Asio's awaitable headers (Boost 1.74 omits it)
#include <vector>

namespace sg {

/// Options of ToolNode.
struct ToolNodeOptions {
  /// A tool that throws (or an unknown tool name, or bad arguments) becomes a tool message with
  /// status "error" carrying the error text, so the model can recover (LangGraph's
  /// handle_tool_errors=True). False: the error fails the node.
  bool handle_errors = true;
  /// With handle_errors off, an unknown tool name and arguments the tool rejects
  /// (errc::kToolArguments) still become error messages; other errors fail the node (LangGraph's
  /// default error handler, which handles only invalid tool calls).
  bool handle_invalid_calls = false;
};

/// The outcome of one tool call: its tool message, or the `Command<S>` the tool returned.
struct ToolCallOutcome {
  std::optional<Message> message{};
  std::any command{};
};

namespace detail {

/// Runs `calls` with `tools` (concurrently when there are several; each with `context` current
/// on its thread), results in call order. Throws the first error (in call order) when
/// handle_errors is off. When several calls run, each has an interrupt scope of its own (its
/// index; see detail::InterruptScope), so each call's interrupts have ids of their own and are
/// resumed by id; if calls interrupt and none fails otherwise, it throws one GraphInterrupt
/// carrying every call's interrupts in call order.
std::vector<ToolCallOutcome> run_tool_calls(const std::vector<Tool>& tools,
                                            const std::vector<ToolCall>& calls,
                                            const std::any& state, Context* context,
                                            const ToolNodeOptions& options);

/// As run_tool_calls (errors, interrupts and their scopes too), on the caller's executor:
/// asynchronous tools are awaited there, all at once, without a thread each; plain tools run as
/// run_tool_calls runs them (inline when there are only plain tools, else each on a thread of
/// its own). The arguments outlive the call.
boost::asio::awaitable<std::vector<ToolCallOutcome>> arun_tool_calls(
    const std::vector<Tool>& tools, const std::vector<ToolCall>& calls, const std::any& state,
    Context* context, const ToolNodeOptions& options);

/// One call as ToolNode runs it (its span, its errors handled per `options`), on the caller's
/// executor: an asynchronous tool is awaited there; a plain one runs on a thread of its own when
/// `own_thread` (in the caller's interrupt scope), else inline. The arguments outlive the call.
boost::asio::awaitable<ToolCallOutcome> arun_tool_call(const std::vector<Tool>& tools,
                                                       const ToolCall& call, const std::any& state,
                                                       Context* context,
                                                       const ToolNodeOptions& options,
                                                       bool own_thread);

/// Runs `run(0)` .. `run(count - 1)` at once on the caller's executor; their outcomes in order.
/// When count > 1 and a node's Context is current, each runs in an interrupt scope of its own
/// (its index), made current around each of its resumptions. Once all have ended, throws the
/// first error in that order that is not an interrupt, else one GraphInterrupt carrying all
/// their interrupts in order.
boost::asio::awaitable<std::vector<ToolCallOutcome>> gather_tool_calls(
    std::size_t count,
    const std::function<boost::asio::awaitable<ToolCallOutcome>(std::size_t)>& run);

/// The tool calls of the last AI message of `messages`; throws sg::Error
/// (errc::kInvalidArgument) when the last message is not an AI message (as LangGraph does).
const std::vector<ToolCall>& last_tool_calls(const std::vector<Message>& messages);

}  // namespace detail

/// A node that runs the tool calls of the last AI message in the message-list field `Messages`
/// of state S and answers each with a tool message (name, tool_call_id, status), in tool-call
/// order. Tools returning a `Command<S>` contribute it as it is. A coroutine node: asynchronous
/// tools (MCP tools) wait without holding a thread. Copyable; thread-safe.
template <State S, auto Messages = &S::messages>
class ToolNode {
 public:
  /// Throws sg::Error (errc::kInvalidArgument) when two tools share a name.
  explicit ToolNode(std::vector<Tool> tools, ToolNodeOptions options = {})
      : tools_(std::make_shared<const std::vector<Tool>>(std::move(tools))), options_(options) {
    for (std::size_t i = 0; i < tools_->size(); ++i)
      for (std::size_t j = i + 1; j < tools_->size(); ++j)
        if ((*tools_)[i].name() == (*tools_)[j].name())
          throw Error(errc::kInvalidArgument, "two tools are named '" + (*tools_)[i].name() + "'");
  }

  boost::asio::awaitable<std::vector<Command<S>>> operator()(const S& state, Context& ctx) const {
    const auto& calls = detail::last_tool_calls(state.*Messages);
    const std::any typed_state = &state;
    std::vector<ToolCallOutcome> outcomes =
        co_await detail::arun_tool_calls(*tools_, calls, typed_state, &ctx, options_);
    std::vector<Message> messages;
    std::vector<Command<S>> commands(1);
    for (auto& outcome : outcomes) {
      if (outcome.message) {
        messages.push_back(std::move(*outcome.message));
      } else if (auto* command = std::any_cast<Command<S>>(&outcome.command)) {
        commands.push_back(std::move(*command));
      } else {
        throw Error(errc::kInvalidArgument,
                    "a tool returned a Command for another state type than its ToolNode's");
      }
    }
    if (!messages.empty()) commands.front().update.template set<Messages>(std::move(messages));
    if (commands.size() > 1 && commands.front().update.empty()) commands.erase(commands.begin());
    co_return commands;
  }

  [[nodiscard]] const std::vector<Tool>& tools() const noexcept { return *tools_; }

 private:
  std::shared_ptr<const std::vector<Tool>> tools_;
  ToolNodeOptions options_;
};

/// LangGraph's tools_condition: "tools" when the last message of `Messages` is an AI message
/// with tool calls, else END. Thread-safe.
template <State S, auto Messages = &S::messages>
std::string tools_condition(const S& state) {
  const auto& messages = state.*Messages;
  if (!messages.empty() && messages.back().type == MessageType::ai &&
      !messages.back().tool_calls.empty())
    return "tools";
  return END;
}

}  // namespace sg
