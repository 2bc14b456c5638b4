// SPDX-License-Identifier: MIT
#pragma once
// The server's request handling, apart from the network: a parsed request in, a response out.
#include <stategraph/server/auth.hpp>
#include <stategraph/server/server.hpp>
#include <stategraph/store/store.hpp>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "webhook.hpp"

namespace sg::server {

/// A request as the handlers see it: the path split into decoded segments and the query
/// parameters (a repeated key keeps every value, in order).
struct ApiRequest {
  std::string method;
  std::vector<std::string> path;
  std::multimap<std::string, std::string> query;
  std::string body;
  std::string last_event_id;  // the Last-Event-ID header (a resumed stream); empty when absent
  std::string traceparent;    // the W3C traceparent header: a run it creates is its child
  /// The headers an MCP request is checked by (POST /mcp, mcp.cpp): Accept, Content-Type and
  /// MCP-Protocol-Version; set for /mcp only, empty when absent.
  std::string accept;
  std::string content_type;
  std::string mcp_protocol_version;
  /// Who sent it, when the server authenticates (ServerOptions::auth); null otherwise.
  std::shared_ptr<const AuthUser> user{};
};

/// What the authorization handler of a request's action decided (Api::authorize).
struct Access {
  /// The filter of the records the action may reach; null: every record.
  nlohmann::json filters;
  /// The action's fields as the handler left them; null when no handler ran.
  nlohmann::json value;
  /// Whether the filter lets the action reach a record with `metadata`.
  [[nodiscard]] bool allows(const nlohmann::json& metadata) const {
    return filters.is_null() || Auth::matches(metadata, filters);
  }
  /// The metadata the action should write: the handler's (value.metadata) when it ran, else
  /// `given`.
  [[nodiscard]] nlohmann::json metadata_or(const nlohmann::json& given) const;
};

struct RunFollow;

/// A response: status, body and content type; extra headers in order.
struct ApiResponse {
  unsigned status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  /// Set when the response follows a run (SSE, wait, join): see RunFollow.
  std::shared_ptr<RunFollow> follow;
};

/// A failed request: the status and the message of its `{"detail": ...}` body.
struct ApiError {
  unsigned status;
  std::string detail;
};

/// `{"detail": detail}` with `status`.
[[nodiscard]] ApiResponse error_response(unsigned status, std::string_view detail);

/// The studio's page and its files for a request to /studio or /studio/NAME (server/studio/,
/// embedded in the binary): 404 for a name that is not embedded, 405 for a method other than
/// GET and HEAD; nullopt when `target` is not under /studio. Needs no API key (the page asks for
/// it and sends it with its API calls). Thread-safe.
[[nodiscard]] std::optional<ApiResponse> studio_response(std::string_view method,
                                                         std::string_view target);

/// `value` as a 200 JSON response.
[[nodiscard]] ApiResponse json_response(const nlohmann::json& value, unsigned status = 200);

/// Splits `target` ("/a/b%20c?x=1&y=2") into decoded path segments and query parameters.
/// Throws ApiError 400 for a malformed percent escape.
[[nodiscard]] ApiRequest parse_target(std::string method, std::string_view target,
                                      std::string body);

/// An optional string field of a request `body`: empty when absent or null. Throws ApiError
/// 422 naming the field when it is not a string.
[[nodiscard]] std::string string_field(const nlohmann::json& body, const char* name);

/// An optional array of strings of a request `body` (empty when absent or null). Throws ApiError
/// 422 "'<name>' must be an array of <what>" otherwise.
[[nodiscard]] std::vector<std::string> string_list_field(const nlohmann::json& body,
                                                         const char* name, std::string_view what);

/// An optional string field of a request `body` that must be one of `allowed`; the first of them
/// when absent or null. Throws ApiError 422 naming the field and the choices otherwise.
[[nodiscard]] std::string one_of(const nlohmann::json& body, const char* name,
                                 std::initializer_list<const char*> allowed);

/// An optional integer field of a request `body` within [low, high]; `fallback` when absent or
/// null. Throws ApiError 422 naming the field otherwise.
[[nodiscard]] std::int64_t int_field(const nlohmann::json& body, const char* name,
                                     std::int64_t fallback, std::int64_t low, std::int64_t high);

/// Whether query parameter `name` is "1" or "true" (false when absent).
[[nodiscard]] bool query_flag(const ApiRequest& request, const char* name);

/// Interrupts as the API shows them: `[{value, id}, ...]`.
[[nodiscard]] nlohmann::json interrupts_json(const std::vector<Interrupt>& interrupts);

/// A route of the Server API: a path pattern ("threads/{}/runs/{}", where {} is any one segment)
/// and the methods it answers, as an Allow header lists them ("GET, DELETE").
struct Route {
  std::string_view pattern;
  std::string_view methods;
};
/// Every route that Api::handle answers (the studio's pages apart). Thread-safe.
[[nodiscard]] std::span<const Route> routes();
/// The methods of the route that matches `path` ("GET, PATCH, DELETE"; of several, the one with
/// the fewest {}), in storage that lives as long as the program; empty when none matches.
/// Thread-safe.
[[nodiscard]] std::string_view allowed_methods(const std::vector<std::string>& path);
/// The route a request target ("/threads/1/runs?x=y") reaches, for logs and metrics:
/// "/threads/{}/runs", "/studio" for the studio's files, "unmatched" when no route matches (never
/// the raw path: labels stay few). Thread-safe.
[[nodiscard]] std::string_view route_of(std::string_view target);
/// Whether `method` is in `allow` (a list from allowed_methods()).
[[nodiscard]] bool method_allowed(std::string_view allow, std::string_view method);

/// 404: no endpoint serves the request's method and path ("no route for GET /x").
[[nodiscard]] ApiError no_route(const ApiRequest& request);
/// 405: the request's path does not take its method.
[[nodiscard]] ApiError method_not_allowed(const ApiRequest& request);

/// The `metadata` object of a request `body` ({} when absent or null). Throws ApiError 422 when
/// it is not an object.
[[nodiscard]] nlohmann::json metadata_field(const nlohmann::json& body);

/// An object of the `names` fields of `body`, each null when absent (what an authorization
/// handler sees of a request).
[[nodiscard]] nlohmann::json body_fields(const nlohmann::json& body,
                                         std::initializer_list<const char*> names);

/// The paging and shaping of a search body: limit (1-1000, default 10), offset, sort_by (one
/// of the sortable fields, default created_at), sort_order (default desc) and select.
struct SearchPage {
  std::int64_t limit = 10;
  std::int64_t offset = 0;
  std::string sort_by;
  bool ascending = false;
  std::vector<std::string> select;
};

/// Reads the paging fields of a search `body`. Throws ApiError 422 naming a bad field.
[[nodiscard]] SearchPage search_page(const nlohmann::json& body,
                                     const std::vector<std::string>& sortable);

/// `items` sorted, paged and selected as `page` says, with the X-Pagination-Total and (when
/// more follow) X-Pagination-Next headers. `decorate`, when set, completes each item of the page
/// before the selection.
[[nodiscard]] ApiResponse paged_response(std::vector<nlohmann::json> items, const SearchPage& page,
                                         const std::function<void(nlohmann::json&)>& decorate = {});

/// Whether `object` has every key of `subset` with an equal value (LangGraph's metadata
/// containment).
[[nodiscard]] bool contains(const nlohmann::json& object, const nlohmann::json& subset);

/// The events of one run as subscribers read them: SSE streams (each from its own position) and
/// waits for the final result. The run's thread publishes; any thread polls. Thread-safe.
class RunChannel {
 public:
  /// One event: the stream mode that made it ("" for metadata, error and end: sent in every
  /// stream), the event name and its JSON data.
  struct Event {
    std::string mode;
    std::string name;
    std::string data;
  };

