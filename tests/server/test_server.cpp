// SPDX-License-Identifier: MIT
// sg::Server over real HTTP on 127.0.0.1: health and info, the system assistants (LangGraph's
// uuid5 ids, lookup by graph id, search with filters and pagination, the graph drawing), the API
// key, and bad input at the network level (limits, malformed requests, idle and surplus
// connections).
#include <stategraph/server/server.hpp>
#include <stategraph/stategraph.hpp>
#include <stategraph/store/rocksdb_store.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <chrono>

#include "server_fixture.hpp"
#include "support/http_client.hpp"
#include "support/temp_dir.hpp"

using sg::test::human_input;
using sg::test::raw_exchange;
using sg::test::Served;

using nlohmann::json;

TEST_CASE("server: a system assistant's id is uuid5 of the graph id, as LangGraph's servers") {
  CHECK(sg::system_assistant_id("agent") == "fe096781-5601-53d2-b2f6-0d3403f7e9ca");
}

TEST_CASE("server: /ok, /info, unknown routes and methods") {
  Served s;
  const auto ok = s.get("/ok");
  CHECK(ok.status == 200);
  CHECK(json::parse(ok.body) == json{{"ok", true}});
  CHECK(ok.headers.at("content-type") == "application/json");
  const auto info = s.get("/info");
  CHECK(info.status == 200);
  CHECK(json::parse(info.body)["version"] == "0.1.0");
  const auto missing = s.get("/nope/x");
  CHECK(missing.status == 404);
  CHECK(json::parse(missing.body)["detail"] == "no route for GET /nope/x");
  const auto wrong = sg::test::http_request("PUT", s.server.url() + "/assistants/agent");
  CHECK(wrong.status == 405);
}

TEST_CASE("server: assistants by uuid or graph id, their graph") {
  Served s;
  const auto by_name = s.get("/assistants/agent");
  REQUIRE(by_name.status == 200);
  const json a = json::parse(by_name.body);
  CHECK(a["assistant_id"] == "fe096781-5601-53d2-b2f6-0d3403f7e9ca");
  CHECK(a["graph_id"] == "agent");
  CHECK(a["name"] == "agent");
  CHECK(a["version"] == 1);
  CHECK(a["metadata"] == json{{"created_by", "system"}});
  CHECK(a["config"] == json::object());
  CHECK(a["created_at"].get<std::string>().size() > 10);
  const auto by_id = s.get("/assistants/fe096781-5601-53d2-b2f6-0d3403f7e9ca");
  CHECK(json::parse(by_id.body) == a);
  const auto unknown = s.get("/assistants/00000000-0000-0000-0000-000000000000");
  CHECK(unknown.status == 404);
  CHECK(json::parse(unknown.body)["detail"] ==
        "assistant '00000000-0000-0000-0000-000000000000' not found");

  const auto graph = s.get("/assistants/agent/graph");
  REQUIRE(graph.status == 200);
  const json g = json::parse(graph.body);
  std::vector<std::string> ids;
  for (const auto& n : g["nodes"]) ids.push_back(n["id"]);
  CHECK(ids == std::vector<std::string>{"__start__", "echo", "__end__"});
  CHECK(g["edges"] == json::parse(R"([{"source":"__start__","target":"echo","conditional":false},
                                      {"source":"echo","target":"__end__","conditional":false}])"));
}

TEST_CASE("server: an assistant's schemas come from its graph's state type") {
  Served s;
  const auto r = s.get("/assistants/agent/schemas");
  REQUIRE(r.status == 200);
  const json schemas = json::parse(r.body);
  CHECK(schemas["graph_id"] == "agent");
  const json& state = schemas["state_schema"];
  CHECK(state["type"] == "object");
  CHECK(state["required"] == json({"messages"}));
  CHECK(state["properties"]["messages"]["type"] == "array");
  CHECK(state["properties"]["messages"]["items"]["required"] == json({"content"}));
  CHECK(schemas["output_schema"] == state);
  json input = state;
  input.erase("required");  // an input updates some fields
  CHECK(schemas["input_schema"] == input);
  CHECK(schemas["config_schema"].is_null());
  CHECK(schemas["context_schema"].is_null());
  // By assistant id too; an unknown one is 404, another method 405.
  CHECK(json::parse(s.get("/assistants/fe096781-5601-53d2-b2f6-0d3403f7e9ca/schemas").body) ==
        schemas);
  CHECK(s.get("/assistants/nobody/schemas").status == 404);
  CHECK(s.post("/assistants/agent/schemas", "{}").status == 405);
}

