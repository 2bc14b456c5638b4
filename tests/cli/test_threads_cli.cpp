// SPDX-License-Identifier: MIT
// `stategraph threads ...` run as a real process on a RocksDB database a real graph wrote.
#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/stategraph.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

using nlohmann::json;

namespace {

struct Chat : sg::MessagesState {
  int turns = 0;
  std::string notes{};  // long: stored outside the checkpoint record
  static constexpr auto schema() {
    return std::tuple_cat(
        sg::MessagesState::schema(),
        std::tuple{sg::field<"turns">(&Chat::turns), sg::field<"notes">(&Chat::notes)});
  }
};

/// START -> reply -> count -> END: reply echoes the last message, count counts turns and notes
/// the last message after 300 dots.
sg::CompiledGraph<Chat> echo_graph(std::shared_ptr<sg::Checkpointer> saver) {
  sg::StateGraph<Chat> g;
  g.add_node("reply", [](const Chat& s) {
    sg::Update<Chat> u;
    u.set<&Chat::messages>(sg::ai("echo: " + s.messages.back().text()));
    return u;
  });
  g.add_node("count", [](const Chat& s) {
    sg::Update<Chat> u;
    u.set<&Chat::turns>(s.turns + 1);
    u.set<&Chat::notes>(std::string(300, '.') + s.messages[s.messages.size() - 2].text());
    return u;
  });
  g.add_edge(sg::START, "reply").add_edge("reply", "count");
  return g.compile({.checkpointer = std::move(saver)});
}

sg::Update<Chat> say(const std::string& text) {
  sg::Update<Chat> u;
  u.set<&Chat::messages>(sg::human(text));
  return u;
}

sg::RunConfig thread(const std::string& id) {
  sg::RunConfig config;
  config.thread_id = id;
  return config;
}

sg::test::ProcessResult cli(std::vector<std::string> args) {
  return sg::test::run_process(SG_CLI_PATH, std::move(args), "");
}

json cli_json(std::vector<std::string> args) {
  args.push_back("--json");
  const auto r = cli(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  return json::parse(r.out);
}

/// Runs two turns on thread t1 and one on t2, then closes the database.
void write_threads(const std::string& db) {
  auto saver = sg::RocksDbSaver::open(db);
  const auto app = echo_graph(saver);
  app.invoke(say("hello"), thread("t1"));
  app.invoke(say("again"), thread("t1"));
  app.invoke(say("other"), thread("t2"));
}

}  // namespace

TEST_CASE("threads list, show and history read what a graph wrote") {
  sg::test::TempDir dir;
  const std::string db = dir.sub("db");
  write_threads(db);

  const json threads = cli_json({"threads", "list", "--db", db});
  REQUIRE(threads.size() == 2);
  CHECK(threads[0]["thread_id"] == "t1");
  CHECK(threads[1]["thread_id"] == "t2");
  // Each turn: input, loop (START), loop (reply), loop (count).
  CHECK(threads[0]["checkpoints"] == 8);
  CHECK(threads[1]["checkpoints"] == 4);
  CHECK(threads[0]["latest"]["metadata"]["source"] == "loop");

  const auto readable = cli({"threads", "list", "--db", db});
  CHECK(readable.exit_code == 0);
  CHECK(readable.out.find("t1  8 checkpoints") != std::string::npos);
  CHECK(readable.out.find("t2  4 checkpoints") != std::string::npos);

  const json latest = cli_json({"threads", "show", "--db", db, "--thread", "t1"});
  CHECK(latest["values"]["turns"] == 2);
  REQUIRE(latest["values"]["messages"].size() == 4);
  CHECK(latest["values"]["messages"][3]["content"] == "echo: again");
  CHECK(latest["next"] == json::array());
  CHECK(latest["metadata"]["step"] == 6);

  const json history = cli_json({"threads", "history", "--db", db, "--thread", "t1"});
  REQUIRE(history.size() == 8);
  CHECK(history[0]["config"] == latest["config"]);
  std::vector<std::string> steps;
  for (const auto& c : history) steps.push_back(c["metadata"]["step"].dump());
  CHECK(steps == std::vector<std::string>{"6", "5", "4", "3", "2", "1", "0", "-1"});
  // The checkpoint after "reply" in the second turn has count next.
  CHECK(history[1]["next"] == json::array({"count"}));
  CHECK(cli_json({"threads", "history", "--db", db, "--thread", "t1", "--limit", "3"}).size() == 3);

  const std::string first_turn_end = history[4]["config"]["checkpoint_id"];
  const json old =
      cli_json({"threads", "show", "--db", db, "--thread", "t1", "--checkpoint", first_turn_end});
  CHECK(old["values"]["turns"] == 1);
  CHECK(old["values"]["messages"].size() == 2);

  const auto text = cli({"threads", "show", "--db", db, "--thread", "t1"});
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("messages (4 messages)") != std::string::npos);
  CHECK(text.out.find("echo: again") != std::string::npos);
  CHECK(text.out.find("turns: 2") != std::string::npos);
  const auto lines = cli({"threads", "history", "--db", db, "--thread", "t2"});
  CHECK(std::count(lines.out.begin(), lines.out.end(), '\n') == 4);
}

