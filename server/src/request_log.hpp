// SPDX-License-Identifier: MIT
#pragma once
// What the server records of each answered request: its metrics and its log line.

#include <boost/beast/http.hpp>

#include <chrono>
#include <string>
#include <string_view>

#include "api.hpp"

namespace sg::server {

class ServerTelemetry;

/// One request: its method, route, status, duration and the thread and run it names (in its
/// path, or in the Content-Location of a run it created). Made when the response is ready,
/// finished when it has been written.
class RequestLog {
 public:
  RequestLog(const boost::beast::http::request<boost::beast::http::string_body>& req,
             const ApiResponse& response);

  /// Counts the request, answered now, in `telemetry` and logs it (sg::log): info, or warn when
  /// it took `slow` or longer and its response was not a stream (a stream lasts as long as its
  /// run). Thread-safe.
  void finish(std::chrono::steady_clock::time_point began, std::chrono::milliseconds slow,
              ServerTelemetry& telemetry) const;

 private:
  unsigned status_;
  bool streamed_;
  std::string method_{};
  std::string target_{};
  std::string location_{};
};

}  // namespace sg::server