  /// Appends an event and wakes the waiting subscribers.
  void publish(std::string mode, std::string name, const nlohmann::json& data);
  /// Appends an event whose data is already JSON text (an event another process published).
  void publish_text(Event event);
  /// Passes every event published from now on to `sink` too (on the publishing thread), and
  /// counts as a reader (wanted()): a stream in another process reads the run.
  void forward_to(std::function<void(const Event&)> sink);
  /// Ends the run: `result` is the body of wait and join. Wakes the waiting subscribers.
  void finish(const nlohmann::json& result);
  /// Copies the events from index `from` on into `out`. When there are none and the run has not
  /// ended, `notify` is kept and called once (on the publishing thread) at the next event or the
  /// end. Returns whether the run has ended (then `*result` is its result).
  bool poll(std::size_t from, std::vector<Event>& out, std::string* result,
            std::function<void()> notify);
  /// Whether the run ended.
  [[nodiscard]] bool done();
  /// How many events were published so far (the id the next one gets).
  [[nodiscard]] std::size_t published();

  /// Registers a stream reader until the returned handle is destroyed: events are only made
  /// while someone reads them (a wait or join needs the result alone, and a join-stream reads
  /// the events published after it joined). Thread-safe.
  [[nodiscard]] std::shared_ptr<void> listen();
  /// Whether a stream reader is registered (the run's events are wanted). Thread-safe.
  [[nodiscard]] bool wanted() const noexcept { return listeners_.load() > 0 || forwarding_.load(); }