TEST_CASE("threads fork: the next run continues from the forked checkpoint") {
  sg::test::TempDir dir;
  const std::string db = dir.sub("db");
  write_threads(db);
  const json history = cli_json({"threads", "history", "--db", db, "--thread", "t1"});
  const std::string first_turn_end = history[4]["config"]["checkpoint_id"];

  const json forked =
      cli_json({"threads", "fork", "--db", db, "--thread", "t1", "--checkpoint", first_turn_end});
  CHECK(forked["parent_config"]["checkpoint_id"] == first_turn_end);
  const json copy = cli_json({"threads", "fork", "--db", db, "--thread", "t1", "--checkpoint",
                              first_turn_end, "--to", "t1-copy"});
  CHECK(copy["config"]["thread_id"] == "t1-copy");

  const json now = cli_json({"threads", "show", "--db", db, "--thread", "t1"});
  CHECK(now["config"] == forked["config"]);
  CHECK(now["metadata"]["source"] == "fork");
  CHECK(now["values"]["turns"] == 1);
  CHECK(now["values"]["messages"].size() == 2);

  auto saver = sg::RocksDbSaver::open(db);
  const auto app = echo_graph(saver);
  const auto run = app.invoke(say("branch"), thread("t1"));
  CHECK(run.state.turns == 2);
  REQUIRE(run.state.messages.size() == 4);
  CHECK(run.state.messages[1].text() == "echo: hello");
  CHECK(run.state.messages[3].text() == "echo: branch");
  const auto copied = app.invoke(say("copy"), thread("t1-copy"));
  CHECK(copied.state.turns == 2);
  CHECK(copied.state.messages[2].text() == "copy");
  // The other branch is intact: the original second turn still reads back.
  const auto original = saver->get_tuple({"t1", "", history[0]["config"]["checkpoint_id"]});
  REQUIRE(original);
  CHECK(original->checkpoint.channel_values["messages"][3]["content"] == "echo: again");
  CHECK(original->checkpoint.channel_values["notes"] == std::string(300, '.') + "again");
  CHECK(saver->get_tuple({"t1", "", ""})->checkpoint.channel_values["notes"] ==
        std::string(300, '.') + "branch");
}

TEST_CASE("threads fork of an emptied message list: a run continues it with new messages") {
  sg::test::TempDir dir;
  const std::string db = dir.sub("db");
  std::string emptied;
  {
    auto saver = sg::RocksDbSaver::open(db);
    const auto app = echo_graph(saver);
    (void)app.invoke(say("hello"), thread("t1"));
    sg::Update<Chat> clear;
    clear.set<&Chat::messages>(sg::remove_message(std::string(sg::kRemoveAllMessages)));
    emptied = app.update_state(thread("t1"), std::move(clear)).checkpoint_id;
    CHECK(app.get_state(thread("t1"))->values.messages.empty());
  }
  const json forked = cli_json(
      {"threads", "fork", "--db", db, "--thread", "t1", "--checkpoint", emptied, "--to", "t2"});
  CHECK(forked["config"]["thread_id"] == "t2");
  auto saver = sg::RocksDbSaver::open(db);
  const auto app = echo_graph(saver);
  const auto run = app.invoke(say("again"), thread("t2"));
  REQUIRE(run.state.messages.size() == 2);
  CHECK(run.state.messages[0].text() == "again");
  CHECK(run.state.messages[1].text() == "echo: again");
  CHECK(run.state.turns == 2);
  const auto stored = saver->get_tuple({"t2", "", ""});
  REQUIRE(stored);
  CHECK(stored->checkpoint.channel_values["messages"].size() == 2);
}

