// SPDX-License-Identifier: MIT
// Runs, thread state and the store over real HTTP on 127.0.0.1: wait, SSE streams (event order,
// modes, ids, Content-Location), join, the four multitask strategies under concurrent requests,
// cancel during a slow node, a client that disconnects mid-stream, stateless runs, interrupts and
// Command resume, state, history and update_state, the store endpoints, and bad input.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/server/server.hpp>
#include <stategraph/stategraph.hpp>
#include <stategraph/store/memory_store.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "server_fixture.hpp"
#include "support/http_client.hpp"
#include "support/loopback_openai.hpp"

using nlohmann::json;
using sg::test::contents;
using sg::test::human_input;
using sg::test::Served;

namespace {

/// One SSE event as the SDK decodes it.
struct SseEvent {
  std::string event;
  json data;
  std::string id;
};

std::vector<SseEvent> parse_sse(const std::string& body) {
  std::vector<SseEvent> out;
  std::size_t at = 0;
  while (at < body.size()) {
    const std::size_t end = std::min(body.find("\n\n", at), body.size());
    const std::string block = body.substr(at, end - at);
    at = end + 2;
    SseEvent e;
    std::size_t line_at = 0;
    while (line_at < block.size()) {
      const std::size_t line_end = std::min(block.find('\n', line_at), block.size());
      const std::string line = block.substr(line_at, line_end - line_at);
      line_at = line_end + 1;
      if (line.rfind("event: ", 0) == 0) e.event = line.substr(7);
      if (line.rfind("data: ", 0) == 0) e.data = json::parse(line.substr(6));
      if (line.rfind("id: ", 0) == 0) e.id = line.substr(4);
    }
    if (!e.event.empty()) out.push_back(std::move(e));
  }
  return out;
}

std::vector<std::string> event_names(const std::vector<SseEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.event);
  return out;
}

json run_body(const std::string& text, json extra = json::object()) {
  json body = {{"assistant_id", "agent"}, {"input", human_input(text)}};
  body.update(extra);
  return body;
}

/// The graph of interrupt_agent: `ask` interrupts with a question and answers with the value
/// it is resumed with.
std::shared_ptr<const sg::ServedGraph> asking_graph() {
  sg::StateGraph<sg::MessagesState> g;
  g.add_node("ask", [](const sg::MessagesState&) {
    const json answer = sg::interrupt(json{{"question", "what next?"}});
    return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(
        sg::ai("resumed: " + (answer.is_string() ? answer.get<std::string>() : answer.dump())));
  });
  g.add_edge(sg::START, "ask").add_edge("ask", sg::END);
  return sg::served_graph(std::move(g));
}

}  // namespace

TEST_CASE(
    "server runs: wait returns the final values, the thread keeps them, history has LangGraph's "
    "shape") {
  Served s;
  const std::string t = s.new_thread();
  const auto waited = s.post("/threads/" + t + "/runs/wait", run_body("hello"));
  REQUIRE(waited.status == 200);
  const json values = json::parse(waited.body);
  CHECK(contents(values) == std::vector<std::string>{"hello", "echo: hello"});
  const std::string location = waited.headers.at("content-location");
  CHECK(location.rfind("/threads/" + t + "/runs/", 0) == 0);
  // LangChain's message dict.
  CHECK(values["messages"][0]["type"] == "human");
  CHECK(values["messages"][0]["additional_kwargs"] == json::object());
  CHECK(values["messages"][1]["type"] == "ai");
  CHECK(values["messages"][1]["tool_calls"] == json::array());
  CHECK(values["messages"][1]["id"].get<std::string>().size() == 36);

  const json thread = s.get_json("/threads/" + t);
  CHECK(thread["status"] == "idle");
  CHECK(thread["values"] == values);
  CHECK(thread["metadata"]["graph_id"] == "agent");
  CHECK(thread["metadata"]["assistant_id"] == "fe096781-5601-53d2-b2f6-0d3403f7e9ca");

  const json history = s.post_json("/threads/" + t + "/history", {{"limit", 10}});
  REQUIRE(history.size() == 3);
  CHECK(history[0]["metadata"]["source"] == "loop");
  CHECK(history[0]["metadata"]["step"] == 1);
  CHECK(history[0]["next"] == json::array());
  CHECK(history[1]["next"] == json::array({"echo"}));
  CHECK(history[1]["tasks"][0]["name"] == "echo");
  CHECK(history[2]["metadata"]["source"] == "input");
  CHECK(history[2]["metadata"]["step"] == -1);
  CHECK(history[2]["next"] == json::array({"__start__"}));
  CHECK(history[2]["parent_checkpoint"].is_null());
  for (std::size_t i = 0; i + 1 < history.size(); ++i) {
    CHECK(history[i]["parent_checkpoint"]["checkpoint_id"] ==
          history[i + 1]["checkpoint"]["checkpoint_id"]);
  }
  CHECK(history[0]["metadata"]["run_id"] == location.substr(location.rfind('/') + 1));
  CHECK(s.post_json("/threads/" + t + "/history", {{"limit", 2}}).size() == 2);

  // The state: latest, at a checkpoint by path and by body.
  const json state = s.get_json("/threads/" + t + "/state");
  CHECK(state["values"] == values);
  CHECK(state["checkpoint"] == history[0]["checkpoint"]);
  const std::string first = history[1]["checkpoint"]["checkpoint_id"];
  CHECK(contents(s.get_json("/threads/" + t + "/state/" + first)["values"]) ==
        std::vector<std::string>{"hello"});
  CHECK(s.post_json("/threads/" + t + "/state/checkpoint",
                    {{"checkpoint", {{"checkpoint_id", first}}}})["next"] == json::array({"echo"}));
  CHECK(s.get("/threads/" + t + "/state/1f000000-0000-6000-8000-000000000000").status == 404);

  // A thread without checkpoints.
  const std::string empty = s.new_thread();
  const json none = s.get_json("/threads/" + empty + "/state");
  CHECK(none["values"] == json::object());
  CHECK(none["next"] == json::array());
  CHECK(none["checkpoint"].is_null());
  CHECK(s.post_json("/threads/" + empty + "/history", json::object()) == json::array());
}

