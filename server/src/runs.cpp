// SPDX-License-Identifier: MIT
// Runs of the LangGraph Server API: a create request is parsed into a run, admitted by the run
// queue (local_run_queue.cpp in this process, cluster.cpp in PostgreSQL) and answered; reading
// and steering runs goes to the queue too. Executing them is run_execution.cpp; they publish
// their events to a RunChannel that SSE streams, waits and joins read.
#include <stategraph/core/error.hpp>
#include <stategraph/core/log.hpp>
#include <stategraph/core/thread_pool.hpp>
#include <stategraph/core/time.hpp>
#include <stategraph/core/uuid.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <limits>
#include <map>

#include "api.hpp"
#include "telemetry.hpp"
#if SG_WITH_POSTGRES
#include "cluster.hpp"
#endif
#include "local_run_queue.hpp"
#include "run_events.hpp"
#include "run_queue.hpp"
#include "webhook.hpp"

namespace sg::server {

namespace {

using nlohmann::json;

std::optional<Durability> durability_field(const json& body) {
  const std::string durability = string_field(body, "durability");
  if (auto named = durability_named(durability)) return named;
  if (!durability.empty()) {
    throw ApiError{422,
                   fmt::format("'durability' must be sync, async or exit, got '{}'", durability)};
  }
  if (const auto it = body.find("checkpoint_during"); it != body.end() && it->is_boolean()) {
    return it->get<bool>() ? std::nullopt : std::optional(Durability::exit);
  }
  return std::nullopt;
}

std::vector<std::string> node_list_field(const json& body, const char* name) {
  const auto it = body.find(name);
  if (it != body.end() && it->is_string()) {
    if (*it != "*") throw ApiError{422, fmt::format("'{}' must be \"*\" or a list of nodes", name)};
    return {"*"};
  }
  return string_list_field(body, name, "node names");
}

/// The configuration of a run from a create `body` over its `assistant`'s (the run's keys win):
/// fills `config` and returns its `configurable`. Throws ApiError 422 for a bad field.
json read_config(const json& body, const json& assistant, RunConfig& config) {
  json configurable = json::object();
  bool run_recursion_limit = false;
  if (const auto it = body.find("config"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) throw ApiError{422, "'config' must be an object"};
    if (const auto c = it->find("configurable"); c != it->end() && c->is_object()) {
      configurable = *c;
    }
    if (const auto r = it->find("recursion_limit"); r != it->end() && !r->is_null()) {
      if (!r->is_number_integer() || r->get<std::int64_t>() < 1 ||
          r->get<std::int64_t>() > 1'000'000) {
        throw ApiError{422, "'config.recursion_limit' must be a positive integer"};
      }
      config.recursion_limit = r->get<int>();
      run_recursion_limit = true;
    }
  }
  // The assistant's config and context lie under the run's (the run's keys win).
  const json& assistant_config = assistant["config"];
  if (const auto c = assistant_config.find("configurable");
      c != assistant_config.end() && c->is_object()) {
    for (auto it = c->begin(); it != c->end(); ++it) {
      if (!configurable.contains(it.key())) configurable[it.key()] = *it;
    }
  }
  if (const auto r = assistant_config.find("recursion_limit");
      !run_recursion_limit && r != assistant_config.end() && r->is_number_integer() &&
      r->get<std::int64_t>() >= 1 && r->get<std::int64_t>() <= 1'000'000) {
    config.recursion_limit = r->get<int>();
  }
  if (const auto it = assistant.find("context");
      it != assistant.end() && it->is_object() && !it->empty()) {
    config.context = *it;
  }
  if (const auto it = body.find("context"); it != body.end() && it->is_object()) {
    if (config.context.is_object()) {
      config.context.update(*it);
    } else {
      config.context = *it;
    }
  }
  config.checkpoint_id = string_field(configurable, "checkpoint_id");
  if (const auto it = body.find("checkpoint"); it != body.end() && it->is_object()) {
    config.checkpoint_id = string_field(*it, "checkpoint_id");
  }
  if (std::string id = string_field(body, "checkpoint_id"); !id.empty()) config.checkpoint_id = id;
  config.interrupt_before = node_list_field(body, "interrupt_before");
  config.interrupt_after = node_list_field(body, "interrupt_after");
  if (const auto it = body.find("stream_subgraphs"); it != body.end() && it->is_boolean()) {
    config.stream_subgraphs = it->get<bool>();
  }
  config.durability = durability_field(body);
  return configurable;
}
}  // namespace

std::optional<Durability> durability_named(std::string_view name) {
  if (name == "sync") return Durability::sync;
  if (name == "async") return Durability::async;
  if (name == "exit") return Durability::exit;
  return std::nullopt;
}

std::string_view durability_name(const std::optional<Durability>& durability) {
  if (!durability) return "";
  switch (*durability) {
    case Durability::sync:
      return "sync";
    case Durability::async:
      return "async";
    case Durability::exit:
      return "exit";
  }
  return "";
}

RunManager::RunManager(const Api& api, ThreadRegistry& threads, std::shared_ptr<Store> records,
                       RunLimits limits, const ClusterOptions* cluster)
    : api_(api),
      threads_(threads),
      records_(std::move(records)),
      runtime_(std::make_unique<RunRuntime>(limits)),
      slots_(std::make_unique<RunSlots>(limits.max_runs)),
      ended_(std::make_unique<EndedStreams>()),
      clustered_(cluster != nullptr) {
  RunQueue::Host host{api_,
                      threads_,
                      *records_,
                      *slots_,
                      *ended_,
                      [this](std::shared_ptr<Run> run) { launch(std::move(run)); },
                      [this](const Run& run, std::string_view status, const json& result) {
                        send_webhook(run, status, result);
                      }};
  if (cluster != nullptr) {
#if SG_WITH_POSTGRES
    queue_ = std::make_unique<PostgresRunQueue>(std::move(host), *cluster);
#else
    throw Error(errc::kInvalidArgument,
                "ServerOptions::cluster needs PostgreSQL: stategraph was built without it "
                "(SG_WITH_POSTGRES=OFF)");
#endif
  } else {
    queue_ = std::make_unique<LocalRunQueue>(std::move(host));
  }
}

RunManager::~RunManager() {
  shutdown();
}

void RunManager::shutdown(std::chrono::milliseconds grace) {
  slots_->stop();
  queue_->close();
  if (grace.count() > 0) (void)slots_->drain_for(grace);
  queue_->stop();
  slots_->drain();
  queue_->shutdown();
}

bool RunManager::busy(const std::string& thread_id) const {
  return queue_->busy(thread_id);
}

std::shared_ptr<void> RunManager::lock_shared(const std::string& key) {
  return queue_->lock_shared(key);
}

RunCounts RunManager::counts() const {
  return queue_->counts();
}

ThreadPool* RunManager::blocking_pool() const noexcept {
  return clustered_ ? runtime_->plain_nodes.get() : nullptr;
}

ApiResponse RunManager::create(const std::string& thread_id, const ApiRequest& request,
                               std::optional<RunFollow::Kind> kind, const Access& access) {
  const std::shared_ptr<Run> run =
      parse(thread_id, body_object(request), kind, access, request.user.get());
  if (!request.traceparent.empty())
    run->config.trace_parent = TraceContext::parse(request.traceparent);
  const json record = run->record;  // as created: its execution changes it from now on
  std::shared_ptr<void> listening;
  if (kind == RunFollow::Kind::stream) listening = run->channel->listen();  // before it starts
  queue_->create(run, record["multitask_strategy"].get<std::string>());
  if (log_enabled(LogLevel::debug)) {  // its request's line says as much at info
    log(LogLevel::debug, "run created",
        {{"run_id", run->run_id},
         {"thread_id", run->thread_id},
         {"graph_id", run->graph->graph_id},
         {"assistant_id", record.value("assistant_id", json())},
         {"multitask_strategy", record["multitask_strategy"]}});
  }
  return respond(run, record, kind, std::move(listening));
}

std::shared_ptr<Run> RunManager::parse(const std::string& given_thread_id, const json& body,
                                       std::optional<RunFollow::Kind> kind, const Access& access,
                                       const AuthUser* user) {
  const std::string assistant_id = string_field(body, "assistant_id");
  if (assistant_id.empty()) throw ApiError{422, "'assistant_id' is required"};
  const AssistantRegistry::Resolved resolved = api_.assistant(assistant_id);
  const GraphEntry& graph = *resolved.graph;
  const json& assistant = resolved.assistant;
  const bool stateless = given_thread_id.empty();
  const std::string multitask =
      one_of(body, "multitask_strategy", {"reject", "interrupt", "rollback", "enqueue"});
  const std::string if_not_exists = one_of(body, "if_not_exists", {"reject", "create"});
  const std::string on_disconnect = one_of(body, "on_disconnect", {"continue", "cancel"});
  const std::string on_completion = one_of(body, "on_completion", {"delete", "keep"});

  auto run = std::make_shared<Run>();
  run->run_id = new_uuid4();
  run->stateless = stateless;
  run->graph = &graph;
  run->modes = stream_modes_field(body);
  run->cancel_on_disconnect = on_disconnect == "cancel";
  if (const auto it = body.find("stream_resumable"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) throw ApiError{422, "'stream_resumable' must be a boolean"};
    run->resumable = it->get<bool>() && !stateless;
  }
  if (run->resumable) run->keep_events = run->channel->listen();
  run->streamed = kind == RunFollow::Kind::stream;
  run->input = body.value("input", json());
  run->command = body.value("command", json());
  run->webhook = string_field(body, "webhook");
  if (!run->webhook.empty() && !valid_webhook(run->webhook)) {
    throw ApiError{422, "'webhook' must be an http:// or https:// URL or a path of this server"};
  }
  std::chrono::microseconds delay{0};  // after_seconds
  if (const auto it = body.find("after_seconds"); it != body.end() && !it->is_null()) {
    // A year at most: further is a typo, and the wait must fit a steady_clock duration.
    if (!it->is_number() || !(it->get<double>() >= 0) || it->get<double>() > 366 * 86400.0) {
      throw ApiError{422, "'after_seconds' must be a number of seconds from 0 to 31622400"};
    }
    delay = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::duration<double>(it->get<double>()));
  }
  run->start_at = std::chrono::steady_clock::now() + delay;
  if (!run->command.is_null() && !run->command.is_object()) {
    throw ApiError{422, "'command' must be an object ({resume, update, goto})"};
  }
  graph.graph->check_input(run->input, run->command);  // 422 now rather than a failed run
  const json user_metadata = access.metadata_or(metadata_field(body));
  RunConfig& config = run->config;
  json configurable = read_config(body, assistant, config);
  if (user != nullptr) {  // what the graph may trust: never the client's own values
    user->add_to_configurable(configurable);
  }
  config.cancellation = run->token;
  config.run_id = run->run_id;
  config.run_name = graph.graph_id;
  config.callbacks = api_.telemetry().run_callbacks();

