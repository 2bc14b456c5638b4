// SPDX-License-Identifier: MIT
// The thread routes of the LangGraph Server API: get, patch, delete, search, count, copy, prune,
// state, history and update_state, and the runs under a thread (their handlers are RunManager's);
// the TTL sweep. The records are ThreadRegistry's (threads.cpp).
#include <stategraph/core/error.hpp>
#include <stategraph/core/time.hpp>
#include <stategraph/core/uuid.hpp>

#include <fmt/format.h>

#include "api.hpp"
#include "crons.hpp"
#include "telemetry.hpp"

namespace sg::server {

namespace {

using nlohmann::json;

json checkpoint_json(const CheckpointConfig& c) {
  return {{"thread_id", c.thread_id},
          {"checkpoint_ns", c.checkpoint_ns},
          {"checkpoint_id", c.checkpoint_id},
          {"checkpoint_map", nullptr}};
}

/// The checkpoint id of a `checkpoint` object (`{checkpoint_id, ...}`) or of a
/// `{configurable: {checkpoint_id}}` config in `body[name]`; empty when absent.
std::string checkpoint_id_of(const json& body, const char* name) {
  const auto it = body.find(name);
  if (it == body.end() || it->is_null()) return {};
  if (!it->is_object()) throw ApiError{422, fmt::format("'{}' must be an object", name)};
  const json& holder = it->contains("configurable") ? (*it)["configurable"] : *it;
  if (!holder.is_object()) throw ApiError{422, fmt::format("'{}' must be an object", name)};
  return string_field(holder, "checkpoint_id");
}

/// The PruneStrategy of a strategy's API name ("delete" or "keep_latest").
PruneStrategy prune_strategy_named(std::string_view name) {
  return name == "delete" ? PruneStrategy::delete_all : PruneStrategy::keep_latest;
}

}  // namespace

json thread_state_json(ServedSnapshot s) {
  json tasks = json::array();
  for (auto& t : s.tasks) {
    json task = {{"id", t.id},
                 {"name", t.name},
                 {"error", t.error.empty() ? json() : json(t.error)},
                 {"interrupts", interrupts_json(t.interrupts)},
                 {"path", {"__pregel_pull", t.name}},
                 {"checkpoint", nullptr},
                 {"state", nullptr}};
    if (!t.result.is_null()) {
      add_langchain_defaults(t.result);
      task["result"] = std::move(t.result);
    }
    tasks.push_back(std::move(task));
  }
  add_langchain_defaults(s.values);
  json metadata = s.metadata.is_null() ? json::object() : std::move(s.metadata);
  if (!metadata.contains("parents")) metadata["parents"] = json::object();
  return {{"values", std::move(s.values)},
          {"next", s.next},
          {"tasks", std::move(tasks)},
          {"interrupts", interrupts_json(s.interrupts)},
          {"metadata", std::move(metadata)},
          {"created_at", s.created_at.empty() ? json() : json(s.created_at)},
          {"checkpoint", checkpoint_json(s.config)},
          {"parent_checkpoint", s.parent_config ? checkpoint_json(*s.parent_config) : json()}};
}

json empty_thread_state() {
  return {{"values", json::object()},    {"next", json::array()},       {"tasks", json::array()},
          {"interrupts", json::array()}, {"metadata", nullptr},         {"created_at", nullptr},
          {"checkpoint", nullptr},       {"parent_checkpoint", nullptr}};
}

// ---- Api: thread routes ------------------------------------------------------------------------

const GraphEntry* Api::thread_graph(const json& thread) const {
  const auto metadata = thread.find("metadata");
  if (metadata == thread.end() || !metadata->is_object()) return nullptr;
  const auto graph_id = metadata->find("graph_id");
  if (graph_id == metadata->end() || !graph_id->is_string()) return nullptr;
  for (const auto& g : graphs_) {
    if (g.graph_id == graph_id->get<std::string>()) return &g;
  }
  return nullptr;
}

json Api::thread_view(json thread) const {
  const GraphEntry* graph = thread_graph(thread);
  if (graph == nullptr || !graph->graph->checkpointer()) return thread;
  RunConfig config;
  config.thread_id = thread.value("thread_id", std::string());
  auto state = graph->graph->state(config);
  if (!state) return thread;
  add_langchain_defaults(state->values);
  thread["values"] = std::move(state->values);
  json interrupts = json::object();
  for (const auto& task : state->tasks) {
    if (!task.interrupts.empty()) interrupts[task.id] = interrupts_json(task.interrupts);
  }
  thread["interrupts"] = std::move(interrupts);
  return thread;
}

ApiResponse Api::delete_thread(const std::string& thread_id) const {
  const json thread = threads_->require(thread_id);
  runs_->remove_thread(thread_id);  // 409 while a run is active
  crons_->remove_thread(thread_id);
  if (const GraphEntry* graph = thread_graph(thread)) {
    if (graph->graph->checkpointer()) graph->graph->delete_thread(thread_id);
  }
  threads_->remove_record(thread_id);
  return no_content();
}

bool Api::prune_thread(const std::string& thread_id, PruneStrategy strategy) const {
  const std::optional<json> thread = threads_->lookup(thread_id);
  if (!thread || runs_->busy(thread_id)) return false;
  if (strategy == PruneStrategy::delete_all) {
    try {
      (void)delete_thread(thread_id);
    } catch (const ApiError&) {
      return false;  // a run started meanwhile (409), or another process deleted it
    }
    return true;
  }
  if (const GraphEntry* graph = thread_graph(*thread)) {
    if (const auto saver = graph->graph->checkpointer()) saver->prune({thread_id}, strategy);
  }
  return true;
}

ApiResponse Api::prune_threads(const ApiRequest& request) const {
  const json body = body_object(request);
  const auto ids = body.find("thread_ids");
  if (ids == body.end() || !ids->is_array()) {
    throw ApiError{422, "'thread_ids' must be an array of thread ids"};
  }
  const std::vector<std::string> thread_ids = string_list_field(body, "thread_ids", "thread ids");
  const PruneStrategy strategy =
      prune_strategy_named(one_of(body, "strategy", {"delete", "keep_latest"}));
  std::size_t pruned = 0;
  for (const std::string& thread_id : thread_ids) {
    if (!is_uuid(thread_id)) continue;
    try {
      (void)thread_access(request, thread_id, "delete");  // a thread the user may not delete
    } catch (const ApiError& e) {
      if (e.status == 404) continue;  // is not pruned, as one that does not exist
      throw;
    }
    if (prune_thread(thread_id, strategy)) ++pruned;
  }
  return json_response({{"pruned_count", pruned}});
}

std::size_t Api::sweep_expired_threads(std::chrono::system_clock::time_point now) const {
  const std::map<std::string, json> own = threads_->ttls();
  std::vector<json> candidates;
  if (ttl_.default_ttl) {
    candidates = threads_->all();
  } else {
    for (const auto& [thread_id, ttl] : own) {
      if (auto thread = threads_->find(thread_id)) candidates.push_back(*std::move(thread));
    }
  }
  const std::int64_t now_micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  std::size_t swept = 0;
  for (const json& thread : candidates) {
    const std::string thread_id = thread.value("thread_id", "");
    std::int64_t ttl_micros = 0;
    PruneStrategy strategy = ttl_.strategy;
    if (const auto it = own.find(thread_id); it != own.end()) {
      ttl_micros = static_cast<std::int64_t>(it->second.value("ttl", 0.0) * 60e6);
      strategy = prune_strategy_named(it->second.value("strategy", "delete"));
    } else if (ttl_.default_ttl) {
      ttl_micros = std::chrono::duration_cast<std::chrono::microseconds>(*ttl_.default_ttl).count();
    } else {
      continue;
    }
    const std::optional<std::int64_t> changed = parse_iso_timestamp(thread.value("updated_at", ""));
    if (!changed || *changed + ttl_micros > now_micros || thread.value("status", "") == "busy") {
      continue;
    }
    if (prune_thread(thread_id, strategy)) ++swept;
  }
  return swept;
}

ApiResponse Api::copy_thread(const ApiRequest& request, const std::string& thread_id) const {
  const json thread = thread_access(request, thread_id, "read");
  const std::string copy_id = new_uuid4();
  const Access access = authorize(request, "threads", "create", [&] {
    return json{{"thread_id", copy_id}, {"metadata", thread["metadata"]}};
  });
  const json metadata = access.metadata_or(thread["metadata"]);
  if (const GraphEntry* graph = thread_graph(thread)) {
    if (const auto saver = graph->graph->checkpointer()) saver->copy_thread(thread_id, copy_id);
  }
  return json_response(thread_view(threads_->create_record(copy_id, metadata)));
}

ApiResponse Api::route_threads(const ApiRequest& request) const {
  const auto& p = request.path;
  const std::string& m = request.method;
  if (p.size() == 1 && m == "POST") {
    const Access access = authorize(request, "threads", "create", [&] {
      const json body = body_object(request);
      json value = body_fields(body, {"thread_id", "if_exists", "ttl"});
      value["metadata"] = metadata_field(body);
      return value;
    });
    return threads_->create(request, access);
  }
  // The fields of a search or count body a handler sees.
  const auto search_value = [&](const json& body) {
    json value = body_fields(body, {"values", "status", "ids", "limit", "offset"});
    value["metadata"] = metadata_field(body);
    return value;
  };
  if (p.size() == 2 && p[1] == "search" && m == "POST") {
    const json body = body_object(request);
    const SearchPage page = search_page(body, {"thread_id", "status", "created_at", "updated_at"});
    const Access access =
        authorize(request, "threads", "search", [&] { return search_value(body); });
    // Values and interrupts only for the page (each is a checkpoint read).
    return paged_response(threads_->search(body, access), page,
                          [this](json& t) { t = thread_view(std::move(t)); });
  }
  if (p.size() == 2 && p[1] == "prune" && m == "POST") return prune_threads(request);
  if (p.size() == 2 && p[1] == "count" && m == "POST") {
    const json body = body_object(request);
    const Access access =
        authorize(request, "threads", "search", [&] { return search_value(body); });
    return json_response(threads_->search(body, access).size());
  }
  if (p.size() == 2) {
    if (m == "GET") return json_response(thread_view(thread_access(request, p[1], "read")));
    if (m == "PATCH") {
      const Access access = authorize(request, "threads", "update", [&] {
        return json{{"thread_id", p[1]}, {"metadata", metadata_field(body_object(request))}};
      });
      return threads_->patch(p[1], request, access);
    }
    if (m == "DELETE") {
      (void)thread_access(request, p[1], "delete");
      return delete_thread(p[1]);
    }
  }
  if (p.size() >= 3) {
    if (p[2] == "copy" && p.size() == 3 && m == "POST") return copy_thread(request, p[1]);
    if (p[2] == "state" || p[2] == "history") {
      json thread = thread_access(request, p[1], "read");
      if (p[2] == "state" && p.size() == 3 && m == "POST") {
        // An update of the state: a thread the user may read but not update is a 403.
        const Access update = authorize(request, "threads", "update", [&] {
          return json{{"thread_id", p[1]}};
        });
        if (!update.allows(thread["metadata"])) throw ApiError{403, "Forbidden"};
      }
      return route_thread_state(request, thread);
    }
    if (p[2] == "runs" || p[2] == "stream") {  // each checks the thread (creates may create it)
      RunManager& runs = *runs_;
      // With authorization, the thread must be one the user may `action`: 404 otherwise.
      const auto check = [&](std::string_view action) {
        if (authorizing(request)) (void)thread_access(request, p[1], action);
      };
      const bool create =
          m == "POST" && (p.size() == 3 || (p.size() == 4 && (p[3] == "stream" || p[3] == "wait")));
      if (create) {
        const Access access = create_run_access(request, p[1]);
        const std::optional<RunFollow::Kind> kind = p.size() == 3 ? std::nullopt
                                                    : p[3] == "stream"
                                                        ? std::optional(RunFollow::Kind::stream)
                                                        : std::optional(RunFollow::Kind::result);
        return runs.create(p[1], request, kind, access);
      }
      if (p.size() == 4 && p[3] == "crons") {
        check("read");
        return crons_->create(p[1], request, cron_access(request, p[1]));
      }
      if (p[2] == "stream" && p.size() == 3 && m == "GET") {
        check("read");
        return runs.join_thread(p[1], request);
      }
      if (p.size() == 3 && m == "GET") {
        check("read");
        check("search");
        return runs.list(p[1], request);
      }
      if (p.size() == 4 && m == "GET") {
        check("read");
        return runs.get(p[1], p[3]);
      }
      if (p.size() == 4 && m == "DELETE") {
        check("delete");
        return runs.remove(p[1], p[3]);
      }
      if (p.size() == 5 && (p[4] == "join" || p[4] == "stream") && m == "GET") {
        check("read");
        return runs.join(p[1], p[3], request,
                         p[4] == "join" ? RunFollow::Kind::result : RunFollow::Kind::stream);
      }
      if (p.size() == 5 && p[4] == "spans" && m == "GET") {
        // The studio's timeline: the spans of a recent run of this server (not in the API of
        // LangGraph's server).
        check("read");
        ApiResponse found = runs.get(p[1], p[3]);
        if (found.status != 200) return found;
        return json_response(telemetry_->recent().spans(p[3]));
      }
      if (p.size() == 5 && p[4] == "cancel" && m == "POST") {
        check("update");
        return runs.cancel(p[1], p[3], request);
      }
    }
  }
  throw no_route(request);
}

ApiResponse Api::route_thread_state(const ApiRequest& request, const json& thread) const {
  const auto& p = request.path;
  const std::string& m = request.method;
  const std::string& thread_id = p[1];
  const GraphEntry* graph = thread_graph(thread);
  const bool has_checkpoints = graph != nullptr && graph->graph->checkpointer() != nullptr;
  RunConfig config;
  config.thread_id = thread_id;
  const auto state_at = [&](const std::string& checkpoint_id) {
    if (!has_checkpoints) return json_response(empty_thread_state());
    config.checkpoint_id = checkpoint_id;
    auto state = graph->graph->state(config);
    if (!state) {
      if (!checkpoint_id.empty()) {
        throw ApiError{404, fmt::format("checkpoint '{}' not found", checkpoint_id)};
      }
      return json_response(empty_thread_state());
    }
    return json_response(thread_state_json(*std::move(state)));
  };
  if (p[2] == "history") {
    json body = m == "GET" ? json::object() : body_object(request);
    if (m == "GET") {
      if (const auto it = request.query.find("limit"); it != request.query.end()) {
        body["limit"] = std::atoll(it->second.c_str());
      }
    }
    ListOptions options;
    options.limit = 10;
    if (const auto it = body.find("limit"); it != body.end() && !it->is_null()) {
      if (!it->is_number_integer() || it->get<std::int64_t>() < 1) {
        throw ApiError{422, "'limit' must be a positive integer"};
      }
      options.limit = it->get<std::size_t>();
    }
    if (const std::string before = checkpoint_id_of(body, "before"); !before.empty()) {
      options.before = before;
    }
    if (const auto it = body.find("metadata"); it != body.end() && !it->is_null()) {
      if (!it->is_object()) throw ApiError{422, "'metadata' must be an object"};
      options.filter = *it;
    }
    json out = json::array();
    if (has_checkpoints) {
      for (auto& s : graph->graph->history(config, std::move(options))) {
        out.push_back(thread_state_json(std::move(s)));
      }
    }
    return json_response(out);
  }
  // /state...
  if (p.size() == 3 && m == "GET") return state_at("");
  if (p.size() == 4 && p[3] == "checkpoint" && m == "POST") {
    const json body = body_object(request);
    return state_at(checkpoint_id_of(body, "checkpoint"));
  }
  if (p.size() == 4 && m == "GET") return state_at(p[3]);
  if (p.size() == 3 && m == "POST") {
    const json body = body_object(request);
    if (graph == nullptr) {
      const std::string graph_id = string_field(body, "graph_id");
      if (graph_id.empty()) {
        throw ApiError{409, fmt::format("thread '{}' has no graph yet: run it first, or create it "
                                        "with metadata.graph_id",
                                        thread_id)};
      }
      const AssistantRegistry::Resolved resolved = assistant(graph_id);
      graph = resolved.graph;
      threads_->set_status(
          thread_id, thread.value("status", "idle"),
          {{"graph_id", graph->graph_id}, {"assistant_id", resolved.assistant["assistant_id"]}});
    }
    if (!graph->graph->checkpointer()) {
      throw ApiError{
          409, fmt::format("graph '{}' was compiled without a checkpointer", graph->graph_id)};
    }
    if (runs_->busy(thread_id)) {
      throw ApiError{409, fmt::format("thread '{}' has a run in progress", thread_id)};
    }
    config.checkpoint_id = checkpoint_id_of(body, "checkpoint");
    if (config.checkpoint_id.empty()) config.checkpoint_id = string_field(body, "checkpoint_id");
    std::optional<std::string> as_node;
    if (std::string node = string_field(body, "as_node"); !node.empty()) as_node = std::move(node);
    const json values = body.value("values", json());
    const CheckpointConfig saved = graph->graph->update_state(config, values, as_node);
    return json_response({{"checkpoint", checkpoint_json(saved)}});
  }
  throw no_route(request);
}

}  // namespace sg::server
