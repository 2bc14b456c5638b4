// SPDX-License-Identifier: MIT
// Custom authentication and authorization (ServerOptions::auth, stategraph/server/auth.hpp):
// two users who cannot see or touch each other's threads, runs, assistants, crons and store
// items; 401 from the authentication handler, 403 from a denying one; the user in the run's
// configurable.
#include <stategraph/server/auth.hpp>

#include "server_fixture.hpp"

namespace {

using nlohmann::json;
using sg::test::human_input;

/// Bearer tokens of two users; every resource is owned by its creator, store namespaces start
/// with the user's identity, and deleting a thread takes the "threads:delete" permission.
std::shared_ptr<const sg::Auth> two_users() {
  auto auth = std::make_shared<sg::Auth>();
  auth->authenticate([](const sg::AuthRequest& r) {
    const std::string token = r.header("Authorization");
    if (token.empty()) {
      throw sg::HttpException(401, "missing token", {{"WWW-Authenticate", "Bearer"}});
    }
    if (token == "Bearer alice-token") {
      return sg::AuthUser{.identity = "alice",
                          .display_name = "Alice",
                          .permissions = {"threads:delete"},
                          .extra = {{"team", "red"}}};
    }
    if (token == "Bearer bob-token") return sg::AuthUser{.identity = "bob"};
    if (token == "Bearer broken") throw std::runtime_error("the token service is down");
    throw sg::HttpException(401, "invalid token");
  });
  auth->on("*", [](const sg::AuthContext& ctx, json& value) {
    if (value.contains("metadata")) {
      if (!value["metadata"].is_object()) value["metadata"] = json::object();
      value["metadata"]["owner"] = ctx.user.identity;
    }
    return sg::AuthDecision::filter({{"owner", ctx.user.identity}});
  });
  auth->on("threads:delete", [](const sg::AuthContext& ctx, json&) -> sg::AuthDecision {
    const auto& p = ctx.user.permissions;
    if (std::find(p.begin(), p.end(), "threads:delete") == p.end()) return false;
    return sg::AuthDecision::filter({{"owner", {{"$eq", ctx.user.identity}}}});
  });
  auth->on("store", [](const sg::AuthContext& ctx, json& value) {
    json ns = json::array({ctx.user.identity});
    for (const auto& label : value.value("namespace", json::array())) ns.push_back(label);
    value["namespace"] = ns;
    return true;
  });
  return auth;
}

/// A user's client of the server.
struct Client {
  sg::test::Served& s;
  std::string token;

  [[nodiscard]] std::vector<std::string> headers() const {
    return {"Authorization: Bearer " + token};
  }
  sg::test::HttpResult send(const std::string& method, const std::string& path,
                            const json& body = nullptr) const {
    return sg::test::http_request(method, s.server.url() + path,
                                  body.is_null() ? std::string() : body.dump(), headers());
  }
  json ok(const std::string& method, const std::string& path, const json& body = nullptr) const {
    const auto r = send(method, path, body);
    INFO(method << " " << path << " -> " << r.status << " " << r.body);
    REQUIRE(r.status / 100 == 2);
    return r.body.empty() ? json() : json::parse(r.body);
  }
};

std::vector<std::string> ids(const json& items, const char* field) {
  std::vector<std::string> out;
  for (const auto& item : items) out.push_back(item[field]);
  return out;
}

}  // namespace

TEST_CASE("auth: requests without a valid token are 401, the probes stay open") {
  sg::test::Served s({.auth = two_users()});
  const auto none = s.get("/threads/00000000-0000-0000-0000-000000000000");
  CHECK(none.status == 401);
  CHECK(json::parse(none.body)["detail"] == "missing token");
  CHECK(none.headers.at("www-authenticate") == "Bearer");
  const auto wrong = s.get("/assistants/agent", {"Authorization: Bearer nope"});
  CHECK(wrong.status == 401);
  CHECK(json::parse(wrong.body)["detail"] == "invalid token");
  // A handler that fails refuses the request, with its message.
  const auto broken = sg::test::http_request("POST", s.server.url() + "/threads", "{}",
                                             {"Authorization: Bearer broken"});
  CHECK(broken.status == 401);
  CHECK(json::parse(broken.body)["detail"] == "the token service is down");
  CHECK(s.get("/ok").status == 200);
  CHECK(s.get("/info").status == 200);
}

