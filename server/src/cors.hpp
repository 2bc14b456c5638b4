// SPDX-License-Identifier: MIT
#pragma once
// Which browser pages may call the server, and the CORS headers their responses carry
// (ServerOptions::cors; docs/server.md, "Routes, methods and browsers").

#include <stategraph/server/server.hpp>

#include <boost/beast/http.hpp>

#include <optional>
#include <regex>
#include <string_view>

#include "api.hpp"

namespace sg::server {

/// A header's value, empty when absent.
[[nodiscard]] inline std::string_view header(
    const boost::beast::http::request<boost::beast::http::string_body>& req,
    boost::beast::http::field field) {
  const auto it = req.find(field);
  return it == req.end() ? std::string_view()
                         : std::string_view(it->value().data(), it->value().size());
}

/// The CORS rules of a server. Thread-safe once constructed.
class Cors {
 public:
  /// Throws sg::Error (errc::kInvalidArgument) when allow_origin_regex is not a regular
  /// expression. `options` must outlive this object.
  explicit Cors(const CorsOptions& options);

  /// Whether a browser page of `origin` may call the server: the server's own origin (`host`,
  /// the request's Host), or one the options allow (by default the pages of this machine).
  [[nodiscard]] bool allows(std::string_view origin, std::string_view host) const;

  /// Adds the CORS headers of a request from an allowed `origin` (a preflight's among them) to
  /// its response.
  void add_headers(const boost::beast::http::request<boost::beast::http::string_body>& req,
                   std::string_view origin, ApiResponse& r) const;

 private:
  const CorsOptions& options_;
  std::optional<std::regex> origin_regex_;  // allow_origin_regex, compiled
};

}  // namespace sg::server
