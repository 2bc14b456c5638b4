// SPDX-License-Identifier: MIT
// Crons: cron schedules (server/src/cron_schedule.hpp) and the crons API over HTTP, firing runs
// on time (server/src/crons.cpp). Two servers on one PostgreSQL database fire each due time
// once: test_cluster.cpp.
#include <stategraph/core/error.hpp>

#include <set>

#include "cron_schedule.hpp"
#include "server_fixture.hpp"

namespace {

using nlohmann::json;
using std::chrono::sys_days;
using std::chrono::sys_seconds;
using namespace std::chrono_literals;
using sg::server::CronSchedule;
using sg::server::find_time_zone;
using sg::server::parse_iso_time;
using sg::test::contents;
using sg::test::eventually;
using sg::test::human_input;
using sg::test::Served;

sys_seconds at(int y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0) {
  return sys_days{std::chrono::year{y} / mo / d} + std::chrono::hours(h) +
         std::chrono::minutes(mi) + std::chrono::seconds(s);
}

sys_seconds next(const char* expression, sys_seconds after, const char* zone = nullptr) {
  const auto found =
      CronSchedule(expression).next(after, zone != nullptr ? find_time_zone(zone) : nullptr);
  REQUIRE(found.has_value());
  return *found;
}

}  // namespace

TEST_CASE("cron schedule: fields, lists, ranges, steps and names") {
  const sys_seconds t = at(2026, 11, 28, 12, 3, 30);  // a Saturday
  CHECK(next("* * * * *", t) == at(2026, 11, 28, 12, 4));
  CHECK(next("*/15 * * * *", t) == at(2026, 11, 28, 12, 15));
  CHECK(next("5,10 9-17 * * *", t) == at(2026, 11, 28, 12, 5));
  CHECK(next("5,10 9-17 * * *", at(2026, 11, 28, 17, 10)) == at(2026, 11, 29, 9, 5));
  CHECK(next("0 9 * * MON-FRI", t) == at(2026, 11, 30, 9));
  CHECK(next("0 0 1 JAN *", t) == at(2027, 1, 1));
  CHECK(next("@hourly", t) == at(2026, 11, 28, 13));
  CHECK(next("@daily", t) == at(2026, 11, 29));
  CHECK(next("@weekly", t) == at(2026, 11, 29));  // Sunday
  CHECK(next("@monthly", t) == at(2026, 12, 1));
  CHECK(next("@yearly", t) == at(2027, 1, 1));
  CHECK(next("0 0 * * 7", t) == at(2026, 11, 29));              // 7 is Sunday too
  CHECK(next("30 2 29 2 *", t) == at(2028, 2, 29, 2, 30));      // the next leap day
  CHECK(next("10/20 * * * *", t) == at(2026, 11, 28, 12, 10));  // 10, 30, 50
  // Strictly after: a due time equal to `after` is the next one's start.
  CHECK(next("4 12 * * *", at(2026, 11, 28, 12, 4)) == at(2026, 11, 29, 12, 4));
  // croniter's sixth field: seconds.
  CHECK(next("* * * * * */10", t) == at(2026, 11, 28, 12, 3, 40));
  CHECK(next("* * * * * *", t) == at(2026, 11, 28, 12, 3, 31));
  // Day and weekday both restricted: either (the 1st, or a Monday).
  CHECK(next("0 0 1 * MON", t) == at(2026, 11, 30));
  CHECK(next("0 0 1 * MON", at(2026, 11, 30, 1)) == at(2026, 12, 1));
  // Never due: none within 10 years.
  CHECK_FALSE(CronSchedule("0 0 30 2 *").next(t, nullptr).has_value());
}