TEST_CASE("server: an assistant's subgraphs, by namespace and recursively") {
  sg::StateGraph<sg::MessagesState> inner;
  inner.add_node("n", [](const sg::MessagesState&) { return sg::Update<sg::MessagesState>{}; });
  inner.add_edge(sg::START, "n");
  sg::StateGraph<sg::MessagesState> middle;
  middle.add_node("inner", inner.compile());
  middle.add_edge(sg::START, "inner");
  sg::StateGraph<sg::MessagesState> outer;
  outer.add_node("middle", middle.compile());
  outer.add_edge(sg::START, "middle");
  Served s({}, {{"nested", sg::served_graph(std::move(outer))}});
  const json schemas = s.get_json("/assistants/nested/schemas");
  json expected = schemas;
  expected.erase("graph_id");
  CHECK(s.get_json("/assistants/nested/subgraphs") == json{{"middle", expected}});
  CHECK(s.get_json("/assistants/nested/subgraphs?recurse=true") ==
        json{{"middle", expected}, {"middle|inner", expected}});
  CHECK(s.get_json("/assistants/nested/subgraphs/middle%7Cinner?recurse=true") ==
        json{{"middle|inner", expected}});
  CHECK(s.get_json("/assistants/nested/subgraphs/nope") == json::object());
  CHECK(s.get_json("/assistants/agent/subgraphs") == json::object());
  CHECK(s.get("/assistants/nobody/subgraphs").status == 404);
}

TEST_CASE("server: a graph's picture as SVG, laid out by Graphviz") {
  Served s;
  const auto svg = s.get("/assistants/agent/graph?format=svg");
  REQUIRE(svg.status == 200);
  CHECK(svg.headers.at("content-type") == "image/svg+xml");
  CHECK(svg.body.find("<svg") != std::string::npos);
  for (const char* node : {"__start__", "echo", "__end__"}) {
    CHECK(svg.body.find(std::string("<title>") + node + "</title>") != std::string::npos);
  }
  CHECK(s.get("/assistants/agent/graph?format=svg").body == svg.body);  // made once
  // A second graph in the same process (Graphviz's state carries over from the first).
  const auto helper = s.get("/assistants/helper/graph?format=svg");
  REQUIRE(helper.status == 200);
  CHECK(helper.body.find("<title>echo</title>") != std::string::npos);
  CHECK(s.get("/assistants/agent/graph?format=json").status == 200);
  const auto bad = s.get("/assistants/agent/graph?format=png");
  CHECK(bad.status == 422);
  CHECK(json::parse(bad.body)["detail"] == "format 'png' is not one of json, svg");
  CHECK(s.get("/assistants/nobody/graph?format=svg").status == 404);
}

TEST_CASE("server: the studio's files, without the API key, and nothing else under /studio") {
  Served s({.api_key = "secret"});
  const auto page = s.get("/studio");
  REQUIRE(page.status == 200);
  CHECK(page.headers.at("content-type") == "text/html; charset=utf-8");
  CHECK(page.body.find("<title>stategraph studio</title>") != std::string::npos);
  const std::string policy = page.headers.at("content-security-policy");
  CHECK(policy.find("default-src 'none'") != std::string::npos);
  CHECK(policy.find("script-src 'self'") != std::string::npos);
  CHECK(policy.find("frame-ancestors 'none'") != std::string::npos);
  CHECK(page.headers.at("x-content-type-options") == "nosniff");
  CHECK(s.get("/studio/").body == page.body);
  CHECK(s.get("/studio/index.html?x=1").body == page.body);
  const auto script = s.get("/studio/app.js");
  CHECK(script.status == 200);
  CHECK(script.headers.at("content-type") == "text/javascript; charset=utf-8");
  CHECK(s.get("/studio/studio.css").headers["content-type"] == "text/css; charset=utf-8");
  // Only embedded names: no traversal, no other file of the machine.
  for (const char* path : {"/studio/missing.js", "/studio/%2e%2e/%2e%2e/etc/passwd",
                           "/studio/..%2f..%2fetc%2fpasswd", "/studio//etc/passwd"}) {
    INFO(path);
    const auto r = s.get(path);
    CHECK(r.status == 404);
    CHECK(r.body.find("root:") == std::string::npos);
  }
  CHECK(s.get("/studiox").status == 401);  // not the studio: the API, which wants the key
  CHECK(s.post("/studio", "{}").status == 405);
  // The page's API calls still need the key.
  CHECK(s.get("/assistants/agent/graph?format=svg").status == 401);
  CHECK(s.get("/assistants/agent/graph?format=svg", {"x-api-key: secret"}).status == 200);
}

