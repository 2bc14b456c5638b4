// SPDX-License-Identifier: MIT
#include "cors.hpp"

#include <stategraph/core/error.hpp>

#include <fmt/format.h>

namespace sg::server {
namespace {

namespace http = boost::beast::http;

/// Whether `origin` ("http://localhost:3000") names a loopback host: localhost, 127.0.0.1 or
/// [::1], over http or https, on any port.
bool loopback_origin(std::string_view origin) {
  for (const std::string_view scheme : {"http://", "https://"}) {
    if (!origin.starts_with(scheme)) continue;
    std::string_view host = origin.substr(scheme.size());
    if (host.starts_with("[::1]")) return host.size() == 5 || host[5] == ':';
    host = host.substr(0, host.find(':'));
    return host == "localhost" || host == "127.0.0.1";
  }
  return false;
}

}  // namespace

Cors::Cors(const CorsOptions& options) : options_(options) {
  if (options_.allow_origin_regex.empty()) return;
  try {
    origin_regex_.emplace(options_.allow_origin_regex, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw Error(errc::kInvalidArgument,
                fmt::format("CORS allow_origin_regex '{}' is not a regular expression: {}",
                            options_.allow_origin_regex, e.what()));
  }
}

bool Cors::allows(std::string_view origin, std::string_view host) const {
  if (origin == fmt::format("http://{}", host) || origin == fmt::format("https://{}", host)) {
    return true;
  }
  const auto& allowed = options_.allow_origins;
  if (allowed.empty() && loopback_origin(origin)) return true;
  for (const auto& a : allowed) {
    if (a == "*" || a == origin) return true;
  }
  return origin_regex_ && std::regex_match(origin.begin(), origin.end(), *origin_regex_);
}

void Cors::add_headers(const http::request<http::string_body>& req, std::string_view origin,
                       ApiResponse& r) const {
  r.headers.emplace_back("Access-Control-Allow-Origin", std::string(origin));
  r.headers.emplace_back("Vary", "Origin");
  if (options_.allow_credentials) {
    r.headers.emplace_back("Access-Control-Allow-Credentials", "true");
  }
  const bool preflight = req.method() == http::verb::options &&
                         !header(req, http::field::access_control_request_method).empty();
  if (!preflight) {
    if (!options_.expose_headers.empty()) {
      r.headers.emplace_back("Access-Control-Expose-Headers",
                             fmt::format("{}", fmt::join(options_.expose_headers, ", ")));
    }
    return;
  }
  for (const auto& [name, value] : r.headers) {
    if (name == "Allow") {
      r.headers.emplace_back("Access-Control-Allow-Methods", value);
      break;
    }
  }
  const std::string_view asked = header(req, http::field::access_control_request_headers);
  if (!options_.allow_headers.empty()) {
    r.headers.emplace_back("Access-Control-Allow-Headers",
                           fmt::format("{}", fmt::join(options_.allow_headers, ", ")));
  } else if (!asked.empty()) {
    r.headers.emplace_back("Access-Control-Allow-Headers", std::string(asked));
  }
  r.headers.emplace_back("Access-Control-Max-Age", std::to_string(options_.max_age.count()));
  // A page on a public address calling this one on a private network (Chrome asks first).
  if (req["Access-Control-Request-Private-Network"] == "true") {
    r.headers.emplace_back("Access-Control-Allow-Private-Network", "true");
  }
}

}  // namespace sg::server
