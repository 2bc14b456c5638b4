// SPDX-License-Identifier: MIT
// Managing memories: a profile per user updated by JSON Patch and validated by its schema
// (ProfileMemory), and a collection the model inserts into, updates and deletes from
// (MemoryCollection); the model decisions are scripted replies of sg::LocalModel.
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/react_agent.hpp>
#include <stategraph/nodes/memory_collection.hpp>
#include <stategraph/nodes/profile.hpp>
#include <stategraph/store/memory_store.hpp>

#include <doctest/doctest.h>

namespace {

using nlohmann::json;

const json kConfU1 = {{"user_id", "u1"}};

sg::ProfileOptions profile_options() {
  sg::ProfileOptions o;
  o.schema = {{"type", "object"},
              {"properties",
               {{"name", {{"type", "string"}, {"minLength", 1}}},
                {"age", {{"type", "integer"}, {"minimum", 0}}},
                {"likes", {{"type", "array"}, {"items", {{"type", "string"}}}}}}},
              {"required", {"likes"}},
              {"additionalProperties", false}};
  o.initial = {{"likes", json::array()}};
  return o;
}

sg::Message patch_call(json ops, std::string id = "p1") {
  return sg::ai("", {sg::ToolCall{std::move(id), "patch_profile", {{"patch", std::move(ops)}}}});
}

std::vector<sg::Message> chat() {
  return {sg::human("Hi, I'm Ada and I'm 36."), sg::ai("Nice to meet you, Ada."),
          sg::human("I love hiking.")};
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const sg::Error& e) {
    CHECK(e.code() == sg::errc::kInvalidArgument);
    return e.what();
  }
  return "no error";
}

sg::ToolCall memory_call(std::string name, json args, std::string id) {
  return sg::ToolCall{std::move(id), std::move(name), std::move(args)};
}

}  // namespace

TEST_CASE("ProfileMemory applies JSON Patches, validated by the schema, per user") {
  sg::InMemoryStore store;
  const sg::ProfileMemory profile(profile_options());
  CHECK(profile.get(store, kConfU1) == json{{"likes", json::array()}});  // the initial document

  const json doc = profile.patch(store, kConfU1, R"([
      {"op": "add", "path": "/name", "value": "Ada"},
      {"op": "add", "path": "/likes/-", "value": "hiking"},
      {"op": "add", "path": "/age", "value": 36}])"_json);
  const json expected = {{"name", "Ada"}, {"age", 36}, {"likes", {"hiking"}}};
  CHECK(doc == expected);
  CHECK(store.get({"profiles", "u1"}, "profile")->value == expected);
  CHECK(profile.get(store, {{"user_id", "u2"}}) == json{{"likes", json::array()}});

  // Every bad patch leaves the stored document exactly as it was, and says why.
  CHECK(error_of([&] {
          (void)profile.patch(store, kConfU1,
                              R"([{"op": "replace", "path": "/nickname", "value": "A"}])"_json);
        }).find("profile patch does not apply, the profile is unchanged") == 0);
  CHECK(error_of([&] {
          (void)profile.patch(store, kConfU1, R"([
              {"op": "replace", "path": "/age", "value": 37},
              {"op": "test", "path": "/name", "value": "Bob"}])"_json);
        }).find("does not apply") != std::string::npos);
  CHECK(error_of([&] {
          (void)profile.patch(store, kConfU1,
                              R"([{"op": "replace", "path": "/age", "value": -1}])"_json);
        }) ==
        "the patched profile (unchanged) does not match its schema: /age: -1 is less than "
        "the minimum 0");
  CHECK(error_of([&] {
          (void)profile.patch(store, kConfU1, R"([{"op": "remove", "path": "/likes"},
              {"op": "add", "path": "/pet", "value": "cat"}])"_json);
        }) ==
        "the patched profile (unchanged) does not match its schema: (root): missing "
        "required property 'likes'; (root): property 'pet' is not allowed");
  CHECK(error_of([&] {
          (void)profile.patch(store, kConfU1,
                              R"([{"op": "replace", "path": "", "value": [1]}])"_json);
        }).find("would make the profile a array, not an object") != std::string::npos);
  CHECK(error_of([&] {
          (void)profile.patch(store, kConfU1, {{"op", "add"}});
        }) == "profile patch: a JSON Patch is an array of operations");
  CHECK(error_of([&] {
          (void)profile.patch(store, kConfU1, R"([{"op": "fly", "path": "/x"}])"_json);
        }).find("does not apply") != std::string::npos);
  CHECK(error_of([&] {
          (void)profile.patch(store, json::object(), json::array());
        }).find("missing key 'user_id'") != std::string::npos);
  CHECK(store.get({"profiles", "u1"}, "profile")->value == expected);

  // The schema and the initial document are checked up front.
  auto bad = profile_options();
  bad.initial = json::object();  // lacks "likes"
  CHECK(error_of([&] { sg::ProfileMemory p(bad); }).find("initial document") != std::string::npos);
  bad = profile_options();
  bad.schema["properties"]["name"]["pattern"] = "^[A-Z]";
  CHECK(error_of([&] { sg::ProfileMemory p(bad); }).find("unsupported keyword 'pattern'") !=
        std::string::npos);
  bad = profile_options();
  bad.max_attempts = 0;
  CHECK_THROWS_AS(sg::ProfileMemory{bad}, sg::Error);
}

