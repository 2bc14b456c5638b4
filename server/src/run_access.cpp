// Runs of the LangGraph Server API, as clients read and steer them: list, get, join (the result,
// or the events as SSE, resumed from Last-Event-ID for a resumable run), cancel and delete. The
// lifecycle of runs (create, execute, finish) is runs.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>

#include "api.hpp"
#include "cluster.hpp"
#include "runs_state.hpp"

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

ApiResponse RunManager::ended_run_follow(const json& thread, RunFollow::Kind kind) const {
  if (kind != RunFollow::Kind::result) return ended_stream();
  json values = api_.thread_view(thread).value("values", json::object());
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
  if (cluster_) return cluster_->list(thread_id, request);
  (void)threads_.require(thread_id);
  const auto [limit, offset, status] = run_list_query(request);
  std::map<std::string, json> by_id;
  for (auto& hit : run_records(thread_id)) {
    by_id[hit.item.key] = std::move(hit.item.value);
  }
  {
    std::lock_guard lock(state_->mu);
    if (const auto it = state_->queues.find(thread_id); it != state_->queues.end()) {
      for (const auto& run : it->second) by_id[run->run_id] = run->record;
    }
  }
  std::vector<json> runs;
  for (auto& [id, run] : by_id) {
    if (status.empty() || run.value("status", std::string()) == status)
      runs.push_back(std::move(run));
  }
  std::stable_sort(runs.begin(), runs.end(), [](const json& a, const json& b) {
    return a.value("created_at", std::string()) > b.value("created_at", std::string());
  });
  json out = json::array();
  for (std::int64_t i = offset; i < static_cast<std::int64_t>(runs.size()) && i < offset + limit;
       ++i) {
    out.push_back(std::move(runs[static_cast<std::size_t>(i)]));
  }
  return json_response(out);
}

ApiResponse RunManager::get(const std::string& thread_id, const std::string& run_id) const {
  if (cluster_) return cluster_->get(thread_id, run_id);
  (void)threads_.require(thread_id);
  {
    std::lock_guard lock(state_->mu);
    if (const auto it = state_->active.find(run_id);
        it != state_->active.end() && it->second->thread_id == thread_id) {
      return json_response(it->second->record);
    }
  }
  auto item = records_->get(runs_namespace(thread_id), run_id);
  if (!item) throw ApiError{404, fmt::format("run '{}' not found", run_id)};
  return json_response(item->value);
}

ApiResponse RunManager::join(const std::string& thread_id, const std::string& run_id,
                             const ApiRequest& request, RunFollow::Kind kind) const {
  if (cluster_) return cluster_->join(thread_id, run_id, request, kind);
  const json thread = threads_.require(thread_id);
  const std::optional<std::size_t> resume_from = resume_position(request, kind);
  std::shared_ptr<Run> run;             // the run, while it is active
  std::shared_ptr<RunChannel> channel;  // its events: of the active run, or of an ended
  bool replayable = false;              // resumable one a stream resumes from an event id
  {
    std::lock_guard lock(state_->mu);
    if (const auto it = state_->active.find(run_id);
        it != state_->active.end() && it->second->thread_id == thread_id) {
      run = it->second;
      channel = run->channel;
      replayable = run->resumable;
    } else if (resume_from) {
      if (const auto ended = state_->ended_resumable.find(run_id);
          ended != state_->ended_resumable.end()) {
        channel = ended->second;
        replayable = true;
      }
    }
  }
  if (!channel) {
    if (!records_->get(runs_namespace(thread_id), run_id)) {
      throw ApiError{404, fmt::format("run '{}' not found", run_id)};
    }
    return ended_run_follow(thread, kind);
  }
  // Replayed from the client's last event on, or the events published after joining.
  ApiResponse response = join_response(request, kind, channel, run != nullptr,
                                       replayable ? resume_from : std::nullopt);
  if (run && query_flag(request, "cancel_on_disconnect")) {
    std::weak_ptr<Run> weak = run;
    response.follow->on_disconnect = [weak] {
      if (auto r = weak.lock()) r->token.cancel();
    };
  }
  return response;
}