TEST_CASE("auth: two users cannot see or touch each other's threads and runs") {
  sg::test::Served s({.auth = two_users()});
  const Client alice{s, "alice-token"};
  const Client bob{s, "bob-token"};

  // Bob cannot make a thread Alice's by naming her as its owner.
  const json thread = alice.ok("POST", "/threads", {{"metadata", {{"topic", "a"}}}});
  const std::string id = thread["thread_id"];
  CHECK(thread["metadata"] == json{{"topic", "a"}, {"owner", "alice"}});
  const json spoofed = bob.ok("POST", "/threads", {{"metadata", {{"owner", "alice"}}}});
  CHECK(spoofed["metadata"]["owner"] == "bob");
  const std::string bobs = spoofed["thread_id"];

  const json run = alice.ok("POST", "/threads/" + id + "/runs/wait",
                            {{"assistant_id", "agent"}, {"input", human_input("hi")}});
  CHECK(sg::test::contents(run).back() == "echo: hi");

  // Everything about Alice's thread is "not found" for Bob, and nothing of it changes.
  for (const auto& [method, path] :
       std::vector<std::pair<std::string, std::string>>{{"GET", ""},
                                                        {"GET", "/state"},
                                                        {"GET", "/history"},
                                                        {"POST", "/history"},
                                                        {"GET", "/runs"},
                                                        {"POST", "/copy"},
                                                        {"PATCH", ""},
                                                        {"POST", "/state"}}) {
    const auto r = bob.send(method, "/threads/" + id + path,
                            method == "GET" ? json() : json{{"values", json::object()}});
    INFO(method << " " << path << " -> " << r.body);
    CHECK(r.status == 404);
  }
  const auto bob_run = bob.send("POST", "/threads/" + id + "/runs/wait",
                                {{"assistant_id", "agent"}, {"input", human_input("mine?")}});
  CHECK(bob_run.status == 404);
  const json alice_runs = alice.ok("GET", "/threads/" + id + "/runs");
  REQUIRE(alice_runs.size() == 1);
  const std::string run_id = alice_runs[0]["run_id"];
  CHECK(bob.send("GET", "/threads/" + id + "/runs/" + run_id).status == 404);
  CHECK(bob.send("GET", "/threads/" + id + "/runs/" + run_id + "/join").status == 404);
  CHECK(bob.send("POST", "/threads/" + id + "/runs/" + run_id + "/cancel").status == 404);
  // Deleting takes a permission Bob lacks: 403 before any filter.
  CHECK(bob.send("DELETE", "/threads/" + id + "/runs/" + run_id).status == 403);
  CHECK(bob.send("DELETE", "/threads/" + id).status == 403);
  CHECK(sg::test::contents(alice.ok("GET", "/threads/" + id + "/state")["values"]).size() == 2);
  CHECK(alice.ok("GET", "/threads/" + id)["metadata"]["topic"] == "a");

  // Searches and counts show each user their own threads.
  CHECK(ids(alice.ok("POST", "/threads/search", json::object()), "thread_id") ==
        std::vector<std::string>{id});
  CHECK(ids(bob.ok("POST", "/threads/search", json::object()), "thread_id") ==
        std::vector<std::string>{bobs});
  CHECK(bob.ok("POST", "/threads/count", json::object()) == 1);
  // A thread created by a run belongs to its creator.
  const std::string fresh = "3f1c2a4e-5b6d-4e7f-8a9b-0c1d2e3f4a5b";
  (void)bob.ok(
      "POST", "/threads/" + fresh + "/runs/wait",
      {{"assistant_id", "agent"}, {"if_not_exists", "create"}, {"input", human_input("y")}});
  CHECK(bob.ok("GET", "/threads/" + fresh)["metadata"]["owner"] == "bob");
  CHECK(alice.send("GET", "/threads/" + fresh).status == 404);

  // Updates: Alice's own, through her filter.
  const json patched =
      alice.ok("PATCH", "/threads/" + id, {{"metadata", {{"owner", "bob"}, {"x", 1}}}});
  CHECK(patched["metadata"]["owner"] == "alice");
  CHECK(patched["metadata"]["x"] == 1);
  CHECK(patched["metadata"]["topic"] == "a");
  // Deleting needs the permission: Bob has none (403), Alice has it.
  CHECK(bob.send("DELETE", "/threads/" + bobs).status == 403);
  CHECK(alice.send("DELETE", "/threads/" + id).status == 204);
  CHECK(alice.send("GET", "/threads/" + id).status == 404);
}

