// SPDX-License-Identifier: MIT
#pragma once
// Chat models: the interface every model implements, its options and errors.
//
//   std::shared_ptr<sg::ChatModel> model = sg::default_chat_model();
//   sg::Message reply = model->invoke({sg::human("What is 2 + 2?")});
//
// Called inside a graph node, a model finds the node's run by itself (sg::current_context(),
// which coroutine nodes keep across co_await): when the run streams StreamMode::messages, the
// reply is streamed and every chunk reaches the run's stream with the node's name, step and
// namespace; the run's cancellation aborts the request. No extra code in the node.

#include <stategraph/core/error.hpp>
#include <stategraph/core/graph_types.hpp>
#include <stategraph/core/message.hpp>

#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>  // before Boost.Asio's awaitable headers (Boost 1.74 omits it)
#include <vector>

namespace sg {

namespace errc {
/// Bad model configuration (no base URL, a malformed URL, a missing key), before any request.
inline constexpr std::string_view kModelConfig = "model.config";
/// The server answered with a status that is not 2xx (after the retries allowed).
inline constexpr std::string_view kModelHttpStatus = "model.http_status";
/// No connection, or the connection broke (after the retries allowed).
inline constexpr std::string_view kModelConnection = "model.connection";
/// The connect, total or idle timeout passed.
inline constexpr std::string_view kModelTimeout = "model.timeout";
/// The server's answer is not the wire format (malformed JSON or SSE, missing fields).
inline constexpr std::string_view kModelInvalidResponse = "model.invalid_response";
}  // namespace errc

/// A model call that failed: code() is one of errc::kModel*; for kModelHttpStatus the HTTP
/// status and the start of the response body are kept. Thread-safe to read.
class ModelError : public Error {
 public:
  ModelError(std::string_view code, const std::string& message, int http_status = 0,
             std::string body_excerpt = {})
      : Error(code, message), http_status_(http_status), body_excerpt_(std::move(body_excerpt)) {}

  /// The HTTP status of the failed response; 0 when there was none.
  [[nodiscard]] int http_status() const noexcept { return http_status_; }
  /// The first bytes (at most 500) of the failed response's body.
  [[nodiscard]] const std::string& body_excerpt() const noexcept { return body_excerpt_; }

 private:
  int http_status_ = 0;
  std::string body_excerpt_;
};

/// A tool as a model sees it: its name, what it does, and a JSON schema of its arguments.
struct ToolSpec {
  std::string name{};
  std::string description{};
  nlohmann::json parameters = nlohmann::json::object();
};

/// Structured output: the reply's content is a JSON document matching `schema` (OpenAI's
/// `response_format: {type: "json_schema"}`).
struct ResponseFormat {
  std::string name = "response";
  nlohmann::json schema = nlohmann::json::object();
  bool strict = true;
};

/// Options of one model call.
struct ChatOptions {
  /// Tools the model may call.
  std::vector<ToolSpec> tools{};
  /// "" (the provider's default), "auto", "none", "required", or the name of one tool.
  std::string tool_choice{};
  std::optional<double> temperature{};
  std::optional<int> max_tokens{};
  std::vector<std::string> stop{};
  std::optional<ResponseFormat> response_format{};
  /// Aborts the call when cancelled, in addition to the run's token when called in a node.
  CancellationToken cancellation{};
};

/// Receives the chunks of a streamed reply, in order, on the thread driving the request.
using ChunkHandler = std::function<void(const MessageChunk&)>;

/// A chat model. invoke/stream block the calling thread; ainvoke/astream are awaitables for
/// coroutine nodes (they hold no thread while the model answers). All return the whole reply:
/// an ai message with content, tool_calls, invalid_tool_calls, usage_metadata and
/// response_metadata (`model_name`, `finish_reason`). They throw ModelError when the model
/// fails, CancelledError when the call or the run was cancelled, and sg::Error
/// (errc::kInvalidArgument) for messages a model cannot take. Implementations are thread-safe:
/// one model serves concurrent calls.
class ChatModel {
 public:
  virtual ~ChatModel() = default;

  [[nodiscard]] Message invoke(const std::vector<Message>& messages) const;
  [[nodiscard]] Message invoke(const std::vector<Message>& messages,
                               const ChatOptions& options) const;
  /// As invoke, and calls `on_chunk` with each piece of the reply as it arrives.
  Message stream(const std::vector<Message>& messages, const ChatOptions& options,
                 const ChunkHandler& on_chunk) const;
  [[nodiscard]] boost::asio::awaitable<Message> ainvoke(std::vector<Message> messages) const;
  [[nodiscard]] boost::asio::awaitable<Message> ainvoke(std::vector<Message> messages,
                                                        ChatOptions options) const;
  [[nodiscard]] boost::asio::awaitable<Message> astream(std::vector<Message> messages,
                                                        ChatOptions options,
                                                        ChunkHandler on_chunk) const;

  /// The model's name as reported in response_metadata, e.g. "gpt-4o-mini".
  [[nodiscard]] virtual std::string model_name() const = 0;
  /// The provider, for stream metadata (LangChain's ls_provider): "openai", "local", ...
  [[nodiscard]] virtual std::string provider() const = 0;

  /// What an implementation gets: the messages, the options, where chunks go (null: do not
  /// stream) and the cancellation to honour (the options' and the run's).
  struct Request {
    const std::vector<Message>* messages = nullptr;
    const ChatOptions* options = nullptr;
    const ChunkHandler* on_chunk = nullptr;
    CancellationToken run_cancellation{};
    /// The call's span in a run with callbacks (invalid otherwise): implementations that make
    /// HTTP requests send it as the W3C `traceparent` header.
    TraceContext trace{};
    /// True once either token was cancelled.
    [[nodiscard]] bool cancelled() const noexcept {
      return options->cancellation.cancelled() || run_cancellation.cancelled();
    }
  };

 protected:
  /// Produces the reply of `request` on the caller's executor, streaming chunks to
  /// `*request.on_chunk` when set. The pointed-to data outlives the call.
  [[nodiscard]] virtual boost::asio::awaitable<Message> agenerate(Request request) const = 0;
  /// The blocking form; the default runs agenerate on a private io_context on this thread.
  [[nodiscard]] virtual Message generate(const Request& request) const;

 private:
  Message call(const std::vector<Message>& messages, const ChatOptions& options,
               const ChunkHandler* on_chunk) const;
  boost::asio::awaitable<Message> acall(std::vector<Message> messages, ChatOptions options,
                                        ChunkHandler on_chunk, bool streaming) const;
};

/// Parses the reply of a call made with ChatOptions::response_format: its text as JSON.
/// Throws ModelError (errc::kModelInvalidResponse) quoting the text when it is not JSON.
/// Thread-safe.
[[nodiscard]] nlohmann::json parse_structured(const Message& reply);

}  // namespace sg
