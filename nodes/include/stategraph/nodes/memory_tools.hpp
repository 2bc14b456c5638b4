// SPDX-License-Identifier: MIT
#pragma once
// Writing memories on the hot path: tools the agent calls to create, update, delete
// and search its memories while it answers, as LangMem's create_manage_memory_tool and
// create_search_memory_tool. Every memory is one store item {"content": ...} under a namespace
// filled from the run's configurable values.
//
//   auto agent = sg::create_react_agent(model, {sg::make_manage_memory_tool(),
//                                               sg::make_search_memory_tool()},
//                                       {.store = store});
//   sg::RunConfig config;
//   config.configurable = {{"user_id", "u1"}};  // memories go to ("memories", "u1")
//   agent.invoke(input, config);

#include <stategraph/models/tool.hpp>
#include <stategraph/nodes/namespace_template.hpp>
#include <stategraph/store/store.hpp>

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace sg {

/// Options of make_manage_memory_tool.
struct ManageMemoryToolOptions {
  /// Where the memories live.
  NamespaceTemplate ns{"memories", "{user_id}"};
  std::string name = "manage_memory";
  /// When the model should call the tool (appended to the tool's description).
  std::string instructions =
      "Proactively call this tool when you:\n"
      "1. Identify a new USER preference.\n"
      "2. Receive an explicit USER request to remember something or otherwise alter your "
      "behavior.\n"
      "3. Are working and want to record important context.\n"
      "4. Identify that an existing MEMORY is incorrect or outdated.\n";
  /// The JSON schema of a memory's content (see JsonSchema for the keywords supported).
  nlohmann::json content_schema = {{"type", "string"}};
  /// The actions the model may take: a non-empty subset of "create", "update", "delete".
  std::vector<std::string> actions{"create", "update", "delete"};
  /// The store; null: the store of the graph running the tool (ToolRuntime::store).
  std::shared_ptr<Store> store{};
};

/// A tool taking {content?, action ("create" by default when permitted), id?}: "create" stores
/// {"content": content} under a new uuid4 key and answers "created memory <id>"; "update"
/// replaces the content of memory `id` ("updated memory <id>"); "delete" removes it ("deleted
/// memory <id>"). Bad calls throw sg::Error (errc::kInvalidArgument), which ToolNode turns into
/// an error message for the model, and change nothing: arguments not matching the tool's schema
/// (an unknown action, content not matching content_schema, an unknown argument), an id given to
/// "create", a missing id or content, an id that names no memory (LangMem would create it), a
/// missing configurable value of the namespace, no store. Throws at construction sg::Error
/// (errc::kInvalidArgument) for no actions or an unknown one, or an invalid content_schema.
/// Thread-safe.
[[nodiscard]] Tool make_manage_memory_tool(ManageMemoryToolOptions options = {});

/// Options of make_search_memory_tool.
struct SearchMemoryToolOptions {
  NamespaceTemplate ns{"memories", "{user_id}"};
  std::string name = "search_memory";
  /// Appended to the tool's description.
  std::string instructions{};
  /// The most results one call may ask for.
  int max_limit = 50;
  std::shared_ptr<Store> store{};
};

/// A tool taking {query, limit? (default 10), offset? (default 0), filter?} and answering with
/// the JSON array of the matching items (sg::to_json(SearchItem): namespace, key, value,
/// created_at, updated_at, score), best first. A non-empty query ranks by similarity and needs a
/// store with an IndexConfig; an empty one lists the most recently updated memories. Bad calls
/// throw sg::Error (errc::kInvalidArgument) and store errors propagate, as for
/// make_manage_memory_tool. Thread-safe.
[[nodiscard]] Tool make_search_memory_tool(SearchMemoryToolOptions options = {});

}  // namespace sg
