// SPDX-License-Identifier: MIT
// `stategraph serve` and sg::serve_main (serve_main.hpp): the command line, stategraph.json and
// storage around an sg::Server, serving until SIGINT or SIGTERM.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/core/error.hpp>
#include <stategraph/core/log.hpp>
#include <stategraph/core/version.hpp>
#include <stategraph/models/mcp.hpp>
#include <stategraph/models/openai.hpp>
#if SG_WITH_POSTGRES
#include <stategraph/postgres/postgres_saver.hpp>
#include <stategraph/postgres/postgres_store.hpp>
#endif
#include <stategraph/server/auth.hpp>
#include <stategraph/server/logging.hpp>
#include <stategraph/server/serve_main.hpp>
#include <stategraph/store/memory_store.hpp>
#include <stategraph/store/rocksdb_store.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "serve_config.hpp"

namespace sg {
namespace {

struct ServeArgs {
  std::string config;
  std::string mcp;
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
  double shutdown_grace = 10;
  std::vector<std::string> cors_origins;
  std::string log_level = "info";
  std::string log_format = "text";
  double slow_request = 1;
  bool metrics_public = false;
};

/// Blocks SIGINT and SIGTERM in this thread and every thread started from it from now on;
/// serve() waits for them.
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

std::string names_of(const std::map<std::string, std::shared_ptr<const ServedGraph>>& graphs) {
  std::vector<std::string> names;
  names.reserve(graphs.size());
  for (const auto& [name, _] : graphs) names.push_back(name);
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

/// Adds the graphs to serve to `server`: the configuration's, or every built-in one; only those
/// `only` names when it names any. Returns their ids.
std::vector<std::string> add_graphs(Server& server, const std::optional<ServeConfig>& config,
                                    const std::vector<std::string>& only,
                                    const GraphRegistry& builtins) {
  std::vector<ConfiguredGraph> graphs;
  if (config) {
    graphs = config->graphs;
  } else {
    for (const auto& [name, _] : builtins.graphs()) graphs.push_back({name, "", name});
  }
  for (const auto& id : only) {
    if (std::none_of(graphs.begin(), graphs.end(), [&](const auto& g) { return g.id == id; })) {
      throw Error(errc::kInvalidArgument,
                  config ? fmt::format("no graph '{}' in the configuration", id)
                         : fmt::format("no built-in graph '{}' (there are: {})", id,
                                       names_of(builtins.graphs())));
    }
  }
  std::vector<std::string> served;
  std::map<std::string, std::map<std::string, std::shared_ptr<const ServedGraph>>> libraries;
  for (const auto& graph : graphs) {
    if (!only.empty() && std::find(only.begin(), only.end(), graph.id) == only.end()) continue;
    if (graph.library.empty()) {
      const auto found = builtins.graphs().find(graph.name);
      if (found == builtins.graphs().end()) {
        throw Error(errc::kInvalidArgument,
                    fmt::format("graph '{}': no built-in graph '{}' (there are: {})", graph.id,
                                graph.name, names_of(builtins.graphs())));
      }
      server.add_graph(graph.id, found->second);
    } else {
      auto loaded = libraries.find(graph.library);
      if (loaded == libraries.end()) {
        loaded = libraries.emplace(graph.library, load_graph_library(graph.library)).first;
      }
      const auto found = loaded->second.find(graph.name);
      if (found == loaded->second.end()) {
        throw Error(errc::kInvalidArgument,
                    fmt::format("graph '{}': the library '{}' has no graph '{}' (it has: {})",
                                graph.id, graph.library, graph.name, names_of(loaded->second)));
      }
      server.add_graph(graph.id, found->second);
    }
    served.push_back(graph.id);
  }
  return served;
}

/// Tells a supervising systemd (a Type=notify unit) the service's state, "READY=1" or
/// "STOPPING=1", as a datagram to $NOTIFY_SOCKET; nothing without one. Written here rather than
/// linking libsystemd for one datagram: the protocol is a stable, documented interface (sd_notify).
void notify_systemd(std::string_view state) {
  const char* socket_path = std::getenv("NOTIFY_SOCKET");
  if (socket_path == nullptr || *socket_path == '\0') return;
  std::string path(socket_path);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) return;
  if (path[0] == '@') path[0] = '\0';  // an abstract socket
  std::memcpy(address.sun_path, path.data(), path.size());
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  (void)sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
               reinterpret_cast<const sockaddr*>(&address),
               static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size()));
  close(fd);
}