TEST_CASE("threads delete removes one thread") {
  sg::test::TempDir dir;
  const std::string db = dir.sub("db");
  write_threads(db);
  const auto r = cli({"threads", "delete", "--db", db, "--thread", "t2"});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "deleted thread t2\n");
  const json threads = cli_json({"threads", "list", "--db", db});
  REQUIRE(threads.size() == 1);
  CHECK(threads[0]["thread_id"] == "t1");
  CHECK(cli_json({"threads", "show", "--db", db, "--thread", "t1"})["values"]["turns"] == 2);
}

TEST_CASE("threads: clear errors, nothing changed") {
  sg::test::TempDir dir;
  const std::string db = dir.sub("db");
  write_threads(db);
  auto fails = [](std::vector<std::string> args, const std::string& message, int code = 1) {
    const auto r = cli(std::move(args));
    CHECK(r.exit_code == code);
    CHECK(r.out.empty());
    CHECK_MESSAGE(r.err.find(message) != std::string::npos, r.err);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  };
  for (const char* op : {"show", "history", "delete"}) {
    CAPTURE(op);
    fails({"threads", op, "--db", db, "--thread", "nope"},
          "stategraph: thread 'nope' does not exist");
  }
  fails({"threads", "fork", "--db", db, "--thread", "nope", "--checkpoint", "x"},
        "thread 'nope' does not exist");
  fails({"threads", "show", "--db", db, "--thread", "t1", "--checkpoint", "1f0-missing"},
        "thread 't1' has no checkpoint '1f0-missing'");
  fails({"threads", "fork", "--db", db, "--thread", "t1", "--checkpoint", "1f0-missing"},
        "thread 't1' has no checkpoint '1f0-missing'");
  const std::string latest =
      cli_json({"threads", "show", "--db", db, "--thread", "t1"})["config"]["checkpoint_id"];
  fails({"threads", "fork", "--db", db, "--thread", "t1", "--checkpoint", latest, "--to", "t2"},
        "thread 't2' already exists");
  fails({"threads", "list", "--db", dir.sub("missing")}, "no checkpoint database at");
  fails({"threads", "show", "--db", db}, "--thread is required", 2);
  fails({"threads", "list"}, "--db is required", 2);
  CHECK_FALSE(std::filesystem::exists(dir.sub("missing")));

  {
    // Another process holds the database: a clear error, and the holder is unaffected.
    auto holder = sg::RocksDbSaver::open(db);
    fails({"threads", "list", "--db", db}, "is in use by another process");
    fails({"threads", "delete", "--db", db, "--thread", "t1"}, "is in use by another process");
    CHECK(holder->threads() == std::vector<std::string>{"t1", "t2"});
  }
  const json threads = cli_json({"threads", "list", "--db", db});
  CHECK(threads.size() == 2);
  CHECK(threads[0]["checkpoints"] == 8);
}

TEST_CASE("threads show: a tool call and the tool's answer read without the source") {
  sg::test::TempDir dir;
  const std::string db = dir.sub("db");
  {
    auto app = echo_graph(sg::RocksDbSaver::open(db));
    sg::Message call = sg::ai("", "call-msg");
    call.tool_calls.push_back({"call_1", "multiply", {{"a", 6}, {"b", 7}}});
    sg::Update<Chat> input;
    input.set<&Chat::messages>(
        std::vector<sg::Message>{sg::human("6 times 7?"), call, sg::tool("42", "call_1")});
    app.invoke(std::move(input), thread("tools"));
  }
  const auto shown = cli({"threads", "show", "--db", db, "--thread", "tools"});
  INFO(shown.out);
  CHECK(shown.exit_code == 0);
  CHECK(shown.out.find(R"(call-msg     [calls multiply({"a":6,"b":7})])") != std::string::npos);
  CHECK(shown.out.find("42 [answers call_1]") != std::string::npos);
}
