// SPDX-License-Identifier: MIT
#include <stategraph/core/error.hpp>
#include <stategraph/core/message.hpp>
#include <stategraph/core/uuid.hpp>

#include <doctest/doctest.h>

#include <regex>
#include <set>

using nlohmann::json;

namespace {

std::string error_of(const json& input) {
  try {
    (void)sg::message_from_json(input);
  } catch (const sg::Error& e) {
    CHECK(e.code() == "message.invalid");
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST_CASE("constructors set the LangChain fields") {
  const auto h = sg::human("hi", "1");
  CHECK(h.type == sg::MessageType::human);
  CHECK(h.content.str() == "hi");
  CHECK(h.id == "1");

  const auto a = sg::ai("", {sg::ToolCall{"call_1", "get_weather", {{"city", "paris"}}}}, "2");
  CHECK(a.type == sg::MessageType::ai);
  REQUIRE(a.tool_calls.size() == 1);
  CHECK(a.tool_calls[0].args["city"] == "paris");

  const auto t = sg::tool("sunny", "call_1");
  CHECK(t.type == sg::MessageType::tool);
  CHECK(t.tool_call_id == "call_1");
  CHECK(t.id.empty());

  CHECK(sg::system("be brief").type == sg::MessageType::system);
  const auto r = sg::remove_message("7");
  CHECK(r.type == sg::MessageType::remove);
  CHECK_FALSE(r.is_remove_all());
  CHECK(sg::remove_message(std::string(sg::kRemoveAllMessages)).is_remove_all());
}

TEST_CASE("flat JSON shape") {
  CHECK(sg::message_to_json(sg::human("hi", "1")) ==
        json{{"type", "human"}, {"content", "hi"}, {"id", "1"}});
  CHECK(sg::message_to_json(sg::ai("x")) ==
        json{{"type", "ai"}, {"content", "x"}, {"id", nullptr}});
  CHECK(sg::message_to_json(sg::remove_message("9")) ==
        json{{"type", "remove"}, {"content", ""}, {"id", "9"}});

  const json tool_json = sg::message_to_json(sg::tool("r", "c1", "t1"));
  CHECK(tool_json["tool_call_id"] == "c1");

  const json ai_json = sg::message_to_json(sg::ai("", {sg::ToolCall{"c1", "f", {{"a", 1}}}}, "a1"));
  CHECK(ai_json["tool_calls"] ==
        json::parse(R"([{"name":"f","args":{"a":1},"id":"c1","type":"tool_call"}])"));
}

TEST_CASE("JSON round trip keeps every field") {
  sg::Message m =
      sg::ai(sg::Content::Blocks{json{{"type", "text"}, {"text", "hello"}},
                                 json{{"type", "image_url"}, {"image_url", {{"url", "x"}}}}},
             {sg::ToolCall{"c1", "search", {{"q", "cats"}}}}, "id-1");
  m.name = "bot";
  m.additional_kwargs = {{"refusal", nullptr}, {"custom", 3}};
  m.response_metadata = {{"model_name", "m"}, {"finish_reason", "stop"}};
  m.usage_metadata = {{"input_tokens", 5}, {"output_tokens", 7}, {"total_tokens", 12}};
  const json j = m;
  CHECK(j.get<sg::Message>() == m);

  for (const auto& msg :
       {sg::human("a", "1"), sg::system("s"), sg::tool("x", "c9", "t"), sg::remove_message("r")}) {
    CHECK(sg::message_from_json(sg::message_to_json(msg)) == msg);
  }

  SUBCASE("invalid tool calls and a tool message's status") {
    sg::Message bad = sg::ai("", "a-9");
    bad.invalid_tool_calls = {sg::InvalidToolCall{"c1", "search", "{\"q\": ", "bad JSON"},
                              sg::InvalidToolCall{"", "", "", ""}};
    const json bj = bad;
    CHECK(bj["invalid_tool_calls"][0] == json{{"id", "c1"},
                                              {"name", "search"},
                                              {"args", "{\"q\": "},
                                              {"error", "bad JSON"},
                                              {"type", "invalid_tool_call"}});
    CHECK(bj["invalid_tool_calls"][1]["name"].is_null());
    CHECK(bj.get<sg::Message>() == bad);
    sg::Message failed = sg::tool("oops", "c1", "t-1");
    failed.status = "error";
    const json fj = failed;
    CHECK(fj["status"] == "error");
    CHECK(fj.get<sg::Message>() == failed);
    CHECK_FALSE(sg::message_to_json(sg::tool("x", "c")).contains("status"));
  }
}

TEST_CASE("the CBOR form is the JSON form, byte for byte") {
  sg::Message full =
      sg::ai(sg::Content::Blocks{json{{"type", "text"}, {"text", "hello"}}, json("plain")},
             {sg::ToolCall{"c1", "search", {{"q", "cats"}}}}, "id-1");
  full.name = "bot";
  full.additional_kwargs = {{"refusal", nullptr}, {"custom", 3.5}};
  full.response_metadata = {{"model_name", "m"}, {"finish_reason", "stop"}};
  full.usage_metadata = {{"input_tokens", 5}, {"output_tokens", 7}, {"total_tokens", 12}};
  sg::Message unnamed_tool = sg::tool("x", "", "t");
  sg::Message failed_tool = sg::tool("boom", "c2", "t2");
  failed_tool.status = "error";
  sg::Message invalid_call = sg::ai("", "a-2");
  invalid_call.invalid_tool_calls = {sg::InvalidToolCall{"c3", "f", "{bad", "not JSON"}};
  for (const auto& msg :
       {full, failed_tool, invalid_call, sg::human("a", "1"), sg::human(std::string(300, 'h'), ""),
        sg::system("s"), sg::tool("x", "c9", "t"), unnamed_tool, sg::remove_message("r"),
        sg::ai("caf\xC3\xA9", "a-1")}) {
    CAPTURE(sg::message_to_json(msg).dump());
    std::vector<std::uint8_t> cbor{0xAB};  // appends after what is there
    sg::message_to_cbor(msg, cbor);
    CHECK(std::vector<std::uint8_t>(cbor.begin() + 1, cbor.end()) ==
          json::to_cbor(sg::message_to_json(msg)));
  }
}

TEST_CASE("message-likes are coerced as LangChain does") {
  CHECK(sg::message_from_json("hello") == sg::human("hello"));
  CHECK(sg::message_from_json(json::parse(R"(["ai", "yes"])")) == sg::ai("yes"));
  CHECK(sg::message_from_json(json::parse(R"(["user", "q"])")) == sg::human("q"));
  CHECK(sg::message_from_json(json::parse(R"({"role": "user", "content": "q"})")) ==
        sg::human("q"));
  CHECK(sg::message_from_json(json::parse(R"({"role": "assistant", "content": "a", "id": "5"})")) ==
        sg::ai("a", "5"));
  CHECK(sg::message_from_json(json::parse(R"({"role": "system", "content": "s"})")) ==
        sg::system("s"));

  const auto dev = sg::message_from_json(json::parse(R"({"role": "developer", "content": "d"})"));
  CHECK(dev.type == sg::MessageType::system);
  CHECK(dev.additional_kwargs["__openai_role__"] == "developer");

  const auto t = sg::message_from_json(json::parse(
      R"({"role": "tool", "content": "r", "tool_call_id": "c1", "status": "success"})"));
  CHECK(t.tool_call_id == "c1");
  CHECK(t.status == "success");  // a ToolMessage field
  CHECK(sg::message_from_json(json::parse(R"({"role": "user", "content": "q", "status": 1})"))
            .additional_kwargs["status"] == 1);  // unknown keys go to additional_kwargs

  SUBCASE("null content is the empty string") {
    CHECK(sg::message_from_json(json::parse(R"({"type": "ai", "content": null})")) == sg::ai(""));
  }
  SUBCASE("OpenAI tool calls") {
    const auto m = sg::message_from_json(json::parse(
        R"({"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "f", "arguments": "{\"x\": 2}"}}]})"));
    REQUIRE(m.tool_calls.size() == 1);
    CHECK(m.tool_calls[0].name == "f");
    CHECK(m.tool_calls[0].args == json{{"x", 2}});
  }
  SUBCASE("LangChain storage and constructor forms") {
    CHECK(sg::message_from_json(json::parse(
              R"({"type": "human", "data": {"content": "x", "id": "1"}})")) == sg::human("x", "1"));
    CHECK(sg::message_from_json(json::parse(
              R"({"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", "AIMessage"],
                  "kwargs": {"content": "y", "id": "2", "tool_calls": [], "invalid_tool_calls": []}})")) ==
          sg::ai("y", "2"));
  }
  SUBCASE("remove messages need only an id") {
    CHECK(sg::message_from_json(json::parse(R"({"type": "remove", "id": "3"})")) ==
          sg::remove_message("3"));
  }
}

