// SPDX-License-Identifier: MIT
#include "http_call.hpp"

#include <stategraph/core/log.hpp>

#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>

#include "text.hpp"

// g++ 12 wrongly reports awaitable frames freed by the frame's own operator delete as mismatched
// (GCC bug 109224).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace sg::detail {
namespace net = boost::asio;
using nlohmann::json;

namespace {

using models_detail::lower;

std::chrono::milliseconds jittered_backoff(const HttpCallSettings& settings, int attempt) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  double cap = static_cast<double>(settings.backoff_initial.count());
  for (int i = 0; i < attempt && cap < static_cast<double>(settings.backoff_max.count()); ++i) {
    cap *= 2;
  }
  cap = std::min(cap, static_cast<double>(settings.backoff_max.count()));
  if (cap <= 0) return std::chrono::milliseconds(0);
  std::uniform_real_distribution<double> uniform(0.0, cap);
  return std::chrono::milliseconds(static_cast<std::int64_t>(uniform(rng)));
}

/// Aborts a transfer that is still running when the attempt ends early (an exception, a stream
/// that reported an error).
struct AbortGuard {
  AbortGuard(std::shared_ptr<CurlMulti> m, std::shared_ptr<HttpTransfer> t)
      : multi(std::move(m)), transfer(std::move(t)) {}
  std::shared_ptr<CurlMulti> multi;
  std::shared_ptr<HttpTransfer> transfer;
  bool ended = false;
  AbortGuard(const AbortGuard&) = delete;
  AbortGuard& operator=(const AbortGuard&) = delete;
  ~AbortGuard() {
    if (!ended) multi->cancel(transfer);
  }
};

std::string describe_ms(std::chrono::milliseconds d) {
  return std::to_string(d.count()) + " ms";
}

bool default_retryable(int status, std::string_view /*body*/) {
  return status == 429 || status >= 500;
}

std::string string_member(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

void check_call_settings(const HttpCallSettings& settings, std::string_view config_name) {
  if (settings.max_retries < 0) {
    throw ModelError(errc::kModelConfig, std::string(config_name) + "::max_retries is negative");
  }
  if (settings.connect_timeout.count() < 0 || settings.total_timeout.count() < 0 ||
      settings.idle_timeout.count() < 0) {
    throw ModelError(errc::kModelConfig, std::string(config_name) + " has a negative timeout");
  }
}

std::string checked_base_url(const std::string& base_url, std::string_view config_name,
                             std::string_view env_name, std::string* host_out) {
  const std::string config(config_name);
  std::string url = base_url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.empty()) {
    throw ModelError(errc::kModelConfig, config + " has no base_url (set it, or " +
                                             std::string(env_name) + " for from_env())");
  }
  const std::string lowered = lower(url);
  std::size_t host_start = 0;
  if (lowered.starts_with("http://")) {
    host_start = 7;
  } else if (lowered.starts_with("https://")) {
    host_start = 8;
  } else {
    throw ModelError(errc::kModelConfig,
                     config + "::base_url '" + base_url + "' is not an http:// or https:// URL");
  }
  const std::size_t host_end = lowered.find_first_of(":/?#", host_start);
  const std::string host = lowered.substr(
      host_start, host_end == std::string::npos ? std::string::npos : host_end - host_start);
  const bool bad_char = std::any_of(host.begin(), host.end(), [](char c) {
    return std::isspace(static_cast<unsigned char>(c)) || c == '@' || c == '\\';
  });
  if (host.empty() || bad_char || url.find_first_of(" \t\r\n") != std::string::npos) {
    throw ModelError(errc::kModelConfig,
                     config + "::base_url '" + base_url + "' has no valid host");
  }
  if (host_end != std::string::npos && lowered[host_end] == ':') {
    const std::size_t port_end = lowered.find_first_of("/?#", host_end + 1);
    const std::string port = lowered.substr(
        host_end + 1, port_end == std::string::npos ? std::string::npos : port_end - host_end - 1);
    const bool digits =
        !port.empty() && port.size() <= 5 && std::all_of(port.begin(), port.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        });
    if (!digits || std::stoi(port) > 65535) {
      throw ModelError(errc::kModelConfig,
                       config + "::base_url '" + base_url + "' has an invalid port");
    }
  }
  if (host_out) *host_out = host;
  return url;
}

