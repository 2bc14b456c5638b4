// SPDX-License-Identifier: MIT
#include "webhook.hpp"

#include <curl/curl.h>

#include <memory>

namespace sg::server {

namespace {

/// curl's global state, made once (curl_global_init is not thread-safe before 7.84).
bool curl_ready() {
  static const bool ready = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  return ready;
}

std::size_t discard(char* /*data*/, std::size_t size, std::size_t count, void* /*user*/) {
  return size * count;
}

/// POSTs `body`; whether the receiver answered 2xx.
bool post(const std::string& url, const std::string& body, const std::string& api_key) {
  if (!curl_ready()) return false;
  const std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> easy(curl_easy_init(),
                                                                 &curl_easy_cleanup);
  if (!easy) return false;
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  if (!api_key.empty()) {
    headers = curl_slist_append(headers, ("x-api-key: " + api_key).c_str());
  }
  const std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_list(
      headers, &curl_slist_free_all);
  CURL* e = easy.get();
  curl_easy_setopt(e, CURLOPT_URL, url.c_str());
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &discard);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  if (curl_easy_perform(e) != CURLE_OK) return false;
  long status = 0;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
  return status >= 200 && status < 300;
}

}  // namespace

bool valid_webhook(std::string_view url) {
  if (url.starts_with("/")) return !url.starts_with("//");
  for (const std::string_view scheme : {"http://", "https://"}) {
    if (url.starts_with(scheme) && url.size() > scheme.size()) return true;
  }
  return false;
}

WebhookSender::~WebhookSender() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    queue_.clear();
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void WebhookSender::set_self(std::string base_url, std::string api_key) {
  std::lock_guard lock(mu_);
  self_url_ = std::move(base_url);
  api_key_ = std::move(api_key);
}

void WebhookSender::send(std::string url, std::string body) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    queue_.push_back({std::move(url), std::move(body)});
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  wake_.notify_one();
}

std::size_t WebhookSender::sent() const {
  std::lock_guard lock(mu_);
  return sent_;
}

std::size_t WebhookSender::failed() const {
  std::lock_guard lock(mu_);
  return failed_;
}

void WebhookSender::loop() {
  std::unique_lock lock(mu_);
  while (true) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Post next = std::move(queue_.front());
    queue_.pop_front();
    // A path is this server's own: its address and key (never sent elsewhere).
    const bool own = next.url.starts_with("/");
    const std::string url = own ? self_url_ + next.url : next.url;
    const std::string key = own ? api_key_ : std::string();
    lock.unlock();
    const bool ok = !url.starts_with("/") && post(url, next.body, key);
    lock.lock();
    ++sent_;
    if (!ok) ++failed_;
  }
}

}  // namespace sg::server
