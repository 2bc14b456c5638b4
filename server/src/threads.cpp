// Threads of the LangGraph Server API: create (if_exists), get, patch (metadata merged), delete,
// search. A thread's record lives in the server's Store under ("stategraph", "threads"), so a
// RocksDbStore keeps threads across restarts.
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

const Namespace& threads_namespace() {
  static const Namespace ns{"stategraph", "threads"};
  return ns;
}

bool is_uuid(std::string_view id) {
  if (id.size() != 36) return false;
  for (std::size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? c != '-' : !std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

void require_uuid(std::string_view id, std::string_view what) {
  if (!is_uuid(id)) {
    throw ApiError{422, fmt::format("{} '{}' is not a UUID", what, id)};
  }
}

}  // namespace

ThreadRegistry::ThreadRegistry(std::shared_ptr<Store> store) : store_(std::move(store)) {}

std::optional<json> ThreadRegistry::find(const std::string& thread_id) const {
  auto item = store_->get(threads_namespace(), thread_id);
  if (!item) return std::nullopt;
  return item->value;
}

json ThreadRegistry::require(const std::string& thread_id) const {
  require_uuid(thread_id, "thread id");
  auto thread = find(thread_id);
  if (!thread) throw ApiError{404, fmt::format("thread '{}' not found", thread_id)};
  return *std::move(thread);
}

ApiResponse ThreadRegistry::create(const ApiRequest& request) {
  const json body = body_object(request);
  const json metadata = metadata_field(body);
  std::string thread_id = string_field(body, "thread_id");
  std::string if_exists = string_field(body, "if_exists");
  if (if_exists.empty()) if_exists = "raise";
  if (if_exists != "raise" && if_exists != "do_nothing") {
    throw ApiError{422, fmt::format("'if_exists' must be raise or do_nothing, got {}",
                                    body["if_exists"].dump())};
  }
  std::lock_guard lock(mu_);
  if (thread_id.empty()) {
    thread_id = new_uuid4();
  } else {
    require_uuid(thread_id, "thread id");
    if (auto existing = find(thread_id)) {
      if (if_exists == "do_nothing") return json_response(*existing);
      throw ApiError{409, fmt::format("thread '{}' already exists", thread_id)};
    }
  }
  const std::string now = iso_timestamp_now();
  json thread = {{"thread_id", thread_id}, {"created_at", now},
                 {"updated_at", now},      {"metadata", metadata},
                 {"status", "idle"},       {"config", json::object()},
                 {"values", nullptr},      {"interrupts", json::object()}};
  store_->put(threads_namespace(), thread_id, thread);
  return json_response(thread);
}

ApiResponse ThreadRegistry::get(const std::string& thread_id) const {
  return json_response(require(thread_id));
}

ApiResponse ThreadRegistry::patch(const std::string& thread_id, const ApiRequest& request) {
  const json body = body_object(request);
  const json metadata = metadata_field(body);
  std::lock_guard lock(mu_);
  json thread = require(thread_id);
  for (auto it = metadata.begin(); it != metadata.end(); ++it) thread["metadata"][it.key()] = *it;
  thread["updated_at"] = iso_timestamp_now();
  store_->put(threads_namespace(), thread_id, thread);
  return json_response(thread);
}

ApiResponse ThreadRegistry::remove(const std::string& thread_id) {
  std::lock_guard lock(mu_);
  (void)require(thread_id);
  store_->remove(threads_namespace(), thread_id);
  ApiResponse response;
  response.status = 204;
  response.content_type.clear();
  return response;
}

ApiResponse ThreadRegistry::search(const ApiRequest& request) const {
  const json body = body_object(request);
  const SearchPage page = search_page(body, {"thread_id", "status", "created_at", "updated_at"});
  const json metadata = metadata_field(body);
  const std::vector<std::string> ids = string_list_field(body, "ids", "thread ids");
  const std::string status = string_field(body, "status");
  std::vector<json> found;
  // Every record, filtered here: fine for thousands of threads; a database index later.
  for (auto& hit : store_->search(
           {.prefix = threads_namespace(), .limit = std::numeric_limits<std::size_t>::max()})) {
    json& t = hit.item.value;
    if (!ids.empty() &&
        std::find(ids.begin(), ids.end(), t.value("thread_id", std::string())) == ids.end()) {
      continue;
    }
    if (!status.empty() && t.value("status", std::string()) != status) continue;
    if (!contains(t["metadata"], metadata)) continue;
    found.push_back(std::move(t));
  }
  return paged_response(std::move(found), page);
}

}  // namespace sg::server