TEST_CASE("server runs: update_state as a node adds an update checkpoint the next run continues") {
  Served s;
  const std::string t = s.new_thread();
  (void)s.post_json("/threads/" + t + "/runs/wait", run_body("one"));
  const json before = s.get_json("/threads/" + t + "/state");
  const json saved = s.post_json(
      "/threads/" + t + "/state",
      {{"values", {{"messages", json::array({{{"type", "ai"}, {"content", "manual"}}})}}},
       {"as_node", "echo"}});
  const json after = s.get_json("/threads/" + t + "/state");
  CHECK(after["checkpoint"]["checkpoint_id"] == saved["checkpoint"]["checkpoint_id"]);
  CHECK(after["metadata"]["source"] == "update");
  CHECK(after["next"] == json::array());
  CHECK(after["parent_checkpoint"]["checkpoint_id"] == before["checkpoint"]["checkpoint_id"]);
  CHECK(contents(after["values"]) == std::vector<std::string>{"one", "echo: one", "manual"});
  const json next = s.post_json("/threads/" + t + "/runs/wait", run_body("two"));
  CHECK(contents(next) ==
        std::vector<std::string>{"one", "echo: one", "manual", "two", "echo: two"});
  // Bad updates: an unknown node, an unknown field, a thread that never ran.
  CHECK(s.post("/threads/" + t + "/state", json{{"values", json::object()}, {"as_node", "nope"}})
            .status == 400);
  CHECK(s.post("/threads/" + t + "/state", json{{"values", {{"nope", 1}}}, {"as_node", "echo"}})
            .status == 422);
  CHECK(s.post("/threads/" + s.new_thread() + "/state", json{{"values", json::object()}}).status ==
        409);
}

TEST_CASE("server runs: an SSE stream sends metadata first, then the requested modes in order") {
  Served s;
  const std::string t = s.new_thread();
  const auto r = s.post("/threads/" + t + "/runs/stream",
                        run_body("s2", {{"stream_mode", json::array({"values", "updates"})}}));
  REQUIRE(r.status == 200);
  CHECK(r.headers.at("content-type") == "text/event-stream");
  const auto events = parse_sse(r.body);
  CHECK(event_names(events) == std::vector<std::string>{"metadata", "values", "updates", "values"});
  const std::string location = r.headers.at("content-location");
  CHECK(events[0].data["run_id"] == location.substr(location.rfind('/') + 1));
  CHECK(events[0].data["attempt"] == 1);
  for (std::size_t i = 0; i < events.size(); ++i) CHECK(events[i].id == std::to_string(i));
  CHECK(contents(events[1].data) == std::vector<std::string>{"s2"});
  CHECK(contents(events[2].data["echo"]) == std::vector<std::string>{"echo: s2"});
  CHECK(events[3].data == s.get_json("/threads/" + t + "/state")["values"]);

  // updates only: no values events; a string stream_mode works.
  const auto updates = parse_sse(
      s.post("/threads/" + t + "/runs/stream", run_body("u", {{"stream_mode", "updates"}})).body);
  CHECK(event_names(updates) == std::vector<std::string>{"metadata", "updates"});

  // messages-tuple: the node's message with LangGraph's metadata.
  const auto tuple = parse_sse(
      s.post("/threads/" + t + "/runs/stream", run_body("m", {{"stream_mode", "messages-tuple"}}))
          .body);
  REQUIRE(event_names(tuple) == std::vector<std::string>{"metadata", "messages"});
  CHECK(tuple[1].data[0]["content"] == "echo: m");
  CHECK(tuple[1].data[0]["id"].is_string());
  CHECK(tuple[1].data[1]["langgraph_node"] == "echo");

  // The legacy messages mode, debug, tasks and events name their events after the mode.
  const auto legacy = parse_sse(
      s.post("/threads/" + t + "/runs/stream", run_body("l", {{"stream_mode", "messages"}})).body);
  CHECK(event_names(legacy) ==
        std::vector<std::string>{"metadata", "messages/metadata", "messages/complete"});
  const auto debug = parse_sse(
      s.post("/threads/" + t + "/runs/stream",
             run_body("d",
                      {{"stream_mode", json::array({"debug", "tasks", "events", "checkpoints"})}}))
          .body);
  std::map<std::string, int> counts;  // and checkpoints: one per superstep checkpoint
  for (const auto& e : debug) ++counts[e.event];
  CHECK(counts["tasks"] == 2);  // the task and its result
  CHECK(counts["checkpoints"] == 3);
  CHECK(counts["debug"] >= 2);
  CHECK(counts["events"] >= 4);
  CHECK(debug[1].event == "events");
  CHECK(debug[1].data["event"] == "on_chain_start");
  CHECK(debug.back().data["event"] == "on_chain_end");

  // Stateless streams carry no ids and a /runs/{id} location.
  const auto stateless = s.post("/runs/stream", run_body("x"));
  CHECK(stateless.headers.at("content-location").rfind("/runs/", 0) == 0);
  const auto stateless_events = parse_sse(stateless.body);
  CHECK(event_names(stateless_events) == std::vector<std::string>{"metadata", "values", "values"});
  CHECK(stateless_events[0].id.empty());
}

