// SPDX-License-Identifier: MIT
#pragma once

#include <stategraph/core/json_optional.hpp>  // nlohmann/json.hpp with std::optional

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sg {

/// The kind of a chat message, as LangChain names it (`BaseMessage.getType()`).
enum class MessageType : std::uint8_t { human, ai, system, tool, remove };

/// "human", "ai", "system", "tool" or "remove". noexcept, thread-safe.
[[nodiscard]] std::string_view to_string(MessageType type) noexcept;

/// Parses a type or role name: "human"/"user", "ai"/"assistant", "system"/"developer", "tool",
/// "remove". Throws sg::Error (code "message.invalid") naming the unknown value. Thread-safe.
[[nodiscard]] MessageType parse_message_type(std::string_view name);

/// The id of the RemoveMessage that clears a whole message list (LangGraph's
/// REMOVE_ALL_MESSAGES).
inline constexpr std::string_view kRemoveAllMessages = "__remove_all__";

/// Message content: either a string or a list of content blocks (JSON objects such as
/// `{"type": "text", "text": "..."}`, or plain strings), as in LangChain. A value type; not
/// synchronized.
class Content {
 public:
  using Blocks = std::vector<nlohmann::json>;

  Content() = default;
  Content(std::string text) : value_(std::move(text)) {}         // NOLINT: implicit by design
  Content(std::string_view text) : value_(std::string(text)) {}  // NOLINT
  Content(const char* text) : value_(std::string(text)) {}       // NOLINT
  Content(Blocks blocks) : value_(std::move(blocks)) {}          // NOLINT

  /// True when the content is a plain string.
  [[nodiscard]] bool is_string() const noexcept { return value_.index() == 0; }
  /// True when the content is a list of blocks.
  [[nodiscard]] bool is_blocks() const noexcept { return value_.index() == 1; }
  /// The string content. Throws sg::Error when the content is a block list.
  [[nodiscard]] const std::string& str() const;
  /// The block list. Throws sg::Error when the content is a string.
  [[nodiscard]] const Blocks& blocks() const;
  [[nodiscard]] Blocks& blocks();
  /// The text: the string itself, or the concatenation of string blocks and the `text` of
  /// `{"type": "text"}` blocks (LangChain's `BaseMessage.text`).
  [[nodiscard]] std::string text() const;
  /// True for "" and for an empty block list.
  [[nodiscard]] bool empty() const noexcept;

  friend bool operator==(const Content&, const Content&) = default;

 private:
  std::variant<std::string, Blocks> value_;
};

/// A tool call requested by an AI message: `{name, args, id}`.
struct ToolCall {
  std::string id;
  std::string name;
  nlohmann::json args = nlohmann::json::object();

  friend bool operator==(const ToolCall&, const ToolCall&) = default;
};

/// A tool call a model produced but that could not be parsed (LangChain's InvalidToolCall):
/// `args` is the raw argument string, `error` says what was wrong.
struct InvalidToolCall {
  std::string id;
  std::string name;
  std::string args;
  std::string error;

  friend bool operator==(const InvalidToolCall&, const InvalidToolCall&) = default;
};

/// A chat message with LangChain's fields. `id`, `name` and `tool_call_id` are empty when
/// absent; `additional_kwargs` and `response_metadata` are JSON objects (null counts as empty);
/// `usage_metadata` is null when absent; `status` is a tool message's "success" or "error"
/// (empty: not given, which LangChain reads as "success"). A RemoveMessage is a message of type
/// `remove` whose `id` names the message to delete. A plain value type; not synchronized.
struct Message {
  MessageType type = MessageType::human;
  Content content;
  std::string id;
  std::string name;
  std::vector<ToolCall> tool_calls;                 // ai messages
  std::vector<InvalidToolCall> invalid_tool_calls;  // ai messages
  std::string tool_call_id;                         // tool messages
  std::string status;                               // tool messages
  nlohmann::json additional_kwargs;
  nlohmann::json response_metadata;
  nlohmann::json usage_metadata;  // ai messages: {input_tokens, output_tokens, total_tokens, ...}

  /// The text of the content (see Content::text).
  [[nodiscard]] std::string text() const { return content.text(); }
  /// True for `remove_message(kRemoveAllMessages)`.
  [[nodiscard]] bool is_remove_all() const noexcept {
    return type == MessageType::remove && id == kRemoveAllMessages;
  }

  /// Field-wise equality; a null and an empty object compare equal for the JSON object fields.
  friend bool operator==(const Message& a, const Message& b);
};

/// A piece of a tool call streamed by a model (LangChain's ToolCallChunk): `args` is a fragment
/// of the JSON argument string; the chunks of one call share its `index`.
struct ToolCallChunk {
  std::string id;
  std::string name;
  std::string args;
  int index = 0;

  friend bool operator==(const ToolCallChunk&, const ToolCallChunk&) = default;
};

/// A piece of a model's reply as it streams (LangChain's AIMessageChunk): `message` is an ai
/// message holding the content delta and the reply's id (the same in every chunk of one reply);
/// the last chunk may carry response_metadata and usage_metadata. A value type.
struct MessageChunk {
  Message message;
  std::vector<ToolCallChunk> tool_call_chunks;
};

/// LangChain's serialized AIMessageChunk: message_to_json(chunk.message) with type
/// "AIMessageChunk" and `tool_call_chunks` (`{name, args, id, index, type: "tool_call_chunk"}`).
/// Thread-safe.
[[nodiscard]] nlohmann::json message_chunk_to_json(const MessageChunk& chunk);

/// A human message. Thread-safe.
[[nodiscard]] Message human(Content content, std::string id = {});
/// An AI message. Thread-safe.
[[nodiscard]] Message ai(Content content, std::string id = {});
/// An AI message that requests tool calls. Thread-safe.
[[nodiscard]] Message ai(Content content, std::vector<ToolCall> tool_calls, std::string id = {});
/// A system message. Qualify the call (`sg::system`): unqualified, `system("...")` resolves to
/// the C library's `::system`. Thread-safe.
[[nodiscard]] Message system(Content content, std::string id = {});
/// A tool result answering the tool call `tool_call_id`. Thread-safe.
[[nodiscard]] Message tool(Content content, std::string tool_call_id, std::string id = {});
/// A RemoveMessage: applied through add_messages it deletes the message with this id, or every
/// earlier message when the id is kRemoveAllMessages. Thread-safe.
[[nodiscard]] Message remove_message(std::string id);

/// LangChain's flat JSON shape: `{"type": "human", "content": "...", "id": "..." | null, ...}`;
/// optional fields appear only when set. Thread-safe.
[[nodiscard]] nlohmann::json message_to_json(const Message& message);
/// A JSON array of messages in the flat shape. Thread-safe.
[[nodiscard]] nlohmann::json messages_to_json(std::span<const Message> messages);
/// Appends the CBOR of message_to_json(message) to `out` (json::from_cbor() of it equals
/// message_to_json(message)) without building the JSON: how checkpoints store messages.
/// Thread-safe.
void message_to_cbor(const Message& message, std::vector<std::uint8_t>& out);
void message_to_cbor(const Message& message, std::string& out);

/// Builds a message from a message-like, as LangChain's `convert_to_messages` does: a string
/// (a human message), a `[role, content]` pair, an object with `role` or `type` and `content`
/// (plus id, name, tool_calls (LangChain or OpenAI form), tool_call_id, additional_kwargs,
/// response_metadata, usage_metadata; other keys go to additional_kwargs), LangChain's
/// `{"type", "data"}` storage form, or its `{"lc": 1, "type": "constructor"}` form.
/// Throws sg::Error (code "message.invalid") saying what is wrong. Thread-safe.
[[nodiscard]] Message message_from_json(const nlohmann::json& value);
/// A list of message-likes, or a single one (a one-element list). Errors name the index.
/// Throws sg::Error (code "message.invalid"). Thread-safe.
[[nodiscard]] std::vector<Message> messages_from_json(const nlohmann::json& value);

/// nlohmann::json adapters: `nlohmann::json j = message;` and `j.get<sg::Message>()`.
void to_json(nlohmann::json& j, const Message& message);
void from_json(const nlohmann::json& j, Message& message);
void to_json(nlohmann::json& j, MessageType type);
void from_json(const nlohmann::json& j, MessageType& type);

}  // namespace sg