TEST_CASE("ProfileMemory::update applies the model's patch and retries a rejected one") {
  sg::InMemoryStore store;
  const sg::ProfileMemory profile(profile_options());
  sg::LocalModel model;
  // The model first proposes an invalid patch, then fixes it after reading the error.
  model.script({patch_call(R"([{"op": "add", "path": "/age", "value": "36"}])"_json),
                patch_call(R"([{"op": "add", "path": "/name", "value": "Ada"},
                               {"op": "add", "path": "/age", "value": 36},
                               {"op": "add", "path": "/likes/-", "value": "hiking"}])"_json,
                           "p2")});
  const auto result = profile.update(model, store, kConfU1, chat());
  CHECK(result.attempts == 2);
  CHECK(result.changed());
  CHECK(result.patch.size() == 3);
  const json expected = {{"name", "Ada"}, {"age", 36}, {"likes", {"hiking"}}};
  CHECK(result.document == expected);
  CHECK(profile.get(store, kConfU1) == expected);

  // No tool call: nothing to change.
  model.script({sg::ai("Nothing new about the user.")});
  const auto same = profile.update(model, store, kConfU1, chat());
  CHECK_FALSE(same.changed());
  CHECK(same.attempts == 1);
  CHECK(same.document == expected);

  // Rejected every time: an error after max_attempts calls, the profile unchanged.
  model.script({patch_call(R"([{"op": "remove", "path": "/likes"}])"_json),
                patch_call(R"([{"op": "remove", "path": "/likes"}])"_json),
                patch_call(R"([{"op": "remove", "path": "/likes"}])"_json), sg::ai("not reached")});
  CHECK(error_of([&] { (void)profile.update(model, store, kConfU1, chat()); }) ==
        "profile update: the model's proposal was rejected 3 times; nothing was changed. Last "
        "error: the patched profile (unchanged) does not match its schema: (root): missing "
        "required property 'likes'");
  CHECK(model.scripted() == 1);
  CHECK(profile.get(store, kConfU1) == expected);
  (void)model.invoke({sg::human("drain")});

  // A call to another tool, or arguments that are not a patch, are rejected the same way.
  model.script({sg::ai("", {sg::ToolCall{"x", "delete_profile", json::object()}}),
                sg::ai("", {sg::ToolCall{"y", "patch_profile", {{"ops", json::array()}}}})});
  auto one_try = profile_options();
  one_try.max_attempts = 1;
  const sg::ProfileMemory strict(one_try);
  CHECK(error_of([&] {
          (void)strict.update(model, store, kConfU1, chat());
        }).find("unknown tool 'delete_profile'") != std::string::npos);
  CHECK(error_of([&] {
          (void)strict.update(model, store, kConfU1, chat());
        }).find("missing required property 'patch'") != std::string::npos);
  CHECK(profile.get(store, kConfU1) == expected);

  // What the model is shown: the schema, the current profile, the conversation.
  const auto prompt = profile.update_prompt(expected, chat());
  REQUIRE(prompt.size() == 2);
  CHECK(prompt[0].type == sg::MessageType::system);
  CHECK(prompt[1].text().find("\"minimum\": 0") != std::string::npos);
  CHECK(prompt[1].text().find("\"name\": \"Ada\"") != std::string::npos);
  CHECK(prompt[1].text().find("Human: I love hiking.") != std::string::npos);
}

