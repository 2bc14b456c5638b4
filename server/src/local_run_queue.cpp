// SPDX-License-Identifier: MIT
// The run queue of one server process (local_run_queue.hpp): one active run per thread, later
// runs queued (enqueue) or refused (reject), or the active ones cancelled first (interrupt,
// rollback). Run records live in the record store under ("stategraph", "runs", thread_id):
// written when a run is created and when it ends (the in-memory record is the truth while it is
// active). A small marker under ("stategraph", "active_runs") names each unfinished run, so that
// start-up finds the runs a crash left behind without reading every record.
#include "local_run_queue.hpp"

#include <stategraph/core/time.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace sg::server {

using nlohmann::json;

LocalRunQueue::LocalRunQueue(Host host) : RunQueue(std::move(host)) {
  Store& records = host_.records;
  for (const auto& marker : all_records(records, active_runs_namespace())) {
    const std::string thread_id = marker.item.value.value("thread_id", std::string());
    if (auto item = records.get(runs_namespace(thread_id), marker.item.key)) {
      json& run = item->value;
      if (!run_ended(run.value("status", std::string()))) {
        run["status"] = "error";
        run["updated_at"] = iso_timestamp_now();
        records.put(runs_namespace(thread_id), marker.item.key, run);
      }
    }
    host_.threads.set_status(thread_id, "idle");
    records.remove(active_runs_namespace(), marker.item.key);
  }
}

LocalRunQueue::~LocalRunQueue() {
  stop();
}

void LocalRunQueue::save(const Run& run) {
  std::lock_guard lock(run.mu);
  host_.records.put(runs_namespace(run.thread_id), run.run_id, run.record);
}

std::vector<SearchItem> LocalRunQueue::run_records(const std::string& thread_id) const {
  return all_records(host_.records, runs_namespace(thread_id));
}

void LocalRunQueue::remove_run_records(const std::string& thread_id) {
  for (const auto& hit : run_records(thread_id)) {
    host_.records.remove(runs_namespace(thread_id), hit.item.key);
  }
}

void LocalRunQueue::create(const std::shared_ptr<Run>& run, const std::string& strategy) {
  // The record and the marker are written before the run is queued, outside the queue's lock
  // (nothing can end the run before), and taken back when it is refused (rare: under the lock).
  save(*run);
  host_.records.put(active_runs_namespace(), run->run_id, {{"thread_id", run->thread_id}});
  auto refuse = [&](ApiError error) {
    host_.records.remove(active_runs_namespace(), run->run_id);
    host_.records.remove(runs_namespace(run->thread_id), run->run_id);
    return error;
  };
  std::vector<std::shared_ptr<Run>> dropped;  // pending runs cancelled by this one
  {
    std::lock_guard lock(mu_);
    if (stopping_) throw refuse(ApiError{503, "the server is stopping"});
    auto& queue = queues_[run->thread_id];
    if (!queue.empty()) {
      if (strategy == "reject") {
        throw refuse(ApiError{409, fmt::format("thread '{}' is busy with run '{}' "
                                               "(multitask_strategy reject)",
                                               run->thread_id, queue.front()->run_id)});
      }
      if (strategy == "interrupt" || strategy == "rollback") {
        for (auto it = queue.begin(); it != queue.end();) {
          (*it)->cancel(strategy, (*it)->running);
          if ((*it)->running) {
            ++it;
          } else {
            dropped.push_back(*it);
            it = queue.erase(it);
          }
        }
      }
    }
    queue.push_back(run);
    active_[run->run_id] = run;
    host_.threads.set_status(run->thread_id, "busy", run->thread_metadata);
    if (queue.size() == 1) make_startable_locked(run);
  }
  for (const auto& pending : dropped) {
    finish(pending, pending->cancelled_with() == "rollback" ? "" : "interrupted", json::object());
  }
  start_claimable();
}

void LocalRunQueue::make_startable_locked(const std::shared_ptr<Run>& run) {
  if (run->start_at > std::chrono::steady_clock::now()) {
    delayed_.emplace(run->start_at, run);
    if (!timer_.joinable()) timer_ = std::thread([this] { start_delayed(); });
    delayed_changed_.notify_all();
    return;
  }
  ready_.push_back(run);
}

bool LocalRunQueue::next_of_thread_locked(const std::shared_ptr<Run>& run) const {
  if (run->running || !active_.contains(run->run_id)) return false;
  const auto queue = queues_.find(run->thread_id);
  return queue != queues_.end() && !queue->second.empty() && queue->second.front() == run;
}

