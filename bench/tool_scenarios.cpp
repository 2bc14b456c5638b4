// SPDX-License-Identifier: MIT
// tool_calls: the cost of running tool calls in a graph, per call. One graph START -> tools,
// invoked 20,000 times with an AI message of one call and 5,000 times with one of four calls,
// the tools doing no work (multiply two numbers). Variants:
//   plain_node  the tool calls in a plain node (detail::run_tool_calls): the floor
//   tool_node   ToolNode (a coroutine node) with the same plain tool
//   async_tool  ToolNode with the tool as a coroutine (Tool::AsyncFn), as MCP tools are
// Reports microseconds per invoke for each message size, and the CPU time.

#include <stategraph/models/tool_node.hpp>
#include <stategraph/reducers/messages_state.hpp>
#include <stategraph/stategraph.hpp>

#include <string>
#include <utility>  // before Boost.Asio's awaitable headers (Boost 1.74 omits it)
#include <vector>

#include "bench_common.hpp"

namespace {

using bench::Json;

struct MulArgs {
  double a = 0;
  double b = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"a">(&MulArgs::a), sg::field<"b">(&MulArgs::b)};
  }
};

sg::Tool plain_multiply() {
  return sg::make_tool<MulArgs>("multiply", "Multiplies two numbers.",
                                [](const MulArgs& x) { return x.a * x.b; });
}

sg::Tool async_multiply() {
  return sg::Tool(
      "multiply", "Multiplies two numbers.", plain_multiply().spec().parameters,
      [](nlohmann::json args, sg::ToolRuntime) -> boost::asio::awaitable<sg::ToolResult> {
        sg::ToolResult out;
        out.content = args.at("a").get<double>() * args.at("b").get<double>();
        co_return out;
      });
}

sg::CompiledGraph<sg::MessagesState> graph(const std::string& variant) {
  sg::StateGraph<sg::MessagesState> g;
  if (variant == "plain_node") {
    auto tools = std::make_shared<const std::vector<sg::Tool>>(std::vector{plain_multiply()});
    g.add_node("tools", [tools](const sg::MessagesState& s, sg::Context& ctx) {
      const std::any state = &s;
      auto outcomes = sg::detail::run_tool_calls(*tools, sg::detail::last_tool_calls(s.messages),
                                                 state, &ctx, sg::ToolNodeOptions{});
      std::vector<sg::Message> messages;
      for (auto& o : outcomes) messages.push_back(std::move(*o.message));
      return sg::set<&sg::MessagesState::messages>(std::move(messages));
    });
  } else {
    g.add_node("tools", sg::ToolNode<sg::MessagesState>(
                            {variant == "async_tool" ? async_multiply() : plain_multiply()}));
  }
  g.add_edge(sg::START, "tools");
  return g.compile();
}

/// Microseconds per invoke of `app` on a message of `calls` tool calls, `runs` times.
double per_invoke_us(const sg::CompiledGraph<sg::MessagesState>& app, int calls, int runs) {
  std::vector<sg::ToolCall> tool_calls;
  for (int i = 0; i < calls; ++i)
    tool_calls.push_back({"call-" + std::to_string(i), "multiply", {{"a", i}, {"b", 7}}});
  const std::vector<sg::Message> input{sg::human("go"), sg::ai("", tool_calls, "ai-1")};
  for (int i = 0; i < runs / 10; ++i)  // warm-up
    (void)app.invoke(sg::set<&sg::MessagesState::messages>(input));
  const auto t0 = bench::Clock::now();
  for (int i = 0; i < runs; ++i) {
    auto r = app.invoke(sg::set<&sg::MessagesState::messages>(input));
    if (r.state.messages.size() != input.size() + static_cast<std::size_t>(calls))
      throw std::runtime_error("tool_calls: a run lost a tool message");
  }
  return bench::seconds_since(t0) * 1e6 / runs;
}

Json tool_calls(const std::string& variant) {
  const auto app = graph(variant);
  const double cpu0 = bench::cpu_seconds();
  Json out;
  out["one_call_us_per_invoke"] = bench::round_to(per_invoke_us(app, 1, 20'000), 2);
  out["four_calls_us_per_invoke"] = bench::round_to(per_invoke_us(app, 4, 5'000), 2);
  out["cpu_s"] = bench::round_to(bench::cpu_seconds() - cpu0, 3);
  return out;
}

const bench::Register plain_unit("tool_calls:plain_node", [] { return tool_calls("plain_node"); });
const bench::Register node_unit("tool_calls:tool_node", [] { return tool_calls("tool_node"); });
const bench::Register async_unit("tool_calls:async_tool", [] { return tool_calls("async_tool"); });

}  // namespace
