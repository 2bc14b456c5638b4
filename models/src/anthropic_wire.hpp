// SPDX-License-Identifier: MIT
#pragma once
// Anthropic's Messages API wire format: request bodies, replies, error bodies and the
// accumulator of streamed events. Pure functions and value types, no I/O.

#include <stategraph/models/anthropic.hpp>
#include <stategraph/models/chat_model.hpp>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sg::detail {

/// `{base_url}/v1/messages` (`{base_url}/messages` when base_url ends with "/v1"). Throws
/// ModelError (kModelConfig) when the URL is not http(s)://host..., or when the host is
/// api.anthropic.com and `api_key` is empty.
[[nodiscard]] std::string anthropic_endpoint(const AnthropicConfig& config);

/// The name of the tool that answers ChatOptions::response_format ("" when there is none).
[[nodiscard]] std::string format_tool_name(const ChatOptions& options);

/// The body of a Messages API request (see AnthropicChatModel for the mapping). Throws sg::Error
/// (kInvalidArgument) for messages or options the API cannot take, naming the message's index.
[[nodiscard]] nlohmann::json messages_request_body(const AnthropicConfig& config,
                                                   const std::vector<Message>& messages,
                                                   const ChatOptions& options, bool stream);

/// The ai message of a Messages API reply; the tool_use block of `format_tool` (not empty)
/// becomes the text of the reply. Throws ModelError (kModelInvalidResponse) when the body is
/// not a message.
[[nodiscard]] Message parse_anthropic_message(const nlohmann::json& body,
                                              const std::string& format_tool);

/// LangChain's usage_metadata of Anthropic's `usage`: input_tokens counts the cached tokens
/// read and written too; input_token_details {cache_read, cache_creation, and the ephemeral
/// TTLs' counts when given}.
[[nodiscard]] nlohmann::json anthropic_usage_metadata(const nlohmann::json& usage);

/// The HTTP status an error type stands for (overloaded_error 529, rate_limit_error 429, ...;
/// 500 for a type not known).
[[nodiscard]] int anthropic_error_status(std::string_view type);

/// "type: message" of an Anthropic error body (`{"type": "error", "error": {"type",
/// "message"}}`), else what error_message_of finds.
[[nodiscard]] std::string anthropic_error_message(std::string_view body);

/// Whether a failed reply may be retried: 429, 5xx (529: overloaded), or an error body of type
/// overloaded_error whatever its status.
[[nodiscard]] bool anthropic_retryable(int status, std::string_view body);

/// Assembles a streamed reply from its events (message_start, content_block_start/delta/stop,
/// message_delta, message_stop, ping, error) and makes the chunks to deliver: text deltas (a
/// string, or a text block with the content block's index when `blocks`), thinking and
/// signature deltas as thinking blocks with their index, tool_use blocks as tool-call chunks
/// (id and name first, then the input_json_delta fragments, with the content block's index),
/// other blocks (redacted_thinking, server tools' calls and results, newer ones) whole with
/// their index as they start, a server tool call's input_json_delta fragments as
/// `{type: input_json_delta, partial_json, index}` blocks (a server tool call is kept in the
/// content with its input, never a tool call), and the stop reason with the whole usage in the
/// message_delta chunk. Not synchronized.
class AnthropicStreamAccumulator {
 public:
  /// `format_tool`: as parse_anthropic_message's; its input streams as text.
  AnthropicStreamAccumulator(std::string format_tool, bool blocks);

  /// Takes one event; returns the chunk to deliver (none for an event that carries nothing).
  /// Throws ModelError: kModelInvalidResponse for an event that is not the wire format,
  /// kModelHttpStatus for an `error` event (with anthropic_error_status of its type).
  [[nodiscard]] std::optional<MessageChunk> add(const nlohmann::json& event);
  /// True once the stop reason (message_delta) or message_stop arrived.
  [[nodiscard]] bool finished() const noexcept { return finished_; }
  /// The whole reply, equal to parse_anthropic_message of the same message as JSON.
  [[nodiscard]] Message result() const;

 private:
  [[nodiscard]] MessageChunk chunk() const;
  [[nodiscard]] nlohmann::json& block_at(const nlohmann::json& event);

  std::string format_tool_;
  bool blocks_;
  bool started_ = false;
  bool finished_ = false;
  nlohmann::json message_ = nlohmann::json::object();
  /// Content blocks by index; the input of a tool_use or server tool call block arrives as
  /// partial JSON text.
  std::map<std::size_t, nlohmann::json> content_{};
  std::map<std::size_t, std::string> partial_json_{};
};

}  // namespace sg::detail