 private:
  void wake(std::unique_lock<std::mutex>& lock);

  std::mutex mu_;
  std::vector<Event> events_;
  bool done_ = false;
  std::string result_;
  std::vector<std::function<void()>> waiters_;
  std::function<void(const Event&)> sink_;
  std::atomic<int> listeners_{0};
  std::atomic<bool> forwarding_{false};
};

/// A response that follows a run: the network side writes it as the run goes.
struct RunFollow {
  enum class Kind : std::uint8_t {
    stream,  ///< SSE: the events from `from` on (of `modes`; all when empty), until the end
    result,  ///< the run's result as a JSON body once it ends (wait, join)
    done,    ///< 204 once the run ends (cancel with wait)
  };
  Kind kind = Kind::result;
  std::shared_ptr<RunChannel> channel;
  std::vector<std::string> modes;
  std::size_t from = 0;
  bool event_ids = true;
  /// Called when the client goes away before the end (cancels the run when asked to); may be
  /// empty.
  std::function<void()> on_disconnect;
  /// A stream's registration as a reader of the channel (RunChannel::listen()).
  std::shared_ptr<void> listening;
  /// When set (a result), turns the run's result (JSON text) into the response's body: the
  /// JSON-RPC response of an MCP tools/call. Called once, on the connection's thread.
  std::function<std::string(std::string result)> result_body;
};

/// The threads (records in the server's record store, a lock per thread for check-then-write). A
/// thread with a run in progress is "busy": its record is then kept in memory and written back once
/// when the run ends, since a busy status is never worth persisting (recovery after a crash resets
/// it). Thread-safe.
class ThreadRegistry {
 public:
  explicit ThreadRegistry(std::shared_ptr<Store> records);
  /// POST /threads: {metadata, thread_id, if_exists, ttl}; `access` may replace the metadata,
  /// and an existing thread it does not allow is a 409.
  [[nodiscard]] ApiResponse create(const ApiRequest& request, const Access& access = {});
  /// A new idle thread record with `metadata` (or the existing one). Throws ApiError 422 for a
  /// non-UUID id.
  nlohmann::json create_record(const std::string& thread_id, const nlohmann::json& metadata);
  /// The thread record; throws ApiError 422 (not a UUID) or 404.
  [[nodiscard]] nlohmann::json require(const std::string& thread_id) const;
  /// The thread record, or nullopt.
  [[nodiscard]] std::optional<nlohmann::json> find(const std::string& thread_id) const;
  /// PATCH /threads/{id}: metadata merged (shallow); `access` may replace the metadata given,
  /// and a thread it does not allow is a 404.
  [[nodiscard]] ApiResponse patch(const std::string& thread_id, const ApiRequest& request,
                                  const Access& access = {});
  /// The record without a cluster's busy status (cheaper than find() there), or nullopt.
  [[nodiscard]] std::optional<nlohmann::json> lookup(const std::string& thread_id) const;
  /// Sets the status (and merges `metadata` into the record's); no effect on a deleted thread.
  /// "busy" keeps the record in memory (written only when `metadata` changes it); any other
  /// status writes it back. `known`: the record as the caller just read it (lookup()), which
  /// spares a cluster's "busy" a read when `metadata` changes nothing.
  void set_status(const std::string& thread_id, std::string_view status,
                  const nlohmann::json& metadata = nullptr, const nlohmann::json* known = nullptr);
  /// Removes the record (and the thread's TTL); false when there was none.
  bool remove_record(const std::string& thread_id);
  /// Every thread's own TTL ({"ttl": minutes, "strategy": "delete" or "keep_latest"}), by
  /// thread id: set by a `ttl` of POST /threads or PATCH /threads/{id}.
  [[nodiscard]] std::map<std::string, nlohmann::json> ttls() const;
  /// The records that pass the filters of a POST /threads/search body and `access` (not paged).
  [[nodiscard]] std::vector<nlohmann::json> search(const nlohmann::json& body,
                                                   const Access& access = {}) const;
  /// Every record (for the start-up sweep).
  [[nodiscard]] std::vector<nlohmann::json> all() const;
  /// A thread's status as a cluster keeps it, outside its record: "busy" while it has an active
  /// run, else what its last run left (`updated_at` then is when it ended).
  struct SharedStatus {
    std::string status;
    std::string updated_at;  // empty for "busy"
  };
  /// Threads shared with other processes (a cluster): a thread's status comes from `status`
  /// (one thread; nullopt: the record's) and `all_statuses` (every thread that has one), not
  /// from this process's runs, and runs never write it into the record; each change of a record
  /// holds `lock(thread_id)` (the handle releases it) so that processes do not overwrite each
  /// other's changes. Call before serving.
  void share(std::function<std::optional<SharedStatus>(const std::string&)> status,
             std::function<std::map<std::string, SharedStatus>()> all_statuses,
             std::function<std::shared_ptr<void>(const std::string&)> lock);