/// The store's IndexConfig of stategraph.json's store.index. Throws ModelError (kModelConfig)
/// for OpenAI embeddings without the configuration they need.
IndexConfig index_config(const ServeConfig::StoreIndex& index) {
  IndexConfig out;
  out.dims = index.dims;
  out.fields = index.fields;
  if (index.embed == "hashed") {
    out.embeddings = std::make_shared<HashedNgramEmbeddings>(index.dims);
  } else {  // "openai:MODEL"
    out.embeddings = std::make_shared<OpenAIEmbeddings>(OpenAIConfig::from_env(),
                                                        index.embed.substr(7), index.dims);
  }
  return out;
}

void serve(const std::string& program, const ServeArgs& args,
           const std::optional<ServeConfig>& config, const RegisterGraphs& register_graphs) {
  // Before any thread starts (RocksDB's, the server's): a stop signal then reaches sigwait.
  const sigset_t stop_signals = block_stop_signals();
  raise_open_file_limit();
  start_logging({parse_log_level(args.log_level), parse_log_format(args.log_format)});
  struct StopLogging {
    ~StopLogging() { stop_logging(); }
  } stop_logging_at_exit;
  ServerOptions options;
  options.slow_request =
      std::chrono::milliseconds(static_cast<std::int64_t>(args.slow_request * 1000));
  options.host = args.host;
  options.port = args.port;
  options.threads = args.threads;
  options.max_runs = args.max_runs;
  options.sync_node_workers = args.sync_workers;
  options.shutdown_grace =
      std::chrono::milliseconds(static_cast<std::int64_t>(args.shutdown_grace * 1000));
  options.allow_public_without_key = args.allow_public;
  if (config && config->cors) options.cors = *config->cors;
  if (!args.cors_origins.empty()) options.cors.allow_origins = args.cors_origins;
  if (config && config->public_paths) options.public_paths = *config->public_paths;
  if (config && config->thread_ttl) options.thread_ttl = *config->thread_ttl;
  if (config && !config->auth_library.empty()) {
    options.auth = load_auth_library(config->auth_library);
  }
  const TtlConfig store_ttl = config && config->store_ttl ? config->store_ttl->ttl : TtlConfig{};
  const std::optional<IndexConfig> store_index =
      config && config->store_index ? std::optional(index_config(*config->store_index))
                                    : std::nullopt;
  options.api_key = api_key_from_environment();
  if (args.metrics_public) options.public_paths.emplace_back("/metrics");
  options.tracing = otlp_options_from_environment();
  std::string where = "in memory";
  const bool postgres =
      args.db.rfind("postgresql://", 0) == 0 || args.db.rfind("postgres://", 0) == 0;
  if (!args.in_memory && postgres) {
#if !SG_WITH_POSTGRES
    throw Error(errc::kInvalidArgument,
                "--db: a PostgreSQL URL needs PostgreSQL, and stategraph was built without it "
                "(SG_WITH_POSTGRES=OFF); give a directory for RocksDB");
#else
    // Tables sg_checkpoints, sg_store and sg_records, and the run queue (sg_run, sg_run_event)
    // that every server process on the database shares.
    options.checkpointer = PostgresSaver::open(args.db);
    options.store = PostgresStore::open(args.db, {}, store_ttl, store_index);
    options.records = PostgresStore::open(args.db, {.table = "sg_records"});
    options.cluster.conninfo = args.db;
    options.cluster.lease = std::chrono::milliseconds(
        std::max<std::int64_t>(1, static_cast<std::int64_t>(args.lease_seconds * 1000)));
    where = "in PostgreSQL";  // not the URL: it may hold a password
#endif
  } else if (!args.in_memory) {
    std::filesystem::create_directories(args.db);
    const std::filesystem::path root(args.db);
    options.checkpointer = RocksDbSaver::open((root / "checkpoints").string());
    options.store =
        RocksDbStore::open((root / "store").string(), {.ttl = store_ttl, .index = store_index});
    options.records = RocksDbStore::open((root / "records").string());
    where = "in " + args.db;
  } else {
    options.checkpointer = std::make_shared<InMemorySaver>();
    options.store = std::make_shared<InMemoryStore>(store_ttl, store_index);
  }
  if (config && config->store_ttl) {
    // Expired items are never read; the sweep reclaims their space.
    std::static_pointer_cast<KvStore>(options.store)
        ->start_sweeper(config->store_ttl->sweep_interval);
  }
  // --mcp wins over stategraph.json's mcpServers, as options given win over the file.
  const nlohmann::json mcp = !args.mcp.empty() ? read_mcp_config_file(args.mcp)
                                               : (config ? config->mcp : nlohmann::json());
  if (!mcp.is_null()) {
    options.mcp_tools = load_mcp_tools(mcp);
    std::vector<std::string> names;
    for (const Tool& tool : options.mcp_tools) names.push_back(tool.name());
    log(LogLevel::info, "mcp tools", {{"tools", names}});
  }
  GraphRegistry builtins;
  if (register_graphs) register_graphs(builtins, options);
  Server server(options);
  const std::vector<std::string> served = add_graphs(server, config, args.graphs, builtins);
  server.start();
  std::cout << fmt::format("{}: {} (graphs: {}; data {}){}\n", program, server.url(),
                           fmt::join(served, ", "), where,
                           options.api_key.empty() ? "" : "; x-api-key required")
            << std::flush;
  notify_systemd("READY=1");
  int signal = 0;
  sigwait(&stop_signals, &signal);
  std::cout << program << ": stopping\n" << std::flush;
  notify_systemd("STOPPING=1");
  server.stop();
}