TEST_CASE("server: assistants search filters, sorts, selects and paginates") {
  Served s;
  const auto all = s.post("/assistants/search", R"({"limit":10,"offset":0})");
  REQUIRE(all.status == 200);
  CHECK(json::parse(all.body).size() == 2);
  CHECK(all.headers.at("x-pagination-total") == "2");
  CHECK(all.headers.count("x-pagination-next") == 0);

  const auto agent = json::parse(s.post("/assistants/search", R"({"graph_id":"agent"})").body);
  REQUIRE(agent.size() == 1);
  CHECK(agent[0]["graph_id"] == "agent");
  CHECK(json::parse(s.post("/assistants/search", R"({"graph_id":"nope"})").body) == json::array());
  CHECK(json::parse(s.post("/assistants/search", R"({"metadata":{"created_by":"system"}})").body)
            .size() == 2);
  CHECK(json::parse(s.post("/assistants/search", R"({"metadata":{"created_by":"user"}})").body)
            .empty());
  CHECK(json::parse(s.post("/assistants/search", "").body).size() == 2);  // no body: defaults

  const auto first =
      s.post("/assistants/search", R"({"limit":1,"sort_by":"graph_id","sort_order":"asc"})");
  CHECK(json::parse(first.body)[0]["graph_id"] == "agent");
  CHECK(first.headers.at("x-pagination-next") == "1");
  const auto second = s.post("/assistants/search",
                             R"({"limit":1,"offset":1,"sort_by":"graph_id","sort_order":"asc"})");
  CHECK(json::parse(second.body)[0]["graph_id"] == "helper");
  const auto selected = s.post("/assistants/search", R"({"graph_id":"agent","select":["name"]})");
  CHECK(json::parse(selected.body) == json::parse(R"([{"name":"agent"}])"));
}

