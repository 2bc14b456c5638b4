// SPDX-License-Identifier: MIT
#pragma once
// The Anthropic client: Claude models over the native Messages API (`POST /v1/messages`), JSON
// and SSE streaming, tool use, extended thinking and prompt caching. See docs/models.md.
//
//   sg::AnthropicChatModel model(sg::AnthropicConfig::from_env());
//   sg::Message reply = model.invoke({sg::system("Be brief."), sg::human("What is 2 + 2?")});
//
// It takes the same sg::Message lists as OpenAIChatModel (LangChain's message model): system
// messages become the top-level `system`, tool messages `tool_result` blocks, tool calls
// `tool_use` blocks. Requests run on the same asynchronous curl path as OpenAIChatModel's: an
// awaiting call (ainvoke, astream, a coroutine node) holds no thread while the server answers.

#include <stategraph/models/chat_model.hpp>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace sg {

/// Where and how to reach Anthropic's Messages API. Every duration of 0 means "no limit".
struct AnthropicConfig {
  /// The API root: requests go to `{base_url}/v1/messages` (`{base_url}/messages` when it
  /// already ends with "/v1").
  std::string base_url = "https://api.anthropic.com";
  /// Sent as the `x-api-key` header when not empty; required for api.anthropic.com.
  std::string api_key{};
  std::string model = "claude-sonnet-4-5";
  /// The `anthropic-version` header.
  std::string anthropic_version = "2023-06-01";
  /// `max_tokens` of every request (the API requires one) unless ChatOptions::max_tokens is set.
  int max_tokens = 4096;
  /// > 0: extended thinking with this budget (`thinking: {type: enabled, budget_tokens}`); at
  /// least 1024 and below the call's max_tokens. The reply's thinking blocks are kept in its
  /// content and sent back as they were in the next calls.
  int thinking_budget = 0;
  /// Extra request headers (name, value), e.g. {"anthropic-beta", "..."}.
  std::vector<std::pair<std::string, std::string>> headers{};
  /// Time to establish a connection.
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};
  /// Time for a whole attempt (request and reply).
  std::chrono::milliseconds total_timeout{std::chrono::seconds(600)};
  /// The longest silence (no byte received) within an attempt.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(300)};
  /// Further attempts after a 429, a 5xx (529: overloaded), an `overloaded_error` (also as a
  /// stream's first event) or a connection error; not after a timeout, and never once a
  /// streamed chunk was delivered.
  int max_retries = 3;
  /// Exponential backoff with full jitter: attempt n waits a random time in
  /// [0, min(backoff_max, backoff_initial * 2^n)].
  std::chrono::milliseconds backoff_initial{500};
  std::chrono::milliseconds backoff_max{std::chrono::seconds(8)};
  /// A server's retry-after (seconds, an HTTP date, or retry-after-ms) is honoured up to this.
  std::chrono::milliseconds retry_after_max{std::chrono::seconds(60)};

  /// The defaults above, with api_key from ANTHROPIC_API_KEY, base_url from ANTHROPIC_BASE_URL
  /// and model from STATEGRAPH_MODEL when they are set. Thread-safe (reads the environment).
  [[nodiscard]] static AnthropicConfig from_env();
};

/// A chat model served by Anthropic's Messages API. The constructor checks the configuration:
/// no base URL, a URL that is not http(s)://host..., no API key for api.anthropic.com, no model,
/// max_tokens < 1, a thinking budget under 1024 or not below max_tokens, a negative timeout or
/// retry count throw ModelError (errc::kModelConfig) before any request.
///
/// What maps to what (docs/models.md): leading system messages -> `system` (text blocks when one
/// carries cache_control); human -> user, ai -> assistant (tool calls -> `tool_use` blocks,
/// thinking blocks sent back as they were), tool -> a user message with a `tool_result` block
/// (`is_error` for status "error"); consecutive messages of one role are merged. A content block
/// with "cache_control", or a message whose additional_kwargs has "cache_control" (applied to
/// its last block), marks a prompt-caching breakpoint. ChatOptions::response_format is answered
/// by a forced tool call whose input becomes the reply's text (read it with
/// sg::parse_structured), as LangChain's ChatAnthropic does.
///
/// The reply: content a string for a plain text answer, else Anthropic's blocks (text,
/// thinking, redacted_thinking, tool_use, and server tools' server_tool_use and result blocks,
/// which are sent back as they came); tool_calls from the tool_use blocks;
/// usage_metadata with input_tokens counting cached ones and input_token_details {cache_read,
/// cache_creation}; response_metadata {model_name, model, stop_reason, stop_sequence,
/// finish_reason (the stop_reason)}; the message id.
///
/// Calls throw ModelError (kModelHttpStatus with the status and a body excerpt, also for an
/// `error` event of a stream (with the status its type stands for: overloaded_error 529,
/// api_error 500, ...), kModelConnection, kModelTimeout, kModelInvalidResponse) after the
/// retries allowed, CancelledError when cancelled (the request is aborted at once), and
/// sg::Error (errc::kInvalidArgument) for messages the API cannot take (a RemoveMessage, a
/// system message after the conversation started, an image that is neither a data URL nor an
/// http(s) URL). Immutable after construction; thread-safe: one model serves concurrent calls
/// on any executors.
class AnthropicChatModel final : public ChatModel {
 public:
  explicit AnthropicChatModel(AnthropicConfig config);

  /// The configured model name. Thread-safe.
  [[nodiscard]] std::string model_name() const override { return config_.model; }
  /// "anthropic" (LangChain's ls_provider for ChatAnthropic). Thread-safe.
  [[nodiscard]] std::string provider() const override { return "anthropic"; }
  /// The configuration as given. Thread-safe.
  [[nodiscard]] const AnthropicConfig& config() const noexcept { return config_; }

 protected:
  [[nodiscard]] boost::asio::awaitable<Message> agenerate(Request request) const override;
  /// Blocking calls run on an io_context kept per calling thread, so that the blocking calls of
  /// one thread reuse their connections.
  [[nodiscard]] Message generate(const Request& request) const override;

 private:
  AnthropicConfig config_;
  std::string endpoint_;
};

}  // namespace sg
