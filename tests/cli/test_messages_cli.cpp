// SPDX-License-Identifier: MIT
// `stategraph messages ...` run as a real process, on the golden vectors and on bad input.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <regex>

#include "support/golden.hpp"
#include "support/process.hpp"

using nlohmann::json;

namespace {

sg::test::ProcessResult cli(const std::vector<std::string>& args, const std::string& input) {
  return sg::test::run_process(SG_CLI_PATH, args, input);
}

std::string join(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  std::string out;
  for (const auto& v : value) out += (out.empty() ? "" : ",") + v.get<std::string>();
  return out;
}

/// Normalizes a message list for comparison: generated ids become placeholders after checking
/// they are UUID v4; every message gets the same set of keys as the CLI prints.
json normalized(json messages) {
  static const std::regex uuid(
      "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  for (auto& m : messages) {
    if (m["id"].is_string() && std::regex_match(m["id"].get<std::string>(), uuid))
      m["id"] = "<uuid>";
    if (m["id"].is_string() && m["id"].get<std::string>().rfind("<generated:", 0) == 0)
      m["id"] = "<uuid>";
    if (m["type"] == "remove") m["content"] = "";
    if (m.contains("tool_calls")) {
      for (auto& call : m["tool_calls"]) call["type"] = "tool_call";
    }
  }
  return messages;
}

void check_ok(const sg::test::ProcessResult& r, const json& expected) {
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  REQUIRE_FALSE(r.out.empty());
  CHECK(normalized(json::parse(r.out)) == normalized(expected));
}

}  // namespace

TEST_CASE("messages add: every golden case") {
  for (const json& c : sg::test::load_golden_cases("add_messages", 34)) {
    CAPTURE(c["name"].get<std::string>());
    const auto r = cli({"messages", "add"}, c["input"].dump());
    if (c.contains("error")) {
      CHECK(r.exit_code == 1);
      CHECK(r.err == "stategraph: " + c["error"].get<std::string>() + "\n");
      CHECK(r.out.empty());
    } else {
      check_ok(r, c["expected"]);
    }
  }
}

TEST_CASE("messages trim: every golden case that records LangChain's result") {
  std::size_t ran = 0;
  for (const json& c : sg::test::load_golden_cases("trim_messages", 51)) {
    if (c.contains("js_defect")) continue;  // covered by the reducers suite with Python's result
    ++ran;
    CAPTURE(c["name"].get<std::string>());
    const json& o = c["options"];
    std::vector<std::string> args{"messages", "trim", "--max-tokens",
                                  std::to_string(o["maxTokens"].get<int>())};
    if (o.contains("strategy")) args.insert(args.end(), {"--strategy", o["strategy"]});
    if (o.contains("startOn")) args.insert(args.end(), {"--start-on", join(o["startOn"])});
    if (o.contains("endOn")) args.insert(args.end(), {"--end-on", join(o["endOn"])});
    if (o.value("includeSystem", false)) args.push_back("--include-system");
    if (o.value("allowPartial", false)) args.push_back("--allow-partial");
    args.insert(args.end(),
                {"--token-counter", o["token_counter"] == "words+3" ? "words" : "messages"});
    const auto r = cli(args, c["input"].dump());
    if (c.contains("error")) {
      CHECK(r.exit_code != 0);
    } else {
      check_ok(r, c["expected"]);
    }
  }
  CHECK(ran >= 48);  // 51 cases, 3 of them JavaScript defects
}

TEST_CASE("messages filter and merge: every golden case") {
  const std::vector<std::pair<const char*, const char*>> flags{
      {"includeTypes", "--include-types"}, {"excludeTypes", "--exclude-types"},
      {"includeNames", "--include-names"}, {"excludeNames", "--exclude-names"},
      {"includeIds", "--include-ids"},     {"excludeIds", "--exclude-ids"}};
  for (const json& c : sg::test::load_golden_cases("filter_messages", 7)) {
    CAPTURE(c["name"].get<std::string>());
    std::vector<std::string> args{"messages", "filter"};
    for (const auto& [key, flag] : flags) {
      if (c["options"].contains(key)) args.insert(args.end(), {flag, join(c["options"][key])});
    }
    check_ok(cli(args, c["input"].dump()), c["expected"]);
  }
  for (const json& c : sg::test::load_golden_cases("merge_message_runs", 7)) {
    CAPTURE(c["name"].get<std::string>());
    check_ok(cli({"messages", "merge"}, c["input"].dump()), c["expected"]);
  }
}

