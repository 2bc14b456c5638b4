// SPDX-License-Identifier: MIT
// POST /mcp (server/src/mcp.cpp): the assistants as MCP tools over Streamable HTTP, on real HTTP
// on 127.0.0.1. Every method, the tool of each assistant with its graph's input schema, calls
// stateless and on a thread (then the thread through the normal API), failing and interrupting
// graphs, bad messages and headers, the API key and custom auth, and calls that wait together on
// one server thread.
#include <stategraph/server/auth.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>

#include <atomic>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "server_fixture.hpp"

namespace {

using nlohmann::json;
using sg::test::HttpResult;
using sg::test::human_input;
using sg::test::Served;

/// What a conforming client sends with every message after `initialize`.
const std::vector<std::string> kClientHeaders = {"Accept: application/json, text/event-stream",
                                                 "MCP-Protocol-Version: 2025-11-25"};

/// An MCP client of a test server: JSON-RPC messages POSTed to /mcp.
struct McpClient {
  Served& s;
  std::vector<std::string> headers = kClientHeaders;

  HttpResult post(const std::string& body, std::vector<std::string> extra = {}) const {
    std::vector<std::string> all = headers;
    all.insert(all.end(), extra.begin(), extra.end());
    return sg::test::http_request("POST", s.server.url() + "/mcp", body, all);
  }
  /// The response to request `method` (id 7), which must come back as a 200 JSON-RPC message.
  json request(const std::string& method, const json& params = json::object()) const {
    const HttpResult r =
        post(json{{"jsonrpc", "2.0"}, {"id", 7}, {"method", method}, {"params", params}}.dump());
    INFO(method << " -> " << r.status << " " << r.body);
    REQUIRE(r.status == 200);
    CHECK(r.headers.at("content-type") == "application/json");
    const json message = json::parse(r.body);
    CHECK(message["jsonrpc"] == "2.0");
    CHECK(message["id"] == 7);
    return message;
  }
  /// The result of tools/call `name` with `arguments`.
  json call(const std::string& name, const json& arguments) const {
    const json message = request("tools/call", {{"name", name}, {"arguments", arguments}});
    INFO(message.dump());
    REQUIRE(message.contains("result"));
    return message["result"];
  }
  /// The tools of every page of tools/list.
  json tools() const {
    json all = json::array();
    json params = json::object();
    for (;;) {
      const json result = request("tools/list", params)["result"];
      for (const auto& tool : result["tools"]) all.push_back(tool);
      if (!result.contains("nextCursor")) return all;
      params["cursor"] = result["nextCursor"];
    }
  }
};

/// The text of a tools/call result's one content.
std::string text_of(const json& result) {
  REQUIRE(result["content"].size() == 1);
  CHECK(result["content"][0]["type"] == "text");
  return result["content"][0]["text"];
}

/// The tool named `name` of `tools`; fails the test when there is none.
json tool_named(const json& tools, const std::string& name) {
  for (const auto& tool : tools) {
    if (tool["name"] == name) return tool;
  }
  FAIL("no tool " << name << " in " << tools.dump());
  return nullptr;
}

/// Human in the loop: ask interrupts with a question; resumed, it answers with the value.
std::shared_ptr<const sg::ServedGraph> city_question_graph() {
  sg::StateGraph<sg::MessagesState> g;
  g.add_node("ask", [](const sg::MessagesState&) {
    const json answer = sg::interrupt(json{{"question", "which city?"}});
    return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(
        sg::ai("going to " + answer.get<std::string>()));
  });
  g.add_edge(sg::START, "ask").add_edge("ask", sg::END);
  return sg::served_graph(std::move(g));
}

/// A node that throws.
std::shared_ptr<const sg::ServedGraph> failing_graph() {
  sg::StateGraph<sg::MessagesState> g;
  g.add_node("fail", [](const sg::MessagesState&) -> sg::Update<sg::MessagesState> {
    throw std::runtime_error("the weather service is down");
  });
  g.add_edge(sg::START, "fail").add_edge("fail", sg::END);
  return sg::served_graph(std::move(g));
}

/// The echo graph compiled without a checkpointer: it serves stateless runs only.
std::shared_ptr<const sg::ServedGraph> stateless_graph() {
  sg::StateGraph<sg::MessagesState> g;
  g.add_node("echo", [](const sg::MessagesState& s) {
    return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(
        sg::ai("stateless: " + s.messages.back().text()));
  });
  g.add_edge(sg::START, "echo").add_edge("echo", sg::END);
  return sg::served_graph(g.compile());
}

/// Where the runs of gated_graph() wait: each counts itself in, then waits on a timer, holding
/// no thread, until the test opens the gate.
struct Gate {
  std::atomic<int> arrived{0};
  std::atomic<bool> open{false};
};

/// One coroutine node that waits at `gate`, then answers "passed: " + the last message.
std::shared_ptr<const sg::ServedGraph> gated_graph(std::shared_ptr<Gate> gate) {
  sg::StateGraph<sg::MessagesState> g;
  g.add_node(
      "wait",
      [gate](const sg::MessagesState& s) -> boost::asio::awaitable<sg::Update<sg::MessagesState>> {
        gate->arrived.fetch_add(1);
        const auto executor = co_await boost::asio::this_coro::executor;
        boost::asio::steady_timer timer(executor);
        while (!gate->open.load()) {
          timer.expires_after(std::chrono::milliseconds(5));
          co_await timer.async_wait(boost::asio::use_awaitable);
        }
        const std::string text = s.messages.back().text();
        co_return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(
            sg::ai("passed: " + text));
      });
  g.add_edge(sg::START, "wait").add_edge("wait", sg::END);
  return sg::served_graph(std::move(g));
}

constexpr const char* kThread = "5a0e4f2c-0b7d-4c1e-9e55-3c2b1a0f9d8e";

}  // namespace

