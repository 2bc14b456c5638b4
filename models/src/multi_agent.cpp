// SPDX-License-Identifier: MIT
// Handoff tools, create_supervisor and create_swarm: graphs whose nodes run create_agent agents
// as subgraphs and turn their handoffs (Commands to the parent graph) into this graph's routes.
#include <stategraph/core/state_graph.hpp>
#include <stategraph/core/uuid.hpp>
#include <stategraph/models/multi_agent.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <utility>

#include "text.hpp"

namespace sg {
namespace {

using AgentSt = CreateAgentState;

constexpr const char* kHandoffDestination = "__handoff_destination";
constexpr const char* kIsHandoffBack = "__is_handoff_back";

/// The tools' schema of a tool without arguments.
nlohmann::json no_arguments() {
  return {{"type", "object"}, {"properties", nlohmann::json::object()}};
}

/// An agent's update as the swarm's (the same fields, and active_agent).
Update<SwarmState> as_swarm_update(const Update<AgentSt>& update) {
  return update_from_json<SwarmState>(update_to_json(update));
}

/// The names of `agents`, checked: each set, none twice.
std::vector<std::string> agent_names(const std::vector<CompiledGraph<AgentSt>>& agents) {
  std::vector<std::string> names;
  for (const auto& agent : agents) {
    const std::string& name = agent.name();
    if (name.empty() || name == "LangGraph" || name == "agent")
      throw Error(errc::kInvalidArgument,
                  "Please specify a name when you create your agent, either via "
                  "`create_agent(..., {.name = agent_name})` or via "
                  "`graph.compile({.name = name})`.");
    if (std::find(names.begin(), names.end(), name) != names.end())
      throw Error(
          errc::kInvalidArgument,
          fmt::format("Agent with name '{}' already exists. Agent names must be unique.", name));
    names.push_back(name);
  }
  return names;
}

/// Runs `agent` as a subgraph of the node running now, on `messages`: its final state, or the
/// Command it sent to this graph (a handoff).
struct AgentOutcome {
  std::optional<AgentSt> state;
  std::optional<Command<AgentSt>> handoff;
};

AgentOutcome run_agent(const CompiledGraph<AgentSt>& agent, std::vector<Message> messages) {
  Update<AgentSt> input;
  input.set<&AgentSt::messages>(std::move(messages));
  AgentOutcome out;
  try {
    // Inside a node, invoke runs the agent as this node's subgraph (its checkpoints under the
    // node's namespace, its interrupts the run's).
    out.state = agent.invoke(std::move(input)).state;
  } catch (detail::ParentCommand& command) {
    auto* handoff = std::any_cast<Command<AgentSt>>(&command.command);
    if (handoff == nullptr)
      throw Error(errc::kInvalidArgument, "an agent sent its parent a Command of another state");
    out.handoff = std::move(*handoff);
  }
  return out;
}

Message handoff_back_ai(const std::string& agent, const std::string& supervisor,
                        const std::string& call_id) {
  Message m = ai(fmt::format("Transferring back to {}", supervisor),
                 {ToolCall{call_id, "transfer_back_to_" + normalize_agent_name(supervisor),
                           nlohmann::json::object()}});
  m.name = agent;
  m.response_metadata = {{kIsHandoffBack, true}};
  return m;
}

Message handoff_back_tool(const std::string& supervisor, const std::string& call_id) {
  Message m = tool(fmt::format("Successfully transferred back to {}", supervisor), call_id);
  m.name = "transfer_back_to_" + normalize_agent_name(supervisor);
  m.response_metadata = {{kIsHandoffBack, true}};
  return m;
}

}  // namespace

std::string normalize_agent_name(std::string_view name) {
  std::string out;
  bool space = false;
  for (const char c : models_detail::trim(name)) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = true;
      continue;
    }
    if (space) out += '_';
    space = false;
    out += c;
  }
  return models_detail::lower(out);
}