HttpRequestSpec json_post(const HttpCallSettings& settings, std::string url, std::string body,
                          bool stream) {
  HttpRequestSpec spec;
  spec.url = std::move(url);
  spec.body = std::move(body);
  spec.headers = {"Content-Type: application/json",
                  stream ? "Accept: text/event-stream" : "Accept: application/json",
                  "User-Agent: stategraph", "Expect:"};
  spec.connect_timeout = settings.connect_timeout;
  spec.total_timeout = settings.total_timeout;
  spec.idle_timeout = settings.idle_timeout;
  return spec;
}

net::awaitable<std::string> post_with_retries(HttpCall call) {
  const HttpCallSettings& settings = *call.settings;
  const HttpRequestSpec& spec = *call.spec;
  StreamSink* const sink = call.sink;
  const auto retryable_status = call.retryable ? call.retryable : &default_retryable;
  const auto message_of = call.error_message ? call.error_message : &error_message_of;
  const auto executor = co_await net::this_coro::executor;
  net::execution_context& context = net::query(executor, net::execution::context);
  const std::shared_ptr<CurlMulti> multi = CurlMulti::of(context);
  std::chrono::milliseconds delay{0};
  for (int attempt = 0;; ++attempt) {
    if (call.first.cancelled() || call.second.cancelled())
      throw CancelledError("the model call was cancelled");
    if (sink) sink->reset();
    auto transfer = std::make_shared<HttpTransfer>(spec);
    multi->start(transfer, delay);
    AbortGuard guard(multi, transfer);
    CancellationToken::Subscription on_first =
        call.first.on_cancel([multi, transfer] { multi->cancel(transfer); });
    CancellationToken::Subscription on_second =
        call.second.on_cancel([multi, transfer] { multi->cancel(transfer); });

    std::string body;  // the reply when it is not streamed into `sink`
    HttpProgress progress;
    std::optional<ModelError> stream_error;  // an error the stream reported, before delivery
    for (;;) {
      co_await transfer->wait();
      progress = transfer->take();
      if (!progress.data.empty()) {
        if (sink && progress.status >= 200 && progress.status < 300) {
          try {
            sink->feed(progress.data);
          } catch (const ModelError& e) {
            const bool again = e.code() == errc::kModelHttpStatus && !sink->delivered() &&
                               retryable_status(e.http_status(), e.body_excerpt());
            if (!again) throw;
            stream_error.emplace(e);
            break;  // the guard aborts the rest of the transfer
          }
        } else {
          body += progress.data;
        }
      }
      if (progress.end != TransferEnd::none) break;
    }
    if (!stream_error) guard.ended = true;
    on_first.reset();
    on_second.reset();

    const std::string where = std::string(call.what) + " (" + spec.url + ")";
    std::optional<ModelError> error;
    bool retryable = false;
    if (stream_error) {
      error = std::move(stream_error);
      retryable = true;
    } else {
      switch (progress.end) {
        case TransferEnd::cancelled:
          throw CancelledError("the model call was cancelled");
        case TransferEnd::timeout:
          throw ModelError(errc::kModelTimeout,
                           where + ": " + progress.error + " (connect timeout " +
                               describe_ms(spec.connect_timeout) + ", total timeout " +
                               describe_ms(spec.total_timeout) + ")");
        case TransferEnd::idle_timeout:
          throw ModelError(errc::kModelTimeout, where + ": idle timeout, " + progress.error);
        case TransferEnd::failed:
          throw ModelError(errc::kModelConnection, where + ": " + progress.error);
        case TransferEnd::connection:
          error.emplace(errc::kModelConnection, where + ": " + progress.error);
          retryable = !(sink && sink->delivered());
          break;
        case TransferEnd::none:
        case TransferEnd::complete:
          if (progress.status >= 200 && progress.status < 300) {
            if (!sink) co_return body;
            if (sink->complete()) co_return std::string();
            if (sink->delivered()) {
              throw ModelError(errc::kModelConnection,
                               where + ": the event stream ended before " + sink->end_event());
            }
            throw ModelError(errc::kModelInvalidResponse,
                             where + ": the reply is not an event stream of " +
                                 sink->events_name() + ": " + excerpt(sink->start(), 200));
          } else {
            const std::string message = message_of(body);
            error.emplace(errc::kModelHttpStatus,
                          where + ": HTTP " + std::to_string(progress.status) +
                              (message.empty() ? std::string() : ": " + message),
                          progress.status, excerpt(body));
            retryable = retryable_status(progress.status, body);
          }
          break;
      }
    }
    if (!retryable || attempt >= settings.max_retries) throw *error;
    const std::optional<std::chrono::milliseconds> asked =
        !stream_error && progress.status != 0 ? retry_after(progress.headers, std::time(nullptr))
                                              : std::nullopt;
    delay =
        asked ? std::min(*asked, settings.retry_after_max) : jittered_backoff(settings, attempt);
    log(LogLevel::warn, "model request retried",
        {{"url", url_for_log(spec.url)},
         {"attempt", attempt + 2},
         {"status", error->http_status() != 0 ? error->http_status() : progress.status},
         {"delay_ms", delay.count()},
         {"error", error->what()}});
  }
}