TEST_CASE("auth: the run's configurable holds the user, and a client cannot forge it") {
  sg::StateGraph<sg::MessagesState> g;
  g.add_node("whoami", [](const sg::MessagesState&, sg::Context& ctx) {
    const json& c = ctx.config().configurable;
    return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(sg::ai(json{
        {"id", c.value("langgraph_auth_user_id", json())},
        {"user", c.value("langgraph_auth_user", json())},
        {"permissions", c.value("langgraph_auth_permissions", json())}}.dump()));
  });
  g.add_edge(sg::START, "whoami").add_edge("whoami", sg::END);
  sg::test::Served s({.auth = two_users()}, {{"whoami", sg::served_graph(std::move(g))}});
  const Client alice{s, "alice-token"};
  const json forged = {{"configurable", {{"langgraph_auth_user_id", "bob"}}}};
  const json out =
      alice.ok("POST", "/runs/wait",
               {{"assistant_id", "whoami"}, {"input", human_input("?")}, {"config", forged}});
  const json seen = json::parse(sg::test::contents(out).back());
  CHECK(seen["id"] == "alice");
  CHECK(seen["permissions"] == json::array({"threads:delete"}));
  CHECK(seen["user"] == json{{"identity", "alice"},
                             {"display_name", "Alice"},
                             {"permissions", {"threads:delete"}},
                             {"is_authenticated", true},
                             {"team", "red"}});
}

TEST_CASE("auth: assistants and crons are their owner's") {
  sg::test::Served s({.auth = two_users()});
  const Client alice{s, "alice-token"};
  const Client bob{s, "bob-token"};
  const json assistant = alice.ok("POST", "/assistants", {{"graph_id", "agent"}, {"name", "a"}});
  const std::string aid = assistant["assistant_id"];
  CHECK(assistant["metadata"]["owner"] == "alice");
  CHECK(bob.send("GET", "/assistants/" + aid).status == 404);
  CHECK(bob.send("GET", "/assistants/" + aid + "/schemas").status == 404);
  CHECK(bob.send("PATCH", "/assistants/" + aid, {{"name", "b"}}).status == 404);
  CHECK(bob.send("POST", "/assistants/" + aid + "/latest", {{"version", 1}}).status == 404);
  CHECK(bob.send("DELETE", "/assistants/" + aid).status == 404);
  // The filter hides the system assistants too (their metadata has no owner), as in LangGraph.
  CHECK(ids(alice.ok("POST", "/assistants/search", json::object()), "assistant_id") ==
        std::vector<std::string>{aid});
  CHECK(bob.ok("POST", "/assistants/count", json::object()) == 0);
  // Bob cannot take Alice's id either: it exists, and is not his.
  CHECK(bob.send("POST", "/assistants",
                 {{"graph_id", "agent"}, {"assistant_id", aid}, {"if_exists", "do_nothing"}})
            .status == 409);
  CHECK(alice.ok("PATCH", "/assistants/" + aid, {{"name", "renamed"}})["name"] == "renamed");

  const json cron = alice.ok(
      "POST", "/runs/crons",
      {{"assistant_id", "agent"}, {"schedule", "0 9 * * *"}, {"input", human_input("daily")}});
  const std::string cid = cron["cron_id"];
  CHECK(cron["metadata"]["owner"] == "alice");
  CHECK(cron["user_id"] == "alice");
  CHECK(alice.ok("POST", "/runs/crons/count", json::object()) == 1);
  CHECK(bob.ok("POST", "/runs/crons/count", json::object()) == 0);
  CHECK(bob.ok("POST", "/runs/crons/search", json::object()).empty());
  CHECK(bob.send("PATCH", "/runs/crons/" + cid, {{"schedule", "0 10 * * *"}}).status == 404);
  CHECK(bob.send("DELETE", "/runs/crons/" + cid).status == 404);
  CHECK(alice.send("DELETE", "/runs/crons/" + cid).status == 204);
}