Tool create_handoff_tool(const std::string& agent_name, HandoffToolOptions options) {
  if (agent_name.empty()) throw Error(errc::kInvalidArgument, "a handoff needs an agent's name");
  std::string name =
      options.name.empty() ? "transfer_to_" + normalize_agent_name(agent_name) : options.name;
  std::string description = options.description.empty()
                                ? fmt::format("Ask agent '{}' for help", agent_name)
                                : options.description;
  const bool with_messages = options.add_handoff_messages;
  Tool::Fn fn = [agent_name, name, with_messages](const nlohmann::json&,
                                                  const ToolRuntime& runtime) -> ToolResult {
    const auto& state = runtime.state_as<AgentSt>();
    std::vector<Message> messages = state.messages;
    if (with_messages) {
      Message answer =
          tool_answer(fmt::format("Successfully transferred to {}", agent_name), *runtime.call);
      answer.response_metadata = {{kHandoffDestination, agent_name}};
      messages.push_back(std::move(answer));
    } else if (!messages.empty()) {
      messages.pop_back();  // the AI message asking for the handoff
    }
    Command<AgentSt> command;
    command.update.set<&AgentSt::messages>(std::move(messages));
    command.go_to = {agent_name};
    command.graph = PARENT;
    ToolResult result;
    result.command = std::move(command);
    return result;
  };
  return Tool(std::move(name), std::move(description), no_arguments(), std::move(fn));
}

Tool create_forward_message_tool(const std::string& supervisor_name) {
  struct FromAgent {
    std::string from_agent{};
    static constexpr auto schema() {
      return std::tuple{field<"from_agent">(&FromAgent::from_agent)};
    }
  };
  return make_tool<FromAgent>(
      "forward_message",
      "Forwards the latest message from the specified agent to the user without any changes. "
      "Use this to preserve information fidelity, avoid misinterpretation of questions or "
      "responses, and save time.",
      [supervisor_name](const FromAgent& args, const ToolRuntime& runtime) -> ToolResult {
        const auto& state = runtime.state_as<AgentSt>();
        std::set<std::string> found;
        for (auto it = state.messages.rbegin(); it != state.messages.rend(); ++it) {
          if (it->type != MessageType::ai) continue;
          found.insert(it->name);
          const bool back = it->response_metadata.is_object() &&
                            it->response_metadata.value(kIsHandoffBack, false);
          if (back || models_detail::lower(it->name) != models_detail::lower(args.from_agent))
            continue;
          Message forwarded = ai(it->content, new_uuid4());
          forwarded.name = supervisor_name;
          Command<AgentSt> command;
          command.update.set<&AgentSt::messages>(std::vector<Message>{std::move(forwarded)});
          command.go_to = {END};
          command.graph = PARENT;
          ToolResult result;
          result.command = std::move(command);
          return result;
        }
        ToolResult result;
        result.content = fmt::format("Could not find message from source agent {}. Found names: {}",
                                     args.from_agent, nlohmann::json(found).dump());
        return result;
      });
}

