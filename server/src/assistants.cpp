// SPDX-License-Identifier: MIT
// Assistants of the LangGraph Server API: the system assistant of each served graph (fixed,
// uuid5 of the graph id) and the assistants clients create for a graph with their own config,
// context and metadata. Every change to a created assistant is a new version; any version can be
// made the latest again. Created assistants live in the server's record store
// (assistants_namespace() and assistant_versions_namespace() in api.hpp).
#include <stategraph/core/time.hpp>
#include <stategraph/core/uuid.hpp>
#include <stategraph/server/graph_picture.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>

#include "api.hpp"

namespace sg::server {

namespace {

using nlohmann::json;

/// Versions are keyed so that the store lists them in order.
std::string version_key(std::int64_t version) {
  return fmt::format("{:010d}", version);
}

/// An optional object field (config, context): `{}` when absent or null; 422 otherwise.
json object_field(const json& body, const char* name) {
  const auto it = body.find(name);
  if (it == body.end() || it->is_null()) return json::object();
  if (!it->is_object()) {
    throw ApiError{422, fmt::format("'{}' must be an object, got {}", name, it->dump())};
  }
  return *it;
}

/// Whether `name` contains `part`, ignoring ASCII case (the JS server's name filter).
bool contains_ignoring_case(const std::string& name, const std::string& part) {
  const auto same = [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) ==
           std::tolower(static_cast<unsigned char>(b));
  };
  return std::search(name.begin(), name.end(), part.begin(), part.end(), same) != name.end();
}

/// The version entry of an assistant as it is now.
json version_of(const json& assistant) {
  json v = assistant;
  v.erase("updated_at");
  v["created_at"] = assistant["updated_at"];
  return v;
}

bool is_system(const json& assistant) {
  const auto m = assistant.find("metadata");
  return m != assistant.end() && m->is_object() && m->value("created_by", "") == "system";
}

}  // namespace

AssistantRegistry::AssistantRegistry(const std::vector<GraphEntry>& graphs,
                                     std::shared_ptr<Store> records)
    : graphs_(graphs), records_(std::move(records)) {}

const GraphEntry* AssistantRegistry::served(const std::string& graph_id) const {
  for (const auto& g : graphs_) {
    if (g.graph_id == graph_id) return &g;
  }
  return nullptr;
}

const GraphEntry& AssistantRegistry::graph(const std::string& graph_id) const {
  if (const GraphEntry* g = served(graph_id)) return *g;
  throw ApiError{404, fmt::format("graph '{}' not found", graph_id)};
}

std::optional<json> AssistantRegistry::created(const std::string& assistant_id) const {
  auto item = records_->get(assistants_namespace(), assistant_id);
  if (!item) return std::nullopt;
  return std::move(item->value);
}

AssistantRegistry::Resolved AssistantRegistry::resolve(const std::string& id) const {
  for (const auto& g : graphs_) {
    if (g.assistant["assistant_id"] == id || g.graph_id == id) return {&g, g.assistant};
  }
  if (is_uuid(id)) {
    if (auto assistant = created(id)) {
      const auto graph_id = assistant->value("graph_id", std::string());
      if (const GraphEntry* g = served(graph_id)) return {g, *std::move(assistant)};
      throw ApiError{
          409, fmt::format("assistant '{}' runs graph '{}', which is not served", id, graph_id)};
    }
  }
  throw ApiError{404, fmt::format("assistant '{}' not found", id)};
}

json AssistantRegistry::require_created(const std::string& id, std::string_view change) const {
  const Resolved found = resolve(id);
  if (is_system(found.assistant)) {
    throw ApiError{409, fmt::format("the system assistant of graph '{}' cannot be {}: create an "
                                    "assistant for the graph instead",
                                    found.graph->graph_id, change)};
  }
  return found.assistant;
}

