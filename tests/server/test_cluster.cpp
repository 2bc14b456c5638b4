// SPDX-License-Identifier: MIT
// Two servers in one process on one PostgreSQL database (as two processes would be): they share
// the runs (server/src/cluster.cpp). Here under ThreadSanitizer too; the multi-process tests are
// tests/cli/test_serve_cli.cpp and tests/sdk/cluster.test.mjs.
#include <stategraph/postgres/postgres_saver.hpp>
#include <stategraph/postgres/postgres_store.hpp>

#include <atomic>
#include <map>
#include <thread>

#include "server_fixture.hpp"
#include "support/loopback_openai.hpp"
#include "support/postgres_cluster.hpp"

namespace {

using nlohmann::json;
using sg::test::contents;
using sg::test::eventually;
using sg::test::human_input;
using sg::test::Served;

sg::ServerOptions cluster_options(const std::string& conninfo) {
  sg::ServerOptions options;
  options.checkpointer = sg::PostgresSaver::open(conninfo);
  options.store = sg::PostgresStore::open(conninfo);
  options.records = sg::PostgresStore::open(conninfo, {.table = "sg_records"});
  options.sync_node_workers = 4;
  options.cluster.conninfo = conninfo;
  options.cluster.lease = std::chrono::milliseconds(1000);
  return options;
}

std::string run_status(Served& s, const std::string& thread_id, const std::string& run_id) {
  return s.get_json("/threads/" + thread_id + "/runs/" + run_id).value("status", "");
}

}  // namespace

