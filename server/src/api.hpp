#pragma once
// The server's request handling, apart from the network: a parsed request in, a response out.
#include <stategraph/server/server.hpp>
#include <stategraph/store/store.hpp>

#include <nlohmann/json.hpp>

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sg::server {

/// A request as the handlers see it: the path split into decoded segments and the query
/// parameters (a repeated key keeps every value, in order).
struct ApiRequest {
  std::string method;
  std::vector<std::string> path;
  std::multimap<std::string, std::string> query;
  std::string body;
};

/// A response: status, body and content type; extra headers in order.
struct ApiResponse {
  unsigned status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
};

/// A failed request: the status and the message of its `{"detail": ...}` body.
struct ApiError {
  unsigned status;
  std::string detail;
};

/// `{"detail": detail}` with `status`.
[[nodiscard]] ApiResponse error_response(unsigned status, std::string_view detail);

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

/// The `metadata` object of a request `body` ({} when absent or null). Throws ApiError 422 when
/// it is not an object.
[[nodiscard]] nlohmann::json metadata_field(const nlohmann::json& body);

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
/// more follow) X-Pagination-Next headers.
[[nodiscard]] ApiResponse paged_response(std::vector<nlohmann::json> items, const SearchPage& page);

/// Whether `object` has every key of `subset` with an equal value (LangGraph's metadata
/// containment).
[[nodiscard]] bool contains(const nlohmann::json& object, const nlohmann::json& subset);

/// The threads (records in the store, one lock for check-then-write). Thread-safe.
class ThreadRegistry {
 public:
  explicit ThreadRegistry(std::shared_ptr<Store> store);
  /// POST /threads: {metadata, thread_id, if_exists}.
  [[nodiscard]] ApiResponse create(const ApiRequest& request);
  /// GET /threads/{id}.
  [[nodiscard]] ApiResponse get(const std::string& thread_id) const;
  /// PATCH /threads/{id}: metadata merged (shallow).
  [[nodiscard]] ApiResponse patch(const std::string& thread_id, const ApiRequest& request);
  /// DELETE /threads/{id}: 204.
  [[nodiscard]] ApiResponse remove(const std::string& thread_id);
  /// POST /threads/search: {metadata, ids, status, limit, offset, sort_by, sort_order, select}.
  [[nodiscard]] ApiResponse search(const ApiRequest& request) const;

 private:
  [[nodiscard]] std::optional<nlohmann::json> find(const std::string& thread_id) const;
  [[nodiscard]] nlohmann::json require(const std::string& thread_id) const;

  std::shared_ptr<Store> store_;
  std::mutex mu_;
};

/// A registered graph and its system assistant.
struct GraphEntry {
  std::string graph_id;
  std::shared_ptr<const ServedGraph> graph;
  nlohmann::json assistant;  // the Assistant object (§1.5)
};

/// The API over the registered graphs. Thread-safe once built (read-only so far).
class Api {
 public:
  Api(std::vector<GraphEntry> graphs, std::shared_ptr<Store> store)
      : graphs_(std::move(graphs)), threads_(std::make_unique<ThreadRegistry>(std::move(store))) {}

  /// Answers `request`; never throws (errors become 4xx responses).
  [[nodiscard]] ApiResponse handle(const ApiRequest& request) const;

 private:
  [[nodiscard]] ApiResponse route(const ApiRequest& request) const;
  [[nodiscard]] const GraphEntry& assistant(const std::string& id) const;
  [[nodiscard]] ApiResponse search_assistants(const ApiRequest& request) const;

  [[nodiscard]] ApiResponse route_threads(const ApiRequest& request) const;

  std::vector<GraphEntry> graphs_;
  std::unique_ptr<ThreadRegistry> threads_;
};

/// The JSON object of a request body; throws ApiError 422 when the body is not a JSON object
/// (an empty body is an empty object).
[[nodiscard]] nlohmann::json body_object(const ApiRequest& request);

}  // namespace sg::server
