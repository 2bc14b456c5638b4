// SPDX-License-Identifier: MIT
#include <stategraph/core/error.hpp>
#include <stategraph/nodes/json_schema.hpp>

#include <algorithm>
#include <array>
#include <cmath>

namespace sg {
namespace {

constexpr std::array<std::string_view, 7> kTypes = {"null",   "boolean", "object", "array",
                                                    "number", "string",  "integer"};
constexpr std::array<std::string_view, 7> kAnnotations = {
    "title", "description", "default", "examples", "$schema", "$id", "$comment"};

/// A JSON pointer token: "~" -> "~0", "/" -> "~1" (RFC 6901).
std::string escape(std::string_view token) {
  std::string out;
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

[[noreturn]] void bad_schema(const std::string& at, const std::string& what) {
  throw Error(errc::kInvalidArgument, "invalid JSON schema at " + at + ": " + what);
}

bool is_non_negative_integer(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return true;
  if (v.is_number_integer()) return v.get<std::int64_t>() >= 0;
  if (v.is_number_float()) {
    const double d = v.get<double>();
    return d >= 0 && std::floor(d) == d;
  }
  return false;
}

bool unique_strings(const nlohmann::json& list) {
  std::vector<std::string> seen;
  for (const auto& v : list) {
    if (!v.is_string()) return false;
    seen.push_back(v.get<std::string>());
  }
  std::sort(seen.begin(), seen.end());
  return std::adjacent_find(seen.begin(), seen.end()) == seen.end();
}

void check_schema(const nlohmann::json& schema, const std::string& at);

void check_keyword(const std::string& key, const nlohmann::json& value, const std::string& at) {
  const std::string here = at + "/" + escape(key);
  if (key == "type") {
    auto known = [](const nlohmann::json& t) {
      return t.is_string() &&
             std::find(kTypes.begin(), kTypes.end(), t.get<std::string>()) != kTypes.end();
    };
    const bool ok = value.is_array() ? !value.empty() && unique_strings(value) &&
                                           std::all_of(value.begin(), value.end(), known)
                                     : known(value);
    if (!ok) bad_schema(here, "'type' must be a type name or a list of distinct type names");
  } else if (key == "enum") {
    if (!value.is_array()) bad_schema(here, "'enum' must be an array");
  } else if (key == "const") {
    // any value
  } else if (key == "properties") {
    if (!value.is_object()) bad_schema(here, "'properties' must be an object of schemas");
    for (const auto& [name, sub] : value.items()) check_schema(sub, here + "/" + escape(name));
  } else if (key == "required") {
    if (!value.is_array() || !unique_strings(value))
      bad_schema(here, "'required' must be an array of distinct property names");
  } else if (key == "additionalProperties") {
    check_schema(value, here);
  } else if (key == "items") {
    if (value.is_array()) bad_schema(here, "'items' as a list of schemas is not supported");
    check_schema(value, here);
  } else if (key == "minItems" || key == "maxItems" || key == "minLength" || key == "maxLength") {
    if (!is_non_negative_integer(value))
      bad_schema(here, "'" + key + "' must be a non-negative integer");
  } else if (key == "minimum" || key == "maximum" || key == "exclusiveMinimum" ||
             key == "exclusiveMaximum") {
    if (!value.is_number()) bad_schema(here, "'" + key + "' must be a number");
  } else if (std::find(kAnnotations.begin(), kAnnotations.end(), key) == kAnnotations.end()) {
    bad_schema(at, "unsupported keyword '" + key + "'");
  }
}

/// Checks the schema at `at` ("#" for the root, then "#/properties/name", ...).
void check_schema(const nlohmann::json& schema, const std::string& at) {
  if (schema.is_boolean()) return;
  if (!schema.is_object()) bad_schema(at, "a schema must be an object or a boolean");
  for (const auto& [key, value] : schema.items()) check_keyword(key, value, at);
}

std::string type_name(const nlohmann::json& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number_float()) return "number";
  return v.type_name();  // null, boolean, string, array, object
}

bool has_type(const nlohmann::json& v, std::string_view type) {
  if (type == "integer") {
    if (v.is_number_integer()) return true;
    if (!v.is_number_float()) return false;
    const double d = v.get<double>();
    return std::isfinite(d) && std::floor(d) == d;
  }
  if (type == "number") return v.is_number();
  return v.type_name() == type;  // null, boolean, string, array, object
}

/// The length of a UTF-8 string in code points.
std::size_t code_points(const std::string& s) {
  return static_cast<std::size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

class Validator {
 public:
  explicit Validator(std::vector<std::string>& errors) : errors_(errors) {}

  void check(const nlohmann::json& schema, const nlohmann::json& v, const std::string& ptr) {
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) fail(ptr, "no value is allowed here");
      return;
    }
    if (auto t = schema.find("type"); t != schema.end() && !type_matches(*t, v)) {
      fail(ptr, "expected " + (t->is_array() ? "one of " + t->dump() : t->get<std::string>()) +
                    ", got " + type_name(v));
      return;  // the other keywords would only repeat the mismatch
    }
    if (auto e = schema.find("enum"); e != schema.end()) {
      if (std::find(e->begin(), e->end(), v) == e->end())
        fail(ptr, v.dump() + " is not one of " + e->dump());
    }
    if (auto c = schema.find("const"); c != schema.end() && *c != v) {
      fail(ptr, v.dump() + " is not " + c->dump());
    }
    if (v.is_object()) check_object(schema, v, ptr);
    if (v.is_array()) check_array(schema, v, ptr);
    if (v.is_number()) check_number(schema, v, ptr);
    if (v.is_string()) check_string(schema, v, ptr);
  }

