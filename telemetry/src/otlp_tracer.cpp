// SPDX-License-Identifier: MIT
// OtlpTracer: the span queue and the exporter thread that encodes batches and posts them with
// libcurl's easy interface (one handle per tracer, so the connection to the collector is kept
// alive).

#include <stategraph/core/error.hpp>
#include <stategraph/core/log.hpp>
#include <stategraph/core/version.hpp>
#include <stategraph/telemetry/otlp.hpp>

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "telemetry_detail.hpp"

namespace sg {
namespace {

using Clock = std::chrono::steady_clock;
using detail::OtlpSpanRecord;

/// Answers kept from the collector at most (its error message, a partial success).
constexpr std::size_t kMaxResponseBody = 64 * 1024;
/// The longest wait before the one retry (a Retry-After beyond is cut to it).
constexpr std::chrono::milliseconds kMaxRetryDelay{5000};
constexpr std::chrono::milliseconds kDefaultRetryDelay{500};

void curl_init_once() {
  static const CURLcode result = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (result != CURLE_OK) {
    throw Error(errc::kInvalidArgument,
                std::string("curl_global_init failed: ") + curl_easy_strerror(result));
  }
}

/// What one POST got: the HTTP status (0: none), curl's error, the body and Retry-After.
struct PostResult {
  long status = 0;
  std::string error{};
  std::string body{};
  std::chrono::milliseconds retry_after{-1};
};

std::size_t collect_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* out = static_cast<PostResult*>(user);
  const std::size_t n = size * count;
  if (out->body.size() < kMaxResponseBody) {
    out->body.append(data, std::min(n, kMaxResponseBody - out->body.size()));
  }
  return n;
}

std::size_t collect_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto* out = static_cast<PostResult*>(user);
  const std::size_t n = size * count;
  std::string_view line(data, n);
  constexpr std::string_view kName = "retry-after:";
  if (line.size() > kName.size()) {
    std::string head(line.substr(0, kName.size()));
    std::transform(head.begin(), head.end(), head.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (head == kName) {
      line.remove_prefix(kName.size());
      std::int64_t seconds = 0;
      bool digits = false;
      for (const char c : line) {
        if (c >= '0' && c <= '9') {
          seconds = std::min<std::int64_t>(seconds * 10 + (c - '0'), 3600);
          digits = true;
        } else if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
          digits = false;  // an HTTP date: not followed
          break;
        }
      }
      if (digits) out->retry_after = std::chrono::seconds(seconds);
    }
  }
  return n;
}

bool retryable(long status) {
  return status == 429 || status == 502 || status == 503 || status == 504;
}

/// The rejected spans a 2xx answer reports (OTLP's partialSuccess), 0 when none.
std::uint64_t rejected_spans(const std::string& body, std::string& message) {
  if (body.empty()) return 0;
  const nlohmann::json reply = nlohmann::json::parse(body, nullptr, false);
  if (!reply.is_object()) return 0;
  const auto partial = reply.find("partialSuccess");
  if (partial == reply.end() || !partial->is_object()) return 0;
  if (const auto m = partial->find("errorMessage"); m != partial->end() && m->is_string()) {
    message = m->get<std::string>();
  }
  const auto rejected = partial->find("rejectedSpans");
  if (rejected == partial->end()) return 0;
  // int64 is a string in the JSON mapping; accept a number too.
  if (rejected->is_number_unsigned()) return rejected->get<std::uint64_t>();
  if (rejected->is_string()) {
    try {
      return std::stoull(rejected->get<std::string>());
    } catch (const std::exception&) {
      return 0;
    }
  }
  return 0;
}