ApiResponse RunManager::join_thread(const std::string& thread_id, const ApiRequest& request) const {
  if (cluster_) return cluster_->join_thread(thread_id, request);
  (void)threads_.require(thread_id);
  std::string run_id;
  {
    std::lock_guard lock(state_->mu);
    if (const auto it = state_->queues.find(thread_id);
        it != state_->queues.end() && !it->second.empty()) {
      run_id = it->second.front()->run_id;
    }
  }
  if (run_id.empty()) return ended_stream();
  return join(thread_id, run_id, request, RunFollow::Kind::stream);
}

ApiResponse RunManager::cancel(const std::string& thread_id, const std::string& run_id,
                               const ApiRequest& request) {
  if (cluster_) return cluster_->cancel(thread_id, run_id, request);
  (void)threads_.require(thread_id);
  const std::string action = cancel_action(request);
  std::shared_ptr<Run> run;
  bool pending = false;
  {
    std::lock_guard lock(state_->mu);
    const auto it = state_->active.find(run_id);
    if (it != state_->active.end() && it->second->thread_id == thread_id) {
      run = it->second;
      run->cancel_action = action;
      pending = !run->running;
      if (!pending) run->token.cancel();
    }
  }
  if (!run) {
    if (!records_->get(runs_namespace(thread_id), run_id)) {
      throw ApiError{404, fmt::format("run '{}' not found", run_id)};
    }
    throw ApiError{409, fmt::format("run '{}' has already ended", run_id)};
  }
  if (pending) finish(run, action == "rollback" ? "" : "interrupted", json::object());
  ApiResponse response;
  if (query_flag(request, "wait")) {
    response.follow = std::make_shared<RunFollow>();
    response.follow->kind = RunFollow::Kind::done;
    response.follow->channel = run->channel;
    return response;
  }
  response.status = 202;
  response.content_type.clear();
  return response;
}

ApiResponse RunManager::cancel_many(const ApiRequest& request) {
  if (cluster_) return cluster_->cancel_many(request);
  const json body = body_object(request);
  std::string action = "interrupt";
  if (const auto it = request.query.find("action"); it != request.query.end()) action = it->second;
  const std::string thread_id = string_field(body, "thread_id");
  const std::vector<std::string> run_ids = string_list_field(body, "run_ids", "run ids");
  const std::string status = string_field(body, "status");
  std::vector<std::pair<std::string, std::string>> targets;
  {
    std::lock_guard lock(state_->mu);
    for (const auto& [id, run] : state_->active) {
      if (!thread_id.empty() && run->thread_id != thread_id) continue;
      if (!run_ids.empty() && std::find(run_ids.begin(), run_ids.end(), id) == run_ids.end()) {
        continue;
      }
      if (!status.empty() && status != "all" &&
          status != (run->running ? std::string("running") : std::string("pending"))) {
        continue;
      }
      targets.emplace_back(run->thread_id, id);
    }
  }
  ApiRequest cancel_request;
  cancel_request.query.emplace("action", action);
  for (const auto& [thread, id] : targets) {
    try {
      (void)cancel(thread, id, cancel_request);
    } catch (const ApiError&) {
      // Ended meanwhile.
    }
  }
  return no_content();
}

ApiResponse RunManager::remove(const std::string& thread_id, const std::string& run_id) {
  if (cluster_) return cluster_->remove(thread_id, run_id);
  (void)threads_.require(thread_id);
  {
    std::lock_guard lock(state_->mu);
    if (const auto it = state_->active.find(run_id);
        it != state_->active.end() && it->second->thread_id == thread_id) {
      throw ApiError{409, fmt::format("run '{}' is {}: cancel it first", run_id,
                                      it->second->running ? "running" : "pending")};
    }
  }
  if (!records_->get(runs_namespace(thread_id), run_id)) {
    throw ApiError{404, fmt::format("run '{}' not found", run_id)};
  }
  records_->remove(runs_namespace(thread_id), run_id);
  return no_content();
}

void RunManager::remove_thread(const std::string& thread_id) {
  if (cluster_) {
    cluster_->remove_thread(thread_id);
    return;
  }
  {
    std::lock_guard lock(state_->mu);
    if (const auto it = state_->queues.find(thread_id);
        it != state_->queues.end() && !it->second.empty()) {
      throw ApiError{409,
                     fmt::format("thread '{}' has a run in progress: cancel it first", thread_id)};
    }
  }
  remove_run_records(thread_id);
}

}  // namespace sg::server