 private:
  /// lookup(), or ApiError 422 (not a UUID) or 404.
  [[nodiscard]] nlohmann::json require_record(const std::string& thread_id) const;
  /// Sets a cluster's status on a record. Not under a lock (a cluster's query takes a
  /// connection of its pool, which a change holding its thread's lock may be waiting for).
  void show_status(nlohmann::json& thread) const;
  /// Applies `status` to `thread`.
  static void apply(const SharedStatus& status, nlohmann::json& thread);

  std::shared_ptr<Store> records_;
  mutable std::mutex mu_;  // guards busy_ alone; never held across a call of the store
  std::map<std::string, nlohmann::json, std::less<>> busy_;  // the busy threads' records
  /// One change of a thread's record at a time, by stripes of the thread id's hash: changes of
  /// different threads, each a read and a write of the store (round trips in a cluster), go on
  /// in parallel.
  mutable std::array<std::mutex, 64> change_mu_;
  /// Locks a record for a change: the cluster's lock of the thread (when shared), then its
  /// stripe of change_mu_.
  struct ChangeLock {
    ChangeLock(const ThreadRegistry& registry, const std::string& thread_id);
    std::shared_ptr<void> shared;
    std::lock_guard<std::mutex> local;
  };
  std::function<std::optional<SharedStatus>(const std::string&)> shared_status_;  // share()
  std::function<std::map<std::string, SharedStatus>()> shared_statuses_;
  std::function<std::shared_ptr<void>(const std::string&)> shared_lock_;
};

/// Where runs execute, how many at once, and the threads of their plain nodes (ServerOptions).
/// Runs waiting to start and runs executing, for the metrics.
struct RunCounts {
  std::size_t pending = 0;
  std::size_t running = 0;
};

struct RunLimits {
  std::size_t max_runs = 10000;
  std::size_t sync_workers = 8;
  /// The io_contexts runs execute on (the server's, each run by one thread): a run starts on the
  /// one of the thread that creates it. None: the RunManager runs its own, one per core.
  std::vector<boost::asio::io_context::executor_type> executors{};
};

/// A registered graph and its system assistant.
struct GraphEntry {
  std::string graph_id;
  std::shared_ptr<const ServedGraph> graph;
  nlohmann::json assistant;  // the Assistant object (§1.5)
};

/// The assistants: each served graph's system assistant (read-only) and those clients create,
/// with their versions, in the server's record store. Thread-safe.
class AssistantRegistry {
 public:
  /// `graphs` must outlive the registry.
  AssistantRegistry(const std::vector<GraphEntry>& graphs, std::shared_ptr<Store> records);

