// SPDX-License-Identifier: MIT
// Defining graphs: typed state and updates, validation errors, drawing.
#include <stategraph/stategraph.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <set>

namespace {

struct Chat : sg::MessagesState {
  std::string summary{};
  int turns = 0;
  static constexpr auto schema() {
    return std::tuple_cat(
        sg::MessagesState::schema(),
        std::tuple{sg::field<"summary">(&Chat::summary),
                   sg::field<"turns">(&Chat::turns, [](int a, int b) { return a + b; })});
  }
};

struct Plain {
  int x = 0;
  static constexpr auto schema() { return std::tuple{sg::field<"x">(&Plain::x)}; }
};

std::int64_t add_counts(std::int64_t a, std::int64_t b) {
  return a + b;
}

/// A field whose reducer is a function pointer (kept in the schema, not default-constructed).
struct Counted {
  std::int64_t n = 0;
  static constexpr auto schema() { return std::tuple{sg::field<"n">(&Counted::n, add_counts)}; }
};

sg::Update<Plain> inc(const Plain& s) {
  return sg::set<&Plain::x>(s.x + 1);
}

std::string validation_error(const std::function<void()>& build) {
  try {
    build();
  } catch (const sg::GraphValidationError& e) {
    CHECK(e.code() == "graph.invalid");
    return e.what();
  }
  return "<no error>";
}

}  // namespace

static_assert(sg::field_count_v<Chat> == 3);
static_assert(sg::field_index_of_member<Chat, &Chat::summary>() == 1);
static_assert(sg::field_index_of_member<Chat, &Chat::messages>() == 0);
static_assert(sg::field_index_of_name<Chat, "turns">() == 2);
static_assert(sg::field_index_of_name<Chat, "nope">() == sg::kNoField);
static_assert(sg::kJsonState<Chat>);
static_assert(std::is_same_v<sg::field_t<Chat, 2>::reducer_type::update_type, int>);

TEST_CASE("updates are sparse and typed") {
  sg::Update<Chat> u;
  CHECK(u.empty());
  u.set<&Chat::summary>("so far").set<"turns">(2).set<&Chat::messages>(sg::human("hi", "1"));
  CHECK_FALSE(u.empty());
  REQUIRE(u.slot<1>().has_value());
  CHECK(std::get<0>(*u.slot<1>()) == "so far");
  CHECK(std::get<0>(*u.slot<2>()) == 2);

  Chat state;
  sg::apply_update(state, std::move(u));
  CHECK(state.summary == "so far");
  CHECK(state.turns == 2);
  REQUIRE(state.messages.size() == 1);

  sg::apply_update(state,
                   sg::Update<Chat>{}.set<&Chat::turns>(3).set<&Chat::messages>(sg::keep_last(0)));
  CHECK(state.turns == 5);  // binary reducer
  CHECK(state.messages.empty());

  sg::apply_update(state, sg::Update<Chat>{}.set<&Chat::turns>(sg::overwrite(1)));
  CHECK(state.turns == 1);

  const auto full = sg::Update<Chat>::from_state(state);
  CHECK(full.slot<0>().has_value());
  CHECK(full.slot<1>().has_value());
}

TEST_CASE("a reducer given as a function pointer is that function") {
  // clang before 16 built it as a null pointer (tests/fuzz state_update_json crashed on it).
  CHECK((sg::field_reducer<Counted, 0>().op == &add_counts));
  Counted state;
  state.n = 2;
  sg::apply_update(state, sg::Update<Counted>{}.set<&Counted::n>(std::int64_t{3}));
  CHECK(state.n == 5);
}

