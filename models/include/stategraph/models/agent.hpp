// SPDX-License-Identifier: MIT
#pragma once
// LangChain's create_agent: a model that calls tools in a loop, shaped by a list of middleware.
//
//   auto agent = sg::create_agent(model, {search},
//                                 {.system_prompt = "You are helpful.",
//                                  .middleware = {sg::model_call_limit_middleware({.run_limit =
//                                  5}),
//                                                 sg::human_in_the_loop_middleware(
//                                                     {.interrupt_on = {{"search", {}}}})}});
//   auto result = agent.invoke(sg::set<&sg::CreateAgentState::messages>(
//       std::vector<sg::Message>{sg::human("Find the weather in Paris")}));
//
// The graph (docs/agents.md): START -> every before_agent hook (in list order) -> every
// before_model hook (in list order) -> "model" -> every after_model hook (in reverse list order)
// -> "tools" when the last AI message has unanswered tool calls, then back to the first
// before_model hook; else every after_agent hook (in reverse list order) -> END. A hook may jump
// to "model", "tools" or "end". wrap_model_call and wrap_tool_call wrap the model call and each
// tool call; the first middleware of the list is the outermost.

#include <stategraph/core/compiled_graph.hpp>
#include <stategraph/core/context.hpp>
#include <stategraph/models/chat_model.hpp>
#include <stategraph/models/tool.hpp>
#include <stategraph/models/tool_node.hpp>
#include <stategraph/reducers/messages_state.hpp>

#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <typeinfo>
#include <utility>  // before Boost.Asio's awaitable headers (Boost 1.74 omits it)
#include <vector>

