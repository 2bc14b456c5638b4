// SPDX-License-Identifier: MIT
// The crons API and the thread that fires them (crons.hpp).
#include "crons.hpp"

#include <stategraph/core/error.hpp>
#include <stategraph/core/time.hpp>
#include <stategraph/core/uuid.hpp>

#include <date/tz.h>
#include <fmt/format.h>

#include <algorithm>

#include "cron_schedule.hpp"

namespace sg::server {
namespace {

using nlohmann::json;
using std::chrono::sys_seconds;

/// The run fields a cron keeps in its payload (the create and update bodies of the SDK).
constexpr const char* kPayloadFields[] = {"input",
                                          "config",
                                          "context",
                                          "metadata",
                                          "interrupt_before",
                                          "interrupt_after",
                                          "webhook",
                                          "multitask_strategy",
                                          "checkpoint_during",
                                          "durability",
                                          "stream_mode",
                                          "stream_subgraphs",
                                          "stream_resumable"};

/// The record's field with the next due time in seconds since the epoch (null: none); not shown.
constexpr const char* kNextField = "sg_next_run";

std::string iso_seconds(sys_seconds t) {
  return iso_timestamp(
      std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count());
}

sys_seconds now_seconds() {
  return std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
}

/// The Cron object of a record.
json view(json record) {
  record.erase(kNextField);
  return record;
}

const date::time_zone* zone_of(const json& record) {
  const json& tz = record["timezone"];
  return tz.is_string() ? find_time_zone(tz.get<std::string>()) : nullptr;
}

/// Sets next_run_date from the record's schedule, timezone, enabled and end_time: the first due
/// time after `after`; none when disabled or past the end.
void schedule_next(json& record, sys_seconds after) {
  std::optional<sys_seconds> next;
  if (record.value("enabled", true)) {
    next = CronSchedule(record["schedule"].get<std::string>()).next(after, zone_of(record));
    if (next && record["end_time"].is_string()) {
      if (const auto end = parse_iso_time(record["end_time"].get<std::string>());
          end && *next > *end) {
        next.reset();
      }
    }
  }
  record["next_run_date"] = next ? json(iso_seconds(*next)) : json();
  record[kNextField] = next ? json(next->time_since_epoch().count()) : json();
}

/// Checks and copies the schedule fields of a create or update `body` into `record`.
void read_schedule_fields(const json& body, json& record) {
  if (const auto it = body.find("schedule"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) throw ApiError{422, "'schedule' must be a cron expression"};
    try {
      (void)CronSchedule(it->get<std::string>());
    } catch (const Error& e) {
      throw ApiError{422, e.what()};
    }
    record["schedule"] = *it;
  }
  if (const auto it = body.find("timezone"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) throw ApiError{422, "'timezone' must be an IANA time zone name"};
    try {
      (void)find_time_zone(it->get<std::string>());
    } catch (const Error& e) {
      throw ApiError{422, fmt::format("'timezone': {}", e.what())};
    }
    record["timezone"] = *it;
  }
  if (const auto it = body.find("end_time"); it != body.end() && !it->is_null()) {
    if (!it->is_string() || !parse_iso_time(it->get<std::string>())) {
      throw ApiError{422, "'end_time' must be an ISO 8601 time (2026-12-31T23:59:59Z)"};
    }
    record["end_time"] = iso_seconds(*parse_iso_time(it->get<std::string>()));
  }
  if (const auto it = body.find("enabled"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) throw ApiError{422, "'enabled' must be a boolean"};
    record["enabled"] = *it;
  }
}

/// Copies the run fields of `body` (those given and not null) into `payload`.
void read_payload_fields(const json& body, json& payload) {
  for (const char* field : kPayloadFields) {
    if (const auto it = body.find(field); it != body.end() && !it->is_null()) payload[field] = *it;
  }
  if (payload.contains("config") && !payload["config"].is_object()) {
    throw ApiError{422, "'config' must be an object"};
  }
  if (payload.contains("metadata") && !payload["metadata"].is_object()) {
    throw ApiError{422, "'metadata' must be an object"};
  }
  (void)one_of(payload, "multitask_strategy", {"reject", "interrupt", "rollback", "enqueue"});
  (void)one_of(payload, "durability", {"async", "sync", "exit"});
}

}  // namespace

const Namespace& crons_namespace() {
  static const Namespace ns{"stategraph", "crons"};
  return ns;
}

Crons::Crons(const Api& api, RunManager& runs, ThreadRegistry& threads,
             std::shared_ptr<Store> records, SharedLock lock)
    : api_(api),
      runs_(runs),
      threads_(threads),
      records_(std::move(records)),
      shared_lock_(std::move(lock)) {}

Crons::~Crons() {
  stop();
}

void Crons::start() {
  std::lock_guard guard(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      std::optional<sys_seconds> next;
      try {
        next = fire_due(now_seconds());
      } catch (...) {
        // The records could not be read (a database away): try again in a second.
        next = now_seconds() + std::chrono::seconds(1);
      }
      lock.lock();
      // Another process may add a cron due sooner: a cluster looks every second.
      const auto wanted = [&] { return stopping_ || woken_; };
      if (shared_lock_) {
        auto until = std::chrono::system_clock::now() + std::chrono::seconds(1);
        if (next && *next < until) until = *next;
        changed_.wait_until(lock, until, wanted);
      } else if (next) {
        changed_.wait_until(lock, *next, wanted);
      } else {
        changed_.wait(lock, wanted);
      }
      woken_ = false;
    }
  });
}

