// SPDX-License-Identifier: MIT
#include <stategraph/core/error.hpp>
#include <stategraph/reducers/message_utils.hpp>

#include <doctest/doctest.h>

#include "support/golden.hpp"

using nlohmann::json;

namespace {

std::vector<std::string> strings(const json& o, const char* key) {
  return o.contains(key) ? o[key].get<std::vector<std::string>>() : std::vector<std::string>{};
}

std::vector<sg::MessageType> types(const json& o, const char* key) {
  std::vector<sg::MessageType> out;
  for (const auto& name : strings(o, key)) out.push_back(sg::parse_message_type(name));
  return out;
}

}  // namespace

TEST_CASE("filter_messages matches every LangGraph.js golden case") {
  const json cases = sg::test::load_golden_cases("filter_messages", 7);
  for (const json& c : cases) {
    const std::string name = c["name"];
    CAPTURE(name);
    const json& o = c["options"];
    sg::FilterOptions options;
    options.include_names = strings(o, "includeNames");
    options.exclude_names = strings(o, "excludeNames");
    options.include_types = types(o, "includeTypes");
    options.exclude_types = types(o, "excludeTypes");
    options.include_ids = strings(o, "includeIds");
    options.exclude_ids = strings(o, "excludeIds");
    const auto result = sg::filter_messages(sg::messages_from_json(c["input"]), options);
    CHECK(sg::messages_to_json(result) ==
          sg::messages_to_json(sg::messages_from_json(c["expected"])));
  }
}

TEST_CASE("merge_message_runs matches every LangGraph.js golden case") {
  const json cases = sg::test::load_golden_cases("merge_message_runs", 7);
  for (const json& c : cases) {
    const std::string name = c["name"];
    CAPTURE(name);
    const auto result = sg::merge_message_runs(sg::messages_from_json(c["input"]));
    CHECK(sg::messages_to_json(result) ==
          sg::messages_to_json(sg::messages_from_json(c["expected"])));
  }
}

TEST_CASE("filter: excludes win, any include keeps") {
  std::vector<sg::Message> m{sg::human("a", "1"), sg::ai("b", "2"), sg::human("c", "3")};
  m[0].name = "alice";
  sg::FilterOptions o;
  o.include_names = {"alice"};
  o.include_ids = {"3"};
  o.exclude_ids = {"1"};
  const auto out = sg::filter_messages(m, o);
  REQUIRE(out.size() == 1);
  CHECK(out[0].id == "3");
  CHECK(sg::filter_messages(m, {}).size() == 3);
}

TEST_CASE("merge: separator, blocks, metadata") {
  sg::Message a = sg::ai("x", "1");
  a.additional_kwargs = {{"note", "ab"}};
  a.usage_metadata = {{"input_tokens", 1}, {"output_tokens", 2}, {"total_tokens", 3}};
  sg::Message b = sg::ai("y", "2");
  b.additional_kwargs = {{"note", "cd"}, {"other", 1}};
  b.usage_metadata = {{"input_tokens", 10}, {"output_tokens", 20}, {"total_tokens", 30}};
  const std::vector<sg::Message> run{a, b, sg::human("q", "3")};
  const auto merged = sg::merge_message_runs(run, " | ");
  REQUIRE(merged.size() == 2);
  CHECK(merged[0].content.str() == "x | y");
  CHECK(merged[0].id == "1");
  CHECK(merged[0].additional_kwargs == json{{"note", "abcd"}, {"other", 1}});
  CHECK(merged[0].usage_metadata ==
        json{{"input_tokens", 11}, {"output_tokens", 22}, {"total_tokens", 33}});

  const std::vector<sg::Message> blocks{
      sg::human(sg::Content::Blocks{json{{"type", "text"}, {"text", "one"}}}, "1"),
      sg::human("two", "2")};
  const auto joined = sg::merge_message_runs(blocks);
  REQUIRE(joined.size() == 1);
  CHECK(json(joined[0].content.blocks()) ==
        json::parse(R"([{"type": "text", "text": "one"}, {"type": "text", "text": "two"}])"));

  const std::vector<sg::Message> removes{sg::remove_message("a"), sg::remove_message("b")};
  CHECK(sg::merge_message_runs(removes).size() == 2);
}

TEST_CASE("get_buffer_string") {
  const std::vector<sg::Message> m{sg::system("be nice"), sg::human("hi"), sg::ai("hello"),
                                   sg::tool("42", "c1")};
  CHECK(sg::get_buffer_string(m) == "System: be nice\nHuman: hi\nAI: hello\nTool: 42");
  CHECK(sg::get_buffer_string(m, "User", "Bot") ==
        "System: be nice\nUser: hi\nBot: hello\nTool: 42");
  CHECK(sg::get_buffer_string({}) == "");
  const std::vector<sg::Message> bad{sg::remove_message("x")};
  CHECK_THROWS_AS((void)sg::get_buffer_string(bad), sg::Error);
}
