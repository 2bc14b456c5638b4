// SPDX-License-Identifier: MIT
// `stategraph chat` as a real process on LocalModel: from a pipe (one message per line), and on a
// real terminal (tmux: send-keys and capture-pane) with line editing, history recalled with the
// Up key and kept in a file, colour that NO_COLOR turns off, and a second run that resumes the
// thread.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <thread>

#include "support/loopback_openai.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace {

sg::test::ProcessResult chat(const std::string& db, const std::string& input) {
  return sg::test::run_process(SG_CLI_PATH, {"chat", "--db", db, "--thread", "t"}, input);
}

/// The checkpoint ids that /history printed, newest first.
std::vector<std::string> history_ids(const std::string& out) {
  static const std::regex line(R"(\n  ([0-9a-f-]{36})  step)");
  std::vector<std::string> ids;
  for (std::sregex_iterator it(out.begin(), out.end(), line), end; it != end; ++it) {
    ids.push_back((*it)[1]);
  }
  return ids;
}

/// A tmux server of the test's own (its socket in a temp dir), killed at the end.
class Tmux {
 public:
  explicit Tmux(std::string socket) : socket_(std::move(socket)) {}
  Tmux(const Tmux&) = delete;
  Tmux& operator=(const Tmux&) = delete;
  ~Tmux() { run({"kill-server"}); }

  sg::test::ProcessResult run(std::vector<std::string> args) const {
    args.insert(args.begin(), {"-S", socket_});
    return sg::test::run_process(kTmux, args);
  }
  /// Types `keys` (tmux key names, e.g. "Enter", "Up", or literal text).
  void keys(const std::vector<std::string>& keys) const {
    std::vector<std::string> args{"send-keys", "-t", "chat"};
    args.insert(args.end(), keys.begin(), keys.end());
    REQUIRE(run(args).exit_code == 0);
  }
  /// The pane's text (with escape sequences when `escapes`).
  [[nodiscard]] std::string screen(bool escapes = false) const {
    std::vector<std::string> args{"capture-pane", "-p", "-t", "chat"};
    if (escapes) args.push_back("-e");
    return run(args).out;
  }
  /// Waits up to 20 s for `text` on the screen; returns the screen. (A deadline, not a count
  /// of looks: on a loaded machine each capture-pane may take a while.)
  [[nodiscard]] std::string wait_for(const std::string& text) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    std::string shown;
    do {
      shown = screen();
      if (shown.find(text) != std::string::npos) return shown;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } while (std::chrono::steady_clock::now() < deadline);
    FAIL_CHECK("not on the screen after 20 s: " << text << "\n--- screen ---\n" << shown);
    return shown;
  }

  static constexpr const char* kTmux = "/usr/bin/tmux";

 private:
  std::string socket_;
};

}  // namespace

