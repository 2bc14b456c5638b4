// SPDX-License-Identifier: MIT
#pragma once
// A loopback server that speaks Anthropic's Messages API (`POST /v1/messages`, JSON or SSE), for
// the Anthropic client's tests. It runs on the loopback OpenAI server's HTTP machinery
// (LoopbackOpenAI with a handler), so scripted replies are queued the same way:
//
//   sg::testing::LoopbackAnthropic server;   // an echo assistant by default
//   server.push(sg::testing::anthropic_error(529, "overloaded_error", "Overloaded",
//                                            {{"retry-after", "1"}}));
//   sg::AnthropicConfig config{.base_url = server.base_url(), .api_key = "k"};
//
// Every request is checked as the API checks it (anthropic-version and x-api-key headers;
// model, max_tokens and messages; alternating user and assistant turns; non-empty text blocks;
// each tool_use answered by a tool_result, first in the next user turn, and no tool_result
// without its tool_use; server tools' server_tool_use and result blocks (web_search_tool_result,
// ...) only in assistant turns, with their fields and no others, each result after its
// server_tool_use; tools' names and object input schemas; tool_choice; the thinking budget)
// and refused with the API's 400 or 401 error body when it is wrong. The default reply to a
// valid request is "echo: <the last user text>" (with LoopbackAnthropicOptions::call_tool, first
// a tool_use of that tool), streamed event by event as the API streams (message_start, ping,
// content_block_start/delta/stop, message_delta, message_stop) when the request asks to stream.
// Default replies behave as the API does with extended thinking and prompt caching: with
// thinking enabled, a reply that starts an assistant turn (the last user turn is not tool
// results) starts with a thinking block whose signature the server checks when it comes back,
// and a final assistant turn with tool_use blocks must start with a thinking block; a request
// with cache_control breakpoints reports the words of its prefix (tools, system, messages up to
// the last breakpoint) as cache_creation_input_tokens the first time and as
// cache_read_input_tokens once a request had the same prefix (same model and thinking) before,
// with no minimum length and no expiry. Tokens are counted as words.
// All member functions are thread-safe.

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "support/loopback_openai.hpp"

namespace sg::testing {

/// Settings of a LoopbackAnthropic.
struct LoopbackAnthropicOptions {
  /// Default replies wait this long before answering.
  std::chrono::milliseconds delay{0};
  /// Not empty: the default reply to a request that offers this tool and has no tool_result
  /// after its last user text is a tool_use of it with `tool_args` (an agent's first call).
  std::string call_tool{};
  nlohmann::json tool_args = nlohmann::json::object();
  /// Threads serving connections.
  int threads = 1;
  /// 0: a free port.
  std::uint16_t port = 0;
  /// False: requests are counted but not kept (requests() is empty), for a long-running server.
  bool record_requests = true;
};

/// The server. Starts listening in the constructor, stops in the destructor.
class LoopbackAnthropic {
 public:
  LoopbackAnthropic();
  explicit LoopbackAnthropic(LoopbackAnthropicOptions options);
  ~LoopbackAnthropic();
  LoopbackAnthropic(const LoopbackAnthropic&) = delete;
  LoopbackAnthropic& operator=(const LoopbackAnthropic&) = delete;

  /// "http://127.0.0.1:PORT" (AnthropicConfig::base_url's form: requests go to /v1/messages).
  [[nodiscard]] std::string base_url() const;
  /// Queues a reply for the next request (replies are used in order, each once).
  void push(LoopbackReply reply);
  /// Every request received so far, in arrival order.
  [[nodiscard]] std::vector<LoopbackRequest> requests() const;
  [[nodiscard]] std::size_t request_count() const;
  /// The server underneath: stats(), connection_count().
  [[nodiscard]] LoopbackOpenAI& server();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// What is wrong with a Messages API request as the API would say it (empty: nothing).
[[nodiscard]] std::string anthropic_request_error(const LoopbackRequest& request);

/// A Message object: `{id, type: "message", role: "assistant", model, content, stop_reason,
/// stop_sequence: null, usage}`.
[[nodiscard]] nlohmann::json anthropic_message(const std::string& id, nlohmann::json content,
                                               const std::string& stop_reason, nlohmann::json usage,
                                               const std::string& model = "claude-loopback");
/// A JSON reply carrying `message`.
[[nodiscard]] LoopbackReply anthropic_json(const nlohmann::json& message);
/// The API's error body `{"type": "error", "error": {"type", "message"}, "request_id"}` with a
/// status and headers.
[[nodiscard]] LoopbackReply anthropic_error(
    int status, const std::string& type, const std::string& message,
    std::vector<std::pair<std::string, std::string>> headers = {});
/// The events the API streams for `message`: message_start (empty content, the input usage and
/// output_tokens 1), ping, per block content_block_start (text "", thinking "", tool_use with
/// input {}, server_tool_use with input {}, other blocks whole), its deltas (text and thinking in
/// pieces of `piece` characters, then a text's citations_delta events or a thinking's
/// signature_delta; tool and server tool input as
/// input_json_delta fragments of `piece` characters of its JSON text), content_block_stop;
/// message_delta (stop_reason, stop_sequence, usage with the output tokens and the input
/// counts) and message_stop.
[[nodiscard]] std::vector<nlohmann::json> anthropic_stream_events(const nlohmann::json& message,
                                                                  std::size_t piece = 4);
/// An SSE reply: each event as `event: <type>\ndata: <json>\n\n`, `per_chunk` events per HTTP
/// chunk (0: all in one).
[[nodiscard]] LoopbackReply anthropic_sse(const std::vector<nlohmann::json>& events,
                                          std::size_t per_chunk = 1);

}  // namespace sg::testing
