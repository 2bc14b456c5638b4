// SPDX-License-Identifier: MIT
#pragma once
// A small JSON Schema validator: what profile documents, memory contents and memory tools'
// arguments are checked against before anything is stored.
//
//   sg::JsonSchema schema({{"type", "object"},
//                          {"properties", {{"age", {{"type", "integer"}, {"minimum", 0}}}}},
//                          {"additionalProperties", false}});
//   schema.errors({{"age", -3}});  // {"/age: -3 is less than the minimum 0"}
//
// Hand-written on purpose: Debian 12 packages no C++ JSON Schema validator (pboettch's
// json-schema-validator for nlohmann is not in the archive) and memory schemas need only the
// keywords below. A schema using any other keyword is rejected at construction rather than
// silently not enforced. tests/nodes/test_json_schema.cpp runs it over the official JSON-Schema
// test suite (Debian's json-schema-test-suite, draft 7) for these keywords.

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace sg {

/// A compiled JSON Schema (draft 7 semantics) for the keywords type (a name or a list of names;
/// "integer" accepts 1.0), enum, const, properties, required, additionalProperties (a boolean or
/// a schema), items (one schema for every element), minItems, maxItems, minimum, maximum,
/// exclusiveMinimum, exclusiveMaximum (numbers), minLength, maxLength (in Unicode code points),
/// and the boolean schemas true and false. The annotations title, description, default,
/// examples, $schema, $id and $comment are accepted and ignored. Immutable; thread-safe.
class JsonSchema {
 public:
  /// Accepts everything (the schema `true`).
  JsonSchema();
  /// Throws sg::Error (errc::kInvalidArgument) for a schema that is neither an object nor a
  /// boolean, a keyword this validator does not implement, or a keyword with a malformed value;
  /// the message names the place in the schema, e.g. "#/properties/tags: unsupported keyword
  /// 'pattern'".
  explicit JsonSchema(nlohmann::json schema);

  [[nodiscard]] const nlohmann::json& schema() const noexcept { return schema_; }

  /// Every violation of `instance`, each "<JSON pointer>: <what is wrong>" (the root is ""), in
  /// document order; empty when the instance is valid.
  [[nodiscard]] std::vector<std::string> errors(const nlohmann::json& instance) const;
  /// True when errors(instance) is empty.
  [[nodiscard]] bool valid(const nlohmann::json& instance) const;
  /// Throws sg::Error (errc::kInvalidArgument) "<what> does not match its schema: <errors,
  /// joined by "; ">" unless `instance` is valid.
  void validate(const nlohmann::json& instance, std::string_view what = "the document") const;

 private:
  nlohmann::json schema_;
};

}  // namespace sg