TEST_CASE("server: created assistants, their versions, and runs on their config and context") {
  Served s;
  const auto url = s.server.url();
  const auto request = [&](const char* method, const std::string& path, const json& body) {
    return sg::test::http_request(method, url + path, body.dump());
  };
  // Create: config, context, metadata and name kept; version 1; listed and counted.
  const json created =
      s.post_json("/assistants", json{{"graph_id", "agent"},
                                      {"config", {{"configurable", {{"tone", "dry"}}}}},
                                      {"context", {{"user", "ada"}}},
                                      {"metadata", {{"team", "a"}}},
                                      {"name", "Dry Agent"}});
  const std::string id = created["assistant_id"];
  CHECK(id.size() == 36);
  CHECK(created["version"] == 1);
  CHECK(created["graph_id"] == "agent");
  CHECK(created["config"]["configurable"]["tone"] == "dry");
  CHECK(created["description"].is_null());
  CHECK(s.get_json("/assistants/" + id) == created);
  CHECK(s.post_json("/assistants/count", json::object()) == 3);
  CHECK(s.post_json("/assistants/count", json{{"graph_id", "agent"}}) == 2);
  const json by_name = s.post_json("/assistants/search", json{{"name", "dry"}});
  REQUIRE(by_name.size() == 1);  // a part of the name, any case
  CHECK(by_name[0]["assistant_id"] == id);
  CHECK(s.post_json("/assistants/search", json::object())[0]["assistant_id"] == id);  // newest
  CHECK(s.post_json("/assistants/search", json{{"metadata", {{"team", "a"}}}}).size() == 1);

  // if_exists, ids and graphs.
  CHECK(request("POST", "/assistants", {{"graph_id", "agent"}, {"assistant_id", id}}).status ==
        409);
  CHECK(s.post_json("/assistants", json{{"graph_id", "agent"},
                                        {"assistant_id", id},
                                        {"if_exists", "do_nothing"}})["name"] == "Dry Agent");
  CHECK(request("POST", "/assistants", {{"graph_id", "nope"}}).status == 404);
  CHECK(request("POST", "/assistants", json::object()).status == 422);
  CHECK(request("POST", "/assistants", {{"graph_id", "agent"}, {"assistant_id", "x"}}).status ==
        422);
  CHECK(request("POST", "/assistants", {{"graph_id", "agent"}, {"config", 3}}).status == 422);

  // A run on it sees the assistant's configurable and context under its own.
  const std::string t = s.new_thread();
  const json waited = s.post_json("/threads/" + t + "/runs/wait",
                                  json{{"assistant_id", id}, {"input", human_input("hi")}});
  CHECK(waited["messages"].size() == 2);
  const json run = s.get_json("/threads/" + t + "/runs")[0];
  CHECK(run["assistant_id"] == id);
  CHECK(run["kwargs"]["config"]["configurable"]["tone"] == "dry");
  CHECK(run["kwargs"]["context"] == json{{"user", "ada"}});
  CHECK(s.get_json("/threads/" + t)["metadata"]["assistant_id"] == id);
  (void)s.post_json("/threads/" + t + "/runs/wait",
                    json{{"assistant_id", id},
                         {"input", human_input("again")},
                         {"config", {{"configurable", {{"tone", "warm"}}}}},
                         {"context", {{"lang", "en"}}}});
  const json second = s.get_json("/threads/" + t + "/runs?limit=1")[0];
  CHECK(second["kwargs"]["config"]["configurable"]["tone"] == "warm");
  CHECK(second["kwargs"]["context"] == json{{"user", "ada"}, {"lang", "en"}});

  // Patch: a new version, metadata merged; versions newest first; an old version made latest.
  const auto patched =
      request("PATCH", "/assistants/" + id,
              {{"config", {{"configurable", {{"tone", "warm"}}}}}, {"metadata", {{"stage", "b"}}}});
  REQUIRE(patched.status == 200);
  const json v2 = json::parse(patched.body);
  CHECK(v2["version"] == 2);
  CHECK(v2["metadata"] == json{{"team", "a"}, {"stage", "b"}});
  CHECK(v2["name"] == "Dry Agent");
  const json versions = s.post_json("/assistants/" + id + "/versions", json::object());
  REQUIRE(versions.size() == 2);
  CHECK(versions[0]["version"] == 2);
  CHECK(versions[1]["version"] == 1);
  CHECK(versions[1]["config"]["configurable"]["tone"] == "dry");
  CHECK(s.post_json("/assistants/" + id + "/versions",
                    json{{"limit", 1}, {"offset", 1}})[0]["version"] == 1);
  const json back = s.post_json("/assistants/" + id + "/latest", json{{"version", 1}});
  CHECK(back["version"] == 1);
  CHECK(back["config"]["configurable"]["tone"] == "dry");
  CHECK(s.get_json("/assistants/" + id)["metadata"] == json{{"team", "a"}});
  CHECK(request("POST", "/assistants/" + id + "/latest", {{"version", 9}}).status == 404);
  CHECK(request("POST", "/assistants/" + id + "/latest", {{"version", "1"}}).status == 422);
  CHECK(request("PATCH", "/assistants/" + id, {{"graph_id", "nope"}}).status == 404);

  // System assistants are read-only; they have one version.
  CHECK(request("PATCH", "/assistants/agent", {{"name", "x"}}).status == 409);
  CHECK(sg::test::http_request("DELETE", url + "/assistants/agent").status == 409);
  CHECK(s.post_json("/assistants/agent/versions", json::object()).size() == 1);

  // Delete with its threads: a busy thread refuses it and nothing is deleted.
  const json slow = s.post_json("/threads/" + t + "/runs",
                                json{{"assistant_id", id}, {"input", human_input("sleep:30000")}});
  CHECK(
      sg::test::http_request("DELETE", url + "/assistants/" + id + "?delete_threads=true").status ==
      409);
  CHECK(s.get("/assistants/" + id).status == 200);
  CHECK(s.post("/threads/" + t + "/runs/" + slow["run_id"].get<std::string>() + "/cancel?wait=1",
               std::string())
            .status == 204);
  CHECK(
      sg::test::http_request("DELETE", url + "/assistants/" + id + "?delete_threads=true").status ==
      204);
  CHECK(s.get("/assistants/" + id).status == 404);
  CHECK(s.get("/threads/" + t).status == 404);
  CHECK(s.post_json("/assistants/count", json::object()) == 2);
}

