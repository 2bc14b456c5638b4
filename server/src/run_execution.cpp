// SPDX-License-Identifier: MIT
// Executing runs: a run the queue lets start (a slot of max_runs taken) becomes a coroutine on the
// runs' executor, awaits its graph's arun, and concludes: a rolled-back run's checkpoints go, and
// the queue records its end and starts the next runs (docs/architecture.md, "The server's run
// path"); its webhook is sent.
// clang-format off
#include <utility>  // before Boost.Asio's awaitable headers (Boost 1.74 omits it)
// clang-format on

#include <stategraph/core/error.hpp>
#include <stategraph/core/log.hpp>
#include <stategraph/core/time.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/strand.hpp>

#include <algorithm>

#include "api.hpp"
#include "run_events.hpp"
#include "run_queue.hpp"
#include "telemetry.hpp"
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

void RunManager::launch(std::shared_ptr<Run> run) {
  boost::asio::co_spawn(
      boost::asio::make_strand(runtime_->pick()), execute(std::move(run)),
      [](const std::exception_ptr& e) {
        if (e) std::rethrow_exception(e);  // execute() catches what a run throws: a bug, as a crash
      });
}

void RunManager::send_webhook(const Run& run, std::string_view status, const json& result) {
  if (run.webhook.empty()) return;
  // As the official servers: the Run, its end and the thread's final values.
  json payload = run.record_now();
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
    std::lock_guard lock(run->mu);
    run->record["status"] = "running";
    run->started_at = iso_timestamp_now();
    run->record["updated_at"] = run->started_at;
  }
  run->began = std::chrono::steady_clock::now();
  if (log_enabled(LogLevel::debug)) {
    log(LogLevel::debug, "run started",
        {{"run_id", run->run_id},
         {"thread_id", run->thread_id},
         {"graph_id", run->graph->graph_id},
         {"attempt", run->attempt}});
  }
  const ServedGraph& graph = *run->graph->graph;
  const auto saver = graph.checkpointer();
  // A cluster's saver and queue are in PostgreSQL: their synchronous work around the run goes
  // to the pool, so that it holds no thread of the runs' executor.
  ThreadPool* const blocking = blocking_pool();
  // The thread's head before the run, for a rollback: read now only for a run that starts from a
  // checkpoint it names (conclude() finds any other's as the parent of its first checkpoint).
  std::optional<std::optional<std::string>> head_before;
  std::string status = "success";
  json result;
  EventFormatter format(run->modes, run->graph->graph_id, run->run_id, *run->channel);
  try {
    if (saver && !run->config.thread_id.empty() && !run->config.checkpoint_id.empty()) {
      const auto head = [&] {
        return std::optional(saver->latest_checkpoint_id(run->thread_id, ""));
      };
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
    served.config.plain_node_pool = runtime_->plain_nodes;
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
                          std::optional<std::optional<std::string>> head_before) {
  const ServedGraph& graph = *run->graph->graph;
  const auto saver = graph.checkpointer();
  const std::string action = run->cancelled_with();
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
      if (saver && !head_before) {
        ListOptions mine;
        mine.thread_id = run->thread_id;
        mine.checkpoint_ns = "";
        mine.filter = {{"run_id", run->run_id}};
        mine.include_values = false;
        const auto written = saver->list(mine);  // newest first
        if (!written.empty()) {
          const auto& parent = written.back().parent_config;
          head_before = parent ? std::optional(parent->checkpoint_id) : std::nullopt;
        }  // else the run wrote nothing: the head is as it was
      }
      if (saver && head_before) {
        const auto head = saver->latest_checkpoint_id(run->thread_id, "");
        if (!*head_before) {
          saver->delete_thread(run->thread_id);
        } else if (head != *head_before) {
          RunConfig at;
          at.thread_id = run->thread_id;
          at.checkpoint_id = **head_before;
          (void)graph.update_state(at, json(), "__copy__");
        }
      }
    } catch (const std::exception& e) {
      status = "error";
      result = {{"__error__", {{"error", error_name(e)}, {"message", e.what()}}}};
    }
    if (status != "error") status.clear();  // deleted
  }
  log_run_end(*run, status, action, result);
  api_.telemetry().run_ended(run->graph->graph_id, status,
                             std::chrono::steady_clock::now() - run->began);
  queue_->finish(run, status, result);
}

void RunManager::log_run_end(const Run& run, std::string_view status, std::string_view action,
                             const json& result) const {
  const bool failed = status == "error";
  if (!log_enabled(failed ? LogLevel::error : LogLevel::info)) return;
  json fields = {{"run_id", run.run_id},
                 {"thread_id", run.thread_id},
                 {"graph_id", run.graph->graph_id},
                 {"status", status.empty() ? std::string_view("deleted") : status},
                 {"duration_ms", std::chrono::duration_cast<std::chrono::microseconds>(
                                     std::chrono::steady_clock::now() - run.began)
                                         .count() /
                                     1000.0}};
  std::string_view message = "run ended";
  if (failed) {
    message = "run failed";
    if (const auto error = result.find("__error__"); error != result.end()) {
      fields["error"] = error->value("message", std::string());
      fields["error_type"] = error->value("error", std::string());
    }
  } else if (!action.empty()) {
    message = "run cancelled";
    fields["action"] = action;
  } else if (status == "interrupted") {
    message = "run interrupted";
  }
  log(failed ? LogLevel::error : LogLevel::info, message, fields);
}

}  // namespace sg::server
