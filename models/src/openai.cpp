// SPDX-License-Identifier: MIT
#include <stategraph/core/log.hpp>
#include <stategraph/models/openai.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <memory>
#include <optional>
#include <random>

#include "curl_multi.hpp"
#include "openai_wire.hpp"

// g++ 12 wrongly reports awaitable frames freed by the frame's own operator delete as mismatched
// (GCC bug 109224).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace sg {
namespace net = boost::asio;
using nlohmann::json;

namespace detail {
namespace {

/// Receives the body of a successful streamed reply as it arrives.
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  /// Forgets a previous attempt (nothing of it was delivered).
  virtual void reset() = 0;
  /// Takes the next bytes of the body. May throw ModelError (kModelInvalidResponse).
  virtual void feed(std::string_view bytes) = 0;
  /// True once something reached the caller: the call can no longer be retried.
  [[nodiscard]] virtual bool delivered() const = 0;
  /// True once the stream said it is over.
  [[nodiscard]] virtual bool complete() const = 0;
  /// The first bytes of the stream, for error messages.
  [[nodiscard]] virtual const std::string& start() const = 0;
};

/// Parses an SSE stream of chat.completion.chunk events and hands the chunks to the caller.
class ChatSink final : public StreamSink {
 public:
  explicit ChatSink(const ChunkHandler* on_chunk) : on_chunk_(on_chunk) {}

  void reset() override {
    parser_ = SseParser{};
    accumulator_ = ChatStreamAccumulator{};
    done_ = false;
    start_.clear();
  }

  void feed(std::string_view bytes) override {
    if (start_.size() < 500) start_.append(bytes.substr(0, 500 - start_.size()));
    events_.clear();
    parser_.feed(bytes, events_);
    for (const std::string& data : events_) {
      if (done_) return;
      if (data == "[DONE]") {
        done_ = true;
        return;
      }
      const json event = json::parse(data, nullptr, /*allow_exceptions=*/false);
      if (event.is_discarded()) {
        throw ModelError(errc::kModelInvalidResponse,
                         "chat completions: a stream event is not JSON: " + excerpt(data, 200));
      }
      const std::optional<MessageChunk> chunk = accumulator_.add(event);
      if (chunk) {
        delivered_ = true;
        (*on_chunk_)(*chunk);
      }
    }
  }

  [[nodiscard]] bool delivered() const override { return delivered_; }
  [[nodiscard]] bool complete() const override { return done_ || accumulator_.finished(); }
  [[nodiscard]] const std::string& start() const override { return start_; }
  [[nodiscard]] Message result() const { return accumulator_.result(); }

 private:
  const ChunkHandler* on_chunk_;
  SseParser parser_{};
  ChatStreamAccumulator accumulator_{};
  std::vector<std::string> events_{};
  std::string start_{};
  bool done_ = false;
  bool delivered_ = false;
};

std::chrono::milliseconds jittered_backoff(const OpenAIConfig& config, int attempt) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  double cap = static_cast<double>(config.backoff_initial.count());
  for (int i = 0; i < attempt && cap < static_cast<double>(config.backoff_max.count()); ++i) {
    cap *= 2;
  }
  cap = std::min(cap, static_cast<double>(config.backoff_max.count()));
  if (cap <= 0) return std::chrono::milliseconds(0);
  std::uniform_real_distribution<double> uniform(0.0, cap);
  return std::chrono::milliseconds(static_cast<std::int64_t>(uniform(rng)));
}

/// Aborts a transfer that is still running when the call leaves early (an exception).
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

