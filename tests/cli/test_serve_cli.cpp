// SPDX-License-Identifier: MIT
// `stategraph serve` as a process: it serves the built-in graphs, keeps threads in RocksDB
// across a restart (and across a SIGKILL mid-run), stops on SIGTERM, and enforces its API key. On
// PostgreSQL, processes share the runs: a killed worker's run is finished by another, a paused
// one is fenced out, a database restart is survived.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "support/http_client.hpp"
#include "support/loopback_openai.hpp"
#include "support/postgres_cluster.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

using nlohmann::json;

namespace {

/// `stategraph serve` on a free port; url() once it listens.
class ServeProcess {
 public:
  explicit ServeProcess(std::vector<std::string> args)
      : process_(SG_CLI_PATH, [&] {
          args.insert(args.begin(), {"serve", "--port", "0"});
          return args;
        }()) {
    REQUIRE_MESSAGE(process_.wait_for_output("stategraph serve: http://"),
                    std::string(process_.out() + process_.err()));
    std::smatch match;
    const std::string out = process_.out();
    REQUIRE(std::regex_search(out, match, std::regex("(http://127\\.0\\.0\\.1:[0-9]+)")));
    url_ = match[1];
  }
  [[nodiscard]] const std::string& url() const { return url_; }
  sg::test::BackgroundProcess& process() { return process_; }

  sg::test::HttpResult post(const std::string& path, const json& body,
                            std::vector<std::string> headers = {}) const {
    return sg::test::http_request("POST", url_ + path, body.dump(), std::move(headers));
  }
  sg::test::HttpResult get(const std::string& path, std::vector<std::string> headers = {}) const {
    return sg::test::http_request("GET", url_ + path, {}, std::move(headers));
  }

 private:
  sg::test::BackgroundProcess process_;
  std::string url_;
};

json human(const std::string& text) {
  return {{"messages", json::array({{{"role", "user"}, {"content", text}}})}};
}

std::vector<std::string> contents(const json& values) {
  std::vector<std::string> out;
  for (const auto& m : values["messages"]) out.push_back(m["content"]);
  return out;
}

}  // namespace