/// The spans waiting, oldest first: a ring of records that grows up to the queue's limit and
/// keeps its slots, so that a push allocates nothing once the ring has grown. Not thread-safe
/// (the tracer's mutex guards it).
class SpanQueue {
 public:
  explicit SpanQueue(std::size_t limit) : limit_(limit) {}

  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }

  /// Appends `record`; the caller keeps size() under the limit. Throws std::bad_alloc when the
  /// ring grows (`record` is then left as it was).
  void push(OtlpSpanRecord&& record) {
    if (size_ == slots_.size()) grow();
    std::size_t at = head_ + size_;
    if (at >= slots_.size()) at -= slots_.size();
    slots_[at] = std::move(record);
    ++size_;
  }

  /// Moves the `n` oldest records (n <= size()) to the end of `out`. Throws std::bad_alloc when
  /// `out` grows (before any record moves).
  void take(std::size_t n, std::vector<OtlpSpanRecord>& out) {
    out.reserve(out.size() + n);
    for (; n > 0; --n) {
      out.push_back(std::move(slots_[head_]));
      if (++head_ == slots_.size()) head_ = 0;
      --size_;
    }
  }

  /// Empties the queue; returns how many records it held.
  std::size_t clear() noexcept {
    const std::size_t n = size_;
    for (; size_ > 0; --size_) {
      slots_[head_] = OtlpSpanRecord{};
      if (++head_ == slots_.size()) head_ = 0;
    }
    head_ = 0;
    return n;
  }

 private:
  void grow() {
    std::vector<OtlpSpanRecord> bigger(
        std::min(limit_, std::max<std::size_t>(kFirstSlots, 2 * slots_.size())));
    for (std::size_t i = 0; i < size_; ++i) {
      bigger[i] = std::move(slots_[(head_ + i) % slots_.size()]);
    }
    slots_ = std::move(bigger);
    head_ = 0;
  }

  static constexpr std::size_t kFirstSlots = 64;
  std::size_t limit_;
  std::vector<OtlpSpanRecord> slots_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace

struct OtlpTracer::Impl {
  OtlpOptions options;
  std::string body_prefix;

  mutable std::mutex mu;
  std::condition_variable wake;  // the exporter thread: spans, a flush, the stop
  std::condition_variable done;  // flush(): exports ended
  SpanQueue queue;
  std::uint64_t accepted = 0;      // spans queued so far
  std::uint64_t taken = 0;         // spans taken out of the queue for an export
  std::uint64_t finished = 0;      // spans whose export ended
  std::uint64_t flush_target = 0;  // send without waiting until `taken` reaches it
  bool stopping = false;
  bool logged_drop = false;
  OtlpExportStats stats;
  std::atomic<std::uint64_t> not_sampled{0};
  /// Set when the destructor gives up waiting: the request in flight is aborted.
  std::atomic<bool> abort{false};
  std::thread thread;

  explicit Impl(OtlpOptions o)
      : options(std::move(o)),
        body_prefix(detail::otlp_body_prefix(options)),
        queue(options.max_queue_size) {}

  /// Queues `span`, or drops and counts it when the queue is full or the tracer stops.
  void enqueue(OtlpSpanRecord&& span) {
    std::unique_lock lock(mu);
    if (queue.size() >= options.max_queue_size || stopping) {
      ++stats.dropped;
      const bool first = !logged_drop;
      logged_drop = true;
      lock.unlock();
      if (first) {
        sg::log(LogLevel::warn, "OTLP span queue full: dropping spans",
                {{"endpoint", options.endpoint}, {"max_queue_size", options.max_queue_size}});
      }
      return;
    }
    logged_drop = false;
    queue.push(std::move(span));
    ++accepted;
    // The exporter waits for a first span (its schedule delay starts) or a full batch.
    if (queue.size() == 1 || queue.size() >= options.max_batch_size) {
      lock.unlock();
      wake.notify_one();
    }
  }

