// `stategraph serve` as a process: it serves the built-in graphs, keeps threads in RocksDB
// across a restart (and across a SIGKILL mid-run), stops on SIGTERM, and enforces its API key.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <regex>
#include <thread>

#include "support/http_client.hpp"
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

TEST_CASE("stategraph serve: threads resume from PostgreSQL after a restart and after SIGKILL") {
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  check_restarts(cluster.url());
  // One server process per database for now: a second one is refused with the reason.
  ServeProcess first({"--db", cluster.url()});
  const auto second =
      sg::test::run_process(SG_CLI_PATH, {"serve", "--port", "0", "--db", cluster.url()});
  CHECK(second.exit_code != 0);
  CHECK(second.err.find("in use") != std::string::npos);
}

TEST_CASE("stategraph serve: STATEGRAPH_API_KEY is required, a public address needs one") {
  setenv("STATEGRAPH_API_KEY", "s3cret", 1);
  {
    ServeProcess serve({"--in-memory"});
    CHECK(serve.process().out().find("x-api-key required") != std::string::npos);
    CHECK(serve.get("/ok").status == 401);
    CHECK(serve.get("/ok", {"x-api-key: s3cret"}).status == 200);
    CHECK(serve.get("/assistants/agent", {"x-api-key: wrong"}).status == 401);
  }
  unsetenv("STATEGRAPH_API_KEY");
  const auto refused = sg::test::run_process(
      SG_CLI_PATH, {"serve", "--in-memory", "--host", "0.0.0.0", "--port", "0"});
  CHECK(refused.exit_code != 0);
  CHECK(refused.err.find("without an API key") != std::string::npos);
  const auto unknown =
      sg::test::run_process(SG_CLI_PATH, {"serve", "--in-memory", "--graph", "nope"});
  CHECK(unknown.exit_code != 0);
  CHECK(unknown.err.find("no built-in graph 'nope'") != std::string::npos);
}