TEST_CASE("the patch_profile tool updates the profile on the hot path") {
  auto store = std::make_shared<sg::InMemoryStore>();
  const sg::ProfileMemory profile(profile_options());
  auto model = std::make_shared<sg::LocalModel>();
  auto agent = sg::create_react_agent(model, {profile.tool()}, {.store = store});
  sg::RunConfig config;
  config.configurable = kConfU1;
  auto say = [&](const std::string& text) {
    return agent
        .invoke(sg::Update<sg::AgentState>{}.set<&sg::AgentState::messages>(
                    std::vector<sg::Message>{sg::human(text)}),
                config)
        .state;
  };
  model->script({patch_call(R"([{"op": "add", "path": "/name", "value": "Ada"}])"_json),
                 sg::ai("Hello Ada.")});
  auto state = say("I'm Ada.");
  CHECK(state.messages[2].status == "success");
  CHECK(state.messages[2].text() == R"(profile updated: {"likes":[],"name":"Ada"})");
  model->script(
      {patch_call(R"([{"op": "add", "path": "/age", "value": -4}])"_json), sg::ai("Oops.")});
  state = say("I'm minus four.");
  CHECK(state.messages[2].status == "error");
  CHECK(state.messages[2].text().find("/age: -4 is less than the minimum 0") != std::string::npos);
  CHECK(profile.get(*store, kConfU1) == json{{"name", "Ada"}, {"likes", json::array()}});
}

TEST_CASE("MemoryCollection::apply validates every change before writing any") {
  sg::InMemoryStore store;
  const sg::MemoryCollection memories;
  using A = sg::MemoryChange::Action;
  auto applied = memories.apply(store, kConfU1,
                                {{A::insert, "", "Likes tea"}, {A::insert, "fixed", "Has a cat"}});
  REQUIRE(applied.size() == 2);
  CHECK(applied[0].key.size() == 36);  // a uuid4
  CHECK(applied[1].key == "fixed");
  const std::string tea = applied[0].key;
  CHECK(store.get({"memories", "u1"}, tea)->value == json{{"content", "Likes tea"}});

  const auto before = memories.list(store, kConfU1);
  CHECK(before.size() == 2);
  auto rejected = [&](std::vector<sg::MemoryChange> changes) {
    const std::string e = error_of([&] { (void)memories.apply(store, kConfU1, changes); });
    CHECK(memories.list(store, kConfU1).size() == 2);
    CHECK(store.get({"memories", "u1"}, tea)->value == json{{"content", "Likes tea"}});
    return e;
  };
  CHECK(rejected({{A::update, tea, "Likes coffee"}, {A::remove, "ghost", nullptr}}) ==
        "memory change 1 (remove): there is no memory with id ghost in memories.u1");
  CHECK(rejected({{A::update, tea, "Likes coffee"}, {A::remove, tea, nullptr}}) ==
        "memory change 1 (remove): memory " + tea + " is changed twice in one update");
  CHECK(rejected({{A::insert, "", "ok"}, {A::update, tea, 42}}) ==
        "memory change 1 (update): the content does not match its schema: (root): expected "
        "string, got integer");
  CHECK(rejected({{A::insert, "fixed", "again"}}) ==
        "memory change 0 (insert): memory fixed already exists");
  CHECK(rejected({{A::update, "", "x"}}) == "memory change 0 (update): no memory id");

  applied = memories.apply(store, kConfU1,
                           {{A::update, tea, "Likes coffee"}, {A::remove, "fixed", nullptr}});
  const auto after = memories.list(store, kConfU1);
  REQUIRE(after.size() == 1);
  CHECK(after[0].key == tea);
  CHECK(after[0].content == "Likes coffee");
}