TEST_CASE("server: bad search bodies are 422 with the reason") {
  Served s;
  const auto check = [&](const std::string& body, const std::string& detail) {
    const auto r = s.post("/assistants/search", body);
    INFO(body);
    CHECK(r.status == 422);
    CHECK(json::parse(r.body)["detail"] == detail);
  };
  check("{", "the request body is not valid JSON");
  check("[1]", "the request body must be a JSON object, got array");
  check(R"({"limit":"10"})", R"('limit' must be an integer, got "10")");
  check(R"({"limit":0})", "'limit' must be between 1 and 1000, got 0");
  check(R"({"offset":-1})", "'offset' must be between 0 and 2147483647, got -1");
  check(R"({"graph_id":7})", "'graph_id' must be a string, got 7");
  check(R"({"sort_by":"color"})",
        "'sort_by' must be one of assistant_id, graph_id, name, created_at, updated_at, got "
        "'color'");
  check(R"({"sort_order":"up"})", "'sort_order' must be asc or desc, got 'up'");
  check(R"({"select":"name"})", "'select' must be an array of field names");
  // The server still answers afterwards.
  CHECK(s.get("/ok").status == 200);
}

TEST_CASE("server: with an API key, every request needs x-api-key") {
  Served s({.api_key = "secret"});
  CHECK(s.get("/assistants/agent").status == 401);
  CHECK(s.get("/assistants/agent", {"x-api-key: wrong"}).status == 401);
  CHECK(s.get("/assistants/agent", {"x-api-key: secre"}).status == 401);
  const auto denied = s.get("/assistants/agent", {"x-api-key: secretx"});
  CHECK(denied.status == 401);
  CHECK(json::parse(denied.body)["detail"] == "missing or wrong x-api-key header");
  CHECK(s.get("/assistants/agent", {"x-api-key: secret"}).status == 200);
}

TEST_CASE("server: with an API key, every route but /ok and /info refuses a request without it") {
  Served s({.api_key = "secret"});
  const json thread = [&] {
    const auto r =
        sg::test::http_request("POST", s.server.url() + "/threads", "{}", {"x-api-key: secret"});
    REQUIRE(r.status == 200);
    return json::parse(r.body);
  }();
  const std::string t = "/threads/" + thread["thread_id"].get<std::string>();
  // Every route of docs/server.md but the public /ok and /info, and some that are not routes:
  // 401 before anything else.
  const std::vector<std::pair<std::string, std::string>> routes = {
      {"POST", "/assistants"},
      {"POST", "/assistants/search"},
      {"POST", "/assistants/count"},
      {"GET", "/assistants/agent"},
      {"PATCH", "/assistants/agent"},
      {"DELETE", "/assistants/agent"},
      {"GET", "/assistants/agent/graph"},
      {"GET", "/assistants/agent/graph?format=svg"},
      {"POST", "/assistants/agent/versions"},
      {"POST", "/assistants/agent/latest"},
      {"POST", "/threads"},
      {"POST", "/threads/search"},
      {"POST", "/threads/count"},
      {"GET", t},
      {"PATCH", t},
      {"DELETE", t},
      {"POST", t + "/copy"},
      {"GET", t + "/state"},
      {"GET", t + "/state/00000000-0000-0000-0000-000000000000"},
      {"POST", t + "/state/checkpoint"},
      {"POST", t + "/state"},
      {"POST", t + "/history"},
      {"POST", t + "/runs"},
      {"POST", t + "/runs/wait"},
      {"POST", t + "/runs/stream"},
      {"GET", t + "/runs"},
      {"GET", t + "/runs/00000000-0000-0000-0000-000000000000"},
      {"DELETE", t + "/runs/00000000-0000-0000-0000-000000000000"},
      {"GET", t + "/runs/00000000-0000-0000-0000-000000000000/join"},
      {"GET", t + "/runs/00000000-0000-0000-0000-000000000000/stream"},
      {"POST", t + "/runs/00000000-0000-0000-0000-000000000000/cancel"},
      {"GET", t + "/stream"},
      {"POST", "/runs"},
      {"POST", "/runs/wait"},
      {"POST", "/runs/stream"},
      {"POST", "/runs/cancel"},
      {"PUT", "/store/items"},
      {"GET", "/store/items?namespace=a&key=k"},
      {"DELETE", "/store/items"},
      {"POST", "/store/items/search"},
      {"POST", "/store/namespaces"},
      {"GET", "/no/such/route"},
      {"GET", "/studiox"},
      {"GET", "/%2e%2e/etc/passwd"},
  };
  const std::string body =
      R"({"assistant_id":"agent","input":{"messages":[{"type":"human","content":"hi"}]}})";
  for (const auto& [method, path] : routes) {
    INFO(method << " " << path);
    const auto denied = sg::test::http_request(method, s.server.url() + path, body);
    CHECK(denied.status == 401);
    CHECK(denied.body == R"({"detail":"missing or wrong x-api-key header"})");
    CHECK(
        sg::test::http_request(method, s.server.url() + path, body, {"x-api-key: Secret"}).status ==
        401);
    CHECK(
        sg::test::http_request(method, s.server.url() + path, body, {"X-Api-Key: SECRET"}).status ==
        401);
  }
  // Nothing was done: the thread is still there, with no run.
  const auto runs =
      sg::test::http_request("GET", s.server.url() + t + "/runs", "", {"x-api-key: secret"});
  REQUIRE(runs.status == 200);
  CHECK(json::parse(runs.body) == json::array());
}