  std::string thread_id = given_thread_id;
  const json graph_metadata = {{"graph_id", graph.graph_id},
                               {"assistant_id", assistant["assistant_id"]}};
  // A thread the run creates: with authorization, it also gets the run's metadata as the
  // handler left it (its owner, say).
  json new_thread_metadata = graph_metadata;
  if (!access.value.is_null()) {
    new_thread_metadata = user_metadata;
    for (auto it = graph_metadata.begin(); it != graph_metadata.end(); ++it) {
      new_thread_metadata[it.key()] = *it;
    }
  }
  const bool has_checkpointer = graph.graph->checkpointer() != nullptr;
  if (!stateless && !has_checkpointer) {
    throw ApiError{409, fmt::format("graph '{}' was compiled without a checkpointer: it serves "
                                    "stateless runs only",
                                    graph.graph_id)};
  }
  if (stateless) {
    thread_id = new_uuid4();
    run->thread_record = threads_.create_record(thread_id, new_thread_metadata);
    run->delete_thread_after = on_completion == "delete";
  } else if (auto found = threads_.lookup(thread_id)) {
    if (!access.allows((*found)["metadata"])) {
      throw ApiError{404, fmt::format("thread '{}' not found", thread_id)};
    }
    run->thread_record = *std::move(found);
  } else {
    if (!is_uuid(thread_id))
      throw ApiError{422, fmt::format("thread id '{}' is not a UUID", thread_id)};
    if (if_not_exists != "create") {
      throw ApiError{404, fmt::format("thread '{}' not found", thread_id)};
    }
    run->thread_record = threads_.create_record(thread_id, new_thread_metadata);
  }
  run->thread_id = thread_id;
  if (has_checkpointer) config.thread_id = thread_id;
  configurable["thread_id"] = thread_id;
  config.configurable = configurable;
  json metadata = user_metadata;
  for (auto it = graph_metadata.begin(); it != graph_metadata.end(); ++it) metadata[it.key()] = *it;
  config.metadata = metadata;
  config.metadata["run_id"] = run->run_id;
  config.metadata["thread_id"] = thread_id;

