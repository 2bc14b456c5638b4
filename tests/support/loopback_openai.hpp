// SPDX-License-Identifier: MIT
#pragma once
// A loopback server that speaks OpenAI's HTTP API (chat completions as JSON or SSE, embeddings),
// for the model client's tests and the benchmarks. It listens on 127.0.0.1 (port 0: a free
// port) and serves every connection asynchronously on one or a few threads (Boost.Beast).
//
//   sg::testing::LoopbackOpenAI server;                  // echo assistant by default
//   server.push(sg::testing::LoopbackReply::error(429, "slow down", {{"Retry-After", "1"}}));
//   sg::OpenAIConfig config{.base_url = server.base_url(), .api_key = "k"};
//
// What it answers, in order: `GET .../stats` and `POST .../stats/reset` (the request counters
// below, as JSON), the next queued reply (push), else the handler's reply (set_handler, when it
// returns one), else the default: a deterministic echo assistant ("echo: <last user message>",
// streamed word by word with a usage chunk when the request asks to stream; with
// LoopbackOptions::call_tool, first a call of that tool) and deterministic embeddings of the
// requested dimensions. Every request is recorded unless LoopbackOptions::record_requests is
// false. All member functions are thread-safe.

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sg::testing {

/// One request as the server received it. Header names are lower-case.
struct LoopbackRequest {
  std::string method{};
  std::string target{};
  std::vector<std::pair<std::string, std::string>> headers{};
  std::string body{};

  /// The value of header `name` (case-insensitive); "" when absent.
  [[nodiscard]] std::string header(std::string_view name) const;
  /// The body parsed as JSON; null when it is not JSON.
  [[nodiscard]] nlohmann::json json() const;
};

/// What the server answers to one request.
struct LoopbackReply {
  int status = 200;
  /// Extra response headers (e.g. {"Retry-After", "1"}).
  std::vector<std::pair<std::string, std::string>> headers{};
  /// The body of a plain reply (Content-Type application/json unless a header says otherwise).
  std::string body{};
  /// True: a chunked text/event-stream reply made of `chunks`, each written verbatim as one
  /// HTTP chunk (use sse() to build `data: ...` frames).
  bool stream = false;
  std::vector<std::string> chunks{};
  /// Wait this long before sending the status line.
  std::chrono::milliseconds delay{0};
  /// Wait this long between two chunks of a stream (0: all chunks in one write).
  std::chrono::milliseconds gap{0};
  /// Close the connection instead of answering.
  bool drop_before_answer = false;
  /// Close the connection after this many chunks of a stream, without ending it (-1: never).
  int drop_after_chunks = -1;

  /// A JSON body with a status.
  [[nodiscard]] static LoopbackReply json(const nlohmann::json& body, int status = 200);
  /// A chat completion (model "loopback") whose assistant message says `content`.
  [[nodiscard]] static LoopbackReply text(const std::string& content);
  /// A chat completion (model "loopback") whose assistant message calls `calls`, {name,
  /// arguments object} pairs with ids call_0, call_1, ... (finish_reason tool_calls).
  [[nodiscard]] static LoopbackReply tool_calls(
      const std::vector<std::pair<std::string, nlohmann::json>>& calls);
  /// OpenAI's error body `{"error": {"message", "type", "code"}}` with a status and headers.
  [[nodiscard]] static LoopbackReply error(
      int status, const std::string& message,
      std::vector<std::pair<std::string, std::string>> headers = {});
  /// An SSE stream: one `data: <event>\n\n` chunk per event, then `data: [DONE]\n\n` when
  /// `done`.
  [[nodiscard]] static LoopbackReply sse(const std::vector<nlohmann::json>& events,
                                         bool done = true);
  /// A stream of raw chunks (e.g. malformed SSE).
  [[nodiscard]] static LoopbackReply raw_stream(std::vector<std::string> chunks);
  /// A connection closed before any answer.
  [[nodiscard]] static LoopbackReply dropped();
};

/// Chooses the reply to a request; std::nullopt: use the default behaviour.
using LoopbackHandler = std::function<std::optional<LoopbackReply>(const LoopbackRequest&)>;

/// Settings of a LoopbackOpenAI.
struct LoopbackOptions {
  /// 0: a free port.
  std::uint16_t port = 0;
  /// Threads serving connections.
  int threads = 1;
  /// Default chat replies wait this long before answering (a client that closes the
  /// connection meanwhile gets nothing: LoopbackStats::aborted).
  std::chrono::milliseconds delay{0};
  /// Default chat replies: 0: echo the last user message (streamed word by word); K > 0: K
  /// content chunks ("tok1 ", "tok2 ", ...), one SSE event each when streaming.
  int chunks = 0;
  /// Not empty: a default chat reply to a request that offers this tool and has no tool result
  /// after its last user message calls it with `tool_args` (an agent's first model call); the
  /// reply after the tool result is the echo.
  std::string call_tool{};
  nlohmann::json tool_args = nlohmann::json::object();
  /// False: requests are counted but not kept (requests() is empty), so that a long benchmark
  /// holds no memory for them.
  bool record_requests = true;
};

/// The server's request counters (GET .../stats).
struct LoopbackStats {
  /// Requests received.
  std::size_t requests = 0;
  /// Requests received and not yet answered in full (or dropped).
  std::size_t in_flight = 0;
  /// The most in flight at once since the start or the last reset_max_in_flight().
  std::size_t max_in_flight = 0;
  /// Requests whose client closed the connection while the server waited (a cancelled call).
  std::size_t aborted = 0;
};

/// The server. Starts listening in the constructor, stops (closing every connection) in the
/// destructor. Thread-safe.
class LoopbackOpenAI {
 public:
  LoopbackOpenAI();
  explicit LoopbackOpenAI(LoopbackOptions options);
  ~LoopbackOpenAI();
  LoopbackOpenAI(const LoopbackOpenAI&) = delete;
  LoopbackOpenAI& operator=(const LoopbackOpenAI&) = delete;

  [[nodiscard]] std::uint16_t port() const;
  /// "http://127.0.0.1:PORT/v1".
  [[nodiscard]] std::string base_url() const;

  /// Queues a reply for the next request (replies are used in order, each once).
  void push(LoopbackReply reply);
  /// Sets the handler consulted when the queue is empty.
  void set_handler(LoopbackHandler handler);
  /// Every request received so far, in arrival order.
  [[nodiscard]] std::vector<LoopbackRequest> requests() const;
  [[nodiscard]] std::size_t request_count() const;
  /// Connections accepted so far.
  [[nodiscard]] std::size_t connection_count() const;
  /// The request counters now.
  [[nodiscard]] LoopbackStats stats() const;
  /// Starts max_in_flight again from the requests in flight now (also POST .../stats/reset).
  void reset_max_in_flight();

  /// The default reply to a request (echo chat completion or embeddings).
  [[nodiscard]] LoopbackReply default_reply(const LoopbackRequest& request) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The echo assistant's chat completion for a request body (`id` is the completion's id).
[[nodiscard]] nlohmann::json echo_completion(const nlohmann::json& request, const std::string& id);
/// The same reply as chat.completion.chunk events: a role event, one event per word, a
/// finish_reason event and a usage event (choices: []).
[[nodiscard]] std::vector<nlohmann::json> echo_completion_chunks(const nlohmann::json& request,
                                                                 const std::string& id);
/// A chat completion calling tool `name` with `args` (id "call_" + `id`), and the same as
/// chat.completion.chunk events.
[[nodiscard]] nlohmann::json tool_call_completion(const nlohmann::json& request,
                                                  const std::string& id, const std::string& name,
                                                  const nlohmann::json& args);
[[nodiscard]] std::vector<nlohmann::json> tool_call_chunks(const nlohmann::json& request,
                                                           const std::string& id,
                                                           const std::string& name,
                                                           const nlohmann::json& args);
/// The deterministic embedding of `text` with `dims` numbers (unit length).
[[nodiscard]] std::vector<float> loopback_embedding(std::string_view text, std::size_t dims);

}  // namespace sg::testing