TEST_CASE("server: a public address without an API key is refused, bad options are errors") {
  sg::Server open({.host = "0.0.0.0", .port = 0});
  CHECK_THROWS_WITH_AS(open.start(),
                       "refusing to serve on '0.0.0.0' without an API key or authentication "
                       "(set one, or allow it explicitly)",
                       sg::Error);
  sg::Server allowed({.host = "0.0.0.0", .port = 0, .allow_public_without_key = true});
  CHECK_NOTHROW(allowed.start());
  allowed.stop();
  CHECK_THROWS_AS(sg::Server({.threads = 0}), sg::Error);
  CHECK_THROWS_AS(sg::Server({.max_body_bytes = 0}), sg::Error);
  sg::Server twice({.port = 0});
  twice.add_graph("agent", sg::test::echo_graph());
  CHECK_THROWS_WITH_AS(twice.add_graph("agent", sg::test::echo_graph()),
                       "graph 'agent' is already served", sg::Error);
  CHECK_THROWS_AS(twice.add_graph("", sg::test::echo_graph()), sg::Error);
  CHECK_THROWS_AS(twice.add_graph("x", nullptr), sg::Error);
}

TEST_CASE("server: limits and malformed requests get a status, then the connection closes") {
  Served s({.max_body_bytes = 1024, .max_header_bytes = 1024});
  const auto big = s.post("/assistants/search", "{\"name\":\"" + std::string(2000, 'x') + "\"}");
  CHECK(big.status == 413);
  const auto long_header = sg::test::http_request("GET", s.server.url() + "/ok", {},
                                                  {"X-Big: " + std::string(2000, 'y')});
  CHECK(long_header.status == 431);
  const std::string garbage = raw_exchange(s.server.port(), "NOT HTTP AT ALL\r\n\r\n");
  CHECK(garbage.rfind("HTTP/1.1 400 Bad Request\r\n", 0) == 0);
  // Two requests on one connection (keep-alive), the second closing it.
  const std::string two = raw_exchange(s.server.port(),
                                       "GET /ok HTTP/1.1\r\nHost: x\r\n\r\nGET /info "
                                       "HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  CHECK(two.find("{\"ok\":true}") != std::string::npos);
  CHECK(two.find("\"context\":\"cpp\"") != std::string::npos);
  // Percent escapes are decoded; a bad one is a 400.
  CHECK(s.get("/assistants/%61gent").status == 200);
  CHECK(s.get("/assistants/%zz").status == 400);
  CHECK(s.get("/ok").status == 200);
}

TEST_CASE("server: an idle connection is closed, connections past the limit get 503") {
  Served s({.max_connections = 1, .idle_timeout = std::chrono::milliseconds(300)});
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket idle(io);
  idle.connect({boost::asio::ip::make_address("127.0.0.1"), s.server.port()});
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::string refused = raw_exchange(s.server.port(), "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(refused.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0) == 0);
  // The idle one is closed by the server within its timeout.
  const auto started = std::chrono::steady_clock::now();
  char byte = 0;
  boost::system::error_code ec;
  (void)idle.read_some(boost::asio::buffer(&byte, 1), ec);
  CHECK(ec == boost::asio::error::eof);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(3));
  // With it gone, a new connection is served.
  CHECK(s.get("/ok").status == 200);
}