TEST_CASE("cron schedule: a bad expression names its field") {
  const auto fails = [](const char* expression, const char* part) {
    try {
      (void)CronSchedule(expression);
      FAIL("accepted " << expression);
    } catch (const sg::Error& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(part) != std::string::npos);
    }
  };
  fails("* * * *", "expected 5 fields");
  fails("* * * * * * *", "expected 5 fields");
  fails("60 * * * *", "minute field '60' has 60, outside 0-59");
  fails("* 24 * * *", "hour field");
  fails("* * 0 * *", "day of the month field");
  fails("* * * 13 *", "month field");
  fails("* * * FOO *", "has 'FOO', not a number");
  fails("* * * * 8", "day of the week field");
  fails("*/0 * * * *", "step '0'");
  fails("5-1 * * * *", "backwards");
  fails("1,,2 * * * *", "empty item");
  fails("@often", "expected 5 fields");
}

TEST_CASE("cron schedule: in a time zone, across daylight-saving changes") {
  // 09:00 in New York: 14:00 UTC in winter, 13:00 in summer.
  CHECK(next("0 9 * * *", at(2026, 11, 28), "America/New_York") == at(2026, 11, 28, 14));
  CHECK(next("0 9 * * *", at(2026, 7, 1), "America/New_York") == at(2026, 7, 1, 13));
  // 2026-03-08: 02:00-03:00 does not exist there; 02:30 is not due that day.
  CHECK(next("30 2 * * *", at(2026, 3, 7, 12), "America/New_York") == at(2026, 3, 9, 6, 30));
  // 2026-11-01: 01:00-02:00 comes twice; 01:30 is due once, the first time (EDT, 05:30 UTC).
  CHECK(next("30 1 * * *", at(2026, 10, 31, 12), "America/New_York") == at(2026, 11, 1, 5, 30));
  CHECK(next("30 1 * * *", at(2026, 11, 1, 5, 30), "America/New_York") == at(2026, 11, 2, 6, 30));
  CHECK_THROWS_AS((void)find_time_zone("Mars/Olympus"), sg::Error);
  CHECK(next("0 0 * * *", at(2026, 11, 28), "UTC") == at(2026, 11, 29));
}

TEST_CASE("cron schedule: ISO 8601 times") {
  CHECK(parse_iso_time("2026-11-28T12:00:00Z") == at(2026, 11, 28, 12));
  CHECK(parse_iso_time("2026-11-28T12:00:00.250Z") == at(2026, 11, 28, 12));
  CHECK(parse_iso_time("2026-11-28T12:00:00+02:00") == at(2026, 11, 28, 10));
  CHECK(parse_iso_time("2026-11-28T12:00:00.123456+00:00") == at(2026, 11, 28, 12));
  CHECK(parse_iso_time("2026-11-28T12:00:00") == at(2026, 11, 28, 12));
  CHECK(parse_iso_time("2026-11-28") == at(2026, 11, 28));
  CHECK_FALSE(parse_iso_time("tomorrow").has_value());
  CHECK_FALSE(parse_iso_time("2026-11-28T12:00:00Zjunk").has_value());
}