TEST_CASE("cluster: two servers share the runs of their threads") {
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  Served a(cluster_options(cluster.conninfo()));
  Served b(cluster_options(cluster.conninfo()));
  std::vector<Served*> servers{&a, &b};

  SUBCASE("enqueued runs from both servers on shared threads all run, one at a time") {
    constexpr int kThreads = 4;
    constexpr int kRunsPerClient = 6;
    std::vector<std::string> threads;
    for (int i = 0; i < kThreads; ++i) threads.push_back(a.new_thread());
    std::atomic<bool> sampling{true};
    std::atomic<int> overlaps{0};
    std::thread sampler([&] {
      sg::pg::Connection db(cluster.conninfo());
      while (sampling) {
        const auto r = db.exec(
            "SELECT count(*) FROM (SELECT thread_id FROM sg_run WHERE status = 'running' "
            "GROUP BY thread_id HAVING count(*) > 1) t");
        overlaps += static_cast<int>(r.get_int(0, 0));
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
    std::vector<std::thread> clients;
    constexpr int kClients = 4;  // 2 per server: reads of threads while runs end (a deadlock once)
    for (int c = 0; c < kClients; ++c) {
      clients.emplace_back([&, c] {
        Served& s = *servers[static_cast<std::size_t>(c % 2)];
        for (int i = 0; i < kRunsPerClient; ++i) {
          const std::string& thread_id = threads[static_cast<std::size_t>((i + c) % kThreads)];
          const auto r =
              s.post("/threads/" + thread_id + "/runs", json{{"assistant_id", "agent"},
                                                             {"input", human_input("sleep:10")},
                                                             {"multitask_strategy", "enqueue"}});
          CHECK(r.status == 200);
          CHECK(s.get("/threads/" + thread_id).status == 200);
        }
      });
    }
    for (auto& t : clients) t.join();
    for (const auto& thread_id : threads) {
      CHECK(eventually([&] { return b.get_json("/threads/" + thread_id)["status"] == "idle"; }));
    }
    sampling = false;
    sampler.join();
    CHECK(overlaps.load() == 0);
    std::size_t messages = 0;
    for (const auto& thread_id : threads) {
      const auto runs = a.get_json("/threads/" + thread_id + "/runs?limit=100");
      for (const auto& run : runs) CHECK(run["status"] == "success");
      messages += contents(a.get_json("/threads/" + thread_id + "/state")["values"]).size();
    }
    CHECK(messages == 2 * kClients * kRunsPerClient);
  }

  SUBCASE("metadata changes of one thread from both servers at once are all kept") {
    const std::string thread_id = a.new_thread();
    constexpr int kPatches = 15;
    std::vector<std::thread> patchers;
    for (int p = 0; p < 2; ++p) {
      patchers.emplace_back([&, p] {
        Served& s = *servers[static_cast<std::size_t>(p)];
        for (int i = 0; i < kPatches; ++i) {
          const auto r = sg::test::http_request(
              "PATCH", s.server.url() + "/threads/" + thread_id,
              json{{"metadata", {{"k" + std::to_string(p) + "_" + std::to_string(i), i}}}}.dump());
          CHECK(r.status == 200);
        }
      });
    }
    for (auto& t : patchers) t.join();
    CHECK(b.get_json("/threads/" + thread_id)["metadata"].size() == 2 * kPatches);
  }

  SUBCASE("a thread's status after each run reads the same from both servers, searches too") {
    const std::string thread_id = a.new_thread();
    const std::string created = a.get_json("/threads/" + thread_id)["updated_at"];
    const auto status_filter = [&](Served& s, const std::string& status) {
      const json found = s.post_json("/threads/search", {{"status", status}, {"limit", 100}});
      for (const auto& t : found) {
        if (t["thread_id"] == thread_id) return true;
      }
      return false;
    };
    // Interrupted before its node: "interrupted", wherever it ran.
    auto waited =
        a.post("/threads/" + thread_id + "/runs/wait", json{{"assistant_id", "agent"},
                                                            {"input", human_input("first")},
                                                            {"interrupt_before", {"echo"}}});
    REQUIRE(waited.status == 200);
    for (Served* s : servers) {
      const json thread = s->get_json("/threads/" + thread_id);
      CHECK(thread["status"] == "interrupted");
      CHECK(thread["updated_at"].get<std::string>() > created);
      CHECK(status_filter(*s, "interrupted"));
      CHECK_FALSE(status_filter(*s, "idle"));
    }
    // Resumed to its end: "idle".
    waited = b.post("/threads/" + thread_id + "/runs/wait",
                    json{{"assistant_id", "agent"}, {"input", nullptr}});
    REQUIRE(waited.status == 200);
    for (Served* s : servers) {
      CHECK(s->get_json("/threads/" + thread_id)["status"] == "idle");
      CHECK(status_filter(*s, "idle"));
      CHECK_FALSE(status_filter(*s, "interrupted"));
    }
    // Deleted: its status goes with it.
    REQUIRE(sg::test::http_request("DELETE", b.server.url() + "/threads/" + thread_id, "").status ==
            204);
    sg::pg::Connection db(cluster.conninfo());
    CHECK(db.exec("SELECT count(*) FROM sg_thread_status WHERE thread_id = $1",
                  sg::pg::Params().text(thread_id))
              .get_int(0, 0) == 0);
  }

  SUBCASE("cancel and join from the server that does not execute the run") {
    const std::string thread_id = a.new_thread();
    const auto run = a.post_json("/threads/" + thread_id + "/runs",
                                 {{"assistant_id", "agent"}, {"input", human_input("sleep:300")}});
    const std::string run_id = run["run_id"];
    const auto joined = b.get("/threads/" + thread_id + "/runs/" + run_id + "/join");
    REQUIRE(joined.status == 200);
    CHECK(contents(json::parse(joined.body)).back() == "echo: sleep:300");

    const auto slow =
        a.post_json("/threads/" + thread_id + "/runs",
                    {{"assistant_id", "agent"}, {"input", human_input("sleep:20000")}});
    const std::string slow_id = slow["run_id"];
    REQUIRE(eventually([&] { return run_status(b, thread_id, slow_id) == "running"; }));
    const auto cancelled =
        b.post("/threads/" + thread_id + "/runs/" + slow_id + "/cancel?wait=1", "");
    CHECK(cancelled.status / 100 == 2);
    CHECK(run_status(a, thread_id, slow_id) == "interrupted");
    CHECK(eventually([&] { return a.get_json("/threads/" + thread_id)["status"] == "idle"; }));
  }

  SUBCASE("a run whose workers died max_attempts times fails, its thread too") {
    const std::string thread_id = a.new_thread();
    const auto run =
        a.post_json("/threads/" + thread_id + "/runs",
                    {{"assistant_id", "agent"}, {"input", human_input("sleep:20000")}});
    const std::string run_id = run["run_id"];
    REQUIRE(eventually([&] { return run_status(b, thread_id, run_id) == "running"; }));
    // As if its third worker had died: another worker name, a lease run out. Its executor
    // loses it at the next heartbeat, the sweeper fails it.
    sg::pg::Connection db(cluster.conninfo());
    (void)db.exec(
        "UPDATE sg_run SET attempt = 3, worker = 'dead:1:x', "
        "lease_until = clock_timestamp() - interval '1 second' WHERE run_id = $1",
        sg::pg::Params().text(run_id));
    CHECK(eventually([&] { return run_status(b, thread_id, run_id) == "error"; }));
    CHECK(eventually([&] { return a.get_json("/threads/" + thread_id)["status"] == "error"; }));
    const auto joined = b.get("/threads/" + thread_id + "/runs/" + run_id + "/join");
    CHECK(joined.status == 200);
    // The thread takes new runs.
    const auto waited = b.post("/threads/" + thread_id + "/runs/wait",
                               json{{"assistant_id", "agent"}, {"input", human_input("next")}});
    REQUIRE(waited.status == 200);
    CHECK(contents(json::parse(waited.body)).back() == "echo: next");
  }

  SUBCASE("the stream events of ended runs are deleted after event_retention") {
    auto options = cluster_options(cluster.conninfo());
    options.cluster.event_retention = std::chrono::milliseconds(200);
    Served c(std::move(options));
    const std::string thread_id = c.new_thread();
    const auto done = c.post_json("/threads/" + thread_id + "/runs/wait",
                                  {{"assistant_id", "agent"}, {"input", human_input("hi")}});
    const auto running =
        c.post_json("/threads/" + thread_id + "/runs",
                    {{"assistant_id", "agent"}, {"input", human_input("sleep:3000")}});
    const std::string running_id = running["run_id"];
    sg::pg::Connection db(cluster.conninfo());
    const auto ended =
        db.exec("SELECT run_id FROM sg_run WHERE thread_id = $1 AND status = 'success'",
                sg::pg::Params().text(thread_id));
    REQUIRE(ended.rows() == 1);
    for (const std::string& run_id : {std::string(ended.get(0, 0)), running_id}) {
      (void)db.exec("INSERT INTO sg_run_event VALUES ($1, 0, 'values', 'values', '{}')",
                    sg::pg::Params().text(run_id));
    }
    auto events_of = [&](const std::string& run_id) {
      return db
          .exec("SELECT count(*) FROM sg_run_event WHERE run_id = $1",
                sg::pg::Params().text(run_id))
          .get_int(0, 0);
    };
    CHECK(eventually([&] { return events_of(std::string(ended.get(0, 0))) == 0; }));
    CHECK(events_of(running_id) == 1);  // its run goes on
    (void)done;
  }

  SUBCASE("a delayed run waits for its after_seconds; its webhook is sent by whoever ran it") {
    sg::testing::LoopbackOpenAI receiver;
    receiver.set_handler(
        [](const sg::testing::LoopbackRequest&) { return sg::testing::LoopbackReply::json({}); });
    const std::string hook = "http://127.0.0.1:" + std::to_string(receiver.port()) + "/done";
    const std::string thread_id = a.new_thread();
    const auto started = std::chrono::steady_clock::now();
    const auto run =
        a.post_json("/threads/" + thread_id + "/runs", {{"assistant_id", "agent"},
                                                        {"input", human_input("later")},
                                                        {"after_seconds", 3},
                                                        {"webhook", hook}});
    const std::string run_id = run["run_id"];
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    CHECK(run_status(b, thread_id, run_id) == "pending");
    REQUIRE(eventually([&] { return run_status(b, thread_id, run_id) == "success"; }));
    CHECK(std::chrono::steady_clock::now() - started >= std::chrono::seconds(3));
    REQUIRE(eventually([&] { return receiver.request_count() == 1; }));
    const json payload = receiver.requests().at(0).json();
    CHECK(payload["run_id"] == run_id);
    CHECK(payload["status"] == "success");
    CHECK(contents(payload["values"]) == std::vector<std::string>{"later", "echo: later"});
  }

  SUBCASE("a stopping server's running run is finished by the other") {
    const std::string thread_id = a.new_thread();
    const auto run = a.post_json("/threads/" + thread_id + "/runs",
                                 {{"assistant_id", "agent"}, {"input", human_input("sleep:500")}});
    const std::string run_id = run["run_id"];
    REQUIRE(eventually([&] { return run_status(b, thread_id, run_id) == "running"; }));
    a.server.stop();  // its run goes back to the queue
    CHECK(eventually([&] { return run_status(b, thread_id, run_id) == "success"; }));
    CHECK(contents(b.get_json("/threads/" + thread_id + "/state")["values"]) ==
          std::vector<std::string>{"sleep:500", "echo: sleep:500"});
  }
}

TEST_CASE("cluster: a join-stream gets the events of a run another server executes") {
  // A run created on `a` while `a` has no free slot is executed by `b`; a join-stream on either
  // server must get its events (once none came: `a` never asked `b` to forward them).
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  sg::ServerOptions one_slot = cluster_options(cluster.conninfo());
  one_slot.max_runs = 1;
  Served a(std::move(one_slot));
  Served b(cluster_options(cluster.conninfo()));
  const std::string busy_thread = a.new_thread();
  const std::string busy_id =
      a.post_json("/threads/" + busy_thread + "/runs",
                  {{"assistant_id", "agent"}, {"input", human_input("sleep:60000")}})["run_id"];
  REQUIRE(eventually([&] { return run_status(a, busy_thread, busy_id) == "running"; }));
  for (int round = 0; round < 8; ++round) {
    CAPTURE(round);
    const std::string thread_id = a.new_thread();
    const std::string text = "sleep:" + std::to_string(400 + 10 * round);
    const std::string run_id = a.post_json("/threads/" + thread_id + "/runs",
                                           {{"assistant_id", "agent"},
                                            {"input", human_input(text)},
                                            {"stream_mode", json::array({"values"})}})["run_id"];
    REQUIRE(eventually([&] { return run_status(b, thread_id, run_id) == "running"; }));
    Served& joiner = round % 2 == 0 ? a : b;  // the creator, or the server executing it
    const auto stream = joiner.get("/threads/" + thread_id + "/runs/" + run_id + "/stream");
    REQUIRE(stream.status == 200);
    CHECK(stream.body.find("event: values") != std::string::npos);
    CHECK(stream.body.find("\"echo: " + text + "\"") != std::string::npos);
  }
  (void)a.post("/threads/" + busy_thread + "/runs/" + busy_id + "/cancel?wait=1", "");
}

TEST_CASE("cluster: a cron due every second runs once each time across two servers") {
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  Served a(cluster_options(cluster.conninfo()));
  Served b(cluster_options(cluster.conninfo()));
  const std::string thread_id = a.new_thread();
  const auto now_seconds = [] {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const auto created = now_seconds();
  const json cron =
      b.post_json("/threads/" + thread_id + "/runs/crons", {{"assistant_id", "agent"},
                                                            {"schedule", "* * * * * *"},
                                                            {"input", human_input("tick")},
                                                            {"multitask_strategy", "enqueue"}});
  const std::string path = "/threads/" + thread_id + "/runs?limit=100";
  REQUIRE(eventually([&] { return a.get_json(path).size() >= 6; }, std::chrono::seconds(20)));
  const auto r = sg::test::http_request(
      "PATCH", a.server.url() + "/runs/crons/" + cron["cron_id"].get<std::string>(),
      json{{"enabled", false}}.dump());
  REQUIRE(r.status == 200);
  // Each due second made at most one run (a late one may be made in the next second).
  const auto disabled = now_seconds() + 1;
  CHECK(b.get_json(path).size() <= static_cast<std::size_t>(disabled - created));
  CHECK(eventually([&] { return a.get_json("/threads/" + thread_id)["status"] == "idle"; }));
  for (const auto& run : a.get_json(path)) CHECK(run["status"] == "success");
}
