// SPDX-License-Identifier: MIT
// The SSE parser (models/src/sse.hpp) on its own: the model providers' data-only streams
// ([DONE], CRLF, comments) and the fields the MCP transports read (event, id, retry), the same
// events however the bytes are split.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sse.hpp"

// Not an anonymous namespace: the suite's sources are compiled in unity batches.
namespace sse_test {

using sg::detail::SseEvent;
using sg::detail::SseParser;

/// What a parser made of a stream: its events and what persists across them.
struct Parsed {
  std::vector<SseEvent> events;
  std::string last_event_id;
  std::optional<long> retry_ms;
};

/// `stream` fed in the pieces that the cut positions (ascending) give.
Parsed parse(std::string_view stream, const std::vector<std::size_t>& cuts = {}) {
  SseParser parser;
  Parsed out;
  std::size_t at = 0;
  for (const std::size_t cut : cuts) {
    parser.feed(stream.substr(at, cut - at), out.events);
    at = cut;
  }
  parser.feed(stream.substr(at), out.events);
  out.last_event_id = parser.last_event_id();
  out.retry_ms = parser.retry_ms();
  return out;
}

/// Checks that `stream` gives `expected` whole, cut in two or three pieces anywhere (the second
/// cut every 7 bytes), and fed one byte at a time.
void check_any_split(std::string_view stream, const Parsed& expected) {
  const auto same = [&](const Parsed& got) {
    return got.events == expected.events && got.last_event_id == expected.last_event_id &&
           got.retry_ms == expected.retry_ms;
  };
  REQUIRE(same(parse(stream)));
  for (std::size_t cut1 = 0; cut1 <= stream.size(); ++cut1) {
    for (std::size_t cut2 = cut1; cut2 <= stream.size(); cut2 += 7) {
      CAPTURE(cut1);
      CAPTURE(cut2);
      REQUIRE(same(parse(stream, {cut1, cut2})));
    }
  }
  std::vector<std::size_t> every_byte;
  for (std::size_t i = 1; i < stream.size(); ++i) every_byte.push_back(i);
  CHECK(same(parse(stream, every_byte)));
}

std::vector<std::string> data_of(const std::vector<SseEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.data);
  return out;
}

}  // namespace sse_test

TEST_CASE("the SSE parser finds the same events however the bytes are split") {
  using namespace sse_test;  // NOLINT: this file's helpers
  // A provider's stream: data-only events ending with [DONE]; CRLF, CR and LF line ends; a
  // comment; a field without a space after its colon or without a colon; an unfinished event.
  const std::string stream =
      ": a comment\r\n"
      "data: {\"a\": 1}\r\n\r\n"
      "event: message\n"
      "data: line one\n"
      "data: line two\n\n"
      "id: 7\r"
      "data:no space\r\r"
      "data\n\n"
      "retry: 10\n\n"
      "data: [DONE]\n\n"
      "data: unfinished";
  const Parsed expected{
      {SseEvent{"", "{\"a\": 1}", ""}, SseEvent{"message", "line one\nline two", ""},
       SseEvent{"", "no space", "7"}, SseEvent{"", "", "7"}, SseEvent{"", "[DONE]", "7"}},
      "7",
      10};
  check_any_split(stream, expected);
  // What the providers read: the data, in order.
  CHECK(data_of(parse(stream).events) ==
        std::vector<std::string>{"{\"a\": 1}", "line one\nline two", "no space", "", "[DONE]"});
}

TEST_CASE("the SSE parser reads event types, ids and retry times as MCP servers send them") {
  using namespace sse_test;  // NOLINT: this file's helpers
  // The legacy transport's endpoint, then messages; a priming event (an id, empty data); a
  // resumable stream's ids; the retry time.
  const std::string stream =
      "event: endpoint\r\n"
      "data: /messages?sessionId=abc\r\n\r\n"
      "id: 1_0\n"
      "retry: 250\n"
      "data:\n\n"
      "event: message\n"
      "id: 1_1\n"
      "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n"
      ": keep-alive\n\n"
      "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
  const Parsed expected{
      {SseEvent{"endpoint", "/messages?sessionId=abc", ""}, SseEvent{"", "", "1_0"},
       SseEvent{"message", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}", "1_1"},
       SseEvent{"", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", "1_1"}},
      "1_1",
      250};
  check_any_split(stream, expected);
}

TEST_CASE("the SSE parser: fields at the edges of the format") {
  using namespace sse_test;  // NOLINT: this file's helpers
  SUBCASE("an event type without data is dropped with its event; the type does not leak") {
    const Parsed p = parse("event: ping\n\ndata: x\n\n");
    CHECK(p.events == std::vector<SseEvent>{SseEvent{"", "x", ""}});
  }
  SUBCASE("only one space after the colon is dropped; later colons belong to the value") {
    const Parsed p = parse("data:  two\ndata: a: b\nevent:  spaced\n\n");
    CHECK(p.events == std::vector<SseEvent>{SseEvent{" spaced", " two\na: b", ""}});
  }
  SUBCASE("an id persists; an empty id clears it; an id with NUL is ignored") {
    using namespace std::string_literals;
    const Parsed p =
        parse("id: a\ndata: 1\n\ndata: 2\n\nid\ndata: 3\n\nid: b\n\nid: c\0d\ndata: 4\n\n"s);
    CHECK(p.events == std::vector<SseEvent>{SseEvent{"", "1", "a"}, SseEvent{"", "2", "a"},
                                            SseEvent{"", "3", ""}, SseEvent{"", "4", "b"}});
    CHECK(p.last_event_id == "b");
  }
  SUBCASE("retry: ASCII digits only, at most 100,000,000 ms; a bad value keeps the last one") {
    CHECK(parse("retry: 0\n").retry_ms == 0);
    CHECK(parse("retry: 100000000\n").retry_ms == 100'000'000);
    CHECK_FALSE(parse("retry:\n").retry_ms);
    CHECK_FALSE(parse("retry\n").retry_ms);
    for (const char* bad : {"retry: 10s\n", "retry: -5\n", "retry: 1.5\n", "retry:  5\n",
                            "retry: 100000001\n", "retry: 99999999999999999999999\n"}) {
      CAPTURE(bad);
      CHECK(parse(std::string("retry: 300\n") + bad).retry_ms == 300);
    }
  }
  SUBCASE("unknown fields and comments are ignored; a stream of nothing but them gives nothing") {
    const Parsed p = parse(":\n: x\nfoo: bar\nDATA: upper\n\n\n");
    CHECK(p.events.empty());
    CHECK(p.last_event_id.empty());
  }
  SUBCASE("a CR at the end of one piece and its LF at the start of the next are one line end") {
    SseParser parser;
    std::vector<SseEvent> events;
    parser.feed("data: a\r", events);
    parser.feed("\ndata: b\r", events);  // not an empty line: the event goes on
    parser.feed("\r", events);
    CHECK(data_of(events) == std::vector<std::string>{"a\nb"});
    parser.feed("\ndata: c\n\n", events);  // that LF too belongs to the CR before it
    CHECK(data_of(events) == std::vector<std::string>{"a\nb", "c"});
  }
}
