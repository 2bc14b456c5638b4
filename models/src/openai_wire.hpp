// SPDX-License-Identifier: MIT
#pragma once
// OpenAI's chat-completions and embeddings wire format: request bodies, replies and the
// accumulator of streamed chunks. Pure functions and value types, no I/O. (The helpers every
// provider uses are in http_call.hpp, the SSE parser in sse.hpp.)

#include <stategraph/models/chat_model.hpp>
#include <stategraph/models/openai.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "http_call.hpp"

namespace sg::detail {

/// The base URL without trailing slashes. Throws ModelError (kModelConfig) when it is empty or
/// not http(s)://host..., or when the host is api.openai.com and `api_key` is empty.
[[nodiscard]] std::string validated_base_url(const OpenAIConfig& config);

/// The body of a chat-completions request. Throws sg::Error (kInvalidArgument) for a message
/// the API cannot take (a RemoveMessage).
[[nodiscard]] nlohmann::json chat_request_body(const std::string& model,
                                               const std::vector<Message>& messages,
                                               const ChatOptions& options, bool stream);

/// The ai message of a chat completion. Throws ModelError (kModelInvalidResponse) when the
/// body is not one.
[[nodiscard]] Message parse_chat_completion(const nlohmann::json& body);

/// LangChain's usage_metadata of OpenAI's `usage` object.
[[nodiscard]] nlohmann::json usage_metadata_of(const nlohmann::json& usage);

/// A tool call of a reply: args parsed from the JSON string `arguments`, or an invalid tool
/// call carrying the raw string and the parse error (also when `name` is empty).
void add_tool_call(Message& message, std::string id, std::string name,
                   const nlohmann::json& arguments);

/// Assembles a streamed chat completion from its chat.completion.chunk events: content,
/// tool-call deltas (by index; id and name arrive in a call's first delta), finish reason and
/// usage (from the final chunk). Not synchronized.
class ChatStreamAccumulator {
 public:
  /// Takes one event; returns the chunk to deliver (none for an event that carries nothing).
  /// Throws ModelError (kModelInvalidResponse) when the event is not a chunk object.
  [[nodiscard]] std::optional<MessageChunk> add(const nlohmann::json& event);
  /// True once a finish_reason arrived.
  [[nodiscard]] bool finished() const noexcept { return !finish_reason_.empty(); }
  /// The whole reply, equal to parse_chat_completion of the same completion as JSON.
  [[nodiscard]] Message result() const;

 private:
  struct PartialCall {
    std::string id{};
    std::string name{};
    std::string arguments{};
  };
  std::string id_{};
  std::string model_{};
  std::string fingerprint_{};
  std::string content_{};
  std::string refusal_{};
  std::string finish_reason_{};
  nlohmann::json usage_{};
  std::map<int, PartialCall> calls_{};
};

}  // namespace sg::detail
