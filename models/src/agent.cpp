// SPDX-License-Identifier: MIT
// create_agent: the graph of hooks, the model node, the tools node and the routes between them.
#include <stategraph/core/async.hpp>
#include <stategraph/core/state_graph.hpp>
#include <stategraph/models/agent.hpp>

#include <boost/asio/this_coro.hpp>
#include <boost/core/demangle.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <unordered_set>
#include <utility>

// g++ 12 wrongly reports awaitable frames freed by the frame's own operator delete as mismatched
// (GCC bug 109224).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace sg {
namespace net = boost::asio;

nlohmann::json detail::MergeObjectKeys::operator()(nlohmann::json value,
                                                   nlohmann::json update) const {
  if (!update.is_object())
    throw InvalidUpdateError("middleware_state takes a JSON object of middleware keys");
  if (!value.is_object()) value = nlohmann::json::object();
  for (auto& [key, v] : update.items()) {
    if (v.is_null()) {
      value.erase(key);
    } else {
      value[key] = std::move(v);
    }
  }
  return value;
}

std::string detail::demangled_short_name(const char* mangled) {
  std::string name = boost::core::demangle(mangled);
  if (const auto angle = name.find('<'); angle != std::string::npos) name.resize(angle);
  if (const auto colons = name.rfind("::"); colons != std::string::npos) name.erase(0, colons + 2);
  return name;
}

std::string cancelled_tool_call_text(const ToolCall& call) {
  return fmt::format(
      "Tool call {} with id {} was cancelled - another message came in before it could be "
      "completed.",
      call.name, call.id);
}

std::vector<Message> repair_tool_calls(std::vector<Message> messages) {
  std::unordered_set<std::string> answered;
  for (const auto& m : messages)
    if (m.type == MessageType::tool) answered.insert(m.tool_call_id);
  const auto orphaned = [&](const Message& m) {
    return m.type == MessageType::ai &&
           std::any_of(m.tool_calls.begin(), m.tool_calls.end(),
                       [&](const ToolCall& c) { return !answered.contains(c.id); });
  };
  if (std::none_of(messages.begin(), messages.end(), orphaned)) return messages;
  std::vector<Message> out;
  out.reserve(messages.size() + 1);
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const bool repair = orphaned(messages[i]);
    out.push_back(std::move(messages[i]));
    if (!repair) continue;
    const Message& ai_message = out.back();
    std::vector<ToolCall> calls = ai_message.tool_calls;
    while (i + 1 < messages.size() && messages[i + 1].type == MessageType::tool)
      out.push_back(std::move(messages[++i]));
    for (const auto& call : calls) {
      if (answered.contains(call.id)) continue;
      out.push_back(tool_answer(cancelled_tool_call_text(call), call, "error"));
    }
  }
  return out;
}

std::size_t detail::last_ai_index(const std::vector<Message>& messages) noexcept {
  for (std::size_t i = messages.size(); i-- > 0;)
    if (messages[i].type == MessageType::ai) return i;
  return std::string::npos;
}

std::vector<ToolCall> pending_tool_calls(const std::vector<Message>& messages) {
  const std::size_t ai_at = detail::last_ai_index(messages);
  if (ai_at == std::string::npos) return {};
  std::unordered_set<std::string> answered;
  for (std::size_t i = ai_at + 1; i < messages.size(); ++i)
    if (messages[i].type == MessageType::tool) answered.insert(messages[i].tool_call_id);
  std::vector<ToolCall> pending;
  for (const auto& call : messages[ai_at].tool_calls)
    if (!answered.contains(call.id)) pending.push_back(call);
  return pending;
}

namespace {

using AState = CreateAgentState;  // (sg::State is the state concept)

constexpr std::string_view kModelNode = "model";
constexpr std::string_view kToolsNode = "tools";

/// The graph's fixed points, resolved from the middleware list.
struct Layout {
  std::string loop_entry;  // the first before_model hook, else the model
  std::string exit;        // the first after_agent hook to run, else END
  bool has_tools = false;
  std::string structured_tool;  // the tool of a tool-strategy response format, else ""