TEST_CASE("server runs: background runs, get, list, join, join-stream, delete") {
  Served s;
  const std::string t = s.new_thread();
  const auto created = s.post("/threads/" + t + "/runs", run_body("sleep:300"));
  REQUIRE(created.status == 200);
  const json run = json::parse(created.body);
  CHECK(run["status"] == "pending");
  CHECK(run["multitask_strategy"] == "reject");
  CHECK(run["assistant_id"] == "fe096781-5601-53d2-b2f6-0d3403f7e9ca");
  CHECK(run["kwargs"]["stream_mode"] == json::array({"values"}));
  const std::string id = run["run_id"];
  CHECK(created.headers.at("content-location") == "/threads/" + t + "/runs/" + id);
  CHECK(s.get_json("/threads/" + t)["status"] == "busy");
  // A busy thread's record lives in memory until the run ends: search and PATCH see it.
  const json busy_found = s.post_json("/threads/search", json{{"status", "busy"}});
  REQUIRE(busy_found.size() == 1);
  CHECK(busy_found[0]["thread_id"] == t);
  const auto patched = sg::test::http_request("PATCH", s.server.url() + "/threads/" + t,
                                              R"({"metadata":{"tag":"during"}})");
  CHECK(patched.status == 200);
  CHECK(json::parse(patched.body)["status"] == "busy");
  // Join-stream: the events published from now on, ending with the run.
  const auto joined_stream = s.get("/threads/" + t + "/runs/" + id + "/stream");
  const auto events = parse_sse(joined_stream.body);
  REQUIRE(!events.empty());
  CHECK(events.back().event == "values");
  CHECK(contents(events.back().data).back() == "echo: sleep:300");
  // Join after the end: the thread's values.
  const json joined = s.get_json("/threads/" + t + "/runs/" + id + "/join");
  CHECK(contents(joined) == std::vector<std::string>{"sleep:300", "echo: sleep:300"});
  CHECK(s.get_json("/threads/" + t + "/runs/" + id)["status"] == "success");
  const json idle = s.get_json("/threads/" + t);
  CHECK(idle["status"] == "idle");
  CHECK(idle["metadata"]["tag"] == "during");
  CHECK(idle["metadata"]["graph_id"] == "agent");
  CHECK(s.post_json("/threads/search", json{{"status", "busy"}}).empty());
  (void)s.post_json("/threads/" + t + "/runs/wait", run_body("b"));
  const json list = s.get_json("/threads/" + t + "/runs?limit=10");
  REQUIRE(list.size() == 2);
  CHECK(list[1]["run_id"] == id);  // newest first
  CHECK(s.get_json("/threads/" + t + "/runs?limit=1&offset=1").size() == 1);
  CHECK(s.get("/threads/" + t + "/runs/00000000-0000-4000-8000-000000000000").status == 404);
  CHECK(sg::test::http_request("DELETE", s.server.url() + "/threads/" + t + "/runs/" + id).status ==
        204);
  CHECK(s.get("/threads/" + t + "/runs/" + id).status == 404);
  CHECK(s.get_json("/threads/" + t + "/runs").size() == 1);
}

TEST_CASE("server runs: cancel during a slow node interrupts it and writes nothing of the node") {
  Served s;
  const std::string t = s.new_thread();
  const json run = s.post_json("/threads/" + t + "/runs", run_body("sleep:30000"));
  const std::string path = "/threads/" + t + "/runs/" + run["run_id"].get<std::string>();
  REQUIRE(sg::test::wait_for_field(s, path, "status", "running"));
  const auto started = std::chrono::steady_clock::now();
  const auto cancelled = s.post(path + "/cancel?wait=1&action=interrupt", std::string());
  CHECK(cancelled.status == 204);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));
  CHECK(s.get_json(path)["status"] == "interrupted");
  const json thread = s.get_json("/threads/" + t);
  CHECK(thread["status"] == "idle");
  CHECK(contents(thread["values"]) == std::vector<std::string>{"sleep:30000"});
  CHECK(s.post(path + "/cancel", std::string()).status == 409);  // it ended
  CHECK(s.post(path + "/cancel?action=explode", std::string()).status == 422);
  // Cancel without wait answers 202 at once; rollback deletes the run and its checkpoints.
  const json second = s.post_json("/threads/" + t + "/runs", run_body("sleep:30000"));
  const std::string second_path = "/threads/" + t + "/runs/" + second["run_id"].get<std::string>();
  REQUIRE(sg::test::wait_for_field(s, second_path, "status", "running"));
  CHECK(s.post(second_path + "/cancel?action=rollback", std::string()).status == 202);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (s.get(second_path).status != 404 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(s.get(second_path).status == 404);
  REQUIRE(sg::test::wait_for_field(s, "/threads/" + t, "status", "idle"));
  CHECK(contents(s.get_json("/threads/" + t)["values"]) == std::vector<std::string>{"sleep:30000"});
}

TEST_CASE("server runs: the four multitask strategies under concurrent requests") {
  Served s({.sync_node_workers = 4});
  const auto start_slow = [&](const std::string& t) {
    const json run = s.post_json("/threads/" + t + "/runs", run_body("sleep:30000"));
    const std::string path = "/threads/" + t + "/runs/" + run["run_id"].get<std::string>();
    REQUIRE(sg::test::wait_for_field(s, path, "status", "running"));
    return path;
  };
  const auto concurrently = [](int n, const std::function<void(int)>& fn) {
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) threads.emplace_back(fn, i);
    for (auto& th : threads) th.join();
  };

  SUBCASE("reject: every other run is refused with 409, the running one is untouched") {
    const std::string t = s.new_thread();
    const std::string slow = start_slow(t);
    std::atomic<int> refused{0};
    concurrently(8, [&](int i) {
      if (s.post("/threads/" + t + "/runs", run_body("r" + std::to_string(i))).status == 409) {
        ++refused;
      }
    });
    CHECK(refused == 8);
    CHECK(s.get_json(slow)["status"] == "running");
    // A refused run leaves no record behind.
    const json listed = s.get_json("/threads/" + t + "/runs");
    REQUIRE(listed.size() == 1);
    CHECK(slow.ends_with(listed[0]["run_id"].get<std::string>()));
    CHECK(s.post(slow + "/cancel?wait=1", std::string()).status == 204);
    CHECK(s.get_json("/threads/" + t + "/runs").size() == 1);
  }
  SUBCASE("interrupt: the running run stops, its input stays, the new run runs on top") {
    const std::string t = s.new_thread();
    const std::string slow = start_slow(t);
    const json b = s.post_json("/threads/" + t + "/runs/wait",
                               run_body("B", {{"multitask_strategy", "interrupt"}}));
    CHECK(contents(b) == std::vector<std::string>{"sleep:30000", "B", "echo: B"});
    CHECK(s.get_json(slow)["status"] == "interrupted");
  }
  SUBCASE("rollback: the running run and its checkpoints are gone") {
    const std::string t = s.new_thread();
    (void)s.post_json("/threads/" + t + "/runs/wait", run_body("A0"));
    const std::string slow = start_slow(t);
    const auto created =
        s.post("/threads/" + t + "/runs", run_body("B", {{"multitask_strategy", "rollback"}}));
    REQUIRE(created.status == 200);
    CHECK(json::parse(created.body)["multitask_strategy"] == "rollback");
    const std::string b = json::parse(created.body)["run_id"];
    const json values = s.get_json("/threads/" + t + "/runs/" + b + "/join");
    CHECK(contents(values) == std::vector<std::string>{"A0", "echo: A0", "B", "echo: B"});
    CHECK(s.get(slow).status == 404);
  }
  SUBCASE("enqueue: concurrent runs all run, one after another, in the order they were queued") {
    const std::string t = s.new_thread();
    const std::string slow = start_slow(t);
    std::vector<std::string> ids(6);
    concurrently(6, [&](int i) {
      const auto r = s.post("/threads/" + t + "/runs",
                            run_body("q" + std::to_string(i), {{"multitask_strategy", "enqueue"}}));
      if (r.status == 200) ids[static_cast<std::size_t>(i)] = json::parse(r.body)["run_id"];
    });
    for (const auto& id : ids) REQUIRE(id.size() == 36);
    CHECK(s.post(slow + "/cancel", std::string()).status == 202);
    for (const auto& id : ids) (void)s.get("/threads/" + t + "/runs/" + id + "/join");
    const auto messages = contents(s.get_json("/threads/" + t)["values"]);
    REQUIRE(messages.size() == 13);  // the interrupted input, then six inputs with their echoes
    for (std::size_t i = 1; i < messages.size(); i += 2) {
      CHECK(messages[i + 1] == "echo: " + messages[i]);
    }
    for (const auto& id : ids) {
      CHECK(s.get_json("/threads/" + t + "/runs/" + id)["status"] == "success");
    }
    CHECK(s.get_json("/threads/" + t)["status"] == "idle");
  }
}