TEST_CASE("mcp: initialize negotiates the revision, and notifications and pings are answered") {
  Served s;
  McpClient mcp{s, {"Accept: application/json, text/event-stream"}};
  for (const std::string asked : {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}) {
    const json message =
        mcp.request("initialize", {{"protocolVersion", asked},
                                   {"capabilities", json::object()},
                                   {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
    const json& result = message["result"];
    CHECK(result["protocolVersion"] == asked);
    CHECK(result["capabilities"]["tools"].is_object());
    CHECK(result["serverInfo"]["name"] == "stategraph");
    CHECK(result["serverInfo"]["version"].is_string());
  }
  // A revision the server does not know: it answers with its newest, which a client then checks.
  const json newest =
      mcp.request("initialize", {{"protocolVersion", "2099-01-01"}})["result"]["protocolVersion"];
  CHECK(newest == "2025-11-25");
  const json missing = mcp.request("initialize", json::object());
  CHECK(missing["error"]["code"] == -32602);
  CHECK(missing["error"]["message"].get<std::string>().find("protocolVersion") !=
        std::string::npos);
  // Stateless: no session is handed out, and none is needed afterwards.
  const HttpResult r = mcp.post(
      R"({"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-11-25"}})");
  CHECK(r.headers.count("mcp-session-id") == 0);
  CHECK(json::parse(r.body)["id"] == "a");  // a string id comes back as it was

  for (const char* notification :
       {R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
        R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}})",
        R"({"jsonrpc":"2.0","id":5,"result":{}})",  // a response to a request of the server
        R"({"jsonrpc":"2.0","id":6,"error":{"code":-1,"message":"no"}})"}) {
    INFO(notification);
    const HttpResult n = mcp.post(notification);
    CHECK(n.status == 202);
    CHECK(n.body.empty());
  }
  const json pong = mcp.request("ping");
  CHECK(pong["result"] == json::object());
  const json unknown = mcp.request("resources/list");
  CHECK(unknown["error"]["code"] == -32601);
  CHECK(unknown["error"]["message"] == "Method not found: resources/list");
}

TEST_CASE("mcp: tools/list has a tool per assistant with its graph's input schema") {
  Served s({}, {{"stateless", stateless_graph()}});
  McpClient mcp{s};
  const json created = s.post_json(
      "/assistants",
      {{"graph_id", "agent"}, {"name", "researcher"}, {"description", "Finds things out"}});
  const json tools = mcp.tools();
  std::vector<std::string> names;
  for (const auto& tool : tools) names.push_back(tool["name"]);
  CHECK(names == std::vector<std::string>{"agent", "helper", "researcher", "stateless"});

  const json researcher = tool_named(tools, "researcher");
  CHECK(researcher["description"] == "Finds things out");
  CHECK(tool_named(tools, "agent")["description"] == "");
  // The input schema is the one /assistants/{id}/schemas gives, with a thread_id to run on.
  json schema = researcher["inputSchema"];
  CHECK(schema["type"] == "object");
  CHECK(schema["properties"]["thread_id"]["type"] == "string");
  schema["properties"].erase("thread_id");
  json expected = s.get_json("/assistants/" + created["assistant_id"].get<std::string>() +
                             "/schemas")["input_schema"];
  CHECK(expected.contains("properties"));
  expected["type"] = "object";
  CHECK(schema == expected);
  // A graph without a checkpointer runs stateless only: no thread_id.
  CHECK_FALSE(tool_named(tools, "stateless")["inputSchema"]["properties"].contains("thread_id"));
}