/// POSTs `spec` with retries (429, 5xx, connection errors; exponential backoff with full jitter
/// or the server's Retry-After); streams a 2xx body into `sink` when given. Returns the body
/// of a successful non-streamed reply. Runs on the caller's executor.
net::awaitable<std::string> post_with_retries(const OpenAIConfig* config,
                                              const HttpRequestSpec* spec, StreamSink* sink,
                                              CancellationToken first, CancellationToken second,
                                              const char* what) {
  const auto executor = co_await net::this_coro::executor;
  net::execution_context& context = net::query(executor, net::execution::context);
  const std::shared_ptr<CurlMulti> multi = CurlMulti::of(context);
  std::chrono::milliseconds delay{0};
  for (int attempt = 0;; ++attempt) {
    if (first.cancelled() || second.cancelled())
      throw CancelledError("the model call was cancelled");
    if (sink) sink->reset();
    auto transfer = std::make_shared<HttpTransfer>(*spec);
    multi->start(transfer, delay);
    AbortGuard guard(multi, transfer);
    CancellationToken::Subscription on_first =
        first.on_cancel([multi, transfer] { multi->cancel(transfer); });
    CancellationToken::Subscription on_second =
        second.on_cancel([multi, transfer] { multi->cancel(transfer); });

    std::string body;  // the reply when it is not streamed into `sink`
    HttpProgress progress;
    for (;;) {
      co_await transfer->wait();
      progress = transfer->take();
      if (!progress.data.empty()) {
        if (sink && progress.status >= 200 && progress.status < 300) {
          sink->feed(progress.data);
        } else {
          body += progress.data;
        }
      }
      if (progress.end != TransferEnd::none) break;
    }
    guard.ended = true;
    on_first.reset();
    on_second.reset();

    const std::string where = std::string(what) + " (" + spec->url + ")";
    std::optional<ModelError> error;
    bool retryable = false;
    switch (progress.end) {
      case TransferEnd::cancelled:
        throw CancelledError("the model call was cancelled");
      case TransferEnd::timeout:
        throw ModelError(errc::kModelTimeout, where + ": " + progress.error + " (connect timeout " +
                                                  describe_ms(spec->connect_timeout) +
                                                  ", total timeout " +
                                                  describe_ms(spec->total_timeout) + ")");
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
                             where + ": the event stream ended before [DONE]");
          }
          throw ModelError(errc::kModelInvalidResponse,
                           where +
                               ": the reply is not an event stream of chat completion chunks: " +
                               excerpt(sink->start(), 200));
        } else {
          const std::string message = error_message_of(body);
          error.emplace(errc::kModelHttpStatus,
                        where + ": HTTP " + std::to_string(progress.status) +
                            (message.empty() ? std::string() : ": " + message),
                        progress.status, excerpt(body));
          retryable = progress.status == 429 || progress.status >= 500;
        }
        break;
    }
    if (!retryable || attempt >= config->max_retries) throw *error;
    const std::optional<std::chrono::milliseconds> asked =
        progress.status != 0 ? retry_after(progress.headers, std::time(nullptr)) : std::nullopt;
    delay = asked ? std::min(*asked, config->retry_after_max) : jittered_backoff(*config, attempt);
    log(LogLevel::warn, "model request retried",
        {{"url", detail::url_for_log(spec->url)},
         {"attempt", attempt + 2},
         {"status", progress.status},
         {"delay_ms", delay.count()},
         {"error", error->what()}});
  }
}

HttpRequestSpec request_spec(const OpenAIConfig& config, std::string url, std::string body,
                             bool stream) {
  HttpRequestSpec spec;
  spec.url = std::move(url);
  spec.body = std::move(body);
  spec.headers = {"Content-Type: application/json",
                  stream ? "Accept: text/event-stream" : "Accept: application/json",
                  "User-Agent: stategraph", "Expect:"};
  if (!config.api_key.empty()) spec.headers.push_back("Authorization: Bearer " + config.api_key);
  for (const auto& [name, value] : config.headers) spec.headers.push_back(name + ": " + value);
  spec.connect_timeout = config.connect_timeout;
  spec.total_timeout = config.total_timeout;
  spec.idle_timeout = config.idle_timeout;
  return spec;
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

void check_config(const OpenAIConfig& config) {
  if (config.max_retries < 0) {
    throw ModelError(errc::kModelConfig, "OpenAIConfig::max_retries is negative");
  }
  if (config.connect_timeout.count() < 0 || config.total_timeout.count() < 0 ||
      config.idle_timeout.count() < 0) {
    throw ModelError(errc::kModelConfig, "OpenAIConfig has a negative timeout");
  }
}

/// Runs `work` to its end on an io_context kept for the calling thread (its connections are
/// reused by the thread's next blocking call); on a fresh one when called from inside such a run
/// (a chunk handler calling a model).
struct ThreadIo {
  std::unique_ptr<net::io_context> io;
  bool busy = false;
};

/// The calling thread's (one for every instantiation of run_blocking).
ThreadIo& thread_io() {
  thread_local ThreadIo local;
  return local;
}

template <class T>
T run_blocking(net::awaitable<T> work) {
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

struct EmbedJob {
  const OpenAIConfig* config = nullptr;
  const std::string* url = nullptr;
  const std::string* model = nullptr;
  std::size_t dims = 0;
  std::size_t batch_size = 0;
  const std::vector<std::string>* texts = nullptr;
  std::vector<std::vector<float>>* out = nullptr;
};

net::awaitable<bool> embed_batches(EmbedJob job) {
  const std::vector<std::string>& texts = *job.texts;
  const bool v3 = job.model->starts_with("text-embedding-3");
  for (std::size_t start = 0; start < texts.size(); start += job.batch_size) {
    const std::size_t end = std::min(texts.size(), start + job.batch_size);
    json input = json::array();
    for (std::size_t i = start; i < end; ++i) input.push_back(texts[i]);
    json body = {{"model", *job.model}, {"input", std::move(input)}, {"encoding_format", "float"}};
    if (v3) body["dimensions"] = job.dims;
    const HttpRequestSpec spec = request_spec(*job.config, *job.url, body.dump(), false);
    const CancellationToken none;
    const std::string reply =
        co_await post_with_retries(job.config, &spec, nullptr, none, none, "embeddings");
    const json parsed = parse_json_reply(reply, "embeddings");
    const std::size_t n = end - start;
    if (!parsed.is_object() || !parsed.contains("data") || !parsed["data"].is_array() ||
        parsed["data"].size() != n) {
      throw ModelError(errc::kModelInvalidResponse,
                       "embeddings: expected " + std::to_string(n) +
                           " vectors in `data`: " + excerpt(parsed.dump(), 200));
    }
    std::vector<std::vector<float>> batch(n);
    std::vector<bool> seen(n, false);
    std::size_t position = 0;
    for (const auto& item : parsed["data"]) {
      const std::size_t index =
          item.is_object() && item.contains("index") && item["index"].is_number_unsigned()
              ? item["index"].get<std::size_t>()
              : position;
      ++position;
      if (index >= n || seen[index] || !item.is_object() || !item.contains("embedding") ||
          !item["embedding"].is_array()) {
        throw ModelError(
            errc::kModelInvalidResponse,
            "embeddings: a malformed or duplicate item in `data`: " + excerpt(item.dump(), 200));
      }
      const json& vector = item["embedding"];
      if (vector.size() != job.dims) {
        throw ModelError(errc::kModelInvalidResponse, "embeddings: expected vectors of " +
                                                          std::to_string(job.dims) +
                                                          " dimensions from model " + *job.model +
                                                          ", got " + std::to_string(vector.size()));
      }
      std::vector<float>& values = batch[index];
      values.reserve(job.dims);
      for (const auto& x : vector) {
        if (!x.is_number()) {
          throw ModelError(errc::kModelInvalidResponse, "embeddings: a vector holds a non-number");
        }
        values.push_back(x.get<float>());
      }
      seen[index] = true;
    }
    for (auto& v : batch) job.out->push_back(std::move(v));
  }
  co_return true;
}

}  // namespace
}  // namespace detail

