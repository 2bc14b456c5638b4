// SPDX-License-Identifier: MIT
// Fault injection on RocksDbSaver (issue 18, after RocksDB's own fault-injection tests): a
// FileSystem that fails the Nth write of the write-ahead log, or every write while the "disk is
// full". Each failure must surface as a CheckpointError, leave the thread at a state an error-free
// run also passes through, and let the conversation go on, in the same process once the disk
// works again and after reopening the database.
#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/stategraph.hpp>

#include <doctest/doctest.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "support/sanitizers.hpp"
#include "support/temp_dir.hpp"

namespace {

/// Fails appends to write-ahead logs (files "*.log"): the `fail_at`-th one from now on, or every
/// one while `full` is set (as ENOSPC). Counts them.
struct Faults {
  std::atomic<int> appends{0};
  std::atomic<int> fail_at{0};  // 0: none
  std::atomic<bool> full{false};
  std::atomic<int> failed{0};

  rocksdb::IOStatus next() {
    const int n = ++appends;
    if (full) {
      ++failed;
      return rocksdb::IOStatus::NoSpace("injected: no space left on device");
    }
    if (fail_at != 0 && n == fail_at) {
      ++failed;
      return rocksdb::IOStatus::IOError("injected: write error");
    }
    return rocksdb::IOStatus::OK();
  }
};

class FaultyLog final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  FaultyLog(std::unique_ptr<rocksdb::FSWritableFile> file, Faults& faults)
      : FSWritableFileOwnerWrapper(std::move(file)), faults_(faults) {}
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* dbg) override {
    auto status = faults_.next();
    return status.ok() ? FSWritableFileOwnerWrapper::Append(data, options, dbg) : status;
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           const rocksdb::DataVerificationInfo& info,
                           rocksdb::IODebugContext* dbg) override {
    auto status = faults_.next();
    return status.ok() ? FSWritableFileOwnerWrapper::Append(data, options, info, dbg) : status;
  }

 private:
  Faults& faults_;
};

class FaultyFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  explicit FaultyFileSystem(Faults& faults)
      : FileSystemWrapper(rocksdb::FileSystem::Default()), faults_(faults) {}
  [[nodiscard]] const char* Name() const override { return "FaultyFileSystem"; }
  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override {
    auto status = FileSystemWrapper::NewWritableFile(name, options, result, dbg);
    if (status.ok() && name.ends_with(".log")) {
      *result = std::make_unique<FaultyLog>(std::move(*result), faults_);
    }
    return status;
  }

 private:
  Faults& faults_;
};

/// A saver whose write-ahead log fails as `faults` says.
struct FaultyDb {
  explicit FaultyDb(const std::string& path)
      : fs(std::make_shared<FaultyFileSystem>(faults)), env(rocksdb::NewCompositeEnv(fs)) {
    saver = sg::RocksDbSaver::open(path, {.env = env.get()});
  }
  Faults faults;
  std::shared_ptr<rocksdb::FileSystem> fs;
  std::unique_ptr<rocksdb::Env> env;
  std::shared_ptr<sg::RocksDbSaver> saver;
};

/// START -> think -> answer -> END: two steps per turn, each a checkpoint.
sg::CompiledGraph<sg::MessagesState> chat(std::shared_ptr<sg::Checkpointer> saver) {
  sg::StateGraph<sg::MessagesState> g;
  g.add_node("think", [](const sg::MessagesState& s) {
    return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(
        sg::ai("thinking about " + s.messages.back().text()));
  });
  g.add_node("answer", [](const sg::MessagesState& s) {
    return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(
        sg::ai("answer " + std::to_string(s.messages.size())));
  });
  g.add_edge(sg::START, "think").add_edge("think", "answer").add_edge("answer", sg::END);
  return g.compile({.checkpointer = std::move(saver)});
}

std::vector<std::string> texts(const sg::MessagesState& s) {
  std::vector<std::string> out;
  for (const auto& m : s.messages) out.push_back(m.text());
  return out;
}

sg::Update<sg::MessagesState> ask(const std::string& text) {
  return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(sg::human(text));
}

sg::RunConfig on_thread(const std::string& id) {
  sg::RunConfig config;
  config.thread_id = id;
  return config;
}

constexpr int kTurns = 4;

/// The messages after each turn of an error-free run.
std::vector<std::vector<std::string>> reference_turns() {
  const auto app = chat(std::make_shared<sg::InMemorySaver>());
  std::vector<std::vector<std::string>> out;
  for (int turn = 0; turn < kTurns; ++turn) {
    out.push_back(texts(app.invoke(ask("q" + std::to_string(turn)), on_thread("t")).state));
  }
  return out;
}