namespace {

/// Serves on `db` (a directory or a postgresql:// URL) three times: a conversation and an
/// assistant survive a SIGTERM restart; a run that a SIGKILL cut leaves an idle thread, a failed
/// run and the checkpoints it wrote.
void check_restarts(const std::string& db) {
  std::string thread_id;
  {
    ServeProcess serve({"--db", db});
    const auto created = serve.post("/threads", json::object());
    REQUIRE(created.status == 200);
    thread_id = json::parse(created.body)["thread_id"];
    const auto waited = serve.post("/threads/" + thread_id + "/runs/wait",
                                   {{"assistant_id", "agent"}, {"input", human("hello")}});
    REQUIRE(waited.status == 200);
    CHECK(contents(json::parse(waited.body)) == std::vector<std::string>{"hello", "echo: hello"});
    const auto assistant =
        serve.post("/assistants", {{"graph_id", "agent"},
                                   {"assistant_id", "5a1e0000-0000-4000-8000-000000000001"},
                                   {"config", {{"configurable", {{"tone", "dry"}}}}}});
    REQUIRE(assistant.status == 200);
    serve.process().signal(SIGTERM);
    CHECK(serve.process().wait() == 0);
    CHECK(serve.process().out().find("stategraph serve: stopping") != std::string::npos);
  }
  std::string slow_run;
  {
    ServeProcess serve({"--db", db});
    const auto thread = json::parse(serve.get("/threads/" + thread_id).body);
    CHECK(thread["status"] == "idle");
    CHECK(contents(thread["values"]) == std::vector<std::string>{"hello", "echo: hello"});
    const auto assistant = serve.get("/assistants/5a1e0000-0000-4000-8000-000000000001");
    REQUIRE(assistant.status == 200);  // created assistants are kept with the threads
    CHECK(json::parse(assistant.body)["config"]["configurable"]["tone"] == "dry");
    const auto waited = serve.post("/threads/" + thread_id + "/runs/wait",
                                   {{"assistant_id", "agent"}, {"input", human("again")}});
    CHECK(contents(json::parse(waited.body)) ==
          std::vector<std::string>{"hello", "echo: hello", "again", "echo: again"});
    // A run that the process's death interrupts.
    const auto run = serve.post("/threads/" + thread_id + "/runs",
                                {{"assistant_id", "agent"}, {"input", human("sleep:60000")}});
    REQUIRE(run.status == 200);
    slow_run = json::parse(run.body)["run_id"];
    // Killed once echo is due: the run's input and first step are checkpointed (a run that is
    // merely "running" may not have written them yet).
    for (int i = 0; i < 1500; ++i) {
      if (json::parse(serve.get("/threads/" + thread_id + "/state").body)["next"] ==
          json::array({"echo"})) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK(json::parse(serve.get("/threads/" + thread_id).body)["status"] == "busy");
    serve.process().signal(SIGKILL);
    CHECK(serve.process().wait() == 128 + SIGKILL);
  }
  {
    ServeProcess serve({"--db", db});
    // Not stuck: the thread is idle again, the killed run failed, its input was checkpointed.
    const auto thread = json::parse(serve.get("/threads/" + thread_id).body);
    CHECK(thread["status"] == "idle");
    CHECK(json::parse(serve.get("/threads/" + thread_id + "/runs/" + slow_run).body)["status"] ==
          "error");
    CHECK(contents(thread["values"]) ==
          std::vector<std::string>{"hello", "echo: hello", "again", "echo: again", "sleep:60000"});
    const auto history =
        json::parse(serve.post("/threads/" + thread_id + "/history", {{"limit", 100}}).body);
    CHECK(history.size() == 8);  // 3 + 3 + the killed run's input and first step
    const auto waited = serve.post("/threads/" + thread_id + "/runs/wait",
                                   {{"assistant_id", "agent"}, {"input", human("after")}});
    CHECK(contents(json::parse(waited.body)).back() == "echo: after");
  }
}

}  // namespace

TEST_CASE("stategraph serve: threads resume from RocksDB after a restart and after SIGKILL") {
  sg::test::TempDir dir;
  check_restarts(dir.sub("server"));
}

namespace {

/// Waits up to `seconds` for `done()`; returns whether it came.
template <typename Done>
bool eventually(Done&& done, int seconds = 30) {
  for (int i = 0; i < seconds * 50; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

/// Starts a run of `text` on `thread_id` through `serve` and waits until its input is
/// checkpointed and echo is due (the run is then running, in the process that claimed it).
std::string start_slow_run(const ServeProcess& serve, const std::string& thread_id,
                           const std::string& text) {
  const auto run = serve.post("/threads/" + thread_id + "/runs",
                              {{"assistant_id", "agent"}, {"input", human(text)}});
  REQUIRE(run.status == 200);
  const std::string run_id = json::parse(run.body)["run_id"];
  REQUIRE(eventually([&] {
    const auto state = json::parse(serve.get("/threads/" + thread_id + "/state").body);
    return state["next"] == json::array({"echo"}) && contents(state["values"]).back() == text;
  }));
  return run_id;
}

std::string run_status(const ServeProcess& serve, const std::string& thread_id,
                       const std::string& run_id) {
  const auto got = serve.get("/threads/" + thread_id + "/runs/" + run_id);
  return got.status == 200 ? json::parse(got.body).value("status", "")
                           : "http " + std::to_string(got.status);
}

/// The checkpoints' steps, each once: no superstep was committed twice.
void check_steps_once(const ServeProcess& serve, const std::string& thread_id) {
  const auto history =
      json::parse(serve.post("/threads/" + thread_id + "/history", {{"limit", 1000}}).body);
  std::set<std::int64_t> steps;
  for (const auto& checkpoint : history) {
    const std::int64_t step = checkpoint["metadata"]["step"];
    CHECK_MESSAGE(steps.insert(step).second, "step " << step << " was committed twice");
  }
}

std::string new_thread(const ServeProcess& serve) {
  const auto created = serve.post("/threads", json::object());
  REQUIRE(created.status == 200);
  return json::parse(created.body)["thread_id"];
}

}  // namespace

TEST_CASE(
    "stategraph serve on PostgreSQL: data survives a restart, a killed worker's run is "
    "finished by another process") {
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  const std::vector<std::string> args = {"--db", cluster.url(), "--run-lease", "1"};
  std::string thread_id;
  {
    ServeProcess serve(args);
    thread_id = new_thread(serve);
    const auto waited = serve.post("/threads/" + thread_id + "/runs/wait",
                                   {{"assistant_id", "agent"}, {"input", human("hello")}});
    CHECK(contents(json::parse(waited.body)) == std::vector<std::string>{"hello", "echo: hello"});
    serve.process().signal(SIGTERM);
    CHECK(serve.process().wait() == 0);
  }
  ServeProcess a(args);
  ServeProcess b(args);
  CHECK(json::parse(b.get("/threads/" + thread_id).body)["status"] == "idle");
  // a claims the run it creates (the thread is free), then dies mid-run: b's sweeper sees the
  // lease run out and b continues the run from its last checkpoint.
  const std::string run_id = start_slow_run(a, thread_id, "sleep:1500");
  CHECK(json::parse(b.get("/threads/" + thread_id).body)["status"] == "busy");
  a.process().signal(SIGKILL);
  CHECK(a.process().wait() == 128 + SIGKILL);
  CHECK(eventually([&] { return run_status(b, thread_id, run_id) == "success"; }));
  const auto thread = json::parse(b.get("/threads/" + thread_id).body);
  CHECK(thread["status"] == "idle");
  CHECK(contents(thread["values"]) ==
        std::vector<std::string>{"hello", "echo: hello", "sleep:1500", "echo: sleep:1500"});
  check_steps_once(b, thread_id);
  // The other process serves on as before.
  const auto waited = b.post("/threads/" + thread_id + "/runs/wait",
                             {{"assistant_id", "agent"}, {"input", human("after")}});
  CHECK(contents(json::parse(waited.body)).back() == "echo: after");
}

TEST_CASE("stategraph serve on PostgreSQL: a paused worker past its lease is fenced out") {
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  const std::vector<std::string> args = {"--db", cluster.url(), "--run-lease", "1"};
  ServeProcess a(args);
  ServeProcess b(args);
  const std::string thread_id = new_thread(a);
  const std::string run_id = start_slow_run(a, thread_id, "sleep:2000");
  a.process().signal(SIGSTOP);
  // b takes the run over once a's lease ran out, and finishes it.
  CHECK(eventually([&] { return run_status(b, thread_id, run_id) == "success"; }));
  const auto history_before =
      json::parse(b.post("/threads/" + thread_id + "/history", {{"limit", 1000}}).body);
  const auto values_before = json::parse(b.get("/threads/" + thread_id + "/state").body)["values"];
  a.process().signal(SIGCONT);
  // a wakes with the run still "its own" in memory: its writes are refused (the fence), its end
  // of the run changes nothing.
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  CHECK(a.get("/ok").status == 200);
  const auto history_after =
      json::parse(b.post("/threads/" + thread_id + "/history", {{"limit", 1000}}).body);
  CHECK(history_after.size() == history_before.size());
  CHECK(json::parse(b.get("/threads/" + thread_id + "/state").body)["values"] == values_before);
  CHECK(run_status(b, thread_id, run_id) == "success");
  CHECK(contents(values_before) == std::vector<std::string>{"sleep:2000", "echo: sleep:2000"});
  check_steps_once(b, thread_id);
}

TEST_CASE(
    "stategraph serve on PostgreSQL: a database restart mid-run, the run retries and "
    "finishes") {
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  ServeProcess serve({"--db", cluster.url(), "--run-lease", "2"});
  const std::string thread_id = new_thread(serve);
  const std::string run_id = start_slow_run(serve, thread_id, "sleep:1000");
  cluster.stop();
  cluster.start();
  CHECK(eventually([&] {
    const auto got = serve.get("/threads/" + thread_id + "/runs/" + run_id);
    return got.status == 200 && json::parse(got.body)["status"] == "success";
  }));
  const auto thread = json::parse(serve.get("/threads/" + thread_id).body);
  CHECK(thread["status"] == "idle");
  CHECK(contents(thread["values"]) == std::vector<std::string>{"sleep:1000", "echo: sleep:1000"});
  check_steps_once(serve, thread_id);
  const auto waited = serve.post("/threads/" + thread_id + "/runs/wait",  // the pool recovered
                                 {{"assistant_id", "agent"}, {"input", human("after")}});
  CHECK(contents(json::parse(waited.body)).back() == "echo: after");
}

TEST_CASE("stategraph serve: STATEGRAPH_API_KEY is required, a public address needs one") {
  setenv("STATEGRAPH_API_KEY", "s3cret", 1);
  {
    ServeProcess serve({"--in-memory"});
    CHECK(serve.process().out().find("x-api-key required") != std::string::npos);
    CHECK(serve.get("/assistants/agent").status == 401);
    CHECK(serve.get("/assistants/agent", {"x-api-key: s3cret"}).status == 200);
    CHECK(serve.get("/ok").status == 200);  // health probes need no key
    CHECK(serve.get("/assistants/agent", {"x-api-key: wrong"}).status == 401);
  }
  unsetenv("STATEGRAPH_API_KEY");
  // The key from a file (a mounted secret, a systemd credential): its first line.
  sg::test::TempDir dir;
  const std::string key_file = dir.sub("api-key");
  std::ofstream(key_file) << "from-file\n";
  setenv("STATEGRAPH_API_KEY_FILE", key_file.c_str(), 1);
  {
    ServeProcess serve({"--in-memory"});
    CHECK(serve.get("/assistants/agent").status == 401);
    CHECK(serve.get("/assistants/agent", {"x-api-key: from-file"}).status == 200);
  }
  // Both set, an empty file, a missing one: refused, without the key in the message.
  setenv("STATEGRAPH_API_KEY", "s3cret", 1);
  const auto both = sg::test::run_process(SG_CLI_PATH, {"serve", "--in-memory", "--port", "0"});
  CHECK(both.exit_code != 0);
  CHECK(both.err.find("STATEGRAPH_API_KEY and STATEGRAPH_API_KEY_FILE are both set") !=
        std::string::npos);
  unsetenv("STATEGRAPH_API_KEY");
  std::ofstream(key_file, std::ios::trunc) << "\n";
  const auto empty = sg::test::run_process(SG_CLI_PATH, {"serve", "--in-memory", "--port", "0"});
  CHECK(empty.exit_code != 0);
  CHECK(empty.err.find("holds no key on its first line") != std::string::npos);
  setenv("STATEGRAPH_API_KEY_FILE", dir.sub("missing").c_str(), 1);
  const auto missing = sg::test::run_process(SG_CLI_PATH, {"serve", "--in-memory", "--port", "0"});
  CHECK(missing.exit_code != 0);
  CHECK(missing.err.find("cannot read '" + dir.sub("missing") + "': No such file") !=
        std::string::npos);
  unsetenv("STATEGRAPH_API_KEY_FILE");

  const auto refused = sg::test::run_process(
      SG_CLI_PATH, {"serve", "--in-memory", "--host", "0.0.0.0", "--port", "0"});
  CHECK(refused.exit_code != 0);
  CHECK(refused.err.find("without an API key") != std::string::npos);
  const auto unknown =
      sg::test::run_process(SG_CLI_PATH, {"serve", "--in-memory", "--graph", "nope"});
  CHECK(unknown.exit_code != 0);
  CHECK(unknown.err.find("no built-in graph 'nope'") != std::string::npos);
}

TEST_CASE("stategraph serve: no secret in its output, logs, answers, errors or database") {
  // Issue 18's security review: the server's API key (STATEGRAPH_API_KEY) and the model's
  // (OPENAI_API_KEY) are used (the model server sees its key) but never written anywhere a user
  // or an attacker reads: the process's output and its log at the most detailed level (every
  // request, run, retry and model error), any response (401s, errors, failed runs, state,
  // history, runs, /info, /metrics), or the bytes of the RocksDB database.
  const std::string server_key = "srv-key-5f1c0e9b7d2a";
  const std::string model_key = "sk-model-key-8e4b2a6c9d1f";
  sg::testing::LoopbackOpenAI model;
  model.push(sg::testing::LoopbackReply::text("hello there"));
  model.push(sg::testing::LoopbackReply::error(500, "the model broke"));
  model.push(sg::testing::LoopbackReply::error(500, "the model broke"));
  model.push(sg::testing::LoopbackReply::error(500, "the model broke"));
  model.push(sg::testing::LoopbackReply::error(500, "the model broke"));
  setenv("STATEGRAPH_API_KEY", server_key.c_str(), 1);
  setenv("OPENAI_BASE_URL", model.base_url().c_str(), 1);
  setenv("OPENAI_API_KEY", model_key.c_str(), 1);
  sg::test::TempDir dir;
  std::string seen;  // every answer's status line, headers and body
  std::string output;
  {
    ServeProcess serve({"--db", dir.sub("db"), "--log-level", "trace"});
    unsetenv("STATEGRAPH_API_KEY");
    unsetenv("OPENAI_BASE_URL");
    unsetenv("OPENAI_API_KEY");
    const std::vector<std::string> key = {"x-api-key: " + server_key};
    const auto record = [&](const sg::test::HttpResult& r) {
      seen += std::to_string(r.status) + "\n";
      for (const auto& [name, value] : r.headers) seen += name + ": " + value + "\n";
      seen += r.body + "\n";
      return r;
    };
    CHECK(record(serve.get("/assistants/agent")).status == 401);
    CHECK(
        record(serve.get("/assistants/agent", {"x-api-key: " + server_key.substr(0, 8)})).status ==
        401);
    const std::string thread_id =
        json::parse(record(serve.post("/threads", json::object(), key)).body)["thread_id"];
    const std::string runs = "/threads/" + thread_id + "/runs";
    const auto ok = record(
        serve.post(runs + "/wait", {{"assistant_id", "react_agent"}, {"input", human("hi")}}, key));
    CHECK(contents(json::parse(ok.body)).back() == "hello there");
    const auto failed = record(serve.post(
        runs + "/wait", {{"assistant_id", "react_agent"}, {"input", human("again")}}, key));
    CHECK(json::parse(failed.body)["__error__"]["message"].get<std::string>().find("500") !=
          std::string::npos);
    (void)record(serve.get("/threads/" + thread_id + "/state", key));
    (void)record(serve.post("/threads/" + thread_id + "/history", {{"limit", 100}}, key));
    (void)record(serve.get(runs, key));
    (void)record(serve.get("/info", key));
    (void)record(serve.get("/metrics", key));
    (void)record(serve.post(runs, {{"assistant_id", "nope"}}, key));
    (void)record(serve.post(runs + "/stream",
                            {{"assistant_id", "react_agent"}, {"input", human("stream")}}, key));
    serve.process().signal(SIGTERM);
    CHECK(serve.process().wait() == 0);
    output = serve.process().out() + serve.process().err();
  }
  // The log was written, with what could have leaked: the requests (with their keys), the
  // model's retries and error.
  CHECK(output.find(" info request ") != std::string::npos);
  CHECK(output.find(" route=/assistants/{} status=401") != std::string::npos);
  CHECK(output.find(" warning model request retried ") != std::string::npos);
  CHECK(output.find(" warning model call failed ") != std::string::npos);
  CHECK(output.find(" error run failed ") != std::string::npos);
  // The keys were in use: the model server got its key, and requests with the server's key
  // went through.
  REQUIRE(!model.requests().empty());
  CHECK(model.requests().front().header("authorization") == "Bearer " + model_key);
  CHECK(seen.find("hello there") != std::string::npos);
  for (const std::string& secret : {server_key, model_key}) {
    CAPTURE(secret);
    CHECK(output.find(secret) == std::string::npos);
    CHECK(seen.find(secret) == std::string::npos);
    for (const auto& file : std::filesystem::recursive_directory_iterator(dir.sub("db"))) {
      if (!file.is_regular_file()) continue;
      std::ifstream in(file.path(), std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), {});
      CHECK_MESSAGE(bytes.find(secret) == std::string::npos, file.path().string());
    }
  }
}

TEST_CASE("stategraph serve --log-format json: one object per line, requests and runs") {
  sg::testing::LoopbackOpenAI model;
  model.push(sg::testing::LoopbackReply::error(400, "no such model"));
  const std::string model_server_url = model.base_url();
  setenv("OPENAI_BASE_URL", model_server_url.c_str(), 1);
  std::string err;
  std::string thread_id;
  {
    ServeProcess serve({"--in-memory", "--log-format", "json"});
    unsetenv("OPENAI_BASE_URL");
    thread_id = json::parse(serve.post("/threads", json::object()).body)["thread_id"];
    const auto ok = serve.post("/threads/" + thread_id + "/runs/wait",
                               {{"assistant_id", "agent"}, {"input", human("hi")}});
    CHECK(ok.status == 200);
    const auto failed = serve.post("/threads/" + thread_id + "/runs/wait",
                                   {{"assistant_id", "react_agent"}, {"input", human("hi")}});
    CHECK(json::parse(failed.body).contains("__error__"));
    serve.process().signal(SIGTERM);
    CHECK(serve.process().wait() == 0);
    err = serve.process().err();
  }
  std::istringstream lines(err);
  std::vector<json> records;
  for (std::string line; std::getline(lines, line);) {
    CAPTURE(line);
    const json record = json::parse(line, nullptr, false);
    REQUIRE_FALSE(record.is_discarded());
    REQUIRE(record.is_object());
    CHECK(record["ts"].get<std::string>().size() == 24);  // 2026-11-28T21:40:00.123Z
    CHECK(record["ts"].get<std::string>().back() == 'Z');
    CHECK(record.contains("level"));
    CHECK(record.contains("msg"));
    records.push_back(record);
  }
  const auto find = [&](const std::string& msg, const std::string& graph) {
    for (const auto& r : records)
      if (r["msg"] == msg && r.value("graph_id", "") == graph) return r;
    return json();
  };
  const json ended = find("run ended", "agent");
  REQUIRE(ended.is_object());
  CHECK(ended["level"] == "info");
  CHECK(ended["status"] == "success");
  CHECK(ended["thread_id"] == thread_id);
  CHECK(ended["duration_ms"].is_number());
  const json failed = find("run failed", "react_agent");
  REQUIRE(failed.is_object());
  CHECK(failed["level"] == "error");
  CHECK(failed["error"].get<std::string>().find("no such model") != std::string::npos);
  const json chat_model = find("chat model", "");  // default_chat_model's, a log line too
  REQUIRE(chat_model.is_object());
  CHECK(chat_model["base_url"] == model_server_url);
  bool request_logged = false;
  for (const auto& r : records) {
    if (r["msg"] == "request" && r["route"] == "/threads/{}/runs/wait") {
      request_logged = true;
      CHECK(r["method"] == "POST");
      CHECK(r["thread_id"] == thread_id);
    }
  }
  CHECK(request_logged);
}

namespace {

/// Writes `config` as a stategraph.json in `dir`; its path.
std::string write_config(const std::filesystem::path& dir, const json& config) {
  const auto path = dir / "stategraph.json";
  std::ofstream(path) << config.dump(2);
  return path.string();
}

}  // namespace

TEST_CASE("stategraph serve --config: a graph library's graphs, built-ins, env and http") {
  sg::test::TempDir dir;
  const std::string config = write_config(
      dir.path(), {{"graphs",
                    {{"mine", std::string(SG_EXAMPLE_GRAPHS_PATH) + ":agent"},
                     {"loud", std::string(SG_EXAMPLE_GRAPHS_PATH) + ":shout"},
                     {"echo", "builtin:agent"}}},
                   {"env", {{"STATEGRAPH_API_KEY", "from-config"}}},
                   {"http",
                    {{"public_paths", json::array({"/ok"})},
                     {"cors", {{"allow_origins", json::array({"https://ui.example"})}}}}}});
  ServeProcess serve({"--in-memory", "--config", config});
  const std::vector<std::string> key{"x-api-key: from-config"};
  // env: the key the file sets is required; http.public_paths: /info is no longer open.
  CHECK(serve.get("/ok").status == 200);
  CHECK(serve.get("/info").status == 401);
  CHECK(serve.get("/info", key).status == 200);
  std::set<std::string> ids;
  const auto found = serve.post("/assistants/search", json::object(), key);
  REQUIRE(found.status == 200);
  for (const auto& a : json::parse(found.body)) ids.insert(a["graph_id"].get<std::string>());
  CHECK(ids == std::set<std::string>{"echo", "loud", "mine"});
  const auto ask = [&](const std::string& graph, const std::string& text) {
    const auto r = serve.post("/runs/wait", {{"assistant_id", graph}, {"input", human(text)}}, key);
    INFO(r.body);
    REQUIRE(r.status == 200);
    return contents(json::parse(r.body)).back();
  };
  CHECK(ask("mine", "hello") == "you said: hello");  // a plain node of the library
  CHECK(ask("loud", "hello") == "HELLO!");           // its coroutine node
  CHECK(ask("echo", "hello") == "echo: hello");
  // Threads of a library's graph live in the server's checkpointer.
  const auto thread = serve.post("/threads", json::object(), key);
  const std::string t = json::parse(thread.body)["thread_id"];
  REQUIRE(serve
              .post("/threads/" + t + "/runs/wait",
                    {{"assistant_id", "mine"}, {"input", human("one")}}, key)
              .status == 200);
  const auto state = serve.get("/threads/" + t + "/state", key);
  CHECK(contents(json::parse(state.body)["values"]) ==
        std::vector<std::string>{"one", "you said: one"});
  // http.cors: the configured origin, and no other page.
  CHECK(serve.get("/ok", {"Origin: https://ui.example"}).status == 200);
  CHECK(serve.get("/ok", {"Origin: http://localhost:3000"}).status == 403);
}

TEST_CASE("stategraph serve --config: an auth library keeps two users apart") {
  sg::test::TempDir dir;
  const std::string config = write_config(
      dir.path(), {{"graphs", {{"mine", std::string(SG_EXAMPLE_GRAPHS_PATH) + ":agent"}}},
                   {"auth", {{"path", SG_EXAMPLE_AUTH_PATH}}},
                   {"env", {{"AUTH_TOKENS", "alice=a-secret,bob=b-secret"}}}});
  ServeProcess serve({"--in-memory", "--config", config});
  const std::vector<std::string> alice{"Authorization: Bearer a-secret"};
  const std::vector<std::string> bob{"Authorization: Bearer b-secret"};
  CHECK(serve.get("/ok").status == 200);
  const auto anonymous = serve.post("/threads", json::object());
  CHECK(anonymous.status == 401);
  CHECK(anonymous.body.find("send Authorization: Bearer TOKEN") != std::string::npos);
  CHECK(serve.post("/threads", json::object(), {"Authorization: Bearer nope"}).status == 401);
  // Both see the graph's assistant; each sees only their own threads.
  CHECK(json::parse(serve.post("/assistants/search", json::object(), bob).body).size() == 1);
  const auto made = serve.post("/threads", json::object(), alice);
  REQUIRE(made.status == 200);
  const std::string t = json::parse(made.body)["thread_id"];
  const auto ran = serve.post("/threads/" + t + "/runs/wait",
                              {{"assistant_id", "mine"}, {"input", human("hi")}}, alice);
  CHECK(ran.status == 200);
  CHECK(serve.get("/threads/" + t, alice).status == 200);
  CHECK(serve.get("/threads/" + t, bob).status == 404);
  CHECK(serve
            .post("/threads/" + t + "/runs/wait",
                  {{"assistant_id", "mine"}, {"input", human("me too")}}, bob)
            .status == 404);
  CHECK(json::parse(serve.post("/threads/search", json::object(), bob).body).empty());
  CHECK(json::parse(serve.post("/threads/search", json::object(), alice).body).size() == 1);
}

TEST_CASE("stategraph serve --config: checkpointer.ttl expires threads, store.ttl items") {
  sg::test::TempDir dir;
  // 0.01 minutes: 600 ms; swept every 0.002 minutes (120 ms).
  const std::string config = write_config(
      dir.path(),
      {{"graphs", {{"echo", "builtin:agent"}}},
       {"checkpointer",
        {{"ttl",
          {{"strategy", "delete"}, {"default_ttl", 0.01}, {"sweep_interval_minutes", 0.002}}}}},
       {"store",
        {{"ttl",
          {{"default_ttl", 0.01},
           {"refresh_on_read", false},
           {"sweep_interval_minutes", 0.002}}}}}});
  ServeProcess serve({"--db", (dir.path() / "data").string(), "--config", config});
  const std::string t = json::parse(serve.post("/threads", json::object()).body)["thread_id"];
  REQUIRE(
      serve.post("/threads/" + t + "/runs/wait", {{"assistant_id", "echo"}, {"input", human("a")}})
          .status == 200);
  const auto put = sg::test::http_request(
      "PUT", serve.url() + "/store/items",
      json{{"namespace", {"notes"}}, {"key", "k"}, {"value", {{"v", 1}}}}.dump());
  REQUIRE(put.status == 204);
  CHECK(json::parse(serve.get("/store/items?namespace=notes&key=k").body)["value"]["v"] == 1);
  CHECK(eventually([&] { return serve.get("/threads/" + t).status == 404; }, 10));
  // An expired item reads as a missing one.
  CHECK(eventually([&] { return serve.get("/store/items?namespace=notes&key=k").body == "null"; },
                   10));
}

TEST_CASE("stategraph serve --config: store.index searches the store by embeddings") {
  sg::testing::LoopbackOpenAI model;
  sg::test::TempDir dir;
  const std::string config = write_config(
      dir.path(),
      {{"graphs", {{"echo", "builtin:agent"}}},
       {"env", {{"OPENAI_BASE_URL", model.base_url()}, {"OPENAI_API_KEY", "test-key"}}},
       {"store",
        {{"index",
          {{"embed", "openai:text-embedding-3-small"}, {"dims", 16}, {"fields", {"text"}}}}}}});
  ServeProcess serve({"--db", (dir.path() / "data").string(), "--config", config});
  const auto put = [&](const std::string& key, const std::string& text) {
    const auto r = sg::test::http_request(
        "PUT", serve.url() + "/store/items",
        json{{"namespace", {"notes"}}, {"key", key}, {"value", {{"text", text}}}}.dump());
    REQUIRE(r.status == 204);
  };
  put("food", "I love pizza with olives");
  put("weather", "rain all week in the valley");
  // The loopback model's vectors depend on the whole text: the item's own text is nearest.
  const auto found = serve.post("/store/items/search", {{"namespace_prefix", {"notes"}},
                                                        {"query", "I love pizza with olives"}});
  REQUIRE(found.status == 200);
  const json items = json::parse(found.body)["items"];
  REQUIRE(items.size() == 2);
  CHECK(items[0]["key"] == "food");
  CHECK(items[0]["score"].get<double>() > items[1]["score"].get<double>());
  // The model's embeddings, of the indexed field, at the configured size.
  bool asked = false;
  for (const auto& request : model.requests()) {
    if (request.target.find("/embeddings") == std::string::npos) continue;
    asked = true;
    CHECK(request.json()["model"] == "text-embedding-3-small");
    CHECK(request.json()["dimensions"] == 16);
  }
  CHECK(asked);
}

TEST_CASE("stategraph serve --config: clear errors for bad files, libraries and graphs") {
  sg::test::TempDir dir;
  const auto fails = [&](const json& config, const std::string& expected,
                         std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"serve", "--in-memory", "--port",
                                  "0",     "--config",    write_config(dir.path(), config)};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = sg::test::run_process(SG_CLI_PATH, args);
    INFO(r.out << r.err);
    CHECK(r.exit_code != 0);
    CHECK(r.err.find(expected) != std::string::npos);
  };
  const std::string lib = SG_EXAMPLE_GRAPHS_PATH;
  fails({{"graphs", {{"x", std::string(SG_WRONG_ABI_GRAPHS_PATH) + ":agent"}}}},
        "was built for stategraph 9.0.0");
  fails({{"graphs", {{"x", lib + ":nope"}}}}, "has no graph 'nope' (it has: agent, shout)");
  fails({{"graphs", {{"x", "/nonexistent/graphs.so:agent"}}}}, "cannot load graph library");
  fails({{"graphs", {{"x", "builtin:nope"}}}}, "no built-in graph 'nope'");
  fails({{"graphs", {{"x", "agent"}}}}, R"(graphs.x: "agent": must be "PATH.so:NAME")");
  fails({{"graphs", json::object()}}, "graphs: must map graph ids");
  fails({{"graphs", {{"x", "builtin:agent"}}}, {"auth", {{"path", "a.so"}}}},
        "cannot load auth library");
  fails({{"graphs", {{"x", "builtin:agent"}}}, {"auth", {{"path", lib}}}},
        "has no stategraph_register_auth function");
  fails({{"graphs", {{"x", "builtin:agent"}}},
         {"auth", {{"path", SG_EXAMPLE_AUTH_PATH}}},
         {"env", {{"AUTH_TOKENS", "alice"}}}},
        "auth library '" + std::string(SG_EXAMPLE_AUTH_PATH) +
            "' failed to set up: AUTH_TOKENS: 'alice' is not USER=TOKEN");
  fails({{"graphs", {{"x", "builtin:agent"}}}, {"auth", {{"path", "a.so"}, {"x", 1}}}},
        "auth.x: unknown field");
  fails({{"graphs", {{"x", "builtin:agent"}}}, {"auth", "a.so"}}, "auth: must be an object");
  fails({{"graphs", {{"x", "builtin:agent"}}}, {"http", {{"cors", {{"max_age", -1}}}}}},
        "http.cors.max_age: must be a whole number");
  fails({{"graphs", {{"x", "builtin:agent"}}}, {"env", "missing.env"}}, "cannot read the env file");
  fails({{"graphs", {{"x", "builtin:agent"}}}, {"checkpointer", {{"ttl", {{"strategy", "x"}}}}}},
        "checkpointer.ttl.strategy: must be \"delete\" or \"keep_latest\"");
  fails({{"graphs", {{"x", "builtin:agent"}}}, {"checkpointer", {{"ttl", {{"default_ttl", 0}}}}}},
        "checkpointer.ttl.default_ttl: must be a number of minutes above 0");
  fails({{"graphs", {{"x", "builtin:agent"}}}, {"store", {{"ttl", {{"refresh_on_read", 1}}}}}},
        "store.ttl.refresh_on_read: must be true or false");
  fails({{"graphs", {{"x", "builtin:agent"}}}, {"store", {{"index", {{"dims", 3}}}}}},
        "store.index.embed: must be \"openai:MODEL\"");
  fails({{"graphs", {{"x", "builtin:agent"}}},
         {"store", {{"index", {{"embed", "hashed"}, {"dims", -3}}}}}},
        "store.index.dims: must be the embeddings' size");
  fails({{"graphs", {{"x", "builtin:agent"}}},
         {"store", {{"index", {{"embed", "hashed"}, {"dims", 3}, {"model", "x"}}}}}},
        "store.index.model: unknown field");
  fails({{"graphs", {{"x", "builtin:agent"}}}}, "no graph 'y' in the configuration",
        {"--graph", "y"});
  std::ofstream(dir.path() / "broken.json") << "{\"graphs\": ";
  const auto broken = sg::test::run_process(
      SG_CLI_PATH, {"serve", "--in-memory", "--config", (dir.path() / "broken.json").string()});
  CHECK(broken.exit_code != 0);
  CHECK(broken.err.find("not valid JSON") != std::string::npos);
}

TEST_CASE("stategraph serve: options from STATEGRAPH_* variables, PORT and DATABASE_URI") {
  sg::test::TempDir dir;
  // A free port for PORT.
  std::uint16_t port = 0;
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor probe(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    port = probe.local_endpoint().port();
  }
  // The config names two graphs, and its env file (a path relative to it) serves one of them.
  std::ofstream(dir.path() / "app.env") << "# settings\nexport STATEGRAPH_GRAPHS=echo\n";
  const std::string config = write_config(
      dir.path(),
      {{"graphs", {{"echo", "builtin:agent"}, {"other", "builtin:agent"}}}, {"env", "app.env"}});
  setenv("STATEGRAPH_CONFIG", config.c_str(), 1);
  setenv("DATABASE_URI", (dir.path() / "db").c_str(), 1);
  setenv("PORT", std::to_string(port).c_str(), 1);
  {
    sg::test::BackgroundProcess serve(SG_CLI_PATH, {"serve"});
    REQUIRE_MESSAGE(serve.wait_for_output("stategraph serve: http://"),
                    std::string(serve.out() + serve.err()));
    CHECK(serve.out().find("http://127.0.0.1:" + std::to_string(port) + " (graphs: echo; data in " +
                           (dir.path() / "db").string()) != std::string::npos);
  }
  unsetenv("STATEGRAPH_CONFIG");
  unsetenv("DATABASE_URI");
  setenv("PORT", "not-a-port", 1);
  const auto bad_port = sg::test::run_process(SG_CLI_PATH, {"serve", "--in-memory"});
  CHECK(bad_port.exit_code == 1);
  CHECK(bad_port.err.find("PORT: 'not-a-port' is not a port number") != std::string::npos);
  unsetenv("PORT");
  setenv("STATEGRAPH_MAX_RUNS", "0", 1);
  const auto bad_runs = sg::test::run_process(SG_CLI_PATH, {"serve", "--in-memory", "--port", "0"});
  CHECK(bad_runs.exit_code == 2);
  CHECK(bad_runs.err.find("--max-runs") != std::string::npos);
  unsetenv("STATEGRAPH_MAX_RUNS");
}

TEST_CASE("stategraph dev: a missing config or a project that does not configure fails clearly") {
  sg::test::TempDir dir;
  auto r = sg::test::run_process(
      SG_CLI_PATH, {"dev", "--config", (dir.path() / "stategraph.json").string(), "--port", "0"});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("no config file") != std::string::npos);
  // A config beside no CMakeLists.txt: cmake cannot configure it. (tests/package/dev.sh runs
  // `stategraph dev` on a real project.)
  write_config(dir.path(), {{"graphs", {{"x", "builtin:agent"}}}});
  r = sg::test::run_process(
      SG_CLI_PATH, {"dev", "--config", (dir.path() / "stategraph.json").string(), "--port", "0"});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("cmake could not configure") != std::string::npos);
}