ApiResponse AssistantRegistry::create(const ApiRequest& request, const Access& access) {
  const json body = body_object(request);
  const std::string graph_id = string_field(body, "graph_id");
  if (graph_id.empty()) throw ApiError{422, "'graph_id' is required"};
  (void)graph(graph_id);
  std::string id = string_field(body, "assistant_id");
  if (id.empty()) id = new_uuid4();
  if (!is_uuid(id)) throw ApiError{422, fmt::format("assistant id '{}' is not a UUID", id)};
  std::string if_exists = string_field(body, "if_exists");
  if (if_exists.empty()) if_exists = "raise";
  if (if_exists != "raise" && if_exists != "do_nothing") {
    throw ApiError{422,
                   fmt::format("'if_exists' must be raise or do_nothing, got '{}'", if_exists)};
  }
  std::string name = string_field(body, "name");
  if (name.empty()) name = "Untitled";
  const std::string description = string_field(body, "description");
  const std::string now = iso_timestamp_now();
  json assistant = {{"assistant_id", id},
                    {"graph_id", graph_id},
                    {"config", object_field(body, "config")},
                    {"context", object_field(body, "context")},
                    {"metadata", access.metadata_or(metadata_field(body))},
                    {"name", name},
                    {"description", description.empty() ? json() : json(description)},
                    {"version", 1},
                    {"created_at", now},
                    {"updated_at", now}};
  std::lock_guard lock(mu_);
  for (const auto& g : graphs_) {
    if (g.assistant["assistant_id"] != id) continue;
    if (if_exists == "do_nothing" && access.allows(g.assistant["metadata"])) {
      return json_response(g.assistant);
    }
    throw ApiError{409, fmt::format("assistant '{}' already exists", id)};
  }
  if (auto existing = created(id)) {
    if (if_exists == "do_nothing" && access.allows((*existing)["metadata"])) {
      return json_response(*existing);
    }
    throw ApiError{409, fmt::format("assistant '{}' already exists", id)};
  }
  records_->put(assistant_versions_namespace(id), version_key(1), version_of(assistant));
  records_->put(assistants_namespace(), id, assistant);
  return json_response(assistant);
}

ApiResponse AssistantRegistry::patch(const std::string& id, const ApiRequest& request,
                                     const Access& access) {
  const json body = body_object(request);
  std::lock_guard lock(mu_);
  json assistant = require_created(id, "changed");
  if (const std::string graph_id = string_field(body, "graph_id"); !graph_id.empty()) {
    (void)graph(graph_id);
    assistant["graph_id"] = graph_id;
  }
  for (const char* name : {"config", "context"}) {
    if (body.contains(name) && !body[name].is_null()) assistant[name] = object_field(body, name);
  }
  for (const char* name : {"name", "description"}) {
    if (std::string value = string_field(body, name); !value.empty()) assistant[name] = value;
  }
  const json metadata = access.metadata_or(metadata_field(body));
  for (auto it = metadata.begin(); it != metadata.end(); ++it) {
    assistant["metadata"][it.key()] = *it;
  }
  std::int64_t latest = 0;
  for (const auto& v : all_records(*records_, assistant_versions_namespace(id))) {
    latest = std::max(latest, v.item.value.value("version", std::int64_t{0}));
  }
  assistant["version"] = latest + 1;
  assistant["updated_at"] = iso_timestamp_now();
  records_->put(assistant_versions_namespace(id), version_key(latest + 1), version_of(assistant));
  records_->put(assistants_namespace(), id, assistant);
  return json_response(assistant);
}

void AssistantRegistry::remove(const std::string& id) {
  std::lock_guard lock(mu_);
  const std::string assistant_id = require_created(id, "deleted")["assistant_id"];
  for (const auto& v : all_records(*records_, assistant_versions_namespace(assistant_id))) {
    records_->remove(assistant_versions_namespace(assistant_id), v.item.key);
  }
  records_->remove(assistants_namespace(), assistant_id);
}

std::vector<json> AssistantRegistry::matching(const json& body, const Access& access) const {
  const std::string graph_id = string_field(body, "graph_id");
  const std::string name = string_field(body, "name");
  const json metadata = metadata_field(body);
  std::vector<json> all;
  for (auto& hit : all_records(*records_, assistants_namespace())) {
    all.push_back(std::move(hit.item.value));
  }
  for (const auto& g : graphs_) all.push_back(g.assistant);
  std::vector<json> found;
  for (auto& a : all) {
    if (!graph_id.empty() && a["graph_id"] != graph_id) continue;
    if (!name.empty() && !contains_ignoring_case(a.value("name", ""), name)) continue;
    if (!contains(a["metadata"], metadata) || !access.allows(a["metadata"])) continue;
    found.push_back(std::move(a));
  }
  return found;
}

