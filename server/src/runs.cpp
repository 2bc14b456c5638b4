// Runs of the LangGraph Server API: one active run per thread, later runs queued (enqueue) or
// refused (reject), or the active ones cancelled first (interrupt, rollback). Starting and
// executing them is run_execution.cpp; they publish their events to a RunChannel that SSE
// streams, waits and joins read. Run records live in the record store under
// ("stategraph", "runs", thread_id): written when a run is created and when it ends (the in-memory
// record is the truth while it is active). A small marker under ("stategraph", "active_runs") names
// each unfinished run, so that start-up finds the runs a crash left behind without reading every
// record. Reading and steering runs (list, get, join, cancel, delete) is run_access.cpp.
#include <stategraph/core/error.hpp>
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
#include "cluster.hpp"
#include "run_events.hpp"
#include "runs_state.hpp"
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

std::string one_of(const json& body, const char* name, std::initializer_list<const char*> allowed) {
  std::string value = string_field(body, name);
  if (value.empty()) return *allowed.begin();
  for (const char* a : allowed) {
    if (value == a) return value;
  }
  throw ApiError{
      422, fmt::format("'{}' must be one of {}, got '{}'", name, fmt::join(allowed, ", "), value)};
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
      state_(std::make_unique<State>(limits)) {
  if (cluster != nullptr) {
    // The queue is in the database: the runs of a process that died are swept back into it.
    cluster_ = std::make_unique<Cluster>(*this, *cluster);
    return;
  }
  // Runs do not survive this process: the runs a crash left unfinished are marked as failed,
  // and their threads are idle again.
  for (const auto& marker : all_records(*records_, active_runs_namespace())) {
    const std::string thread_id = marker.item.value.value("thread_id", std::string());
    if (auto item = records_->get(runs_namespace(thread_id), marker.item.key)) {
      json& run = item->value;
      const std::string status = run.value("status", std::string());
      if (status == "pending" || status == "running") {
        run["status"] = "error";
        run["updated_at"] = iso_timestamp_now();
        records_->put(runs_namespace(thread_id), marker.item.key, run);
      }
    }
    threads_.set_status(thread_id, "idle");
    records_->remove(active_runs_namespace(), marker.item.key);
  }
}

RunManager::~RunManager() {
  shutdown();
}

void RunManager::shutdown() {
  {
    std::unique_lock lock(state_->mu);
    state_->stopping = true;
    for (auto& [id, run] : state_->active) run->token.cancel();
  }
  if (cluster_) cluster_->stop_runs();
  state_->delayed_changed.notify_all();
  if (state_->timer.joinable()) state_->timer.join();
  std::unique_lock lock(state_->mu);
  state_->drained.wait(lock, [&] { return state_->executing == 0 && state_->finishing == 0; });
  lock.unlock();
  if (cluster_) cluster_->shutdown();
}

std::vector<SearchItem> RunManager::run_records(const std::string& thread_id) const {
  return all_records(*records_, runs_namespace(thread_id));
}

void RunManager::remove_run_records(const std::string& thread_id) const {
  for (const auto& hit : run_records(thread_id)) {
    records_->remove(runs_namespace(thread_id), hit.item.key);
  }
}

void RunManager::keep_ended_resumable(const Run& run) {
  state_->ended_resumable[run.run_id] = run.channel;
  state_->ended_resumable_order.push_back(run.run_id);
  if (state_->ended_resumable_order.size() > State::kEndedResumable) {
    state_->ended_resumable.erase(state_->ended_resumable_order.front());
    state_->ended_resumable_order.pop_front();
  }
}

void RunManager::save(const Run& run) const {
  records_->put(runs_namespace(run.thread_id), run.run_id, run.record);
}

bool RunManager::busy(const std::string& thread_id) const {
  if (cluster_) return cluster_->busy(thread_id);
  std::lock_guard lock(state_->mu);
  const auto it = state_->queues.find(thread_id);
  return it != state_->queues.end() && !it->second.empty();
}

ApiResponse RunManager::create(const std::string& given_thread_id, const ApiRequest& request,
                               std::optional<RunFollow::Kind> kind) {
  const json body = body_object(request);
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
  const json user_metadata = metadata_field(body);
  RunConfig& config = run->config;
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
  config.cancellation = run->token;
  config.run_id = run->run_id;

  std::string thread_id = given_thread_id;
  const json graph_metadata = {{"graph_id", graph.graph_id},
                               {"assistant_id", assistant["assistant_id"]}};
  const bool has_checkpointer = graph.graph->checkpointer() != nullptr;
  if (!stateless && !has_checkpointer) {
    throw ApiError{409, fmt::format("graph '{}' was compiled without a checkpointer: it serves "
                                    "stateless runs only",
                                    graph.graph_id)};
  }
  if (stateless) {
    thread_id = new_uuid4();
    (void)threads_.create_record(thread_id, graph_metadata);
    run->delete_thread_after = on_completion == "delete";
  } else if (!threads_.find(thread_id)) {
    if (!is_uuid(thread_id))
      throw ApiError{422, fmt::format("thread id '{}' is not a UUID", thread_id)};
    if (if_not_exists != "create") {
      throw ApiError{404, fmt::format("thread '{}' not found", thread_id)};
    }
    (void)threads_.create_record(thread_id, graph_metadata);
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
  run->channel->publish("", "metadata", {{"run_id", run->run_id}, {"attempt", 1}});
  std::shared_ptr<void> listening;
  if (kind == RunFollow::Kind::stream) listening = run->channel->listen();  // before it starts

  bool start_now = false;
  json created_record;
  std::vector<std::shared_ptr<Run>> dropped;  // pending runs cancelled by this one
  if (cluster_) {
    {
      std::lock_guard lock(state_->mu);
      if (state_->stopping) throw ApiError{503, "the server is stopping"};
    }
    created_record = run->record;  // the worker changes run->record from now on
    threads_.set_status(thread_id, "busy", graph_metadata);  // its metadata
    cluster_->enqueue(run, multitask);
  } else {
    std::lock_guard lock(state_->mu);
    if (state_->stopping) throw ApiError{503, "the server is stopping"};
    auto& queue = state_->queues[thread_id];
    if (!queue.empty()) {
      if (multitask == "reject") {
        throw ApiError{409, fmt::format("thread '{}' is busy with run '{}' (multitask_strategy "
                                        "reject)",
                                        thread_id, queue.front()->run_id)};
      }
      if (multitask == "interrupt" || multitask == "rollback") {
        for (auto it = queue.begin(); it != queue.end();) {
          (*it)->cancel_action = multitask;
          if ((*it)->running) {
            (*it)->token.cancel();
            ++it;
          } else {
            dropped.push_back(*it);
            it = queue.erase(it);
          }
        }
      }
    }
    created_record = run->record;  // the worker changes run->record from now on
    queue.push_back(run);
    state_->active[run->run_id] = run;
    save(*run);
    records_->put(active_runs_namespace(), run->run_id, {{"thread_id", thread_id}});
    threads_.set_status(thread_id, "busy", graph_metadata);
    start_now = queue.size() == 1 && begin_locked(run);
  }
  for (const auto& pending : dropped) {
    finish(pending, pending->cancel_action == "rollback" ? "" : "interrupted", json::object());
  }
  if (start_now) launch(run);

  ApiResponse response;
  const std::string location = stateless
                                   ? fmt::format("/runs/{}", run->run_id)
                                   : fmt::format("/threads/{}/runs/{}", thread_id, run->run_id);
  if (!kind) {
    response = json_response(created_record);
  } else {
    response.follow = std::make_shared<RunFollow>();
    response.follow->kind = *kind;
    response.follow->channel = run->channel;
    response.follow->event_ids = !stateless;
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