TEST_CASE("stategraph new: a project's files, and no overwriting") {
  sg::test::TempDir dir;
  const auto project = dir.path() / "my-agent";
  const auto made = sg::test::run_process(SG_CLI_PATH, {"new", project.string()});
  INFO(made.out << made.err);
  REQUIRE(made.exit_code == 0);
  for (const char* file : {"CMakeLists.txt", "src/agent.hpp", "src/agent.cpp", "src/graphs.cpp",
                           "tests/agent_test.cpp", "stategraph.json", "README.md", ".gitignore"}) {
    CHECK_MESSAGE(std::filesystem::is_regular_file(project / file), file);
  }
  std::ifstream cmake(project / "CMakeLists.txt");
  const std::string cmake_text((std::istreambuf_iterator<char>(cmake)), {});
  CHECK(cmake_text.find("project(my-agent LANGUAGES CXX)") != std::string::npos);
  CHECK(cmake_text.find("stategraph_add_graph_library(graphs") != std::string::npos);
  // Its stategraph.json is read by serve (the library is not built here: tests/package builds
  // and serves a new project).
  const auto served = sg::test::run_process(
      SG_CLI_PATH,
      {"serve", "--in-memory", "--port", "0", "--config", (project / "stategraph.json").string()});
  CHECK(served.err.find("cannot load graph library '" + (project / "build/graphs.so").string()) !=
        std::string::npos);
  const auto again = sg::test::run_process(SG_CLI_PATH, {"new", project.string()});
  CHECK(again.exit_code == 1);
  CHECK(again.err.find("exists and is not an empty directory") != std::string::npos);
  const auto bad = sg::test::run_process(SG_CLI_PATH, {"new", (dir.path() / "9 lives").string()});
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("cannot name a project") != std::string::npos);
}

