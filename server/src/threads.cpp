// SPDX-License-Identifier: MIT
// Threads of the LangGraph Server API: create (if_exists), get, patch (metadata merged), delete,
// search, copy, state, history and update_state. A thread's record lives in the server's record
// store under ("stategraph", "threads"), so a RocksDbStore keeps threads across restarts; its
// checkpoints live in the checkpointer of the graph it runs on (metadata.graph_id).
#include <stategraph/core/error.hpp>
#include <stategraph/core/time.hpp>
#include <stategraph/core/uuid.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>

#include "api.hpp"
#include "crons.hpp"

namespace sg::server {

namespace {

using nlohmann::json;

void require_uuid(std::string_view id, std::string_view what) {
  if (!is_uuid(id)) {
    throw ApiError{422, fmt::format("{} '{}' is not a UUID", what, id)};
  }
}

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

/// The `ttl` of a thread create or update body: minutes, or {ttl: minutes, strategy: delete or
/// keep_latest}; nullopt when absent or null. Throws ApiError 422.
std::optional<json> read_ttl(const json& body) {
  const auto it = body.find("ttl");
  if (it == body.end() || it->is_null()) return std::nullopt;
  json ttl = it->is_number() ? json{{"ttl", *it}} : *it;
  if (!ttl.is_object()) {
    throw ApiError{422, "'ttl' must be minutes, or {\"ttl\": minutes, \"strategy\": \"delete\"}"};
  }
  for (const auto& [key, value] : ttl.items()) {
    if (key != "ttl" && key != "strategy") {
      throw ApiError{422, fmt::format("'ttl' has an unknown field '{}' (ttl, strategy)", key)};
    }
  }
  const json& minutes = ttl.value("ttl", json());
  if (!minutes.is_number() || !(minutes.get<double>() > 0) ||
      minutes.get<double>() > 1e8) {  // past 190 years is a typo
    throw ApiError{422, "'ttl.ttl' must be a number of minutes above 0"};
  }
  const json& strategy = ttl.value("strategy", json("delete"));
  if (strategy != "delete" && strategy != "keep_latest") {
    throw ApiError{
        422, fmt::format("'ttl.strategy' must be delete or keep_latest, got {}", strategy.dump())};
  }
  ttl["strategy"] = strategy;
  return ttl;
}

}  // namespace

bool is_uuid(std::string_view id) {
  if (id.size() != 36) return false;
  for (std::size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? c != '-' : !std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

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

ApiResponse no_content() {
  ApiResponse response;
  response.status = 204;
  response.content_type.clear();
  return response;
}

// ---- ThreadRegistry ----------------------------------------------------------------------------

ThreadRegistry::ThreadRegistry(std::shared_ptr<Store> records) : records_(std::move(records)) {}

// The record: a busy thread's from memory, else the stored one. Holds mu_ for the busy map only.
std::optional<json> ThreadRegistry::lookup(const std::string& thread_id) const {
  {
    std::lock_guard lock(mu_);
    if (const auto busy = busy_.find(thread_id); busy != busy_.end())
      return std::optional<json>(busy->second);
  }
  auto item = records_->get(threads_namespace(), thread_id);
  if (!item) return std::nullopt;
  return std::move(item->value);
}

void ThreadRegistry::apply(const SharedStatus& status, json& thread) {
  thread["status"] = status.status;
  // ISO 8601 times in UTC, written alike: the later one is the greater string.
  if (status.updated_at > thread.value("updated_at", std::string())) {
    thread["updated_at"] = status.updated_at;
  }
}

void ThreadRegistry::show_status(json& thread) const {
  if (!shared_status_) return;
  if (const auto status = shared_status_(thread.value("thread_id", std::string()))) {
    apply(*status, thread);
  }
}

void ThreadRegistry::share(std::function<std::optional<SharedStatus>(const std::string&)> status,
                           std::function<std::map<std::string, SharedStatus>()> all_statuses,
                           std::function<std::shared_ptr<void>(const std::string&)> lock) {
  std::lock_guard guard(mu_);
  shared_status_ = std::move(status);
  shared_statuses_ = std::move(all_statuses);
  shared_lock_ = std::move(lock);
}

ThreadRegistry::ChangeLock::ChangeLock(const ThreadRegistry& registry, const std::string& thread_id)
    : shared(registry.shared_lock_ ? registry.shared_lock_(thread_id) : nullptr),
      local(registry.change_mu_[std::hash<std::string>{}(thread_id) % registry.change_mu_.size()]) {
}

std::optional<json> ThreadRegistry::find(const std::string& thread_id) const {
  std::optional<json> thread = lookup(thread_id);
  if (thread) show_status(*thread);
  return thread;
}

json ThreadRegistry::require_record(const std::string& thread_id) const {
  require_uuid(thread_id, "thread id");
  auto thread = lookup(thread_id);
  if (!thread) throw ApiError{404, fmt::format("thread '{}' not found", thread_id)};
  return *std::move(thread);
}

json ThreadRegistry::require(const std::string& thread_id) const {
  json thread = require_record(thread_id);
  show_status(thread);
  return thread;
}

json ThreadRegistry::create_record(const std::string& thread_id, const json& metadata) {
  require_uuid(thread_id, "thread id");
  const ChangeLock lock(*this, thread_id);
  if (auto existing = lookup(thread_id)) return *existing;
  const std::string now = iso_timestamp_now();
  json thread = {{"thread_id", thread_id}, {"created_at", now},
                 {"updated_at", now},      {"metadata", metadata},
                 {"status", "idle"},       {"config", json::object()},
                 {"values", nullptr},      {"interrupts", json::object()}};
  records_->put(threads_namespace(), thread_id, thread);
  return thread;
}

ApiResponse ThreadRegistry::create(const ApiRequest& request, const Access& access) {
  const json body = body_object(request);
  json metadata = access.metadata_or(metadata_field(body));
  std::string thread_id = string_field(body, "thread_id");
  std::string if_exists = string_field(body, "if_exists");
  if (if_exists.empty()) if_exists = "raise";
  if (if_exists != "raise" && if_exists != "do_nothing") {
    throw ApiError{422, fmt::format("'if_exists' must be raise or do_nothing, got {}",
                                    body["if_exists"].dump())};
  }
  if (const std::string graph_id = string_field(body, "graph_id"); !graph_id.empty()) {
    metadata["graph_id"] = graph_id;
  }
  const std::optional<json> ttl = read_ttl(body);
  if (thread_id.empty()) thread_id = new_uuid4();
  require_uuid(thread_id, "thread id");
  if (auto existing = lookup(thread_id)) {
    if (if_exists == "do_nothing" && access.allows((*existing)["metadata"])) {
      return json_response(*existing);
    }
    throw ApiError{409, fmt::format("thread '{}' already exists", thread_id)};
  }
  json thread = create_record(thread_id, metadata);
  if (ttl) records_->put(thread_ttls_namespace(), thread_id, *ttl);
  return json_response(thread);
}

ApiResponse ThreadRegistry::patch(const std::string& thread_id, const ApiRequest& request,
                                  const Access& access) {
  const json body = body_object(request);
  const json metadata = access.metadata_or(metadata_field(body));
  const std::optional<json> ttl = read_ttl(body);
  json thread;
  {
    const ChangeLock lock(*this, thread_id);
    thread = require_record(thread_id);
    if (!access.allows(thread["metadata"])) {
      throw ApiError{404, fmt::format("thread '{}' not found", thread_id)};
    }
    if (ttl) records_->put(thread_ttls_namespace(), thread_id, *ttl);
    for (auto it = metadata.begin(); it != metadata.end(); ++it) thread["metadata"][it.key()] = *it;
    thread["updated_at"] = iso_timestamp_now();
    records_->put(threads_namespace(), thread_id, thread);
    std::lock_guard busy_lock(mu_);
    if (const auto busy = busy_.find(thread_id); busy != busy_.end()) busy->second = thread;
  }
  show_status(thread);  // not under the lock: a cluster's query takes a connection
  return json_response(thread);
}

void ThreadRegistry::set_status(const std::string& thread_id, std::string_view status,
                                const json& metadata, const json* known) {
  if (status == "busy" && shared_lock_) {
    // In a cluster "busy" is not stored: nothing to change (nor to lock) unless the metadata
    // gains something.
    const std::optional<json> stored =
        known != nullptr && known->is_object() ? std::optional<json>(*known) : lookup(thread_id);
    if (!stored) return;
    const json& has = (*stored)["metadata"];
    bool changes = false;
    if (metadata.is_object()) {
      for (auto it = metadata.begin(); it != metadata.end(); ++it) {
        const auto old = has.find(it.key());
        if (old == has.end() || *old != *it) changes = true;
      }
    }
    if (!changes) return;
  }
  const ChangeLock lock(*this, thread_id);
  auto thread = lookup(thread_id);
  if (!thread) return;
  bool metadata_changed = false;
  if (metadata.is_object()) {
    json& merged = (*thread)["metadata"];
    for (auto it = metadata.begin(); it != metadata.end(); ++it) {
      if (const auto old = merged.find(it.key()); old != merged.end() && *old == *it) continue;
      merged[it.key()] = *it;
      metadata_changed = true;
    }
  }
  if (status != "busy" || !shared_status_) (*thread)["status"] = status;  // busy: from the queue
  (*thread)["updated_at"] = iso_timestamp_now();
  if (status == "busy") {
    // The metadata (a first run's graph_id) must survive a crash; the status need not (and in
    // a cluster it comes from the run queue).
    if (metadata_changed) records_->put(threads_namespace(), thread_id, *thread);
    if (!shared_status_) {
      std::lock_guard busy_lock(mu_);
      busy_.insert_or_assign(thread_id, *std::move(thread));
    }
    return;
  }
  // Stored before it leaves the busy map: a reader sees the busy record or the new one.
  records_->put(threads_namespace(), thread_id, *thread);
  std::lock_guard busy_lock(mu_);
  busy_.erase(thread_id);
}

bool ThreadRegistry::remove_record(const std::string& thread_id) {
  const ChangeLock lock(*this, thread_id);
  if (!lookup(thread_id)) return false;
  records_->remove(threads_namespace(), thread_id);
  records_->remove(thread_ttls_namespace(), thread_id);
  std::lock_guard busy_lock(mu_);
  busy_.erase(thread_id);
  return true;
}

std::map<std::string, json> ThreadRegistry::ttls() const {
  std::map<std::string, json> out;
  for (auto& hit : all_records(*records_, thread_ttls_namespace())) {
    out.emplace(hit.item.key, std::move(hit.item.value));
  }
  return out;
}

std::vector<json> ThreadRegistry::all() const {
  std::vector<json> out;
  const std::map<std::string, SharedStatus> shared =
      shared_statuses_ ? shared_statuses_() : std::map<std::string, SharedStatus>();
  auto records = all_records(*records_, threads_namespace());
  std::lock_guard lock(mu_);
  for (auto& hit : records) {
    const auto busy = busy_.find(hit.item.key);
    out.push_back(busy != busy_.end() ? busy->second : std::move(hit.item.value));
    if (const auto status = shared.find(hit.item.key); status != shared.end()) {
      apply(status->second, out.back());
    }
  }
  return out;
}

std::vector<json> ThreadRegistry::search(const json& body, const Access& access) const {
  const json metadata = metadata_field(body);
  const std::vector<std::string> ids = string_list_field(body, "ids", "thread ids");
  const std::string status = string_field(body, "status");
  if (!status.empty() && status != "idle" && status != "busy" && status != "interrupted" &&
      status != "error") {
    throw ApiError{
        422, fmt::format("'status' must be idle, busy, interrupted or error, got '{}'", status)};
  }
  std::vector<json> found;
  // Every record, filtered here: fine for thousands of threads; a database index later.
  for (auto& t : all()) {
    if (!ids.empty() &&
        std::find(ids.begin(), ids.end(), t.value("thread_id", std::string())) == ids.end()) {
      continue;
    }
    if (!status.empty() && t.value("status", std::string()) != status) continue;
    if (!contains(t["metadata"], metadata) || !access.allows(t["metadata"])) continue;
    found.push_back(std::move(t));
  }
  return found;
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
      return json{{"thread_id", body.value("thread_id", json())},
                  {"metadata", metadata_field(body)},
                  {"if_exists", body.value("if_exists", json())},
                  {"ttl", body.value("ttl", json())}};
    });
    return threads_->create(request, access);
  }
  // The fields of a search or count body a handler sees.
  const auto search_value = [&](const json& body) {
    return json{{"metadata", metadata_field(body)},       {"values", body.value("values", json())},
                {"status", body.value("status", json())}, {"ids", body.value("ids", json())},
                {"limit", body.value("limit", json())},   {"offset", body.value("offset", json())}};
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
