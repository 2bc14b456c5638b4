// SPDX-License-Identifier: MIT
#include <stategraph/core/context.hpp>
#include <stategraph/models/chat_model.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <exception>

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
/// call is made inside a node of a run that streams messages.
class ChunkRouter {
 public:
  ChunkRouter(const ChatModel& model, const ChatOptions& options, const ChunkHandler* caller)
      : ctx_(current_context()), caller_(caller) {
    if (ctx_ && ctx_->streams_messages())
      metadata_ = ctx_->messages_metadata(call_metadata(model, options));
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
    return out;
  }

  /// Tells the run the call is over (a reply that was not streamed goes out whole).
  void finish(const Message& reply) const {
    if (!metadata_.is_null()) ctx_->write_message_done(reply, metadata_);
  }

 private:
  /// The handler to give the implementation (null: do not stream).
  [[nodiscard]] const ChunkHandler* handler() {
    if (metadata_.is_null()) return caller_;
    handler_ = [this](const MessageChunk& chunk) {
      if (caller_) (*caller_)(chunk);
      ctx_->write_message_chunk(chunk, metadata_);
    };
    return &handler_;
  }

  Context* ctx_;
  const ChunkHandler* caller_;
  nlohmann::json metadata_{};
  ChunkHandler handler_{};
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
  Message reply = generate(request);
  router.finish(reply);
  return reply;
}

boost::asio::awaitable<Message> ChatModel::acall(std::vector<Message> messages, ChatOptions options,
                                                 ChunkHandler on_chunk, bool streaming) const {
  // Runs on the node's executor, which keeps the node's Context current (see async.hpp).
  ChunkRouter router(*this, options, streaming ? &on_chunk : nullptr);
  Request request = router.request(messages, options);
  Message reply = co_await agenerate(request);
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
