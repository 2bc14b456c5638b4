// SPDX-License-Identifier: MIT
// json_schema_of: the JSON Schema of C++ value types and states (tools' arguments, a served
// graph's GET /assistants/{id}/schemas).
#include <stategraph/core/type_schema.hpp>

#include <doctest/doctest.h>

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace {

using nlohmann::json;

struct Inner {
  int count = 0;
  static constexpr auto schema() { return std::tuple{sg::field<"count">(&Inner::count)}; }
};

struct SchemaState {
  std::vector<sg::Message> messages;
  std::optional<std::string> summary;
  double score = 0;
  bool done = false;
  std::map<std::string, std::vector<std::string>> tags;
  Inner inner;
  json extra;
  static constexpr auto schema() {
    return std::tuple{
        sg::field<"messages">(&SchemaState::messages), sg::field<"summary">(&SchemaState::summary),
        sg::field<"score">(&SchemaState::score),       sg::field<"done">(&SchemaState::done),
        sg::field<"tags">(&SchemaState::tags),         sg::field<"inner">(&SchemaState::inner),
        sg::field<"extra">(&SchemaState::extra)};
  }
};

}  // namespace

TEST_CASE("json_schema_of: a state's fields, their types, and which are required") {
  const json s = sg::json_schema_of<SchemaState>();
  CHECK(s["type"] == "object");
  CHECK(s["required"] == json({"messages", "score", "done", "tags", "inner", "extra"}));
  const json& p = s["properties"];
  CHECK(p["messages"]["type"] == "array");
  CHECK(p["messages"]["items"]["type"] == "object");
  CHECK(p["messages"]["items"]["required"] == json({"content"}));
  CHECK(p["messages"]["items"]["properties"]["content"]["type"] == json({"string", "array"}));
  CHECK(p["summary"] == json({{"type", "string"}}));
  CHECK(p["score"] == json({{"type", "number"}}));
  CHECK(p["done"] == json({{"type", "boolean"}}));
  CHECK(p["tags"] ==
        json({{"type", "object"},
              {"additionalProperties", {{"type", "array"}, {"items", {{"type", "string"}}}}}}));
  CHECK(p["inner"] == json({{"type", "object"},
                            {"properties", {{"count", {{"type", "integer"}}}}},
                            {"required", {"count"}}}));
  CHECK(p["extra"] == json::object());  // any JSON value
}
