// SPDX-License-Identifier: MIT
// Fuzz target: the Anthropic client's streamed replies, Messages API events through
// AnthropicStreamAccumulator (see fuzz_targets.hpp).
#include <stategraph/core/message.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "anthropic_wire.hpp"  // models/src: AnthropicStreamAccumulator
#include "fuzz_targets.hpp"
#include "sse.hpp"  // models/src: SseParser

// Not an anonymous namespace: fuzz/replay compiles the targets in unity batches.
namespace sg::fuzz::anthropic {

using nlohmann::json;

/// What the chunks of one content block carried, put together.
struct Streamed {
  std::string type;  // its content_block_start's type
  std::string name;  // a tool_use block's name
  std::string text;
  std::string thinking;
  std::string signature;
  std::string args;             // tool-call chunks' argument fragments
  std::size_t call_chunks = 0;  // tool-call chunks
  std::string input;            // a server tool call's input fragments (input_json_delta blocks)
};

/// `object[key]` when it is a string, else "".
std::string string_at(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// Adds a chunk of the event for content block `index` to what that block streamed.
void add_chunk(Streamed& block, const MessageChunk& chunk) {
  const Content& content = chunk.message.content;
  if (content.is_string()) block.text += content.str();
  if (content.is_blocks()) {
    for (const auto& b : content.blocks()) {
      const std::string type = string_at(b, "type");
      if (type == "text") block.text += string_at(b, "text");
      if (type == "thinking") {
        block.thinking += string_at(b, "thinking");
        block.signature += string_at(b, "signature");
      }
      if (type == "input_json_delta") block.input += string_at(b, "partial_json");
    }
  }
  for (const auto& piece : chunk.tool_call_chunks) block.args += piece.args;
  block.call_chunks += chunk.tool_call_chunks.size();
}

/// Whether `text` is nothing but whitespace.
bool blank_text(const std::string& text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
}

/// Checks the reply's block against what its content block streamed; aborts when they differ.
void check_block(const json& reply, const Streamed& streamed, const std::string& format_tool,
                 const Message& message) {
  const std::string type = string_at(reply, "type");
  if (streamed.type == "tool_use" && !format_tool.empty() && streamed.name == format_tool) {
    // The structured answer: its input as text, parsed and written again when it is JSON.
    if (streamed.args.empty()) return;
    const json parsed = json::parse(streamed.args, nullptr, /*allow_exceptions=*/false);
    const std::string expected = parsed.is_discarded() ? streamed.args : parsed.dump();
    if (type != "text" || string_at(reply, "text") != expected) std::abort();
    return;
  }
  if (streamed.type == "text") {
    if (type != "text" || string_at(reply, "text") != streamed.text) std::abort();
  } else if (streamed.type == "thinking") {
    if (type != "thinking" || string_at(reply, "thinking") != streamed.thinking) std::abort();
    const auto signature = reply.find("signature");
    if (!streamed.signature.empty() &&
        (signature == reply.end() || !signature->is_string() ||
         !signature->get<std::string>().ends_with(streamed.signature)))
      std::abort();
  } else if (streamed.type == "server_tool_use" || streamed.type == "mcp_tool_use") {
    // A server tool's call: kept as a block with an object input, never a tool call. Its input
    // is the fragments' JSON object; fragments that are not one are kept as partial_json.
    if (type != streamed.type || streamed.call_chunks != 0) std::abort();
    const auto input = reply.find("input");
    if (input == reply.end() || !input->is_object()) std::abort();
    if (blank_text(streamed.input)) return;
    json parsed;
    try {
      parsed = json::parse(streamed.input);
    } catch (const json::exception&) {  // not JSON, or a number out of range
      parsed = nullptr;
    }
    if (parsed.is_object()) {
      if (*input != parsed || reply.contains("partial_json")) std::abort();
    } else if (string_at(reply, "partial_json") != streamed.input) {
      std::abort();
    }
  } else if (streamed.type == "tool_use") {
    if (type != "tool_use") std::abort();
    const bool blank = blank_text(streamed.args);
    if (blank || streamed.name.empty()) return;
    // Arguments that are a JSON object become the call's input; others an invalid tool call
    // with the raw text, and an empty input.
    json parsed;
    try {
      parsed = json::parse(streamed.args);
    } catch (const json::exception&) {  // not JSON, or a number out of range
      parsed = nullptr;
    }
    if (parsed.is_object()) {
      if (reply.value("input", json()) != parsed) std::abort();
      return;
    }
    if (reply.value("input", json()) != json::object()) std::abort();
    const bool listed =
        std::any_of(message.invalid_tool_calls.begin(), message.invalid_tool_calls.end(),
                    [&](const InvalidToolCall& call) { return call.args == streamed.args; });
    if (!listed) std::abort();
  } else if (type != streamed.type || streamed.call_chunks != 0 || !streamed.input.empty()) {
    // Any other block (redacted_thinking, a server tool's result, a newer one): kept whole.
    std::abort();
  }
}

}  // namespace sg::fuzz::anthropic

int sg::fuzz::anthropic_stream(const std::uint8_t* data, std::size_t size) {
  using namespace anthropic;  // NOLINT: this target's helpers
  if (size == 0) return 0;
  const bool blocks = (data[0] & 1U) != 0;
  const std::string format_tool = (data[0] & 2U) != 0 ? "answer" : "";
  const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);
  std::vector<detail::SseEvent> events;
  detail::SseParser parser;
  parser.feed(stream, events);