TEST_CASE("mcp: tools/list comes in pages of 100 with a cursor") {
  Served s;
  McpClient mcp{s};
  for (int i = 0; i < 120; ++i) {
    (void)s.post_json("/assistants", {{"graph_id", "agent"}, {"name", fmt::format("a{:03d}", i)}});
  }
  const json first = mcp.request("tools/list")["result"];
  REQUIRE(first["tools"].size() == 100);
  REQUIRE(first["nextCursor"].is_string());
  const json second = mcp.request("tools/list", {{"cursor", first["nextCursor"]}})["result"];
  CHECK(second["tools"].size() == 22);  // 120 and agent, helper
  CHECK_FALSE(second.contains("nextCursor"));
  CHECK(first["tools"][0]["name"] == "a000");
  CHECK(second["tools"].back()["name"] == "helper");
  CHECK(mcp.tools().size() == 122);
  for (const json& cursor : {json("x"), json("-1"), json("1000"), json(5)}) {
    INFO(cursor.dump());
    CHECK(mcp.request("tools/list", {{"cursor", cursor}})["error"]["code"] == -32602);
  }
}

TEST_CASE("mcp: tools/call runs the assistant statelessly and returns its output as JSON") {
  Served s;
  McpClient mcp{s};
  const json result = mcp.call("agent", human_input("hello"));
  CHECK_FALSE(result.contains("isError"));
  const json output = json::parse(text_of(result));
  CHECK(sg::test::contents(output) == std::vector<std::string>{"hello", "echo: hello"});
  // Its temporary thread is gone.
  CHECK(s.post_json("/threads/search", json::object()).empty());
  // No arguments: the run starts from an empty input.
  const json empty = mcp.request("tools/call", {{"name", "agent"}})["result"];
  CHECK(sg::test::contents(json::parse(text_of(empty))) == std::vector<std::string>{"echo: "});
}

TEST_CASE("mcp: a tools/call with a thread_id runs on that thread, read back through the API") {
  Served s;
  McpClient mcp{s};
  json arguments = human_input("first");
  arguments["thread_id"] = kThread;
  CHECK(sg::test::contents(json::parse(text_of(mcp.call("agent", arguments)))) ==
        std::vector<std::string>{"first", "echo: first"});
  arguments = human_input("second");
  arguments["thread_id"] = kThread;
  (void)mcp.call("agent", arguments);
  const json state = s.get_json(std::string("/threads/") + kThread + "/state");
  CHECK(sg::test::contents(state["values"]) ==
        std::vector<std::string>{"first", "echo: first", "second", "echo: second"});
  const json thread = s.get_json(std::string("/threads/") + kThread);
  CHECK(thread["metadata"]["graph_id"] == "agent");
  CHECK(thread["status"] == "idle");
  const json runs = s.get_json(std::string("/threads/") + kThread + "/runs");
  CHECK(runs.size() == 2);
  CHECK(runs[0]["status"] == "success");
}

TEST_CASE("mcp: an interrupting graph and a failing graph give tool errors with the message") {
  Served s({}, {{"ask", city_question_graph()}, {"fail", failing_graph()}});
  McpClient mcp{s};
  const json failed = mcp.call("fail", human_input("weather?"));
  CHECK(failed["isError"] == true);
  CHECK(text_of(failed).find("the weather service is down") != std::string::npos);

  // Stateless: the interrupt's value is in the message.
  const json stateless = mcp.call("ask", human_input("trip"));
  CHECK(stateless["isError"] == true);
  CHECK(text_of(stateless).find("which city?") != std::string::npos);
  // On a thread: it waits there, and a run of the API resumes it.
  json arguments = human_input("trip");
  arguments["thread_id"] = kThread;
  const json on_thread = mcp.call("ask", arguments);
  CHECK(on_thread["isError"] == true);
  CHECK(text_of(on_thread).find(kThread) != std::string::npos);
  const std::string thread_path = std::string("/threads/") + kThread;
  CHECK(s.get_json(thread_path)["status"] == "interrupted");
  const json resumed = s.post_json(thread_path + "/runs/wait",
                                   {{"assistant_id", "ask"}, {"command", {{"resume", "Lyon"}}}});
  CHECK(sg::test::contents(resumed) == std::vector<std::string>{"trip", "going to Lyon"});
}

