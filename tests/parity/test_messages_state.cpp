// SPDX-License-Identifier: MIT
// LangGraph's tests/test_messages_state.py: the add_messages reducer, MessagesState in a graph,
// push_message.
#include <cctype>
#include <optional>

#include "parity.hpp"

using Messages = std::vector<sg::Message>;

namespace {

/// LangGraph's _AnyIdHumanMessage: a human message with this content and any (non-empty) id.
bool any_id_human(const sg::Message& m, const std::string& content) {
  return m.type == sg::MessageType::human && m.content.is_string() && m.content.str() == content &&
         !m.id.empty();
}

/// A UUID version 4 in its canonical text form.
bool is_uuid_v4(const std::string& id) {
  if (id.size() != 36) return false;
  for (std::size_t i = 0; i < id.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash != (id[i] == '-')) return false;
    if (!dash && std::isxdigit(static_cast<unsigned char>(id[i])) == 0) return false;
  }
  return id[14] == '4';
}

}  // namespace

TEST_CASE("langgraph/test_messages_state.py::test_add_single_message") {
  const Messages left{sg::human("Hello", "1")};
  const Messages right{sg::ai("Hi there!", "2")};  // a single message in LangGraph
  CHECK(sg::add_messages(left, right) ==
        Messages{sg::human("Hello", "1"), sg::ai("Hi there!", "2")});
}

TEST_CASE("langgraph/test_messages_state.py::test_add_multiple_messages") {
  const Messages left{sg::human("Hello", "1")};
  const Messages right{sg::ai("Hi there!", "2"), sg::system("System message", "3")};
  CHECK(sg::add_messages(left, right) == Messages{sg::human("Hello", "1"), sg::ai("Hi there!", "2"),
                                                  sg::system("System message", "3")});
}

TEST_CASE("langgraph/test_messages_state.py::test_update_existing_message") {
  const Messages left{sg::human("Hello", "1")};
  const Messages right{sg::human("Hello again", "1")};
  CHECK(sg::add_messages(left, right) == Messages{sg::human("Hello again", "1")});
}

TEST_CASE("langgraph/test_messages_state.py::test_missing_ids") {
  const Messages left{sg::human("Hello")};
  const Messages right{sg::ai("Hi there!")};
  const auto result = sg::add_messages(left, right);
  REQUIRE(result.size() == 2);
  for (const auto& m : result) CHECK(is_uuid_v4(m.id));
}

TEST_CASE("langgraph/test_messages_state.py::test_duplicates_in_input") {
  const Messages right{sg::ai("Hi there!", "1"), sg::ai("Hi there again!", "1")};
  const auto result = sg::add_messages(Messages{}, right);
  REQUIRE(result.size() == 1);
  CHECK(result[0].id == "1");
  CHECK(result[0].content.str() == "Hi there again!");
}

TEST_CASE("langgraph/test_messages_state.py::test_duplicates_in_input_with_remove") {
  const Messages left{sg::ai("Hello!", "1")};
  const Messages right{sg::remove_message("1"), sg::ai("Hi there!", "1"),
                       sg::ai("Hi there again!", "1")};
  const auto result = sg::add_messages(left, right);
  REQUIRE(result.size() == 1);
  CHECK(result[0].id == "1");
  CHECK(result[0].content.str() == "Hi there again!");
}

TEST_CASE("langgraph/test_messages_state.py::test_remove_message") {
  const Messages left{sg::human("Hello", "1"), sg::ai("Hi there!", "2")};
  CHECK(sg::add_messages(left, Messages{sg::remove_message("2")}) ==
        Messages{sg::human("Hello", "1")});
}

TEST_CASE("langgraph/test_messages_state.py::test_duplicate_remove_message") {
  const Messages left{sg::human("Hello", "1"), sg::ai("Hi there!", "2")};
  const Messages right{sg::remove_message("2"), sg::remove_message("2")};
  CHECK(sg::add_messages(left, right) == Messages{sg::human("Hello", "1")});
}

TEST_CASE("langgraph/test_messages_state.py::test_remove_nonexistent_message") {
  const Messages left{sg::human("Hello", "1")};
  // LangGraph: ValueError matching "Attempting to delete a message with an ID that doesn't exist".
  CHECK_THROWS_WITH_AS(
      (void)sg::add_messages(left, Messages{sg::remove_message("2")}),
      doctest::Contains("Attempting to delete a message with an ID that doesn't exist"),
      sg::InvalidUpdateError);
}

TEST_CASE("langgraph/test_messages_state.py::test_mixed_operations") {
  const Messages left{sg::human("Hello", "1"), sg::ai("Hi there!", "2")};
  const Messages right{sg::human("Updated hello", "1"), sg::remove_message("2"),
                       sg::system("New message", "3")};
  CHECK(sg::add_messages(left, right) ==
        Messages{sg::human("Updated hello", "1"), sg::system("New message", "3")});
}