  /// True when the last AI message's structured-output call was answered with a response.
  [[nodiscard]] bool structured_done(const AState& state) const {
    if (structured_tool.empty()) return false;
    const std::size_t ai_at = detail::last_ai_index(state.messages);
    if (ai_at == std::string::npos) return false;
    for (std::size_t i = ai_at + 1; i < state.messages.size(); ++i) {
      const Message& m = state.messages[i];
      if (m.type == MessageType::tool && m.name == structured_tool && m.status != "error")
        return true;
    }
    return false;
  }

  /// Where a hook's jump goes.
  [[nodiscard]] std::string resolve(const std::string& jump) const {
    if (jump == "model") return loop_entry;
    if (jump == "tools") return std::string(kToolsNode);
    return exit;  // "end"
  }

  /// LangChain's model-to-tools edge: the tools while the last AI message has unanswered calls;
  /// back to the model once every call is answered; else out.
  [[nodiscard]] std::string after_model(const AState& state) const {
    const std::size_t ai_at = detail::last_ai_index(state.messages);
    if (ai_at == std::string::npos || state.messages[ai_at].tool_calls.empty()) return exit;
    if (!pending_tool_calls(state.messages).empty())
      return has_tools ? std::string(kToolsNode) : exit;
    return structured_done(state) ? exit : loop_entry;
  }

  /// After the tools: out once the structured response was given, else back to the model.
  [[nodiscard]] std::string after_tools(const AState& state) const {
    return structured_done(state) ? exit : loop_entry;
  }
};

std::string hook_node(const AgentMiddleware& m, std::string_view hook) {
  return fmt::format("{}.{}", m.name, hook);
}

/// Checks the middleware list: names unique and not empty, jumps known.
void check_middleware(const std::vector<AgentMiddleware>& middleware) {
  std::set<std::string> names;
  for (const auto& m : middleware) {
    if (m.name.empty()) throw Error(errc::kInvalidArgument, "a middleware needs a name");
    if (!names.insert(m.name).second)
      throw Error(errc::kInvalidArgument, "two middleware are named '" + m.name + "'");
    for (const auto& jump : m.can_jump_to)
      if (jump != "model" && jump != "tools" && jump != "end")
        throw Error(errc::kInvalidArgument,
                    fmt::format("middleware '{}' may jump to '{}': a jump goes to \"model\", "
                                "\"tools\" or \"end\"",
                                m.name, jump));
  }
}

/// The error text a model's structured output gets when it is retried.
std::string retry_text(const std::string& error) {
  return fmt::format("Error: {}\n Please fix your mistakes.", error);
}

/// How many structured-output calls of `tool` failed since the last human message.
int failed_structured_calls(const std::vector<Message>& messages, const std::string& tool) {
  int failed = 0;
  for (auto it = messages.rbegin(); it != messages.rend() && it->type != MessageType::human; ++it)
    if (it->type == MessageType::tool && it->name == tool && it->status == "error") ++failed;
  return failed;
}

/// A tool-strategy reply: its structured call answered (the response, or the error to retry).
ModelResponse take_structured_call(Message reply, const StructuredOutput& format,
                                   const std::vector<Message>& history) {
  ModelResponse response;
  std::vector<const ToolCall*> calls;
  for (const auto& c : reply.tool_calls)
    if (c.name == format.name) calls.push_back(&c);
  if (calls.empty()) {
    response.messages.push_back(std::move(reply));
    return response;
  }
  const bool retry =
      format.handle_errors && failed_structured_calls(history, format.name) < format.max_retries;
  std::vector<Message> answers;
  if (calls.size() > 1) {
    std::string names;
    for (const auto* c : calls) names += (names.empty() ? "" : ", ") + c->name;
    const std::string error = fmt::format(
        "Model incorrectly returned multiple structured responses ({}) when only one is expected.",
        names);
    if (!retry) throw Error(errc::kStructuredOutput, error);
    for (const auto* c : calls) answers.push_back(tool_answer(retry_text(error), *c, "error"));
  } else {
    const ToolCall& call = *calls.front();
    try {
      response.structured_response = format.validate(call.args);
      answers.push_back(
          tool_answer(format.tool_message_content.empty()
                          ? "Returning structured response: " + response.structured_response.dump()
                          : format.tool_message_content,
                      call));
    } catch (const std::exception& e) {
      std::string what = e.what();
      const std::string prefix = fmt::format("tool '{}': ", format.name);  // make_tool's parsing
      if (what.starts_with(prefix)) what.erase(0, prefix.size());
      const std::string error =
          fmt::format("Failed to parse structured output for tool '{}': {}.", format.name, what);
      if (!retry) throw Error(errc::kStructuredOutput, error);
      answers.push_back(tool_answer(retry_text(error), call, "error"));
    }
  }
  response.messages.push_back(std::move(reply));
  for (auto& a : answers) response.messages.push_back(std::move(a));
  return response;
}

/// A provider-strategy reply's JSON, validated; throws what is wrong.
nlohmann::json provider_json(const Message& reply, const StructuredOutput& format) {
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(reply.text());
  } catch (const std::exception& e) {
    throw Error(errc::kStructuredOutput,
                fmt::format("Native structured output expected valid JSON for {}, but parsing "
                            "failed: {}.",
                            format.name, e.what()));
  }
  return format.validate(parsed);
}

