// SPDX-License-Identifier: MIT
// JsonSchema: the hand-written validator of profile documents, memory contents and memory tool
// arguments; then the official JSON-Schema test suite (Debian's json-schema-test-suite, draft 7)
// for every keyword it implements.
#include <stategraph/core/error.hpp>
#include <stategraph/nodes/json_schema.hpp>

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace {

using nlohmann::json;

const json kPerson = {
    {"type", "object"},
    {"properties",
     {{"name", {{"type", "string"}, {"minLength", 1}, {"maxLength", 5}}},
      {"age", {{"type", "integer"}, {"minimum", 0}, {"maximum", 150}}},
      {"mood", {{"enum", {"happy", "sad"}}}},
      {"likes", {{"type", "array"}, {"items", {{"type", "string"}}}, {"maxItems", 2}}}}},
    {"required", {"name"}},
    {"additionalProperties", false}};

std::filesystem::path suite_dir() {
  if (const char* dir = std::getenv("SG_JSON_SCHEMA_TEST_SUITE")) return dir;
  return "/usr/share/json-schema-test-suite/tests/draft7";
}

json read_json(const std::filesystem::path& file) {
  std::ifstream in(file);
  REQUIRE_MESSAGE(in.good(), "cannot read " << file.string());
  return json::parse(in);
}

}  // namespace

TEST_CASE("JsonSchema reports every violation with its JSON pointer") {
  const sg::JsonSchema schema(kPerson);
  CHECK(schema.valid({{"name", "Ada"}, {"age", 36}, {"likes", {"tea"}}}));
  CHECK(schema.errors({{"name", "Ada"}, {"age", 36.0}}).empty());  // 36.0 is an integer
  const auto errors = schema.errors(
      {{"age", -3}, {"mood", "angry"}, {"likes", {"tea", 1, "chess"}}, {"nick", "x"}});
  CHECK(errors == std::vector<std::string>{
                      "(root): missing required property 'name'",
                      "/age: -3 is less than the minimum 0",
                      "/likes/1: expected string, got integer",
                      "/likes: has 3 items, more than 2",
                      "/mood: \"angry\" is not one of [\"happy\",\"sad\"]",
                      "(root): property 'nick' is not allowed",
                  });
  CHECK(schema.errors({{"name", ""}}) ==
        std::vector<std::string>{"/name: is 0 characters long, shorter than 1"});
  // Lengths count code points, not bytes: "ÅÄÖÜß" is 5 characters, 10 bytes.
  CHECK(schema.valid({{"name", "\xc3\x85\xc3\x84\xc3\x96\xc3\x9c\xc3\x9f"}}));
  CHECK(schema.errors(json::array()) ==
        std::vector<std::string>{"(root): expected object, got array"});
  CHECK_THROWS_WITH_AS(schema.validate({{"name", 7}}, "the profile"),
                       "the profile does not match its schema: /name: expected string, got integer",
                       sg::Error);
  CHECK_NOTHROW(schema.validate({{"name", "Bo"}}));
}

TEST_CASE("JsonSchema rejects schemas it cannot enforce, naming the place") {
  auto rejected = [](const json& schema) {
    try {
      sg::JsonSchema s(schema);
    } catch (const sg::Error& e) {
      CHECK(e.code() == sg::errc::kInvalidArgument);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(rejected({{"properties", {{"tags", {{"pattern", "^a"}}}}}}) ==
        "invalid JSON schema at #/properties/tags: unsupported keyword 'pattern'");
  CHECK(rejected({{"$ref", "#/definitions/x"}}) ==
        "invalid JSON schema at #: unsupported keyword '$ref'");
  CHECK(rejected({{"type", "strin"}}) ==
        "invalid JSON schema at #/type: 'type' must be a type name or a list of distinct type "
        "names");
  CHECK(rejected({{"items", json::array({json::object()})}}) ==
        "invalid JSON schema at #/items: 'items' as a list of schemas is not supported");
  CHECK(rejected({{"minLength", -1}}) ==
        "invalid JSON schema at #/minLength: 'minLength' must be a non-negative integer");
  CHECK(rejected({{"required", {"a", "a"}}}) ==
        "invalid JSON schema at #/required: 'required' must be an array of distinct property "
        "names");
  CHECK(rejected(42) == "invalid JSON schema at #: a schema must be an object or a boolean");
  // Annotations are fine; true and false are schemas.
  CHECK(rejected({{"title", "t"}, {"description", "d"}, {"default", 1}, {"$schema", "x"}}) ==
        "accepted");
  CHECK(sg::JsonSchema().valid(json::array()));
  CHECK(sg::JsonSchema(false).errors(1) ==
        std::vector<std::string>{"(root): no value is allowed here"});
}

TEST_CASE("JsonSchema passes the official JSON-Schema test suite for its keywords") {
  const auto dir = suite_dir();
  REQUIRE_MESSAGE(std::filesystem::is_directory(dir), "the JSON-Schema test suite is not at "
                                                          << dir.string()
                                                          << ": install json-schema-test-suite "
                                                             "(scripts/install-deps)");
  const std::vector<std::string> keywords = {"type",
                                             "enum",
                                             "const",
                                             "properties",
                                             "required",
                                             "additionalProperties",
                                             "items",
                                             "minItems",
                                             "maxItems",
                                             "minimum",
                                             "maximum",
                                             "exclusiveMinimum",
                                             "exclusiveMaximum",
                                             "minLength",
                                             "maxLength",
                                             "boolean_schema",
                                             "default"};
  std::size_t cases = 0;
  for (const auto& keyword : keywords) {
    const json groups = read_json(dir / (keyword + ".json"));
    std::size_t run = 0;
    for (const auto& group : groups) {
      std::optional<sg::JsonSchema> schema;
      try {
        schema.emplace(group["schema"]);
      } catch (const sg::Error&) {
        continue;  // uses a keyword this validator rejects (patternProperties, tuple items...)
      }
      ++run;
      for (const auto& test : group["tests"]) {
        INFO(keyword << ": " << group["description"].get<std::string>() << " / "
                     << test["description"].get<std::string>());
        CHECK(schema->valid(test["data"]) == test["valid"].get<bool>());
        ++cases;
      }
    }
    INFO(keyword);
    CHECK(run > 0);
  }
  CHECK(cases >= 160);  // 167 in the suite packaged by Debian 12 (2.0.0)
}

TEST_CASE("JsonSchema rejects every schema of the suite's files for keywords it lacks") {
  const auto dir = suite_dir();
  REQUIRE(std::filesystem::is_directory(dir));
  for (const char* keyword : {"pattern", "patternProperties", "allOf", "anyOf", "oneOf", "not",
                              "ref", "uniqueItems", "multipleOf", "dependencies"}) {
    const json groups = read_json(dir / (std::string(keyword) + ".json"));
    for (const auto& group : groups) {
      INFO(keyword << ": " << group["description"].get<std::string>());
      // A schema that uses the keyword is rejected; a few groups use none (e.g. "$ref" to
      // nothing): those must then validate as the suite says.
      try {
        const sg::JsonSchema schema(group["schema"]);
        for (const auto& test : group["tests"])
          CHECK(schema.valid(test["data"]) == test["valid"].get<bool>());
      } catch (const sg::Error& e) {
        CHECK(std::string(e.what()).find("invalid JSON schema at") == 0);
      }
    }
  }
}
