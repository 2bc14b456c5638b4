// SPDX-License-Identifier: MIT
#include <stategraph/models/anthropic.hpp>

#include <cstdlib>
#include <optional>

#include "anthropic_wire.hpp"
#include "http_call.hpp"
#include "sse.hpp"

// g++ 12 wrongly reports awaitable frames freed by the frame's own operator delete as mismatched
// (GCC bug 109224).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace sg {
namespace net = boost::asio;
using nlohmann::json;

namespace detail {
namespace {

/// Parses an SSE stream of Messages API events and hands the chunks to the caller.
class AnthropicSink final : public StreamSink {
 public:
  AnthropicSink(const ChunkHandler* on_chunk, std::string format_tool, bool blocks)
      : on_chunk_(on_chunk),
        format_tool_(std::move(format_tool)),
        blocks_(blocks),
        accumulator_(format_tool_, blocks_) {}

  void reset() override {
    parser_ = SseParser{};
    accumulator_ = AnthropicStreamAccumulator(format_tool_, blocks_);
    stopped_ = false;
    start_.clear();
  }

  void feed(std::string_view bytes) override {
    if (start_.size() < 500) start_.append(bytes.substr(0, 500 - start_.size()));
    events_.clear();
    parser_.feed(bytes, events_);
    for (const SseEvent& sse : events_) {
      const std::string& data = sse.data;
      if (stopped_) return;
      const json event = json::parse(data, nullptr, /*allow_exceptions=*/false);
      if (event.is_discarded()) {
        throw ModelError(errc::kModelInvalidResponse,
                         "messages: a stream event is not JSON: " + excerpt(data, 200));
      }
      const std::optional<MessageChunk> chunk = accumulator_.add(event);
      if (event.is_object() && event.value("type", "") == "message_stop") stopped_ = true;
      if (chunk) {
        delivered_ = true;
        (*on_chunk_)(*chunk);
      }
    }
  }

  [[nodiscard]] bool delivered() const override { return delivered_; }
  [[nodiscard]] bool complete() const override { return stopped_ || accumulator_.finished(); }
  [[nodiscard]] const std::string& start() const override { return start_; }
  [[nodiscard]] const char* events_name() const override { return "Messages API events"; }
  [[nodiscard]] const char* end_event() const override { return "message_stop"; }
  [[nodiscard]] Message result() const { return accumulator_.result(); }

 private:
  const ChunkHandler* on_chunk_;
  std::string format_tool_;
  bool blocks_;
  SseParser parser_{};
  AnthropicStreamAccumulator accumulator_;
  std::vector<SseEvent> events_{};
  std::string start_{};
  bool stopped_ = false;
  bool delivered_ = false;
};

}  // namespace
}  // namespace detail

AnthropicConfig AnthropicConfig::from_env() {
  AnthropicConfig config;
  if (const char* url = std::getenv("ANTHROPIC_BASE_URL"); url && *url) config.base_url = url;
  if (const char* key = std::getenv("ANTHROPIC_API_KEY"); key && *key) config.api_key = key;
  if (const char* model = std::getenv("STATEGRAPH_MODEL"); model && *model) config.model = model;
  return config;
}

AnthropicChatModel::AnthropicChatModel(AnthropicConfig config) : config_(std::move(config)) {
  endpoint_ = detail::anthropic_endpoint(config_);
  detail::check_call_settings(detail::call_settings_of(config_), "AnthropicConfig");
  if (config_.model.empty()) throw ModelError(errc::kModelConfig, "AnthropicConfig has no model");
  if (config_.anthropic_version.empty())
    throw ModelError(errc::kModelConfig, "AnthropicConfig has no anthropic_version");
  if (config_.max_tokens < 1)
    throw ModelError(errc::kModelConfig, "AnthropicConfig::max_tokens must be at least 1");
  if (config_.thinking_budget < 0 ||
      (config_.thinking_budget > 0 &&
       (config_.thinking_budget < 1024 || config_.thinking_budget >= config_.max_tokens))) {
    throw ModelError(
        errc::kModelConfig,
        "AnthropicConfig::thinking_budget " + std::to_string(config_.thinking_budget) +
            " must be 0 (no extended thinking) or at least 1024 and below max_tokens (" +
            std::to_string(config_.max_tokens) + ")");
  }
}

net::awaitable<Message> AnthropicChatModel::agenerate(Request request) const {
  const bool streaming = request.on_chunk != nullptr && static_cast<bool>(*request.on_chunk);
  const ChatOptions& options = *request.options;
  const json body = detail::messages_request_body(config_, *request.messages, options, streaming);
  const detail::HttpCallSettings settings = detail::call_settings_of(config_);
  detail::HttpRequestSpec spec = detail::json_post(settings, endpoint_, body.dump(), streaming);
  if (!config_.api_key.empty()) spec.headers.push_back("x-api-key: " + config_.api_key);
  spec.headers.push_back("anthropic-version: " + config_.anthropic_version);
  for (const auto& [name, value] : config_.headers) spec.headers.push_back(name + ": " + value);
  if (request.trace.valid()) spec.headers.push_back("traceparent: " + request.trace.traceparent());
  const std::string format_tool = detail::format_tool_name(options);
  // Text deltas stream as plain strings unless the reply may hold other blocks (LangChain's
  // ChatAnthropic does the same): then as text blocks with their index.
  const bool blocks = !options.tools.empty() || config_.thinking_budget > 0;
  detail::AnthropicSink sink(request.on_chunk, format_tool, blocks);
  detail::HttpCall call;
  call.settings = &settings;
  call.spec = &spec;
  call.sink = streaming ? &sink : nullptr;
  call.first = options.cancellation;
  call.second = request.run_cancellation;
  call.what = "messages";
  call.retryable = &detail::anthropic_retryable;
  call.error_message = &detail::anthropic_error_message;
  const std::string reply = co_await detail::post_with_retries(call);
  if (streaming) co_return sink.result();
  const json parsed = detail::parse_json_reply(reply, "messages");
  co_return detail::parse_anthropic_message(parsed, format_tool);
}

Message AnthropicChatModel::generate(const Request& request) const {
  return detail::run_blocking(agenerate(request));
}

}  // namespace sg