TEST_CASE("mcp: unknown tools and bad params are JSON-RPC errors, bad arguments tool errors") {
  Served s({}, {{"stateless", stateless_graph()}});
  McpClient mcp{s};
  (void)s.post_json("/assistants", {{"graph_id", "agent"}, {"name", "twin"}});
  (void)s.post_json("/assistants", {{"graph_id", "helper"}, {"name", "twin"}});
  const auto error_of = [&](const json& params) {
    const json message = mcp.request("tools/call", params);
    INFO(message.dump());
    REQUIRE(message.contains("error"));
    CHECK(message["error"]["code"] == -32602);
    return message["error"]["message"].get<std::string>();
  };
  CHECK(error_of({{"name", "nope"}}) == "Unknown tool: nope");
  CHECK(error_of({{"name", "twin"}}).find("2 assistants are named 'twin'") != std::string::npos);
  CHECK(error_of(json::object()).find("'name'") != std::string::npos);
  CHECK(error_of({{"name", 5}}).find("'name'") != std::string::npos);
  CHECK(error_of({{"name", "agent"}, {"arguments", json::array()}}).find("'arguments'") !=
        std::string::npos);
  CHECK(mcp.request("tools/call", json::array())["error"]["code"] == -32602);  // params

  const auto tool_error = [&](const std::string& tool, const json& arguments) {
    const json result = mcp.call(tool, arguments);
    CHECK(result["isError"] == true);
    return text_of(result);
  };
  CHECK(tool_error("agent", {{"messages", 5}}).find("messages") != std::string::npos);
  CHECK(tool_error("agent", {{"no_such_field", 1}}).find("no_such_field") != std::string::npos);
  CHECK(tool_error("agent", {{"thread_id", 5}}).find("thread_id") != std::string::npos);
  CHECK(tool_error("agent", {{"thread_id", "not-a-uuid"}}).find("not a UUID") != std::string::npos);
  // A graph without threads takes no thread_id: it is input, which its state refuses.
  CHECK(tool_error("stateless", {{"thread_id", kThread}}).find("thread_id") != std::string::npos);
  // None of them left a thread behind.
  CHECK(s.post_json("/threads/search", json::object()).empty());
}

