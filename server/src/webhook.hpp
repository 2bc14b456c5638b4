// SPDX-License-Identifier: MIT
#pragma once
// Webhooks of runs (the `webhook` field of a run's create, stream or wait): once a run ends, its
// Run object, status, times and final values are POSTed as JSON to the URL, as the official
// servers do. A URL starting with "/" is a path of this server (sent with its API key).

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace sg::server {

/// Whether `url` can be a run's webhook: an http:// or https:// URL, or a path of this server
/// starting with "/". Thread-safe.
[[nodiscard]] bool valid_webhook(std::string_view url);

/// Sends webhook POSTs one at a time on a thread of its own (made at the first send), so that a
/// slow or dead receiver holds no run worker. Each POST gives up after 5 s without a connection
/// or 10 s in all, and is not retried. Thread-safe.
///
/// Hand-written on libcurl's easy interface: a fire-and-forget POST needs no Asio context, and
/// the models' multi-interface client (models/src/curl_multi.hpp) is internal to sg::models.
class WebhookSender {
 public:
  WebhookSender() = default;
  /// Sends what is queued no more: the POST in flight ends (within its timeouts), the others
  /// are dropped.
  ~WebhookSender();
  WebhookSender(const WebhookSender&) = delete;
  WebhookSender& operator=(const WebhookSender&) = delete;

  /// This server's own address ("http://HOST:PORT") and API key, for webhooks given as a path.
  void set_self(std::string base_url, std::string api_key);
  /// Queues a POST of `body` (JSON) to `url` (valid_webhook()).
  void send(std::string url, std::string body);
  /// How many POSTs were tried so far, and how many got no 2xx answer (for the tests and logs).
  [[nodiscard]] std::size_t sent() const;
  [[nodiscard]] std::size_t failed() const;

 private:
  struct Post {
    std::string url;
    std::string body;
  };
  void loop();

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Post> queue_;
  std::string self_url_;
  std::string api_key_;
  bool stopping_ = false;
  std::size_t sent_ = 0;
  std::size_t failed_ = 0;
  std::thread thread_;
};

}  // namespace sg::server
