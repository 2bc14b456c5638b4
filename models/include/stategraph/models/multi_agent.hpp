// SPDX-License-Identifier: MIT
#pragma once
// Multi-agent systems from handoffs (docs/agents.md, "Multi-agent"): handoff tools, a supervisor
// that delegates to agents (langgraph-supervisor's create_supervisor) and a swarm whose agents
// hand the conversation to each other (langgraph-swarm's create_swarm). The agents are
// create_agent graphs, each with a name.
//
//   auto math = sg::create_agent(model, {add}, {.name = "math_expert"});
//   auto research = sg::create_agent(model, {web_search}, {.name = "research_expert"});
//   auto team = sg::create_supervisor({math, research}, model,
//                                     {.system_prompt = "You manage a math and a research
//                                     expert."});

#include <stategraph/models/agent.hpp>

#include <optional>
#include <string>
#include <vector>

namespace sg {

/// An agent's name as handoff tools use it: trimmed, runs of whitespace as "_", lower case
/// ("travel booking assistant" -> "travel_booking_assistant"). Thread-safe.
[[nodiscard]] std::string normalize_agent_name(std::string_view name);

/// Options of create_handoff_tool.
struct HandoffToolOptions {
  /// The tool's name; empty: "transfer_to_" + the normalized agent name.
  std::string name{};
  /// Empty: "Ask agent '<agent>' for help".
  std::string description{};
  /// The handoff's AI message and its tool message ("Successfully transferred to <agent>") go
  /// to the parent graph; false: neither does.
  bool add_handoff_messages = true;
};

/// A tool that hands the conversation to the agent `agent_name` of the graph running the calling
/// agent (LangGraph's create_handoff_tool): a Command to the parent graph that goes to that
/// agent with the caller's messages and the tool message "Successfully transferred to
/// <agent>". It takes no arguments. Use it in a create_agent agent run by create_supervisor or
/// create_swarm. Throws sg::Error (errc::kInvalidArgument) for an empty name.
[[nodiscard]] Tool create_handoff_tool(const std::string& agent_name,
                                       HandoffToolOptions options = {});

/// A supervisor tool that answers the user with an agent's last message as it is (langgraph-
/// supervisor's create_forward_message_tool, "forward_message" with argument from_agent): the
/// run ends with that text as an AI message named `supervisor_name`.
[[nodiscard]] Tool create_forward_message_tool(const std::string& supervisor_name = "supervisor");

/// What an agent adds to the supervisor's conversation when it is done.
enum class AgentOutputMode { last_message, full_history };

/// Options of create_supervisor (langgraph-supervisor's, with its defaults).
struct SupervisorOptions {
  std::string system_prompt{};
  /// More tools for the supervisor. Handoff tools (see create_handoff_tool) among them replace
  /// the default ones; they must then cover every agent.
  std::vector<Tool> tools{};
  /// last_message: an agent's last message (and the tool message before it, when that is a
  /// tool's direct answer); full_history: all its messages.
  AgentOutputMode output_mode = AgentOutputMode::last_message;
  bool add_handoff_messages = true;
  /// The "Transferring back to <supervisor>" pair after each agent; unset: add_handoff_messages.
  std::optional<bool> add_handoff_back_messages{};
  /// Prefixes the default handoff tools' names instead of "transfer_to_" (as given: no "_" is
  /// added).
  std::string handoff_tool_prefix{};
  std::string supervisor_name = "supervisor";
  /// Middleware and structured output of the supervisor agent.
  std::vector<AgentMiddleware> middleware{};
  std::optional<StructuredOutput> response_format{};
  std::shared_ptr<Checkpointer> checkpointer{};
  std::shared_ptr<Store> store{};
  /// The compiled graph's name.
  std::string name = "supervisor_graph";
};

/// A supervisor over `agents` (langgraph-supervisor's create_supervisor): the graph START ->
/// supervisor, an agent per node, each agent -> supervisor. The supervisor is a create_agent
/// agent on `model` with a handoff tool per agent; it ends the run when it answers without a
/// handoff. Each agent starts from the conversation so far and hands back what output_mode
/// says. Throws sg::Error (errc::kInvalidArgument) for an agent without a name, two agents with
/// one name, or custom handoff tools that miss an agent. Thread-safe as every compiled graph.
[[nodiscard]] CompiledGraph<CreateAgentState> create_supervisor(
    std::vector<CompiledGraph<CreateAgentState>> agents, std::shared_ptr<const ChatModel> model,
    SupervisorOptions options = {});

/// The state of a swarm: the conversation and the agent that answers next (langgraph-swarm's
/// SwarmState). `active_agent` stays on the thread: the next run starts with that agent.
struct SwarmState : CreateAgentState {
  std::string active_agent{};
  static constexpr auto schema() {
    return std::tuple_cat(CreateAgentState::schema(),
                          std::tuple{field<"active_agent">(&SwarmState::active_agent)});
  }
};

/// Options of create_swarm.
struct SwarmOptions {
  std::shared_ptr<Checkpointer> checkpointer{};
  std::shared_ptr<Store> store{};
  std::string name = "swarm";
};

/// A swarm of `agents` (langgraph-swarm's create_swarm): START goes to the active agent
/// (`default_active_agent` until a handoff); an agent's handoff tool (create_handoff_tool) makes
/// its target active and runs it; an agent that answers without a handoff ends the run. With a
/// checkpointer, a thread's next run starts with the agent that was active. Throws sg::Error
/// (errc::kInvalidArgument) for no agents, an agent without a name, two with one name, or an
/// unknown default. Thread-safe as every compiled graph.
[[nodiscard]] CompiledGraph<SwarmState> create_swarm(
    std::vector<CompiledGraph<CreateAgentState>> agents, const std::string& default_active_agent,
    SwarmOptions options = {});

}  // namespace sg
