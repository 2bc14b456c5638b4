// SPDX-License-Identifier: MIT
#include <stategraph/core/context.hpp>
#include <stategraph/core/error.hpp>
#include <stategraph/nodes/profile.hpp>

#include "model_edits.hpp"

namespace sg {
namespace {

/// The arguments of the patch tool: {"patch": [RFC 6902 operations]}.
nlohmann::json patch_tool_parameters() {
  const nlohmann::json op = {
      {"type", "object"},
      {"properties",
       {{"op",
         {{"type", "string"}, {"enum", {"add", "remove", "replace", "move", "copy", "test"}}}},
        {"path",
         {{"type", "string"},
          {"description", "A JSON pointer into the profile, e.g. \"/name\" or \"/likes/-\"."}}},
        {"from", {{"type", "string"}, {"description", "The source pointer of move and copy."}}},
        {"value", {{"description", "The value of add, replace and test."}}}}},
      {"required", {"op", "path"}},
      {"additionalProperties", false}};
  return {{"type", "object"},
          {"properties",
           {{"patch",
             {{"type", "array"},
              {"items", op},
              {"description", "An RFC 6902 JSON Patch: the operations, applied in order."}}}}},
          {"required", {"patch"}},
          {"additionalProperties", false}};
}

}  // namespace

ProfileMemory::ProfileMemory(ProfileOptions options)
    : options_(std::make_shared<const ProfileOptions>(std::move(options))),
      schema_(std::make_shared<const JsonSchema>(options_->schema)),
      tool_schema_(std::make_shared<const JsonSchema>(patch_tool_parameters())),
      mu_(std::make_shared<std::mutex>()) {
  if (options_->key.empty()) throw Error(errc::kInvalidArgument, "ProfileMemory: empty key");
  if (options_->tool_name.empty())
    throw Error(errc::kInvalidArgument, "ProfileMemory: empty tool name");
  if (options_->max_attempts < 1)
    throw Error(errc::kInvalidArgument, "ProfileMemory: max_attempts must be at least 1");
  if (!options_->initial.is_object())
    throw Error(errc::kInvalidArgument, "ProfileMemory: the initial document must be an object");
  schema_->validate(options_->initial, "ProfileMemory: the initial document");
}

nlohmann::json ProfileMemory::get(Store& store, const nlohmann::json& configurable) const {
  const Namespace ns = options_->ns.resolve(configurable);
  auto item = store.get(ns, options_->key);
  if (!item) return options_->initial;
  return std::move(item->value);
}

nlohmann::json ProfileMemory::patch(Store& store, const nlohmann::json& configurable,
                                    const nlohmann::json& patch) const {
  const Namespace ns = options_->ns.resolve(configurable);
  if (!patch.is_array())
    throw Error(errc::kInvalidArgument, "profile patch: a JSON Patch is an array of operations");
  std::lock_guard lock(*mu_);
  const nlohmann::json current = get(store, configurable);
  nlohmann::json next;
  try {
    next = current.patch(patch);
  } catch (const nlohmann::json::exception& e) {
    throw Error(errc::kInvalidArgument,
                "profile patch does not apply, the profile is unchanged: " + std::string(e.what()));
  }
  if (!next.is_object()) {
    throw Error(errc::kInvalidArgument, "profile patch would make the profile a " +
                                            std::string(next.type_name()) +
                                            ", not an object; the profile is unchanged");
  }
  schema_->validate(next, "the patched profile (unchanged)");
  store.put(ns, options_->key, next);
  return next;
}

std::vector<Message> ProfileMemory::update_prompt(const nlohmann::json& document,
                                                  std::span<const Message> conversation) const {
  const std::string& tool = options_->tool_name;
  std::string text = "<schema>\n" + options_->schema.dump(2) + "\n</schema>\n\n<profile>\n" +
                     document.dump(2) + "\n</profile>\n\n<conversation>\n" +
                     nodes_detail::conversation_text(conversation) +
                     "\n</conversation>\n\n"
                     "Update the profile with what the conversation tells about the user: call " +
                     tool +
                     " with an RFC 6902 JSON Patch (operations add, remove, replace, move, copy, "
                     "test; paths are JSON pointers such as \"/name\" or \"/likes/-\"). Keep what "
                     "is still true; change only what the conversation adds or contradicts. The "
                     "patched profile must match the schema. If nothing should change, answer "
                     "without calling " +
                     tool + ".";
  return {sg::system(options_->instructions), human(std::move(text))};
}

ProfileUpdate ProfileMemory::update(const ChatModel& model, Store& store,
                                    const nlohmann::json& configurable,
                                    std::span<const Message> conversation,
                                    CancellationToken cancellation) const {
  ChatOptions call = options_->model_options;
  call.tools.push_back(ToolSpec{options_->tool_name,
                                "Apply an RFC 6902 JSON Patch to the user's profile.",
                                patch_tool_parameters()});
  if (cancellation.can_cancel()) call.cancellation = cancellation;
  ProfileUpdate result;
  result.document = get(store, configurable);
  auto accept = [&](const Message& reply) {
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& c : reply.tool_calls) {
      if (c.name != options_->tool_name) {
        throw Error(errc::kInvalidArgument,
                    "unknown tool '" + c.name + "': call " + options_->tool_name);
      }
      tool_schema_->validate(c.args, "the arguments of " + options_->tool_name);
      for (const auto& op : c.args["patch"]) ops.push_back(op);
    }
    if (!reply.invalid_tool_calls.empty()) {
      throw Error(errc::kInvalidArgument,
                  "a tool call could not be parsed: " + reply.invalid_tool_calls.front().error);
    }
    if (ops.empty()) return;  // nothing to change
    result.document = patch(store, configurable, ops);
    result.patch = std::move(ops);
  };
  result.attempts =
      nodes_detail::ask_until_accepted(model, update_prompt(result.document, conversation), call,
                                       options_->max_attempts, "profile update", accept);
  return result;
}

Tool ProfileMemory::tool() const {
  ProfileMemory self = *this;
  Tool::Fn fn = [self](const nlohmann::json& args, const ToolRuntime& runtime) -> ToolResult {
    const nlohmann::json checked = args.is_null() ? nlohmann::json::object() : args;
    self.tool_schema_->validate(checked, "the arguments of " + self.options_->tool_name);
    if (!runtime.store) {
      throw Error(errc::kInvalidArgument,
                  "tool '" + self.options_->tool_name + "' needs a graph compiled with a store");
    }
    const nlohmann::json configurable =
        runtime.context ? runtime.context->config().configurable : nlohmann::json();
    ToolResult result;
    result.content =
        "profile updated: " + self.patch(*runtime.store, configurable, checked["patch"]).dump();
    return result;
  };
  return Tool(options_->tool_name,
              "Update the user's profile (a JSON document matching this schema: " +
                  options_->schema.dump() + ") with an RFC 6902 JSON Patch.",
              patch_tool_parameters(), std::move(fn));
}

}  // namespace sg