TEST_CASE("MemoryCollection::update inserts, updates and deletes as the model decides") {
  auto store = std::make_shared<sg::InMemoryStore>(
      sg::TtlConfig{}, sg::IndexConfig{std::make_shared<sg::HashedNgramEmbeddings>(), {"content"}});
  sg::MemoryCollectionOptions options;
  options.search_by_similarity = true;
  const sg::MemoryCollection memories(options);
  store->put({"memories", "u1"}, "m-tea", {{"content", "The user likes green tea"}});
  store->put({"memories", "u1"}, "m-city", {{"content", "The user lives in Lisbon"}});
  store->put({"memories", "u1"}, "m-cat", {{"content", "The user has a cat"}});

  sg::LocalModel model;
  // One reply, three parallel decisions; the first attempt names a memory that does not exist
  // and is sent back with the error.
  model.script(
      {sg::ai("", {memory_call("delete_memory", {{"id", "m-dog"}}, "c0")}),
       sg::ai("", {memory_call("insert_memory", {{"content", "The user started learning Japanese"}},
                               "c1"),
                   memory_call("update_memory",
                               {{"id", "m-city"}, {"content", "The user lives in Porto"}}, "c2"),
                   memory_call("delete_memory", {{"id", "m-cat"}}, "c3")})});
  const std::vector<sg::Message> conversation = {
      sg::human("I moved to Porto last month."), sg::ai("How exciting!"),
      sg::human("My cat is my sister's, actually. And I started learning Japanese.")};
  const auto changes = memories.update(model, *store, kConfU1, conversation);
  REQUIRE(changes.size() == 3);
  CHECK(changes[0].action == sg::MemoryChange::Action::insert);
  CHECK(changes[1] ==
        sg::MemoryChange{sg::MemoryChange::Action::update, "m-city", "The user lives in Porto"});
  CHECK(changes[2] == sg::MemoryChange{sg::MemoryChange::Action::remove, "m-cat", nullptr});
  std::map<std::string, std::string> now;
  for (const auto& m : memories.list(*store, kConfU1)) now[m.key] = m.content.get<std::string>();
  CHECK(now ==
        std::map<std::string, std::string>{{changes[0].key, "The user started learning Japanese"},
                                           {"m-city", "The user lives in Porto"},
                                           {"m-tea", "The user likes green tea"}});

  // Ranked by similarity to what the user said.
  const auto ranked = memories.list(*store, kConfU1, std::string("Which city do I live in?"), 1);
  REQUIRE(ranked.size() == 1);
  CHECK(ranked[0].key == "m-city");
  CHECK(ranked[0].score.has_value());

  // The prompt shows the memories with their ids.
  const auto prompt = memories.update_prompt(memories.list(*store, kConfU1), conversation);
  CHECK(prompt[1].text().find(R"({"content":"The user likes green tea","id":"m-tea"})") !=
        std::string::npos);
  CHECK(memories.update_prompt({}, conversation)[1].text().find("(none yet)") != std::string::npos);
}

TEST_CASE("MemoryCollection offers only the enabled actions") {
  sg::InMemoryStore store;
  store.put({"memories", "u1"}, "m1", {{"content", "The user likes tea"}});
  sg::MemoryCollectionOptions options;
  options.enable_updates = false;
  options.enable_deletes = false;
  options.max_attempts = 2;
  const sg::MemoryCollection inserts_only(options);
  sg::LocalModel model;
  model.script(
      {sg::ai("", {memory_call("delete_memory", {{"id", "m1"}}, "c1")}),
       sg::ai("", {memory_call("insert_memory", {{"content", "The user likes coffee"}}, "c2")})});
  const auto changes =
      inserts_only.update(model, store, kConfU1, std::vector{sg::human("I like coffee too.")});
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].action == sg::MemoryChange::Action::insert);
  CHECK(inserts_only.list(store, kConfU1).size() == 2);

  model.script({sg::ai("", {memory_call("update_memory", {{"id", "m1"}, {"content", "x"}}, "c3")}),
                sg::ai("", {memory_call("insert_memory", {{"text", "x"}}, "c4")})});
  CHECK(error_of([&] {
          (void)inserts_only.update(model, store, kConfU1, std::vector{sg::human("x")});
        }) ==
        "memory collection update: the model's proposal was rejected 2 times; nothing was "
        "changed. Last error: the arguments of insert_memory does not match its schema: (root): "
        "missing required property 'content'; (root): property 'text' is not allowed");
  CHECK(inserts_only.list(store, kConfU1).size() == 2);

  options.enable_inserts = false;
  CHECK_THROWS_WITH_AS(sg::MemoryCollection{options}, "MemoryCollection: no action enabled",
                       sg::Error);
}
