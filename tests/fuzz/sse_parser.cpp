// SPDX-License-Identifier: MIT
// Fuzz target: the OpenAI client's streamed replies, SSE parsing and chunk assembly (see
// fuzz_targets.hpp).
#include <stategraph/core/message.hpp>

#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_targets.hpp"
#include "openai_wire.hpp"  // models/src: ChatStreamAccumulator
#include "sse.hpp"          // models/src: SseParser

// Not an anonymous namespace: fuzz/replay compiles the targets in unity batches.
namespace sg::fuzz::sse {

/// The events of `stream` fed to `parser` in pieces of 0 to 16 bytes, their lengths drawn from
/// `seed` (0: one byte at a time).
std::vector<detail::SseEvent> events_in_pieces(detail::SseParser& parser, std::string_view stream,
                                               std::uint8_t seed) {
  std::vector<detail::SseEvent> events;
  std::uint32_t state = seed;
  std::size_t at = 0;
  while (at < stream.size()) {
    state = state * 1103515245U + 12345U;
    const std::size_t n = seed == 0 ? 1 : (state >> 16) % 17;
    parser.feed(stream.substr(at, n), events);
    at += std::min(n, stream.size() - at);
  }
  return events;
}

}  // namespace sg::fuzz::sse

int sg::fuzz::sse_parser(const std::uint8_t* data, std::size_t size) {
  using namespace sse;  // NOLINT: this target's helpers
  using nlohmann::json;
  if (size == 0) return 0;
  const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);
  std::vector<detail::SseEvent> events;
  detail::SseParser whole;
  whole.feed(stream, events);
  // The same events, last event id and retry time however the bytes arrive.
  detail::SseParser pieces;
  if (events_in_pieces(pieces, stream, data[0]) != events) std::abort();
  if (pieces.last_event_id() != whole.last_event_id() || pieces.retry_ms() != whole.retry_ms())
    std::abort();
  if (whole.retry_ms() && (*whole.retry_ms() < 0 || *whole.retry_ms() > 100'000'000)) std::abort();

  // As the client reads a streamed chat completion: [DONE] ends it; an event that is not JSON or
  // not a chunk fails the call with ModelError.
  detail::ChatStreamAccumulator accumulator;
  std::string text;  // the content of the chunks, in order
  for (const detail::SseEvent& sse_event : events) {
    const std::string& event = sse_event.data;
    if (event == "[DONE]") break;
    const json chunk_json = json::parse(event, nullptr, false);
    if (chunk_json.is_discarded()) return 0;
    try {
      const std::optional<MessageChunk> chunk = accumulator.add(chunk_json);
      if (!chunk) continue;
      (void)message_chunk_to_json(*chunk).dump();  // as a messages stream sends it
      if (chunk->message.content.is_string()) text += chunk->message.content.str();
    } catch (const Error&) {
      return 0;
    }
  }
  Message reply;
  try {
    reply = accumulator.result();
  } catch (const Error&) {
    return 0;
  }
  // The reply is the chunks put together, and a message the library reads back.
  if (!reply.content.is_string() || reply.content.str() != text) std::abort();
  const json written = message_to_json(reply);
  try {
    if (message_to_json(message_from_json(written)) != written) std::abort();
  } catch (const Error&) {
    std::abort();
  }
  return 0;
}

SG_FUZZ_ENTRY(sg::fuzz::sse_parser)
