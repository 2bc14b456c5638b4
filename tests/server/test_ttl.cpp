// SPDX-License-Identifier: MIT
// Thread TTLs (ServerOptions::thread_ttl, a thread's own `ttl`) swept by the server, and
// POST /threads/prune (server/src/threads.cpp).
#include "server_fixture.hpp"

namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using sg::test::eventually;
using sg::test::human_input;
using sg::test::Served;

sg::ServerOptions sweeping(std::optional<std::chrono::milliseconds> default_ttl = std::nullopt,
                           sg::PruneStrategy strategy = sg::PruneStrategy::delete_all) {
  sg::ServerOptions options;
  options.thread_ttl.default_ttl = default_ttl;
  options.thread_ttl.strategy = strategy;
  options.thread_ttl.sweep_interval = 100ms;
  return options;
}

std::size_t history_size(Served& s, const std::string& thread_id) {
  return s.post_json("/threads/" + thread_id + "/history", {{"limit", 100}}).size();
}

/// A thread with `runs` runs of the echo graph (two checkpoints each, and the input's).
std::string thread_with_runs(Served& s, int runs, const json& ttl = nullptr) {
  json body = json::object();
  if (!ttl.is_null()) body["ttl"] = ttl;
  const std::string thread_id = s.post_json("/threads", body)["thread_id"];
  for (int i = 0; i < runs; ++i) {
    (void)s.post_json("/threads/" + thread_id + "/runs/wait",
                      {{"assistant_id", "agent"}, {"input", human_input("hi")}});
  }
  return thread_id;
}

}  // namespace

TEST_CASE("thread ttl: a thread's own TTL deletes it or keeps its newest checkpoint") {
  Served s(sweeping());
  // 0.01 minutes: 600 ms without a change.
  const std::string deleted = thread_with_runs(s, 1, 0.01);
  const std::string kept = thread_with_runs(s, 2, {{"ttl", 0.01}, {"strategy", "keep_latest"}});
  const std::string forever = thread_with_runs(s, 1);
  const std::string later = thread_with_runs(s, 1, 60);
  REQUIRE(history_size(s, kept) > 1);
  CHECK(eventually([&] { return s.get("/threads/" + deleted).status == 404; }, 10s));
  CHECK(eventually([&] { return history_size(s, kept) == 1; }, 10s));
  // The kept thread's state is its last: two turns.
  CHECK(sg::test::contents(s.get_json("/threads/" + kept + "/state")["values"]).size() == 4);
  std::this_thread::sleep_for(300ms);
  CHECK(s.get("/threads/" + forever).status == 200);
  CHECK(s.get("/threads/" + later).status == 200);
  CHECK(history_size(s, forever) > 1);

  // PATCH sets a TTL; a thread with a run in progress waits for it to end.
  const std::string patched = thread_with_runs(s, 1);
  (void)s.post_json("/threads/" + patched + "/runs",
                    {{"assistant_id", "agent"}, {"input", human_input("sleep:1500")}});
  REQUIRE(sg::test::http_request("PATCH", s.server.url() + "/threads/" + patched,
                                 json{{"ttl", 0.005}}.dump())
              .status == 200);
  std::this_thread::sleep_for(800ms);
  CHECK(s.get("/threads/" + patched).status == 200);  // busy: not swept
  CHECK(eventually([&] { return s.get("/threads/" + patched).status == 404; }, 10s));
}

TEST_CASE("thread ttl: the default TTL applies to threads that give none") {
  Served s(sweeping(600ms, sg::PruneStrategy::keep_latest));
  const std::string pruned = thread_with_runs(s, 2);
  const std::string deleted = thread_with_runs(s, 1, 0.01);  // its own strategy: delete
  CHECK(eventually([&] { return history_size(s, pruned) == 1; }, 10s));
  CHECK(eventually([&] { return s.get("/threads/" + deleted).status == 404; }, 10s));
  CHECK(s.get("/threads/" + pruned).status == 200);
}

TEST_CASE("thread ttl: a bad ttl is 422 and changes nothing") {
  Served s;
  for (const json& ttl : {json("soon"), json(0), json(-1), json{{"ttl", "x"}},
                          json{{"ttl", 5}, {"strategy", "archive"}}, json{{"ttl", 5}, {"when", 1}},
                          json::array({5})}) {
    CAPTURE(ttl.dump());
    const auto r = s.post("/threads", json{{"ttl", ttl}});
    CHECK(r.status == 422);
    CHECK(r.body.find("ttl") != std::string::npos);
  }
  CHECK(s.post_json("/threads/count", json::object()) == 0);
  const std::string thread_id = s.new_thread();
  CHECK(sg::test::http_request("PATCH", s.server.url() + "/threads/" + thread_id,
                               json{{"ttl", "later"}, {"metadata", {{"a", 1}}}}.dump())
            .status == 422);
  CHECK(s.get_json("/threads/" + thread_id)["metadata"] == json::object());
}

TEST_CASE("POST /threads/prune deletes threads or keeps their newest checkpoints") {
  Served s;
  const std::string a = thread_with_runs(s, 2);
  const std::string b = thread_with_runs(s, 2);
  const std::string c = thread_with_runs(s, 1);
  const std::string busy = thread_with_runs(s, 0);
  (void)s.post_json("/threads/" + busy + "/runs",
                    {{"assistant_id", "agent"}, {"input", human_input("sleep:60000")}});
  REQUIRE(sg::test::wait_for_field(s, "/threads/" + busy, "status", "busy"));

  json pruned =
      s.post_json("/threads/prune", {{"thread_ids", {a, b}}, {"strategy", "keep_latest"}});
  CHECK(pruned == json{{"pruned_count", 2}});
  CHECK(history_size(s, a) == 1);
  CHECK(history_size(s, b) == 1);
  CHECK(sg::test::contents(s.get_json("/threads/" + a + "/state")["values"]).size() == 4);
  // delete (the default): unknown ids, non-UUIDs and busy threads are not counted.
  pruned =
      s.post_json("/threads/prune",
                  {{"thread_ids", {a, c, busy, "nope", "00000000-0000-0000-0000-000000000009"}}});
  CHECK(pruned == json{{"pruned_count", 2}});
  CHECK(s.get("/threads/" + a).status == 404);
  CHECK(s.get("/threads/" + c).status == 404);
  CHECK(s.get("/threads/" + busy).status == 200);
  CHECK(s.get("/threads/" + b).status == 200);

  for (const json& body : {json::object(), json{{"thread_ids", "x"}}, json{{"thread_ids", {1}}},
                           json{{"thread_ids", {b}}, {"strategy", "archive"}}}) {
    CAPTURE(body.dump());
    CHECK(s.post("/threads/prune", body).status == 422);
  }
  CHECK(s.get("/threads/" + b).status == 200);
  (void)s.post("/threads/" + busy + "/runs/cancel?wait=1", "");
}