/// The model call at the end of the wrap_model_call chain: the system prompt, the request's tools,
/// the structured output asked for, the model.
net::awaitable<ModelResponse> call_model(ModelRequest request) {
  if (!request.model) throw Error(errc::kInvalidArgument, "a model request without a model");
  std::vector<Message> input;
  input.reserve(request.messages.size() + 1);
  if (!request.system_prompt.empty()) input.push_back(system(request.system_prompt));
  input.insert(input.end(), request.messages.begin(), request.messages.end());
  ChatOptions options = std::move(request.options);
  options.tools = tool_specs(request.tools);
  const std::optional<StructuredOutput>& format = request.response_format;
  if (format && format->strategy == StructuredOutput::Strategy::tool) {
    options.tools.push_back(ToolSpec{format->name, format->description, format->schema});
    options.tool_choice = "required";
  } else if (format) {
    options.response_format = ResponseFormat{format->name, format->schema, format->strict};
  }
  if (format && format->strategy == StructuredOutput::Strategy::tool) {
    Message reply = co_await request.model->ainvoke(std::move(input), std::move(options));
    co_return take_structured_call(std::move(reply), *format, request.messages);
  }
  // The provider's structured output: a reply that does not validate is answered with the error
  // and asked again (not kept in the state).
  for (int attempt = 0;; ++attempt) {
    Message reply = co_await request.model->ainvoke(input, options);
    ModelResponse response;
    if (format && reply.tool_calls.empty()) {
      std::string error;
      try {
        response.structured_response = provider_json(reply, *format);
      } catch (const std::exception& e) {
        if (!format->handle_errors || attempt >= format->max_retries) throw;
        error = e.what();
      }
      if (!error.empty()) {
        input.push_back(std::move(reply));
        input.push_back(human(retry_text(error)));
        continue;
      }
    }
    response.messages.push_back(std::move(reply));
    co_return response;
  }
}

/// `inner` wrapped by `wrappers`, the first outermost.
template <class Handler, class Wrappers>
Handler compose(Handler inner, const Wrappers& wrappers) {
  for (auto it = wrappers.rbegin(); it != wrappers.rend(); ++it) {
    inner = [wrap = *it, next = std::move(inner)](auto request) {
      return wrap(std::move(request), next);
    };
  }
  return inner;
}

