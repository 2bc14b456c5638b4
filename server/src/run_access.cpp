// SPDX-License-Identifier: MIT
// Runs of the LangGraph Server API, as clients read and steer them: list, get, join (the result,
// or the events as SSE, resumed from Last-Event-ID for a resumable run), cancel and delete, each
// checked here and answered by the run queue; and the parts of those answers both queues share.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>

#include "api.hpp"
#include "run_queue.hpp"

namespace sg::server {

using nlohmann::json;

ApiResponse ended_stream() {
  ApiResponse response;
  response.content_type = "text/event-stream";
  response.follow = std::make_shared<RunFollow>();
  response.follow->kind = RunFollow::Kind::stream;
  response.follow->channel = std::make_shared<RunChannel>();
  response.follow->channel->finish(json::object());
  return response;
}

RunListQuery run_list_query(const ApiRequest& request) {
  RunListQuery q;
  if (const auto it = request.query.find("limit"); it != request.query.end()) {
    q.limit = std::atoll(it->second.c_str());
  }
  if (const auto it = request.query.find("offset"); it != request.query.end()) {
    q.offset = std::atoll(it->second.c_str());
  }
  if (const auto it = request.query.find("status"); it != request.query.end())
    q.status = it->second;
  if (q.limit < 1 || q.offset < 0) {
    throw ApiError{422, "'limit' must be positive, 'offset' not negative"};
  }
  return q;
}

std::string cancel_action(const ApiRequest& request) {
  std::string action = "interrupt";
  if (const auto it = request.query.find("action"); it != request.query.end()) action = it->second;
  if (action != "interrupt" && action != "rollback") {
    throw ApiError{422, fmt::format("'action' must be interrupt or rollback, got '{}'", action)};
  }
  return action;
}

ApiResponse ended_run_follow(const Api& api, const json& thread, RunFollow::Kind kind) {
  if (kind != RunFollow::Kind::result) return ended_stream();
  json values = api.thread_view(thread).value("values", json::object());
  if (!values.is_object()) values = json::object();
  return json_response(values);
}

std::optional<std::size_t> resume_position(const ApiRequest& request, RunFollow::Kind kind) {
  if (kind != RunFollow::Kind::stream || request.last_event_id.empty()) return std::nullopt;
  const std::string& id = request.last_event_id;
  std::int64_t last = 0;
  const auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), last);
  // The largest id is refused too: it has no next event (last + 1 would overflow).
  if (ec != std::errc() || end != id.data() + id.size() || last < -1 ||
      last == std::numeric_limits<std::int64_t>::max()) {
    throw ApiError{422, fmt::format("Last-Event-ID '{}' is not an event id of this server", id)};
  }
  return static_cast<std::size_t>(last + 1);
}

ApiResponse join_response(const ApiRequest& request, RunFollow::Kind kind,
                          std::shared_ptr<RunChannel> channel, bool listen,
                          std::optional<std::size_t> from) {
  auto follow = std::make_shared<RunFollow>();
  follow->kind = kind;
  ApiResponse response;
  if (kind == RunFollow::Kind::stream) {
    response.content_type = "text/event-stream";
    if (listen) follow->listening = channel->listen();
    follow->from = from ? *from : channel->published();
    for (auto it = request.query.equal_range("stream_mode"); it.first != it.second; ++it.first) {
      follow->modes.push_back(it.first->second);
    }
  }
  follow->channel = std::move(channel);
  response.follow = std::move(follow);
  return response;
}

ApiResponse RunManager::list(const std::string& thread_id, const ApiRequest& request) const {
  (void)threads_.require(thread_id);
  return queue_->list(thread_id, request);
}

ApiResponse RunManager::get(const std::string& thread_id, const std::string& run_id) const {
  (void)threads_.require(thread_id);
  return queue_->get(thread_id, run_id);
}

ApiResponse RunManager::join(const std::string& thread_id, const std::string& run_id,
                             const ApiRequest& request, RunFollow::Kind kind) const {
  (void)threads_.require(thread_id);
  return queue_->join(thread_id, run_id, request, kind);
}

ApiResponse RunManager::join_thread(const std::string& thread_id, const ApiRequest& request) const {
  (void)threads_.require(thread_id);
  const std::string run_id = queue_->active_run(thread_id);
  if (run_id.empty()) return ended_stream();
  return queue_->join(thread_id, run_id, request, RunFollow::Kind::stream);
}

ApiResponse RunManager::cancel(const std::string& thread_id, const std::string& run_id,
                               const ApiRequest& request) {
  (void)threads_.require(thread_id);
  const std::string action = cancel_action(request);
  const bool wait = query_flag(request, "wait");
  std::shared_ptr<RunChannel> channel = queue_->cancel(thread_id, run_id, action, wait);
  ApiResponse response;
  if (wait) {
    response.follow = std::make_shared<RunFollow>();
    response.follow->kind = RunFollow::Kind::done;
    response.follow->channel = std::move(channel);
    return response;
  }
  response.status = 202;
  response.content_type.clear();
  return response;
}

ApiResponse RunManager::cancel_many(const ApiRequest& request,
                                    const std::function<bool(const std::string&)>& may_cancel) {
  const json body = body_object(request);
  const std::string action = cancel_action(request);
  const std::string thread_id = string_field(body, "thread_id");
  const std::vector<std::string> run_ids = string_list_field(body, "run_ids", "run ids");
  std::string status = string_field(body, "status");
  if (status == "all") status.clear();
  for (const auto& [thread, id] : queue_->active_runs(thread_id, status)) {
    if (!run_ids.empty() && std::find(run_ids.begin(), run_ids.end(), id) == run_ids.end()) {
      continue;
    }
    if (may_cancel && !may_cancel(thread)) continue;
    try {
      (void)queue_->cancel(thread, id, action, /*wait=*/false);
    } catch (const ApiError&) {
      // Ended meanwhile.
    }
  }
  return no_content();
}

ApiResponse RunManager::remove(const std::string& thread_id, const std::string& run_id) {
  (void)threads_.require(thread_id);
  queue_->remove(thread_id, run_id);
  return no_content();
}

void RunManager::remove_thread(const std::string& thread_id) {
  queue_->remove_thread(thread_id);
}

}  // namespace sg::server