TEST_CASE("a list or a single message-like") {
  const auto list = sg::messages_from_json(json::parse(R"(["a", {"type": "ai", "content": "b"}])"));
  REQUIRE(list.size() == 2);
  CHECK(list[0] == sg::human("a"));
  CHECK(list[1] == sg::ai("b"));
  CHECK(sg::messages_from_json(json::parse(R"({"type": "ai", "content": "b"})")).size() == 1);
  CHECK(sg::messages_from_json(json::array()).empty());
}

TEST_CASE("malformed messages are clear errors") {
  CHECK(error_of(42) ==
        "expected a message (a string, a [role, content] pair or an object), got 42");
  CHECK(error_of(json::parse(R"({"content": "x"})")).find("needs a 'type' or 'role'") !=
        std::string::npos);
  CHECK(error_of(json::parse(R"({"type": "robot", "content": "x"})"))
            .find("unsupported message type 'robot'") != std::string::npos);
  CHECK(error_of(json::parse(R"({"type": 3, "content": "x"})")) ==
        "'type' must be a string, got 3");
  CHECK(error_of(json::parse(R"({"type": "human"})")) ==
        "a message of type 'human' needs 'content'");
  CHECK(error_of(json::parse(R"({"type": "human", "content": 5})")) ==
        "'content' must be a string or a list of content blocks, got 5");
  CHECK(error_of(json::parse(R"({"type": "human", "content": [1]})")) ==
        "content[0] must be a string or an object, got 1");
  CHECK(error_of(json::parse(R"({"type": "tool", "content": "x"})")) ==
        "a tool message needs a 'tool_call_id' string");
  CHECK(error_of(json::parse(R"({"type": "human", "content": "x", "id": 4})")) ==
        "'id' must be a string or null, got 4");
  CHECK(error_of(json::parse(R"({"type": "remove", "content": ""})")) ==
        "a remove message needs an 'id'");
  CHECK(error_of(json::parse(R"({"type": "ai", "content": "", "tool_calls": [{"args": {}}]})")) ==
        "tool_calls[0] has no 'name'");
  CHECK(error_of(json::parse(
            R"({"type": "ai", "content": "", "tool_calls": [{"name": "f", "args": 3}]})")) ==
        "tool_calls[0].args must be an object, got 3");
  CHECK(
      error_of(json::parse(R"({"type": "human", "content": "", "tool_calls": [{"name": "f"}]})")) ==
      "only ai messages carry 'tool_calls', not human messages");
  CHECK(error_of(json::parse(R"(["human"])")) ==
        "a message pair must be [role, content], got [\"human\"]");

  try {
    (void)sg::messages_from_json(json::parse(R"(["ok", {"type": "ai"}])"));
    FAIL("expected an error");
  } catch (const sg::Error& e) {
    CHECK(std::string(e.what()) == "messages[1]: a message of type 'ai' needs 'content'");
  }
}