/// What the tools node shares between runs.
struct ToolsShared {
  std::vector<Tool> tools;
  ToolNodeOptions options;
  // The wrap_tool_call chain around the call: a lone call of a plain tool runs inline, calls
  // that run side by side each on a thread of its own (asynchronous ones on the executor).
  ToolHandler lone;
  ToolHandler side_by_side;
};

}  // namespace

CompiledGraph<CreateAgentState> create_agent(std::shared_ptr<const ChatModel> model,
                                             std::vector<Tool> tools, AgentOptions options) {
  if (!model) throw Error(errc::kInvalidArgument, "create_agent needs a model");
  check_middleware(options.middleware);
  const auto& middleware = options.middleware;
  for (const auto& m : middleware) tools.insert(tools.end(), m.tools.begin(), m.tools.end());
  // ToolNode's constructor checks the names.
  (void)ToolNode<AState>(tools);

  std::vector<const AgentMiddleware*> before_agent, before_model, after_model, after_agent;
  for (const auto& m : middleware) {
    if (m.before_agent) before_agent.push_back(&m);
    if (m.before_model) before_model.push_back(&m);
    if (m.after_model) after_model.push_back(&m);
    if (m.after_agent) after_agent.push_back(&m);
  }
  Layout layout;
  layout.has_tools = !tools.empty();
  if (options.response_format) {
    const StructuredOutput& format = *options.response_format;
    if (format.name.empty() || !format.validate)
      throw Error(errc::kInvalidArgument,
                  "a response format needs a name and a validate function (tool_output<T>())");
    for (const auto& t : tools)
      if (t.name() == format.name)
        throw Error(errc::kInvalidArgument,
                    "the response format's tool is named '" + format.name + "', as a tool is");
    if (format.strategy == StructuredOutput::Strategy::tool) layout.structured_tool = format.name;
  }
  layout.loop_entry = before_model.empty() ? std::string(kModelNode)
                                           : hook_node(*before_model.front(), "before_model");
  layout.exit =
      after_agent.empty() ? std::string(END) : hook_node(*after_agent.back(), "after_agent");
  const std::string entry =
      before_agent.empty() ? layout.loop_entry : hook_node(*before_agent.front(), "before_agent");

  StateGraph<AState> g;
  // A hook node. Without jumps it goes on by `edge` when set, else by the router `next` (over
  // `destinations`). A hook that may jump records its jump in the state's jump_to (cleared when
  // it does not jump), which its conditional edge reads first.
  const auto add_hook = [&](const AgentMiddleware& m, std::string_view which, const AgentHook& hook,
                            const std::string& edge, std::function<std::string(const AState&)> next,
                            std::vector<std::string> destinations) {
    const std::string name = hook_node(m, which);
    const bool jumps = !m.can_jump_to.empty();
    g.add_node(
        name,
        [hook, jumps, middleware_name = m.name, allowed = m.can_jump_to](
            const AState& state, Context& ctx) -> Update<AState> {
          std::optional<HookResult> result = hook(state, ctx);
          Update<AState> update;
          std::string jump;
          if (result) {
            update = std::move(result->update);
            jump = std::move(result->jump_to);
          }
          if (!jump.empty() && std::find(allowed.begin(), allowed.end(), jump) == allowed.end())
            throw Error(
                errc::kInvalidArgument,
                fmt::format("middleware '{}' jumped to '{}', which is not in its can_jump_to",
                            middleware_name, jump));
          if (jumps) update.set<&AState::jump_to>(std::move(jump));
          return update;
        });
    if (!jumps && !edge.empty()) {
      g.add_edge(name, edge);
      return;
    }
    if (!jumps) {
      g.add_conditional_edges(name, std::move(next), destinations);
      return;
    }
    if (!edge.empty()) {
      next = [edge](const AState&) { return edge; };
      destinations = {edge};
    }
    for (const auto& jump : m.can_jump_to) destinations.push_back(layout.resolve(jump));
    std::sort(destinations.begin(), destinations.end());
    destinations.erase(std::unique(destinations.begin(), destinations.end()), destinations.end());
    g.add_conditional_edges(
        name,
        [layout, next = std::move(next)](const AState& state) {
          return state.jump_to.empty() ? next(state) : layout.resolve(state.jump_to);
        },
        destinations);
  };
  const auto after_model_route = [layout](const AState& state) {
    return layout.after_model(state);
  };
  std::vector<std::string> after_model_destinations{layout.loop_entry, layout.exit};
  if (layout.has_tools) after_model_destinations.emplace_back(kToolsNode);

  for (std::size_t i = 0; i < before_agent.size(); ++i) {
    const std::string next = i + 1 < before_agent.size()
                                 ? hook_node(*before_agent[i + 1], "before_agent")
                                 : layout.loop_entry;
    add_hook(*before_agent[i], "before_agent", before_agent[i]->before_agent, next, {}, {});
  }
  for (std::size_t i = 0; i < before_model.size(); ++i) {
    const std::string next = i + 1 < before_model.size()
                                 ? hook_node(*before_model[i + 1], "before_model")
                                 : std::string(kModelNode);
    add_hook(*before_model[i], "before_model", before_model[i]->before_model, next, {}, {});
  }
  // after_model hooks run in reverse list order; the first of the list routes on.
  for (std::size_t i = 0; i < after_model.size(); ++i) {
    if (i == 0) {
      add_hook(*after_model[i], "after_model", after_model[i]->after_model, "", after_model_route,
               after_model_destinations);
    } else {
      const std::string next = hook_node(*after_model[i - 1], "after_model");
      add_hook(*after_model[i], "after_model", after_model[i]->after_model, next, {}, {});
    }
  }
  for (std::size_t i = 0; i < after_agent.size(); ++i) {
    const std::string next =
        i == 0 ? std::string(END) : hook_node(*after_agent[i - 1], "after_agent");
    add_hook(*after_agent[i], "after_agent", after_agent[i]->after_agent, next, {}, {});
  }

  // The model node: the wrap_model_call chain around the model call.
  std::vector<std::function<net::awaitable<ModelResponse>(ModelRequest, ModelHandler)>>
      model_wrappers;
  for (const auto& m : middleware)
    if (m.wrap_model_call) model_wrappers.push_back(m.wrap_model_call);
  auto model_handler =
      std::make_shared<const ModelHandler>(compose(ModelHandler(call_model), model_wrappers));
  auto request_base = std::make_shared<const ModelRequest>(ModelRequest{model,
                                                                        {},
                                                                        options.system_prompt,
                                                                        tools,
                                                                        options.model_options,
                                                                        options.response_format,
                                                                        nullptr,
                                                                        nullptr});
  g.add_node(std::string(kModelNode),
             [model_handler, request_base, agent_name = options.name](
                 const AState& state, Context& ctx) -> net::awaitable<Update<AState>> {
               ModelRequest request = *request_base;
               request.messages = repair_tool_calls(state.messages);
               request.state = &state;
               request.context = &ctx;
               ModelResponse response = co_await (*model_handler)(std::move(request));
               if (!agent_name.empty())
                 for (auto& m : response.messages)
                   if (m.type == MessageType::ai && m.name.empty()) m.name = agent_name;
               Update<AState> update;
               update.set<&AState::messages>(std::move(response.messages));
               if (!response.structured_response.is_null())
                 update.set<&AState::structured_response>(std::move(response.structured_response));
               co_return update;
             });
  if (!after_model.empty()) {
    g.add_edge(std::string(kModelNode), hook_node(*after_model.back(), "after_model"));
  } else {
    g.add_conditional_edges(std::string(kModelNode), after_model_route, after_model_destinations);
  }

  // The tools node: the pending calls of the last AI message, each through the wrap_tool_call
  // chain, all at once.
  if (layout.has_tools) {
    auto shared = std::make_shared<ToolsShared>();
    shared->tools = std::move(tools);
    shared->options = options.tool_options;
    std::vector<std::function<net::awaitable<ToolCallOutcome>(ToolCallRequest, ToolHandler)>>
        tool_wrappers;
    for (const auto& m : middleware)
      if (m.wrap_tool_call) tool_wrappers.push_back(m.wrap_tool_call);
    const ToolsShared* raw = shared.get();
    const auto base = [raw](bool own_thread) {
      return ToolHandler(
          [raw, own_thread](ToolCallRequest request) -> net::awaitable<ToolCallOutcome> {
            const std::any state = request.state;
            co_return co_await detail::arun_tool_call(raw->tools, request.call, state,
                                                      request.context, raw->options, own_thread);
          });
    };
    shared->lone = compose(base(false), tool_wrappers);
    shared->side_by_side = compose(base(true), tool_wrappers);
    g.add_node(std::string(kToolsNode),
               [shared](const AState& state,
                        Context& ctx) -> net::awaitable<std::vector<Command<AState>>> {
                 const std::vector<ToolCall> calls = pending_tool_calls(state.messages);
                 std::vector<ToolCallOutcome> outcomes;
                 const auto run = [&](std::size_t i) {
                   ToolCallRequest request;
                   request.call = calls[i];
                   for (const auto& t : shared->tools)
                     if (t.name() == calls[i].name) request.tool = &t;
                   request.state = &state;
                   request.context = &ctx;
                   return calls.size() == 1 ? shared->lone(std::move(request))
                                            : shared->side_by_side(std::move(request));
                 };
                 if (calls.size() == 1) {
                   outcomes.push_back(co_await run(0));
                 } else if (!calls.empty()) {
                   outcomes = co_await detail::gather_tool_calls(calls.size(), run);
                 }
                 std::vector<Message> messages;
                 std::vector<Command<AState>> commands(1);
                 for (auto& outcome : outcomes) {
                   if (outcome.message) {
                     messages.push_back(std::move(*outcome.message));
                   } else if (auto* command = std::any_cast<Command<AState>>(&outcome.command)) {
                     commands.push_back(std::move(*command));
                   } else {
                     throw Error(
                         errc::kInvalidArgument,
                         "a tool returned a Command for another state type than the agent's");
                   }
                 }
                 if (!messages.empty())
                   commands.front().update.set<&AState::messages>(std::move(messages));
                 if (commands.size() > 1 && commands.front().update.empty())
                   commands.erase(commands.begin());
                 // A Command to the parent graph (a handoff) leaves with the task's output: first.
                 const auto parent =
                     std::find_if(commands.begin(), commands.end(),
                                  [](const Command<AState>& c) { return c.graph == PARENT; });
                 if (parent != commands.end()) std::rotate(commands.begin(), parent, parent + 1);
                 co_return commands;
               });
    if (layout.structured_tool.empty()) {
      g.add_edge(std::string(kToolsNode), layout.loop_entry);
    } else {
      g.add_conditional_edges(
          std::string(kToolsNode),
          [layout](const AState& state) { return layout.after_tools(state); },
          std::vector<std::string>{layout.loop_entry, layout.exit});
    }
  }

  g.add_edge(START, entry);
  CompileOptions compile;
  compile.checkpointer = std::move(options.checkpointer);
  compile.store = std::move(options.store);
  compile.interrupt_before = std::move(options.interrupt_before);
  compile.interrupt_after = std::move(options.interrupt_after);
  compile.name = options.name.empty() ? std::string("agent") : std::move(options.name);
  return g.compile(std::move(compile));
}

}  // namespace sg