TEST_CASE("server runs: a client that disconnects mid-stream cancels the run only when asked to") {
  Served s;
  const auto stream_then_close = [&](const std::string& t, const json& body) {
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket socket(io);
    socket.connect({boost::asio::ip::make_address("127.0.0.1"), s.server.port()});
    boost::asio::write(socket, boost::asio::buffer(sg::test::post_request_bytes(
                                   "/threads/" + t + "/runs/stream", body)));
    std::string got;
    char chunk[4096];
    while (got.find("event: metadata") == std::string::npos) {
      got.append(chunk, socket.read_some(boost::asio::buffer(chunk)));
    }
    const auto at = got.find("\"run_id\":\"") + 10;
    socket.close();
    return got.substr(at, 36);
  };
  const std::string t = s.new_thread();
  const std::string cancelled =
      stream_then_close(t, run_body("sleep:30000", {{"on_disconnect", "cancel"}}));
  CHECK(
      sg::test::wait_for_field(s, "/threads/" + t + "/runs/" + cancelled, "status", "interrupted"));
  REQUIRE(sg::test::wait_for_field(s, "/threads/" + t, "status", "idle"));
  const std::string kept = stream_then_close(t, run_body("sleep:200"));
  CHECK(sg::test::wait_for_field(s, "/threads/" + t + "/runs/" + kept, "status", "success"));
  CHECK(contents(s.get_json("/threads/" + t)["values"]).back() == "echo: sleep:200");
  CHECK(s.get_json("/ok") == json{{"ok", true}});
}

TEST_CASE("server runs: a wait sends its header while the run goes on, and its body when it ends") {
  Served s;
  const auto start_wait = [&](boost::asio::ip::tcp::socket& socket, const std::string& t,
                              const json& body) {
    socket.connect({boost::asio::ip::make_address("127.0.0.1"), s.server.port()});
    boost::asio::write(socket, boost::asio::buffer(sg::test::post_request_bytes(
                                   "/threads/" + t + "/runs/wait", body)));
    std::string got;
    char chunk[4096];
    while (got.find("\r\n\r\n") == std::string::npos) {
      got.append(chunk, socket.read_some(boost::asio::buffer(chunk)));
    }
    return got;
  };
  const auto running_run = [&](const std::string& t) {
    for (const auto& run : s.get_json("/threads/" + t + "/runs")) {
      if (run["status"] == "running") return run["run_id"].get<std::string>();
    }
    return std::string();
  };
  {  // one wait alone, then several at once (their headers wait a little for their runs)
    boost::asio::io_context io;
    for (const std::size_t n : {1, 6}) {
      std::vector<std::string> threads;
      std::vector<boost::asio::ip::tcp::socket> sockets;
      std::vector<std::string> got;
      for (std::size_t i = 0; i < n; ++i) {
        threads.push_back(s.new_thread());
        sockets.emplace_back(io);
      }
      // All connected and sent before any header is read: the waits overlap.
      std::vector<std::thread> readers;
      got.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        readers.emplace_back(
            [&, i] { got[i] = start_wait(sockets[i], threads[i], run_body("sleep:30000")); });
      }
      for (auto& r : readers) r.join();
      for (std::size_t i = 0; i < n; ++i) {
        INFO("wait " << i << " of " << n);
        CHECK(got[i].rfind("HTTP/1.1 200", 0) == 0);
        CHECK(got[i].find("Transfer-Encoding: chunked") != std::string::npos);
        const std::string run_id = running_run(threads[i]);  // the header came before its end
        REQUIRE(run_id.size() == 36);
        REQUIRE(s.post("/threads/" + threads[i] + "/runs/" + run_id + "/cancel", std::string())
                    .status == 202);
        boost::system::error_code ec;
        char chunk[4096];
        while (got[i].find("\r\n0\r\n\r\n") == std::string::npos && !ec) {
          got[i].append(chunk, sockets[i].read_some(boost::asio::buffer(chunk), ec));
        }
        CHECK(got[i].find("\"sleep:30000\"") != std::string::npos);  // where the run stopped
        CHECK(s.get_json("/threads/" + threads[i] + "/runs/" + run_id)["status"] == "interrupted");
      }
    }
  }
  const std::string t = s.new_thread();
  {  // a client that goes away cancels the run when the request asked for that
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket socket(io);
    (void)start_wait(socket, t, run_body("sleep:30000", {{"on_disconnect", "cancel"}}));
    const std::string run_id = running_run(t);
    REQUIRE(run_id.size() == 36);
    socket.close();
    CHECK(
        sg::test::wait_for_field(s, "/threads/" + t + "/runs/" + run_id, "status", "interrupted"));
  }
  REQUIRE(sg::test::wait_for_field(s, "/threads/" + t, "status", "idle"));
  // A run that ends at once: header and body on a connection that stays usable.
  const std::string got = sg::test::raw_exchange(
      s.server.port(),
      sg::test::post_request_bytes("/threads/" + t + "/runs/wait", run_body("quick")) +
          "GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  CHECK(got.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(got.find("\"echo: quick\"") != std::string::npos);
  CHECK(got.find("\r\n0\r\n\r\nHTTP/1.1 200") != std::string::npos);
  CHECK(got.find("{\"ok\":true}") != std::string::npos);
}