TEST_CASE("server: threads are created, read, patched, searched and deleted") {
  Served s;
  const auto created = s.post("/threads", R"({"metadata":{}})");
  REQUIRE(created.status == 200);
  const json fresh = json::parse(created.body);
  CHECK(fresh["thread_id"].get<std::string>().size() == 36);
  CHECK(fresh["status"] == "idle");
  CHECK(fresh["metadata"] == json::object());
  CHECK(fresh["values"].is_null());

  const std::string id = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
  const auto mine = s.post("/threads", json{{"thread_id", id}, {"metadata", {{"k", "v"}}}}.dump());
  REQUIRE(mine.status == 200);
  CHECK(json::parse(mine.body)["metadata"] == json{{"k", "v"}});
  // An existing id: 409 by default, the thread unchanged with if_exists do_nothing.
  const auto again = s.post("/threads", json{{"thread_id", id}, {"metadata", {}}}.dump());
  CHECK(again.status == 409);
  CHECK(json::parse(again.body)["detail"] == "thread '" + id + "' already exists");
  const auto kept = s.post(
      "/threads",
      json{{"thread_id", id}, {"if_exists", "do_nothing"}, {"metadata", {{"k", "other"}}}}.dump());
  CHECK(kept.status == 200);
  CHECK(json::parse(kept.body) == json::parse(mine.body));
  CHECK(s.post("/threads", R"({"thread_id":"abc"})").status == 422);
  CHECK(s.post("/threads", R"({"if_exists":"replace"})").status == 422);
  CHECK(s.post("/threads", R"({"metadata":[1]})").status == 422);

  CHECK(json::parse(s.get("/threads/" + id).body) == json::parse(mine.body));
  CHECK(s.get("/threads/00000000-0000-4000-8000-000000000000").status == 404);
  CHECK(s.get("/threads/abc").status == 422);

  const auto patched = sg::test::http_request("PATCH", s.server.url() + "/threads/" + id,
                                              R"({"metadata":{"k2":"v2"}})");
  REQUIRE(patched.status == 200);
  const json p = json::parse(patched.body);
  CHECK(p["metadata"] == json{{"k", "v"}, {"k2", "v2"}});
  CHECK(p["updated_at"] >= p["created_at"]);
  CHECK(json::parse(s.get("/threads/" + id).body)["metadata"] == p["metadata"]);

  const auto by_metadata = json::parse(s.post("/threads/search", R"({"metadata":{"k":"v"}})").body);
  REQUIRE(by_metadata.size() == 1);
  CHECK(by_metadata[0]["thread_id"] == id);
  const auto by_id = json::parse(s.post("/threads/search", json{{"ids", {id}}}.dump()).body);
  CHECK(by_id.size() == 1);
  const auto page = s.post("/threads/search", R"({"limit":1,"status":"idle"})");
  CHECK(json::parse(page.body).size() == 1);
  CHECK(page.headers.at("x-pagination-total") == "2");
  CHECK(page.headers.at("x-pagination-next") == "1");
  CHECK(s.post("/threads/search", R"({"status":"busy"})").body == "[]");

  const auto deleted = sg::test::http_request("DELETE", s.server.url() + "/threads/" + id);
  CHECK(deleted.status == 204);
  CHECK(deleted.body.empty());
  CHECK(s.get("/threads/" + id).status == 404);
  CHECK(sg::test::http_request("DELETE", s.server.url() + "/threads/" + id).status == 404);
  CHECK(json::parse(s.post("/threads/search", "{}").body).size() == 1);
  CHECK(sg::test::http_request("GET", s.server.url() + "/threads").status == 405);
}

TEST_CASE("server: threads in a RocksDbStore outlive the server") {
  sg::test::TempDir dir;
  const std::string id = "1f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
  {
    Served first({.records = sg::RocksDbStore::open(dir.sub("records"))});
    REQUIRE(first.post("/threads", json{{"thread_id", id}, {"metadata", {{"user", "ada"}}}}.dump())
                .status == 200);
  }
  Served second({.records = sg::RocksDbStore::open(dir.sub("records"))});
  const auto thread = second.get("/threads/" + id);
  REQUIRE(thread.status == 200);
  CHECK(json::parse(thread.body)["metadata"] == json{{"user", "ada"}});
}