  const std::string now = iso_timestamp_now();
  // As the official servers: a delayed run is created when it may start.
  const std::string created_at = delay.count() > 0 ? iso_timestamp_now(delay) : now;
  run->record = {{"run_id", run->run_id},
                 {"thread_id", thread_id},
                 {"assistant_id", assistant["assistant_id"]},
                 {"metadata", metadata},
                 {"status", "pending"},
                 {"kwargs",
                  {{"input", run->input},
                   {"command", run->command},
                   {"config", {{"configurable", configurable}}},
                   {"context", config.context.is_null() ? json::object() : config.context},
                   {"stream_mode", run->modes},
                   {"interrupt_before", config.interrupt_before},
                   {"interrupt_after", config.interrupt_after},
                   {"temporary", stateless && run->delete_thread_after},
                   {"subgraphs", config.stream_subgraphs},
                   {"resumable", run->resumable},
                   {"webhook", run->webhook.empty() ? json() : json(run->webhook)}}},
                 {"multitask_strategy", multitask},
                 {"created_at", created_at},
                 {"updated_at", now}};
  run->thread_metadata = graph_metadata;
  run->channel->publish("", "metadata", {{"run_id", run->run_id}, {"attempt", 1}});
  return run;
}

ApiResponse RunManager::respond(const std::shared_ptr<Run>& run, const json& record,
                                std::optional<RunFollow::Kind> kind,
                                std::shared_ptr<void> listening) {
  ApiResponse response;
  const std::string location =
      run->stateless ? fmt::format("/runs/{}", run->run_id)
                     : fmt::format("/threads/{}/runs/{}", run->thread_id, run->run_id);
  if (!kind) {
    response = json_response(record);
  } else {
    response.follow = std::make_shared<RunFollow>();
    response.follow->kind = *kind;
    response.follow->channel = run->channel;
    response.follow->event_ids = !run->stateless;
    response.follow->listening = std::move(listening);
    if (run->cancel_on_disconnect) {
      std::weak_ptr<Run> weak = run;
      response.follow->on_disconnect = [weak] {
        if (auto r = weak.lock()) r->token.cancel();
      };
    }
    if (*kind == RunFollow::Kind::stream) response.content_type = "text/event-stream";
  }
  response.headers.emplace_back("Content-Location", location);
  if (kind == RunFollow::Kind::stream && run->resumable) {  // turns on the SDK's reconnection
    response.headers.emplace_back("Location", location + "/stream");
  }
  return response;
}

}  // namespace sg::server
