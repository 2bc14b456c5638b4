// SPDX-License-Identifier: MIT
#pragma once
// stategraph's HTTP server: compiled graphs served over the LangGraph Server API, the API the
// official SDKs (`@langchain/langgraph-sdk`, `langgraph-sdk`) speak
// (docs/server.md).
//
//   sg::Server server({.port = 2024});
//   server.add_graph("agent", sg::served_graph(app));
//   server.start();                       // serves on background threads until stop()
//
// Built on Boost.Beast over Boost.Asio: an idle connection costs no thread. Binds 127.0.0.1 by
// default; with an API key every request needs a matching `x-api-key` header.
//
// What is served: docs/server.md.

#include <stategraph/core/checkpointer.hpp>
#include <stategraph/models/tool.hpp>
#include <stategraph/server/served_graph.hpp>
#include <stategraph/store/store.hpp>
#include <stategraph/telemetry/otlp.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sg {

/// Settings of a Server.
/// Runs of many server processes on one PostgreSQL database (ServerOptions::cluster): one queue
/// of runs in the database (tables sg_run and sg_run_event), claimed by any process with a free
/// worker; one running run per thread across all of them (docs/scale-out.md).
struct ClusterOptions {
  /// The libpq connection string of the database; empty: runs stay in this process.
  std::string conninfo{};
  /// A running run's lease: a worker that has not renewed it for this long (dead, paused, cut
  /// off) loses the run, which another process continues from its last checkpoint.
  std::chrono::milliseconds lease{std::chrono::seconds(10)};
  /// Attempts of a run before the sweeper marks it failed.
  int max_attempts = 3;
  /// How long the stream events of an ended run stay in sg_run_event (for a stream in another
  /// process still reading them); also how often they are cleaned up.
  std::chrono::milliseconds event_retention{std::chrono::seconds(60)};
};

/// Which web pages may call the server from a browser (CORS). A browser request whose Origin is
/// neither allowed nor the server's own gets 403, so that no page elsewhere can drive a server on
/// this machine; clients that send no Origin (the SDKs outside a browser, curl) are not affected.
struct CorsOptions {
  /// Allowed origins, as a browser sends them ("http://localhost:3000"); "*" allows any. Empty:
  /// every loopback origin (http or https on localhost, 127.0.0.1 or [::1], any port), so a UI
  /// served on this machine works.
  std::vector<std::string> allow_origins{};
  /// An ECMAScript regular expression an origin may match instead ("https://.*\\.example\\.com");
  /// empty: none.
  std::string allow_origin_regex{};
  /// Request headers a page may send; empty: whichever headers a preflight asks for.
  std::vector<std::string> allow_headers{};
  /// Response headers a page may read.
  std::vector<std::string> expose_headers{"content-location", "x-pagination-total",
                                          "x-pagination-next"};
  /// Lets pages send cookies and HTTP authentication (Access-Control-Allow-Credentials).
  bool allow_credentials = false;
  /// How long a browser may keep a preflight's answer.
  std::chrono::seconds max_age{600};
};

/// How long threads live (LangGraph's checkpointer TTL). A thread that nothing changed for its
/// TTL (no run, no update: its `updated_at`) is deleted with its checkpoints and crons, or pruned
/// to the newest checkpoint of each namespace, by a sweep every `sweep_interval`; a thread with a
/// run in progress waits for the next sweep. A thread's own `ttl` (POST /threads,
/// PATCH /threads/{id}) wins over `default_ttl`.
struct ThreadTtlOptions {
  /// The TTL of threads that give none; none: they never expire.
  std::optional<std::chrono::milliseconds> default_ttl{};
  /// What expiry does to the threads that give no strategy of their own.
  PruneStrategy strategy = PruneStrategy::delete_all;
  /// How often the sweep looks for expired threads.
  std::chrono::milliseconds sweep_interval{std::chrono::minutes(5)};
};

class Auth;