  /// An assistant and the graph it runs.
  struct Resolved {
    const GraphEntry* graph = nullptr;
    nlohmann::json assistant;
  };
  /// The assistant `id` (a UUID, or a graph id for its system assistant). Throws ApiError 404,
  /// or 409 when its graph is no longer served.
  [[nodiscard]] Resolved resolve(const std::string& id) const;
  /// POST /assistants: {graph_id, assistant_id, config, context, metadata, if_exists, name,
  /// description}. Throws ApiError 404 (unknown graph), 409 (exists) or 422.
  /// `access` (assistants:create) may replace the metadata; an existing assistant it does not
  /// allow is a 409.
  [[nodiscard]] ApiResponse create(const ApiRequest& request, const Access& access = {});
  /// PATCH /assistants/{id}: a new version with the given fields (metadata merged; `access`, of
  /// assistants:update, may replace the metadata given).
  [[nodiscard]] ApiResponse patch(const std::string& id, const ApiRequest& request,
                                  const Access& access = {});
  /// Deletes a created assistant and its versions. Throws ApiError 404 or 409 (a system
  /// assistant).
  void remove(const std::string& id);
  /// POST /assistants/search: {graph_id, name (a part, any case), metadata, paging}.
  /// Only the assistants `access` (assistants:search) allows.
  [[nodiscard]] ApiResponse search(const ApiRequest& request, const Access& access = {}) const;
  /// Every assistant `access` (assistants:search) allows, unsorted: the tools of /mcp.
  [[nodiscard]] std::vector<nlohmann::json> all(const Access& access = {}) const;
  /// POST /assistants/count: how many assistants pass the search filters and `access`.
  [[nodiscard]] ApiResponse count(const ApiRequest& request, const Access& access = {}) const;
  /// POST /assistants/{id}/versions: {limit, offset, metadata}, newest first.
  [[nodiscard]] ApiResponse versions(const std::string& id, const ApiRequest& request) const;
  /// POST /assistants/{id}/latest: {version} becomes the assistant's current configuration.
  [[nodiscard]] ApiResponse set_latest(const std::string& id, const ApiRequest& request);

 private:
  /// The served graph `graph_id`, or null.
  [[nodiscard]] const GraphEntry* served(const std::string& graph_id) const;
  /// The served graph `graph_id`; throws ApiError 404.
  [[nodiscard]] const GraphEntry& graph(const std::string& graph_id) const;
  [[nodiscard]] std::optional<nlohmann::json> created(const std::string& assistant_id) const;
  [[nodiscard]] nlohmann::json require_created(const std::string& id,
                                               std::string_view change) const;
  [[nodiscard]] std::vector<nlohmann::json> matching(const nlohmann::json& body,
                                                     const Access& access) const;
  [[nodiscard]] std::vector<nlohmann::json> all_versions(const std::string& id) const;

  const std::vector<GraphEntry>& graphs_;
  std::shared_ptr<Store> records_;
  std::mutex mu_;  // one writer at a time (check-then-write)
};

class RunManager;
class Crons;
class Periodic;
class ServerTelemetry;

/// The API over the registered graphs. Thread-safe.
class Api {
 public:
  /// `records` keeps threads and runs; `store` serves /store; runs execute within `limits`,
  /// queued in PostgreSQL for many processes when `cluster` is given.
  /// `telemetry` counts the requests and runs and gets every run's spans (null: one of its own).
  Api(std::vector<GraphEntry> graphs, std::shared_ptr<Store> records, std::shared_ptr<Store> store,
      RunLimits limits, const ClusterOptions* cluster = nullptr, ThreadTtlOptions ttl = {},
      std::shared_ptr<const Auth> auth = nullptr,
      std::shared_ptr<ServerTelemetry> telemetry = nullptr);
  ~Api();
  Api(const Api&) = delete;
  Api& operator=(const Api&) = delete;

  /// Answers `request`; never throws (errors become 4xx/5xx responses).
  [[nodiscard]] ApiResponse handle(const ApiRequest& request) const;
  /// Where handle() should run when its storage blocks on the network (a cluster's PostgreSQL):
  /// the pool of the runs' plain nodes, so that no round trip holds an io thread; null when
  /// handle() may run on the io thread. Thread-safe.
  [[nodiscard]] ThreadPool* blocking_pool() const noexcept;

  /// Lets executing runs go on for `grace` (no run starts, new ones are refused), then cancels
  /// the rest and waits for them (before the server stops).
  void shutdown(std::chrono::milliseconds grace = {});
  /// This server's address and API key, for run webhooks given as a path. Call after binding.
  void set_self(std::string base_url, std::string api_key);