TEST_CASE("mcp: malformed messages and headers get 4xx with a JSON-RPC error, never a 5xx") {
  Served s({.max_body_bytes = 4096});
  McpClient mcp{s};
  // Each refusal: its status and the code of its JSON-RPC error, which has no id.
  const auto refused = [&](const std::string& body, std::vector<std::string> headers) {
    const HttpResult r = McpClient{s, std::move(headers)}.post(body);
    INFO(body << " -> " << r.status << " " << r.body);
    const json message = json::parse(r.body);
    CHECK(message["id"].is_null());
    CHECK(message["jsonrpc"] == "2.0");
    return std::pair(r.status, message["error"]["code"].get<int>());
  };
  const auto malformed = [&](const std::string& body) { return refused(body, kClientHeaders); };
  const std::string ping = R"({"jsonrpc":"2.0","id":1,"method":"ping"})";
  CHECK(malformed("{\"jsonrpc\": ") == std::pair(400L, -32700));
  CHECK(refused("", {"Content-Type: application/json"}) == std::pair(400L, -32700));
  CHECK(refused("", {}) == std::pair(415L, -32600));              // libcurl's form type
  CHECK(malformed("[" + ping + "]") == std::pair(400L, -32600));  // no batches
  CHECK(malformed("42") == std::pair(400L, -32600));
  CHECK(malformed(R"({"id":1,"method":"ping"})") == std::pair(400L, -32600));
  CHECK(malformed(R"({"jsonrpc":"1.0","id":1,"method":"ping"})") == std::pair(400L, -32600));
  CHECK(malformed(R"({"jsonrpc":"2.0","id":1,"method":5})") == std::pair(400L, -32600));
  CHECK(malformed(R"({"jsonrpc":"2.0","id":null,"method":"ping"})") == std::pair(400L, -32600));
  CHECK(malformed(R"({"jsonrpc":"2.0","id":{"a":1},"method":"ping"})") == std::pair(400L, -32600));
  CHECK(malformed(R"({"jsonrpc":"2.0","id":1})") == std::pair(400L, -32600));
  CHECK(refused(ping, {"MCP-Protocol-Version: 1999-01-01"}) == std::pair(400L, -32600));
  CHECK(refused(ping, {"Accept: text/html"}) == std::pair(406L, -32600));
  // A body that is not JSON by its type (libcurl would send two Content-Types: a raw request).
  const std::string plain =
      sg::test::raw_exchange(s.server.port(),
                             "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
                             "Connection: close\r\nContent-Length: " +
                                 std::to_string(ping.size()) + "\r\n\r\n" + ping);
  CHECK(plain.rfind("HTTP/1.1 415 Unsupported Media Type\r\n", 0) == 0);
  CHECK(plain.find("\"code\":-32600") != std::string::npos);
  // The same ping with good headers (or none of those) is answered.
  CHECK(mcp.post(ping).status == 200);
  CHECK(sg::test::http_request("POST", s.server.url() + "/mcp", ping).status == 200);
  CHECK(McpClient{s, {"Accept: */*"}}.post(ping).status == 200);
  CHECK(McpClient{s, {"MCP-Protocol-Version: 2024-11-05"}}.post(ping).status == 200);
  // initialize is the one request without a negotiated revision yet.
  CHECK(McpClient{s, {"MCP-Protocol-Version: 1999-01-01"}}
            .post(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":)"
                  R"("2025-11-25"}})")
            .status == 200);
  // A body over the server's limit is refused before it is read.
  const HttpResult big = mcp.post(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":)"
                                  R"({"name":"agent","arguments":{"messages":[")" +
                                  std::string(8000, 'x') + R"("]}}})");
  CHECK(big.status == 413);

  // No event stream to open, no session to end.
  const HttpResult get = sg::test::http_request("GET", s.server.url() + "/mcp", {}, kClientHeaders);
  CHECK(get.status == 405);
  CHECK(get.headers.at("allow") == "POST, DELETE");
  const HttpResult del =
      sg::test::http_request("DELETE", s.server.url() + "/mcp", {}, kClientHeaders);
  CHECK(del.status == 404);
  CHECK(json::parse(del.body)["error"]["message"].get<std::string>().find("no sessions") !=
        std::string::npos);
  // The server still answers.
  CHECK(sg::test::contents(json::parse(text_of(mcp.call("agent", human_input("ok"))))).back() ==
        "echo: ok");
}

TEST_CASE("mcp: the API key guards /mcp as every other route") {
  Served s({.api_key = "secret"});
  McpClient mcp{s};
  const HttpResult without = mcp.post(R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
  CHECK(without.status == 401);
  CHECK(
      mcp.post(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})", {"x-api-key: wrong"}).status ==
      401);
  mcp.headers.push_back("x-api-key: secret");
  CHECK(mcp.request("ping")["result"] == json::object());
  CHECK(mcp.tools().size() == 2);
}