TEST_CASE("state and update JSON") {
  Chat state;
  state.summary = "s";
  state.turns = 4;
  state.messages = {sg::human("hi", "1")};
  const auto j = sg::state_to_json(state);
  CHECK(j["summary"] == "s");
  CHECK(j["messages"][0]["id"] == "1");
  const Chat back = sg::state_from_json<Chat>(j);
  CHECK(back.summary == "s");
  CHECK(back.turns == 4);
  CHECK(back.messages == state.messages);

  auto u = sg::Update<Chat>{}
               .set<&Chat::summary>(sg::overwrite(std::string("o")))
               .set<&Chat::messages>(sg::keep_last(2));
  const auto uj = sg::update_to_json(u);
  CHECK(uj["summary"] == nlohmann::json{{"__overwrite__", "o"}});
  CHECK(uj["messages"] == nlohmann::json{{"type", "keep"}, {"from", -2}});
  CHECK(sg::update_from_json<Chat>(uj) == u);

  CHECK_THROWS_WITH_AS((void)sg::update_from_json<Chat>(nlohmann::json{{"bogus", 1}}),
                       "unknown state field 'bogus'", sg::Error);
  CHECK_THROWS_AS((void)sg::state_from_json<Chat>(nlohmann::json{{"turns", "x"}}), sg::Error);

  // A number an integer field cannot hold is refused (nlohmann::json's conversion of such a
  // float is undefined behaviour; tests/fuzz state_update_json found it); others truncate.
  for (const double bad : {1e20, -1e300, 2147483648.0}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS((void)sg::update_from_json<Chat>(nlohmann::json{{"turns", bad}}),
                         doctest::Contains("out of the range of an integer of 32 bits"), sg::Error);
    CHECK_THROWS_AS((void)sg::state_from_json<Chat>(nlohmann::json{{"turns", bad}}), sg::Error);
    CHECK_THROWS_AS(
        (void)sg::update_from_json<Chat>(nlohmann::json{{"turns", {{"__overwrite__", bad}}}}),
        sg::Error);
  }
  CHECK(sg::state_from_json<Chat>(nlohmann::json{{"turns", -2147483648.0}}).turns == INT32_MIN);
  CHECK(std::get<0>(*sg::update_from_json<Chat>(nlohmann::json{{"turns", 2.9}}).slot<2>()) == 2);
  // A keep slice's bound beyond int64 is the end, not a negative index.
  CHECK(sg::keep_slice_from_json(
            nlohmann::json{{"type", "keep"}, {"from", 1}, {"to", 18446744073709551615ULL}})
            .to == std::numeric_limits<std::int64_t>::max());
}

TEST_CASE("validation errors are clear") {
  using G = sg::StateGraph<Plain>;
  CHECK(validation_error([] {
          G g;
          g.add_node("a", inc);
          (void)g.compile();
        }) == "Graph must have an entrypoint: add at least one edge from START to another node");
  CHECK(validation_error([] {
          G g;
          g.add_node("a", inc).add_edge(sg::START, "a").add_edge("a", "ghost");
          (void)g.compile();
        }) == "Found edge ending at unknown node 'ghost'");
  CHECK(validation_error([] {
          G g;
          g.add_node("a", inc).add_edge(sg::START, "a").add_edge("ghost", "a");
          (void)g.compile();
        }) == "Found edge starting at unknown node 'ghost'");
  CHECK(validation_error([] {
          G g;
          g.add_node("a", inc).add_node("a", inc);
        }) == "Node `a` already present.");
  CHECK(validation_error([] {
          G g;
          g.add_node(sg::END, inc);
        }) == "Node name `__end__` is reserved");
  CHECK(validation_error([] {
          G g;
          g.add_node("a:b", inc);
        }) == "Node name `a:b` cannot contain '|' or ':'");
  CHECK(validation_error([] {
          G g;
          g.add_node("", inc);
        }) == "A node name cannot be empty");
  // LangGraph compiles a node without incoming edges: a Command (as graph input, or from a
  // subgraph run inside a node) may still go to it.
  CHECK(validation_error([] {
          G g;
          g.add_node("a", inc)
              .add_node("lonely", inc)
              .add_edge(sg::START, "a")
              .add_edge("lonely", sg::END);
          (void)g.compile();
        }) == "<no error>");
  CHECK(validation_error([] {
          G g;
          g.add_node("a", inc)
              .add_node("b", inc)
              .add_edge(sg::START, "a")
              .add_edge("a", "b")
              .add_edge("b", "a");
          (void)g.compile();
        }) == "Node 'a' can never reach END: every path from it loops forever");
  CHECK(validation_error([] {
          G g;
          g.add_node("a", inc).add_edge(sg::START, "a");
          sg::CompileOptions o;
          o.interrupt_before = {"nope"};
          (void)g.compile(o);
        }) == "Interrupt node `nope` not found");
  CHECK(validation_error([] {
          G g;
          g.add_node("a", inc).add_edge(sg::START, "a").add_edge(sg::END, "a");
          (void)g.compile();
        }) == "END cannot be the start of edge");
  CHECK(validation_error([] {
          G g;
          g.add_node("a", inc)
              .add_edge(sg::START, "a")
              .add_conditional_edges("a", [](const Plain&) { return sg::END; }, {"a", "missing"});
          (void)g.compile();
        }) == "Found conditional edge ending at unknown node 'missing'");
  CHECK(
      validation_error([] {
        G g;
        g.add_node("worker", [](const int&) { return sg::Update<Plain>{}; });
        g.add_node("a", inc).add_edge(sg::START, "a").add_edge("a", "worker");
        (void)g.compile();
      }) ==
      "Node 'worker' takes a custom input type and can only be started by a Send, not by an edge");
  CHECK(validation_error([] {
          G g;
          g.add_sequence({});
        }) == "add_sequence needs at least one node");
}

