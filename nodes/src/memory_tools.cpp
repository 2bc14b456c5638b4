// SPDX-License-Identifier: MIT
#include <stategraph/core/context.hpp>
#include <stategraph/core/error.hpp>
#include <stategraph/core/uuid.hpp>
#include <stategraph/nodes/json_schema.hpp>
#include <stategraph/nodes/memory_tools.hpp>

#include <algorithm>

namespace sg {
namespace {

/// The store a tool call uses: the tool's own, else its graph's.
Store& tool_store(const std::shared_ptr<Store>& own, const ToolRuntime& runtime,
                  const std::string& tool) {
  if (own) return *own;
  if (runtime.store) return *runtime.store;
  throw Error(errc::kInvalidArgument, "tool '" + tool +
                                          "' has no store: give it one, or compile its graph "
                                          "with a store");
}

/// The namespace of a tool call, from the run's configurable values.
Namespace tool_namespace(const NamespaceTemplate& ns, const ToolRuntime& runtime) {
  if (runtime.context) return ns.resolve(runtime.context->config().configurable);
  return ns.resolve();
}

/// The arguments as an object, checked against the tool's schema.
nlohmann::json checked_args(const JsonSchema& schema, const nlohmann::json& args,
                            const std::string& tool) {
  nlohmann::json out = args.is_null() ? nlohmann::json::object() : args;
  schema.validate(out, "the arguments of tool '" + tool + "'");
  return out;
}

std::string verbs(const std::vector<std::string>& actions) {
  std::string out;
  for (std::size_t i = 0; i < actions.size(); ++i) {
    std::string a = actions[i];
    if (i == 0) a[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(a[0])));
    out += (i == 0                    ? ""
            : i + 1 == actions.size() ? (actions.size() == 2 ? " or " : ", or ")
                                      : ", ");
    out += a;
  }
  return out + " a memory";
}

}  // namespace

Tool make_manage_memory_tool(ManageMemoryToolOptions options) {
  if (options.actions.empty())
    throw Error(errc::kInvalidArgument, "make_manage_memory_tool: no actions permitted");
  for (const auto& a : options.actions) {
    if (a != "create" && a != "update" && a != "delete")
      throw Error(errc::kInvalidArgument,
                  "make_manage_memory_tool: unknown action '" + a + "' (create, update or delete)");
  }
  nlohmann::json content = options.content_schema;
  if (content.is_object() && !content.contains("description")) {
    content["description"] =
        "The memory as a well-written, standalone fact, preference or note. Required to create "
        "or update.";
  }
  const std::string default_action =
      std::find(options.actions.begin(), options.actions.end(), "create") != options.actions.end()
          ? "create"
          : options.actions.front();
  nlohmann::json parameters = {
      {"type", "object"},
      {"properties",
       {{"content", content},
        {"action", {{"type", "string"}, {"enum", options.actions}, {"default", default_action}}},
        {"id",
         {{"type", "string"},
          {"description", "The MEMORY ID, to update or delete a memory; omit to create one."}}}}},
      {"required", nlohmann::json::array()},
      {"additionalProperties", false}};
  auto schema = std::make_shared<const JsonSchema>(parameters);  // throws for a bad content_schema
  std::string description = verbs(options.actions) +
                            " to persist across conversations.\nInclude the MEMORY ID when "
                            "updating or deleting a MEMORY. Omit when creating a new MEMORY - it "
                            "will be created for you.\n" +
                            options.instructions;
  const std::string name = options.name;
  Tool::Fn fn = [options = std::move(options), schema, default_action](
                    const nlohmann::json& raw, const ToolRuntime& runtime) -> ToolResult {
    const std::string& tool = options.name;
    const nlohmann::json args = checked_args(*schema, raw, tool);
    const std::string action = args.value("action", default_action);
    const bool has_id = args.contains("id");
    if (action == "create" && has_id) {
      throw Error(errc::kInvalidArgument,
                  "You cannot provide a MEMORY ID when creating a MEMORY. Please try again, "
                  "omitting the id argument.");
    }
    if (action != "create" && !has_id) {
      throw Error(errc::kInvalidArgument,
                  "You must provide a MEMORY ID when deleting or updating a MEMORY.");
    }
    if (action != "delete" && !args.contains("content")) {
      throw Error(errc::kInvalidArgument,
                  "You must provide the content to " + action + " a MEMORY.");
    }
    Store& store = tool_store(options.store, runtime, tool);
    const Namespace ns = tool_namespace(options.ns, runtime);
    std::string id = has_id ? args["id"].get<std::string>() : new_uuid4();
    if (has_id && !store.get(ns, id)) {
      throw Error(errc::kInvalidArgument,
                  "There is no MEMORY with ID " + id + " in namespace " + join_namespace(ns) + ".");
    }
    ToolResult result;
    if (action == "delete") {
      store.remove(ns, id);
      result.content = "deleted memory " + id;
    } else {
      store.put(ns, id, {{"content", args["content"]}});
      result.content = action + "d memory " + id;
    }
    return result;
  };
  return Tool(name, std::move(description), std::move(parameters), std::move(fn));
}

Tool make_search_memory_tool(SearchMemoryToolOptions options) {
  if (options.max_limit < 1)
    throw Error(errc::kInvalidArgument, "make_search_memory_tool: max_limit must be positive");
  nlohmann::json parameters = {
      {"type", "object"},
      {"properties",
       {{"query",
         {{"type", "string"},
          {"description",
           "What to look for, best phrased as a hypothetical memory; empty: the most recent "
           "memories."}}},
        {"limit",
         {{"type", "integer"}, {"minimum", 1}, {"maximum", options.max_limit}, {"default", 10}}},
        {"offset", {{"type", "integer"}, {"minimum", 0}, {"default", 0}}},
        {"filter",
         {{"type", "object"},
          {"description",
           "Match on the memory's value, e.g. {\"content\": \"...\"}; operators $eq $ne $gt "
           "$gte $lt $lte $in $nin."}}}}},
      {"required", {"query"}},
      {"additionalProperties", false}};
  auto schema = std::make_shared<const JsonSchema>(parameters);
  std::string description =
      "Search your long-term memories for information relevant to your current context. " +
      options.instructions;
  const std::string name = options.name;
  Tool::Fn fn = [options = std::move(options), schema](const nlohmann::json& raw,
                                                       const ToolRuntime& runtime) -> ToolResult {
    const nlohmann::json args = checked_args(*schema, raw, options.name);
    Store& store = tool_store(options.store, runtime, options.name);
    SearchOp op;
    op.prefix = tool_namespace(options.ns, runtime);
    if (const auto query = args["query"].get<std::string>(); !query.empty()) op.query = query;
    op.limit = args.value("limit", std::size_t{10});
    op.offset = args.value("offset", std::size_t{0});
    if (args.contains("filter")) op.filter = args["filter"];
    nlohmann::json hits = nlohmann::json::array();
    for (const auto& hit : store.search(std::move(op))) hits.push_back(to_json(hit));
    ToolResult result;
    result.content = hits.dump();
    return result;
  };
  return Tool(name, std::move(description), std::move(parameters), std::move(fn));
}

}  // namespace sg
