// SPDX-License-Identifier: MIT
// Writing memories on the hot path: NamespaceTemplate, then the manage_memory and search_memory
// tools called directly and by the ReAct agent (LocalModel with scripted tool calls).
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/react_agent.hpp>
#include <stategraph/nodes/memory_tools.hpp>
#include <stategraph/store/memory_store.hpp>

#include <doctest/doctest.h>

namespace {

using nlohmann::json;

sg::Message call(std::string tool, json args, std::string id = "c1") {
  return sg::ai("", {sg::ToolCall{std::move(id), std::move(tool), std::move(args)}});
}

sg::Update<sg::AgentState> say(std::string text) {
  sg::Update<sg::AgentState> u;
  u.set<&sg::AgentState::messages>(std::vector<sg::Message>{sg::human(std::move(text))});
  return u;
}

sg::RunConfig user(std::string id) {
  sg::RunConfig config;
  config.configurable = {{"user_id", std::move(id)}};
  return config;
}

/// The tool message answering the last tool call of a run.
const sg::Message& tool_reply(const sg::AgentState& state) {
  for (auto it = state.messages.rbegin(); it != state.messages.rend(); ++it)
    if (it->type == sg::MessageType::tool) return *it;
  FAIL("no tool message");
  return state.messages.front();
}

std::string call_text(const sg::Tool& tool, const json& args, sg::Store* store) {
  sg::ToolRuntime runtime;
  runtime.store = store;
  return tool.call(args, runtime).content.get<std::string>();
}

}  // namespace

TEST_CASE("NamespaceTemplate fills placeholders from configurable values") {
  const sg::NamespaceTemplate ns{"memories", "{user_id}", "{app}"};
  CHECK(ns.keys() == std::vector<std::string>{"user_id", "app"});
  CHECK(ns.resolve({{"user_id", "u1"}, {"app", "chat"}, {"other", 1}}) ==
        sg::Namespace{"memories", "u1", "chat"});
  CHECK(ns.resolve({{"user_id", 42}, {"app", "chat"}}) == sg::Namespace{"memories", "42", "chat"});
  CHECK_THROWS_WITH_AS(
      (void)ns.resolve({{"app", "chat"}, {"thread_id", "t"}}),
      "namespace template (memories, {user_id}, {app}): missing key 'user_id' in the run's "
      "configurable values (available: app, thread_id)",
      sg::Error);
  CHECK_THROWS_WITH_AS((void)ns.resolve(nullptr),
                       doctest::Contains("missing key 'user_id' in the run's configurable values "
                                         "(available: none)"),
                       sg::Error);
  CHECK_THROWS_WITH_AS((void)ns.resolve({{"user_id", {1}}, {"app", "x"}}),
                       doctest::Contains("must be a string or an integer, not [1]"), sg::Error);
  // The filled namespace obeys the store's rules.
  CHECK_THROWS_AS((void)ns.resolve({{"user_id", "a.b"}, {"app", "x"}}), sg::InvalidNamespaceError);
  CHECK_THROWS_AS((void)ns.resolve({{"user_id", ""}, {"app", "x"}}), sg::InvalidNamespaceError);
  // A plain namespace needs nothing; outside a node resolve() has no configurable values.
  const sg::NamespaceTemplate fixed{"agent_instructions"};
  CHECK(fixed.keys().empty());
  CHECK(fixed.resolve() == sg::Namespace{"agent_instructions"});
  CHECK_THROWS_WITH_AS((void)ns.resolve(), doctest::Contains("missing key 'user_id'"), sg::Error);
  CHECK_THROWS_AS(sg::NamespaceTemplate(sg::Namespace{}), sg::Error);
  CHECK_THROWS_AS((sg::NamespaceTemplate{"a", ""}), sg::Error);
  CHECK_THROWS_AS((sg::NamespaceTemplate{"a", "{}"}), sg::Error);
  CHECK(sg::to_string(ns) == "(memories, {user_id}, {app})");
}

