// SPDX-License-Identifier: MIT
// Runs (or resumes) a long graph on a RocksDB thread (or a PostgreSQL one); the crash test kills
// it at random moments.
//   sg_crash_worker <db> <steps> <effects file> <session>
// <db> is a RocksDB directory, or "postgres:<table>:<libpq conninfo>" (when built with
// SG_TEST_POSTGRES). Each node execution appends "<session> <step index>\n" to the effects file
// before returning.
#include <stategraph/stategraph.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>

#include "crash_saver.hpp"

struct Counter : sg::MessagesState {
  int x = 0;
  static constexpr auto schema() {
    return std::tuple_cat(sg::MessagesState::schema(), std::tuple{sg::field<"x">(&Counter::x)});
  }
};

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: sg_crash_worker <db> <steps> <effects> <session>\n");
    return 2;
  }
  const std::string db = argv[1];
  const int steps = std::stoi(argv[2]);
  const std::string effects = argv[3];
  const std::string session = argv[4];
  const int fd = ::open(effects.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return 3;

  sg::StateGraph<Counter> g;
  g.add_node("step", [&](const Counter& s) {
    thread_local std::mt19937 rng(std::random_device{}());
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 1500));
    const std::string line = session + " " + std::to_string(s.x) + "\n";
    if (::write(fd, line.data(), line.size()) < 0) throw std::runtime_error("cannot write effects");
    return sg::Update<Counter>{}.set<&Counter::x>(s.x + 1).set<&Counter::messages>(
        sg::ai("message " + std::to_string(s.x), "m" + std::to_string(s.x)));
  });
  g.add_edge(sg::START, "step");
  g.add_conditional_edges("step",
                          [steps](const Counter& s) { return s.x >= steps ? sg::END : "step"; },
                          {"step", sg::END});
  const auto app = g.compile({.checkpointer = sg::test::open_crash_saver(db)});
  sg::RunConfig config;
  config.thread_id = "crash";
  config.recursion_limit = 1000000;
  const auto state = app.get_state(config);
  sg::RunResult<Counter> result;
  if (!state) {
    result =
        app.invoke(sg::Update<Counter>{}.set<&Counter::messages>(sg::human("start", "h")), config);
  } else if (!state->next.empty()) {
    result = app.resume(config);
  } else {
    result.state = state->values;
  }
  std::printf("%s\n", sg::state_to_json(result.state).dump().c_str());
  ::close(fd);
  return 0;
}