namespace sg {

namespace detail {
/// The `middleware_state` reducer: the update's keys replace the value's; a null value removes
/// its key.
struct MergeObjectKeys {
  nlohmann::json operator()(nlohmann::json value, nlohmann::json update) const;
};
}  // namespace detail

/// The state of create_agent's graph (LangChain's AgentState): the conversation, the structured
/// response (null until the agent gives one), the state middleware keeps (an object keyed by
/// middleware; writes merge key by key) and the jump the last hook that may jump asked for.
struct CreateAgentState : MessagesState {
  nlohmann::json structured_response{};
  nlohmann::json middleware_state = nlohmann::json::object();
  std::string jump_to{};
  static constexpr auto schema() {
    return std::tuple_cat(
        MessagesState::schema(),
        std::tuple{field<"structured_response">(&CreateAgentState::structured_response),
                   field<"middleware_state">(&CreateAgentState::middleware_state,
                                             detail::MergeObjectKeys{}),
                   field<"jump_to">(&CreateAgentState::jump_to)});
  }
};

/// The typed result create_agent delivers in `structured_response` (LangChain's response_format):
/// a JSON Schema, the function that checks a reply against it, and how the model is asked for it.
/// Make one with tool_output<T>() or provider_output<T>(). Copyable; thread-safe to use.
struct StructuredOutput {
  /// tool: the schema is a tool the model calls to answer (LangChain's ToolStrategy; works with
  /// every model that calls tools). provider: the provider's native structured output (OpenAI's
  /// `response_format: json_schema`, LangChain's ProviderStrategy).
  enum class Strategy { tool, provider };
  Strategy strategy = Strategy::tool;
  /// The tool's name (tool) or the json_schema's name (provider).
  std::string name;
  std::string description;
  nlohmann::json schema = nlohmann::json::object();
  /// Checks a reply's JSON and returns it as stored (e.g. with defaults filled in); throws
  /// std::exception naming what is wrong.
  std::function<nlohmann::json(const nlohmann::json&)> validate;
  /// tool: the text of the tool message answering the structured call ("" : "Returning
  /// structured response: " + the JSON).
  std::string tool_message_content;
  /// A reply that does not validate is answered with the error and the model asked again, up to
  /// max_retries times; false (or retries spent): the run fails with sg::Error
  /// (errc::kStructuredOutput).
  bool handle_errors = true;
  int max_retries = 3;
  /// provider: ask the provider to enforce the schema strictly.
  bool strict = false;
};

namespace errc {
/// A model's structured output did not validate (and could not be retried).
inline constexpr std::string_view kStructuredOutput = "agent.structured_output";
}  // namespace errc

namespace detail {
/// `mangled` demangled, without namespaces or template arguments.
[[nodiscard]] std::string demangled_short_name(const char* mangled);
/// The name of C++ type T without namespaces or template arguments ("Weather").
template <class T>
std::string short_type_name() {
  return demangled_short_name(typeid(T).name());
}
}  // namespace detail

/// Structured output as a tool call, of type T (a struct with a schema(), as make_tool's
/// arguments; its JSON Schema derived the same way). `name` defaults to T's name.
template <State T>
[[nodiscard]] StructuredOutput tool_output(std::string name = {}, std::string description = {}) {
  StructuredOutput out;
  out.strategy = StructuredOutput::Strategy::tool;
  out.name = name.empty() ? detail::short_type_name<T>() : std::move(name);
  out.description = std::move(description);
  out.schema = json_schema_of<T>();
  out.validate = [tool = out.name](const nlohmann::json& reply) {
    return state_to_json(detail::parse_tool_args<T>(tool, reply));
  };
  return out;
}

/// Structured output through the provider's native support, of type T (see tool_output).
template <State T>
[[nodiscard]] StructuredOutput provider_output(std::string name = {}, bool strict = false) {
  StructuredOutput out = tool_output<T>(std::move(name));
  out.strategy = StructuredOutput::Strategy::provider;
  out.strict = strict;
  return out;
}

/// The structured response of `state` as T. Throws sg::Error (errc::kInvalidArgument) when
/// there is none or it is not a T.
template <State T>
[[nodiscard]] T structured_response(const CreateAgentState& state) {
  if (state.structured_response.is_null())
    throw Error(errc::kInvalidArgument, "the agent gave no structured response");
  return state_from_json<T>(state.structured_response);
}

/// One model call as middleware sees it (LangChain's ModelRequest). wrap_model_call may change
/// any field before calling the next handler: another model, other messages, fewer tools.
struct ModelRequest {
  std::shared_ptr<const ChatModel> model;
  /// The conversation the model sees, without the system prompt.
  std::vector<Message> messages;
  /// Sent first as a system message when not empty.
  std::string system_prompt;
  /// The tools the model may call (their specs are sent). The tools node runs only the agent's
  /// own tools.
  std::vector<Tool> tools;
  /// The call's options; their `tools` are replaced by the specs of `tools`.
  ChatOptions options;
  /// The structured output asked for, if any.
  std::optional<StructuredOutput> response_format;
  const CreateAgentState* state = nullptr;
  Context* context = nullptr;
};

/// What a model call produced (LangChain's ModelResponse): the messages to add (the AI message,
/// and the tool messages that answer a structured-output tool call) and the structured response
/// (null when none).
struct ModelResponse {
  std::vector<Message> messages;
  nlohmann::json structured_response{};
};

/// The next handler of a model call: the inner middleware, the model call itself last.
using ModelHandler = std::function<boost::asio::awaitable<ModelResponse>(ModelRequest)>;

/// One tool call as middleware sees it (LangChain's ToolCallRequest). wrap_tool_call may change
/// the call (its arguments) before calling the next handler. `tool` is null for a name the agent
/// does not have.
struct ToolCallRequest {
  ToolCall call;
  const Tool* tool = nullptr;
  const CreateAgentState* state = nullptr;
  Context* context = nullptr;
};

/// The next handler of a tool call: the inner middleware, the tool itself last. It returns the
/// call's tool message (or a Command<CreateAgentState>) and throws what the tool throws, except
/// for the errors the agent's tool options turn into error messages.
using ToolHandler = std::function<boost::asio::awaitable<ToolCallOutcome>(ToolCallRequest)>;

/// What a before/after hook returns: an update of the state, and where to go instead of the next
/// node: "" (on), "model", "tools" or "end".
struct HookResult {
  Update<CreateAgentState> update{};
  std::string jump_to{};
};

/// A hook run as a node of the agent's graph. It may call sg::interrupt. Null result: nothing.
using AgentHook = std::function<std::optional<HookResult>(const CreateAgentState&, Context&)>;

/// A middleware: hooks that are nodes of the graph, wrappers around each model and tool call,
/// and tools of its own. Unset members take no part. `name` names its nodes
/// ("NAME.before_model") and must be unique in an agent. Copyable; its functions are called
/// from the run's threads, one call at a time per run but concurrently across runs.
struct AgentMiddleware {
  std::string name;
  AgentHook before_agent{};
  AgentHook before_model{};
  AgentHook after_model{};
  AgentHook after_agent{};
  std::function<boost::asio::awaitable<ModelResponse>(ModelRequest, ModelHandler)>
      wrap_model_call{};
  std::function<boost::asio::awaitable<ToolCallOutcome>(ToolCallRequest, ToolHandler)>
      wrap_tool_call{};
  /// Tools the middleware adds to the agent's.
  std::vector<Tool> tools{};
  /// Where its hooks may jump ("model", "tools", "end"): the graph's possible edges.
  std::vector<std::string> can_jump_to{};
};

/// Options of create_agent.
struct AgentOptions {
  std::string system_prompt{};
  std::vector<AgentMiddleware> middleware{};
  /// Options of every model call (the agent adds the tools).
  ChatOptions model_options{};
  /// A typed final answer, delivered in `structured_response` (see StructuredOutput).
  std::optional<StructuredOutput> response_format{};
  /// How the tools node answers errors. Default (as LangChain's agent): an unknown tool or bad
  /// arguments become error messages the model sees; what a tool throws fails the run, after
  /// the wrap_tool_call middleware saw it.
  ToolNodeOptions tool_options{.handle_errors = false, .handle_invalid_calls = true};
  std::shared_ptr<Checkpointer> checkpointer{};
  std::shared_ptr<Store> store{};
  std::vector<std::string> interrupt_before{};
  std::vector<std::string> interrupt_after{};
  /// Names the graph ("agent" when empty) and, when set, the AI messages the model node adds (as
  /// LangChain's create_agent): multi-agent graphs tell their agents apart by it.
  std::string name{};
};

/// Builds and compiles the agent. Throws sg::Error (errc::kInvalidArgument) for a null model,
/// two tools with one name, two middleware with one name or an unknown jump target. The graph is
/// thread-safe as every compiled graph.
[[nodiscard]] CompiledGraph<CreateAgentState> create_agent(std::shared_ptr<const ChatModel> model,
                                                           std::vector<Tool> tools,
                                                           AgentOptions options = {});

/// The calls of the last AI message of `messages` that no later tool message answers: the calls
/// the agent's tools node runs next. Thread-safe.
[[nodiscard]] std::vector<ToolCall> pending_tool_calls(const std::vector<Message>& messages);

namespace detail {
/// The index of the last AI message of `messages`, or std::string::npos.
[[nodiscard]] std::size_t last_ai_index(const std::vector<Message>& messages) noexcept;
}  // namespace detail

/// The text of the tool message create_agent and create_react_agent give an orphaned tool call.
[[nodiscard]] std::string cancelled_tool_call_text(const ToolCall& call);

/// `messages` with every orphaned tool call (an AI message's call that no tool message answers)
/// answered by a tool message (status "error", cancelled_tool_call_text) placed after the AI
/// message's other answers, so that a model accepts the history. Unchanged when none is
/// orphaned. Thread-safe.
[[nodiscard]] std::vector<Message> repair_tool_calls(std::vector<Message> messages);

}  // namespace sg