void Crons::stop() {
  {
    std::lock_guard guard(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void Crons::wake() {
  {
    std::lock_guard guard(mu_);
    woken_ = true;
  }
  changed_.notify_all();
}

std::pair<std::unique_lock<std::mutex>, std::shared_ptr<void>> Crons::lock(
    const std::string& cron_id) {
  std::unique_lock local(change_mu_);
  std::shared_ptr<void> shared = shared_lock_ ? shared_lock_("sg_cron:" + cron_id) : nullptr;
  return {std::move(local), std::move(shared)};
}

json Crons::require(const std::string& cron_id) const {
  const auto item = records_->get(crons_namespace(), cron_id);
  if (!item) throw ApiError{404, fmt::format("cron '{}' not found", cron_id)};
  return item->value;
}

ApiResponse Crons::create(const std::string& thread_id, const ApiRequest& request,
                          const Access& access) {
  const json body = body_object(request);
  const std::string assistant_id = string_field(body, "assistant_id");
  if (assistant_id.empty()) throw ApiError{422, "'assistant_id' is required"};
  const AssistantRegistry::Resolved resolved = api_.assistant(assistant_id);
  if (!body.contains("schedule") || body["schedule"].is_null()) {
    throw ApiError{422, "'schedule' is required (a cron expression: \"0 9 * * *\")"};
  }
  if (!thread_id.empty()) {
    (void)threads_.require(thread_id);
    if (resolved.graph->graph->checkpointer() == nullptr) {
      throw ApiError{409, fmt::format("graph '{}' was compiled without a checkpointer: it serves "
                                      "stateless runs only",
                                      resolved.graph->graph_id)};
    }
  }
  const std::string now = iso_timestamp_now();
  json record = {{"cron_id", new_uuid4()},
                 {"assistant_id", resolved.assistant["assistant_id"]},
                 {"thread_id", thread_id.empty() ? json() : json(thread_id)},
                 {"on_run_completed", json()},
                 {"end_time", json()},
                 {"schedule", json()},
                 {"timezone", json()},
                 {"created_at", now},
                 {"updated_at", now},
                 {"payload", json::object()},
                 {"user_id", request.user ? json(request.user->identity) : json()},
                 {"next_run_date", json()},
                 {"metadata", access.metadata_or(metadata_field(body))},
                 {"enabled", true}};
  read_schedule_fields(body, record);
  if (thread_id.empty()) {
    record["on_run_completed"] = one_of(body, "on_run_completed", {"delete", "keep"});
  }
  json& payload = record["payload"];
  payload["assistant_id"] = assistant_id;
  read_payload_fields(body, payload);
  if (request.user) {  // the runs it makes run as its creator
    json& configurable = payload["config"]["configurable"];
    if (!configurable.is_object()) configurable = json::object();
    request.user->add_to_configurable(configurable);
  }
  resolved.graph->graph->check_input(payload.value("input", json()), json());
  schedule_next(record, now_seconds());
  {
    auto held = lock(record["cron_id"]);
    records_->put(crons_namespace(), record["cron_id"], record);
  }
  wake();
  return json_response(view(std::move(record)));
}

ApiResponse Crons::update(const std::string& cron_id, const ApiRequest& request,
                          const Access& access) {
  const json body = body_object(request);
  json record;
  {
    auto held = lock(cron_id);
    record = require(cron_id);
    if (!access.allows(record["metadata"])) {
      throw ApiError{404, fmt::format("cron '{}' not found", cron_id)};
    }
    read_schedule_fields(body, record);
    if (const auto it = body.find("on_run_completed"); it != body.end() && !it->is_null()) {
      if (!record["thread_id"].is_null()) {
        throw ApiError{422, "'on_run_completed' applies to stateless crons only"};
      }
      record["on_run_completed"] = one_of(body, "on_run_completed", {"delete", "keep"});
    }
    json payload = record["payload"];
    read_payload_fields(body, payload);
    const AssistantRegistry::Resolved resolved = api_.assistant(record["assistant_id"]);
    resolved.graph->graph->check_input(payload.value("input", json()), json());
    record["payload"] = std::move(payload);
    if (const auto it = body.find("metadata");
        (it != body.end() && !it->is_null()) || !access.value.is_null()) {
      const json metadata = access.metadata_or(metadata_field(body));
      for (const auto& [key, value] : metadata.items()) record["metadata"][key] = value;
    }
    schedule_next(record, now_seconds());
    record["updated_at"] = iso_timestamp_now();
    records_->put(crons_namespace(), cron_id, record);
  }
  wake();
  return json_response(view(std::move(record)));
}

void Crons::remove(const std::string& cron_id, const Access& access) {
  auto held = lock(cron_id);
  if (!access.allows(require(cron_id)["metadata"])) {
    throw ApiError{404, fmt::format("cron '{}' not found", cron_id)};
  }
  records_->remove(crons_namespace(), cron_id);
}

void Crons::remove_thread(const std::string& thread_id) {
  for (const auto& item : all_records(*records_, crons_namespace())) {
    if (item.item.value.value("thread_id", json()) == thread_id) {
      auto held = lock(item.item.key);
      records_->remove(crons_namespace(), item.item.key);
    }
  }
}

std::vector<json> Crons::matching(const json& body, const Access& access) const {
  std::string assistant_id = string_field(body, "assistant_id");
  if (!assistant_id.empty() && !is_uuid(assistant_id)) {
    // A graph id names its system assistant, as in a run.
    try {
      assistant_id = api_.assistant(assistant_id).assistant["assistant_id"];
    } catch (const ApiError&) {
      return {};  // no such assistant: no cron of it
    }
  }
  const std::string thread_id = string_field(body, "thread_id");
  const json metadata = metadata_field(body);
  std::optional<bool> enabled;
  if (const auto it = body.find("enabled"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) throw ApiError{422, "'enabled' must be a boolean"};
    enabled = it->get<bool>();
  }
  std::vector<json> out;
  for (auto& item : all_records(*records_, crons_namespace())) {
    const json& cron = item.item.value;
    if (!assistant_id.empty() && cron.value("assistant_id", "") != assistant_id) continue;
    if (!thread_id.empty() && cron.value("thread_id", json()) != thread_id) continue;
    if (enabled && cron.value("enabled", true) != *enabled) continue;
    if (!contains(cron.value("metadata", json::object()), metadata)) continue;
    if (!access.allows(cron.value("metadata", json::object()))) continue;
    out.push_back(view(std::move(item.item.value)));
  }
  return out;
}

ApiResponse Crons::search(const ApiRequest& request, const Access& access) const {
  const json body = body_object(request);
  const SearchPage page = search_page(
      body, {"cron_id", "assistant_id", "thread_id", "created_at", "updated_at", "next_run_date"});
  // "now", a field to select: the server's time, to compare next_run_date with.
  const bool with_now =
      std::find(page.select.begin(), page.select.end(), "now") != page.select.end();
  const std::string now = iso_timestamp_now();
  return paged_response(matching(body, access), page, [&](json& cron) {
    if (with_now) cron["now"] = now;
  });
}

ApiResponse Crons::count(const ApiRequest& request, const Access& access) const {
  return json_response(matching(body_object(request), access).size());
}

std::optional<sys_seconds> Crons::fire_due(sys_seconds now) {
  std::optional<sys_seconds> earliest;
  for (const auto& item : all_records(*records_, crons_namespace())) {
    const json& next = item.item.value.value(kNextField, json());
    if (!next.is_number_integer()) continue;
    const sys_seconds due{std::chrono::seconds(next.get<std::int64_t>())};
    const std::optional<sys_seconds> next_due = due <= now ? fire(item.item.key, now) : due;
    if (next_due && (!earliest || *next_due < *earliest)) earliest = next_due;
  }
  return earliest;
}

std::optional<sys_seconds> Crons::fire(const std::string& cron_id, sys_seconds now) {
  auto held = lock(cron_id);
  // Read again under the lock: another process may have fired it, or a client changed it.
  const auto item = records_->get(crons_namespace(), cron_id);
  if (!item) return std::nullopt;
  json record = item->value;
  const json& next = record.value(kNextField, json());
  if (!next.is_number_integer()) return std::nullopt;
  if (next.get<std::int64_t>() > now.time_since_epoch().count()) {
    return sys_seconds(std::chrono::seconds(next.get<std::int64_t>()));
  }
  json body = record["payload"];
  const bool stateless = record["thread_id"].is_null();
  if (stateless) body["on_completion"] = record.value("on_run_completed", "delete");
  ApiRequest request;
  request.method = "POST";
  request.body = body.dump();
  try {
    (void)runs_.create(stateless ? std::string() : record["thread_id"].get<std::string>(), request,
                       std::nullopt);
  } catch (const ApiError&) {
    // The run was refused (its thread is busy and the strategy rejects, or its assistant went):
    // this due time passes, the next one tries again, as a client's request would.
  }
  schedule_next(record, now);
  records_->put(crons_namespace(), cron_id, record);
  const json& after = record[kNextField];
  if (!after.is_number_integer()) return std::nullopt;
  return sys_seconds(std::chrono::seconds(after.get<std::int64_t>()));
}

// ---- Api: cron routes ---------------------------------------------------------------------------

ApiResponse Api::route_crons(const ApiRequest& request) const {
  const auto& p = request.path;
  const std::string& m = request.method;
  if (p.size() == 2) return crons_->create({}, request, cron_access(request, {}));
  if (p.size() == 3 && (p[2] == "search" || p[2] == "count")) {
    const Access access = authorize(request, "crons", "search", [&] {
      return body_fields(body_object(request),
                         {"assistant_id", "thread_id", "metadata", "limit", "offset"});
    });
    return p[2] == "search" ? crons_->search(request, access) : crons_->count(request, access);
  }
  if (p.size() == 3 && m == "PATCH") {
    const Access access = authorize(request, "crons", "update", [&] {
      json value = body_object(request);
      value["cron_id"] = p[2];
      if (!value.contains("metadata")) value["metadata"] = json::object();
      return value;
    });
    return crons_->update(p[2], request, access);
  }
  if (p.size() == 3 && m == "DELETE") {
    crons_->remove(p[2], authorize(request, "crons", "delete", [&] {
                     return json{{"cron_id", p[2]}};
                   }));
    return no_content();
  }
  throw no_route(request);
}

}  // namespace sg::server
