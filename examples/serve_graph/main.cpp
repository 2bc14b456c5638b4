// Serves your own graphs over the LangGraph Server API, so that the official SDKs
// (@langchain/langgraph-sdk, langgraph-sdk) and chat UIs drive them: threads, runs, streams,
// interrupts and the store, all kept in RocksDB under DIR across restarts.
//
//   serve_graph [DIR] [PORT]        (defaults: serve_graph-data, 2024; port 0 picks a free one)
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
#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/core/async.hpp>
#include <stategraph/models/openai.hpp>
#include <stategraph/server/server.hpp>
#include <stategraph/stategraph.hpp>
#include <stategraph/store/rocksdb_store.hpp>

#include <pthread.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

// A coroutine node: while the model answers, the run holds no thread, so one server keeps
// thousands of conversations waiting on models at once. Cancelling the run aborts the request.
boost::asio::awaitable<sg::Update<sg::MessagesState>> ask_model(
    std::shared_ptr<const sg::ChatModel> model, const sg::MessagesState& s) {
  sg::Message reply = co_await model->ainvoke(s.messages);
  co_return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(std::move(reply));
}

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "serve_graph-data";
  const auto port = static_cast<std::uint16_t>(argc > 2 ? std::stoi(argv[2]) : 2024);

  // The graph: any state that converts to JSON. This one answers each human message.
  sg::StateGraph<sg::MessagesState> graph;
  graph.add_node("echo", [](const sg::MessagesState& s) {
    return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(
        sg::ai("echo: " + s.messages.back().text()));
  });
  graph.add_edge(sg::START, "echo").add_edge("echo", sg::END);

  // Checkpoints, the long-term store and the server's records of threads and runs, in RocksDB.
  std::filesystem::create_directories(dir);
  sg::Server server({.port = port,
                     .checkpointer = sg::RocksDbSaver::open(dir + "/checkpoints"),
                     .store = sg::RocksDbStore::open(dir + "/store"),
                     .records = sg::RocksDbStore::open(dir + "/records")});
  server.add_graph("agent", sg::served_graph(std::move(graph)));  // compiled with the above

  if (std::getenv("OPENAI_BASE_URL") != nullptr || std::getenv("OPENAI_API_KEY") != nullptr) {
    std::shared_ptr<const sg::ChatModel> model =
        std::make_shared<sg::OpenAIChatModel>(sg::OpenAIConfig::from_env());
    sg::StateGraph<sg::MessagesState> chat;
    chat.add_node("model", [model](const sg::MessagesState& s) { return ask_model(model, s); });
    chat.add_edge(sg::START, "model").add_edge("model", sg::END);
    server.add_graph("chat", sg::served_graph(std::move(chat)));
  }

  // Serve on background threads until Ctrl-C or SIGTERM.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);  // before the server's threads start
  server.start();
  std::cout << "serving graph 'agent' on " << server.url() << std::endl;
  int signal = 0;
  sigwait(&stop, &signal);
  server.stop();
  std::cout << "stopped" << std::endl;
}
