// SPDX-License-Identifier: MIT
#include <stategraph/core/time.hpp>
#include <stategraph/store/store.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace sg {

void validate_namespace(const Namespace& ns) {
  if (ns.empty()) throw InvalidNamespaceError("namespace cannot be empty");
  for (std::size_t i = 0; i < ns.size(); ++i) {
    const std::string& label = ns[i];
    if (label.empty()) {
      throw InvalidNamespaceError(
          fmt::format("namespace '{}': label {} is empty", join_namespace(ns), i));
    }
    if (label.find('.') != std::string::npos) {
      throw InvalidNamespaceError(
          fmt::format("namespace label '{}' contains '.', which is not allowed", label));
    }
    if (label.find('\0') != std::string::npos) {
      throw InvalidNamespaceError(fmt::format("namespace label {} contains a zero byte", i));
    }
  }
  if (ns.front() == "langgraph") {
    throw InvalidNamespaceError(
        fmt::format("namespace '{}': the root label 'langgraph' is reserved", join_namespace(ns)));
  }
}

std::string join_namespace(const Namespace& ns) {
  std::string out;
  for (std::size_t i = 0; i < ns.size(); ++i) {
    if (i) out.push_back('.');
    out += ns[i];
  }
  return out;
}

Namespace split_namespace(std::string_view text) {
  Namespace out;
  if (text.empty()) return out;
  std::size_t from = 0;
  while (true) {
    const std::size_t dot = text.find('.', from);
    out.emplace_back(text.substr(from, dot == std::string_view::npos ? dot : dot - from));
    if (dot == std::string_view::npos) return out;
    from = dot + 1;
  }
}

std::string iso_time(StoreClock::time_point t) {
  return iso_timestamp(
      std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count());
}

nlohmann::json to_json(const Item& item) {
  return {{"namespace", item.ns},
          {"key", item.key},
          {"value", item.value},
          {"created_at", iso_time(item.created_at)},
          {"updated_at", iso_time(item.updated_at)}};
}

nlohmann::json to_json(const SearchItem& hit) {
  nlohmann::json out = to_json(hit.item);
  out["score"] = hit.score ? nlohmann::json(*hit.score) : nlohmann::json();
  return out;
}