  /// The assistant `id` (a UUID or a graph id) and its graph; throws ApiError 404.
  [[nodiscard]] AssistantRegistry::Resolved assistant(const std::string& id) const;
  /// The graph a thread runs on (its metadata's graph_id), or null for a thread that never ran.
  [[nodiscard]] const GraphEntry* thread_graph(const nlohmann::json& thread) const;
  /// The Thread object of a record, with `values` and `interrupts` of its latest checkpoint.
  [[nodiscard]] nlohmann::json thread_view(nlohmann::json thread) const;
  /// Runs the authorization handler of `resource`:`action` for the request's user on the value
  /// `make_value()` makes; no handler runs (and no value is made) without a user. Throws
  /// ApiError: 403 when denied, or the status of the handler's HttpException.
  template <class MakeValue>
  [[nodiscard]] Access authorize(const ApiRequest& request, std::string_view resource,
                                 std::string_view action, MakeValue&& make_value) const {
    if (!auth_ || !request.user) return {};
    return run_auth_handler(*request.user, resource, action, make_value());
  }
  /// The thread record `thread_id` when the request may do `action` on it (value
  /// {thread_id}). Throws ApiError 404 when it does not exist or the handler's filter hides it,
  /// 422 for a malformed id, or what authorize() throws.
  [[nodiscard]] nlohmann::json thread_access(const ApiRequest& request,
                                             const std::string& thread_id,
                                             std::string_view action) const;
  /// The server's metrics, traces and recent spans. Thread-safe.
  [[nodiscard]] ServerTelemetry& telemetry() const noexcept { return *telemetry_; }
  /// Whether authorization handlers run for `request` (the server authenticates its user).
  [[nodiscard]] bool authorizing(const ApiRequest& request) const noexcept {
    return auth_ && request.user;
  }

  /// Deletes, or prunes to their newest checkpoints, the threads whose TTL (their own, or
  /// ThreadTtlOptions::default_ttl) passed at `now` without a change; not those with a run in
  /// progress. Returns how many. The sweep calls it every ThreadTtlOptions::sweep_interval.
  std::size_t sweep_expired_threads(std::chrono::system_clock::time_point now) const;

 private:
  [[nodiscard]] Access run_auth_handler(const AuthUser& user, std::string_view resource,
                                        std::string_view action, nlohmann::json value) const;
  [[nodiscard]] ApiResponse route(const ApiRequest& request) const;
  [[nodiscard]] ApiResponse route_assistants(const ApiRequest& request) const;
  /// GET /assistants/{id}/graph?format=svg: the graph's picture (render_graph_picture), made once.
  [[nodiscard]] ApiResponse graph_picture(const GraphEntry& entry) const;
  [[nodiscard]] ApiResponse delete_assistant(const ApiRequest& request) const;
  [[nodiscard]] ApiResponse route_threads(const ApiRequest& request) const;
  [[nodiscard]] ApiResponse route_thread_state(const ApiRequest& request,
                                               const nlohmann::json& thread) const;
  [[nodiscard]] ApiResponse delete_thread(const std::string& thread_id) const;
  [[nodiscard]] ApiResponse copy_thread(const ApiRequest& request,
                                        const std::string& thread_id) const;
  /// POST /threads/prune {thread_ids, strategy: delete (default) or keep_latest}.
  [[nodiscard]] ApiResponse prune_threads(const ApiRequest& request) const;
  /// Prunes one thread with `strategy` (its record, checkpoints and crons go with delete_all);
  /// false when it does not exist or has a run in progress.
  bool prune_thread(const std::string& thread_id, PruneStrategy strategy) const;
  [[nodiscard]] ApiResponse route_store(const ApiRequest& request) const;
  [[nodiscard]] ApiResponse route_crons(const ApiRequest& request) const;
  /// POST and DELETE /mcp: the assistants as MCP tools over Streamable HTTP (mcp.cpp).
  [[nodiscard]] ApiResponse route_mcp(const ApiRequest& request) const;
  /// An MCP tools/call of the JSON-RPC request `id` (mcp.cpp).
  [[nodiscard]] ApiResponse call_mcp_tool(const ApiRequest& request, const nlohmann::json& id,
                                          const nlohmann::json& params) const;
  /// threads:create_run of a run create request on `thread_id` (empty: stateless).
  [[nodiscard]] Access create_run_access(const ApiRequest& request,
                                         const std::string& thread_id) const;
  /// crons:create of a cron create request on `thread_id` (empty: stateless).
  [[nodiscard]] Access cron_access(const ApiRequest& request, const std::string& thread_id) const;