TEST_CASE("valid shapes compile") {
  // A node without outgoing edges ends the run (as in LangGraph).
  sg::StateGraph<Plain> g;
  g.add_node("a", inc).add_edge(sg::START, "a");
  CHECK_NOTHROW((void)g.compile());

  // A loop with a conditional exit.
  sg::StateGraph<Plain> loop;
  loop.add_node("a", inc)
      .add_edge(sg::START, "a")
      .add_conditional_edges("a", [](const Plain& s) { return s.x < 3 ? "a" : sg::END; },
                             {"a", sg::END});
  CHECK_NOTHROW((void)loop.compile());

  // A Command node without declared destinations may go anywhere.
  sg::StateGraph<Plain> cmd;
  cmd.add_node("a", [](const Plain&) { return sg::Command<Plain>{.go_to = {"b"}}; })
      .add_node("b", inc);
  cmd.add_edge(sg::START, "a");
  CHECK_NOTHROW((void)cmd.compile());
}

TEST_CASE("mermaid and dot drawings") {
  sg::StateGraph<Plain> g;
  g.add_node("agent", inc).add_node("tools", inc).add_node("summarize", inc);
  g.add_edge(sg::START, "agent");
  g.add_conditional_edges(
      "agent", [](const Plain&) -> std::string { return "continue"; },
      sg::PathMap{{"continue", "tools"}, {"done", sg::END}});
  g.add_edge("tools", "summarize");
  g.add_edge("summarize", sg::END);
  const auto app = g.compile({.name = "agent_graph"});
  const std::string mermaid = app.draw_mermaid();
  CHECK(mermaid.find("graph TD;") != std::string::npos);
  CHECK(mermaid.find("\t__start__ --> agent;") != std::string::npos);
  CHECK(mermaid.find("\tagent -. &nbsp;continue&nbsp; .-> tools;") != std::string::npos);
  CHECK(mermaid.find("\tagent -. &nbsp;done&nbsp; .-> __end__;") != std::string::npos);
  CHECK(mermaid.find("\ttools --> summarize;") != std::string::npos);

  const std::string dot = app.draw_dot();
  CHECK(dot.find("digraph G {") != std::string::npos);
  CHECK(dot.find("label=agent_graph") != std::string::npos);
  CHECK(dot.find("[style=dashed, label=continue]") != std::string::npos);
  CHECK(dot.find("shape=oval") != std::string::npos);
  CHECK(dot.find("agent->tools [style=dashed, label=continue]") != std::string::npos);  // names
  CHECK(dot.find("__start__->agent ;") != std::string::npos);
  CHECK(app.nodes() == std::vector<std::string>{"agent", "tools", "summarize"});

  // As LangGraph's get_graph().to_json() (the server's GET /assistants/{id}/graph).
  const nlohmann::json drawn = app.draw_json();
  std::vector<std::string> ids;
  for (const auto& n : drawn["nodes"]) ids.push_back(n["id"]);
  CHECK(ids == std::vector<std::string>{"__start__", "agent", "tools", "summarize", "__end__"});
  CHECK(drawn["nodes"][1]["type"] == "runnable");
  CHECK(drawn["nodes"][0]["type"] == "schema");
  CHECK(drawn["edges"].size() == 5);
  CHECK(std::count(drawn["edges"].begin(), drawn["edges"].end(),
                   nlohmann::json{{"source", "agent"},
                                  {"target", "tools"},
                                  {"conditional", true},
                                  {"data", "continue"}}) == 1);
  CHECK(std::count(drawn["edges"].begin(), drawn["edges"].end(),
                   nlohmann::json{
                       {"source", "__start__"}, {"target", "agent"}, {"conditional", false}}) == 1);
}

TEST_CASE("drawings: a node returning a Command shows only its declared destinations") {
  // As LangGraph draws it: no edges for a Command node without destinations (the checks still
  // take it to go anywhere), dashed edges to the declared ones.
  sg::StateGraph<Plain> g;
  g.add_node("router", [](const Plain&) { return sg::Command<Plain>{.go_to = {"work"}}; })
      .add_node("work", [](const Plain&) { return sg::Command<Plain>{.go_to = {"work"}}; },
                {.destinations = {"router", sg::END}});
  g.add_edge(sg::START, "router");
  const auto app = g.compile();
  const std::string mermaid = app.draw_mermaid();
  CHECK(mermaid.find("\trouter -") == std::string::npos);
  CHECK(mermaid.find("\twork -.-> router;") != std::string::npos);
  CHECK(mermaid.find("\twork -.-> __end__;") != std::string::npos);
  CHECK(app.draw_dot().find("router->") == std::string::npos);
}