OpenAIConfig OpenAIConfig::from_env() {
  OpenAIConfig config;
  if (const char* url = std::getenv("OPENAI_BASE_URL"); url && *url) config.base_url = url;
  if (const char* key = std::getenv("OPENAI_API_KEY"); key && *key) config.api_key = key;
  if (const char* model = std::getenv("STATEGRAPH_MODEL"); model && *model) config.model = model;
  return config;
}

OpenAIChatModel::OpenAIChatModel(OpenAIConfig config) : config_(std::move(config)) {
  endpoint_ = detail::validated_base_url(config_) + "/chat/completions";
  detail::check_config(config_);
  if (config_.model.empty()) throw ModelError(errc::kModelConfig, "OpenAIConfig has no model");
}

net::awaitable<Message> OpenAIChatModel::agenerate(Request request) const {
  const bool streaming = request.on_chunk != nullptr && static_cast<bool>(*request.on_chunk);
  const json body =
      detail::chat_request_body(config_.model, *request.messages, *request.options, streaming);
  detail::HttpRequestSpec spec = detail::request_spec(config_, endpoint_, body.dump(), streaming);
  if (request.trace.valid()) spec.headers.push_back("traceparent: " + request.trace.traceparent());
  detail::ChatSink sink(request.on_chunk);
  detail::StreamSink* sink_ptr = streaming ? &sink : nullptr;
  const CancellationToken call_token = request.options->cancellation;
  const CancellationToken run_token = request.run_cancellation;
  const std::string reply = co_await detail::post_with_retries(
      &config_, &spec, sink_ptr, call_token, run_token, "chat completions");
  if (streaming) co_return sink.result();
  const json parsed = detail::parse_json_reply(reply, "chat completions");
  co_return detail::parse_chat_completion(parsed);
}

Message OpenAIChatModel::generate(const Request& request) const {
  return detail::run_blocking(agenerate(request));
}

OpenAIEmbeddings::OpenAIEmbeddings(OpenAIConfig config, std::string model, std::size_t dims,
                                   std::size_t batch_size)
    : config_(std::move(config)), model_(std::move(model)), dims_(dims), batch_size_(batch_size) {
  endpoint_ = detail::validated_base_url(config_) + "/embeddings";
  detail::check_config(config_);
  if (model_.empty()) throw ModelError(errc::kModelConfig, "OpenAIEmbeddings has no model");
  if (dims_ == 0) throw ModelError(errc::kModelConfig, "OpenAIEmbeddings needs dims > 0");
  if (batch_size_ == 0)
    throw ModelError(errc::kModelConfig, "OpenAIEmbeddings needs batch_size > 0");
}

std::vector<std::vector<float>> OpenAIEmbeddings::embed(const std::vector<std::string>& texts) {
  std::vector<std::vector<float>> out;
  if (texts.empty()) return out;
  out.reserve(texts.size());
  detail::EmbedJob job;
  job.config = &config_;
  job.url = &endpoint_;
  job.model = &model_;
  job.dims = dims_;
  job.batch_size = batch_size_;
  job.texts = &texts;
  job.out = &out;
  (void)detail::run_blocking(detail::embed_batches(job));
  return out;
}

}  // namespace sg
