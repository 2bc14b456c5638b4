// SPDX-License-Identifier: MIT
#pragma once
// LangGraph's prebuilt ReAct agent: a model that calls tools in a loop until it answers.
//
//   auto agent = sg::create_react_agent(sg::default_chat_model(), {add, search},
//                                       {.system_prompt = "You are helpful."});
//   auto result = agent.invoke(sg::set<&sg::AgentState::messages>(
//       std::vector<sg::Message>{sg::human("What is 6 times 7?")}));
//
// The graph: [pre_model_hook ->] agent -(tool calls)-> tools -> [pre_model_hook ->] agent ...
// -(no tool calls)-> END, with LangGraph's node names. All tool calls of one model reply run in
// one `tools` task, concurrently (LangGraph's version "v1"; its "v2" sends one task per call).

#include <stategraph/core/compiled_graph.hpp>
#include <stategraph/core/managed.hpp>
#include <stategraph/models/chat_model.hpp>
#include <stategraph/models/tool.hpp>
#include <stategraph/models/tool_node.hpp>
#include <stategraph/reducers/messages_state.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace sg {

/// The ReAct agent's state (LangGraph's AgentState with a pre-model hook): the conversation,
/// the messages a pre-model hook wants the model to see instead (not the conversation; empty:
/// the conversation), and the steps left before the recursion limit.
struct AgentState : MessagesState {
  std::vector<Message> llm_input_messages{};
  RemainingSteps remaining_steps{};
  static constexpr auto schema() {
    return std::tuple_cat(MessagesState::schema(),
                          std::tuple{field<"llm_input_messages">(&AgentState::llm_input_messages),
                                     field<"remaining_steps">(&AgentState::remaining_steps)});
  }
};

/// Options of create_react_agent.
struct ReactAgentOptions {
  /// Prepended to what the model sees as a system message (not stored in the state).
  std::string system_prompt{};
  /// Runs before every model call (node "pre_model_hook"): e.g. trimming or summarizing. Its
  /// update may rewrite `messages` (with a RemoveMessage of kRemoveAllMessages first) or set
  /// `llm_input_messages` to change only what the model sees.
  std::function<Update<AgentState>(const AgentState&, Context&)> pre_model_hook{};
  /// Options of every model call (tools are added from the agent's tools).
  ChatOptions model_options{};
  ToolNodeOptions tool_options{};
  std::shared_ptr<Checkpointer> checkpointer{};
  std::shared_ptr<Store> store{};
  std::vector<std::string> interrupt_before{};
  std::vector<std::string> interrupt_after{};
  std::string name = "agent";
};

/// The text LangGraph's agent answers with when the recursion limit leaves no step for the
/// tools it asked for.
inline constexpr std::string_view kNeedMoreSteps =
    "Sorry, need more steps to process this request.";

/// Builds and compiles the ReAct agent. Throws sg::Error (errc::kInvalidArgument) for a null
/// model or two tools with the same name. The graph is thread-safe as every compiled graph.
[[nodiscard]] CompiledGraph<AgentState> create_react_agent(std::shared_ptr<const ChatModel> model,
                                                           std::vector<Tool> tools,
                                                           ReactAgentOptions options = {});

}  // namespace sg