namespace {

using nlohmann::json;

[[noreturn]] void bad_filter(const std::string& message) {
  throw Error(errc::kInvalidFilter, "invalid store filter: " + message);
}

/// The value at a dotted path ("a.b.c"), or nullptr.
const json* at_path(const json& value, std::string_view path) {
  const json* at = &value;
  std::size_t from = 0;
  while (true) {
    const std::size_t dot = path.find('.', from);
    const std::string part(path.substr(from, dot == std::string_view::npos ? dot : dot - from));
    if (!at->is_object()) return nullptr;
    auto it = at->find(part);
    if (it == at->end()) return nullptr;
    at = &*it;
    if (dot == std::string_view::npos) return at;
    from = dot + 1;
  }
}

/// -1, 0, 1, or nullopt when the two values do not order (different kinds).
std::optional<int> order(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) {
    const double x = a.get<double>();
    const double y = b.get<double>();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.get_ref<const std::string&>().compare(b.get_ref<const std::string&>());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  return std::nullopt;
}

bool contains(const json& list, const json& target, const std::string& op) {
  if (!list.is_array()) bad_filter(op + " needs an array");
  for (const auto& v : list) {
    if (v == target) return true;
  }
  return false;
}

enum class Op : std::uint8_t { eq, ne, gt, gte, lt, lte, in, nin };

/// The operator `key` names; an unknown one is a filter error.
Op parse_operator(const std::string& key) {
  static const std::map<std::string, Op, std::less<>> ops{
      {"$eq", Op::eq}, {"$ne", Op::ne},   {"$gt", Op::gt}, {"$gte", Op::gte},
      {"$lt", Op::lt}, {"$lte", Op::lte}, {"$in", Op::in}, {"$nin", Op::nin}};
  auto it = ops.find(key);
  if (it == ops.end()) {
    bad_filter("unknown operator '" + key + "' (use $eq $ne $gt $gte $lt $lte $in $nin)");
  }
  return it->second;
}

[[noreturn]] void mixed_keys() {
  bad_filter("operators mixed with plain keys; nest them or use a dotted path");
}

bool apply_operator(const json* target, const std::string& key, const json& operand) {
  static const json null_value;
  const json& v = target ? *target : null_value;
  const Op op = parse_operator(key);
  switch (op) {
    case Op::eq:
      return target && v == operand;
    case Op::ne:
      return !target || v != operand;
    case Op::in: {
      const bool found = contains(operand, v, key);
      return target && found;
    }
    case Op::nin:
      return !target || !contains(operand, v, key);
    default:
      break;
  }
  if (!target) return false;
  const auto c = order(v, operand);
  if (!c) return false;
  switch (op) {
    case Op::gt:
      return *c > 0;
    case Op::gte:
      return *c >= 0;
    case Op::lt:
      return *c < 0;
    default:
      return *c <= 0;  // Op::lte
  }
}

bool matches(const json* target, const json& condition) {
  if (condition.is_object()) {
    const bool operators = std::any_of(condition.items().begin(), condition.items().end(),
                                       [](const auto& kv) { return kv.key().rfind('$', 0) == 0; });
    if (operators) {
      for (const auto& [op, operand] : condition.items()) {
        if (op.rfind('$', 0) != 0) mixed_keys();
        if (!apply_operator(target, op, operand)) return false;
      }
      return true;
    }
    if (!target || !target->is_object()) return false;
    for (const auto& [key, sub] : condition.items()) {
      if (!matches(at_path(*target, key), sub)) return false;
    }
    return true;
  }
  return target && *target == condition;
}

void validate_condition(const json& condition) {
  if (!condition.is_object()) return;
  bool operators = false;
  bool plain = false;
  for (const auto& [key, sub] : condition.items()) {
    if (key.rfind('$', 0) == 0) {
      operators = true;
      const Op op = parse_operator(key);
      if ((op == Op::in || op == Op::nin) && !sub.is_array()) bad_filter(key + " needs an array");
    } else {
      plain = true;
      validate_condition(sub);
    }
  }
  if (operators && plain) mixed_keys();
}

}  // namespace

void validate_filter(const json& filter) {
  if (filter.is_null()) return;
  if (!filter.is_object()) bad_filter("a filter is a JSON object, got " + filter.dump());
  for (const auto& [path, condition] : filter.items()) validate_condition(condition);
}

bool matches_filter(const json& value, const json& filter) {
  if (filter.is_null()) return true;
  if (!filter.is_object()) bad_filter("a filter is a JSON object, got " + filter.dump());
  for (const auto& [path, condition] : filter.items()) {
    if (!matches(at_path(value, path), condition)) return false;
  }
  return true;
}

void Store::put(const Namespace& ns, const std::string& key, nlohmann::json value,
                std::optional<double> ttl_minutes, std::optional<std::vector<std::string>> index) {
  std::vector<StoreOp> ops;
  ops.emplace_back(PutOp{ns, key, std::move(value), ttl_minutes, std::move(index)});
  (void)batch(std::move(ops));
}

std::optional<Item> Store::get(const Namespace& ns, const std::string& key,
                               std::optional<bool> refresh_ttl) {
  std::vector<StoreOp> ops;
  ops.emplace_back(GetOp{ns, key, refresh_ttl});
  return std::get<std::optional<Item>>(batch(std::move(ops)).front());
}

void Store::remove(const Namespace& ns, const std::string& key) {
  std::vector<StoreOp> ops;
  ops.emplace_back(PutOp{ns, key, std::nullopt, std::nullopt});
  (void)batch(std::move(ops));
}

std::vector<SearchItem> Store::search(SearchOp op) {
  std::vector<StoreOp> ops;
  ops.emplace_back(std::move(op));
  return std::get<std::vector<SearchItem>>(batch(std::move(ops)).front());
}

std::vector<Namespace> Store::list_namespaces(ListNamespacesOp op) {
  std::vector<StoreOp> ops;
  ops.emplace_back(std::move(op));
  return std::get<std::vector<Namespace>>(batch(std::move(ops)).front());
}

}  // namespace sg
