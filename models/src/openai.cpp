// SPDX-License-Identifier: MIT
#include <stategraph/models/openai.hpp>

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "http_call.hpp"
#include "openai_wire.hpp"
#include "sse.hpp"

// g++ 12 wrongly reports awaitable frames freed by the frame's own operator delete as mismatched
// (GCC bug 109224).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace sg {
namespace net = boost::asio;
using nlohmann::json;

namespace detail {
namespace {

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
    for (const SseEvent& sse : events_) {
      const std::string& data = sse.data;
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
  [[nodiscard]] const char* events_name() const override { return "chat completion chunks"; }
  [[nodiscard]] const char* end_event() const override { return "[DONE]"; }
  [[nodiscard]] Message result() const { return accumulator_.result(); }

 private:
  const ChunkHandler* on_chunk_;
  SseParser parser_{};
  ChatStreamAccumulator accumulator_{};
  std::vector<SseEvent> events_{};
  std::string start_{};
  bool done_ = false;
  bool delivered_ = false;
};

HttpRequestSpec request_spec(const OpenAIConfig& config, std::string url, std::string body,
                             bool stream) {
  HttpRequestSpec spec =
      json_post(call_settings_of(config), std::move(url), std::move(body), stream);
  if (!config.api_key.empty()) spec.headers.push_back("Authorization: Bearer " + config.api_key);
  for (const auto& [name, value] : config.headers) spec.headers.push_back(name + ": " + value);
  return spec;
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
    const HttpCallSettings settings = call_settings_of(*job.config);
    HttpCall call;
    call.settings = &settings;
    call.spec = &spec;
    call.what = "embeddings";
    const std::string reply = co_await post_with_retries(call);
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
  detail::check_call_settings(detail::call_settings_of(config_), "OpenAIConfig");
  if (config_.model.empty()) throw ModelError(errc::kModelConfig, "OpenAIConfig has no model");
}

net::awaitable<Message> OpenAIChatModel::agenerate(Request request) const {
  const bool streaming = request.on_chunk != nullptr && static_cast<bool>(*request.on_chunk);
  const json body =
      detail::chat_request_body(config_.model, *request.messages, *request.options, streaming);
  detail::HttpRequestSpec spec = detail::request_spec(config_, endpoint_, body.dump(), streaming);
  if (request.trace.valid()) spec.headers.push_back("traceparent: " + request.trace.traceparent());
  detail::ChatSink sink(request.on_chunk);
  const detail::HttpCallSettings settings = detail::call_settings_of(config_);
  detail::HttpCall call;
  call.settings = &settings;
  call.spec = &spec;
  call.sink = streaming ? &sink : nullptr;
  call.first = request.options->cancellation;
  call.second = request.run_cancellation;
  call.what = "chat completions";
  const std::string reply = co_await detail::post_with_retries(call);
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
  detail::check_call_settings(detail::call_settings_of(config_), "OpenAIConfig");
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
