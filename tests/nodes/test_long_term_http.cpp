// SPDX-License-Identifier: MIT
// Long-term memory over real HTTP: OpenAIChatModel against the loopback OpenAI-wire server. What
// the memory tools, the profile update and the collection update send (tools, prompts, the error
// fed back for a retry), and what they store from the server's tool calls.
#include <stategraph/models/openai.hpp>
#include <stategraph/models/react_agent.hpp>
#include <stategraph/nodes/memory_collection.hpp>
#include <stategraph/nodes/memory_tools.hpp>
#include <stategraph/nodes/profile.hpp>
#include <stategraph/store/memory_store.hpp>

#include <doctest/doctest.h>
#include <support/loopback_openai.hpp>

namespace {

using nlohmann::json;

std::shared_ptr<sg::OpenAIChatModel> client(const sg::testing::LoopbackOpenAI& server) {
  sg::OpenAIConfig config;
  config.base_url = server.base_url();
  config.model = "loopback";
  config.max_retries = 0;
  return std::make_shared<sg::OpenAIChatModel>(config);
}

const json* find_tool(const json& request, const std::string& name) {
  for (const auto& t : request["tools"])
    if (t["function"]["name"] == name) return &t;
  return nullptr;
}

}  // namespace

TEST_CASE("over HTTP, the agent's manage_memory call stores a memory in the user's namespace") {
  sg::testing::LoopbackOpenAI server;
  server.push(sg::testing::LoopbackReply::tool_calls(
      {{"manage_memory", {{"content", "Prefers Go for backend work"}}}}));
  server.push(sg::testing::LoopbackReply::text("Noted, Go it is."));
  auto store = std::make_shared<sg::InMemoryStore>();
  auto agent = sg::create_react_agent(
      client(server), {sg::make_manage_memory_tool(), sg::make_search_memory_tool()},
      {.store = store});
  sg::RunConfig config;
  config.configurable = {{"user_id", "team-x"}};
  const auto result =
      agent.invoke(sg::Update<sg::AgentState>{}.set<&sg::AgentState::messages>(
                       std::vector<sg::Message>{sg::human("We like golang more than python.")}),
                   config);
  CHECK(result.state.messages.back().text() == "Noted, Go it is.");
  const auto memories = store->search({.prefix = {"memories", "team-x"}});
  REQUIRE(memories.size() == 1);
  CHECK(memories[0].item.value == json{{"content", "Prefers Go for backend work"}});

  const auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  const json first = requests[0].json();
  const json* manage = find_tool(first, "manage_memory");
  REQUIRE(manage);
  CHECK((*manage)["function"]["parameters"]["properties"]["action"]["enum"] ==
        json{"create", "update", "delete"});
  CHECK((*manage)["function"]["description"].get<std::string>().find("Proactively call") !=
        std::string::npos);
  REQUIRE(find_tool(first, "search_memory"));
  // The tool's answer went back to the model.
  const json sent = requests[1].json()["messages"];
  CHECK(sent.back()["role"] == "tool");
  CHECK(sent.back()["tool_call_id"] == "call_0");
  CHECK(sent.back()["content"] == "created memory " + memories[0].item.key);
}

TEST_CASE("over HTTP, a rejected profile patch goes back to the model with the error") {
  sg::testing::LoopbackOpenAI server;
  server.push(sg::testing::LoopbackReply::tool_calls(
      {{"patch_profile", {{"patch", {{{"op", "add"}, {"path", "/age"}, {"value", "sixty"}}}}}}}));
  server.push(sg::testing::LoopbackReply::tool_calls(
      {{"patch_profile", {{"patch", {{{"op", "add"}, {"path", "/age"}, {"value", 60}}}}}}}));
  sg::InMemoryStore store;
  sg::ProfileOptions options;
  options.schema = {{"type", "object"},
                    {"properties", {{"age", {{"type", "integer"}, {"minimum", 0}}}}},
                    {"additionalProperties", false}};
  const sg::ProfileMemory profile(options);
  const json user = {{"user_id", "u1"}};
  const auto model = client(server);
  const auto update =
      profile.update(*model, store, user, std::vector{sg::human("I'm 60 years old.")});
  CHECK(update.attempts == 2);
  CHECK(profile.get(store, user) == json{{"age", 60}});

  const auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  const json first = requests[0].json();
  REQUIRE(find_tool(first, "patch_profile"));
  CHECK(first["messages"][0]["role"] == "system");
  CHECK(first["messages"][1]["content"].get<std::string>().find("Human: I'm 60 years old.") !=
        std::string::npos);
  const json retry = requests[1].json()["messages"];
  REQUIRE(retry.size() == 4);
  CHECK(retry[2]["role"] == "assistant");
  CHECK(retry[2]["tool_calls"][0]["function"]["name"] == "patch_profile");
  CHECK(retry[3]["role"] == "tool");
  CHECK(retry[3]["tool_call_id"] == "call_0");
  CHECK(retry[3]["content"].get<std::string>().find("/age: expected integer, got string") !=
        std::string::npos);
}

TEST_CASE("over HTTP, the collection applies the model's parallel tool calls") {
  sg::testing::LoopbackOpenAI server;
  server.push(sg::testing::LoopbackReply::tool_calls(
      {{"insert_memory", {{"content", "The user plays the cello"}}},
       {"delete_memory", {{"id", "m-piano"}}}}));
  sg::InMemoryStore store;
  store.put({"memories", "u1"}, "m-piano", {{"content", "The user plays the piano"}});
  const sg::MemoryCollection memories;
  const json user = {{"user_id", "u1"}};
  const auto model = client(server);
  const auto changes = memories.update(
      *model, store, user, std::vector{sg::human("I gave up the piano; I play the cello now.")});
  REQUIRE(changes.size() == 2);
  const auto now = memories.list(store, user);
  REQUIRE(now.size() == 1);
  CHECK(now[0].content == "The user plays the cello");
  const json request = server.requests().at(0).json();
  CHECK(find_tool(request, "insert_memory"));
  CHECK(find_tool(request, "update_memory"));
  CHECK(find_tool(request, "delete_memory"));
  CHECK(request["messages"][1]["content"].get<std::string>().find(
            R"({"content":"The user plays the piano","id":"m-piano"})") != std::string::npos);
}
