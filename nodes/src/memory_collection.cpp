// SPDX-License-Identifier: MIT
#include <stategraph/core/error.hpp>
#include <stategraph/core/uuid.hpp>
#include <stategraph/nodes/memory_collection.hpp>

#include <set>

#include "model_edits.hpp"

namespace sg {
namespace {

constexpr std::string_view kInsert = "insert_memory";
constexpr std::string_view kUpdate = "update_memory";
constexpr std::string_view kDelete = "delete_memory";

nlohmann::json tool_parameters(std::string_view tool, const nlohmann::json& content_schema) {
  nlohmann::json properties = nlohmann::json::object();
  nlohmann::json required = nlohmann::json::array();
  if (tool != kInsert) {
    properties["id"] = {{"type", "string"}, {"description", "The id of an existing memory."}};
    required.push_back("id");
  }
  if (tool != kDelete) {
    properties["content"] = content_schema;
    required.push_back("content");
  }
  return {{"type", "object"},
          {"properties", properties},
          {"required", required},
          {"additionalProperties", false}};
}

}  // namespace

std::string_view to_string(MemoryChange::Action action) noexcept {
  switch (action) {
    case MemoryChange::Action::insert:
      return "insert";
    case MemoryChange::Action::update:
      return "update";
    case MemoryChange::Action::remove:
      return "remove";
  }
  return "?";
}

MemoryCollection::MemoryCollection(MemoryCollectionOptions options)
    : options_(std::make_shared<const MemoryCollectionOptions>(std::move(options))),
      content_(std::make_shared<const JsonSchema>(options_->content_schema)) {
  if (!options_->enable_inserts && !options_->enable_updates && !options_->enable_deletes)
    throw Error(errc::kInvalidArgument, "MemoryCollection: no action enabled");
  if (options_->query_limit == 0)
    throw Error(errc::kInvalidArgument, "MemoryCollection: query_limit must be positive");
  if (options_->max_attempts < 1)
    throw Error(errc::kInvalidArgument, "MemoryCollection: max_attempts must be at least 1");
}

std::vector<StoredMemory> MemoryCollection::list(Store& store, const nlohmann::json& configurable,
                                                 std::optional<std::string> query,
                                                 std::size_t limit) const {
  SearchOp op;
  op.prefix = options_->ns.resolve(configurable);
  op.query = std::move(query);
  op.limit = limit;
  std::vector<StoredMemory> out;
  for (auto& hit : store.search(std::move(op))) {
    // Items of deeper namespaces (a prefix search) are not this collection's.
    if (hit.item.ns.size() != options_->ns.labels().size()) continue;
    const auto content = hit.item.value.find("content");
    out.push_back(
        {hit.item.key, content == hit.item.value.end() ? hit.item.value : *content, hit.score});
  }
  return out;
}

std::vector<MemoryChange> MemoryCollection::apply(Store& store, const nlohmann::json& configurable,
                                                  std::vector<MemoryChange> changes) const {
  const Namespace ns = options_->ns.resolve(configurable);
  std::set<std::string> keys;
  for (std::size_t i = 0; i < changes.size(); ++i) {
    MemoryChange& c = changes[i];
    const std::string what =
        "memory change " + std::to_string(i) + " (" + std::string(to_string(c.action)) + ")";
    if (c.action != MemoryChange::Action::insert || !c.key.empty()) {
      if (c.key.empty()) throw Error(errc::kInvalidArgument, what + ": no memory id");
      if (!keys.insert(c.key).second) {
        throw Error(errc::kInvalidArgument,
                    what + ": memory " + c.key + " is changed twice in one update");
      }
    }
    const bool stored = !c.key.empty() && store.get(ns, c.key).has_value();
    if (c.action != MemoryChange::Action::insert && !stored) {
      throw Error(errc::kInvalidArgument,
                  what + ": there is no memory with id " + c.key + " in " + join_namespace(ns));
    }
    if (c.action == MemoryChange::Action::insert && stored) {
      throw Error(errc::kInvalidArgument, what + ": memory " + c.key + " already exists");
    }
    if (c.action == MemoryChange::Action::remove) {
      c.content = nullptr;
    } else {
      content_->validate(c.content, what + ": the content");
    }
  }
  std::vector<StoreOp> ops;
  ops.reserve(changes.size());
  for (MemoryChange& c : changes) {
    if (c.key.empty()) c.key = new_uuid4();
    PutOp put;
    put.ns = ns;
    put.key = c.key;
    if (c.action != MemoryChange::Action::remove)
      put.value = nlohmann::json{{"content", c.content}};
    ops.emplace_back(std::move(put));
  }
  if (!ops.empty()) store.batch(std::move(ops));
  return changes;
}

std::vector<ToolSpec> MemoryCollection::tools() const {
  std::vector<ToolSpec> out;
  const auto& o = *options_;
  if (o.enable_inserts) {
    out.push_back({std::string(kInsert),
                   "Insert a new memory. Call once per new memory; several calls at once are "
                   "fine.",
                   tool_parameters(kInsert, o.content_schema)});
  }
  if (o.enable_updates) {
    out.push_back({std::string(kUpdate),
                   "Replace the content of an existing memory (by id) that is outdated or can be "
                   "made more precise.",
                   tool_parameters(kUpdate, o.content_schema)});
  }
  if (o.enable_deletes) {
    out.push_back({std::string(kDelete), "Delete an existing memory (by id) that is wrong.",
                   tool_parameters(kDelete, o.content_schema)});
  }
  return out;
}

std::vector<MemoryChange> MemoryCollection::parse(const Message& reply) const {
  if (!reply.invalid_tool_calls.empty()) {
    throw Error(errc::kInvalidArgument,
                "a tool call could not be parsed: " + reply.invalid_tool_calls.front().error);
  }
  const auto offered = tools();
  std::vector<MemoryChange> changes;
  for (const auto& call : reply.tool_calls) {
    const ToolSpec* spec = nullptr;
    for (const auto& t : offered)
      if (t.name == call.name) spec = &t;
    if (!spec) {
      std::string names;
      for (const auto& t : offered) names += (names.empty() ? "" : ", ") + t.name;
      throw Error(errc::kInvalidArgument,
                  "'" + call.name + "' is not a valid tool, try one of [" + names + "]");
    }
    const nlohmann::json args = call.args.is_null() ? nlohmann::json::object() : call.args;
    JsonSchema(spec->parameters).validate(args, "the arguments of " + call.name);
    MemoryChange change;
    if (call.name == kInsert) {
      change.action = MemoryChange::Action::insert;
    } else {
      change.action =
          call.name == kUpdate ? MemoryChange::Action::update : MemoryChange::Action::remove;
      change.key = args["id"].get<std::string>();
    }
    if (args.contains("content")) change.content = args["content"];
    changes.push_back(std::move(change));
  }
  return changes;
}

std::vector<Message> MemoryCollection::update_prompt(const std::vector<StoredMemory>& existing,
                                                     std::span<const Message> conversation) const {
  std::string memories;
  for (const auto& m : existing)
    memories += nlohmann::json{{"id", m.key}, {"content", m.content}}.dump() + "\n";
  std::string text = "<memories>\n" + (memories.empty() ? "(none yet)\n" : memories) +
                     "</memories>\n\n<conversation>\n" +
                     nodes_detail::conversation_text(conversation) +
                     "\n</conversation>\n\n"
                     "Reflect on the conversation and the memories above. Make every change "
                     "needed in one reply, calling the tools in parallel; refer to existing "
                     "memories by their id. If nothing is worth remembering, answer without "
                     "calling a tool.";
  return {sg::system(options_->instructions), human(std::move(text))};
}

std::vector<MemoryChange> MemoryCollection::update(const ChatModel& model, Store& store,
                                                   const nlohmann::json& configurable,
                                                   std::span<const Message> conversation,
                                                   CancellationToken cancellation) const {
  std::optional<std::string> query;
  if (options_->search_by_similarity) {
    std::string said;
    for (const auto& m : conversation)
      if (m.type == MessageType::human) said += m.text() + "\n";
    if (!said.empty()) query = std::move(said);
  }
  const auto existing = list(store, configurable, std::move(query), options_->query_limit);
  ChatOptions call = options_->model_options;
  for (auto& t : tools()) call.tools.push_back(std::move(t));
  if (cancellation.can_cancel()) call.cancellation = cancellation;
  std::vector<MemoryChange> applied;
  auto accept = [&](const Message& reply) { applied = apply(store, configurable, parse(reply)); };
  nodes_detail::ask_until_accepted(model, update_prompt(existing, conversation), call,
                                   options_->max_attempts, "memory collection update", accept);
  return applied;
}

}  // namespace sg