TEST_CASE("server runs: stateless runs leave no thread behind unless kept") {
  Served s;
  const auto threads_now = [&] { return s.post_json("/threads/search", {{"limit", 1000}}).size(); };
  const std::size_t before = threads_now();
  const auto waited = s.post("/runs/wait", run_body("hi"));
  REQUIRE(waited.status == 200);
  CHECK(contents(json::parse(waited.body)) == std::vector<std::string>{"hi", "echo: hi"});
  CHECK(waited.headers.at("content-location").rfind("/runs/", 0) == 0);
  CHECK(threads_now() == before);
  (void)s.post_json("/runs/wait", run_body("kept", {{"on_completion", "keep"}}));
  CHECK(threads_now() == before + 1);
}

TEST_CASE("server runs: interrupts stop a run, input null or Command resume continue it") {
  sg::Server server({.port = 0});
  server.add_graph("agent", sg::test::echo_graph());
  server.add_graph("interrupt_agent", asking_graph());
  server.start();
  const auto post = [&](const std::string& path, const json& body) {
    const auto r = sg::test::http_request("POST", server.url() + path, body.dump());
    INFO(r.body);
    REQUIRE(r.status == 200);
    return json::parse(r.body);
  };
  const auto get = [&](const std::string& path) {
    return json::parse(sg::test::http_request("GET", server.url() + path).body);
  };
  // interrupt_before in the run body.
  const std::string t = post("/threads", json::object())["thread_id"];
  const json stopped =
      post("/threads/" + t + "/runs/wait", run_body("hi", {{"interrupt_before", {"echo"}}}));
  // As LangGraph: the last values chunk of a stopped run is its (here empty) interrupt list.
  CHECK(stopped == json{{"__interrupt__", json::array()}});
  CHECK(get("/threads/" + t)["status"] == "interrupted");
  CHECK(get("/threads/" + t + "/state")["next"] == json::array({"echo"}));
  const json resumed =
      post("/threads/" + t + "/runs/wait", {{"assistant_id", "agent"}, {"input", nullptr}});
  CHECK(contents(resumed) == std::vector<std::string>{"hi", "echo: hi"});
  CHECK(get("/threads/" + t)["status"] == "idle");

  // interrupt() in a node, then Command{resume}.
  const std::string u = post("/threads", json::object())["thread_id"];
  const json asked = post("/threads/" + u + "/runs/wait",
                          {{"assistant_id", "interrupt_agent"}, {"input", human_input("go")}});
  REQUIRE(asked.size() == 1);
  REQUIRE(asked.contains("__interrupt__"));
  CHECK(asked["__interrupt__"][0]["value"] == json{{"question", "what next?"}});
  const json thread = get("/threads/" + u);
  CHECK(thread["status"] == "interrupted");
  REQUIRE(thread["interrupts"].size() == 1);
  const json state = get("/threads/" + u + "/state");
  CHECK(state["tasks"][0]["interrupts"][0]["value"]["question"] == "what next?");
  CHECK(state["interrupts"].size() == 1);
  const auto stream =
      sg::test::http_request("POST", server.url() + "/threads/" + u + "/runs/stream",
                             json{{"assistant_id", "interrupt_agent"},
                                  {"command", {{"resume", "yes"}}},
                                  {"stream_mode", "updates"}}
                                 .dump());
  const auto events = parse_sse(stream.body);
  REQUIRE(!events.empty());
  CHECK(contents(events.back().data["ask"]) == std::vector<std::string>{"resumed: yes"});
  CHECK(get("/threads/" + u)["status"] == "idle");
  // The interrupt in a stream: an updates event from __interrupt__.
  const std::string v = post("/threads", json::object())["thread_id"];
  const auto interrupted =
      parse_sse(sg::test::http_request("POST", server.url() + "/threads/" + v + "/runs/stream",
                                       json{{"assistant_id", "interrupt_agent"},
                                            {"input", human_input("go")},
                                            {"stream_mode", json::array({"updates", "values"})}}
                                           .dump())
                    .body);
  bool saw_interrupt = false;
  for (const auto& e : interrupted) {
    if (e.event == "updates" && e.data.contains("__interrupt__")) {
      saw_interrupt = e.data["__interrupt__"][0]["value"]["question"] == "what next?";
    }
  }
  CHECK(saw_interrupt);
}