TEST_CASE("langgraph/test_messages_state.py::test_empty_inputs") {
  CHECK(sg::add_messages(Messages{}, Messages{}).empty());
  CHECK(sg::add_messages(Messages{}, Messages{sg::human("Hello", "1")}) ==
        Messages{sg::human("Hello", "1")});
  CHECK(sg::add_messages(Messages{sg::human("Hello", "1")}, Messages{}) ==
        Messages{sg::human("Hello", "1")});
}

TEST_CASE("langgraph/test_messages_state.py::test_non_list_inputs") {
  // Both sides are single messages in LangGraph; the C++ reducer takes lists.
  CHECK(sg::add_messages(Messages{sg::human("Hello", "1")}, Messages{sg::ai("Hi there!", "2")}) ==
        Messages{sg::human("Hello", "1"), sg::ai("Hi there!", "2")});
}

TEST_CASE("langgraph/test_messages_state.py::test_delete_all") {
  const Messages left{sg::human("Hello", "1"), sg::ai("Hi there!", "2")};
  const Messages right{sg::remove_message("1"), sg::remove_message("2")};
  CHECK(sg::add_messages(left, right).empty());
}

TEST_CASE("langgraph/test_messages_state.py::test_messages_state (MessagesState)") {
  sg::StateGraph<sg::MessagesState> graph;
  graph.add_edge(sg::START, "foo");
  graph.add_edge("foo", sg::END);
  graph.add_node("foo", [](const sg::MessagesState&) {
    return sg::set<&sg::MessagesState::messages>(sg::human("foo"));
  });
  const auto app = graph.compile();
  // Input {"messages": [("user", "meow")]}.
  const auto out = app.invoke(sg::set<&sg::MessagesState::messages>(
      sg::messages_from_json(nlohmann::json::array({{"user", "meow"}}))));
  REQUIRE(out.state.messages.size() == 2);
  CHECK(any_id_human(out.state.messages[0], "meow"));
  CHECK(any_id_human(out.state.messages[1], "foo"));
}

TEST_CASE("langgraph/test_messages_state.py::test_remove_all_messages") {
  const std::string all(sg::kRemoveAllMessages);
  // simple removal
  {
    const Messages left{sg::human("Hello"), sg::ai("Hi there!")};
    CHECK(sg::add_messages(left, Messages{sg::remove_message(all)}).empty());
  }
  // removal and update (i.e., overwriting)
  {
    const Messages left{sg::human("Hello"), sg::ai("Hi there!")};
    const auto result =
        sg::add_messages(left, Messages{sg::remove_message(all), sg::human("Updated hello")});
    REQUIRE(result.size() == 1);
    CHECK(any_id_human(result[0], "Updated hello"));
  }
  // removing preceding messages in the right list
  {
    const Messages left{sg::human("Hello"), sg::ai("Hi there!")};
    const auto result =
        sg::add_messages(left, Messages{sg::human("Updated hello"), sg::remove_message(all),
                                        sg::human("Updated hi there")});
    REQUIRE(result.size() == 1);
    CHECK(any_id_human(result[0], "Updated hi there"));
  }
}

TEST_CASE("langgraph/test_messages_state.py::test_push_messages_in_graph") {
  // LangGraph streams ["messages", "values"] and checks that the last values chunk's messages
  // equal the messages streamed in "messages" mode (the pushed ones). stategraph has no
  // "messages" stream mode: the pushed messages are compared with the last values chunk.
  std::string missing_id_error;
  sg::StateGraph<sg::MessagesState> builder;
  builder.add_node("chat", [&missing_id_error](const sg::MessagesState&, sg::Context& ctx) {
    try {
      ctx.push_message(sg::ai("No ID"));
    } catch (const std::exception& e) {
      missing_id_error = e.what();
    }
    ctx.push_message(sg::ai("First", "1"));
    ctx.push_message(sg::human("Second", "2"));
    ctx.push_message(sg::ai("Third", "3"));
  });
  builder.add_edge(sg::START, "chat");
  const auto graph = builder.compile();
  std::optional<sg::MessagesState> values;
  (void)graph.stream(sg::set<&sg::MessagesState::messages>(Messages{}), {}, sg::StreamMode::values,
                     [&](const sg::StreamEvent<sg::MessagesState>& e) { values = e.values; });
  CHECK(missing_id_error.find("Message ID is required") != std::string::npos);
  REQUIRE(values);
  CHECK(values->messages ==
        Messages{sg::ai("First", "1"), sg::human("Second", "2"), sg::ai("Third", "3")});
}
