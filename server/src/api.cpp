// SPDX-License-Identifier: MIT
// The LangGraph Server API endpoints, apart from the network (api.hpp).
#include "api.hpp"

#include <stategraph/core/error.hpp>
#include <stategraph/core/version.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>

#include "crons.hpp"
#include "periodic.hpp"
#include "telemetry.hpp"

namespace sg::server {

namespace {

using nlohmann::json;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// Percent-decodes `text` ('+' is a space in a query, not in a path).
std::string decode(std::string_view text, bool query) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      const int hi = i + 2 < text.size() ? hex_value(text[i + 1]) : -1;
      const int lo = i + 2 < text.size() ? hex_value(text[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        throw ApiError{400, fmt::format("malformed percent escape in '{}'", text)};
      }
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (c == '+' && query) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

/// Only the `select`ed fields of `object` (all when `select` is empty).
json selected(const json& object, const std::vector<std::string>& select) {
  if (select.empty()) return object;
  json out = json::object();
  for (const auto& field : select) {
    if (const auto it = object.find(field); it != object.end()) out[field] = *it;
  }
  return out;
}

}  // namespace

std::int64_t int_field(const json& body, const char* name, std::int64_t fallback, std::int64_t low,
                       std::int64_t high) {
  const auto it = body.find(name);
  if (it == body.end() || it->is_null()) return fallback;
  if (!it->is_number_integer()) {
    throw ApiError{422, fmt::format("'{}' must be an integer, got {}", name, it->dump())};
  }
  const auto value = it->get<std::int64_t>();
  if (value < low || value > high) {
    throw ApiError{422,
                   fmt::format("'{}' must be between {} and {}, got {}", name, low, high, value)};
  }
  return value;
}

ApiError no_route(const ApiRequest& request) {
  return {404, fmt::format("no route for {} /{}", request.method, fmt::join(request.path, "/"))};
}

ApiError method_not_allowed(const ApiRequest& request) {
  return {405,
          fmt::format("{} is not allowed on /{}", request.method, fmt::join(request.path, "/"))};
}

bool query_flag(const ApiRequest& request, const char* name) {
  const auto it = request.query.find(name);
  return it != request.query.end() && (it->second == "1" || it->second == "true");
}

json interrupts_json(const std::vector<Interrupt>& interrupts) {
  json out = json::array();
  for (const auto& i : interrupts) out.push_back({{"value", i.value}, {"id", i.id}});
  return out;
}

std::string string_field(const json& body, const char* name) {
  const auto it = body.find(name);
  if (it == body.end() || it->is_null()) return {};
  if (!it->is_string()) {
    throw ApiError{422, fmt::format("'{}' must be a string, got {}", name, it->dump())};
  }
  return it->get<std::string>();
}

std::vector<std::string> string_list_field(const json& body, const char* name,
                                           std::string_view what) {
  std::vector<std::string> out;
  const auto it = body.find(name);
  if (it == body.end() || it->is_null()) return out;
  const auto fail = [&] {
    return ApiError{422, fmt::format("'{}' must be an array of {}", name, what)};
  };
  if (!it->is_array()) throw fail();
  for (const auto& item : *it) {
    if (!item.is_string()) throw fail();
    out.push_back(item.get<std::string>());
  }
  return out;
}

json metadata_field(const json& body) {
  const auto it = body.find("metadata");
  if (it == body.end() || it->is_null()) return json::object();
  if (!it->is_object()) throw ApiError{422, "'metadata' must be an object"};
  return *it;
}

json body_fields(const json& body, std::initializer_list<const char*> names) {
  json out = json::object();
  for (const char* name : names) out[name] = body.value(name, json());
  return out;
}

bool contains(const json& object, const json& subset) {
  if (!subset.is_object()) return true;
  for (auto it = subset.begin(); it != subset.end(); ++it) {
    const auto found = object.find(it.key());
    if (found == object.end() || *found != it.value()) return false;
  }
  return true;
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

SearchPage search_page(const json& body, const std::vector<std::string>& sortable) {
  SearchPage page;
  page.limit = int_field(body, "limit", 10, 1, 1000);
  page.offset = int_field(body, "offset", 0, 0, std::numeric_limits<std::int32_t>::max());
  page.sort_by = string_field(body, "sort_by");
  if (page.sort_by.empty()) page.sort_by = "created_at";
  if (std::find(sortable.begin(), sortable.end(), page.sort_by) == sortable.end()) {
    throw ApiError{422, fmt::format("'sort_by' must be one of {}, got '{}'",
                                    fmt::join(sortable, ", "), page.sort_by)};
  }
  const std::string order = string_field(body, "sort_order");
  if (!order.empty() && order != "asc" && order != "desc") {
    throw ApiError{422, fmt::format("'sort_order' must be asc or desc, got '{}'", order)};
  }
  page.ascending = order == "asc";
  page.select = string_list_field(body, "select", "field names");
  return page;
}

ApiResponse paged_response(std::vector<json> items, const SearchPage& page,
                           const std::function<void(json&)>& decorate) {
  std::stable_sort(items.begin(), items.end(), [&](const json& a, const json& b) {
    const json& x = a.value(page.sort_by, json());
    const json& y = b.value(page.sort_by, json());
    return page.ascending ? x < y : y < x;
  });
  json out = json::array();
  const auto total = static_cast<std::int64_t>(items.size());
  for (std::int64_t i = page.offset; i < total && i < page.offset + page.limit; ++i) {
    json& item = items[static_cast<std::size_t>(i)];
    if (decorate) decorate(item);
    out.push_back(selected(item, page.select));
  }
  ApiResponse response = json_response(out);
  response.headers.emplace_back("X-Pagination-Total", std::to_string(total));
  if (page.offset + page.limit < total) {
    response.headers.emplace_back("X-Pagination-Next", std::to_string(page.offset + page.limit));
  }
  return response;
}

// ---- RunChannel --------------------------------------------------------------------------------

void RunChannel::publish(std::string mode, std::string name, const json& data) {
  publish_text({std::move(mode), std::move(name),
                data.dump(-1, ' ', false, json::error_handler_t::replace)});
}

void RunChannel::publish_text(Event event) {
  std::unique_lock lock(mu_);
  events_.push_back(std::move(event));
  if (sink_) sink_(events_.back());  // in order: under the lock
  wake(lock);
}

void RunChannel::forward_to(std::function<void(const Event&)> sink) {
  std::lock_guard lock(mu_);
  sink_ = std::move(sink);
  forwarding_ = static_cast<bool>(sink_);
}

void RunChannel::finish(const json& result) {
  std::unique_lock lock(mu_);
  done_ = true;
  result_ = result.dump(-1, ' ', false, json::error_handler_t::replace);
  wake(lock);
}

void RunChannel::wake(std::unique_lock<std::mutex>& lock) {
  std::vector<std::function<void()>> waiters;
  waiters.swap(waiters_);
  lock.unlock();
  for (auto& notify : waiters) notify();
}

bool RunChannel::poll(std::size_t from, std::vector<Event>& out, std::string* result,
                      std::function<void()> notify) {
  std::lock_guard lock(mu_);
  for (std::size_t i = from; i < events_.size(); ++i) out.push_back(events_[i]);
  if (done_) {
    if (result != nullptr) *result = result_;
    return true;
  }
  if (from >= events_.size() && notify) waiters_.push_back(std::move(notify));
  return false;
}

std::shared_ptr<void> RunChannel::listen() {
  ++listeners_;
  return {this, [](RunChannel* channel) { --channel->listeners_; }};
}

bool RunChannel::done() {
  std::lock_guard lock(mu_);
  return done_;
}

std::size_t RunChannel::published() {
  std::lock_guard lock(mu_);
  return events_.size();
}

std::vector<SearchItem> all_records(Store& records, const Namespace& ns) {
  return records.search({.prefix = ns, .limit = std::numeric_limits<std::size_t>::max()});
}

const Namespace& threads_namespace() {
  static const Namespace ns{"stategraph", "threads"};
  return ns;
}

Namespace runs_namespace(const std::string& thread_id) {
  return {"stategraph", "runs", thread_id};
}

const Namespace& active_runs_namespace() {
  static const Namespace ns{"stategraph", "active_runs"};
  return ns;
}

const Namespace& thread_ttls_namespace() {
  static const Namespace ns{"stategraph", "thread_ttls"};
  return ns;
}

const Namespace& assistants_namespace() {
  static const Namespace ns{"stategraph", "assistants"};
  return ns;
}

Namespace assistant_versions_namespace(const std::string& assistant_id) {
  return {"stategraph", "assistant_versions", assistant_id};
}

namespace {

bool is_message_type(const json& type) {
  if (!type.is_string()) return false;
  const auto& t = type.get_ref<const std::string&>();
  return t == "human" || t == "ai" || t == "system" || t == "tool" || t == "AIMessageChunk" ||
         t == "function" || t == "remove";
}

}  // namespace

void add_langchain_defaults(json& value) {
  if (value.is_array()) {
    for (auto& item : value) add_langchain_defaults(item);
    return;
  }
  if (!value.is_object()) return;
  const auto type = value.find("type");
  if (type != value.end() && is_message_type(*type) && value.contains("content")) {
    if (!value.contains("additional_kwargs")) value["additional_kwargs"] = json::object();
    if (!value.contains("response_metadata")) value["response_metadata"] = json::object();
    if (*type == "ai" || *type == "AIMessageChunk") {
      if (!value.contains("tool_calls")) value["tool_calls"] = json::array();
      if (!value.contains("invalid_tool_calls")) value["invalid_tool_calls"] = json::array();
    }
    return;
  }
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (it->is_structured()) add_langchain_defaults(*it);
  }
}

ApiResponse error_response(unsigned status, std::string_view detail) {
  return json_response(json{{"detail", detail}}, status);
}

ApiResponse json_response(const json& value, unsigned status) {
  ApiResponse response;
  response.status = status;
  response.body = value.dump(-1, ' ', false, json::error_handler_t::replace);
  return response;
}

ApiRequest parse_target(std::string method, std::string_view target, std::string body) {
  ApiRequest request;
  request.method = std::move(method);
  request.body = std::move(body);
  const auto question = target.find('?');
  const std::string_view path = target.substr(0, question);
  std::size_t at = 0;
  while (at < path.size()) {
    while (at < path.size() && path[at] == '/') ++at;
    if (at >= path.size()) break;
    const auto end = std::min(path.find('/', at), path.size());
    request.path.push_back(decode(path.substr(at, end - at), false));
    at = end;
  }
  if (question != std::string_view::npos) {
    std::string_view query = target.substr(question + 1);
    while (!query.empty()) {
      const auto amp = std::min(query.find('&'), query.size());
      const std::string_view pair = query.substr(0, amp);
      if (!pair.empty()) {
        const auto eq = pair.find('=');
        request.query.emplace(
            decode(pair.substr(0, eq), true),
            eq == std::string_view::npos ? std::string() : decode(pair.substr(eq + 1), true));
      }
      query.remove_prefix(std::min(amp + 1, query.size()));
    }
  }
  return request;
}

json body_object(const ApiRequest& request) {
  if (std::all_of(request.body.begin(), request.body.end(),
                  [](unsigned char c) { return std::isspace(c) != 0; })) {
    return json::object();
  }
  json body = json::parse(request.body, nullptr, false);
  if (body.is_discarded()) throw ApiError{422, "the request body is not valid JSON"};
  if (!body.is_object()) {
    throw ApiError{422,
                   fmt::format("the request body must be a JSON object, got {}", body.type_name())};
  }
  return body;
}

Api::Api(std::vector<GraphEntry> graphs, std::shared_ptr<Store> records,
         std::shared_ptr<Store> store, RunLimits limits, const ClusterOptions* cluster,
         ThreadTtlOptions ttl, std::shared_ptr<const Auth> auth,
         std::shared_ptr<ServerTelemetry> telemetry)
    : auth_(std::move(auth)),
      graphs_(std::move(graphs)),
      assistants_(std::make_unique<AssistantRegistry>(graphs_, records)),
      threads_(std::make_unique<ThreadRegistry>(records)),
      store_(std::move(store)),
      telemetry_(telemetry ? std::move(telemetry)
                           : std::make_shared<ServerTelemetry>(ServerOptions{})),
      runs_(std::make_unique<RunManager>(*this, *threads_, records, limits, cluster)) {
  telemetry_->watch_store(store_);
  telemetry_->add_gauge(
      "stategraph_runs_pending", "Runs waiting to start (a cluster's: all)",
      [runs = runs_.get()] { return static_cast<double>(runs->counts().pending); });
  telemetry_->add_gauge(
      "stategraph_runs_running", "Runs executing (a cluster's: all)",
      [runs = runs_.get()] { return static_cast<double>(runs->counts().running); });
  Crons::SharedLock lock;
  if (runs_->clustered()) {
    lock = [runs = runs_.get()](const std::string& key) { return runs->lock_shared(key); };
  }
  crons_ = std::make_unique<Crons>(*this, *runs_, *threads_, std::move(records), std::move(lock));
  crons_->start();
  ttl_ = ttl;
  sweeper_ = std::make_unique<Periodic>();
  sweeper_->start(std::max(ttl_.sweep_interval, std::chrono::milliseconds(1)),
                  [this] { (void)sweep_expired_threads(std::chrono::system_clock::now()); });
}

Api::~Api() {
  shutdown();
}

void Api::shutdown(std::chrono::milliseconds grace) {
  if (sweeper_) sweeper_->stop();
  if (crons_) crons_->stop();  // no cron creates a run from now on
  if (runs_) runs_->shutdown(grace);
}

void Api::set_self(std::string base_url, std::string api_key) {
  runs_->webhooks().set_self(std::move(base_url), std::move(api_key));
}

ThreadPool* Api::blocking_pool() const noexcept {
  return runs_->blocking_pool();
}

ApiResponse Api::handle(const ApiRequest& request) const {
  // The route table decides 404 and 405; the handlers see only the methods their path takes.
  const std::string_view allow = allowed_methods(request.path);
  if (allow.empty()) return error_response(404, no_route(request).detail);
  if (request.method == "OPTIONS" || !method_allowed(allow, request.method)) {
    ApiResponse response = request.method == "OPTIONS"
                               ? no_content()
                               : error_response(405, method_not_allowed(request).detail);
    response.headers.emplace_back("Allow", allow);
    return response;
  }
  try {
    return route(request);
  } catch (const ApiError& e) {
    return error_response(e.status, e.detail);
  } catch (const InvalidUpdateError& e) {
    return error_response(400, e.what());  // an update the graph refuses (update_state)
  } catch (const Error& e) {
    // Bad input the library refused is the client's; anything else (storage) is the server's.
    const bool bad_input = e.code() == errc::kInvalidArgument ||
                           e.code() == errc::kInvalidMessage ||
                           e.code() == errc::kInvalidNamespace || e.code() == errc::kInvalidFilter;
    return error_response(bad_input ? 422 : 500, e.what());
  } catch (const json::exception& e) {
    return error_response(422, e.what());
  } catch (const std::exception& e) {
    return error_response(500, e.what());
  }
}

ApiResponse Api::route(const ApiRequest& request) const {
  const auto& p = request.path;
  const std::string& m = request.method;
  if (p.size() == 1 && p[0] == "ok") {
    // A readiness probe: ?check_db=1 reads the thread records (the database of a deployment).
    if (query_flag(request, "check_db")) {
      try {
        (void)threads_->lookup("00000000-0000-0000-0000-000000000000");
      } catch (const std::exception& e) {
        return error_response(503, fmt::format("the database does not answer: {}", e.what()));
      }
    }
    return json_response({{"ok", true}});
  }
  if (p.size() == 1 && p[0] == "metrics") {
    ApiResponse metrics;
    metrics.body = telemetry_->render();
    metrics.content_type = std::string(kPrometheusContentType);
    return metrics;
  }
  if (p.size() == 1 && p[0] == "info") {
    return json_response({{"version", kVersion},
                          {"context", "cpp"},
                          {"flags", {{"assistants", true}, {"crons", true}}}});
  }
  if (!p.empty() && p[0] == "threads") return route_threads(request);
  if (!p.empty() && p[0] == "store") return route_store(request);
  if (!p.empty() && p[0] == "runs") {
    if (p.size() == 1 && m == "POST") {
      return runs_->create({}, request, std::nullopt, create_run_access(request, {}));
    }
    if (p.size() == 2 && p[1] == "stream" && m == "POST") {
      return runs_->create({}, request, RunFollow::Kind::stream, create_run_access(request, {}));
    }
    if (p.size() == 2 && p[1] == "wait" && m == "POST") {
      return runs_->create({}, request, RunFollow::Kind::result, create_run_access(request, {}));
    }
    if (p.size() == 2 && p[1] == "cancel" && m == "POST") {
      if (!authorizing(request)) return runs_->cancel_many(request);
      const json body = body_object(request);
      const Access access = authorize(request, "threads", "update", [&] {
        return json{{"thread_id", body.value("thread_id", json())},
                    {"action", request.query.count("action") != 0
                                   ? json(request.query.find("action")->second)
                                   : json("interrupt")},
                    {"metadata",
                     {{"run_ids", body.value("run_ids", json())},
                      {"status", body.value("status", json())}}}};
      });
      return runs_->cancel_many(request, [&](const std::string& thread_id) {
        const std::optional<json> thread = threads_->lookup(thread_id);
        return thread && access.allows((*thread)["metadata"]);
      });
    }
    if (p.size() >= 2 && p[1] == "crons") return route_crons(request);
  }
  if (!p.empty() && p[0] == "assistants") return route_assistants(request);
  if (p.size() == 1 && p[0] == "mcp") return route_mcp(request);
  throw no_route(request);
}

}  // namespace sg::server