TEST_CASE("manage_memory creates, updates and deletes memories, and refuses bad calls") {
  auto store = std::make_shared<sg::InMemoryStore>();
  sg::ManageMemoryToolOptions options;
  options.ns = {"memories", "u1"};
  const sg::Tool tool = sg::make_manage_memory_tool(options);
  CHECK(tool.name() == "manage_memory");
  CHECK(tool.spec().description.rfind("Create, update, or delete a memory to persist", 0) == 0);
  CHECK(tool.spec().parameters["properties"]["action"]["enum"] ==
        json{"create", "update", "delete"});

  const std::string created = call_text(tool, {{"content", "Likes green tea"}}, store.get());
  REQUIRE(created.rfind("created memory ", 0) == 0);
  const std::string id = created.substr(std::string("created memory ").size());
  const sg::Namespace ns{"memories", "u1"};
  REQUIRE(store->get(ns, id));
  CHECK(store->get(ns, id)->value == json{{"content", "Likes green tea"}});

  CHECK(call_text(tool, {{"action", "update"}, {"id", id}, {"content", "Likes oolong"}},
                  store.get()) == "updated memory " + id);
  CHECK(store->get(ns, id)->value == json{{"content", "Likes oolong"}});

  // Bad calls throw (ToolNode makes them error messages) and change nothing.
  auto refused = [&](const json& args) {
    try {
      (void)call_text(tool, args, store.get());
    } catch (const sg::Error& e) {
      CHECK(e.code() == sg::errc::kInvalidArgument);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refused({{"action", "create"}, {"id", id}, {"content", "x"}})
            .find("cannot provide a MEMORY ID when creating") != std::string::npos);
  CHECK(refused({{"action", "update"}, {"content", "x"}}).find("must provide a MEMORY ID") !=
        std::string::npos);
  CHECK(refused({{"action", "update"}, {"id", id}}).find("must provide the content") !=
        std::string::npos);
  CHECK(refused({{"action", "update"}, {"id", "nope"}, {"content", "x"}}) ==
        "There is no MEMORY with ID nope in namespace memories.u1.");
  CHECK(refused({{"action", "archive"}, {"id", id}}) ==
        "the arguments of tool 'manage_memory' does not match its schema: /action: \"archive\" "
        "is not one of [\"create\",\"update\",\"delete\"]");
  CHECK(refused({{"content", 5}}).find("/content: expected string, got integer") !=
        std::string::npos);
  CHECK(refused({{"content", "x"}, {"colour", "red"}}).find("property 'colour' is not allowed") !=
        std::string::npos);
  CHECK(store->get(ns, id)->value == json{{"content", "Likes oolong"}});
  CHECK(store->search({.prefix = ns}).size() == 1);

  CHECK(call_text(tool, {{"action", "delete"}, {"id", id}}, store.get()) == "deleted memory " + id);
  CHECK_FALSE(store->get(ns, id));
  CHECK(refused({{"action", "delete"}, {"id", id}}).find("There is no MEMORY") == 0);

  // No store: neither its own nor a graph's.
  CHECK_THROWS_WITH_AS((void)call_text(tool, {{"content", "x"}}, nullptr),
                       doctest::Contains("has no store"), sg::Error);
}

TEST_CASE("manage_memory takes structured content and a subset of the actions") {
  auto store = std::make_shared<sg::InMemoryStore>();
  sg::ManageMemoryToolOptions options;
  options.ns = {"prefs", "u1"};
  options.name = "save_preference";
  options.actions = {"create", "update"};
  options.store = store;
  options.content_schema = {
      {"type", "object"},
      {"properties", {{"category", {{"type", "string"}}}, {"preference", {{"type", "string"}}}}},
      {"required", {"category", "preference"}}};
  const sg::Tool tool = sg::make_manage_memory_tool(options);
  CHECK(tool.spec().description.rfind("Create or update a memory", 0) == 0);
  const std::string created =
      call_text(tool, {{"content", {{"category", "ui"}, {"preference", "dark mode"}}}}, nullptr);
  const std::string id = created.substr(std::string("created memory ").size());
  CHECK(store->get({"prefs", "u1"}, id)->value["content"]["preference"] == "dark mode");
  CHECK_THROWS_WITH_AS((void)call_text(tool, {{"content", {{"category", "ui"}}}}, nullptr),
                       doctest::Contains("/content: missing required property 'preference'"),
                       sg::Error);
  CHECK_THROWS_WITH_AS((void)call_text(tool, {{"action", "delete"}, {"id", id}}, nullptr),
                       doctest::Contains("is not one of [\"create\",\"update\"]"), sg::Error);

  options.actions = {};
  CHECK_THROWS_AS((void)sg::make_manage_memory_tool(options), sg::Error);
  options.actions = {"create", "forget"};
  CHECK_THROWS_WITH_AS((void)sg::make_manage_memory_tool(options),
                       doctest::Contains("unknown action 'forget'"), sg::Error);
  options.actions = {"create"};
  options.content_schema = {{"type", "string"}, {"format", "email"}};
  CHECK_THROWS_WITH_AS((void)sg::make_manage_memory_tool(options),
                       doctest::Contains("unsupported keyword 'format'"), sg::Error);
}

TEST_CASE("the ReAct agent writes, finds and fixes memories with the tools, per user") {
  auto store = std::make_shared<sg::InMemoryStore>(
      sg::TtlConfig{}, sg::IndexConfig{std::make_shared<sg::HashedNgramEmbeddings>(), {"content"}});
  auto model = std::make_shared<sg::LocalModel>();
  auto agent = sg::create_react_agent(
      model, {sg::make_manage_memory_tool(), sg::make_search_memory_tool()}, {.store = store});

  // Thread 1: the model decides to remember something (scripted tool call), then answers.
  model->script({call("manage_memory", {{"content", "The user likes green tea"}}),
                 sg::ai("I will remember that you like green tea.")});
  auto first = agent.invoke(say("I like green tea."), user("u1")).state;
  const sg::Message& created = tool_reply(first);
  CHECK(created.status == "success");
  REQUIRE(created.text().rfind("created memory ", 0) == 0);
  const std::string id = created.text().substr(std::string("created memory ").size());
  CHECK(first.messages.back().text() == "I will remember that you like green tea.");
  CHECK(store->get({"memories", "u1"}, id)->value["content"] == "The user likes green tea");

  // Thread 2 (same user): the memory is found by similarity, then corrected.
  model->script({call("search_memory", {{"query", "What tea does the user like?"}}),
                 sg::ai("You like green tea.")});
  auto second = agent.invoke(say("What tea do I like?"), user("u1")).state;
  const json hits = json::parse(tool_reply(second).text());
  REQUIRE(hits.size() == 1);
  CHECK(hits[0]["key"] == id);
  CHECK(hits[0]["namespace"] == json{"memories", "u1"});
  CHECK(hits[0]["value"]["content"] == "The user likes green tea");
  CHECK(hits[0]["score"].get<double>() > 0.2);

  model->script({call("manage_memory",
                      {{"action", "update"}, {"id", id}, {"content", "The user likes oolong tea"}}),
                 sg::ai("Updated.")});
  (void)agent.invoke(say("Actually I prefer oolong now."), user("u1"));
  CHECK(store->get({"memories", "u1"}, id)->value["content"] == "The user likes oolong tea");

  // Another user sees none of it.
  model->script({call("search_memory", {{"query", "tea"}}), sg::ai("Nothing yet.")});
  auto other = agent.invoke(say("What do I like?"), user("u2")).state;
  CHECK(tool_reply(other).text() == "[]");

  // A bad call becomes an error message the model reads, and changes nothing.
  model->script(
      {call("manage_memory", {{"action", "delete"}, {"id", "made-up"}}), sg::ai("Sorry.")});
  auto bad = agent.invoke(say("Forget everything."), user("u1")).state;
  CHECK(tool_reply(bad).status == "error");
  CHECK(tool_reply(bad).text().find("There is no MEMORY with ID made-up") != std::string::npos);
  CHECK(store->get({"memories", "u1"}, id));

  // Without the user id the namespace cannot be filled: a clear error, nothing written.
  model->script({call("manage_memory", {{"content", "orphan"}}), sg::ai("Hm.")});
  auto anonymous = agent.invoke(say("Remember this."), sg::RunConfig{}).state;
  CHECK(tool_reply(anonymous).status == "error");
  CHECK(tool_reply(anonymous).text().find("missing key 'user_id'") != std::string::npos);
  CHECK(store->search({.prefix = {"memories"}}).size() == 1);
  CHECK(model->scripted() == 0);
}

TEST_CASE("search_memory pages, filters and lists without a query") {
  // A clock that ticks once per reading: "most recently updated" is the order of the puts.
  sg::TtlConfig ttl;
  ttl.clock = [t = std::make_shared<int>(0)] {
    return sg::StoreClock::time_point{} + std::chrono::seconds(++*t);
  };
  auto store = std::make_shared<sg::InMemoryStore>(ttl);
  for (int i = 0; i < 5; ++i)
    store->put({"memories", "u1"}, "m" + std::to_string(i),
               {{"content", "fact " + std::to_string(i)}, {"n", i}});
  sg::SearchMemoryToolOptions options;
  options.ns = {"memories", "u1"};
  options.store = store;
  options.max_limit = 3;
  const sg::Tool tool = sg::make_search_memory_tool(options);
  auto keys = [&](const json& args) {
    std::vector<std::string> out;
    for (const auto& hit : json::parse(call_text(tool, args, nullptr)))
      out.push_back(hit["key"].get<std::string>());
    return out;
  };
  CHECK(keys({{"query", ""}, {"limit", 2}}) == std::vector<std::string>{"m4", "m3"});
  CHECK(keys({{"query", ""}, {"limit", 2}, {"offset", 2}}) == std::vector<std::string>{"m2", "m1"});
  CHECK(keys({{"query", ""}, {"filter", {{"n", {{"$gte", 3}}}}}}) ==
        std::vector<std::string>{"m4", "m3"});
  CHECK_THROWS_WITH_AS((void)keys({{"query", ""}, {"limit", 4}}),
                       doctest::Contains("/limit: 4 is greater than the maximum 3"), sg::Error);
  CHECK_THROWS_WITH_AS((void)keys({{"limit", 1}}),
                       doctest::Contains("missing required property 'query'"), sg::Error);
  // A query needs a store with an index: the store's own error.
  CHECK_THROWS_WITH_AS((void)keys({{"query", "fact"}}), doctest::Contains("IndexConfig"),
                       sg::Error);
}
