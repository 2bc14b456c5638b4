// Executing runs: a run that may start becomes a coroutine on the runs' executor (at most
// max_runs at once; the others wait in order in `ready`, and runs with after_seconds on the timer
// thread), awaits its graph's arun, and finishes: its record, its thread's status, the next run of
// its thread, its webhook (docs/architecture.md, "The server's run path").
#include <stategraph/core/error.hpp>
#include <stategraph/core/time.hpp>

#include <boost/asio/co_spawn.hpp>

#include <algorithm>

#include "api.hpp"
#include "cluster.hpp"
#include "run_events.hpp"
#include "runs_state.hpp"
#include "webhook.hpp"

// g++ 12 wrongly reports awaitable frames freed by the frame's own operator delete as mismatched
// (GCC bug 109224).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace sg::server {

namespace {

using nlohmann::json;

/// The name of an error as the API reports it (`{"error": name, "message": ...}`).
std::string error_name(const std::exception& e) {
  if (dynamic_cast<const GraphRecursionError*>(&e) != nullptr) return "GraphRecursionError";
  if (dynamic_cast<const NodeTimeoutError*>(&e) != nullptr) return "NodeTimeoutError";
  if (dynamic_cast<const InvalidUpdateError*>(&e) != nullptr) return "InvalidUpdateError";
  if (dynamic_cast<const CancelledError*>(&e) != nullptr) return "CancelledError";
  if (dynamic_cast<const CheckpointError*>(&e) != nullptr) return "CheckpointError";
  if (dynamic_cast<const NodeError*>(&e) != nullptr) return "NodeError";
  if (const auto* error = dynamic_cast<const Error*>(&e)) {
    return error->code() == errc::kInvalidArgument ? "ValueError" : "Error";
  }
  return "Error";
}

}  // namespace

bool RunManager::begin_locked(const std::shared_ptr<Run>& run) {
  if (run->start_at > std::chrono::steady_clock::now()) {
    state_->delayed.emplace(run->start_at, run);
    if (!state_->timer.joinable()) state_->timer = std::thread([this] { start_delayed(); });
    state_->delayed_changed.notify_all();
    return false;
  }
  return admit_locked(run);
}

bool RunManager::admit_locked(const std::shared_ptr<Run>& run) {
  if (state_->executing >= state_->max_runs) {
    state_->ready.push_back(run);
    return false;
  }
  run->running = true;  // from now on cancelling it goes through its token
  ++state_->executing;
  return true;
}

bool RunManager::next_of_thread_locked(const std::shared_ptr<Run>& run) const {
  if (run->running || !state_->active.contains(run->run_id)) return false;
  const auto queue = state_->queues.find(run->thread_id);
  return queue != state_->queues.end() && !queue->second.empty() && queue->second.front() == run;
}

std::vector<std::shared_ptr<RunManager::Run>> RunManager::take_ready_locked() {
  std::vector<std::shared_ptr<Run>> out;
  while (!state_->stopping && state_->executing < state_->max_runs && !state_->ready.empty()) {
    const std::shared_ptr<Run> run = state_->ready.front().lock();
    state_->ready.pop_front();
    if (run && next_of_thread_locked(run) && admit_locked(run)) out.push_back(run);
  }
  return out;
}

void RunManager::launch(std::shared_ptr<Run> run) {
  boost::asio::co_spawn(state_->executor, execute(std::move(run)), [](const std::exception_ptr& e) {
    if (e) std::rethrow_exception(e);  // execute() catches what a run throws: a bug, as a crash
  });
}

void RunManager::start_delayed() {
  std::unique_lock lock(state_->mu);
  while (!state_->stopping) {
    if (state_->delayed.empty()) {
      state_->delayed_changed.wait(lock);
      continue;
    }
    const auto due = state_->delayed.begin()->first;
    if (std::chrono::steady_clock::now() < due) {
      state_->delayed_changed.wait_until(lock, due);
      continue;
    }
    const std::shared_ptr<Run> run = state_->delayed.begin()->second.lock();
    state_->delayed.erase(state_->delayed.begin());
    if (run && next_of_thread_locked(run) && admit_locked(run)) launch(run);
  }
}

void RunManager::send_webhook(const Run& run, std::string_view status, const json& result) {
  if (run.webhook.empty()) return;
  // As the official servers: the Run, its end and the thread's final values.
  json payload = run.record;
  payload["status"] = status.empty() ? std::string_view("interrupted") : status;
  payload["run_started_at"] = run.started_at;
  payload["run_ended_at"] = iso_timestamp_now();
  payload["webhook_sent_at"] = payload["run_ended_at"];
  if (const auto error = result.find("__error__"); error != result.end()) {
    payload["error"] = error->value("message", std::string());
  } else if (result.is_object() && !status.empty()) {
    payload["values"] = result;
  }
  webhooks_->send(run.webhook, payload.dump());
}

