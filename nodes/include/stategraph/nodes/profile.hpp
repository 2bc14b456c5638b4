// SPDX-License-Identifier: MIT
#pragma once
// A profile: one JSON document per user, kept in the
// store, that a model updates with an RFC 6902 JSON Patch; every change is validated against the
// profile's JSON schema, and a patch that does not apply or would make the document invalid
// changes nothing.
//
//   sg::ProfileMemory profile({.schema = {{"type", "object"}, {"properties", {...}},
//                                         {"additionalProperties", false}}});
//   profile.patch(*store, {{"user_id", "u1"}},
//                 R"([{"op": "add", "path": "/name", "value": "Ada"}])"_json);
//   profile.update(*model, *store, {{"user_id", "u1"}}, conversation);  // the model patches
//   profile.get(*store, {{"user_id", "u1"}});                          // {"name": "Ada"}

#include <stategraph/models/chat_model.hpp>
#include <stategraph/models/tool.hpp>
#include <stategraph/nodes/json_schema.hpp>
#include <stategraph/nodes/namespace_template.hpp>
#include <stategraph/store/store.hpp>

#include <nlohmann/json.hpp>

#include <memory>
#include <mutex>
#include <span>
#include <string>

namespace sg {

/// Options of ProfileMemory.
struct ProfileOptions {
  /// Where each user's profile lives (its item key is `key`).
  NamespaceTemplate ns{"profiles", "{user_id}"};
  std::string key = "profile";
  /// The JSON schema every version of the document must match (see JsonSchema). The document
  /// is a store value, so it is always a JSON object.
  nlohmann::json schema = {{"type", "object"}};
  /// The document before the first patch.
  nlohmann::json initial = nlohmann::json::object();
  /// The system prompt of update().
  std::string instructions =
      "You maintain a profile of the user: one JSON document that must match its JSON schema. "
      "Keep it accurate and up to date with what the user says.";
  /// The name of the tool the model patches the profile with.
  std::string tool_name = "patch_profile";
  /// update() asks again with the error when a patch is rejected, up to this many calls.
  int max_attempts = 3;
  /// Options of update()'s model calls (the patch tool is added).
  ChatOptions model_options{};
};

/// What update() did: the document now, the operations applied (an empty array when the model
/// changed nothing) and the model calls it took.
struct ProfileUpdate {
  nlohmann::json document = nlohmann::json::object();
  nlohmann::json patch = nlohmann::json::array();
  int attempts = 0;
  [[nodiscard]] bool changed() const { return !patch.empty(); }
};

/// A profile document per namespace (per user). Patches through one ProfileMemory (and its
/// copies) are applied one at a time, so none is lost to a concurrent one; writers in other
/// processes are not coordinated. Thread-safe.
class ProfileMemory {
 public:
  /// Throws sg::Error (errc::kInvalidArgument) for a schema JsonSchema rejects, an initial
  /// document that is not an object or does not match the schema, an empty key or tool name, or
  /// max_attempts < 1.
  explicit ProfileMemory(ProfileOptions options = {});

  [[nodiscard]] const ProfileOptions& options() const noexcept { return *options_; }
  [[nodiscard]] const JsonSchema& schema() const noexcept { return *schema_; }

  /// The profile of the namespace `configurable` selects: the stored document, or the initial
  /// one when none is stored. Throws what NamespaceTemplate::resolve throws.
  [[nodiscard]] nlohmann::json get(Store& store, const nlohmann::json& configurable) const;

  /// Applies an RFC 6902 JSON Patch (nlohmann::json::patch: add, remove, replace, move, copy,
  /// test) to the profile, validates the result and stores it; returns the new document.
  /// Throws sg::Error (errc::kInvalidArgument), storing nothing, when the patch is not an array
  /// of operations, does not apply (a missing path, a failed test), or leaves a document that is
  /// not an object or does not match the schema; the message says which.
  nlohmann::json patch(Store& store, const nlohmann::json& configurable,
                       const nlohmann::json& patch) const;

  /// Asks `model` to patch the profile from `conversation` (the schema, the current document
  /// and the conversation in the prompt; the patch tool offered, not forced: no call means
  /// nothing to change) and applies what it proposes with patch(). A rejected patch goes back
  /// to the model with the error, up to max_attempts calls; after the last, throws sg::Error
  /// (errc::kInvalidArgument) and the profile is unchanged. `cancellation` (e.g.
  /// MemoryWriteJob::cancellation) aborts the model call. Model errors propagate. Blocks for the
  /// model calls.
  ProfileUpdate update(const ChatModel& model, Store& store, const nlohmann::json& configurable,
                       std::span<const Message> conversation,
                       CancellationToken cancellation = {}) const;

  /// The prompt update() sends first (system instructions, then a human message).
  [[nodiscard]] std::vector<Message> update_prompt(const nlohmann::json& document,
                                                   std::span<const Message> conversation) const;

  /// The patch tool for the hot path: {"patch": [operations]} applied with patch() to the
  /// profile of the run's configurable values in the graph's store; answers with the new
  /// document. Its errors (ToolNode makes them error messages) leave the profile unchanged.
  [[nodiscard]] Tool tool() const;

 private:
  std::shared_ptr<const ProfileOptions> options_;
  std::shared_ptr<const JsonSchema> schema_;
  std::shared_ptr<const JsonSchema> tool_schema_;
  std::shared_ptr<std::mutex> mu_;
};

}  // namespace sg