struct ServerOptions {
  /// The address to bind. Anything but a loopback address needs `api_key`, an `auth` that
  /// authenticates, or `allow_public_without_key`.
  std::string host = "127.0.0.1";
  /// The port; 0 picks a free one (see Server::port()).
  std::uint16_t port = 2024;
  /// When not empty, a request without this `x-api-key` header gets 401.
  std::string api_key{};
  /// Bind a non-loopback address without an API key.
  bool allow_public_without_key = false;
  /// Custom authentication and authorization (stategraph/server/auth.hpp); null: none. When it
  /// authenticates, every request but those to `public_paths` must pass its handler (and the
  /// API key first, when there is one), and its authorization handlers decide what each user
  /// may do.
  std::shared_ptr<const Auth> auth{};
  /// Paths answered without the API key and authentication (exact, without the query): health
  /// and readiness probes.
  std::vector<std::string> public_paths{"/ok", "/info"};
  /// Browser pages on other origins (CORS).
  CorsOptions cors{};
  /// Larger request bodies get 413.
  std::size_t max_body_bytes = 1U << 20U;
  /// Larger request headers get 431.
  std::size_t max_header_bytes = 16U << 10U;
  /// Connections past this many get 503 and are closed.
  std::size_t max_connections = 10000;
  /// A connection that sends nothing for this long is closed.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(60)};
  /// Requests answered in this long or longer are logged as slow (sg::log, warn); streamed
  /// responses, which last as long as their run, apart. Every request is logged at info.
  std::chrono::milliseconds slow_request{std::chrono::seconds(1)};
  /// Sends every run's spans to an OpenTelemetry collector (OTLP/HTTP); none: no traces.
  /// `stategraph serve` takes it from the OTEL_* variables (otlp_options_from_environment).
  std::optional<OtlpOptions> tracing{};
  /// More callbacks every run reports to, after the server's own (metrics, the studio's
  /// timeline, tracing).
  CallbackList callbacks{};
  /// Threads serving the connections, each with its own io_context: a connection stays on one
  /// thread, and so do the runs its requests start.
  int threads = 1;
  /// Runs executing at once; the runs past it wait in order (pending). Runs execute as
  /// coroutines (ServedGraph::arun): one that waits on a coroutine node (a model, a tool, a
  /// timer) holds no thread.
  std::size_t max_runs = 10000;
  /// Threads that run the plain (synchronous) nodes of every run (RunConfig::plain_node_pool),
  /// and the blocking database work of a cluster's runs.
  std::size_t sync_node_workers = 8;
  /// How long stop() lets executing runs go on before it cancels them. Meanwhile no run starts
  /// and new runs are refused (503); a cancelled run ends `interrupted` with its checkpoints
  /// kept, or, with a cluster, goes back to the queue for another process.
  std::chrono::milliseconds shutdown_grace{0};
  /// Threads' time to live.
  ThreadTtlOptions thread_ttl{};
  /// Where graphs given as a StateGraph keep their threads' checkpoints; null: an InMemorySaver.
  std::shared_ptr<Checkpointer> checkpointer{};
  /// The long-term memory of the /store endpoints and of graphs given as a StateGraph; null: an
  /// InMemoryStore.
  std::shared_ptr<Store> store{};
  /// Tools for the served agents: those of the MCP servers that stategraph.json's mcpServers or
  /// `--mcp` name, connected by serve_main before it registers the graphs (a program's
  /// RegisterGraphs gives them to its agents; `stategraph serve`'s react_agent adds them to its
  /// own). The server itself does not call them.
  std::vector<Tool> mcp_tools{};
  /// Where the server keeps its records of threads and runs; null: an InMemoryStore. A
  /// RocksDbStore keeps them across restarts (with a RocksDbSaver as the checkpointer).
  std::shared_ptr<Store> records{};
  /// Share the runs with other server processes through PostgreSQL (ClusterOptions::conninfo
  /// set). Then `records`, `checkpointer` and `store` should be Postgres ones on the same
  /// database (PostgresSaver fences a worker that lost its run).
  ClusterOptions cluster{};
};

/// The HTTP server. add_graph() before start(); start() and stop() from one thread; port() and
/// url() from any thread once started.
class Server {
 public:
  /// Throws sg::Error (errc::kInvalidArgument) for options that cannot work (no threads, a zero
  /// limit).
  explicit Server(ServerOptions options = {});
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  /// Stops the server.
  ~Server();

  /// Serves `graph` as `graph_id`, with a system assistant whose id is uuid5(LangGraph's graph
  /// namespace, graph_id). Throws sg::Error (errc::kInvalidArgument) for an empty or repeated id,
  /// a null graph, or when the server runs.
  void add_graph(const std::string& graph_id, std::shared_ptr<const ServedGraph> graph);

  /// Binds and serves on background threads. Throws sg::Error (errc::kInvalidArgument) when the
  /// address is not loopback and there is no API key (unless allowed), or when binding fails.
  void start();

  /// Stops accepting, closes the connections and joins the threads. Idempotent.
  void stop();

  /// The bound port (after start()).
  [[nodiscard]] std::uint16_t port() const;

  /// "http://HOST:PORT" (after start()).
  [[nodiscard]] std::string url() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The system assistant id of a graph: uuid5 with LangGraph's graph namespace
/// (6ba7b821-9dad-11d1-80b4-00c04fd430c8), as the official servers make it ("agent" ->
/// fe096781-5601-53d2-b2f6-0d3403f7e9ca). Thread-safe.
[[nodiscard]] std::string system_assistant_id(const std::string& graph_id);

}  // namespace sg