std::shared_ptr<Run> LocalRunQueue::claim() {
  std::lock_guard lock(mu_);
  while (!stopping_ && !ready_.empty()) {
    std::shared_ptr<Run> run = ready_.front().lock();
    if (!run || !next_of_thread_locked(run)) {
      ready_.pop_front();
      continue;
    }
    if (!host_.slots.take()) return nullptr;
    ready_.pop_front();
    run->running = true;  // from now on cancelling it goes through its token
    return run;
  }
  return nullptr;
}

void LocalRunQueue::start_delayed() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (delayed_.empty()) {
      delayed_changed_.wait(lock);
      continue;
    }
    const auto due = delayed_.begin()->first;
    if (std::chrono::steady_clock::now() < due) {
      delayed_changed_.wait_until(lock, due);
      continue;
    }
    const std::shared_ptr<Run> run = delayed_.begin()->second.lock();
    delayed_.erase(delayed_.begin());
    if (run && next_of_thread_locked(run)) {
      ready_.push_back(run);
      lock.unlock();
      start_claimable();
      lock.lock();
    }
  }
}

void LocalRunQueue::finish(const std::shared_ptr<Run>& run, std::string_view status,
                           const json& result) {
  RunSlots::Finishing finishing;  // shutdown waits until this call is over
  // The final record is stored while the run is still active (readers see its in-memory record
  // until then), outside the queue's lock.
  if (status.empty()) {
    host_.records.remove(runs_namespace(run->thread_id), run->run_id);
  } else {
    {
      std::lock_guard run_lock(run->mu);
      run->record["status"] = status;
      run->record["updated_at"] = iso_timestamp_now();
    }
    save(*run);
  }
  bool was_running = false;
  bool delete_thread = false;
  bool stopping = false;
  {
    std::lock_guard lock(mu_);
    stopping = stopping_;
    was_running = run->running;
    run->running = false;
    if (was_running) finishing = host_.slots.release();
    auto queue_it = queues_.find(run->thread_id);
    if (queue_it != queues_.end()) {
      auto& queue = queue_it->second;
      const bool was_front = !queue.empty() && queue.front() == run;
      queue.erase(std::remove(queue.begin(), queue.end(), run), queue.end());
      // The next run may start when this one held the thread (running, or waiting for its
      // after_seconds at the front).
      if (!queue.empty() && (was_running || was_front) && !stopping_ && !queue.front()->running) {
        make_startable_locked(queue.front());
      }
    }
    active_.erase(run->run_id);
    if (run->resumable) host_.ended.keep(*run);
    const bool idle = queue_it == queues_.end() || queue_it->second.empty();
    if (idle) {
      if (queue_it != queues_.end()) queues_.erase(queue_it);
      if (run->delete_thread_after) {
        delete_thread = true;
      } else {
        host_.threads.set_status(run->thread_id,
                                 thread_status_after(status, run->token.cancelled()));
      }
    }
  }
  host_.records.remove(active_runs_namespace(), run->run_id);
  if (delete_thread) {
    if (run->graph->graph->checkpointer()) {
      try {
        run->graph->graph->delete_thread(run->thread_id);
      } catch (const std::exception&) {
        // A temporary thread left behind costs space only.
      }
    }
    remove_run_records(run->thread_id);
    host_.threads.remove_record(run->thread_id);
  }
  if (stopping && status == "interrupted" && run->cancelled_with().empty()) {
    // Cancelled because the server stops: its streams say the run ended, so that a client does
    // not wait to reconnect to a server that is going away.
    run->channel->publish("", "end", nullptr);
  }
  run->channel->finish(result);
  if (was_running) host_.webhook(*run, status, result);
  start_claimable();
}

