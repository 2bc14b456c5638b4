// SPDX-License-Identifier: MIT
// `stategraph demo` run as a real process: a first run stops after 10 turns, a second continues
// the thread to turn 40, the facts of the first turns are answered in the last, and --fresh
// starts over; on a model server (OPENAI_BASE_URL), SIGINT stops it between turns.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdlib>
#include <sstream>

#include "support/loopback_openai.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace {

/// The JSON lines of a `demo --json` run.
std::vector<nlohmann::json> demo_turns(const std::vector<std::string>& args) {
  const auto result = sg::test::run_process(SG_CLI_PATH, args, "");
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  std::vector<nlohmann::json> lines;
  std::istringstream out(result.out);
  for (std::string line; std::getline(out, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

}  // namespace

TEST_CASE("stategraph demo: a second run continues the thread, facts survive summaries") {
  sg::test::TempDir dir;
  const std::string db = dir.sub("data");
  const auto first = demo_turns({"demo", "--db", db, "--turns", "10", "--json"});
  REQUIRE(first.size() == 10);
  CHECK(first.front()["turn"] == 1);
  CHECK(first.front()["ai"] == "Noted: my name is Ada.");
  const auto rest = demo_turns({"demo", "--db", db, "--json"});
  REQUIRE(rest.size() == 30);
  CHECK(rest.front()["turn"] == 11);
  CHECK(rest.back()["turn"] == 40);
  std::size_t most_kept = 0;
  for (const auto& t : rest) most_kept = std::max(most_kept, t["messages_kept"].get<std::size_t>());
  CHECK(most_kept < 40);  // summarized and cut along the way
  CHECK(rest.back()["summary_chars"].get<int>() > 0);
  CHECK(rest[26]["ai"] == "You told me: my name is Ada.");
  CHECK(rest[27]["ai"] == "You told me: I live in Lisbon.");
  CHECK(rest[28]["ai"] == "You told me: my dog is called Rex.");
  CHECK(rest[29]["ai"] == "You told me: I work as a ship engineer.");

  const auto done = sg::test::run_process(SG_CLI_PATH, {"demo", "--db", db}, "");
  CHECK(done.exit_code == 0);
  CHECK(done.out.find("all 40 turns are done") != std::string::npos);
  CHECK(done.out.find(" chars): Hi. My name is Ada.") != std::string::npos);
  CHECK(done.out.find("facts of turns 1-4: Ada (in the summary), Lisbon (in the summary), Rex (in "
                      "the summary), ship engineer (in the summary)") != std::string::npos);

  // Three turns: nothing summarized yet, the facts still in the messages, said so.
  const auto early =
      sg::test::run_process(SG_CLI_PATH, {"demo", "--db", dir.sub("early"), "--turns", "3"}, "");
  INFO(early.out);
  CHECK(
      early.out.find("summary: none yet (the thread's messages are under the 384-token budget)") !=
      std::string::npos);
  CHECK(early.out.find("facts of turns 1-4: Ada (in the kept messages), Lisbon (in the kept "
                       "messages), Rex (in the kept messages), ship engineer (not said yet)") !=
        std::string::npos);

  const auto fresh = demo_turns({"demo", "--db", db, "--fresh", "--turns", "1", "--json"});
  REQUIRE(fresh.size() == 1);
  CHECK(fresh[0]["turn"] == 1);
}

TEST_CASE("stategraph demo: bad flags are a usage error") {
  const auto result = sg::test::run_process(SG_CLI_PATH, {"demo", "--turns", "-3"}, "");
  CHECK(result.exit_code == 2);
  CHECK(result.err.find("stategraph: ") == 0);
}

TEST_CASE(
    "stategraph demo: on a real model server, Ctrl-C stops between turns and a rerun resumes") {
  // The loopback OpenAI server answers each call after 100 ms; SIGINT is sent once the first
  // reply is printed, so it lands mid-conversation however slowly the CLI starts.
  sg::testing::LoopbackOpenAI server({.delay = std::chrono::milliseconds(100)});
  ::setenv("OPENAI_BASE_URL", server.base_url().c_str(), 1);
  ::setenv("OPENAI_API_KEY", "test-key", 1);
  sg::test::TempDir dir;
  const std::string db = dir.sub("data");
  sg::test::BackgroundProcess demo(SG_CLI_PATH, {"demo", "--db", db});
  ::unsetenv("OPENAI_BASE_URL");
  ::unsetenv("OPENAI_API_KEY");
  const bool replied = demo.wait_for_output("ai:  echo: Hi! My name is Ada.");
  demo.signal(SIGINT);
  const int exit_code = demo.wait();
  const std::string out = demo.out();
  INFO(out << demo.err());
  CHECK(replied);
  CHECK(exit_code == 0);
  const auto at = out.find("stopped after turn ");
  REQUIRE(at != std::string::npos);
  const int last = std::stoi(out.substr(at + 19));
  CHECK(last >= 1);
  CHECK(last < 40);
  CHECK(out.find("ai:  echo: Hi! My name is Ada.") != std::string::npos);
  CHECK(server.requests().size() >= static_cast<std::size_t>(last));

  // Offline (LocalModel) from here: the thread continues after the last finished turn.
  const auto next = demo_turns({"demo", "--db", db, "--turns", "1", "--json"});
  REQUIRE(next.size() == 1);
  CHECK(next[0]["turn"] == last + 1);
}