TEST_CASE("stategraph serve tells systemd it is ready, then stopping (NOTIFY_SOCKET)") {
  sg::test::TempDir dir;
  const std::string path = (dir.path() / "notify").string();
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size());
  REQUIRE(bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0);
  const timeval wait{.tv_sec = 30, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
  const auto next_message = [&] {
    char buffer[256];
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : std::string();
  };
  setenv("NOTIFY_SOCKET", path.c_str(), 1);
  {
    ServeProcess serve({"--in-memory"});
    unsetenv("NOTIFY_SOCKET");
    CHECK(next_message() == "READY=1");  // once it serves
    CHECK(serve.get("/ok").status == 200);
    serve.process().signal(SIGTERM);
    CHECK(next_message() == "STOPPING=1");
    CHECK(serve.process().wait() == 0);
  }
  close(fd);
}

TEST_CASE("stategraph serve: SIGTERM lets runs finish within --shutdown-grace, then interrupts") {
  sg::test::TempDir dir;
  const std::string db = (dir.path() / "db").string();
  std::string quick;
  std::string slow;
  std::string quick_run;
  std::string slow_run;
  {
    ServeProcess serve({"--db", db, "--shutdown-grace", "2"});
    const auto start = [&](std::string& thread, const std::string& text) {
      thread = json::parse(serve.post("/threads", json::object()).body)["thread_id"];
      const auto run = serve.post("/threads/" + thread + "/runs",
                                  {{"assistant_id", "agent"}, {"input", human(text)}});
      REQUIRE(run.status == 200);
      return json::parse(run.body)["run_id"].get<std::string>();
    };
    quick_run = start(quick, "sleep:300");
    slow_run = start(slow, "sleep:60000");
    for (int i = 0; i < 500; ++i) {
      if (json::parse(serve.get("/threads/" + slow + "/runs/" + slow_run).body)["status"] ==
          "running") {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    serve.process().signal(SIGTERM);
    CHECK(serve.process().wait() == 0);
  }
  ServeProcess serve({"--db", db});
  CHECK(json::parse(serve.get("/threads/" + quick + "/runs/" + quick_run).body)["status"] ==
        "success");
  CHECK(contents(json::parse(serve.get("/threads/" + quick).body)["values"]).back() ==
        "echo: sleep:300");
  CHECK(json::parse(serve.get("/threads/" + slow + "/runs/" + slow_run).body)["status"] ==
        "interrupted");
}