TEST_CASE("crons: a thread's cron runs on time, and search, count, update and delete work") {
  Served s;
  const std::string thread_id = s.new_thread();
  const auto runs_of = [&](const std::string& id) {
    return s.get_json("/threads/" + id + "/runs?limit=100");
  };
  // Every second (croniter's seconds field), on the thread.
  const json cron =
      s.post_json("/threads/" + thread_id + "/runs/crons", {{"assistant_id", "agent"},
                                                            {"schedule", "* * * * * *"},
                                                            {"input", human_input("tick")},
                                                            {"multitask_strategy", "enqueue"},
                                                            {"metadata", {{"team", "a"}}}});
  const std::string cron_id = cron["cron_id"];
  CHECK(cron["thread_id"] == thread_id);
  CHECK(cron["assistant_id"] == sg::system_assistant_id("agent"));
  CHECK(cron["schedule"] == "* * * * * *");
  CHECK(cron["enabled"] == true);
  CHECK(cron["payload"]["input"] == human_input("tick"));
  CHECK(cron["metadata"] == json{{"team", "a"}});
  CHECK(cron["next_run_date"].is_string());
  CHECK_FALSE(cron.contains("sg_next_run"));
  REQUIRE(eventually([&] { return runs_of(thread_id).size() >= 2; }, std::chrono::seconds(10)));
  CHECK(eventually([&] {
    const auto messages = contents(s.get_json("/threads/" + thread_id + "/state")["values"]);
    return messages.size() >= 4 && messages[0] == "tick" && messages[1] == "echo: tick";
  }));

  // Search and count, by assistant, thread, enabled and metadata.
  const json other = s.post_json("/runs/crons", {{"assistant_id", "helper"},
                                                 {"schedule", "0 9 * * *"},
                                                 {"timezone", "Europe/Paris"},
                                                 {"metadata", {{"team", "b"}}}});
  CHECK(other["thread_id"].is_null());
  CHECK(other["on_run_completed"] == "delete");
  CHECK(other["timezone"] == "Europe/Paris");
  CHECK(s.post_json("/runs/crons/count", json::object()) == 2);
  CHECK(s.post_json("/runs/crons/count", {{"assistant_id", "agent"}}) == 1);
  CHECK(s.post_json("/runs/crons/count", {{"thread_id", thread_id}}) == 1);
  CHECK(s.post_json("/runs/crons/count", {{"metadata", {{"team", "b"}}}}) == 1);
  json found =
      s.post_json("/runs/crons/search", {{"sort_by", "created_at"}, {"sort_order", "asc"}});
  REQUIRE(found.size() == 2);
  CHECK(found[0]["cron_id"] == cron_id);
  found = s.post_json("/runs/crons/search", {{"metadata", {{"team", "b"}}},
                                             {"select", {"cron_id", "now", "next_run_date"}}});
  REQUIRE(found.size() == 1);
  CHECK(found[0].size() == 3);
  CHECK(found[0]["cron_id"] == other["cron_id"]);
  CHECK(found[0]["now"].is_string());
  CHECK(s.post_json("/runs/crons/search", {{"limit", 1}}).size() == 1);

  // Disabled: no more runs, no next run date.
  json updated = json::parse(
      sg::test::http_request("PATCH", s.server.url() + "/runs/crons/" + cron_id,
                             json{{"enabled", false}, {"metadata", {{"more", 1}}}}.dump())
          .body);
  CHECK(updated["enabled"] == false);
  CHECK(updated["next_run_date"].is_null());
  CHECK(updated["metadata"] == json{{"team", "a"}, {"more", 1}});
  CHECK(s.post_json("/runs/crons/count", {{"enabled", false}}) == 1);
  // A run being made as it was disabled may still start; after that, none.
  std::this_thread::sleep_for(1100ms);
  const std::size_t runs = runs_of(thread_id).size();
  std::this_thread::sleep_for(2100ms);
  CHECK(runs_of(thread_id).size() == runs);

  // Deleted: gone from the search; a second delete is 404.
  CHECK(sg::test::http_request("DELETE", s.server.url() + "/runs/crons/" + cron_id).status == 204);
  CHECK(sg::test::http_request("DELETE", s.server.url() + "/runs/crons/" + cron_id).status == 404);
  CHECK(s.post_json("/runs/crons/count", json::object()) == 1);
}

TEST_CASE("crons: a stateless cron runs on a new thread each time, kept or deleted") {
  Served s;
  const json kept = s.post_json("/runs/crons", {{"assistant_id", "agent"},
                                                {"schedule", "* * * * * *"},
                                                {"input", human_input("stateless")},
                                                {"on_run_completed", "keep"}});
  const auto graph_threads = [&] {
    return s.post_json("/threads/search", {{"metadata", {{"graph_id", "agent"}}}, {"limit", 100}});
  };
  REQUIRE(eventually([&] { return graph_threads().size() >= 2; }, std::chrono::seconds(10)));
  std::set<std::string> ids;
  for (const auto& thread : graph_threads()) {
    ids.insert(thread["thread_id"].get<std::string>());
    if (thread["status"] == "idle") {
      CHECK(contents(thread["values"]) == std::vector<std::string>{"stateless", "echo: stateless"});
    }
  }
  CHECK(ids.size() >= 2);
  CHECK(sg::test::http_request("DELETE",
                               s.server.url() + "/runs/crons/" + kept["cron_id"].get<std::string>())
            .status == 204);

  // "delete" (the default): each thread goes when its run ends.
  const std::size_t before = graph_threads().size();
  (void)s.post_json(
      "/runs/crons",
      {{"assistant_id", "helper"}, {"schedule", "* * * * * *"}, {"input", human_input("gone")}});
  std::this_thread::sleep_for(2500ms);
  CHECK(graph_threads().size() == before);
  CHECK(s.post_json("/threads/search", {{"metadata", {{"graph_id", "helper"}}}}).size() <= 1);
}

