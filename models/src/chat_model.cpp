// SPDX-License-Identifier: MIT
#include <stategraph/core/context.hpp>
#include <stategraph/core/log.hpp>
#include <stategraph/models/chat_model.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <exception>
#include <optional>
#include <utility>

namespace sg {
namespace {

/// LangChain's ls_* keys of a model call's stream metadata.
nlohmann::json call_metadata(const ChatModel& model, const ChatOptions& options) {
  nlohmann::json meta = {{"ls_provider", model.provider()},
                         {"ls_model_name", model.model_name()},
                         {"ls_model_type", "chat"}};
  if (options.temperature) meta["ls_temperature"] = *options.temperature;
  if (options.max_tokens) meta["ls_max_tokens"] = *options.max_tokens;
  return meta;
}

/// Where the chunks of one call go: the caller's handler, and the run's messages stream when the
/// call is made inside a node of a run that streams messages. In a run with callbacks it also
/// reports the call's span (start, tokens, end).
class ChunkRouter {
 public:
  ChunkRouter(const ChatModel& model, const ChatOptions& options, const ChunkHandler* caller)
      : ctx_(current_context()), caller_(caller) {
    if (ctx_ && ctx_->streams_messages())
      metadata_ = ctx_->messages_metadata(call_metadata(model, options));
    if (ctx_ && ctx_->traced()) [[unlikely]] {
      span_.emplace(ctx_->child_span(SpanKind::model, model.model_name()));
      span_->provider = model.provider();
    }
  }
  ChunkRouter(const ChunkRouter&) = delete;
  ChunkRouter& operator=(const ChunkRouter&) = delete;
  /// A call that did not finish: its span ends with the error being handled (or cancelled).
  ~ChunkRouter() {
    if (!span_ || ended_) return;
    span_->end = std::chrono::system_clock::now();
    detail::set_span_error(*span_, error_ ? error_ : std::make_exception_ptr(CancelledError()));
    report_failure();
    detail::notify(ctx_->config().callbacks, &Callbacks::on_model_end, std::as_const(*span_));
  }

  /// The implementation's request for `messages` and `options` (which outlive it). Throws
  /// CancelledError when the call or the run is already cancelled.
  [[nodiscard]] ChatModel::Request request(const std::vector<Message>& messages,
                                           const ChatOptions& options) {
    ChatModel::Request out;
    out.messages = &messages;
    out.options = &options;
    out.on_chunk = handler();
    out.run_cancellation = ctx_ ? ctx_->config().cancellation : CancellationToken{};
    if (out.cancelled()) throw CancelledError();
    if (span_) [[unlikely]] {
      out.trace = span_->context;
      span_->messages = &messages;
      detail::notify(ctx_->config().callbacks, &Callbacks::on_model_start, std::as_const(*span_));
      span_->messages = nullptr;
    }
    return out;
  }

  /// Tells the run the call is over (a reply that was not streamed goes out whole).
  void finish(const Message& reply) {
    if (!metadata_.is_null()) ctx_->write_message_done(reply, metadata_);
    if (span_) [[unlikely]] {
      ended_ = true;
      span_->end = std::chrono::system_clock::now();
      span_->reply = &reply;
      const nlohmann::json& usage = reply.usage_metadata;
      if (usage.is_object()) {
        span_->input_tokens = usage.value("input_tokens", std::int64_t{-1});
        span_->output_tokens = usage.value("output_tokens", std::int64_t{-1});
      }
      detail::notify(ctx_->config().callbacks, &Callbacks::on_model_end, std::as_const(*span_));
    }
  }

  /// The call failed with the exception being handled: kept for the span, and logged.
  void failed() noexcept {
    error_ = std::current_exception();
    if (!span_) report_failure();
  }