 private:
  void fail(const std::string& ptr, const std::string& what) {
    errors_.push_back((ptr.empty() ? std::string("(root)") : ptr) + ": " + what);
  }

  static bool type_matches(const nlohmann::json& type, const nlohmann::json& v) {
    if (type.is_string()) return has_type(v, type.get<std::string>());
    return std::any_of(type.begin(), type.end(),
                       [&](const nlohmann::json& t) { return has_type(v, t.get<std::string>()); });
  }

  void check_object(const nlohmann::json& schema, const nlohmann::json& v, const std::string& ptr) {
    const auto props = schema.find("properties");
    if (auto r = schema.find("required"); r != schema.end()) {
      for (const auto& name : *r)
        if (!v.contains(name.get<std::string>()))
          fail(ptr, "missing required property '" + name.get<std::string>() + "'");
    }
    const auto extra = schema.find("additionalProperties");
    for (const auto& [name, value] : v.items()) {
      const std::string child = ptr + "/" + escape(name);
      if (props != schema.end() && props->contains(name)) {
        check(props->at(name), value, child);
      } else if (extra != schema.end()) {
        if (extra->is_boolean() && !extra->get<bool>()) {
          fail(ptr, "property '" + name + "' is not allowed");
        } else {
          check(*extra, value, child);
        }
      }
    }
  }

  void check_array(const nlohmann::json& schema, const nlohmann::json& v, const std::string& ptr) {
    if (auto items = schema.find("items"); items != schema.end()) {
      for (std::size_t i = 0; i < v.size(); ++i) check(*items, v[i], ptr + "/" + std::to_string(i));
    }
    if (auto m = schema.find("minItems"); m != schema.end() && v.size() < m->get<double>())
      fail(ptr, "has " + std::to_string(v.size()) + " items, fewer than " + m->dump());
    if (auto m = schema.find("maxItems"); m != schema.end() && v.size() > m->get<double>())
      fail(ptr, "has " + std::to_string(v.size()) + " items, more than " + m->dump());
  }

  void check_number(const nlohmann::json& schema, const nlohmann::json& v, const std::string& ptr) {
    const double x = v.get<double>();
    if (auto m = schema.find("minimum"); m != schema.end() && x < m->get<double>())
      fail(ptr, v.dump() + " is less than the minimum " + m->dump());
    if (auto m = schema.find("maximum"); m != schema.end() && x > m->get<double>())
      fail(ptr, v.dump() + " is greater than the maximum " + m->dump());
    if (auto m = schema.find("exclusiveMinimum"); m != schema.end() && x <= m->get<double>())
      fail(ptr, v.dump() + " is not greater than " + m->dump());
    if (auto m = schema.find("exclusiveMaximum"); m != schema.end() && x >= m->get<double>())
      fail(ptr, v.dump() + " is not less than " + m->dump());
  }

  void check_string(const nlohmann::json& schema, const nlohmann::json& v, const std::string& ptr) {
    const std::size_t n = code_points(v.get_ref<const std::string&>());
    if (auto m = schema.find("minLength"); m != schema.end() && n < m->get<double>())
      fail(ptr, "is " + std::to_string(n) + " characters long, shorter than " + m->dump());
    if (auto m = schema.find("maxLength"); m != schema.end() && n > m->get<double>())
      fail(ptr, "is " + std::to_string(n) + " characters long, longer than " + m->dump());
  }

  std::vector<std::string>& errors_;
};

}  // namespace

JsonSchema::JsonSchema() : schema_(true) {}

JsonSchema::JsonSchema(nlohmann::json schema) : schema_(std::move(schema)) {
  check_schema(schema_, "#");
}

std::vector<std::string> JsonSchema::errors(const nlohmann::json& instance) const {
  std::vector<std::string> out;
  Validator(out).check(schema_, instance, "");
  return out;
}

bool JsonSchema::valid(const nlohmann::json& instance) const {
  return errors(instance).empty();
}

void JsonSchema::validate(const nlohmann::json& instance, std::string_view what) const {
  const auto found = errors(instance);
  if (found.empty()) return;
  std::string message = std::string(what) + " does not match its schema: ";
  for (std::size_t i = 0; i < found.size(); ++i) message += (i ? "; " : "") + found[i];
  throw Error(errc::kInvalidArgument, message);
}

}  // namespace sg
