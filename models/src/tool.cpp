// SPDX-License-Identifier: MIT
#include <stategraph/models/tool.hpp>
#include <stategraph/models/tool_node.hpp>

#include <fmt/format.h>

#include <chrono>
#include <future>
#include <thread>
#include <utility>

namespace sg {

Tool::Tool(std::string name, std::string description, nlohmann::json parameters, Fn fn)
    : spec_{std::move(name), std::move(description), std::move(parameters)}, fn_(std::move(fn)) {
  if (spec_.name.empty()) throw Error(errc::kInvalidArgument, "a tool needs a name");
  if (!spec_.parameters.is_object())
    throw Error(errc::kInvalidArgument,
                "tool '" + spec_.name + "': the argument schema must be a JSON object");
  if (!fn_) throw Error(errc::kInvalidArgument, "tool '" + spec_.name + "' has no function");
}

std::vector<ToolSpec> tool_specs(const std::vector<Tool>& tools) {
  std::vector<ToolSpec> out;
  out.reserve(tools.size());
  for (const auto& t : tools) out.push_back(t.spec());
  return out;
}

namespace detail {
namespace {

/// The content of a tool message for a tool's result: strings as they are, other JSON as text.
Content result_content(const nlohmann::json& content) {
  if (content.is_string()) return Content(content.get<std::string>());
  if (content.is_null()) return Content(std::string());
  return Content(content.dump());
}

Message tool_message(Content content, const ToolCall& call, std::string status) {
  Message m = tool(std::move(content), call.id);
  m.name = call.name;
  m.status = std::move(status);
  return m;
}

/// One call: its outcome, or (handle_errors) its error as a tool message.
ToolOutcome call_tool(const std::vector<Tool>& tools, const ToolCall& call, const std::any& state,
                      Context* context, const ToolNodeOptions& options) {
  const Tool* tool = nullptr;
  for (const auto& t : tools)
    if (t.name() == call.name) tool = &t;
  if (!tool) {
    // LangGraph's INVALID_TOOL_NAME_ERROR_TEMPLATE.
    std::string names;
    for (const auto& t : tools) names += (names.empty() ? "" : ", ") + t.name();
    std::string text =
        fmt::format("Error: {} is not a valid tool, try one of [{}].", call.name, names);
    if (!options.handle_errors) throw Error(errc::kInvalidArgument, text);
    return ToolOutcome{tool_message(std::move(text), call, "error"), {}};
  }
  ToolRuntime runtime{&call, &state, context ? context->store() : nullptr, context};
  try {
    ToolResult result = tool->call(call.args, runtime);
    if (result.command.has_value()) return ToolOutcome{std::nullopt, std::move(result.command)};
    if (result.message) {
      Message m = std::move(*result.message);
      if (m.type == MessageType::tool && m.tool_call_id.empty()) m.tool_call_id = call.id;
      if (m.type == MessageType::tool && m.name.empty()) m.name = call.name;
      return ToolOutcome{std::move(m), {}};
    }
    return ToolOutcome{tool_message(result_content(result.content), call, "success"), {}};
  } catch (const CancelledError&) {
    throw;
  } catch (const std::exception& e) {
    if (!options.handle_errors) throw;
    // LangGraph's TOOL_CALL_ERROR_TEMPLATE.
    return ToolOutcome{
        tool_message(fmt::format("Error: {}\n Please fix your mistakes.", e.what()), call, "error"),
        {}};
  }
}

/// call_tool with `context` current; in a run with callbacks, reported as a tool span (a tool
/// message with status "error" is an error span).
ToolOutcome run_one(const std::vector<Tool>& tools, const ToolCall& call, const std::any& state,
                    Context* context, const ToolNodeOptions& options) {
  detail::CurrentContextGuard guard(context);
  if (context == nullptr || !context->traced()) [[likely]]
    return call_tool(tools, call, state, context, options);
  const CallbackList& callbacks = context->config().callbacks;
  Span span = context->child_span(SpanKind::tool, call.name);
  span.tool_call_id = call.id;
  span.arguments = &call.args;
  detail::notify(callbacks, &Callbacks::on_tool_start, std::as_const(span));
  span.arguments = nullptr;
  try {
    ToolOutcome out = call_tool(tools, call, state, context, options);
    span.end = std::chrono::system_clock::now();
    if (out.message) {
      span.result = &*out.message;
      if (out.message->status == "error") {
        span.status = SpanStatus::error;
        span.error = out.message->text();
        span.error_type = "tool_error";
      }
    }
    detail::notify(callbacks, &Callbacks::on_tool_end, std::as_const(span));
    return out;
  } catch (...) {
    span.end = std::chrono::system_clock::now();
    detail::set_span_error(span, std::current_exception());
    detail::notify(callbacks, &Callbacks::on_tool_end, std::as_const(span));
    throw;
  }
}

}  // namespace

std::vector<ToolOutcome> run_tool_calls(const std::vector<Tool>& tools,
                                        const std::vector<ToolCall>& calls, const std::any& state,
                                        Context* context, const ToolNodeOptions& options) {
  std::vector<ToolOutcome> out;
  out.reserve(calls.size());
  if (calls.size() == 1) {
    out.push_back(run_one(tools, calls[0], state, context, options));
    return out;
  }
  // Tool calls block (on I/O, usually): each gets its own thread, none waits for a pool the
  // node itself may be occupying. Results are taken in call order.
  std::vector<std::future<ToolOutcome>> running;
  running.reserve(calls.size());
  for (const auto& call : calls) {
    running.push_back(std::async(std::launch::async, [&tools, &call, &state, context, &options] {
      return run_one(tools, call, state, context, options);
    }));
  }
  std::exception_ptr first_error;
  for (auto& f : running) {
    try {
      out.push_back(f.get());
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
  return out;
}

const std::vector<ToolCall>& last_tool_calls(const std::vector<Message>& messages) {
  if (messages.empty() || messages.back().type != MessageType::ai)
    throw Error(errc::kInvalidArgument, "ToolNode: the last message is not an AI message");
  return messages.back().tool_calls;
}

}  // namespace detail
}  // namespace sg