json parse_json_reply(const std::string& body, const char* what) {
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    throw ModelError(errc::kModelInvalidResponse,
                     std::string(what) + ": the reply is not JSON: " + excerpt(body, 200), 0,
                     excerpt(body));
  }
  return parsed;
}

std::string excerpt(std::string_view body, std::size_t limit) {
  if (body.size() <= limit) return std::string(body);
  std::size_t end = limit;
  // Do not cut a UTF-8 sequence: back up over continuation bytes.
  while (end > 0 && (static_cast<unsigned char>(body[end]) & 0xC0U) == 0x80U) --end;
  return std::string(body.substr(0, end));
}

std::string error_message_of(std::string_view body) {
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return {};
  const auto error = j.find("error");
  if (error != j.end()) {
    if (error->is_string()) return error->get<std::string>();
    if (error->is_object()) return string_member(*error, "message");
  }
  return string_member(j, "message");
}

std::optional<std::chrono::milliseconds> retry_after(
    const std::vector<std::pair<std::string, std::string>>& headers, std::time_t now) {
  auto find = [&](std::string_view name) -> const std::string* {
    for (const auto& [k, v] : headers) {
      if (k == name) return &v;
    }
    return nullptr;
  };
  auto number = [](const std::string& text) -> std::optional<double> {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    while (end && *end && std::isspace(static_cast<unsigned char>(*end))) ++end;
    if (end == text.c_str() || (end && *end) || !std::isfinite(v) || v < 0) return std::nullopt;
    return v;
  };
  if (const std::string* ms = find("retry-after-ms")) {
    if (auto v = number(*ms)) return std::chrono::milliseconds(static_cast<std::int64_t>(*v));
  }
  if (const std::string* value = find("retry-after")) {
    if (auto v = number(*value)) {
      return std::chrono::milliseconds(static_cast<std::int64_t>(*v * 1000.0));
    }
    const std::time_t when = curl_getdate(value->c_str(), nullptr);
    if (when >= 0) {
      return std::chrono::milliseconds(when > now ? static_cast<std::int64_t>(when - now) * 1000
                                                  : 0);
    }
  }
  return std::nullopt;
}

std::string url_for_log(const std::string& url) {
  std::string out = url.substr(0, url.find_first_of("?#"));
  const std::size_t scheme = out.find("://");
  const std::size_t host = scheme == std::string::npos ? 0 : scheme + 3;
  const std::size_t at = out.find('@', host);
  if (at != std::string::npos && at < out.find('/', host)) out.erase(host, at + 1 - host);
  return out;
}

ThreadIo& thread_io() {
  thread_local ThreadIo local;
  return local;
}

}  // namespace sg::detail