TEST_CASE("messages keep: every golden keep case") {
  std::size_t ran = 0;
  for (const json& c : sg::test::load_golden_cases("keep_slice", 16)) {
    const json& update = c["input"].value("update", json());
    if (!update.is_object() || update.value("type", "") != "keep") continue;
    ++ran;
    CAPTURE(c["name"].get<std::string>());
    std::vector<std::string> args{"messages", "keep"};
    auto bound = [](const json& v) { return v.is_null() ? std::string("0") : v.dump(); };
    if (update.contains("from")) args.push_back("--from=" + bound(update["from"]));
    if (update.contains("to")) args.push_back("--to=" + bound(update["to"]));
    const auto r = cli(args, c["input"]["existing"].dump());
    CHECK(r.exit_code == 0);
    CHECK(json::parse(r.out) == c["expected"]);
  }
  const auto r = cli({"messages", "keep", "--from", "-2"}, "[1, 2, 3]");
  CHECK(json::parse(r.out) == json::parse("[2, 3]"));
  CHECK(ran >= 12);  // the keep updates among the 16 cases
}

TEST_CASE("messages buffer-string") {
  const auto r = cli({"messages", "buffer-string", "--human-prefix", "User"},
                     R"([{"type": "human", "content": "hi"}, ["ai", "hello"]])");
  CHECK(r.exit_code == 0);
  CHECK(json::parse(r.out) == "User: hi\nAI: hello");
}

TEST_CASE("bad input: one line on stderr, a non-zero exit, no output") {
  struct Case {
    std::vector<std::string> args;
    std::string input;
    int code;
    std::string error;
  };
  const std::vector<Case> cases{
      {{"messages", "add"}, "", 1, "stategraph: expected JSON on stdin, got nothing\n"},
      {{"messages", "add"},
       "[1, 2]",
       1,
       "stategraph: expected {\"left\": messages, \"right\": messages} on stdin\n"},
      {{"messages", "add"},
       R"({"left": [], "right": [{"type": "robot", "content": "x"}]})",
       1,
       "stategraph: right: messages[0]: unsupported message type 'robot': use one of human (user), "
       "ai "
       "(assistant), system (developer), tool, remove\n"},
      {{"messages", "trim", "--max-tokens", "5"}, "{not json", 1, ""},
      {{"messages", "trim", "--max-tokens", "5", "--strategy", "first", "--start-on", "human"},
       "[]",
       1,
       "stategraph: start_on parameter is only valid with strategy='last'\n"},
      {{"messages", "trim", "--max-tokens", "5", "--token-counter", "bytes"},
       "[]",
       1,
       "stategraph: unknown token counter 'bytes': use approximate, messages or words\n"},
      {{"messages", "trim"}, "[]", 2, "stategraph: --max-tokens is required (see --help)\n"},
      {{"messages", "keep", "--from", "1"},
       R"({"a": 1})",
       1,
       "stategraph: expected a JSON list on stdin\n"},
      {{"messages", "filter", "--include-types", "human,robot"}, "[]", 1, ""},
      {{"messages", "merge"},
       R"([{"type": "tool", "content": "x"}])",
       1,
       "stategraph: messages[0]: a tool message needs a 'tool_call_id' string\n"},
      {{"messages", "nope"}, "[]", 2, ""},
      {{}, "", 2, ""},
  };
  for (const auto& c : cases) {
    CAPTURE(c.input);
    const auto r = cli(c.args, c.input);
    CHECK(r.exit_code == c.code);
    CHECK(r.out.empty());
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.rfind("stategraph: ", 0) == 0);
    if (!c.error.empty()) CHECK(r.err == c.error);
  }
}

TEST_CASE("messages add: ids generated by separate processes differ") {
  // Each process seeds its id generator from the OS; equal ids would make a resumed thread
  // replace old messages with new ones.
  const std::string input = R"({"left": [], "right": ["one", "two"]})";
  const auto first = cli({"messages", "add"}, input);
  const auto second = cli({"messages", "add"}, input);
  REQUIRE(first.exit_code == 0);
  REQUIRE(second.exit_code == 0);
  const json a = json::parse(first.out);
  const json b = json::parse(second.out);
  REQUIRE(a.size() == 2);
  REQUIRE(b.size() == 2);
  CHECK(a[0]["id"] != a[1]["id"]);
  CHECK(a[0]["id"] != b[0]["id"]);
  CHECK(a[1]["id"] != b[1]["id"]);
}