  std::shared_ptr<const Auth> auth_;
  std::vector<GraphEntry> graphs_;
  std::unique_ptr<AssistantRegistry> assistants_;
  std::unique_ptr<ThreadRegistry> threads_;
  std::shared_ptr<Store> store_;
  std::shared_ptr<ServerTelemetry> telemetry_;
  std::unique_ptr<RunManager> runs_;
  std::unique_ptr<Crons> crons_;
  ThreadTtlOptions ttl_;
  std::unique_ptr<Periodic> sweeper_;  // of expired threads
  mutable std::mutex pictures_mu_;
  mutable std::map<std::string, std::string> pictures_;  // graph_id -> SVG
};

class RunQueue;
struct Run;
class RunSlots;
class EndedStreams;
struct RunRuntime;

/// Runs: requests parsed into runs, a RunQueue (this process's, or PostgreSQL's for many
/// processes) that orders them, and runs executing as coroutines (ServedGraph::arun, at most
/// RunLimits::max_runs at once). Thread-safe.
class RunManager {
 public:
  /// `cluster`: when set, runs are queued in PostgreSQL for every server process on the
  /// database (cluster.hpp); otherwise in this process. Throws PostgresError when the database
  /// cannot be reached.
  RunManager(const Api& api, ThreadRegistry& threads, std::shared_ptr<Store> records,
             RunLimits limits, const ClusterOptions* cluster = nullptr);
  ~RunManager();
  RunManager(const RunManager&) = delete;
  RunManager& operator=(const RunManager&) = delete;

  /// POST /threads/{id}/runs[/stream|/wait] (thread_id set) and POST /runs[/stream|/wait]
  /// (stateless). `kind` is how the response follows the run (nullopt: the Run object).
  /// `access`: what the thread's create_run authorization decided (the metadata, the threads
  /// the run may use); the request's user goes into the run's configurable as
  /// langgraph_auth_user, langgraph_auth_user_id and langgraph_auth_permissions.
  [[nodiscard]] ApiResponse create(const std::string& thread_id, const ApiRequest& request,
                                   std::optional<RunFollow::Kind> kind, const Access& access = {});
  /// GET /threads/{id}/runs.
  [[nodiscard]] ApiResponse list(const std::string& thread_id, const ApiRequest& request) const;
  /// GET /threads/{id}/runs/{run_id}.
  [[nodiscard]] ApiResponse get(const std::string& thread_id, const std::string& run_id) const;
  /// GET .../join and .../stream: follows a run (its result, or its events from now on).
  [[nodiscard]] ApiResponse join(const std::string& thread_id, const std::string& run_id,
                                 const ApiRequest& request, RunFollow::Kind kind) const;
  /// GET /threads/{id}/stream: the events of the thread's active run, if any.
  [[nodiscard]] ApiResponse join_thread(const std::string& thread_id,
                                        const ApiRequest& request) const;
  /// POST .../cancel?wait=&action=interrupt|rollback.
  [[nodiscard]] ApiResponse cancel(const std::string& thread_id, const std::string& run_id,
                                   const ApiRequest& request);
  /// POST /runs/cancel {thread_id, run_ids, status}?action=: the runs of the threads that
  /// `may_cancel` allows (all when empty).
  [[nodiscard]] ApiResponse cancel_many(
      const ApiRequest& request,
      const std::function<bool(const std::string& thread_id)>& may_cancel = {});
  /// DELETE /threads/{id}/runs/{run_id}.
  [[nodiscard]] ApiResponse remove(const std::string& thread_id, const std::string& run_id);
  /// Whether the thread has a pending or running run.
  [[nodiscard]] bool busy(const std::string& thread_id) const;
  /// Runs pending and running (a cluster's: on every process).
  [[nodiscard]] RunCounts counts() const;
  /// The pool for work that blocks on the queue's and savers' database (a cluster), else null.
  [[nodiscard]] ThreadPool* blocking_pool() const noexcept;
  /// Forgets a deleted thread's runs. Throws ApiError 409 while busy.
  void remove_thread(const std::string& thread_id);
  /// Lets executing runs go on for `grace` (no run starts, new ones are refused), then cancels
  /// the rest and waits for them.
  void shutdown(std::chrono::milliseconds grace = {});
  /// Whether the runs are shared with other processes (a cluster).
  [[nodiscard]] bool clustered() const noexcept { return clustered_; }
  /// RunQueue::lock_shared: a lock of `key` across the processes of a cluster; null without one.
  [[nodiscard]] std::shared_ptr<void> lock_shared(const std::string& key);
  /// The webhooks of runs (a path is sent to `base_url` with `api_key`).
  [[nodiscard]] WebhookSender& webhooks() noexcept { return *webhooks_; }

