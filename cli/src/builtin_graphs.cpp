// SPDX-License-Identifier: MIT
// The registry of built-in graphs (see builtin_graphs.hpp).
#include "builtin_graphs.hpp"

#include <stategraph/core/async.hpp>
#include <stategraph/core/error.hpp>
#include <stategraph/core/state_graph.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/middleware.hpp>
#include <stategraph/models/tool.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <utility>  // before Boost.Asio's awaitable headers (Boost 1.74 omits it)

namespace sg::cli {
namespace {

std::shared_ptr<const ChatModel> model_or_local(const BuiltinGraphOptions& options) {
  if (options.model) return options.model;
  return std::make_shared<LocalModel>();
}

// The tools of the react_agent graph (those of examples/react_agent).
struct Multiply {
  double a = 0;
  double b = 0;
  static constexpr auto schema() {
    return std::tuple{field<"a">(&Multiply::a), field<"b">(&Multiply::b)};
  }
};

struct City {
  std::string city{};
  static constexpr auto schema() { return std::tuple{field<"city">(&City::city)}; }
};

std::vector<Tool> react_tools() {
  return {make_tool<Multiply>("multiply", "Multiplies two numbers.",
                              [](const Multiply& x) { return x.a * x.b; },
                              {{"a", "the first factor"}, {"b", "the second factor"}}),
          make_tool<City>("get_weather", "Today's weather in a city.",
                          [](const City& c) { return "Sunny, 21 C in " + c.city; })};
}

/// The wait a "sleep:<ms>" text asks for, or zero. Digits past what fits wait a year.
std::chrono::milliseconds requested_sleep(std::string_view text) {
  constexpr std::string_view kPrefix = "sleep:";
  if (text.substr(0, kPrefix.size()) != kPrefix) return std::chrono::milliseconds{0};
  const std::string_view digits = text.substr(kPrefix.size());
  std::uint64_t ms = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), ms);
  if (end == digits.data()) return std::chrono::milliseconds{0};  // no digits: no wait
  constexpr std::uint64_t kLongest = 365ULL * 24 * 3600 * 1000;
  if (ec == std::errc::result_out_of_range || ms > kLongest) ms = kLongest;
  return std::chrono::milliseconds{static_cast<std::int64_t>(ms)};
}

/// The node of the `agent` graph (the LangGraph server conformance graph, see
/// ../shared/reference/langgraph-server-api.md §0), a coroutine: "echo: " + the text of the last
/// human message ("" when there is none). A text starting with "sleep:<ms>" first waits that long
/// on a timer, holding no thread; cancelling the run ends the wait at once, and a cancelled run
/// throws CancelledError and writes nothing.
boost::asio::awaitable<Update<MessagesState>> echo_node(const MessagesState& state, Context& ctx) {
  const auto last_human =
      std::find_if(state.messages.rbegin(), state.messages.rend(),
                   [](const Message& m) { return m.type == MessageType::human; });
  const std::string text = last_human == state.messages.rend() ? "" : last_human->text();
  if (const auto wait = requested_sleep(text); wait.count() > 0 && !ctx.cancelled()) {
    const auto executor = co_await boost::asio::this_coro::executor;
    auto timer = std::make_shared<boost::asio::steady_timer>(executor, wait);
    // Called on cancel()'s thread: the timer is the node's, so it is cancelled on its executor.
    const auto subscription = ctx.config().cancellation.on_cancel(
        [timer, executor] { boost::asio::post(executor, [timer] { timer->cancel(); }); });
    boost::system::error_code ec;  // operation_aborted: cancelled
    co_await timer->async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
  }
  ctx.throw_if_cancelled();
  co_return Update<MessagesState>{}.set<&MessagesState::messages>(ai("echo: " + text));
}

CompileOptions compile_options(const BuiltinGraphOptions& options, std::string name) {
  CompileOptions compile;
  compile.checkpointer = options.checkpointer;
  compile.store = options.store;
  compile.name = std::move(name);
  // A server keeps many threads going at once: remember the final state of more of them than
  // the default 64, so that their next run starts without reading its checkpoint back.
  compile.recent_threads = 4096;
  return compile;
}

