// SPDX-License-Identifier: MIT
#pragma once
// A collection of memories: one store item per
// memory, {"content": ...}, that a model inserts, updates and deletes after reading the
// conversation and the memories already stored (LangMem's create_memory_store_manager). The same
// items the hot-path tools of memory_tools.hpp manage.
//
//   sg::MemoryCollection memories({.ns = {"memories", "{user_id}"}});
//   auto changes = memories.update(*model, *store, {{"user_id", "u1"}}, conversation);
//   for (const auto& m : memories.list(*store, {{"user_id", "u1"}})) ...

#include <stategraph/models/chat_model.hpp>
#include <stategraph/nodes/json_schema.hpp>
#include <stategraph/nodes/namespace_template.hpp>
#include <stategraph/store/store.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace sg {

/// Options of MemoryCollection.
struct MemoryCollectionOptions {
  NamespaceTemplate ns{"memories", "{user_id}"};
  /// The JSON schema of a memory's content (see JsonSchema).
  nlohmann::json content_schema = {{"type", "string"}};
  /// The system prompt of update().
  std::string instructions =
      "You manage the long-term memories of an assistant about its user. Each memory is a "
      "standalone fact, preference or piece of context, written so that it is understood "
      "without the conversation. Insert what is new, update memories the conversation makes "
      "outdated or more precise, delete memories it shows to be wrong, and never store the "
      "same thing twice.";
  /// The actions update() offers the model (as the tools insert_memory, update_memory,
  /// delete_memory).
  bool enable_inserts = true;
  bool enable_updates = true;
  bool enable_deletes = true;
  /// How many stored memories update() shows the model.
  std::size_t query_limit = 20;
  /// True: those most similar to the conversation's human messages (the store needs an
  /// IndexConfig); false: the most recently updated.
  bool search_by_similarity = false;
  /// update() asks again with the error when a proposal is rejected, up to this many calls.
  int max_attempts = 3;
  ChatOptions model_options{};
};

/// One change to the collection.
struct MemoryChange {
  enum class Action : std::uint8_t { insert, update, remove };
  Action action = Action::insert;
  /// The memory's key (its id); empty in an insert passed to apply(): a uuid4 is made.
  std::string key{};
  /// The new content (insert, update); null for remove.
  nlohmann::json content{};

  friend bool operator==(const MemoryChange&, const MemoryChange&) = default;
};

/// "insert", "update" or "remove".
[[nodiscard]] std::string_view to_string(MemoryChange::Action action) noexcept;

/// A memory as listed: its key and content.
struct StoredMemory {
  std::string key{};
  nlohmann::json content{};
  std::optional<double> score{};
};

/// The memories of one namespace template. Thread-safe (the store coordinates concurrent
/// writers; apply() validates every change before writing any).
class MemoryCollection {
 public:
  /// Throws sg::Error (errc::kInvalidArgument) for a content_schema JsonSchema rejects, no
  /// action enabled, query_limit 0 or max_attempts < 1.
  explicit MemoryCollection(MemoryCollectionOptions options = {});

  [[nodiscard]] const MemoryCollectionOptions& options() const noexcept { return *options_; }

  /// Up to `limit` memories: ranked by similarity to `query` when given (the store needs an
  /// IndexConfig), else the most recently updated first.
  [[nodiscard]] std::vector<StoredMemory> list(Store& store, const nlohmann::json& configurable,
                                               std::optional<std::string> query = std::nullopt,
                                               std::size_t limit = 100) const;

  /// Applies `changes` in one store batch and returns them with the keys of inserts filled in.
  /// Validates all of them first and throws sg::Error (errc::kInvalidArgument), writing
  /// nothing, for content not matching content_schema, an update or remove of a key that is
  /// not stored, an insert of one that is, or two changes of one key.
  std::vector<MemoryChange> apply(Store& store, const nlohmann::json& configurable,
                                  std::vector<MemoryChange> changes) const;

  /// Shows the model the conversation and up to query_limit stored memories (with their ids)
  /// and applies the inserts, updates and deletes it calls for, all in one reply (no call: no
  /// change). A rejected proposal (a bad id, invalid content, an unknown tool, invalid
  /// arguments) goes back to the model with the error, up to max_attempts calls; after the
  /// last, throws sg::Error (errc::kInvalidArgument) and nothing is changed. `cancellation`
  /// aborts the model call. Model errors propagate. Blocks for the model calls.
  std::vector<MemoryChange> update(const ChatModel& model, Store& store,
                                   const nlohmann::json& configurable,
                                   std::span<const Message> conversation,
                                   CancellationToken cancellation = {}) const;

  /// The prompt update() sends first, given the memories shown.
  [[nodiscard]] std::vector<Message> update_prompt(const std::vector<StoredMemory>& existing,
                                                   std::span<const Message> conversation) const;

 private:
  [[nodiscard]] std::vector<ToolSpec> tools() const;
  [[nodiscard]] std::vector<MemoryChange> parse(const Message& reply) const;

  std::shared_ptr<const MemoryCollectionOptions> options_;
  std::shared_ptr<const JsonSchema> content_;
};

}  // namespace sg