 private:
  /// A run from a create request's body (its thread resolved: created when asked to). Throws
  /// ApiError 4xx for a bad field.
  [[nodiscard]] std::shared_ptr<Run> parse(const std::string& thread_id, const nlohmann::json& body,
                                           std::optional<RunFollow::Kind> kind,
                                           const Access& access, const AuthUser* user);
  /// The response to a create: the Run object (`record`) or the run followed as `kind`.
  [[nodiscard]] static ApiResponse respond(const std::shared_ptr<Run>& run,
                                           const nlohmann::json& record,
                                           std::optional<RunFollow::Kind> kind,
                                           std::shared_ptr<void> listening);
  /// Starts execute(run) on the runs' executor (its slot taken).
  void launch(std::shared_ptr<Run> run);
  /// POSTs a run's end to its webhook (when it has one).
  void send_webhook(const Run& run, std::string_view status, const nlohmann::json& result);
  /// Runs `run` to its end (a coroutine on the runs' executor), then concludes it.
  boost::asio::awaitable<void> execute(std::shared_ptr<Run> run);
  /// After a run: a rolled-back run's checkpoints go, and the queue records its end.
  void conclude(const std::shared_ptr<Run>& run, std::string status, nlohmann::json result,
                std::optional<std::optional<std::string>> head_before);
  /// Logs a run's end: ended, interrupted, cancelled (`action`), or failed with its cause.
  void log_run_end(const Run& run, std::string_view status, std::string_view action,
                   const nlohmann::json& result) const;

  const Api& api_;
  ThreadRegistry& threads_;
  std::shared_ptr<Store> records_;
  std::unique_ptr<RunRuntime> runtime_;  // the executor and the plain nodes' pool
  std::unique_ptr<RunSlots> slots_;
  std::unique_ptr<EndedStreams> ended_;
  std::unique_ptr<WebhookSender> webhooks_ = std::make_unique<WebhookSender>();
  bool clustered_ = false;  // the queue and the savers are in PostgreSQL (blocking work)
  std::unique_ptr<RunQueue> queue_;
};

// What the server keeps in its record store (ServerOptions::records), one namespace each:
/// Thread records: ("stategraph", "threads"), key thread_id.
[[nodiscard]] const Namespace& threads_namespace();
/// A thread's run records: ("stategraph", "runs", thread_id), key run_id.
[[nodiscard]] Namespace runs_namespace(const std::string& thread_id);
/// Markers of unfinished runs: ("stategraph", "active_runs"), key run_id, value {thread_id}.
[[nodiscard]] const Namespace& active_runs_namespace();
/// Threads' own TTLs: ("stategraph", "thread_ttls"), key thread_id.
[[nodiscard]] const Namespace& thread_ttls_namespace();
/// Created assistants: ("stategraph", "assistants"), key assistant_id.
[[nodiscard]] const Namespace& assistants_namespace();
/// An assistant's versions: ("stategraph", "assistant_versions", assistant_id), key the
/// version zero-padded to 10 digits.
[[nodiscard]] Namespace assistant_versions_namespace(const std::string& assistant_id);

/// Every record under `ns` (and the namespaces below it) in `records`.
[[nodiscard]] std::vector<SearchItem> all_records(Store& records, const Namespace& ns);

/// Whether `id` is a UUID (8-4-4-4-12 hex digits).
[[nodiscard]] bool is_uuid(std::string_view id);

/// Adds the LangChain message fields a client expects and stategraph leaves out when empty
/// (additional_kwargs, response_metadata; tool_calls and invalid_tool_calls of AI messages) to
/// every message object inside `value`.
void add_langchain_defaults(nlohmann::json& value);

/// The ThreadState object of a snapshot (§1.5).
[[nodiscard]] nlohmann::json thread_state_json(ServedSnapshot snapshot);

/// The state of a thread without checkpoints.
[[nodiscard]] nlohmann::json empty_thread_state();

/// A 204 response.
[[nodiscard]] ApiResponse no_content();

/// The JSON object of a request body; throws ApiError 422 when the body is not a JSON object
/// (an empty body is an empty object).
[[nodiscard]] nlohmann::json body_object(const ApiRequest& request);

}  // namespace sg::server