TEST_CASE("auth: store items live under their user's namespace") {
  sg::test::Served s({.auth = two_users()});
  const Client alice{s, "alice-token"};
  const Client bob{s, "bob-token"};
  CHECK(alice
            .send("PUT", "/store/items",
                  {{"namespace", {"notes"}}, {"key", "k"}, {"value", {{"text", "alice's"}}}})
            .status == 204);
  CHECK(bob.send("PUT", "/store/items",
                 {{"namespace", {"notes"}}, {"key", "k"}, {"value", {{"text", "bob's"}}}})
            .status == 204);
  const json a = alice.ok("GET", "/store/items?namespace=notes&key=k");
  CHECK(a["value"]["text"] == "alice's");
  CHECK(a["namespace"] == json::array({"alice", "notes"}));
  CHECK(bob.ok("GET", "/store/items?namespace=notes&key=k")["value"]["text"] == "bob's");
  const json found = alice.ok("POST", "/store/items/search", {{"namespace_prefix", {"notes"}}});
  REQUIRE(found["items"].size() == 1);
  CHECK(found["items"][0]["value"]["text"] == "alice's");
  CHECK(bob.ok("POST", "/store/namespaces", json::object())["namespaces"] ==
        json::array({json::array({"bob", "notes"})}));
  CHECK(bob.send("DELETE", "/store/items", {{"namespace", {"notes"}}, {"key", "k"}}).status == 204);
  CHECK(alice.ok("GET", "/store/items?namespace=notes&key=k")["value"]["text"] == "alice's");
  CHECK(bob.ok("GET", "/store/items?namespace=notes&key=k").is_null());
}

TEST_CASE("auth: a filter on store items hides other owners' items, a denial is 403") {
  auto auth = std::make_shared<sg::Auth>();
  auth->authenticate(
      [](const sg::AuthRequest& r) { return sg::AuthUser{.identity = r.header("x-user")}; });
  auth->on("store", [](const sg::AuthContext& ctx, json& value) -> sg::AuthDecision {
    if (ctx.action == "put" && value.contains("value")) value["value"]["owner"] = ctx.user.identity;
    return sg::AuthDecision::filter({{"owner", ctx.user.identity}});
  });
  auth->on("threads:create", [](const sg::AuthContext& ctx, json&) -> sg::AuthDecision {
    return ctx.user.identity != "guest";
  });
  sg::test::Served s({.auth = auth});
  const auto as = [&](const std::string& user, const std::string& method, const std::string& path,
                      const json& body = nullptr) {
    return sg::test::http_request(method, s.server.url() + path,
                                  body.is_null() ? std::string() : body.dump(),
                                  {"x-user: " + user});
  };
  CHECK(as("ann", "PUT", "/store/items",
           {{"namespace", {"shared"}}, {"key", "k"}, {"value", {{"v", 1}}}})
            .status == 204);
  // The item exists and is Ann's: Ben can neither read, overwrite nor delete it.
  CHECK(as("ben", "GET", "/store/items?namespace=shared&key=k").status == 404);
  CHECK(as("ben", "PUT", "/store/items",
           {{"namespace", {"shared"}}, {"key", "k"}, {"value", {{"v", 2}}}})
            .status == 404);
  CHECK(as("ben", "DELETE", "/store/items", {{"namespace", {"shared"}}, {"key", "k"}}).status ==
        404);
  const auto searched = as("ben", "POST", "/store/items/search", json::object());
  CHECK(json::parse(searched.body)["items"].empty());
  CHECK(json::parse(as("ann", "GET", "/store/items?namespace=shared&key=k").body)["value"] ==
        json{{"v", 1}, {"owner", "ann"}});
  // A handler that returns false: 403, and nothing is created.
  const auto denied = as("guest", "POST", "/threads", json::object());
  CHECK(denied.status == 403);
  CHECK(as("ann", "POST", "/threads/count", json::object()).body == "0");
}

