// SPDX-License-Identifier: MIT
#pragma once
// HTTP requests on curl's multi interface, driven by a Boost.Asio execution context.
//
// Why hand-written: libcurl has no Asio binding. Its multi interface can run many transfers on
// one thread if someone tells it when its sockets are ready and when its timeout expires
// (CURLMOPT_SOCKETFUNCTION, CURLMOPT_TIMERFUNCTION); this file is that someone, built on Asio's
// reactor: one multi handle per execution context (an Asio service), curl's sockets watched
// through stream_descriptor waits (released, never closed, by Asio: curl owns them), its timeout
// as a steady_timer, everything touching the multi handle serialized by one mutex (the context
// may run on several threads). A waiting request therefore holds no thread, and requests on one
// context share connections.

#include <stategraph/models/chat_model.hpp>  // first: <utility> before Asio's awaitable

#include <boost/asio/awaitable.hpp>
#include <boost/asio/execution_context.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <utility>  // before Boost.Asio's awaitable headers (Boost 1.74 omits it)
#include <vector>

namespace sg::detail {

/// What to send.
struct HttpRequestSpec {
  std::string url{};
  /// "Name: value" lines.
  std::vector<std::string> headers{};
  /// POSTed when not empty (a GET otherwise).
  std::string body{};
  /// Another method (e.g. "DELETE"); empty: POST with a body, GET without.
  std::string method{};
  std::chrono::milliseconds connect_timeout{0};  // 0: none
  std::chrono::milliseconds total_timeout{0};
  std::chrono::milliseconds idle_timeout{0};
};

/// Why a transfer ended.
enum class TransferEnd {
  none,          // not ended yet
  complete,      // the whole reply arrived (any HTTP status)
  connection,    // no connection, or it broke (retryable)
  failed,        // another curl error (not retryable)
  timeout,       // the connect or total timeout
  idle_timeout,  // no byte for idle_timeout
  cancelled,     // cancel() was called
};

/// What a transfer has produced since the last take().
struct HttpProgress {
  /// Bytes of the body received since the last take().
  std::string data{};
  /// The HTTP status once the headers arrived (0 before).
  int status = 0;
  TransferEnd end = TransferEnd::none;
  /// curl's message for an error end.
  std::string error{};
  /// The response headers (names lower-case), filled once the header block of the final response
  /// arrived (a wait() wakes then), so before the body of a long stream.
  std::vector<std::pair<std::string, std::string>> headers{};
  /// True once `headers` holds the whole header block.
  bool headers_complete = false;
};

class AsioCurlMulti;

/// One HTTP request: created by the coroutine that waits for it, driven by a CurlMulti.
/// wait() and take() belong to that coroutine; cancel() may be called from any thread.
class HttpTransfer {
 public:
  explicit HttpTransfer(const HttpRequestSpec& spec);
  ~HttpTransfer();
  HttpTransfer(const HttpTransfer&) = delete;
  HttpTransfer& operator=(const HttpTransfer&) = delete;

  /// Resumes (on the caller's executor) once data arrived or the transfer ended since the last
  /// take(); at once if that already happened.
  boost::asio::awaitable<void> wait();
  /// Takes what arrived (see HttpProgress).
  HttpProgress take();

 private:
  friend class AsioCurlMulti;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A multi handle driven by an Asio execution context. Thread-safe.
class CurlMulti {
 public:
  /// The CurlMulti of `context` (created on first use, shut down with the context). `context`
  /// must be an io_context or a thread_pool, else ModelError (kModelConfig).
  static std::shared_ptr<CurlMulti> of(boost::asio::execution_context& context);

  virtual ~CurlMulti() = default;
  /// Starts `transfer` after `delay`. Any thread.
  virtual void start(const std::shared_ptr<HttpTransfer>& transfer,
                     std::chrono::milliseconds delay) = 0;
  /// Aborts `transfer` (it ends with TransferEnd::cancelled) unless it already ended. Any thread.
  virtual void cancel(const std::shared_ptr<HttpTransfer>& transfer) = 0;
};

}  // namespace sg::detail
