// SPDX-License-Identifier: MIT
// Nodes reach the store through their run context: compile({.store = ...}).
#include <stategraph/stategraph.hpp>
#include <stategraph/store/memory_store.hpp>

#include <doctest/doctest.h>

namespace {

struct Profile : sg::MessagesState {
  std::string remembered{};
  static constexpr auto schema() {
    return std::tuple_cat(sg::MessagesState::schema(),
                          std::tuple{sg::field<"remembered">(&Profile::remembered)});
  }
};

}  // namespace

TEST_CASE("nodes read and write the store through their context, subgraphs inherit it") {
  auto store = std::make_shared<sg::InMemoryStore>();
  store->put({"users", "bob"}, "profile", {{"name", "Bob"}});

  sg::StateGraph<Profile> inner;
  inner.add_node("remember", [](const Profile& s, sg::Context& ctx) {
    REQUIRE(ctx.store());
    ctx.store()->put({"users", "bob", "memories"}, "m" + std::to_string(s.messages.size()),
                     {{"text", s.messages.back().text()}});
    return sg::Update<Profile>{};
  });
  inner.add_edge(sg::START, "remember");
  const auto sub = inner.compile();

  sg::StateGraph<Profile> g;
  g.add_node("recall", [](const Profile&, sg::Context& ctx) {
    const auto profile = ctx.store()->get({"users", "bob"}, "profile");
    return sg::Update<Profile>{}.set<&Profile::remembered>(
        profile ? profile->value["name"].get<std::string>() : "");
  });
  g.add_node("sub", sub);
  g.add_edge(sg::START, "recall").add_edge("recall", "sub");
  const auto app = g.compile({.store = store});
  const auto result =
      app.invoke(sg::Update<Profile>{}.set<&Profile::messages>(sg::human("I like tea")));
  CHECK(result.state.remembered == "Bob");
  const auto memory = store->get({"users", "bob", "memories"}, "m1");
  REQUIRE(memory);
  CHECK(memory->value["text"] == "I like tea");

  // Without a store the context has none.
  sg::StateGraph<Profile> bare;
  bool saw_store = true;
  bare.add_node("n", [&](const Profile&, sg::Context& ctx) {
    saw_store = ctx.store() != nullptr;
    return sg::Update<Profile>{};
  });
  bare.add_edge(sg::START, "n");
  (void)bare.compile().invoke(sg::Update<Profile>{});
  CHECK_FALSE(saw_store);
}