TEST_CASE("stategraph chat from a pipe: replies, commands, a second run resumes, /fork") {
  unsetenv("OPENAI_BASE_URL");  // LocalModel
  sg::test::TempDir dir;
  const std::string db = dir.sub("data");

  const auto first = chat(db, "Hi! My name is Ada.\n/summary\n/nope\n/quit\n");
  INFO(first.out, first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(first.out.find("stategraph chat: thread 't' in " + db + " (new)") != std::string::npos);
  CHECK(first.out.find("ai> Noted: my name is Ada.\n") != std::string::npos);
  CHECK(first.out.find("[turn 1 | kept 2 msgs | ") != std::string::npos);
  CHECK(first.out.find("(no summary yet") != std::string::npos);
  CHECK(first.out.find("unknown command /nope; /help lists the commands") != std::string::npos);
  CHECK(first.out.find("\033[") == std::string::npos);  // no colour into a pipe

  const auto second = chat(db, "Actually, my name is Bob.\n/state\n/history\n");
  INFO(second.out);
  REQUIRE(second.exit_code == 0);  // the end of the input quits like /quit
  CHECK(second.out.find("(continuing: 1 turns, 2 messages kept") != std::string::npos);
  CHECK(second.out.find("  ai: Noted: my name is Ada.") != std::string::npos);
  CHECK(second.out.find("ai> Noted: actually, my name is Bob.") != std::string::npos);
  CHECK(second.out.find("  [0] human: Hi! My name is Ada.\n") != std::string::npos);
  CHECK(second.out.find("  [3] ai: Noted: actually, my name is Bob.\n") != std::string::npos);
  const auto ids = history_ids(second.out);
  REQUIRE(ids.size() == 6);  // two turns: input, START, chat
  CHECK(second.out.find("6 checkpoints, newest first") != std::string::npos);

  // ids[3] ended the first turn: a fork from it has never heard of Bob.
  const auto forked =
      chat(db, "/fork " + ids[3].substr(0, 18) + "\n/state\nWhat is my name?\n/history\n");
  INFO(forked.out);
  REQUIRE(forked.exit_code == 0);
  CHECK(forked.out.find("forked from checkpoint " + ids[3] + " (step ") != std::string::npos);
  CHECK(forked.out.find("the fork point\nturns 1, summary 0 chars, 2 messages:") !=
        std::string::npos);
  CHECK(forked.out.find("ai> You told me: my name is Ada.") != std::string::npos);
  const auto after = history_ids(forked.out);
  CHECK(after.size() == 9);  // the fork's turn added three; the Bob branch stays
  CHECK(std::find(after.begin(), after.end(), ids[0]) != after.end());

  // The fork is the thread's head now.
  const auto head = chat(db, "/state\n");
  CHECK(head.out.find("[3] ai: You told me: my name is Ada.") != std::string::npos);
  CHECK(head.out.find("Bob") == std::string::npos);

  const auto bad = chat(db, "/fork 0000\n/fork\n");
  CHECK(bad.exit_code == 0);
  CHECK(bad.out.find("error: no checkpoint '0000' in thread 't' (/history lists them)") !=
        std::string::npos);
  CHECK(bad.out.find("error: /fork needs a checkpoint id") != std::string::npos);
}

TEST_CASE("stategraph chat on a terminal (tmux): editing, history, colour, resume") {
  if (!std::filesystem::exists(Tmux::kTmux)) {
    FAIL("tmux is missing: scripts/install-deps installs it");
  }
  unsetenv("OPENAI_BASE_URL");
  sg::test::TempDir dir;
  const std::string db = dir.sub("data");
  const std::string state_home = dir.sub("state");
  Tmux tmux(dir.sub("tmux.sock"));
  // The pane keeps the exit code on screen once the chat ends.
  const auto start = [&](const std::string& env) {
    const std::string command = "env " + env + " XDG_STATE_HOME=" + state_home + " " + SG_CLI_PATH +
                                " chat --db " + db + " --thread tty; echo chat exited $?; sleep 60";
    REQUIRE(
        tmux.run({"new-session", "-d", "-s", "chat", "-x", "120", "-y", "40", command}).exit_code ==
        0);
  };

  start("NO_COLOR=");
  (void)tmux.wait_for("\nyou>");  // capture-pane drops trailing spaces
  // Typed with a mistake, fixed with the line editor (Backspace), then sent.
  tmux.keys({"-l", "My name is Adx"});
  tmux.keys({"BSpace"});
  tmux.keys({"-l", "a."});
  tmux.keys({"Enter"});
  (void)tmux.wait_for("ai> Noted: my name is Ada.");
  (void)tmux.wait_for("chars]\nyou>");  // the next prompt: keys typed before it would echo raw
  CHECK(tmux.screen(true).find("\033[") != std::string::npos);  // colour on a terminal
  // Up recalls the last line; Ctrl-U clears it again.
  tmux.keys({"Up"});
  (void)tmux.wait_for("you> My name is Ada.\n");
  tmux.keys({"C-u"});
  tmux.keys({"-l", "/summary"});
  tmux.keys({"Enter"});
  (void)tmux.wait_for("(no summary yet");
  tmux.keys({"C-d"});
  (void)tmux.wait_for("chat exited 0");
  tmux.run({"kill-session", "-t", "chat"});
  std::ifstream history(state_home + "/stategraph/chat_history");
  const std::string kept{std::istreambuf_iterator<char>(history), {}};
  // libedit's history format: a header, then the lines with spaces as \040 (vis(3)).
  CHECK(kept == "_HiStOrY_V2_\nMy\\040name\\040is\\040Ada.\n/summary\n");

  // A second session: NO_COLOR turns colour off, the thread and the typed history come back.
  start("NO_COLOR=1");
  const auto greeting = tmux.wait_for("\nyou>");  // capture-pane drops trailing spaces
  CHECK(greeting.find("(continuing: 1 turns, 2 messages kept") != std::string::npos);
  tmux.keys({"Up", "Up"});
  (void)tmux.wait_for("you> My name is Ada.");
  tmux.keys({"C-u"});
  tmux.keys({"-l", "What is my name?"});
  tmux.keys({"Enter"});
  (void)tmux.wait_for("ai> You told me: my name is Ada.");
  CHECK(tmux.screen(true).find("\033[1") == std::string::npos);
  tmux.keys({"-l", "/quit"});
  tmux.keys({"Enter"});
  (void)tmux.wait_for("chat exited 0");
}

TEST_CASE("stategraph chat on a model server: Ctrl-C stops a reply, the chat goes on") {
  // The loopback OpenAI server waits 15 s before answering: Ctrl-C lands while the reply is due,
  // even on a loaded machine (with 3 s, a full sanitizer run once saw the reply finish first).
  sg::testing::LoopbackOpenAI server({.delay = std::chrono::milliseconds(15000)});
  sg::test::TempDir dir;
  const std::string db = dir.sub("data");
  Tmux tmux(dir.sub("tmux.sock"));
  const std::string command =
      "env NO_COLOR=1 OPENAI_API_KEY=test-key OPENAI_BASE_URL=" + server.base_url() + " " +
      SG_CLI_PATH + " chat --db " + db + " --thread slow; echo chat exited $?; sleep 60";
  REQUIRE(
      tmux.run({"new-session", "-d", "-s", "chat", "-x", "120", "-y", "40", command}).exit_code ==
      0);
  (void)tmux.wait_for("\nyou>");
  tmux.keys({"-l", "Hello?"});
  tmux.keys({"Enter"});
  (void)tmux.wait_for("ai>");
  // The chat prints "ai>" before it sends the request: Ctrl-C waits until the server has it.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (server.request_count() == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(server.request_count() == 1);
  const auto sent = std::chrono::steady_clock::now();
  tmux.keys({"C-c"});
  (void)tmux.wait_for("[stopped; the thread keeps your message]");
  CHECK(std::chrono::steady_clock::now() - sent < std::chrono::milliseconds(2500));
  (void)tmux.wait_for("]\nyou>");  // still chatting
  tmux.keys({"-l", "/quit"});
  tmux.keys({"Enter"});
  (void)tmux.wait_for("chat exited 0");
  CHECK(server.requests().size() == 1);
  CHECK(server.stats().aborted == 1);  // Ctrl-C closed the model connection

  // The stopped turn's message stays in the thread (LocalModel from here).
  unsetenv("OPENAI_BASE_URL");
  const auto state =
      sg::test::run_process(SG_CLI_PATH, {"chat", "--db", db, "--thread", "slow"}, "/state\n");
  INFO(state.out);
  CHECK(state.out.find("  [0] human: Hello?\n") != std::string::npos);
}
