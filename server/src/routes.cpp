// SPDX-License-Identifier: MIT
// The Server API's routes and the methods each answers: the Allow header of a 405, the methods
// of a CORS preflight, and the check before a request reaches its handler (api.hpp).
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "api.hpp"

namespace sg::server {

namespace {

// "{}" is any one segment. When several patterns match a path, the one with the fewest "{}"
// wins: "threads/search" is a route of its own, not a thread id.
constexpr Route kRoutes[] = {
    {"ok", "GET"},
    {"info", "GET"},
    {"metrics", "GET"},
    {"assistants", "POST"},
    {"assistants/search", "POST"},
    {"assistants/count", "POST"},
    {"assistants/{}", "GET, PATCH, DELETE"},
    {"assistants/{}/graph", "GET"},
    {"assistants/{}/schemas", "GET"},
    {"assistants/{}/subgraphs", "GET"},
    {"assistants/{}/subgraphs/{}", "GET"},
    {"assistants/{}/versions", "POST"},
    {"assistants/{}/latest", "POST"},
    {"threads", "POST"},
    {"threads/search", "POST"},
    {"threads/count", "POST"},
    {"threads/prune", "POST"},
    {"threads/{}", "GET, PATCH, DELETE"},
    {"threads/{}/copy", "POST"},
    {"threads/{}/history", "GET, POST"},
    {"threads/{}/state", "GET, POST"},
    {"threads/{}/state/checkpoint", "POST"},
    {"threads/{}/state/{}", "GET"},
    {"threads/{}/stream", "GET"},
    {"threads/{}/runs", "GET, POST"},
    {"threads/{}/runs/stream", "POST"},
    {"threads/{}/runs/wait", "POST"},
    {"threads/{}/runs/crons", "POST"},
    {"threads/{}/runs/{}", "GET, DELETE"},
    {"threads/{}/runs/{}/join", "GET"},
    {"threads/{}/runs/{}/stream", "GET"},
    {"threads/{}/runs/{}/cancel", "POST"},
    {"threads/{}/runs/{}/spans", "GET"},
    {"runs", "POST"},
    {"runs/stream", "POST"},
    {"runs/wait", "POST"},
    {"runs/cancel", "POST"},
    {"runs/crons", "POST"},
    {"runs/crons/search", "POST"},
    {"runs/crons/count", "POST"},
    {"runs/crons/{}", "PATCH, DELETE"},
    {"store/items", "GET, PUT, DELETE"},
    {"store/items/search", "POST"},
    {"store/namespaces", "POST"},
    {"mcp", "POST, DELETE"},  // GET: 405, no server-sent event stream (mcp.cpp)
};

/// How many "{}" of `pattern` it takes to match `path`, or -1 when it does not match.
int wildcards(std::string_view pattern, const std::vector<std::string>& path) {
  std::size_t i = 0;
  int count = 0;
  while (!pattern.empty()) {
    const std::size_t slash = pattern.find('/');
    const std::string_view segment = pattern.substr(0, slash);
    if (i == path.size()) return -1;
    if (segment == "{}") {
      ++count;
    } else if (segment != path[i]) {
      return -1;
    }
    ++i;
    pattern = slash == std::string_view::npos ? std::string_view() : pattern.substr(slash + 1);
  }
  return i == path.size() ? count : -1;
}

}  // namespace

std::span<const Route> routes() {
  return kRoutes;
}

namespace {

/// The route that matches `path` (of several, the one with the fewest "{}"), or null.
const Route* best_route(const std::vector<std::string>& path) {
  const Route* best = nullptr;
  int fewest = -1;
  for (const Route& route : routes()) {
    const int count = wildcards(route.pattern, path);
    if (count >= 0 && (best == nullptr || count < fewest)) {
      best = &route;
      fewest = count;
    }
  }
  return best;
}

/// "/" and the route's pattern, for each route, in storage that lives as long as the program.
const std::vector<std::string>& rooted_patterns() {
  static const std::vector<std::string> patterns = [] {
    std::vector<std::string> out;
    for (const Route& route : routes()) out.push_back("/" + std::string(route.pattern));
    return out;
  }();
  return patterns;
}

}  // namespace

std::string_view allowed_methods(const std::vector<std::string>& path) {
  const Route* best = best_route(path);
  return best == nullptr ? std::string_view() : best->methods;
}

std::string_view route_of(std::string_view target) {
  std::string_view path = target.substr(0, target.find_first_of("?#"));
  if (path == "/studio" || path.rfind("/studio/", 0) == 0) return "/studio";
  std::vector<std::string> segments;
  while (!path.empty()) {
    const std::size_t slash = path.find('/');
    if (slash != 0) segments.emplace_back(path.substr(0, slash));
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
  }
  const Route* best = best_route(segments);
  if (best == nullptr) return "unmatched";
  return rooted_patterns()[static_cast<std::size_t>(best - routes().data())];
}

bool method_allowed(std::string_view allow, std::string_view method) {
  std::size_t at = 0;
  while (at < allow.size()) {
    std::size_t end = allow.find(", ", at);
    if (end == std::string_view::npos) end = allow.size();
    if (allow.substr(at, end - at) == method) return true;
    at = end + 2;
  }
  return false;
}

}  // namespace sg::server