std::vector<BuiltinGraph> make_registry() {
  std::vector<BuiltinGraph> graphs;
  graphs.push_back(
      {"agent",
       "The LangGraph server conformance graph: one node, echo, answers \"echo: \" + the last "
       "human message",
       [](const BuiltinGraphOptions& options) -> AnyCompiledGraph {
         StateGraph<MessagesState> g;
         g.add_node("echo", echo_node);
         g.add_edge(START, "echo").add_edge("echo", END);
         return g.compile(compile_options(options, "agent"));
       }});
  graphs.push_back(
      {"interrupt_agent",
       "Human in the loop: one node, ask, interrupts with a question; resumed with a value, it "
       "answers \"resumed: \" + the value",
       [](const BuiltinGraphOptions& options) -> AnyCompiledGraph {
         StateGraph<MessagesState> g;
         g.add_node("ask", [](const MessagesState&) {
           const nlohmann::json answer = interrupt(nlohmann::json{{"question", "what next?"}});
           return Update<MessagesState>{}.set<&MessagesState::messages>(
               ai("resumed: " + (answer.is_string() ? answer.get<std::string>() : answer.dump())));
         });
         g.add_edge(START, "ask").add_edge("ask", END);
         return g.compile(compile_options(options, "interrupt_agent"));
       }});
  graphs.push_back(
      {"react_agent",
       "The prebuilt ReAct agent (create_react_agent) with two tools, multiply and get_weather, "
       "and those of the MCP servers of --mcp",
       [](const BuiltinGraphOptions& options) -> AnyCompiledGraph {
         ReactAgentOptions agent;
         agent.system_prompt = "You are a helpful assistant. Use the tools when they help.";
         agent.checkpointer = options.checkpointer;
         agent.store = options.store;
         agent.name = "react_agent";
         std::vector<Tool> tools = react_tools();
         tools.insert(tools.end(), options.tools.begin(), options.tools.end());
         return create_react_agent(model_or_local(options), std::move(tools), std::move(agent));
       }});
  graphs.push_back(
      {"approval_agent",
       "An agent (create_agent) whose get_weather calls wait for a reviewer's approval "
       "(HumanInterrupt: accept, edit, respond or ignore); multiply and the MCP tools of --mcp "
       "run without one",
       [](const BuiltinGraphOptions& options) -> AnyCompiledGraph {
         HumanInTheLoopOptions approvals;
         approvals.interrupt_on["get_weather"] = {.config = {.allow_ignore = true}};
         AgentOptions agent;
         agent.system_prompt = "You are a helpful assistant. Use the tools when they help.";
         agent.middleware = {human_in_the_loop_middleware(std::move(approvals))};
         agent.checkpointer = options.checkpointer;
         agent.store = options.store;
         agent.name = "approval_agent";
         std::vector<Tool> tools = react_tools();
         tools.insert(tools.end(), options.tools.begin(), options.tools.end());
         return create_agent(model_or_local(options), std::move(tools), std::move(agent));
       }});
  graphs.push_back(
      {"summarize_and_trim",
       "The chat of `stategraph demo`: the model reads a running summary and the recent turns; "
       "long threads are summarized and cut",
       [](const BuiltinGraphOptions& options) -> AnyCompiledGraph {
         return summarize_and_trim_graph(model_or_local(options), demo_graph_options())
             .compile(compile_options(options, "summarize_and_trim"));
       }});
  std::sort(graphs.begin(), graphs.end(),
            [](const BuiltinGraph& a, const BuiltinGraph& b) { return a.name < b.name; });
  return graphs;
}

}  // namespace

SummaryTrimOptions demo_graph_options() {
  SummaryTrimOptions options;
  options.summary_options.model_options.max_tokens = 1024;  // LocalModel: room for every fact
  return options;
}

const std::vector<BuiltinGraph>& builtin_graphs() {
  static const std::vector<BuiltinGraph> graphs = make_registry();
  return graphs;
}

const BuiltinGraph* find_builtin_graph(std::string_view name) {
  for (const auto& g : builtin_graphs()) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

std::string builtin_graph_names() {
  std::string names;
  for (const auto& g : builtin_graphs()) names += (names.empty() ? "" : ", ") + g.name;
  return names;
}

std::vector<std::string> graph_nodes(const AnyCompiledGraph& graph) {
  return std::visit([](const auto& g) { return g.nodes(); }, graph);
}

std::string graph_mermaid(const AnyCompiledGraph& graph) {
  return std::visit([](const auto& g) { return g.draw_mermaid(); }, graph);
}

std::string graph_dot(const AnyCompiledGraph& graph) {
  return std::visit([](const auto& g) { return g.draw_dot(); }, graph);
}

}  // namespace sg::cli