CompiledGraph<AgentSt> create_supervisor(std::vector<CompiledGraph<AgentSt>> agents,
                                         std::shared_ptr<const ChatModel> model,
                                         SupervisorOptions options) {
  if (!model) throw Error(errc::kInvalidArgument, "create_supervisor needs a model");
  const std::vector<std::string> names = agent_names(agents);
  const std::string supervisor = options.supervisor_name;
  const bool back_messages =
      options.add_handoff_back_messages.value_or(options.add_handoff_messages);

  // The supervisor's tools: the given ones, and a handoff per agent unless handoffs were given.
  std::vector<Tool> tools = options.tools;
  std::set<std::string> custom_handoffs;
  for (const auto& t : tools)
    if (t.name().rfind("transfer_to_", 0) == 0 ||
        (!options.handoff_tool_prefix.empty() &&
         t.name().rfind(options.handoff_tool_prefix, 0) == 0))
      custom_handoffs.insert(t.name());
  if (custom_handoffs.empty()) {
    for (const auto& name : names) {
      HandoffToolOptions handoff;
      if (!options.handoff_tool_prefix.empty())
        handoff.name = options.handoff_tool_prefix + normalize_agent_name(name);
      handoff.add_handoff_messages = options.add_handoff_messages;
      tools.push_back(create_handoff_tool(name, handoff));
    }
  } else {
    std::vector<std::string> missing;
    for (const auto& name : names)
      if (!custom_handoffs.contains("transfer_to_" + normalize_agent_name(name)) &&
          !custom_handoffs.contains(options.handoff_tool_prefix + normalize_agent_name(name)))
        missing.push_back(name);
    if (!missing.empty())
      throw Error(errc::kInvalidArgument,
                  fmt::format("When providing custom handoff tools, you must provide them for all "
                              "subagents. Missing handoff tools for agents '{}'.",
                              fmt::join(missing, "', '")));
  }
  AgentOptions supervisor_options;
  supervisor_options.system_prompt = options.system_prompt;
  supervisor_options.middleware = std::move(options.middleware);
  supervisor_options.response_format = std::move(options.response_format);
  supervisor_options.name = supervisor;
  const auto supervisor_agent = create_agent(model, std::move(tools), supervisor_options);

  StateGraph<AgentSt> g;
  std::vector<std::string> destinations = names;
  destinations.emplace_back(END);
  // The supervisor: its handoff is this graph's route; its answer (or a forward) ends the run.
  g.add_node(
      supervisor,
      [supervisor_agent](const AgentSt& state) -> Command<AgentSt> {
        AgentOutcome out = run_agent(supervisor_agent, state.messages);
        if (out.handoff) {
          out.handoff->graph.clear();
          return std::move(*out.handoff);
        }
        Command<AgentSt> done;
        done.update.set<&AgentSt::messages>(std::move(out.state->messages));
        if (!out.state->structured_response.is_null())
          done.update.set<&AgentSt::structured_response>(std::move(out.state->structured_response));
        return done;
      },
      NodeOptions{.destinations = destinations});
  // Each agent starts from the conversation and hands back per output_mode.
  for (std::size_t i = 0; i < agents.size(); ++i) {
    const std::string name = names[i];
    g.add_node(name,
               [agent = agents[i], name, supervisor, back_messages,
                mode = options.output_mode](const AgentSt& state) -> Command<AgentSt> {
                 AgentOutcome out = run_agent(agent, state.messages);
                 if (out.handoff) {  // a handoff of its own: followed as it is
                   out.handoff->graph.clear();
                   return std::move(*out.handoff);
                 }
                 std::vector<Message>& all = out.state->messages;
                 std::vector<Message> messages;
                 if (mode == AgentOutputMode::full_history || all.empty()) {
                   messages = std::move(all);
                 } else {
                   const std::size_t keep =
                       all.size() >= 2 && all.back().type == MessageType::tool ? 2 : 1;
                   messages.assign(
                       std::make_move_iterator(all.end() - static_cast<std::ptrdiff_t>(keep)),
                       std::make_move_iterator(all.end()));
                 }
                 if (back_messages) {
                   const std::string call_id = new_uuid4();
                   messages.push_back(handoff_back_ai(name, supervisor, call_id));
                   messages.push_back(handoff_back_tool(supervisor, call_id));
                 }
                 Command<AgentSt> back;
                 back.update.set<&AgentSt::messages>(std::move(messages));
                 return back;
               });
    g.add_edge(name, supervisor);
  }
  g.add_edge(START, supervisor);
  CompileOptions compile;
  compile.checkpointer = std::move(options.checkpointer);
  compile.store = std::move(options.store);
  compile.name = std::move(options.name);
  return g.compile(std::move(compile));
}

CompiledGraph<SwarmState> create_swarm(std::vector<CompiledGraph<AgentSt>> agents,
                                       const std::string& default_active_agent,
                                       SwarmOptions options) {
  if (agents.empty()) throw Error(errc::kInvalidArgument, "agents list cannot be empty");
  const std::vector<std::string> names = agent_names(agents);
  if (std::find(names.begin(), names.end(), default_active_agent) == names.end())
    throw Error(errc::kInvalidArgument,
                fmt::format("Default active agent '{}' not found in agent names {}",
                            default_active_agent, nlohmann::json(names).dump()));
  StateGraph<SwarmState> g;
  std::vector<std::string> destinations = names;
  destinations.emplace_back(END);
  for (std::size_t i = 0; i < agents.size(); ++i) {
    // An agent: a handoff makes its target active and runs it; an answer ends the run.
    g.add_node(
        names[i],
        [agent = agents[i]](const SwarmState& state) -> Command<SwarmState> {
          AgentOutcome out = run_agent(agent, state.messages);
          Command<SwarmState> next;
          if (out.handoff) {
            next.update = as_swarm_update(out.handoff->update);
            for (const auto& go : out.handoff->go_to) {
              if (!go.is_send() && go.node() != END)
                next.update.set<&SwarmState::active_agent>(go.node());
              next.go_to.push_back(go);
            }
            return next;
          }
          next.update.set<&SwarmState::messages>(std::move(out.state->messages));
          return next;
        },
        NodeOptions{.destinations = destinations});
  }
  const std::string fallback = default_active_agent;
  g.add_conditional_edges(
      START,
      [fallback](const SwarmState& state) {
        return state.active_agent.empty() ? fallback : state.active_agent;
      },
      names);
  CompileOptions compile;
  compile.checkpointer = std::move(options.checkpointer);
  compile.store = std::move(options.store);
  compile.name = std::move(options.name);
  return g.compile(std::move(compile));
}

}  // namespace sg