TEST_CASE("server runs: bad run requests get a clear 4xx and change nothing") {
  Served s;
  const std::string t = s.new_thread();
  const auto status_of = [&](const std::string& path, const json& body) {
    return s.post(path, body).status;
  };
  const std::string runs = "/threads/" + t + "/runs";
  CHECK(status_of(runs, {{"input", human_input("x")}}) == 422);  // no assistant_id
  CHECK(status_of(runs, run_body("x", {{"assistant_id", "nope"}})) == 404);
  CHECK(status_of(runs, run_body("x", {{"stream_mode", "sideways"}})) == 422);
  CHECK(status_of(runs, run_body("x", {{"multitask_strategy", "shove"}})) == 422);
  CHECK(status_of(runs, run_body("x", {{"command", "resume"}})) == 422);
  CHECK(status_of(runs, {{"assistant_id", "agent"}, {"input", {{"nope", 1}}}}) == 422);
  CHECK(status_of(runs, {{"assistant_id", "agent"}, {"input", {{"messages", 5}}}}) == 422);
  CHECK(status_of(runs, run_body("x", {{"config", {{"recursion_limit", -1}}}})) == 422);
  CHECK(s.post(runs, std::string("{not json")).status == 422);
  CHECK(status_of("/threads/not-a-uuid/runs", run_body("x")) == 422);
  CHECK(status_of("/threads/00000000-0000-4000-8000-000000000000/runs", run_body("x")) == 404);
  CHECK(status_of("/threads/00000000-0000-4000-8000-000000000001/runs/wait",
                  run_body("x", {{"if_not_exists", "create"}})) == 200);
  CHECK(s.get_json("/threads/" + t)["status"] == "idle");
  CHECK(s.get_json(runs) == json::array());
  // A run that fails inside the graph: the error event, __error__ for wait, thread error.
  const auto failing =
      s.post("/threads/" + t + "/runs/wait", run_body("x", {{"config", {{"recursion_limit", 1}}}}));
  REQUIRE(failing.status == 200);
  CHECK(json::parse(failing.body)["__error__"]["error"] == "GraphRecursionError");
  CHECK(s.get_json("/threads/" + t)["status"] == "error");
  // A thread with an active run cannot be deleted.
  const json slow = s.post_json(runs, run_body("sleep:30000"));
  CHECK(sg::test::http_request("DELETE", s.server.url() + "/threads/" + t).status == 409);
  CHECK(s.post(runs + "/" + slow["run_id"].get<std::string>() + "/cancel?wait=1", std::string())
            .status == 204);
  CHECK(sg::test::http_request("DELETE", s.server.url() + "/threads/" + t).status == 204);
  CHECK(s.get("/threads/" + t).status == 404);
}

TEST_CASE("server runs: after_seconds delays a run's start, cancelling it lets the next one in") {
  Served s;
  const std::string t = s.new_thread();
  const std::string runs = "/threads/" + t + "/runs";
  const auto before = std::chrono::steady_clock::now();
  const json delayed = s.post_json(runs, run_body("later", {{"after_seconds", 2}}));
  CHECK(delayed["status"] == "pending");
  // As the official servers: created_at is when it may start.
  CHECK(delayed["created_at"].get<std::string>() > delayed["updated_at"].get<std::string>());
  const std::string path = runs + "/" + delayed["run_id"].get<std::string>();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(s.get_json(path)["status"] == "pending");
  CHECK(s.get_json("/threads/" + t)["status"] == "busy");
  // The thread is busy meanwhile: reject refuses, enqueue waits behind it.
  CHECK(s.post(runs, run_body("x")).status == 409);
  const json queued = s.post_json(runs, run_body("next", {{"multitask_strategy", "enqueue"}}));
  const json joined = s.get_json(runs + "/" + queued["run_id"].get<std::string>() + "/join");
  CHECK(std::chrono::steady_clock::now() - before >= std::chrono::seconds(2));
  CHECK(contents(joined) == std::vector<std::string>{"later", "echo: later", "next", "echo: next"});
  CHECK(s.get_json(path)["status"] == "success");

  // A delayed run cancelled before it starts never runs, and the run queued behind it starts.
  const json far = s.post_json(runs, run_body("never", {{"after_seconds", 3600}}));
  const json behind = s.post_json(runs, run_body("behind", {{"multitask_strategy", "enqueue"}}));
  const std::string far_path = runs + "/" + far["run_id"].get<std::string>();
  CHECK(s.post(far_path + "/cancel?wait=1", std::string()).status == 204);
  CHECK(s.get_json(far_path)["status"] == "interrupted");
  const json after_cancel = s.get_json(runs + "/" + behind["run_id"].get<std::string>() + "/join");
  CHECK(contents(after_cancel).back() == "echo: behind");
  CHECK(contents(after_cancel).size() == 6);  // "never" was not added

  // interrupt drops a delayed run, and a server stopping with one waiting does not wait for it.
  (void)s.post_json(runs, run_body("never", {{"after_seconds", 3600}}));
  const json now =
      s.post_json(runs + "/wait", run_body("now", {{"multitask_strategy", "interrupt"}}));
  CHECK(contents(now).back() == "echo: now");
  (void)s.post_json(runs, run_body("never", {{"after_seconds", 3600}}));
  const auto stopping = std::chrono::steady_clock::now();
  s.server.stop();
  CHECK(std::chrono::steady_clock::now() - stopping < std::chrono::seconds(5));
}