TEST_CASE("auth: bad handler set-ups are errors, filters match as LangGraph's") {
  sg::Auth auth;
  const auto allow = [](const sg::AuthContext&, json&) { return sg::AuthDecision::allow(); };
  CHECK_THROWS_AS(auth.on("thread", allow), sg::Error);
  CHECK_THROWS_AS(auth.on("threads:fly", allow), sg::Error);
  CHECK_THROWS_AS(auth.on("store:create", allow), sg::Error);
  CHECK_NOTHROW(auth.on("*:read", allow));
  CHECK_THROWS_AS(auth.on("*:read", allow), sg::Error);  // twice
  CHECK_THROWS_AS(sg::AuthDecision::filter(json::array()), sg::Error);
  CHECK_THROWS_AS(sg::AuthDecision::filter({{"owner", {{"$in", {"a"}}}}}), sg::Error);

  const json metadata = {{"owner", "a"}, {"tags", {"x", "y"}}, {"n", 1}};
  CHECK(sg::Auth::matches(metadata, nullptr));
  CHECK(sg::Auth::matches(metadata, {{"owner", "a"}}));
  CHECK_FALSE(sg::Auth::matches(metadata, {{"owner", "b"}}));
  CHECK(sg::Auth::matches(metadata, {{"owner", {{"$eq", "a"}}}, {"n", 1}}));
  CHECK(sg::Auth::matches(metadata, {{"tags", {{"$contains", "x"}}}}));
  CHECK(sg::Auth::matches(metadata, {{"tags", {{"$contains", {"x", "y"}}}}}));
  CHECK_FALSE(sg::Auth::matches(metadata, {{"tags", {{"$contains", {"x", "z"}}}}}));
  CHECK_FALSE(sg::Auth::matches(metadata, {{"owner", {{"$contains", "a"}}}}));  // not an array
  CHECK_FALSE(sg::Auth::matches(metadata, {{"missing", "a"}}));

  // The most specific handler decides.
  sg::Auth order;
  std::string ran;
  const auto named = [&](std::string name) {
    return [&ran, name](const sg::AuthContext&, json&) {
      ran = name;
      return sg::AuthDecision::allow();
    };
  };
  order.on("*", named("*")).on("*:read", named("*:read")).on("threads", named("threads"));
  order.on("threads:read", named("threads:read"));
  const sg::AuthUser user{.identity = "u"};
  json value = json::object();
  (void)order.authorize(user, "threads", "read", value);
  CHECK(ran == "threads:read");
  (void)order.authorize(user, "threads", "update", value);
  CHECK(ran == "threads");
  (void)order.authorize(user, "assistants", "read", value);
  CHECK(ran == "*:read");
  (void)order.authorize(user, "crons", "delete", value);
  CHECK(ran == "*");
}
