// SPDX-License-Identifier: MIT
// Writing memories in the background: MemoryWriter's debounce with real timers (a write runs once
// a thread is quiet, new messages supersede the pending write, the caller never waits), and the
// schedule_memory_write node in a checkpointed graph.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/core/state_graph.hpp>
#include <stategraph/nodes/memory_writer.hpp>
#include <stategraph/reducers/messages_state.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <future>

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

/// What a write saw, and when it started.
struct SeenWrite {
  std::string thread_id;
  std::vector<std::string> texts;
  std::size_t submissions = 0;
  nlohmann::json configurable;
  Clock::time_point at;
};

/// Records every write (thread-safe).
class WriteLog {
 public:
  sg::MemoryWriter::Write recorder(std::chrono::milliseconds busy = 0ms) {
    return [this, busy](const sg::MemoryWriteJob& job) {
      SeenWrite w{job.thread_id, {}, job.submissions, job.configurable, Clock::now()};
      for (const auto& m : job.messages) w.texts.push_back(m.text());
      if (busy > 0ms) std::this_thread::sleep_for(busy);
      std::lock_guard lock(mu_);
      writes_.push_back(std::move(w));
    };
  }
  std::vector<SeenWrite> writes() const {
    std::lock_guard lock(mu_);
    return writes_;
  }
  /// Waits (polling, up to 5 s) until `n` writes were recorded.
  bool wait_for(std::size_t n) const {
    const auto until = Clock::now() + 5s;
    while (Clock::now() < until) {
      if (writes().size() >= n) return true;
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }

 private:
  mutable std::mutex mu_;
  std::vector<SeenWrite> writes_;
};

std::vector<sg::Message> conversation(int turns) {
  std::vector<sg::Message> out;
  for (int i = 1; i <= turns; ++i) out.push_back(sg::human("message " + std::to_string(i)));
  return out;
}

std::chrono::milliseconds since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t);
}

}  // namespace

TEST_CASE("MemoryWriter runs one write after the thread goes quiet, with every message") {
  WriteLog log;
  sg::MemoryWriter writer(log.recorder(), {.delay = 400ms});
  Clock::time_point last_submit;  // just before the last submission
  for (int turn = 1; turn <= 3; ++turn) {
    last_submit = Clock::now();
    writer.submit("t1", conversation(turn), {{"user_id", "u1"}});
    CHECK(since(last_submit) < 50ms);  // submitting never waits for a write
    if (turn < 3) std::this_thread::sleep_for(30ms);
  }
  CHECK(writer.pending() == 1);
  CHECK(log.writes().empty());  // still inside the delay
  REQUIRE(log.wait_for(1));
  std::this_thread::sleep_for(100ms);  // a superseded write would have run by now
  const auto writes = log.writes();
  REQUIRE(writes.size() == 1);
  CHECK(writes[0].at - last_submit >= 400ms);  // the delay restarted at the last submission
  CHECK(writes[0].thread_id == "t1");
  CHECK(writes[0].texts == std::vector<std::string>{"message 1", "message 2", "message 3"});
  CHECK(writes[0].submissions == 3);
  CHECK(writes[0].configurable == nlohmann::json{{"user_id", "u1"}});
  const auto stats = writer.stats();
  CHECK(stats.submitted == 3);
  CHECK(stats.superseded == 2);
  CHECK(stats.written == 1);
  CHECK(stats.failed == 0);
  CHECK(writer.pending() == 0);
}

TEST_CASE("MemoryWriter debounces each thread on its own and never merges thread-less writes") {
  WriteLog log;
  sg::MemoryWriter writer(log.recorder(), {.delay = 200ms});
  writer.submit("a", conversation(1));
  writer.submit("b", conversation(1));
  writer.submit("a", conversation(2));
  writer.submit("", conversation(1));
  writer.submit("", conversation(2));
  CHECK(writer.pending() == 4);
  REQUIRE(log.wait_for(4));
  std::this_thread::sleep_for(50ms);
  const auto writes = log.writes();
  REQUIRE(writes.size() == 4);
  std::map<std::string, std::vector<std::size_t>> sizes;
  for (const auto& w : writes) sizes[w.thread_id].push_back(w.texts.size());
  CHECK(sizes["a"] == std::vector<std::size_t>{2});
  CHECK(sizes["b"] == std::vector<std::size_t>{1});
  CHECK(sizes[""].size() == 2);
  CHECK(writer.stats().superseded == 1);
}