ApiResponse AssistantRegistry::search(const ApiRequest& request, const Access& access) const {
  const json body = body_object(request);
  const SearchPage page =
      search_page(body, {"assistant_id", "graph_id", "name", "created_at", "updated_at"});
  return paged_response(matching(body, access), page);
}

std::vector<json> AssistantRegistry::all(const Access& access) const {
  return matching(json::object(), access);
}

ApiResponse AssistantRegistry::count(const ApiRequest& request, const Access& access) const {
  return json_response(matching(body_object(request), access).size());
}

std::vector<json> AssistantRegistry::all_versions(const std::string& id) const {
  const Resolved found = resolve(id);
  const std::string assistant_id = found.assistant["assistant_id"];
  if (is_system(found.assistant)) return {version_of(found.assistant)};
  std::vector<json> out;
  for (auto& v : all_records(*records_, assistant_versions_namespace(assistant_id))) {
    out.push_back(std::move(v.item.value));
  }
  std::sort(out.begin(), out.end(), [](const json& a, const json& b) {
    return a.value("version", 0) > b.value("version", 0);
  });
  return out;
}

ApiResponse AssistantRegistry::versions(const std::string& id, const ApiRequest& request) const {
  const json body = body_object(request);
  const std::int64_t limit = int_field(body, "limit", 10, 1, 1000);
  const std::int64_t offset = int_field(body, "offset", 0, 0, std::numeric_limits<int>::max());
  const json metadata = metadata_field(body);
  json out = json::array();
  std::int64_t index = 0;
  for (auto& v : all_versions(id)) {
    if (!contains(v["metadata"], metadata)) continue;
    if (index++ < offset) continue;
    if (static_cast<std::int64_t>(out.size()) == limit) break;
    out.push_back(std::move(v));
  }
  return json_response(out);
}

ApiResponse AssistantRegistry::set_latest(const std::string& id, const ApiRequest& request) {
  const json body = body_object(request);
  const auto it = body.find("version");
  if (it == body.end() || !it->is_number_integer()) {
    throw ApiError{422, "'version' is required and must be an integer"};
  }
  const std::int64_t version = it->get<std::int64_t>();
  std::lock_guard lock(mu_);
  const Resolved found = resolve(id);
  if (is_system(found.assistant)) {
    if (version != 1)
      throw ApiError{404, fmt::format("assistant '{}' has no version {}", id, version)};
    return json_response(found.assistant);
  }
  const std::string assistant_id = found.assistant["assistant_id"];
  auto entry = records_->get(assistant_versions_namespace(assistant_id), version_key(version));
  if (!entry) throw ApiError{404, fmt::format("assistant '{}' has no version {}", id, version)};
  json assistant = found.assistant;
  for (const char* field : {"graph_id", "config", "context", "metadata", "name", "description"}) {
    if (entry->value.contains(field)) assistant[field] = entry->value[field];
  }
  assistant["version"] = version;
  assistant["updated_at"] = iso_timestamp_now();
  records_->put(assistants_namespace(), assistant_id, assistant);
  return json_response(assistant);
}

// ---- Api: assistant routes ----------------------------------------------------------------------

AssistantRegistry::Resolved Api::assistant(const std::string& id) const {
  return assistants_->resolve(id);
}