TEST_CASE("crons: bad requests get 4xx and change nothing") {
  Served s;
  const std::string thread_id = s.new_thread();
  const auto status = [&](const std::string& path, const json& body) {
    const auto r = s.post(path, body);
    INFO(path << " " << body.dump() << " -> " << r.status << " " << r.body);
    CHECK(r.body.find("detail") != std::string::npos);
    return r.status;
  };
  const json ok = {{"assistant_id", "agent"}, {"schedule", "0 9 * * *"}};
  const auto with = [&](const char* key, const json& value) {
    json body = ok;
    body[key] = value;
    return body;
  };
  CHECK(status("/runs/crons", json{{"assistant_id", "agent"}}) == 422);  // no schedule
  CHECK(status("/runs/crons", json{{"schedule", "* * * * *"}}) == 422);  // no assistant
  CHECK(status("/runs/crons", with("assistant_id", "nope")) == 404);
  CHECK(status("/runs/crons", with("schedule", "every day")) == 422);
  CHECK(status("/runs/crons", with("schedule", 5)) == 422);
  CHECK(status("/runs/crons", with("timezone", "Mars/Olympus")) == 422);
  CHECK(status("/runs/crons", with("end_time", "soon")) == 422);
  CHECK(status("/runs/crons", with("enabled", "yes")) == 422);
  CHECK(status("/runs/crons", with("on_run_completed", "archive")) == 422);
  CHECK(status("/runs/crons", with("multitask_strategy", "later")) == 422);
  CHECK(status("/runs/crons", with("config", "x")) == 422);
  CHECK(status("/runs/crons", with("input", "not messages")) == 422);
  CHECK(status("/threads/00000000-0000-0000-0000-000000000001/runs/crons", ok) == 404);
  CHECK(status("/runs/crons/search", {{"sort_by", "schedule"}}) == 422);
  CHECK(status("/runs/crons/search", {{"enabled", "no"}}) == 422);
  CHECK(s.post("/runs/crons", std::string("{not json")).status == 422);
  CHECK(s.post_json("/runs/crons/count", json::object()) == 0);

  const json cron = s.post_json("/threads/" + thread_id + "/runs/crons", ok);
  const std::string path = s.server.url() + "/runs/crons/" + cron["cron_id"].get<std::string>();
  CHECK(sg::test::http_request("PATCH", path, json{{"schedule", "61 * * * *"}}.dump()).status ==
        422);
  CHECK(sg::test::http_request("PATCH", path, json{{"on_run_completed", "keep"}}.dump()).status ==
        422);  // a thread's cron
  CHECK(sg::test::http_request("PATCH", s.server.url() + "/runs/crons/nope", "{}").status == 404);
  CHECK(sg::test::http_request("GET", path).status == 405);
  const json after = s.post_json("/runs/crons/search", json::object());
  REQUIRE(after.size() == 1);
  CHECK(after[0]["schedule"] == "0 9 * * *");
  // An end time already past: the cron never comes due.
  const json ended = s.post_json("/runs/crons", with("end_time", "2020-01-01T00:00:00Z"));
  CHECK(ended["next_run_date"].is_null());
  CHECK(ended["end_time"] == "2020-01-01T00:00:00.000000+00:00");
  // Deleting the thread deletes its crons.
  CHECK(sg::test::http_request("DELETE", s.server.url() + "/threads/" + thread_id).status == 204);
  CHECK(s.post_json("/runs/crons/count", json::object()) == 1);
}
