// SPDX-License-Identifier: MIT
#include "request_log.hpp"

#include <stategraph/core/log.hpp>

#include "telemetry.hpp"

namespace sg::server {
namespace {

/// Adds the thread and run ids of a path "/threads/T/runs/R..." or "/runs/R" to `fields`.
void add_ids(nlohmann::json& fields, std::string_view path) {
  path = path.substr(0, path.find('?'));
  std::string_view previous;
  while (!path.empty()) {
    const std::size_t slash = path.find('/');
    const std::string_view segment = path.substr(0, slash);
    if (!segment.empty()) {
      if (previous == "threads" && !fields.contains("thread_id") && segment != "search" &&
          segment != "count" && segment != "prune")
        fields["thread_id"] = segment;
      if (previous == "runs" && !fields.contains("run_id") && segment != "stream" &&
          segment != "wait" && segment != "crons" && segment != "cancel")
        fields["run_id"] = segment;
      previous = segment;
    }
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
  }
}

}  // namespace

RequestLog::RequestLog(const boost::beast::http::request<boost::beast::http::string_body>& req,
                       const ApiResponse& response)
    : status_(response.status),
      streamed_(response.follow != nullptr),
      method_(req.method_string().data(), req.method_string().size()),
      target_(req.target().data(), req.target().size()) {
  for (const auto& [name, value] : response.headers) {
    if (name == "Content-Location") location_ = value;
  }
}

void RequestLog::finish(std::chrono::steady_clock::time_point began, std::chrono::milliseconds slow,
                        ServerTelemetry& telemetry) const {
  const auto took = std::chrono::steady_clock::now() - began;
  const std::string_view route = route_of(target_);
  telemetry.request(method_, route, status_, took);
  const bool is_slow = !streamed_ && took >= slow;
  const LogLevel level = is_slow ? LogLevel::warn : LogLevel::info;
  if (!log_enabled(level)) return;
  nlohmann::json fields = {
      {"method", method_},
      {"route", route},
      {"path", target_.substr(0, target_.find('?'))},
      {"status", status_},
      {"duration_ms",
       std::chrono::duration_cast<std::chrono::microseconds>(took).count() / 1000.0}};
  add_ids(fields, target_);
  if (!location_.empty()) add_ids(fields, location_);
  log(level, is_slow ? "slow request" : "request", fields);
}

}  // namespace sg::server