/// Whether `messages` is a prefix of some turn's messages of the error-free run (a state the
/// run passes through).
bool reachable(const std::vector<std::string>& messages,
               const std::vector<std::vector<std::string>>& turns) {
  if (messages.empty()) return true;
  for (const auto& full : turns) {
    if (messages.size() <= full.size() &&
        std::equal(messages.begin(), messages.end(), full.begin()))
      return true;
  }
  return false;
}

/// Runs turn `turn` to its end on `app`, going on from where a failed attempt stopped: resumes
/// a checkpoint with nodes left to run, sends the question again when it was never saved.
void finish_turn(const sg::CompiledGraph<sg::MessagesState>& app, int turn) {
  const std::string question = "q" + std::to_string(turn);
  const auto state = app.get_state(on_thread("t"));
  const bool asked = state && !state->values.messages.empty() &&
                     std::find_if(state->values.messages.begin(), state->values.messages.end(),
                                  [&](const sg::Message& m) { return m.text() == question; }) !=
                         state->values.messages.end();
  if (!asked) {
    (void)app.invoke(ask(question), on_thread("t"));
  } else if (!state->next.empty()) {
    (void)app.resume(on_thread("t"));
  }
}

}  // namespace

TEST_CASE("RocksDbSaver: the Nth log write fails, the error surfaces, the thread stays whole") {
  const auto turns = reference_turns();
  // How many log writes an error-free conversation makes.
  int total = 0;
  {
    sg::test::TempDir dir;
    FaultyDb db(dir.sub("db"));
    const auto app = chat(db.saver);
    for (int turn = 0; turn < kTurns; ++turn)
      (void)app.invoke(ask("q" + std::to_string(turn)), on_thread("t"));
    total = db.faults.appends;
  }
  REQUIRE(total >= kTurns * 3);
  for (int n = 1; n <= total; ++n) {
    CAPTURE(n);
    sg::test::TempDir dir;
    const std::string path = dir.sub("db");
    {
      FaultyDb db(path);
      db.faults.fail_at = n;
      const auto app = chat(db.saver);
      int failed_turn = -1;
      for (int turn = 0; turn < kTurns; ++turn) {
        try {
          (void)app.invoke(ask("q" + std::to_string(turn)), on_thread("t"));
        } catch (const sg::CheckpointError& e) {
          CHECK(e.code() == sg::errc::kCheckpointIo);
          CHECK(std::string(e.what()).find("injected: write error") != std::string::npos);
          failed_turn = turn;
          // What is stored is a state an error-free run passes through.
          const auto state = app.get_state(on_thread("t"));
          CHECK(reachable(state ? texts(state->values) : std::vector<std::string>{}, turns));
          finish_turn(app, turn);  // the same process goes on
        }
      }
      CHECK(failed_turn >= 0);
      CHECK(db.faults.failed == 1);
      CHECK(texts(app.get_state(on_thread("t"))->values) == turns.back());
    }
    // Reopened without faults: everything that was answered is there.
    const auto app = chat(sg::RocksDbSaver::open(path));
    CHECK(texts(app.get_state(on_thread("t"))->values) == turns.back());
  }
}

// Under ThreadSanitizer this one is left out: once a write failed for lack of space, RocksDB's
// background threads (error recovery, flushes after reopening) read its options through std
// container code that resolves to this binary's instrumented copies, so TSan reports reads inside
// librocksdb without seeing its locks, in ever other functions. The Nth-write test above runs.
TEST_CASE(
    "RocksDbSaver: a full disk fails every write until space is back, then the thread goes on" *
    doctest::skip(sg::test::kThreadSanitizer)) {
  const auto turns = reference_turns();
  sg::test::TempDir dir;
  const std::string path = dir.sub("db");
  FaultyDb db(path);
  const auto app = chat(db.saver);
  (void)app.invoke(ask("q0"), on_thread("t"));
  db.faults.full = true;
  for (int attempt = 0; attempt < 3; ++attempt) {
    try {
      (void)app.invoke(ask("q1"), on_thread("t"));
      FAIL("a write on a full disk succeeded");
    } catch (const sg::CheckpointError& e) {
      CHECK(e.code() == sg::errc::kCheckpointIo);
      CHECK(std::string(e.what()).find("no space left") != std::string::npos);
    }
    CHECK(texts(app.get_state(on_thread("t"))->values) == turns[0]);  // nothing half-written
  }
  db.faults.full = false;
  finish_turn(app, 1);
  for (int turn = 2; turn < kTurns; ++turn)
    (void)app.invoke(ask("q" + std::to_string(turn)), on_thread("t"));
  CHECK(texts(app.get_state(on_thread("t"))->values) == turns.back());
  CHECK(app.get_state_history(on_thread("t")).size() == static_cast<std::size_t>(kTurns) * 4);
}