  // As the client reads a stream: each event's data is JSON (or the call fails with ModelError),
  // message_stop ends it; an event that is not the wire format fails with ModelError.
  detail::AnthropicStreamAccumulator accumulator(format_tool, blocks);
  std::map<std::size_t, Streamed> streamed;  // by content block index
  int starts = 0;                            // message_start events
  bool restarted = false;                    // a content block started twice
  for (const detail::SseEvent& sse_event : events) {
    const std::string& data_text = sse_event.data;
    const json event = json::parse(data_text, nullptr, /*allow_exceptions=*/false);
    if (event.is_discarded()) return 0;
    std::optional<MessageChunk> chunk;
    try {
      chunk = accumulator.add(event);
    } catch (const ModelError& e) {
      // An error event stands for an HTTP status; anything else is an invalid response.
      if (e.code() == errc::kModelHttpStatus && (e.http_status() < 400 || e.http_status() > 599))
        std::abort();
      return 0;
    }
    const std::string type = string_at(event, "type");
    const auto index = event.find("index");
    const bool indexed = index != event.end() && index->is_number_unsigned();
    if (type == "message_start") {
      ++starts;
      streamed.clear();
    }
    if (type == "content_block_start" && indexed) {
      const std::size_t i = index->get<std::size_t>();
      restarted = restarted || streamed.contains(i);
      Streamed started;
      started.type = string_at(event["content_block"], "type");
      started.name = string_at(event["content_block"], "name");
      streamed[i] = std::move(started);
    }
    if (chunk) {
      (void)message_chunk_to_json(*chunk).dump();  // as a messages stream sends it
      if (indexed) add_chunk(streamed[index->get<std::size_t>()], *chunk);
    }
    if (type == "message_stop") break;
  }
  Message reply;
  try {
    reply = accumulator.result();
  } catch (const ModelError&) {
    return 0;
  }
  // The reply is what its chunks carried, block by block (one block per content block, in
  // index order), when one message started and each of its blocks started once.
  if (starts == 1 && !restarted) {
    json content = json::array();
    if (reply.content.is_blocks()) {
      for (const auto& b : reply.content.blocks()) content.push_back(b);
    } else if (!streamed.empty()) {
      content.push_back({{"type", "text"}, {"text", reply.content.str()}});
    }
    if (content.size() != streamed.size()) std::abort();
    std::size_t k = 0;
    for (const auto& [i, block] : streamed) check_block(content[k++], block, format_tool, reply);
  }
  // And a message the library writes and reads back unchanged.
  const json written = message_to_json(reply);
  try {
    if (message_to_json(message_from_json(written)) != written) std::abort();
  } catch (const Error&) {
    std::abort();
  }
  return 0;
}

SG_FUZZ_ENTRY(sg::fuzz::anthropic_stream)