TEST_CASE("server runs: a run's webhook gets the Run, its status and final values") {
  sg::testing::LoopbackOpenAI receiver;
  receiver.set_handler(
      [](const sg::testing::LoopbackRequest&) { return sg::testing::LoopbackReply::json({}); });
  const std::string hook = "http://127.0.0.1:" + std::to_string(receiver.port()) + "/hook";
  Served s({.api_key = "secret-key"});
  const std::vector<std::string> key = {"x-api-key: secret-key"};
  const auto post = [&](const std::string& path, const json& body) {
    return sg::test::http_request("POST", s.server.url() + path, body.dump(), key);
  };
  const auto wait_for_requests = [&](std::size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (receiver.request_count() < n && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return receiver.request_count() >= n;
  };
  const std::string t = json::parse(post("/threads", json::object()).body)["thread_id"];
  const auto waited = post("/threads/" + t + "/runs/wait", run_body("hi", {{"webhook", hook}}));
  REQUIRE(waited.status == 200);
  REQUIRE(wait_for_requests(1));
  const auto first = receiver.requests().at(0);
  CHECK(first.method == "POST");
  CHECK(first.target == "/hook");
  CHECK(first.header("x-api-key").empty());  // the key goes to this server only
  const json payload = first.json();
  CHECK(payload["thread_id"] == t);
  CHECK(payload["status"] == "success");
  CHECK(payload["kwargs"]["webhook"] == hook);
  CHECK(contents(payload["values"]) == std::vector<std::string>{"hi", "echo: hi"});
  CHECK(!payload["run_started_at"].get<std::string>().empty());
  CHECK(payload["run_ended_at"].get<std::string>() >= payload["run_started_at"].get<std::string>());
  // A failing run sends its error.
  (void)post("/threads/" + t + "/runs/wait",
             run_body("x", {{"webhook", hook}, {"config", {{"recursion_limit", 1}}}}));
  REQUIRE(wait_for_requests(2));
  const json failed = receiver.requests().at(1).json();
  CHECK(failed["status"] == "error");
  CHECK(failed["error"].get<std::string>().find("ecursion") != std::string::npos);
  // A path is this server's own, sent with its key: the Run POSTed to another thread's runs
  // (it carries assistant_id) starts a run there.
  const std::string t2 = json::parse(post("/threads", json::object()).body)["thread_id"];
  (void)post("/threads/" + t + "/runs/wait",
             run_body("again", {{"webhook", "/threads/" + t2 + "/runs"},
                                {"metadata", {{"origin", "first run"}}}}));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  json landed = json::array();
  while (landed.empty() && std::chrono::steady_clock::now() < deadline) {
    landed = json::parse(
        sg::test::http_request("GET", s.server.url() + "/threads/" + t2 + "/runs", {}, key).body);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(landed.size() == 1);
  CHECK(landed[0]["metadata"]["origin"] == "first run");  // the first run's, posted back
  // Bad webhooks are refused before anything runs.
  for (const char* bad : {"ftp://example.com/x", "example.com", "//evil", "http://"}) {
    CHECK(post("/threads/" + t + "/runs", run_body("x", {{"webhook", bad}})).status == 422);
  }
  CHECK(post("/threads/" + t + "/runs", run_body("x", {{"webhook", 5}})).status == 422);
  for (const json& bad : {json(-1), json("soon"), json(1e12)}) {
    CHECK(post("/threads/" + t + "/runs", run_body("x", {{"after_seconds", bad}})).status == 422);
  }
  // A receiver that does not answer holds no run worker: the next runs go on.
  receiver.set_handler([](const sg::testing::LoopbackRequest&) {
    sg::testing::LoopbackReply slow = sg::testing::LoopbackReply::json({});
    slow.delay = std::chrono::milliseconds(3000);
    return slow;
  });
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) {
    CHECK(post("/threads/" + t + "/runs/wait", run_body("x", {{"webhook", hook}})).status == 200);
  }
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(2));
}

TEST_CASE("server store: put, get, search, namespaces, delete and bad input") {
  Served s;
  const auto put = [&](const json& body) {
    return sg::test::http_request("PUT", s.server.url() + "/store/items", body.dump()).status;
  };
  CHECK(put({{"namespace", {"a", "b"}}, {"key", "k1"}, {"value", {{"x", 1}}}}) == 204);
  CHECK(put({{"namespace", {"a", "c", "d"}}, {"key", "k2"}, {"value", {{"x", 2}}}}) == 204);
  const json item = s.get_json("/store/items?namespace=a.b&key=k1");
  CHECK(item["value"] == json{{"x", 1}});
  CHECK(item["namespace"] == json::array({"a", "b"}));
  CHECK(s.get_json("/store/items?namespace=a.b&key=missing").is_null());
  CHECK(put({{"namespace", {"a", "b"}}, {"key", "k1"}, {"value", {{"x", 3}}}}) == 204);
  const json updated = s.get_json("/store/items?namespace=a.b&key=k1");
  CHECK(updated["value"] == json{{"x", 3}});
  CHECK(updated["created_at"] == item["created_at"]);
  CHECK(updated["updated_at"] >= item["updated_at"]);
  const json found =
      s.post_json("/store/items/search", {{"namespace_prefix", {"a"}}, {"filter", {{"x", 2}}}});
  REQUIRE(found["items"].size() == 1);
  CHECK(found["items"][0]["key"] == "k2");
  CHECK(s.post_json("/store/items/search", {{"namespace_prefix", {"a"}}, {"limit", 1}})["items"]
            .size() == 1);
  CHECK(s.post_json("/store/items/search", {{"namespace_prefix", {"a"}}, {"query", "x"}})["items"]
            .size() == 2);
  CHECK(s.post_json("/store/namespaces", {{"prefix", {"a"}}, {"max_depth", 2}})["namespaces"] ==
        json::array({{"a", "b"}, {"a", "c"}}));
  CHECK(s.post_json("/store/namespaces", {{"suffix", {"d"}}})["namespaces"] ==
        json::array({{"a", "c", "d"}}));
  CHECK(sg::test::http_request("DELETE", s.server.url() + "/store/items",
                               json{{"namespace", {"a", "b"}}, {"key", "k1"}}.dump())
            .status == 204);
  CHECK(s.get_json("/store/items?namespace=a.b&key=k1").is_null());
  // Bad input.
  CHECK(put({{"namespace", {"a.b"}}, {"key", "k"}, {"value", json::object()}}) == 422);
  CHECK(put({{"namespace", {"a"}}, {"key", "k"}, {"value", 5}}) == 422);
  CHECK(put({{"namespace", json::array()}, {"key", "k"}, {"value", json::object()}}) == 422);
  CHECK(put({{"namespace", {"a"}}, {"value", json::object()}}) == 422);
  CHECK(s.get("/store/items?namespace=a.b").status == 422);
  CHECK(s.post("/store/items/search", json{{"limit", "ten"}}).status == 422);
  // The reserved root label, a filter with an unknown operator: the client's mistakes.
  const auto reserved = sg::test::http_request(
      "PUT", s.server.url() + "/store/items",
      json{{"namespace", {"langgraph", "x"}}, {"key", "k"}, {"value", json::object()}}.dump());
  CHECK(reserved.status == 422);
  CHECK(reserved.body.find("the root label 'langgraph' is reserved") != std::string::npos);
  CHECK(s.post("/store/items/search", json{{"filter", {{"n", {{"$near", 1}}}}}}).status == 422);
  // The server's own records are not in the user's store.
  (void)s.new_thread();
  CHECK(s.post_json("/store/namespaces", json::object())["namespaces"] ==
        json::array({{"a", "c", "d"}}));
}

