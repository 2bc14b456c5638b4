// SPDX-License-Identifier: MIT
// Serves your own graphs over the LangGraph Server API, so that the official SDKs
// (@langchain/langgraph-sdk, langgraph-sdk) and chat UIs drive them: threads, runs, streams,
// interrupts and the store, kept in RocksDB (or PostgreSQL) across restarts. sg::serve_main gives
// the program `stategraph serve`'s options, stategraph.json and signal handling:
//
//   serve_graph [--db DIR] [--port PORT] [--config stategraph.json] ...   (serve_graph --help)
//
// Graph "agent" answers each message with a plain node. Graph "chat", served when
// OPENAI_BASE_URL or OPENAI_API_KEY is set, asks a model (any OpenAI-compatible server) from a
// coroutine node.
//
// Then, from JavaScript:
//   const client = new Client({ apiUrl: "http://127.0.0.1:2024" });
//   const thread = await client.threads.create();
//   await client.runs.wait(thread.thread_id, "agent",
//                          { input: { messages: [{ role: "user", content: "hello" }] } });
#include <stategraph/core/async.hpp>
#include <stategraph/models/openai.hpp>
#include <stategraph/server/serve_main.hpp>
#include <stategraph/stategraph.hpp>

#include <cstdlib>
#include <memory>

// A coroutine node: while the model answers, the run holds no thread, so one server keeps
// thousands of conversations waiting on models at once. Cancelling the run aborts the request.
boost::asio::awaitable<sg::Update<sg::MessagesState>> ask_model(
    std::shared_ptr<const sg::ChatModel> model, const sg::MessagesState& s) {
  sg::Message reply = co_await model->ainvoke(s.messages);
  co_return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(std::move(reply));
}

int main(int argc, char** argv) {
  return sg::serve_main(argc, argv, [](sg::GraphRegistry& graphs, const sg::ServerOptions&) {
    // The graph: any state that converts to JSON. This one answers each human message. Given as
    // a StateGraph, it is compiled on the server's checkpointer and store.
    sg::StateGraph<sg::MessagesState> graph;
    graph.add_node("echo", [](const sg::MessagesState& s) {
      return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(
          sg::ai("echo: " + s.messages.back().text()));
    });
    graph.add_edge(sg::START, "echo").add_edge("echo", sg::END);
    graphs.add("agent", sg::served_graph(std::move(graph)));

    if (std::getenv("OPENAI_BASE_URL") != nullptr || std::getenv("OPENAI_API_KEY") != nullptr) {
      std::shared_ptr<const sg::ChatModel> model =
          std::make_shared<sg::OpenAIChatModel>(sg::OpenAIConfig::from_env());
      sg::StateGraph<sg::MessagesState> chat;
      chat.add_node("model", [model](const sg::MessagesState& s) { return ask_model(model, s); });
      chat.add_edge(sg::START, "model").add_edge("model", sg::END);
      graphs.add("chat", sg::served_graph(std::move(chat)));
    }
  });
}
