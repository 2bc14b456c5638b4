// SPDX-License-Identifier: MIT
#pragma once
// The OpenAI-compatible client: chat completions (JSON and SSE streaming, tools, structured
// output) and embeddings over libcurl, for OpenAI and the servers that speak its API (Ollama,
// vLLM, llama.cpp's server). See docs/models.md.
//
//   sg::OpenAIChatModel model(sg::OpenAIConfig::from_env());
//   sg::Message reply = model.invoke({sg::human("What is 2 + 2?")});
//
// Requests run on curl's multi interface driven by the caller's Boost.Asio execution context
// (an io_context or a thread_pool): an awaiting call (ainvoke, astream, a coroutine node) holds
// no thread while the server answers, and calls on one context share its connections. Blocking
// calls (invoke, stream, embed) run the same code on an io_context kept per calling thread.

#include <stategraph/models/chat_model.hpp>
#include <stategraph/store/store.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace sg {

/// Where and how to reach an OpenAI-compatible server. Every duration of 0 means "no limit".
struct OpenAIConfig {
  /// The API root, e.g. "https://api.openai.com/v1" or "http://localhost:11434/v1".
  std::string base_url = "https://api.openai.com/v1";
  /// Sent as "Authorization: Bearer <key>" when not empty; required for api.openai.com.
  std::string api_key{};
  std::string model = "gpt-4o-mini";
  /// Extra request headers (name, value), e.g. {"OpenAI-Organization", "org-..."}.
  std::vector<std::pair<std::string, std::string>> headers{};
  /// Time to establish a connection.
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};
  /// Time for a whole attempt (request and reply).
  std::chrono::milliseconds total_timeout{std::chrono::seconds(600)};
  /// The longest silence (no byte received) within an attempt.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(300)};
  /// Further attempts after a 429, a 5xx or a connection error (not after a timeout, and never
  /// once a streamed chunk was delivered).
  int max_retries = 3;
  /// Exponential backoff with full jitter: attempt n waits a random time in
  /// [0, min(backoff_max, backoff_initial * 2^n)].
  std::chrono::milliseconds backoff_initial{500};
  std::chrono::milliseconds backoff_max{std::chrono::seconds(8)};
  /// A server's Retry-After (seconds, an HTTP date, or retry-after-ms) is honoured up to this.
  std::chrono::milliseconds retry_after_max{std::chrono::seconds(60)};

  /// The defaults above, with base_url from OPENAI_BASE_URL, api_key from OPENAI_API_KEY and
  /// model from STATEGRAPH_MODEL when they are set. Thread-safe (reads the environment).
  [[nodiscard]] static OpenAIConfig from_env();
};

/// A chat model served over OpenAI's chat-completions API (`POST {base_url}/chat/completions`).
/// The constructor checks the configuration: no base URL, a URL that is not
/// http(s)://host..., or no API key for api.openai.com throw ModelError (errc::kModelConfig)
/// before any request. Calls throw ModelError (kModelHttpStatus with the status and a body
/// excerpt, kModelConnection, kModelTimeout, kModelInvalidResponse) after the retries allowed,
/// CancelledError when cancelled (the request is aborted at once), and sg::Error
/// (errc::kInvalidArgument) for a RemoveMessage among the messages. Immutable after
/// construction; thread-safe: one model serves concurrent calls on any executors.
class OpenAIChatModel final : public ChatModel {
 public:
  explicit OpenAIChatModel(OpenAIConfig config);

  /// The configured model name. Thread-safe.
  [[nodiscard]] std::string model_name() const override { return config_.model; }
  /// "openai" (LangChain's ls_provider for OpenAI-compatible servers). Thread-safe.
  [[nodiscard]] std::string provider() const override { return "openai"; }
  /// The configuration as given. Thread-safe.
  [[nodiscard]] const OpenAIConfig& config() const noexcept { return config_; }

 protected:
  [[nodiscard]] boost::asio::awaitable<Message> agenerate(Request request) const override;
  /// Blocking calls run on an io_context kept per calling thread, so that the blocking calls of
  /// one thread reuse their connections.
  [[nodiscard]] Message generate(const Request& request) const override;

 private:
  OpenAIConfig config_;
  std::string endpoint_;
};

/// Embeddings from an OpenAI-compatible server (`POST {base_url}/embeddings`), usable as a
/// store's IndexConfig::embeddings. `config.model` is ignored: the embedding model is `model`.
/// embed() sends the texts in batches of `batch_size`, asks text-embedding-3 models for
/// `dims` dimensions, returns the vectors in input order and throws ModelError
/// (kModelInvalidResponse) when a vector does not have dims() numbers, or the errors of
/// OpenAIChatModel's calls. The constructor validates the configuration as OpenAIChatModel's
/// does (and throws ModelError (kModelConfig) for dims or batch_size 0). embed() blocks the
/// calling thread; thread-safe.
class OpenAIEmbeddings final : public Embeddings {
 public:
  explicit OpenAIEmbeddings(OpenAIConfig config, std::string model = "text-embedding-3-small",
                            std::size_t dims = 1536, std::size_t batch_size = 256);

  /// The size of every vector embed() returns. Thread-safe.
  [[nodiscard]] std::size_t dims() const noexcept override { return dims_; }
  /// One vector per text, in input order (none for no texts). Throws as described above.
  [[nodiscard]] std::vector<std::vector<float>> embed(
      const std::vector<std::string>& texts) override;
  /// The embedding model's name. Thread-safe.
  [[nodiscard]] const std::string& model() const noexcept { return model_; }

 private:
  OpenAIConfig config_;
  std::string endpoint_;
  std::string model_;
  std::size_t dims_;
  std::size_t batch_size_;
};

}  // namespace sg