TEST_CASE("server runs: resumable streams replay from Last-Event-ID, during and after the run") {
  Served s;
  const std::string t = s.new_thread();
  const json modes = {{"stream_mode", json::array({"values", "updates"})}};

  // A resumable stream carries a Location the SDK reconnects to; the run says it is resumable.
  json body = run_body("a", modes);
  body["stream_resumable"] = true;
  const auto streamed = s.post("/threads/" + t + "/runs/stream", body);
  REQUIRE(streamed.status == 200);
  const std::string location = streamed.headers.at("content-location");
  CHECK(streamed.headers.at("location") == location + "/stream");
  const auto all = parse_sse(streamed.body);
  REQUIRE(all.size() == 4);  // metadata, values (the input), updates (echo), values
  const std::string run_id = location.substr(location.rfind('/') + 1);
  CHECK(s.get_json(location)["kwargs"]["resumable"] == true);

  // After the end: the events after the given id, with the same ids.
  const auto replay = [&](const std::string& id) {
    return sg::test::http_request("GET", s.server.url() + location + "/stream", {},
                                  {"Last-Event-ID: " + id});
  };
  const auto after_first = parse_sse(replay("0").body);
  REQUIRE(after_first.size() == all.size() - 1);
  for (std::size_t i = 0; i < after_first.size(); ++i) {
    CHECK(after_first[i].id == all[i + 1].id);
    CHECK(after_first[i].event == all[i + 1].event);
    CHECK(after_first[i].data == all[i + 1].data);
  }
  CHECK(parse_sse(replay("-1").body).size() == all.size());
  CHECK(parse_sse(replay(all.back().id).body).empty());
  // The largest int64 made the next position overflow (UBSan, the http_request fuzz target).
  for (const char* bad : {"x", "1.5", "-2", "99999999999999999999999", "9223372036854775807"}) {
    INFO(bad);
    CHECK(replay(bad).status == 422);
  }

  // During the run: a background run, joined with Last-Event-ID -1 while it sleeps, replays its
  // metadata event (published before anyone listened) and then follows it to the end.
  json slow = run_body("sleep:300", modes);
  slow["stream_resumable"] = true;
  const json created = s.post_json("/threads/" + t + "/runs", slow);
  const std::string slow_path = "/threads/" + t + "/runs/" + created["run_id"].get<std::string>();
  const auto joined = sg::test::http_request("GET", s.server.url() + slow_path + "/stream", {},
                                             {"Last-Event-ID: -1"});
  const auto joined_events = parse_sse(joined.body);
  REQUIRE(!joined_events.empty());
  CHECK(joined_events.front().event == "metadata");
  CHECK(joined_events.front().id == "0");
  CHECK(joined_events.back().event == "values");
  CHECK(joined_events.back().data["messages"].back()["content"] == "echo: sleep:300");

  // Not resumable: Last-Event-ID is ignored (nothing was kept to replay), and there is no
  // Location.
  const auto plain = s.post("/threads/" + t + "/runs/stream", run_body("b", modes));
  CHECK(plain.headers.count("location") == 0);
  const std::string plain_location = plain.headers.at("content-location");
  CHECK(parse_sse(sg::test::http_request("GET", s.server.url() + plain_location + "/stream", {},
                                         {"Last-Event-ID: 0"})
                      .body)
            .empty());
}

TEST_CASE(
    "server runs: stop() lets executing runs finish within the shutdown grace, then cancels "
    "the rest") {
  auto saver = std::make_shared<sg::InMemorySaver>();
  auto records = std::make_shared<sg::InMemoryStore>();
  const sg::ServerOptions options{
      .shutdown_grace = std::chrono::milliseconds(1500), .checkpointer = saver, .records = records};
  std::string quick_thread;
  std::string quick_run;
  std::string slow_thread;
  std::string slow_run;
  {
    Served s(options);
    // Each run is made by a stream request, which follows it from the start: the stream of the
    // run the shutdown cancels ends with an `end` event, so that the SDK does not try to
    // reconnect; the stream of the run that finishes ends as any run's does.
    std::string quick_stream;
    std::string slow_stream;
    const auto stream_run = [&](const std::string& t, const std::string& text, std::string& out) {
      return std::thread([&, t, text] {
        try {
          out = s.post("/threads/" + t + "/runs/stream", run_body(text)).body;
        } catch (const std::exception& e) {
          out = std::string("failed: ") + e.what();
        }
      });
    };
    const auto run_of = [&](const std::string& t) {
      std::string id;
      (void)sg::test::eventually([&] {
        const auto runs = s.get_json("/threads/" + t + "/runs");
        if (!runs.empty()) id = runs[0]["run_id"];
        return !id.empty();
      });
      return id;
    };
    quick_thread = s.new_thread();
    slow_thread = s.new_thread();
    std::thread quick_follower = stream_run(quick_thread, "sleep:400", quick_stream);
    std::thread slow_follower = stream_run(slow_thread, "sleep:60000", slow_stream);
    quick_run = run_of(quick_thread);
    slow_run = run_of(slow_thread);
    const bool running =
        sg::test::wait_for_field(s, "/threads/" + quick_thread + "/runs/" + quick_run, "status",
                                 "running") &&
        sg::test::wait_for_field(s, "/threads/" + slow_thread + "/runs/" + slow_run, "status",
                                 "running");
    CHECK(running);
    std::thread stopping([&] { s.server.stop(); });
    // During the grace the server still answers, and refuses new runs.
    int refused = 0;
    for (int i = 0; i < 100 && refused == 0; ++i) {
      const auto r = s.post("/threads/" + s.new_thread() + "/runs", run_body("late"));
      if (r.status == 503) ++refused;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    CHECK(refused == 1);
    stopping.join();
    quick_follower.join();
    slow_follower.join();
    CHECK(slow_stream.find("event: end") != std::string::npos);
    CHECK(quick_stream.find("\"echo: sleep:400\"") != std::string::npos);
    CHECK(quick_stream.find("event: end") == std::string::npos);
  }
  Served again(options);  // the same records and checkpoints
  CHECK(again.get_json("/threads/" + quick_thread + "/runs/" + quick_run)["status"] == "success");
  CHECK(contents(again.get_json("/threads/" + quick_thread)["values"]).back() == "echo: sleep:400");
  CHECK(again.get_json("/threads/" + slow_thread + "/runs/" + slow_run)["status"] == "interrupted");
  CHECK(again.get_json("/threads/" + slow_thread)["status"] == "idle");
  CHECK(contents(again.get_json("/threads/" + slow_thread)["values"]) ==
        std::vector<std::string>{"sleep:60000"});  // its input's checkpoint is kept
}