/// "stategraph serve" for the CLI's subcommand, the program's name for serve_main's app.
std::string command_path(const CLI::App& command) {
  std::string path = command.get_name();
  for (const CLI::App* parent = command.get_parent(); parent != nullptr;
       parent = parent->get_parent()) {
    path = parent->get_name() + " " + path;
  }
  return path;
}

/// `text` on one line (a CLI11 message may span several).
std::string one_line(std::string text) {
  std::replace_if(
      text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r' || c == '\t'; }, ' ');
  return text;
}

}  // namespace

void add_serve_options(CLI::App& command, std::function<void()>& action,
                       RegisterGraphs register_graphs) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* cmd = &command;
  cmd->add_option("--config", args->config,
                  "A stategraph.json: the graphs to serve (graph libraries, built-ins), env, "
                  "http (cors, public_paths), auth (a handler library); docs/deploy.md")
      ->envname("STATEGRAPH_CONFIG")
      ->check(CLI::ExistingFile);
  cmd->add_option("--mcp", args->mcp,
                  "An mcpServers JSON file (the shape MCP clients share; stategraph.json's "
                  "mcpServers otherwise): the served agents get those MCP servers' tools")
      ->envname("STATEGRAPH_MCP")
      ->check(CLI::ExistingFile);
  cmd->add_option("--host", args->host,
                  "Address to bind (a non-loopback one needs "
                  "STATEGRAPH_API_KEY or --allow-public)")
      ->envname("STATEGRAPH_HOST")
      ->capture_default_str();
  cmd->add_option("--port", args->port, "Port (0 picks a free one; else $PORT)")
      ->envname("STATEGRAPH_PORT")
      ->capture_default_str();
  cmd->add_option("--db", args->db,
                  "Data directory (checkpoints/, store/ and records/ RocksDB databases), or a "
                  "PostgreSQL URL (postgresql://...; tables sg_checkpoints, sg_store, sg_records; "
                  "else $DATABASE_URI)")
      ->envname("STATEGRAPH_DB")
      ->capture_default_str();
  cmd->add_flag("--in-memory", args->in_memory, "Keep everything in memory (lost at exit)")
      ->envname("STATEGRAPH_IN_MEMORY");
  cmd->add_option("--graph", args->graphs,
                  "Serve only these graphs (repeatable, or comma-separated): ids of the "
                  "configuration's graphs, or of the built-in ones")
      ->delimiter(',')
      ->envname("STATEGRAPH_GRAPHS");
  cmd->add_option(
         "--threads", args->threads,
         "Threads serving connections (a run executes on the thread of the request that starts it)")
      ->envname("STATEGRAPH_THREADS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--max-runs", args->max_runs,
                  "Runs executing at once (the rest wait, pending); a run waiting on a model "
                  "holds no thread")
      ->envname("STATEGRAPH_MAX_RUNS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--sync-workers", args->sync_workers,
                  "Threads that run the plain (synchronous) nodes of all runs")
      ->envname("STATEGRAPH_SYNC_WORKERS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--allow-public", args->allow_public,
                "Bind a non-loopback address without an API key")
      ->envname("STATEGRAPH_ALLOW_PUBLIC");
  cmd->add_option("--cors-allow-origin", args->cors_origins,
                  "Browser origins allowed to call the server (repeatable, or comma-separated; "
                  "'*' for any). Default: pages on this machine (localhost, 127.0.0.1, [::1])")
      ->delimiter(',')
      ->envname("STATEGRAPH_CORS_ALLOW_ORIGINS");
  cmd->add_option("--run-lease", args->lease_seconds,
                  "With PostgreSQL: seconds a worker holds a run without renewing it before "
                  "another server process takes it over")
      ->envname("STATEGRAPH_RUN_LEASE")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--shutdown-grace", args->shutdown_grace,
                  "Seconds a SIGTERM lets executing runs finish (new ones get 503) before the "
                  "rest are cancelled: interrupted with their checkpoints kept, or, on "
                  "PostgreSQL, put back for another process")
      ->envname("STATEGRAPH_SHUTDOWN_GRACE")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--log-level", args->log_level,
                  "Log messages at this level and above to stderr: trace, debug, info (every "
                  "request and run), warn, error or off")
      ->envname("STATEGRAPH_LOG_LEVEL")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "warning", "error", "off"},
                            CLI::ignore_case))
      ->capture_default_str();
  cmd->add_option("--log-format", args->log_format,
                  "text, or json: one object per line with the keys ts, level, msg and the "
                  "message's fields")
      ->envname("STATEGRAPH_LOG_FORMAT")
      ->check(CLI::IsMember({"text", "json"}, CLI::ignore_case))
      ->capture_default_str();
  cmd->add_option("--slow-request", args->slow_request,
                  "Seconds after which an answered request is logged as slow (warn)")
      ->envname("STATEGRAPH_SLOW_REQUEST")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--metrics-public", args->metrics_public,
                "Serve GET /metrics without the API key and authentication (for a scraper that "
                "cannot send them; keep the port private)")
      ->envname("STATEGRAPH_METRICS_PUBLIC");
  cmd->footer(
      "\nEnvironment: STATEGRAPH_API_KEY, when set, is required as the x-api-key header of "
      "every request but the public paths (GET /ok and /info); STATEGRAPH_API_KEY_FILE names a "
      "file holding it instead (its first line). Each option has a variable too: "
      "--max-runs is STATEGRAPH_MAX_RUNS, and so on; options given win. Traces go to an "
      "OpenTelemetry collector when OTEL_EXPORTER_OTLP_ENDPOINT (or "
      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, with the other OTEL_* variables.\nEndpoints: "
      "docs/server.md. Serving your own graphs: docs/deploy.md.");

  cmd->callback([&action, args, cmd, register_graphs = std::move(register_graphs)] {
    action = [args, cmd, register_graphs] {
      std::optional<ServeConfig> config;
      if (!args->config.empty()) {
        config = read_serve_config(args->config);
        apply_env(config->env);  // before anything reads the environment
        // The options the command line and the environment left unset, from the variables the
        // file's env set.
        for (CLI::Option* option : cmd->get_options()) {
          const std::string variable = option->get_envname();
          if (option->count() != 0 || variable.empty()) continue;
          if (const char* value = std::getenv(variable.c_str()); value != nullptr && *value) {
            option->add_result(value);
            option->run_callback();
          }
        }
      }
      // As in LangGraph deployments: PORT and DATABASE_URI when no option or STATEGRAPH_*
      // variable sets them.
      if (cmd->count("--port") == 0) {
        if (const char* port = std::getenv("PORT"); port != nullptr && *port != '\0') {
          if (!CLI::detail::lexical_cast(std::string(port), args->port)) {
            throw Error(errc::kInvalidArgument,
                        fmt::format("PORT: '{}' is not a port number", port));
          }
        }
      }
      if (cmd->count("--db") == 0) {
        if (const char* uri = std::getenv("DATABASE_URI"); uri != nullptr && *uri != '\0') {
          args->db = uri;
        }
      }
      serve(command_path(*cmd), *args, config, register_graphs);
    };
  });
}

int serve_main(int argc, char** argv, RegisterGraphs register_graphs) {
  const std::string program =
      argc > 0 ? std::filesystem::path(argv[0]).filename().string() : "server";
  CLI::App app{
      "Serves this program's graphs over the LangGraph Server API (the official SDKs and UIs "
      "work against it) until Ctrl-C or SIGTERM; threads, runs and the store persist in RocksDB "
      "or PostgreSQL",
      program};
  app.set_version_flag("--version", program + " (stategraph " + std::string(kVersion) + ")");
  std::function<void()> action;
  add_serve_options(app, action, std::move(register_graphs));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    std::cerr << program << ": " << one_line(e.what()) << " (see --help)\n";
    return 2;
  }
  try {
    if (action) action();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << program << ": " << one_line(e.what()) << '\n';
  }
  return 1;
}

}  // namespace sg
