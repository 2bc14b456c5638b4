// SPDX-License-Identifier: MIT
// The store endpoints of the LangGraph Server API (long-term memory): PUT, GET and DELETE
// /store/items, POST /store/items/search, POST /store/namespaces. They serve ServerOptions::store,
// the store graphs given as a StateGraph also reach; the server's own records live elsewhere.
#include <stategraph/store/store.hpp>

#include <fmt/format.h>

#include <limits>

#include "api.hpp"

namespace sg::server {

namespace {

using nlohmann::json;

/// A namespace field (`string[]`, labels non-empty and without '.'). Throws ApiError 422.
Namespace namespace_field(const json& body, const char* name, bool required) {
  const auto it = body.find(name);
  if (it == body.end() || it->is_null()) {
    if (required) throw ApiError{422, fmt::format("'{}' is required", name)};
    return {};
  }
  Namespace ns = string_list_field(body, name, "strings");
  for (const auto& label : ns) {
    if (label.empty() || label.find('.') != std::string::npos) {
      throw ApiError{422, fmt::format("namespace labels must be non-empty and contain no '.', got "
                                      "'{}' in '{}'",
                                      label, name)};
    }
  }
  if (required && ns.empty()) throw ApiError{422, fmt::format("'{}' must not be empty", name)};
  return ns;
}

/// "a.b.c" (GET's query) as a namespace.
Namespace split_namespace(const std::string& text) {
  Namespace ns;
  std::size_t from = 0;
  while (from <= text.size()) {
    const std::size_t dot = std::min(text.find('.', from), text.size());
    ns.push_back(text.substr(from, dot - from));
    from = dot + 1;
  }
  for (const auto& label : ns) {
    if (label.empty()) throw ApiError{422, fmt::format("bad namespace '{}'", text)};
  }
  return ns;
}

/// What an auth filter of the store matches: the item's value with `namespace` and `key`.
json auth_view(const Namespace& ns, const std::string& key, const json& value) {
  json view = value.is_object() ? value : json::object();
  view["namespace"] = ns;
  if (!key.empty()) view["key"] = key;
  return view;
}

/// What `op` finds (`fetch(op)`: a store's search or list_namespaces) among the entries that
/// `access` allows, paged by op's limit and offset. With a filter it reads the store's unfiltered
/// pages, at most 10,000 entries in all (a 400 past them, as LangGraph).
template <class Op, class Fetch, class Allowed>
auto allowed_page(const Access& access, Op op, Fetch fetch, Allowed allowed) {
  using Entries = decltype(fetch(std::move(op)));
  if (access.filters.is_null()) return fetch(std::move(op));
  constexpr std::size_t kPage = 1000;
  constexpr std::size_t kMaxScan = 10000;
  const std::size_t limit = op.limit;
  const std::size_t offset = op.offset;
  Entries out;
  std::size_t scanned = 0;
  while (out.size() < offset + limit && scanned < kMaxScan) {
    Op page = op;
    page.limit = kPage;
    page.offset = scanned;
    Entries entries = fetch(std::move(page));
    scanned += entries.size();
    const bool last = entries.size() < kPage;
    for (auto& entry : entries) {
      if (allowed(entry)) out.push_back(std::move(entry));
    }
    if (last) break;
    if (scanned >= kMaxScan && out.size() < offset + limit) {
      throw ApiError{400,
                     "the authorized store query scanned 10000 entries: narrow the namespace or "
                     "the filter"};
    }
  }
  if (out.size() <= offset) return Entries{};
  out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(offset));
  if (out.size() > limit) out.resize(limit);
  return out;
}

}  // namespace