TEST_CASE("content text") {
  CHECK(sg::Content("abc").text() == "abc");
  const sg::Content blocks(sg::Content::Blocks{"x", json{{"type", "text"}, {"text", "y"}},
                                               json{{"type", "image_url"}, {"image_url", "u"}}});
  CHECK(blocks.text() == "xy");
  CHECK_FALSE(blocks.empty());
  CHECK(sg::Content().empty());
  CHECK_THROWS_AS((void)blocks.str(), sg::Error);
  CHECK_THROWS_AS((void)sg::Content("s").blocks(), sg::Error);
}

TEST_CASE("message type names") {
  CHECK(sg::parse_message_type("user") == sg::MessageType::human);
  CHECK(sg::parse_message_type("assistant") == sg::MessageType::ai);
  CHECK(sg::to_string(sg::MessageType::tool) == "tool");
  CHECK_THROWS_WITH_AS((void)sg::parse_message_type("function"),
                       "unsupported message type 'function': use one of human (user), ai "
                       "(assistant), system (developer), tool, remove",
                       sg::Error);
}

TEST_CASE("uuid4 ids") {
  const std::regex v4("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    auto id = sg::new_uuid4();
    CHECK(std::regex_match(id, v4));
    seen.insert(id);
  }
  CHECK(seen.size() == 100);
}