ApiResponse Api::route_assistants(const ApiRequest& request) const {
  const auto& p = request.path;
  const std::string& m = request.method;
  // The fields of a create or update body a handler sees.
  const auto fields = [&](const std::string& assistant_id) {
    const json body = body_object(request);
    json value = body_fields(body, {"graph_id", "config", "context", "name", "description"});
    value["assistant_id"] =
        assistant_id.empty() ? body.value("assistant_id", json()) : json(assistant_id);
    value["metadata"] = metadata_field(body);
    if (assistant_id.empty()) value["if_exists"] = body.value("if_exists", json());
    return value;
  };
  // With authorization: the assistant `p[1]` when the user may do `action` on it (404 when the
  // handler's filter hides it), and the decision.
  const auto gate = [&](std::string_view action, auto make_value) {
    const Access access = authorize(request, "assistants", action, make_value);
    if (authorizing(request) && !access.allows(assistants_->resolve(p[1]).assistant["metadata"])) {
      throw ApiError{404, fmt::format("assistant '{}' not found", p[1])};
    }
    return access;
  };
  const auto id_only = [&] { return json{{"assistant_id", p[1]}}; };
  if (p.size() == 1) {
    return assistants_->create(
        request, authorize(request, "assistants", "create", [&] { return fields({}); }));
  }
  if (p.size() == 2 && (p[1] == "search" || p[1] == "count")) {
    const Access access = authorize(request, "assistants", "search", [&] {
      return body_fields(body_object(request), {"graph_id", "metadata", "limit", "offset"});
    });
    return p[1] == "search" ? assistants_->search(request, access)
                            : assistants_->count(request, access);
  }
  if (p.size() == 2) {
    if (m == "GET") {
      (void)gate("read", id_only);
      return json_response(assistants_->resolve(p[1]).assistant);
    }
    if (m == "PATCH") {
      return assistants_->patch(p[1], request, gate("update", [&] { return fields(p[1]); }));
    }
    if (m == "DELETE") {
      (void)gate("delete", id_only);
      return delete_assistant(request);
    }
  }
  if (p.size() == 3 && p[2] == "latest") {
    (void)gate("update", [&] {
      return json{{"assistant_id", p[1]},
                  {"version", body_object(request).value("version", json())}};
    });
    return assistants_->set_latest(p[1], request);
  }
  (void)gate("read", id_only);  // the graph, its schemas and subgraphs, the versions
  if (p.size() == 3 && p[2] == "graph") {
    const GraphEntry& entry = *assistants_->resolve(p[1]).graph;
    const auto format = request.query.find("format");
    if (format == request.query.end() || format->second == "json") {
      return json_response(entry.graph->draw_json());
    }
    if (format->second != "svg") {
      throw ApiError{422, fmt::format("format '{}' is not one of json, svg", format->second)};
    }
    return graph_picture(entry);
  }
  if (p.size() == 3 && p[2] == "schemas") {
    const GraphEntry& entry = *assistants_->resolve(p[1]).graph;
    nlohmann::json schemas = entry.graph->schemas();
    schemas["graph_id"] = entry.graph_id;
    return json_response(schemas);
  }
  if (p.size() == 3 && p[2] == "versions") return assistants_->versions(p[1], request);
  if ((p.size() == 3 || p.size() == 4) && p[2] == "subgraphs") {  // /subgraphs[/{namespace}]
    const GraphEntry& entry = *assistants_->resolve(p[1]).graph;
    const std::optional<std::string> ns = p.size() == 4 ? std::optional(p[3]) : std::nullopt;
    return json_response(entry.graph->subgraphs(ns, query_flag(request, "recurse")));
  }
  throw no_route(request);
}

ApiResponse Api::graph_picture(const GraphEntry& entry) const {
  if (!graph_pictures_available()) {
    // A feature this build lacks, not a fault of the request or the server.
    throw ApiError{501,
                   "no SVG picture: this server was built without Graphviz "
                   "(SG_WITH_GRAPHVIZ=OFF); GET /assistants/{id}/graph without format "
                   "returns the graph as JSON"};
  }
  ApiResponse response;
  response.content_type = "image/svg+xml";
  {
    const std::lock_guard lock(pictures_mu_);
    auto& picture = pictures_[entry.graph_id];  // graphs do not change while served
    if (picture.empty()) picture = render_graph_picture(entry.graph->draw_dot(), "svg");
    response.body = picture;
  }
  return response;
}

ApiResponse Api::delete_assistant(const ApiRequest& request) const {
  const std::string& id = request.path[1];
  const std::string assistant_id = assistants_->resolve(id).assistant["assistant_id"];
  if (query_flag(request, "delete_threads")) {
    // Its threads go too: none may be running (checked first, so that nothing is half done).
    const auto threads = threads_->search({{"metadata", {{"assistant_id", assistant_id}}}});
    for (const auto& t : threads) {
      if (runs_->busy(t.value("thread_id", std::string()))) {
        throw ApiError{409, fmt::format("thread '{}' of assistant '{}' has a run in progress",
                                        t.value("thread_id", std::string()), assistant_id)};
      }
    }
    assistants_->remove(id);
    for (const auto& t : threads) (void)delete_thread(t.value("thread_id", std::string()));
  } else {
    assistants_->remove(id);
  }
  return no_content();
}

}  // namespace sg::server