TEST_CASE("MemoryWriter cancels a running write when new messages arrive and writes again") {
  std::promise<void> started;
  std::atomic<int> calls{0};
  std::atomic<bool> first_cancelled{false};
  std::vector<std::size_t> sizes;
  std::mutex mu;
  sg::MemoryWriter writer(
      [&](const sg::MemoryWriteJob& job) {
        if (calls++ == 0) {
          started.set_value();
          // A long write (a model call) that honours its token stops early.
          first_cancelled = job.cancellation.wait_for(5s);
        }
        std::lock_guard lock(mu);
        sizes.push_back(job.messages.size());
      },
      {.delay = 20ms});
  writer.submit("t", conversation(2));
  REQUIRE(started.get_future().wait_for(5s) == std::future_status::ready);
  const auto start = Clock::now();
  writer.submit("t", conversation(4));  // new messages while the write runs
  CHECK(since(start) < 50ms);
  writer.flush();
  CHECK(first_cancelled);
  CHECK(sizes == std::vector<std::size_t>{2, 4});
  const auto stats = writer.stats();
  CHECK(stats.interrupted == 1);
  CHECK(stats.written == 2);
}

TEST_CASE("MemoryWriter flush runs pending writes now, close drops or runs them") {
  WriteLog log;
  {
    sg::MemoryWriter writer(log.recorder(), {.delay = std::chrono::hours(1)});
    writer.submit("t1", conversation(1));
    writer.submit("t2", conversation(2));
    const auto start = Clock::now();
    writer.flush();
    CHECK(since(start) < 2s);
    CHECK(log.writes().size() == 2);

    writer.submit("t3", conversation(3));
    writer.close(false);  // dropped, never written
    CHECK(writer.stats().discarded == 1);
    CHECK(log.writes().size() == 2);
    CHECK_THROWS_WITH_AS(writer.submit("t4", conversation(1)), "MemoryWriter: submit after close",
                         sg::Error);
    writer.close();  // a second close does nothing
  }
  {
    sg::MemoryWriter writer(log.recorder(), {.delay = std::chrono::hours(1)});
    writer.submit("t5", conversation(5));
  }  // the destructor runs what is pending
  REQUIRE(log.writes().size() == 3);
  CHECK(log.writes().back().thread_id == "t5");

  CHECK_THROWS_AS(sg::MemoryWriter(sg::MemoryWriter::Write{}), sg::Error);
  CHECK_THROWS_AS(sg::MemoryWriter(log.recorder(), {.delay = -1ms}), sg::Error);
}

TEST_CASE("MemoryWriter survives a failing write and reports it") {
  std::mutex mu;
  std::vector<std::string> reported;  // "thread: error", from the writer's thread
  sg::MemoryWriterOptions options;
  options.delay = 10ms;
  options.on_error = [&](const sg::MemoryWriteJob& job, std::exception_ptr error) {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      std::lock_guard lock(mu);
      reported.push_back(job.thread_id + ": " + e.what());
    }
  };
  WriteLog log;
  auto record = log.recorder();
  sg::MemoryWriter writer(
      [&](const sg::MemoryWriteJob& job) {
        if (job.thread_id == "bad") throw std::runtime_error("model down");
        record(job);
      },
      options);
  writer.submit("bad", conversation(1));
  writer.submit("good", conversation(1));
  writer.flush();
  CHECK(reported == std::vector<std::string>{"bad: model down"});
  CHECK(log.writes().size() == 1);
  const auto stats = writer.stats();
  CHECK(stats.failed == 1);
  CHECK(stats.written == 1);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(writer.last_error()), "model down",
                       std::runtime_error);
}

TEST_CASE("schedule_memory_write hands the thread to the writer without delaying the reply") {
  WriteLog log;
  // A slow write (500 ms, a model call): the turns must not wait for it.
  auto writer =
      std::make_shared<sg::MemoryWriter>(log.recorder(500ms), sg::MemoryWriterOptions{.delay = 2s});
  sg::StateGraph<sg::MessagesState> g;
  g.add_node("reply", [](const sg::MessagesState& s) {
    return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(
        sg::ai("ok: " + s.messages.back().text()));
  });
  g.add_node("remember", sg::schedule_memory_write<sg::MessagesState>(writer));
  g.add_edge(sg::START, "reply");
  g.add_edge("reply", "remember");
  const auto app = g.compile({.checkpointer = std::make_shared<sg::InMemorySaver>()});
  sg::RunConfig config;
  config.thread_id = "chat-1";
  config.configurable = {{"user_id", "u7"}};
  const auto start = Clock::now();
  for (const char* text : {"I like tea.", "I live in Porto.", "I have a cat."}) {
    auto result = app.invoke(
        sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(sg::human(text)), config);
    CHECK(result.state.messages.back().text() == std::string("ok: ") + text);
  }
  CHECK(since(start) < 500ms);  // three turns took less than one write
  CHECK(log.writes().empty());
  writer->flush();
  const auto writes = log.writes();
  REQUIRE(writes.size() == 1);
  CHECK(writes[0].thread_id == "chat-1");
  CHECK(writes[0].configurable["user_id"] == "u7");
  CHECK(writes[0].texts == std::vector<std::string>{"I like tea.", "ok: I like tea.",
                                                    "I live in Porto.", "ok: I live in Porto.",
                                                    "I have a cat.", "ok: I have a cat."});
  CHECK(writes[0].submissions == 3);
  CHECK_THROWS_AS((void)sg::schedule_memory_write<sg::MessagesState>(nullptr), sg::Error);
}
