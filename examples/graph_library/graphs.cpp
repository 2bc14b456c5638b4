// SPDX-License-Identifier: MIT
// A graph library: graphs that `stategraph serve --config stategraph.json` serves, built with
// stategraph_add_graph_library() (CMakeLists.txt) against the installed package.
//
//   cmake -S . -B build && cmake --build build
//   stategraph serve --config stategraph.json
//
// Graph "agent" answers each message with a plain node; graph "shout" from a coroutine node,
// which holds no thread while it waits (here on a timer; in a real graph, on a model).
#include <stategraph/core/async.hpp>
#include <stategraph/server/graph_library.hpp>
#include <stategraph/stategraph.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>

namespace {

boost::asio::awaitable<sg::Update<sg::MessagesState>> shout(const sg::MessagesState& s) {
  boost::asio::steady_timer pause(co_await boost::asio::this_coro::executor,
                                  std::chrono::milliseconds(10));
  co_await pause.async_wait(boost::asio::use_awaitable);
  std::string text = s.messages.back().text();
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  co_return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(sg::ai(text + "!"));
}

}  // namespace

SG_GRAPH_LIBRARY(registry) {
  sg::StateGraph<sg::MessagesState> agent;
  agent.add_node("reply", [](const sg::MessagesState& s) {
    return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(
        sg::ai("you said: " + s.messages.back().text()));
  });
  agent.add_edge(sg::START, "reply").add_edge("reply", sg::END);
  // Compiled by the server, on its checkpointer and store.
  registry.add("agent", sg::served_graph(std::move(agent)));

  sg::StateGraph<sg::MessagesState> loud;
  loud.add_node("shout", [](const sg::MessagesState& s) { return shout(s); });
  loud.add_edge(sg::START, "shout").add_edge("shout", sg::END);
  registry.add("shout", sg::served_graph(std::move(loud)));
}