ApiResponse LocalRunQueue::list(const std::string& thread_id, const ApiRequest& request) {
  const auto [limit, offset, status] = run_list_query(request);
  std::map<std::string, json> by_id;
  for (auto& hit : run_records(thread_id)) {
    by_id[hit.item.key] = std::move(hit.item.value);
  }
  {
    std::lock_guard lock(mu_);
    if (const auto it = queues_.find(thread_id); it != queues_.end()) {
      for (const auto& run : it->second) by_id[run->run_id] = run->record_now();
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

ApiResponse LocalRunQueue::get(const std::string& thread_id, const std::string& run_id) {
  {
    std::lock_guard lock(mu_);
    if (const auto it = active_.find(run_id);
        it != active_.end() && it->second->thread_id == thread_id) {
      return json_response(it->second->record_now());
    }
  }
  auto item = host_.records.get(runs_namespace(thread_id), run_id);
  if (!item) throw ApiError{404, fmt::format("run '{}' not found", run_id)};
  return json_response(item->value);
}

ApiResponse LocalRunQueue::join(const std::string& thread_id, const std::string& run_id,
                                const ApiRequest& request, RunFollow::Kind kind) {
  const std::optional<std::size_t> resume_from = resume_position(request, kind);
  std::shared_ptr<Run> run;             // the run, while it is active
  std::shared_ptr<RunChannel> channel;  // its events: of the active run, or of an ended
  bool replayable = false;              // resumable one a stream resumes from an event id
  {
    std::lock_guard lock(mu_);
    if (const auto it = active_.find(run_id);
        it != active_.end() && it->second->thread_id == thread_id) {
      run = it->second;
      channel = run->channel;
      replayable = run->resumable;
    }
  }
  if (!channel && resume_from) {
    channel = host_.ended.find(run_id);
    replayable = channel != nullptr;
  }
  if (!channel) {
    if (!host_.records.get(runs_namespace(thread_id), run_id)) {
      throw ApiError{404, fmt::format("run '{}' not found", run_id)};
    }
    return ended_run_follow(host_.api, host_.threads.require(thread_id), kind);
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

std::string LocalRunQueue::active_run(const std::string& thread_id) {
  std::lock_guard lock(mu_);
  const auto it = queues_.find(thread_id);
  return it == queues_.end() || it->second.empty() ? std::string() : it->second.front()->run_id;
}

std::vector<std::pair<std::string, std::string>> LocalRunQueue::active_runs(
    const std::string& thread_id, const std::string& status) {
  std::vector<std::pair<std::string, std::string>> out;
  std::lock_guard lock(mu_);
  for (const auto& [id, run] : active_) {
    if (!thread_id.empty() && run->thread_id != thread_id) continue;
    if (!status.empty() && status != (run->running ? "running" : "pending")) continue;
    out.emplace_back(run->thread_id, id);
  }
  return out;
}

std::shared_ptr<RunChannel> LocalRunQueue::cancel(const std::string& thread_id,
                                                  const std::string& run_id,
                                                  const std::string& action, bool /*wait*/) {
  std::shared_ptr<Run> run;
  bool pending = false;
  {
    std::lock_guard lock(mu_);
    const auto it = active_.find(run_id);
    if (it != active_.end() && it->second->thread_id == thread_id) {
      run = it->second;
      pending = !run->running;
      run->cancel(action, !pending);
    }
  }
  if (!run) {
    if (!host_.records.get(runs_namespace(thread_id), run_id)) {
      throw ApiError{404, fmt::format("run '{}' not found", run_id)};
    }
    throw ApiError{409, fmt::format("run '{}' has already ended", run_id)};
  }
  if (pending) finish(run, action == "rollback" ? "" : "interrupted", json::object());
  return run->channel;
}

void LocalRunQueue::remove(const std::string& thread_id, const std::string& run_id) {
  {
    std::lock_guard lock(mu_);
    if (const auto it = active_.find(run_id);
        it != active_.end() && it->second->thread_id == thread_id) {
      throw ApiError{409, fmt::format("run '{}' is {}: cancel it first", run_id,
                                      it->second->running ? "running" : "pending")};
    }
  }
  if (!host_.records.get(runs_namespace(thread_id), run_id)) {
    throw ApiError{404, fmt::format("run '{}' not found", run_id)};
  }
  host_.records.remove(runs_namespace(thread_id), run_id);
}

RunQueue::Counts LocalRunQueue::counts() {
  std::lock_guard lock(mu_);
  Counts out;
  for (const auto& [id, run] : active_) ++(run->running ? out.running : out.pending);
  return out;
}

bool LocalRunQueue::busy(const std::string& thread_id) {
  std::lock_guard lock(mu_);
  const auto it = queues_.find(thread_id);
  return it != queues_.end() && !it->second.empty();
}

void LocalRunQueue::remove_thread(const std::string& thread_id) {
  if (busy(thread_id)) {
    throw ApiError{409,
                   fmt::format("thread '{}' has a run in progress: cancel it first", thread_id)};
  }
  remove_run_records(thread_id);
}

void LocalRunQueue::close() {
  std::lock_guard lock(mu_);
  stopping_ = true;  // create() answers 503; a run that ends starts no pending one
}

void LocalRunQueue::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (auto& [id, run] : active_) run->token.cancel();
  }
  delayed_changed_.notify_all();
  if (timer_.joinable()) timer_.join();
}

}  // namespace sg::server
