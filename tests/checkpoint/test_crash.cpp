// SPDX-License-Identifier: MIT
// Crash safety: a worker process runs a long graph on a RocksDB thread (and on a PostgreSQL
// one) and is killed with SIGKILL at seeded random moments, then resumed, at least 20 times.

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "crash_saver.hpp"
#ifdef SG_TEST_POSTGRES
#include "support/postgres_cluster.hpp"
#endif
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace {

// Far more steps than 24 sessions killed after 15-75 ms can commit (about 40 each on RocksDB,
// about 15 on PostgreSQL, where each step is a commit over a socket), so the thread never
// finishes before the kills are done, however fast the machine.
constexpr int kRocksSteps = 2000;
constexpr int kPostgresSteps = 800;

pid_t spawn(const std::vector<std::string>& args) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

/// The committed progress of the thread: x of its latest checkpoint (-1 if none).
int committed(const std::string& db) {
  auto saver = sg::test::open_crash_saver(db);
  auto t = saver->get_tuple({"crash", "", ""});
  if (!t) return -1;
  return t->checkpoint.channel_values.value("x", 0);
}

/// Kills workers on `db` at least 20 times, lets the last one finish, and compares with a run
/// on `clean_db` that nothing interrupted.
void check_crash_safety(const std::string& db, const std::string& clean_db,
                        const sg::test::TempDir& dir, const int steps) {
  const std::string effects = dir.sub("effects.log");
  std::mt19937 rng(20261122);
  std::map<int, int> committed_before;  // session -> committed x when it started
  int kills = 0;
  int session = 0;
  for (; kills < 24; ++session) {
    committed_before[session] = committed(db);
    if (committed_before[session] >= steps) break;
    const pid_t pid =
        spawn({SG_CRASH_WORKER, db, std::to_string(steps), effects, std::to_string(session)});
    REQUIRE(pid > 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(15 + rng() % 60));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) ++kills;
  }
  CHECK(kills >= 20);
  MESSAGE("committed progress per session: " << [&] {
    std::string o;
    for (auto& [k, v] : committed_before) o += std::to_string(v) + " ";
    return o;
  }());
  // Let the last session finish.
  committed_before[session] = committed(db);
  const auto last = sg::test::run_process(
      SG_CRASH_WORKER, {db, std::to_string(steps), effects, std::to_string(session)});
  REQUIRE(last.exit_code == 0);

  // The same run without crashes.
  const auto clean = sg::test::run_process(
      SG_CRASH_WORKER, {clean_db, std::to_string(steps), dir.sub("clean.log"), "0"});
  REQUIRE(clean.exit_code == 0);
  CHECK(last.out == clean.out);
  CHECK(nlohmann::json::parse(last.out)["x"] == steps);

  // No session ran a step that was committed before it started.
  std::ifstream in(effects);
  int s = 0;
  int step = 0;
  int lines = 0;
  while (in >> s >> step) {
    ++lines;
    CAPTURE(s);
    CAPTURE(step);
    CHECK(step >= committed_before[s]);
  }
  CHECK(lines >= steps);

  // Every checkpoint's record reads back; the values of each one a session resumed from (the
  // head when a worker was killed) and of every 50th read back whole. (Every state whole, each up
  // to `steps` messages long, took two minutes under ASan.)
  auto saver = sg::test::open_crash_saver(db);
  const auto all = saver->list({.thread_id = "crash", .include_values = false});
  CHECK(all.size() >= static_cast<std::size_t>(steps));
  std::set<int> resumed_at;
  for (const auto& [session_index, x] : committed_before) resumed_at.insert(x);
  int read_whole = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    // Steps -1 (the input) and 0 precede the first node: no x yet; then x counts the steps.
    const int at_step = all[i].metadata.value("step", -1);
    const int x = std::max(at_step, 0);
    if (i % 50 != 0 && !resumed_at.contains(x)) continue;
    const auto whole = saver->get_tuple(all[i].config);
    REQUIRE(whole);
    CAPTURE(x);
    CHECK(whole->checkpoint.id == all[i].checkpoint.id);
    CHECK(whole->checkpoint.channel_values.value("x", -1) == (at_step > 0 ? x : -1));
    // None in the input checkpoint (step -1: the input is still in __start__), then the input's,
    // then one per step.
    CHECK(whole->checkpoint.channel_values.value("messages", nlohmann::json::array()).size() ==
          static_cast<std::size_t>(at_step < 0 ? 0 : x + 1));
    ++read_whole;
  }
  CHECK(read_whole > static_cast<int>(all.size() / 50));
}

}  // namespace

TEST_CASE(
    "crash safety: SIGKILL at random moments, resume, same result, committed steps never re-run") {
  sg::test::TempDir dir;
  check_crash_safety(dir.sub("db"), dir.sub("clean"), dir, kRocksSteps);
}

#ifdef SG_TEST_POSTGRES
TEST_CASE("crash safety on PostgresSaver: SIGKILL at random moments, resume, same result") {
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  sg::test::TempDir dir;
  check_crash_safety("postgres:crash:" + cluster.conninfo(), "postgres:clean:" + cluster.conninfo(),
                     dir, kPostgresSteps);
}
#endif
