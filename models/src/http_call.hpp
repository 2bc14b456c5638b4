// SPDX-License-Identifier: MIT
#pragma once
// What the HTTP model clients (openai.cpp, anthropic.cpp) share: the request loop with retries,
// backoff, Retry-After and cancellation on CurlMulti; blocking calls on an io_context kept per
// thread; base URLs, error bodies and excerpts. (Their streams are parsed by sse.hpp.) Private to
// the models module.

#include <stategraph/models/chat_model.hpp>  // first: <utility> before Asio's awaitable

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <ctime>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "curl_multi.hpp"

namespace sg::detail {

/// The timeouts and the retry policy of a provider's configuration (see OpenAIConfig).
struct HttpCallSettings {
  std::chrono::milliseconds connect_timeout{0};
  std::chrono::milliseconds total_timeout{0};
  std::chrono::milliseconds idle_timeout{0};
  int max_retries = 0;
  std::chrono::milliseconds backoff_initial{0};
  std::chrono::milliseconds backoff_max{0};
  std::chrono::milliseconds retry_after_max{0};
};

/// The settings of a configuration that has these fields (OpenAIConfig, AnthropicConfig).
template <class Config>
[[nodiscard]] HttpCallSettings call_settings_of(const Config& config) {
  return {config.connect_timeout, config.total_timeout, config.idle_timeout,   config.max_retries,
          config.backoff_initial, config.backoff_max,   config.retry_after_max};
}

/// Throws ModelError (kModelConfig) naming `config_name` for a negative retry count or timeout.
void check_call_settings(const HttpCallSettings& settings, std::string_view config_name);

/// `base_url` without trailing slashes; its host (lower-case) goes to `*host` when given.
/// Throws ModelError (kModelConfig) naming `config_name` (and `env_name`, what from_env reads)
/// when it is empty or not http(s)://host[:port]...
[[nodiscard]] std::string checked_base_url(const std::string& base_url,
                                           std::string_view config_name, std::string_view env_name,
                                           std::string* host = nullptr);

/// A JSON POST to `url` with the settings' timeouts and the headers every provider sends
/// (Content-Type, Accept (an event stream when `stream`), User-Agent); the provider adds its own.
[[nodiscard]] HttpRequestSpec json_post(const HttpCallSettings& settings, std::string url,
                                        std::string body, bool stream);

/// Receives the body of a successful streamed reply as it arrives.
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  /// Forgets a previous attempt (nothing of it was delivered).
  virtual void reset() = 0;
  /// Takes the next bytes of the body. May throw ModelError: kModelInvalidResponse for bytes
  /// that are not the wire format, kModelHttpStatus for an error the stream reports (retried as
  /// that status would be while nothing was delivered).
  virtual void feed(std::string_view bytes) = 0;
  /// True once something reached the caller: the call can no longer be retried.
  [[nodiscard]] virtual bool delivered() const = 0;
  /// True once the stream said it is over.
  [[nodiscard]] virtual bool complete() const = 0;
  /// The first bytes of the stream, for error messages.
  [[nodiscard]] virtual const std::string& start() const = 0;
  /// What the stream is made of, for error messages ("chat completion chunks").
  [[nodiscard]] virtual const char* events_name() const = 0;
  /// The event that ends the stream, for error messages ("[DONE]").
  [[nodiscard]] virtual const char* end_event() const = 0;
};

/// One POST with retries, as a provider describes it.
struct HttpCall {
  const HttpCallSettings* settings = nullptr;
  const HttpRequestSpec* spec = nullptr;
  /// Where a 2xx body streams to; null: the body is returned.
  StreamSink* sink = nullptr;
  /// Either token cancels the call.
  CancellationToken first{};
  CancellationToken second{};
  /// The API's name in error messages ("chat completions").
  const char* what = "";
  /// Whether a non-2xx reply with this status and body may be retried; null: 429 and 5xx.
  bool (*retryable)(int status, std::string_view body) = nullptr;
  /// The message of an error body; null: error_message_of.
  std::string (*error_message)(std::string_view body) = nullptr;
};

/// POSTs `call.spec` with retries: retryable statuses (see HttpCall::retryable) and connection
/// errors, waiting with exponential backoff and full jitter or the server's Retry-After (at most
/// retry_after_max); never once a streamed chunk reached the caller, never after a timeout.
/// Streams a 2xx body into `call.sink` when given, else returns it. Runs on the caller's
/// executor; throws ModelError (kModelHttpStatus, kModelConnection, kModelTimeout,
/// kModelInvalidResponse) or CancelledError.
[[nodiscard]] boost::asio::awaitable<std::string> post_with_retries(HttpCall call);

/// `body` parsed as JSON; throws ModelError (kModelInvalidResponse) quoting it, naming `what`.
[[nodiscard]] nlohmann::json parse_json_reply(const std::string& body, const char* what);

/// The error message of an error body (`{"error": {"message"}}`, `{"error": "..."}`,
/// `{"message"}`); empty when there is none.
[[nodiscard]] std::string error_message_of(std::string_view body);

/// The first bytes (at most `limit`) of a body, cut at a UTF-8 character boundary.
[[nodiscard]] std::string excerpt(std::string_view body, std::size_t limit = 500);

/// How long a reply asks to wait before retrying: `retry-after-ms` (milliseconds), or
/// `retry-after` in seconds or as an HTTP date (relative to `now`). Header names lower-case.
[[nodiscard]] std::optional<std::chrono::milliseconds> retry_after(
    const std::vector<std::pair<std::string, std::string>>& headers, std::time_t now);

/// `url` without what may hold a credential (its user info and query), for logs and messages.
[[nodiscard]] std::string url_for_log(const std::string& url);

/// The io_context of the calling thread's blocking calls (see run_blocking).
struct ThreadIo {
  std::unique_ptr<boost::asio::io_context> io;
  bool busy = false;
};

/// The calling thread's ThreadIo (one for every instantiation of run_blocking).
[[nodiscard]] ThreadIo& thread_io();

/// Runs `work` to its end on an io_context kept for the calling thread (its connections are
/// reused by the thread's next blocking call); on a fresh one when called from inside such a run
/// (a chunk handler calling a model). Rethrows what `work` throws.
template <class T>
T run_blocking(boost::asio::awaitable<T> work) {
  namespace net = boost::asio;
  ThreadIo& local = thread_io();
  std::unique_ptr<net::io_context> fresh;
  net::io_context* io = nullptr;
  if (local.busy) {
    fresh = std::make_unique<net::io_context>();
    io = fresh.get();
  } else {
    if (!local.io) local.io = std::make_unique<net::io_context>();
    io = local.io.get();
    local.busy = true;
  }
  struct Release {
    ThreadIo* local;
    bool owned;
    ~Release() {
      if (owned) local->busy = false;
    }
  } release{&local, fresh == nullptr};
  io->restart();
  std::optional<T> result;
  std::exception_ptr error;
  bool done = false;
  net::co_spawn(*io, std::move(work), [&](std::exception_ptr e, T value) {
    error = e;
    if (!e) result = std::move(value);
    done = true;
  });
  while (!done && io->run_one() > 0) {
  }
  if (error) std::rethrow_exception(error);
  if (!result) throw ModelError(errc::kModelConnection, "the model call did not complete");
  return std::move(*result);
}

}  // namespace sg::detail