TEST_CASE("mcp: custom auth decides which tools a user sees, calls and on which threads") {
  auto auth = std::make_shared<sg::Auth>();
  auth->authenticate([](const sg::AuthRequest& r) {
    const std::string token = r.header("Authorization");
    if (token == "Bearer alice") return sg::AuthUser{.identity = "alice"};
    if (token == "Bearer bob") return sg::AuthUser{.identity = "bob"};
    if (token == "Bearer carol") return sg::AuthUser{.identity = "carol"};
    throw sg::HttpException(401, "who are you?");
  });
  // Everything a user creates is theirs, and they reach only their own.
  auth->on("*", [](const sg::AuthContext& ctx, json& value) {
    if (value.contains("metadata")) {
      if (!value["metadata"].is_object()) value["metadata"] = json::object();
      value["metadata"]["owner"] = ctx.user.identity;
    }
    return sg::AuthDecision::filter({{"owner", ctx.user.identity}});
  });
  // Carol may not list assistants at all.
  auth->on("assistants:search", [](const sg::AuthContext& ctx, json&) -> sg::AuthDecision {
    if (ctx.user.identity == "carol") return false;
    return sg::AuthDecision::filter({{"owner", ctx.user.identity}});
  });
  Served s({.auth = auth});
  McpClient alice{s, kClientHeaders};
  alice.headers.emplace_back("Authorization: Bearer alice");
  McpClient bob{s, kClientHeaders};
  bob.headers.emplace_back("Authorization: Bearer bob");
  const auto create = [&](const std::string& user, const std::string& name) {
    const HttpResult r = sg::test::http_request("POST", s.server.url() + "/assistants",
                                                json{{"graph_id", "agent"}, {"name", name}}.dump(),
                                                {"Authorization: Bearer " + user});
    REQUIRE(r.status == 200);
  };
  create("alice", "alice_agent");
  create("bob", "bob_agent");

  const HttpResult anonymous = McpClient{s}.post(R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
  CHECK(anonymous.status == 401);
  CHECK(anonymous.body.find("who are you?") != std::string::npos);
  // The graphs' own assistants have no owner: the filter hides them too.
  McpClient carol{s, kClientHeaders};
  carol.headers.emplace_back("Authorization: Bearer carol");
  for (const char* denied : {R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})",
                             R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":)"
                             R"({"name":"alice_agent"}})"}) {
    const HttpResult r = carol.post(denied);
    INFO(denied << " -> " << r.status << " " << r.body);
    CHECK(r.status == 403);
    CHECK(json::parse(r.body)["error"]["code"] == -32600);
  }
  CHECK(carol.request("ping")["result"] == json::object());  // authenticated, and nothing more
  const json alice_tools = alice.tools();
  REQUIRE(alice_tools.size() == 1);
  CHECK(alice_tools[0]["name"] == "alice_agent");
  const json bob_tools = bob.tools();
  REQUIRE(bob_tools.size() == 1);
  CHECK(bob_tools[0]["name"] == "bob_agent");
  CHECK(bob.request("tools/call", {{"name", "alice_agent"}})["error"]["message"] ==
        "Unknown tool: alice_agent");

  json arguments = human_input("mine");
  arguments["thread_id"] = kThread;
  CHECK_FALSE(alice.call("alice_agent", arguments).contains("isError"));
  // Alice's thread is hers: Bob's call on it finds no thread there.
  const json intruder = bob.call("bob_agent", arguments);
  CHECK(intruder["isError"] == true);
  CHECK(text_of(intruder).find("not found") != std::string::npos);
  const HttpResult state =
      sg::test::http_request("GET", s.server.url() + "/threads/" + kThread + "/state", {},
                             {"Authorization: Bearer alice"});
  REQUIRE(state.status == 200);
  CHECK(sg::test::contents(json::parse(state.body)["values"]) ==
        std::vector<std::string>{"mine", "echo: mine"});
}

TEST_CASE("mcp: calls waiting on their graphs hold no server thread") {
  auto gate = std::make_shared<Gate>();
  sg::ServerOptions options;
  options.threads = 1;  // every connection, request and run on one thread
  Served s(options, {{"gated", gated_graph(gate)}});
  McpClient mcp{s};
  constexpr int kCalls = 48;
  std::vector<std::future<json>> calls;
  for (int i = 0; i < kCalls; ++i) {
    calls.push_back(std::async(std::launch::async, [&mcp, i] {
      return mcp.call("gated", human_input("call " + std::to_string(i)));
    }));
  }
  // Every call is in its graph at once, waiting, and the one thread still answers.
  REQUIRE(sg::test::eventually([&] { return gate->arrived.load() == kCalls; }));
  CHECK(mcp.request("ping")["result"] == json::object());
  CHECK(mcp.tools().size() == 3);
  CHECK(s.get("/ok").status == 200);
  gate->open = true;
  for (int i = 0; i < kCalls; ++i) {
    const json result = calls[static_cast<std::size_t>(i)].get();
    CHECK_FALSE(result.contains("isError"));
    CHECK(sg::test::contents(json::parse(text_of(result))).back() ==
          "passed: call " + std::to_string(i));
  }
}

TEST_CASE("mcp: a stateless call whose client goes away is cancelled") {
  Served s;
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), s.server.port()});
  const std::string body =
      json{{"jsonrpc", "2.0"},
           {"id", 1},
           {"method", "tools/call"},
           {"params", {{"name", "agent"}, {"arguments", human_input("sleep:60000")}}}}
          .dump();
  boost::asio::write(socket, boost::asio::buffer("POST /mcp HTTP/1.1\r\nHost: x\r\n"
                                                 "Content-Type: application/json\r\n"
                                                 "Content-Length: " +
                                                 std::to_string(body.size()) + "\r\n\r\n" + body));
  // Its temporary thread is busy while the node sleeps, and goes once the run is cancelled.
  const auto threads = [&] { return s.post_json("/threads/search", json::object()).size(); };
  REQUIRE(sg::test::eventually([&] { return threads() == 1; }));
  socket.close();
  CHECK(sg::test::eventually([&] { return threads() == 0; }));
}
