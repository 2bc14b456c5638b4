// SPDX-License-Identifier: MIT
#pragma once
// OpenAI's chat-completions and embeddings wire format: request bodies, replies, the SSE
// parser and the accumulator of streamed chunks. Pure functions and value types, no I/O.

#include <stategraph/models/chat_model.hpp>
#include <stategraph/models/openai.hpp>

#include <chrono>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

/// The error message of an error body (`{"error": {"message"}}`, `{"error": "..."}`,
/// `{"message"}`); empty when there is none.
[[nodiscard]] std::string error_message_of(std::string_view body);

/// The first bytes (at most `limit`) of a body, cut at a UTF-8 character boundary.
[[nodiscard]] std::string excerpt(std::string_view body, std::size_t limit = 500);

/// How long a reply asks to wait before retrying: `retry-after-ms` (milliseconds), or
/// `retry-after` in seconds or as an HTTP date (relative to `now`). Header names lower-case.
[[nodiscard]] std::optional<std::chrono::milliseconds> retry_after(
    const std::vector<std::pair<std::string, std::string>>& headers, std::time_t now);

/// Server-sent events (the WHATWG event-stream format): feed it bytes as they arrive, split
/// anywhere; it returns the data of every complete event. Lines end with LF, CRLF or CR;
/// comments (":...") and fields other than `data` are ignored; the `data` lines of one event
/// are joined with "\n"; an event ends at an empty line. Not synchronized.
class SseParser {
 public:
  /// Appends the data of the events completed by `bytes` to `events`.
  void feed(std::string_view bytes, std::vector<std::string>& events);

 private:
  void line(std::vector<std::string>& events);

  std::string line_{};
  std::string data_{};
  bool has_data_ = false;
  bool skip_lf_ = false;  // the last byte fed was a CR: a following LF belongs to it
};

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

/// `url` without what may hold a credential (its user info and query), for logs and messages.
[[nodiscard]] std::string url_for_log(const std::string& url);

}  // namespace sg::detail
