// SPDX-License-Identifier: MIT
// Thread records (ThreadRegistry): create (if_exists), patch (metadata merged), status, TTLs,
// search. A thread's record lives in the server's record store under ("stategraph", "threads"),
// so a RocksDbStore keeps threads across restarts; its checkpoints live in the checkpointer of
// the graph it runs on (metadata.graph_id). The routes are in thread_routes.cpp.
#include <stategraph/core/error.hpp>
#include <stategraph/core/time.hpp>
#include <stategraph/core/uuid.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>

#include "api.hpp"

namespace sg::server {

namespace {

using nlohmann::json;

void require_uuid(std::string_view id, std::string_view what) {
  if (!is_uuid(id)) {
    throw ApiError{422, fmt::format("{} '{}' is not a UUID", what, id)};
  }
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

}  // namespace sg::server
