// Serves your own graph over the LangGraph Server API, so that the official SDKs
// (@langchain/langgraph-sdk, langgraph-sdk) and chat UIs drive it: threads, runs, streams,
// interrupts and the store, all kept in RocksDB under DIR across restarts.
//
//   serve_graph [DIR] [PORT]        (defaults: serve_graph-data, 2024; port 0 picks a free one)
//
// Then, from JavaScript:
//   const client = new Client({ apiUrl: "http://127.0.0.1:2024" });
//   const thread = await client.threads.create();
//   await client.runs.wait(thread.thread_id, "agent",
//                          { input: { messages: [{ role: "user", content: "hello" }] } });
#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/server/server.hpp>
#include <stategraph/stategraph.hpp>
#include <stategraph/store/rocksdb_store.hpp>

#include <pthread.h>

#include <csignal>
#include <filesystem>
#include <iostream>
#include <string>

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