 private:
  /// The handler to give the implementation (null: do not stream).
  [[nodiscard]] const ChunkHandler* handler() {
    if (metadata_.is_null() && !(span_ && caller_)) return caller_;
    handler_ = [this](const MessageChunk& chunk) {
      if (caller_) (*caller_)(chunk);
      if (!metadata_.is_null()) ctx_->write_message_chunk(chunk, metadata_);
      if (span_) [[unlikely]]
        detail::notify(ctx_->config().callbacks, &Callbacks::on_model_token, std::as_const(*span_),
                       chunk);
    };
    return &handler_;
  }

  /// Logs a failed call (sg::log, warn: the node's retry policy or error handling decides
  /// what it means); a cancelled one is not a failure.
  void report_failure() const noexcept {
    if (!error_ || !log_enabled(LogLevel::warn)) return;
    Span described;
    detail::set_span_error(described, error_);
    if (described.status == SpanStatus::cancelled) return;
    nlohmann::json fields = {{"error", described.error}, {"code", described.error_type}};
    if (ctx_) {
      fields["node"] = ctx_->node();
      fields["thread_id"] = ctx_->config().thread_id;
      fields["run_id"] = ctx_->config().run_id;
    }
    log(LogLevel::warn, "model call failed", fields);
  }

  Context* ctx_;
  const ChunkHandler* caller_;
  nlohmann::json metadata_{};
  ChunkHandler handler_{};
  std::optional<Span> span_{};
  std::exception_ptr error_{};
  bool ended_ = false;
};

}  // namespace

Message ChatModel::invoke(const std::vector<Message>& messages) const {
  return call(messages, ChatOptions{}, nullptr);
}

Message ChatModel::invoke(const std::vector<Message>& messages, const ChatOptions& options) const {
  return call(messages, options, nullptr);
}

Message ChatModel::stream(const std::vector<Message>& messages, const ChatOptions& options,
                          const ChunkHandler& on_chunk) const {
  return call(messages, options, &on_chunk);
}

boost::asio::awaitable<Message> ChatModel::ainvoke(std::vector<Message> messages) const {
  return acall(std::move(messages), ChatOptions{}, ChunkHandler{}, false);
}

boost::asio::awaitable<Message> ChatModel::ainvoke(std::vector<Message> messages,
                                                   ChatOptions options) const {
  return acall(std::move(messages), std::move(options), ChunkHandler{}, false);
}

boost::asio::awaitable<Message> ChatModel::astream(std::vector<Message> messages,
                                                   ChatOptions options,
                                                   ChunkHandler on_chunk) const {
  return acall(std::move(messages), std::move(options), std::move(on_chunk), true);
}

Message ChatModel::call(const std::vector<Message>& messages, const ChatOptions& options,
                        const ChunkHandler* on_chunk) const {
  ChunkRouter router(*this, options, on_chunk);
  const Request request = router.request(messages, options);
  Message reply;
  try {
    reply = generate(request);
  } catch (...) {
    router.failed();
    throw;
  }
  router.finish(reply);
  return reply;
}

boost::asio::awaitable<Message> ChatModel::acall(std::vector<Message> messages, ChatOptions options,
                                                 ChunkHandler on_chunk, bool streaming) const {
  // Runs on the node's executor, which keeps the node's Context current (see async.hpp).
  ChunkRouter router(*this, options, streaming ? &on_chunk : nullptr);
  Request request = router.request(messages, options);
  Message reply;
  try {
    reply = co_await agenerate(request);
  } catch (...) {
    router.failed();
    throw;
  }
  router.finish(reply);
  co_return reply;
}

Message ChatModel::generate(const Request& request) const {
  boost::asio::io_context io;
  Message reply;
  std::exception_ptr error;
  boost::asio::co_spawn(io, agenerate(request), [&](std::exception_ptr e, Message m) {
    error = e;
    reply = std::move(m);
  });
  io.run();
  if (error) std::rethrow_exception(error);
  return reply;
}

nlohmann::json parse_structured(const Message& reply) {
  const std::string text = reply.text();
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, out_of_range (1e999)
    std::string excerpt = text.substr(0, 200);
    throw ModelError(errc::kModelInvalidResponse, "the model's structured reply is not JSON (" +
                                                      std::string(e.what()) + "): " + excerpt);
  }
}

}  // namespace sg