boost::asio::awaitable<void> RunManager::execute(std::shared_ptr<Run> run) {
  {
    std::lock_guard lock(state_->mu);
    run->record["status"] = "running";
    run->started_at = iso_timestamp_now();
    run->record["updated_at"] = run->started_at;
  }
  const ServedGraph& graph = *run->graph->graph;
  const auto saver = graph.checkpointer();
  // A cluster's saver and queue are in PostgreSQL: their synchronous work around the run goes
  // to the pool, so that it holds no thread of the runs' executor.
  ThreadPool* const blocking = cluster_ ? state_->plain_nodes.get() : nullptr;
  std::optional<std::string> head_before;
  std::string status = "success";
  json result;
  EventFormatter format(run->modes, run->graph->graph_id, run->run_id, *run->channel);
  try {
    if (saver && !run->config.thread_id.empty()) {
      const auto head = [&] { return saver->latest_checkpoint_id(run->thread_id, ""); };
      if (blocking) {
        head_before = co_await on_pool(*blocking, head);
      } else {
        head_before = head();
      }
    }
    format.start(run->input.is_null() ? run->command : run->input);
    ServedRun served{run->input,
                     run->command,
                     run->config,
                     engine_modes(run->modes),
                     [&format](ServedEvent&& e) { format(std::move(e)); },
                     [channel = run->channel.get()] { return channel->wanted(); }};
    served.config.plain_node_pool = state_->plain_nodes;
    ServedRunResult outcome = co_await graph.arun(std::move(served));
    if (outcome.interrupted) {
      status = "interrupted";
      result = format.interrupted(outcome.interrupts);
    } else {
      result = std::move(outcome.values);
      add_langchain_defaults(result);
    }
    format.end(result);
  } catch (const std::exception& e) {
    if (run->token.cancelled() && dynamic_cast<const CancelledError*>(&e) != nullptr) {
      status = "interrupted";
    } else {
      status = "error";
      const json error = {{"error", error_name(e)}, {"message", e.what()}};
      run->channel->publish("", "error", error);
      result = {{"__error__", error}};
    }
  }
  if (blocking) {
    co_await on_pool(*blocking, [&] { conclude(run, status, std::move(result), head_before); });
  } else {
    conclude(run, status, std::move(result), head_before);
  }
}

void RunManager::conclude(const std::shared_ptr<Run>& run, std::string status, json result,
                          const std::optional<std::string>& head_before) {
  const ServedGraph& graph = *run->graph->graph;
  const auto saver = graph.checkpointer();
  std::string action;
  {
    std::lock_guard lock(state_->mu);
    action = run->cancel_action;
  }
  if (status == "interrupted" && result.is_null() && saver && action != "rollback") {
    try {  // a cancelled run's result: the state it stopped at (informative only)
      if (auto state = graph.state(run->config)) result = std::move(state->values);
    } catch (const std::exception&) {
    }
  }
  if (action == "rollback") {
    // The Platform deletes a rolled-back run and its checkpoints: the thread's head goes back
    // to what it was before the run (as a fork of that checkpoint), or to no checkpoint at all.
    try {
      if (saver) {
        const auto head = saver->latest_checkpoint_id(run->thread_id, "");
        if (!head_before) {
          saver->delete_thread(run->thread_id);
        } else if (head != head_before) {
          RunConfig at;
          at.thread_id = run->thread_id;
          at.checkpoint_id = *head_before;
          (void)graph.update_state(at, json(), "__copy__");
        }
      }
    } catch (const std::exception& e) {
      status = "error";
      result = {{"__error__", {{"error", error_name(e)}, {"message", e.what()}}}};
    }
    if (status != "error") status.clear();  // deleted
  }
  finish(run, status, result);
}

void RunManager::finish(const std::shared_ptr<Run>& run, std::string_view status,
                        const json& result) {
  if (cluster_) {
    cluster_->finish(run, status, result);
    return;
  }
  std::shared_ptr<Run> next;
  std::vector<std::shared_ptr<Run>> ready;
  bool was_running = false;
  bool delete_thread = false;
  {
    std::lock_guard lock(state_->mu);
    was_running = run->running;
    run->running = false;
    if (was_running) {  // its slot is free; shutdown waits until this call is over (finishing)
      --state_->executing;
      ++state_->finishing;
    }
    auto queue_it = state_->queues.find(run->thread_id);
    if (queue_it != state_->queues.end()) {
      auto& queue = queue_it->second;
      const bool was_front = !queue.empty() && queue.front() == run;
      queue.erase(std::remove(queue.begin(), queue.end(), run), queue.end());
      // The next run starts when this one held the thread (running, or waiting for its
      // after_seconds at the front).
      if (!queue.empty() && (was_running || was_front) && !state_->stopping &&
          !queue.front()->running && begin_locked(queue.front())) {
        next = queue.front();
      }
    }
    state_->active.erase(run->run_id);
    records_->remove(active_runs_namespace(), run->run_id);
    if (run->resumable) keep_ended_resumable(*run);
    if (status.empty()) {
      records_->remove(runs_namespace(run->thread_id), run->run_id);
    } else {
      run->record["status"] = status;
      run->record["updated_at"] = iso_timestamp_now();
      save(*run);
    }
    ready = take_ready_locked();
    const bool idle = queue_it == state_->queues.end() || queue_it->second.empty();
    if (idle) {
      if (queue_it != state_->queues.end()) state_->queues.erase(queue_it);
      if (run->delete_thread_after) {
        delete_thread = true;
      } else {
        const bool graph_interrupt = status == "interrupted" && !run->token.cancelled();
        threads_.set_status(run->thread_id, status == "error" ? "error"
                                            : graph_interrupt ? "interrupted"
                                                              : "idle");
      }
    }
  }
  if (delete_thread) {
    if (run->graph->graph->checkpointer()) {
      try {
        run->graph->graph->delete_thread(run->thread_id);
      } catch (const std::exception&) {
        // A temporary thread left behind costs space only.
      }
    }
    remove_run_records(run->thread_id);
    threads_.remove_record(run->thread_id);
  }
  run->channel->finish(result);
  if (was_running) send_webhook(*run, status, result);
  if (next) launch(next);
  for (auto& r : ready) launch(std::move(r));
  if (was_running) {
    std::lock_guard lock(state_->mu);
    --state_->finishing;
    state_->drained.notify_all();
  }
}

}  // namespace sg::server
