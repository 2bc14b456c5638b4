#pragma once
// The server's request handling, apart from the network: a parsed request in, a response out.
#include <stategraph/server/server.hpp>

#include <nlohmann/json.hpp>

#include <map>
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

/// A registered graph and its system assistant.
struct GraphEntry {
  std::string graph_id;
  std::shared_ptr<const ServedGraph> graph;
  nlohmann::json assistant;  // the Assistant object (§1.5)
};

/// The API over the registered graphs. Thread-safe once built (read-only so far).
class Api {
 public:
  explicit Api(std::vector<GraphEntry> graphs) : graphs_(std::move(graphs)) {}

  /// Answers `request`; never throws (errors become 4xx responses).
  [[nodiscard]] ApiResponse handle(const ApiRequest& request) const;

 private:
  [[nodiscard]] ApiResponse route(const ApiRequest& request) const;
  [[nodiscard]] const GraphEntry& assistant(const std::string& id) const;
  [[nodiscard]] ApiResponse search_assistants(const ApiRequest& request) const;

  std::vector<GraphEntry> graphs_;
};

/// The JSON object of a request body; throws ApiError 422 when the body is not a JSON object
/// (an empty body is an empty object).
[[nodiscard]] nlohmann::json body_object(const ApiRequest& request);

}  // namespace sg::server
