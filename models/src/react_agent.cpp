// SPDX-License-Identifier: MIT
#include <stategraph/core/async.hpp>
#include <stategraph/core/state_graph.hpp>
#include <stategraph/models/agent.hpp>
#include <stategraph/models/react_agent.hpp>

#include <iterator>
#include <utility>  // before Boost.Asio's awaitable headers (Boost 1.74 omits it)

namespace sg {
namespace {

/// LangGraph's _are_more_steps_needed: tool calls asked for with no step left to run them.
bool needs_more_steps(const Message& reply, int remaining_steps) {
  return !reply.tool_calls.empty() && remaining_steps < 2;
}

}  // namespace

CompiledGraph<AgentState> create_react_agent(std::shared_ptr<const ChatModel> model,
                                             std::vector<Tool> tools, ReactAgentOptions options) {
  if (!model) throw Error(errc::kInvalidArgument, "create_react_agent needs a model");
  ToolNode<AgentState> tool_node(std::move(tools), options.tool_options);
  auto call_options = std::make_shared<ChatOptions>(options.model_options);
  for (const auto& t : tool_node.tools()) call_options->tools.push_back(t.spec());
  auto prompt = std::make_shared<const std::string>(options.system_prompt);

  StateGraph<AgentState> g;
  g.add_node("agent",
             [model, call_options,
              prompt](const AgentState& state) -> boost::asio::awaitable<Update<AgentState>> {
               std::vector<Message> input;
               if (!prompt->empty()) input.push_back(sg::system(*prompt));
               std::vector<Message> conversation = repair_tool_calls(
                   state.llm_input_messages.empty() ? state.messages : state.llm_input_messages);
               input.insert(input.end(), std::make_move_iterator(conversation.begin()),
                            std::make_move_iterator(conversation.end()));
               ChatOptions opts = *call_options;
               Message reply = co_await model->ainvoke(std::move(input), std::move(opts));
               if (needs_more_steps(reply, state.remaining_steps))
                 reply = ai(std::string(kNeedMoreSteps), reply.id);
               Update<AgentState> update;
               update.set<&AgentState::messages>(std::vector<Message>{std::move(reply)});
               co_return update;
             });
  g.add_node("tools", tool_node);
  const bool hook = static_cast<bool>(options.pre_model_hook);
  const std::string entry = hook ? "pre_model_hook" : "agent";
  if (hook) {
    g.add_node("pre_model_hook", std::move(options.pre_model_hook));
    g.add_edge("pre_model_hook", "agent");
  }
  g.add_edge(START, entry);
  g.add_conditional_edges("agent", tools_condition<AgentState>, {"tools", END});
  g.add_edge("tools", entry);

  CompileOptions compile;
  compile.checkpointer = std::move(options.checkpointer);
  compile.store = std::move(options.store);
  compile.interrupt_before = std::move(options.interrupt_before);
  compile.interrupt_after = std::move(options.interrupt_after);
  compile.name = std::move(options.name);
  return g.compile(std::move(compile));
}

}  // namespace sg