  /// The exporter thread: sends a batch when it is full, when its oldest span waited the
  /// schedule delay, or when a flush asks; ends at the stop.
  void run() {
    CURL* curl = curl_easy_init();
    curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Expect:");  // no 100-continue wait for large batches
    for (const auto& [key, value] : options.headers) {
      // "Name;" is how curl sends a header with an empty value ("Name:" would remove it).
      headers =
          curl_slist_append(headers, (value.empty() ? key + ";" : key + ": " + value).c_str());
    }

    std::vector<OtlpSpanRecord> batch;
    std::string body;  // kept from one request to the next, with its capacity
    std::unique_lock lock(mu);
    Clock::time_point deadline = Clock::now() + options.schedule_delay;
    while (!stopping) {
      const auto ready = [&] {
        return stopping || queue.size() >= options.max_batch_size ||
               (!queue.empty() && taken < flush_target);
      };
      if (!ready()) {
        if (queue.empty()) {
          wake.wait(lock, [&] { return stopping || !queue.empty(); });
          deadline = Clock::now() + options.schedule_delay;  // the first span's wait begins
          continue;
        }
        if (!wake.wait_until(lock, deadline, ready) && queue.empty()) continue;
      }
      if (stopping) break;
      const std::size_t n = std::min(queue.size(), options.max_batch_size);
      queue.take(n, batch);
      taken += n;
      lock.unlock();
      try {
        send(curl, headers, batch, body);
      } catch (const std::exception& e) {  // out of memory building the body: the batch is lost
        {
          std::lock_guard count(mu);
          stats.failed += n;
        }
        sg::log(LogLevel::warn, "OTLP export failed",
                {{"endpoint", options.endpoint}, {"spans", n}, {"error", e.what()}});
      }
      batch.clear();
      lock.lock();
      finished += n;
      done.notify_all();
      deadline = Clock::now() + options.schedule_delay;
    }
    // Stopped: what is still queued is dropped (the destructor's flush sent what it could).
    const std::size_t left = queue.clear();
    stats.dropped += left;
    finished += left;
    done.notify_all();
    lock.unlock();
    curl_slist_free_all(headers);
    if (curl != nullptr) curl_easy_cleanup(curl);
  }

  static int progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    return static_cast<Impl*>(user)->abort.load(std::memory_order_relaxed) ? 1 : 0;
  }

  PostResult post(CURL* curl, curl_slist* headers, const std::string& body) {
    PostResult result;
    if (curl == nullptr) {
      result.error = "curl_easy_init failed";
      return result;
    }
    curl_easy_reset(curl);
    const std::string agent = "stategraph-otlp/" + std::string(kVersion);
    const long timeout_ms = static_cast<long>(options.export_timeout.count());
    curl_easy_setopt(curl, CURLOPT_URL, options.endpoint.c_str());
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, agent.c_str());
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &result);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, collect_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &result);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, this);
    const CURLcode code = curl_easy_perform(curl);
    if (code != CURLE_OK) {
      result.error = curl_easy_strerror(code);
      return result;
    }
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &result.status);
    return result;
  }

  /// Encodes one batch into `body` (its previous content is replaced), posts it (retrying
  /// once on 429, 502, 503, 504) and counts the outcome.
  void send(CURL* curl, curl_slist* headers, const std::vector<OtlpSpanRecord>& batch,
            std::string& body) {
    body.assign(body_prefix);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (i > 0) body += ',';
      detail::append_otlp_span(body, batch[i]);
    }
    body += detail::kOtlpBodySuffix;

    PostResult result;
    for (int attempt = 1;; ++attempt) {
      result = post(curl, headers, body);
      const bool ok = result.error.empty() && result.status >= 200 && result.status < 300;
      {
        std::lock_guard lock(mu);
        ++stats.requests;
        if (!ok) ++stats.failed_requests;
      }
      if (ok || attempt == 2 || !result.error.empty() || !retryable(result.status)) break;
      const auto delay = result.retry_after.count() >= 0
                             ? std::min(result.retry_after, kMaxRetryDelay)
                             : kDefaultRetryDelay;
      std::unique_lock lock(mu);
      // The stop (or a flush giving up) does not wait for the retry.
      if (wake.wait_for(lock, delay, [&] { return stopping || abort.load(); })) break;
    }

    const bool ok = result.error.empty() && result.status >= 200 && result.status < 300;
    std::string partial_message;
    const std::uint64_t rejected =
        ok ? std::min<std::uint64_t>(rejected_spans(result.body, partial_message), batch.size())
           : 0;
    {
      std::lock_guard lock(mu);
      if (ok) {
        stats.exported += batch.size() - rejected;
        stats.failed += rejected;
      } else {
        stats.failed += batch.size();
      }
    }
    if (!ok) {
      nlohmann::json fields = {{"endpoint", options.endpoint}, {"spans", batch.size()}};
      if (!result.error.empty()) {
        fields["error"] = result.error;
      } else {
        fields["status"] = result.status;
        fields["body"] = result.body.substr(0, 500);
      }
      sg::log(LogLevel::warn, "OTLP export failed", fields);
    } else if (rejected > 0) {
      sg::log(
          LogLevel::warn, "OTLP export partly rejected",
          {{"endpoint", options.endpoint}, {"rejected", rejected}, {"message", partial_message}});
    }
  }
};

