// SPDX-License-Identifier: MIT
// The studio's static files (server/studio/, embedded in the binary at build time by
// cmake/embed_files.cmake) served under /studio. The page talks only to the public API.
#include <algorithm>
#include <span>

#include "api.hpp"

namespace sg::server {
namespace detail {
std::span<const std::pair<std::string_view, std::string_view>> embedded_files();
}  // namespace detail

namespace {

/// Scripts, styles and fetches from the server only; no inline script or style, no plugins, not
/// framed. Inline SVG (the graph's picture) is inserted by the page's script.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'";

std::string_view content_type_of(std::string_view name) {
  if (name.ends_with(".html")) return "text/html; charset=utf-8";
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (name.ends_with(".svg")) return "image/svg+xml";
  if (name.ends_with(".png")) return "image/png";
  return "application/octet-stream";
}

}  // namespace

std::optional<ApiResponse> studio_response(std::string_view method, std::string_view target) {
  const std::string_view path = target.substr(0, target.find_first_of("?#"));
  constexpr std::string_view kRoot = "/studio";
  if (!path.starts_with(kRoot)) return std::nullopt;
  std::string_view name = path.substr(kRoot.size());
  if (!name.empty() && name.front() != '/') return std::nullopt;  // "/studiox": not ours
  if (name.size() <= 1) name = "/index.html";
  name.remove_prefix(1);
  if (method != "GET" && method != "HEAD") {
    return error_response(405, "the studio's files are read with GET");
  }
  // Only the embedded names: nothing else on the machine is reachable from here.
  const auto files = detail::embedded_files();
  const auto file = std::find_if(files.begin(), files.end(),
                                 [&](const auto& entry) { return entry.first == name; });
  if (file == files.end()) return error_response(404, "no studio file '" + std::string(name) + "'");
  ApiResponse response;
  response.content_type = std::string(content_type_of(name));
  response.body = std::string(file->second);
  response.headers = {{"Content-Security-Policy", kContentSecurityPolicy},
                      {"X-Content-Type-Options", "nosniff"},
                      {"Referrer-Policy", "no-referrer"},
                      {"Cache-Control", "no-cache"}};
  return response;
}

}  // namespace sg::server
