// SPDX-License-Identifier: MIT
// A request's authorization (api.hpp): Access, the handler of an action run for the request's user,
// and the accesses of thread, run and cron requests.
#include <fmt/format.h>

#include "api.hpp"

namespace sg::server {

namespace {
using nlohmann::json;
}  // namespace

json Access::metadata_or(const json& given) const {
  return value.is_null() ? given : metadata_field(value);
}

Access Api::run_auth_handler(const AuthUser& user, std::string_view resource,
                             std::string_view action, json value) const {
  Access access;
  try {
    access.filters = auth_->authorize(user, resource, action, value);
  } catch (const HttpException& e) {
    throw ApiError{e.status(), e.what()};
  }
  access.value = std::move(value);
  return access;
}

json Api::thread_access(const ApiRequest& request, const std::string& thread_id,
                        std::string_view action) const {
  const Access access = authorize(request, "threads", action, [&] {
    return json{{"thread_id", thread_id}};
  });
  json thread = threads_->require(thread_id);
  if (!access.allows(thread["metadata"])) {
    throw ApiError{404, fmt::format("thread '{}' not found", thread_id)};
  }
  return thread;
}

Access Api::create_run_access(const ApiRequest& request, const std::string& thread_id) const {
  return authorize(request, "threads", "create_run", [&] {
    const json body = body_object(request);
    return json{
        {"thread_id", thread_id.empty() ? json() : json(thread_id)},
        {"assistant_id", body.value("assistant_id", json())},
        {"run_id", nullptr},
        {"status", "pending"},
        {"metadata", metadata_field(body)},
        {"prevent_insert_if_inflight", body.value("multitask_strategy", json()) == "reject"},
        {"multitask_strategy", body.value("multitask_strategy", json("reject"))},
        {"if_not_exists", body.value("if_not_exists", json("reject"))},
        {"after_seconds", body.value("after_seconds", json(0))},
        {"kwargs", body_fields(body, {"input", "command", "config", "context", "stream_mode",
                                      "interrupt_before", "interrupt_after", "webhook"})}};
  });
}

Access Api::cron_access(const ApiRequest& request, const std::string& thread_id) const {
  return authorize(request, "crons", "create", [&] {
    json body = body_object(request);
    json value = body_fields(body, {"schedule", "end_time"});
    value["cron_id"] = nullptr;
    value["thread_id"] = thread_id.empty() ? json() : json(thread_id);
    value["metadata"] = metadata_field(body);
    body.erase("schedule");
    body.erase("end_time");
    body.erase("metadata");
    value["payload"] = std::move(body);
    return value;
  });
}

}  // namespace sg::server