ApiResponse Api::route_store(const ApiRequest& request) const {
  const auto& p = request.path;
  const std::string& m = request.method;
  Store& store = *store_;
  if (p.size() == 2 && p[1] == "items") {
    if (m == "PUT") {
      json body = body_object(request);
      (void)namespace_field(body, "namespace", true);
      const Access access = authorize(request, "store", "put", [&] {
        return json{{"namespace", body["namespace"]},
                    {"key", body.value("key", json())},
                    {"value", body.value("value", json())}};
      });
      if (!access.value.is_null()) {  // the handler's namespace, key and value
        for (const char* field : {"namespace", "key", "value"}) body[field] = access.value[field];
      }
      const Namespace ns = namespace_field(body, "namespace", true);
      const std::string key = string_field(body, "key");
      if (key.empty()) throw ApiError{422, "'key' must be a non-empty string"};
      const auto value = body.find("value");
      if (value == body.end() || !value->is_object()) {
        throw ApiError{422, "'value' must be an object"};
      }
      if (!access.filters.is_null()) {
        if (const auto existing = store.get(ns, key, false)) {
          if (!access.allows(auth_view(ns, key, existing->value))) {
            throw ApiError{404, "item not found"};
          }
        }
        if (!access.allows(auth_view(ns, key, *value))) throw ApiError{403, "Not authorized"};
      }
      std::optional<double> ttl;
      if (const auto it = body.find("ttl"); it != body.end() && !it->is_null()) {
        if (!it->is_number() || it->get<double>() <= 0) {
          throw ApiError{422, "'ttl' must be a positive number of minutes"};
        }
        ttl = it->get<double>();
      }
      std::optional<std::vector<std::string>> index;
      if (const auto it = body.find("index"); it != body.end() && !it->is_null()) {
        if (it->is_boolean() && !it->get<bool>()) {
          index.emplace();  // not indexed
        } else {
          index = string_list_field(body, "index", "JSON paths (or false)");
        }
      }
      store.put(ns, key, *value, ttl, std::move(index));
      return no_content();
    }
    if (m == "GET") {
      const auto ns_param = request.query.find("namespace");
      const auto key_param = request.query.find("key");
      if (key_param == request.query.end() || key_param->second.empty()) {
        throw ApiError{422, "the query needs 'key'"};
      }
      Namespace ns = ns_param == request.query.end() || ns_param->second.empty()
                         ? Namespace{}
                         : split_namespace(ns_param->second);
      if (ns.empty()) throw ApiError{422, "the query needs 'namespace'"};
      std::string key = key_param->second;
      const Access access = authorize(request, "store", "get", [&] {
        return json{{"namespace", ns}, {"key", key}};
      });
      if (!access.value.is_null()) {
        ns = namespace_field(access.value, "namespace", true);
        key = string_field(access.value, "key");
      }
      std::optional<bool> refresh_ttl;  // absent: the store's default
      if (request.query.count("refresh_ttl") != 0) refresh_ttl = query_flag(request, "refresh_ttl");
      auto item = store.get(ns, key, refresh_ttl);
      if (item && !access.allows(auth_view(ns, key, item->value))) {
        throw ApiError{404, "item not found"};
      }
      return json_response(item ? to_json(*item) : json());
    }
    if (m == "DELETE") {
      const json body = body_object(request);
      Namespace ns = namespace_field(body, "namespace", true);
      std::string key = string_field(body, "key");
      if (key.empty()) throw ApiError{422, "'key' must be a non-empty string"};
      const Access access = authorize(request, "store", "delete", [&] {
        return json{{"namespace", ns}, {"key", key}};
      });
      if (!access.value.is_null()) {
        ns = namespace_field(access.value, "namespace", true);
        key = string_field(access.value, "key");
      }
      if (!access.filters.is_null()) {
        if (const auto existing = store.get(ns, key, false)) {
          if (!access.allows(auth_view(ns, key, existing->value))) {
            throw ApiError{404, "item not found"};
          }
        } else if (!access.allows(auth_view(ns, key, json()))) {
          throw ApiError{403, "Not authorized"};
        }
      }
      store.remove(ns, key);
      return no_content();
    }
  }
  if (p.size() == 3 && p[1] == "items" && p[2] == "search" && m == "POST") {
    const json body = body_object(request);
    SearchOp op;
    op.prefix = namespace_field(body, "namespace_prefix", false);
    if (const auto it = body.find("filter"); it != body.end() && !it->is_null()) {
      if (!it->is_object()) throw ApiError{422, "'filter' must be an object"};
      op.filter = *it;
    }
    // Without an index a query leaves the prefix and filter as they are (the reference server
    // and LangGraph's stores); stategraph's stores refuse it, so it is not passed on.
    if (std::string query = string_field(body, "query");
        !query.empty() && store.semantic_search()) {
      op.query = query;
    }
    op.limit = static_cast<std::size_t>(int_field(body, "limit", 10, 0, 1000));
    op.offset = static_cast<std::size_t>(
        int_field(body, "offset", 0, 0, std::numeric_limits<std::int32_t>::max()));
    if (const auto it = body.find("refresh_ttl"); it != body.end() && it->is_boolean()) {
      op.refresh_ttl = it->get<bool>();
    }
    const Access access = authorize(request, "store", "search", [&] {
      return json{{"namespace", op.prefix},
                  {"filter", op.filter},
                  {"limit", op.limit},
                  {"offset", op.offset},
                  {"query", body.value("query", json())}};
    });
    if (!access.value.is_null()) op.prefix = namespace_field(access.value, "namespace", false);
    const std::vector<SearchItem> hits = allowed_page(
        access, std::move(op), [&](SearchOp page) { return store.search(std::move(page)); },
        [&](const SearchItem& hit) {
          return access.allows(auth_view(hit.item.ns, hit.item.key, hit.item.value));
        });
    json items = json::array();
    for (const auto& hit : hits) items.push_back(to_json(hit));
    return json_response({{"items", std::move(items)}});
  }
  if (p.size() == 2 && p[1] == "namespaces" && m == "POST") {
    const json body = body_object(request);
    ListNamespacesOp op;
    if (Namespace prefix = namespace_field(body, "prefix", false); !prefix.empty()) {
      op.match.push_back({MatchCondition::Kind::prefix, std::move(prefix)});
    }
    if (Namespace suffix = namespace_field(body, "suffix", false); !suffix.empty()) {
      op.match.push_back({MatchCondition::Kind::suffix, std::move(suffix)});
    }
    if (const auto it = body.find("max_depth"); it != body.end() && !it->is_null()) {
      op.max_depth = static_cast<std::size_t>(int_field(body, "max_depth", 0, 0, 1000));
    }
    op.limit = static_cast<std::size_t>(int_field(body, "limit", 100, 0, 1000));
    op.offset = static_cast<std::size_t>(
        int_field(body, "offset", 0, 0, std::numeric_limits<std::int32_t>::max()));
    const Access access = authorize(request, "store", "list_namespaces", [&] {
      return json{{"namespace", body.value("prefix", json())},
                  {"suffix", body.value("suffix", json())},
                  {"max_depth", body.value("max_depth", json())},
                  {"limit", op.limit},
                  {"offset", op.offset}};
    });
    if (!access.value.is_null()) {  // the handler's prefix
      std::erase_if(op.match,
                    [](const MatchCondition& c) { return c.kind == MatchCondition::Kind::prefix; });
      if (Namespace prefix = namespace_field(access.value, "namespace", false); !prefix.empty()) {
        op.match.insert(op.match.begin(), {MatchCondition::Kind::prefix, std::move(prefix)});
      }
    }
    const std::vector<Namespace> found = allowed_page(
        access, std::move(op),
        [&](ListNamespacesOp page) { return store.list_namespaces(std::move(page)); },
        [&](const Namespace& ns) { return access.allows(auth_view(ns, {}, json())); });
    json namespaces = json::array();
    for (const auto& ns : found) namespaces.push_back(ns);
    return json_response({{"namespaces", std::move(namespaces)}});
  }
  throw no_route(request);
}

}  // namespace sg::server