OtlpTracer::OtlpTracer(OtlpOptions options) {
  const auto invalid = [](const std::string& what) {
    throw Error(errc::kInvalidArgument, "OtlpOptions: " + what);
  };
  {
    std::string lower = options.endpoint.substr(0, 8);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (!lower.starts_with("http://") && !lower.starts_with("https://")) {
      invalid("endpoint '" + options.endpoint + "' is not an http(s) URL");
    }
  }
  for (const auto& [key, value] : options.headers) {
    const bool bad_key = key.empty() || std::any_of(key.begin(), key.end(), [](unsigned char c) {
                           return c <= ' ' || c >= 127 || c == ':' || c == ';';
                         });
    if (bad_key || value.find_first_of("\r\n") != std::string::npos) {
      invalid("header '" + key + "' is not a valid HTTP header");
    }
  }
  if (options.max_queue_size == 0) invalid("max_queue_size is 0");
  if (options.max_batch_size == 0) invalid("max_batch_size is 0");
  if (options.max_batch_size > options.max_queue_size) {
    invalid("max_batch_size (" + std::to_string(options.max_batch_size) +
            ") is larger than max_queue_size (" + std::to_string(options.max_queue_size) + ")");
  }
  if (!(options.sampler_ratio >= 0.0 && options.sampler_ratio <= 1.0)) {
    invalid("sampler_ratio " + std::to_string(options.sampler_ratio) + " is not in [0, 1]");
  }
  if (options.export_timeout.count() <= 0) invalid("export_timeout is not positive");
  if (options.schedule_delay.count() < 0) invalid("schedule_delay is negative");
  curl_init_once();
  impl_ = std::make_unique<Impl>(std::move(options));
  impl_->thread = std::thread([impl = impl_.get()] { impl->run(); });
}

OtlpTracer::~OtlpTracer() {
  if (!flush(impl_->options.export_timeout)) {
    sg::log(LogLevel::warn, "OTLP exporter stopping before its last spans were sent",
            {{"endpoint", impl_->options.endpoint}});
  }
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->abort.store(true);
  impl_->wake.notify_all();
  impl_->thread.join();
}

std::shared_ptr<OtlpTracer> OtlpTracer::from_environment() {
  std::optional<OtlpOptions> options = otlp_options_from_environment();
  if (!options) return nullptr;
  return std::make_shared<OtlpTracer>(std::move(*options));
}

void OtlpTracer::export_span(const Span& span) {
  if (!sampled(span.context)) {
    impl_->not_sampled.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  impl_->enqueue(detail::otlp_span_record(span));
}

void OtlpTracer::on_run_end(const Span& run) {
  export_span(run);
}
void OtlpTracer::on_node_end(const Span& node) {
  export_span(node);
}
void OtlpTracer::on_model_end(const Span& model) {
  export_span(model);
}
void OtlpTracer::on_tool_end(const Span& tool) {
  export_span(tool);
}
void OtlpTracer::on_checkpoint(const Span& write) {
  export_span(write);
}

bool OtlpTracer::flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(impl_->mu);
  const std::uint64_t target = impl_->accepted;
  if (impl_->finished >= target) return true;
  impl_->flush_target = std::max(impl_->flush_target, target);
  impl_->wake.notify_all();
  return impl_->done.wait_for(lock, timeout, [&] { return impl_->finished >= target; });
}

OtlpExportStats OtlpTracer::stats() const {
  std::lock_guard lock(impl_->mu);
  OtlpExportStats out = impl_->stats;
  out.not_sampled = impl_->not_sampled.load(std::memory_order_relaxed);
  out.queued = impl_->queue.size();
  return out;
}

bool OtlpTracer::sampled(const TraceContext& context) const noexcept {
  return detail::otlp_sampled(impl_->options.sampler, impl_->options.sampler_ratio, context);
}

const OtlpOptions& OtlpTracer::options() const noexcept {
  return impl_->options;
}

}  // namespace sg
