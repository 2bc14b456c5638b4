// `stategraph serve`: the built-in graphs over the LangGraph Server API (sg::Server), their
// threads, runs and store kept in RocksDB, in PostgreSQL (--db postgresql://...) or in memory
// (--in-memory), until SIGINT or SIGTERM.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/core/error.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/postgres/postgres_saver.hpp>
#include <stategraph/postgres/postgres_store.hpp>
#include <stategraph/server/server.hpp>
#include <stategraph/store/memory_store.hpp>
#include <stategraph/store/rocksdb_store.hpp>

#include <fmt/format.h>
#include <pthread.h>
#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "builtin_graphs.hpp"
#include "cli.hpp"

namespace sg::cli {
namespace {

struct ServeArgs {
  std::string host = "127.0.0.1";
  std::uint16_t port = 2024;
  std::string db = "stategraph-server";
  bool in_memory = false;
  std::vector<std::string> graphs;
  int threads = 2;
  std::size_t max_runs = 10000;
  std::size_t sync_workers = 8;
  bool allow_public = false;
  double lease_seconds = 10;
  std::vector<std::string> cors_origins;
};

/// Blocks SIGINT and SIGTERM in every thread started from now on; serve() waits for them.
sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

/// Raises the open-file soft limit to the hard limit: every waiting conversation holds a
/// connection, and a run waiting on a model one more.
void raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &limit);
  }
}

void serve(const ServeArgs& args) {
  raise_open_file_limit();
  ServerOptions options;
  options.host = args.host;
  options.port = args.port;
  options.threads = args.threads;
  options.max_runs = args.max_runs;
  options.sync_node_workers = args.sync_workers;
  options.allow_public_without_key = args.allow_public;
  options.cors.allow_origins = args.cors_origins;
  if (const char* key = std::getenv("STATEGRAPH_API_KEY"); key != nullptr) options.api_key = key;
  BuiltinGraphOptions graph_options;
  graph_options.model = default_chat_model();
  std::string where = "in memory";
  const bool postgres =
      args.db.rfind("postgresql://", 0) == 0 || args.db.rfind("postgres://", 0) == 0;
  if (!args.in_memory && postgres) {
    // Tables sg_checkpoints, sg_store and sg_records, and the run queue (sg_run, sg_run_event)
    // that every server process on the database shares.
    auto saver = PostgresSaver::open(args.db);
    options.checkpointer = saver;
    options.store = PostgresStore::open(args.db);
    options.records = PostgresStore::open(args.db, {.table = "sg_records"});
    options.cluster.conninfo = args.db;
    options.cluster.lease = std::chrono::milliseconds(
        std::max<std::int64_t>(1, static_cast<std::int64_t>(args.lease_seconds * 1000)));
    where = "in PostgreSQL";  // not the URL: it may hold a password
  } else if (!args.in_memory) {
    std::filesystem::create_directories(args.db);
    const std::filesystem::path root(args.db);
    auto saver = RocksDbSaver::open((root / "checkpoints").string());
    options.checkpointer = saver;
    options.store = RocksDbStore::open((root / "store").string());
    options.records = RocksDbStore::open((root / "records").string());
    where = "in " + args.db;
  } else {
    options.checkpointer = std::make_shared<InMemorySaver>();
    options.store = std::make_shared<InMemoryStore>();
  }
  graph_options.checkpointer = options.checkpointer;
  graph_options.store = options.store;
  Server server(options);
  std::vector<std::string> served;
  for (const auto& entry : builtin_graphs()) {
    if (!args.graphs.empty() &&
        std::find(args.graphs.begin(), args.graphs.end(), entry.name) == args.graphs.end()) {
      continue;
    }
    std::visit([&](auto&& graph) { server.add_graph(entry.name, served_graph(std::move(graph))); },
               entry.build(graph_options));
    served.push_back(entry.name);
  }
  for (const auto& name : args.graphs) {
    if (find_builtin_graph(name) == nullptr) {
      throw Error(errc::kInvalidArgument, fmt::format("no built-in graph '{}' (there are: {})",
                                                      name, builtin_graph_names()));
    }
  }
  const sigset_t stop_signals = block_stop_signals();
  server.start();
  std::cout << fmt::format("stategraph serve: {} (graphs: {}; data {}){}\n", server.url(),
                           fmt::join(served, ", "), where,
                           options.api_key.empty() ? "" : "; x-api-key required")
            << std::flush;
  int signal = 0;
  sigwait(&stop_signals, &signal);
  std::cout << "stategraph serve: stopping\n" << std::flush;
  server.stop();
}

}  // namespace

void add_serve_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<ServeArgs>();
  auto* cmd = app.add_subcommand(
      "serve",
      "Serve the built-in graphs over the LangGraph Server API (the official SDKs and UIs work "
      "against it) until Ctrl-C; threads, runs and the store persist in RocksDB or PostgreSQL");
  cmd->add_option("--host", args->host,
                  "Address to bind (a non-loopback one needs "
                  "STATEGRAPH_API_KEY or --allow-public)")
      ->capture_default_str();
  cmd->add_option("--port", args->port, "Port (0 picks a free one)")->capture_default_str();
  cmd->add_option("--db", args->db,
                  "Data directory (checkpoints/, store/ and records/ RocksDB databases), or a "
                  "PostgreSQL URL (postgresql://...; tables sg_checkpoints, sg_store, sg_records)")
      ->capture_default_str();
  cmd->add_flag("--in-memory", args->in_memory, "Keep everything in memory (lost at exit)");
  cmd->add_option("--graph", args->graphs, "Serve only these built-in graphs (repeatable)");
  cmd->add_option(
         "--threads", args->threads,
         "Threads serving connections (a run executes on the thread of the request that starts it)")
      ->capture_default_str();
  cmd->add_option("--max-runs", args->max_runs,
                  "Runs executing at once (the rest wait, pending); a run waiting on a model "
                  "holds no thread")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--sync-workers", args->sync_workers,
                  "Threads that run the plain (synchronous) nodes of all runs")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--allow-public", args->allow_public,
                "Bind a non-loopback address without an API key");
  cmd->add_option("--cors-allow-origin", args->cors_origins,
                  "Browser origins allowed to call the server (repeatable, or comma-separated; "
                  "'*' for any). Default: pages on this machine (localhost, 127.0.0.1, [::1])")
      ->delimiter(',')
      ->envname("STATEGRAPH_CORS_ALLOW_ORIGINS");
  cmd->add_option("--run-lease", args->lease_seconds,
                  "With PostgreSQL: seconds a worker holds a run without renewing it before "
                  "another server process takes it over")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->footer(
      "\nEnvironment: STATEGRAPH_API_KEY, when set, is required as the x-api-key header of "
      "every request but GET /ok and /info.\nEndpoints: docs/server.md.");
  cmd->callback([&action, args] { action = [args] { serve(*args); }; });
}

}  // namespace sg::cli
