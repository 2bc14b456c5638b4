// SPDX-License-Identifier: MIT
#pragma once
// LocalModel: the offline, deterministic default model.
//
// It is not a language model. It is a small set of fixed rules over the messages it is given, so
// that every example, the demo and the tests run on a fresh machine with no key and no network,
// and so that memory behaviour (what a graph kept in the context, what a summary preserved) is
// visible in its answers:
// - A statement ("My name is Ada.") is acknowledged: "Noted: my name is Ada."
// - A question ("What is my name?") is answered from the statements in its context (earlier human
//   messages, system messages such as summaries): the statement sharing the most words with the
//   question, "You told me: my name is Ada." — or "I don't know that yet." when nothing matches.
//   Facts that were trimmed away are therefore really forgotten.
// - Asked to summarize (the last message asks for a summary, as LangMem's and LangGraph's
//   summarization prompts do), it extracts the statements of the conversation (and of an
//   existing summary in the prompt) into a summary of at most max_tokens (default 256)
//   approximate tokens, keeping the most recent when they do not fit.
// - With tools, it calls a tool the last human message names (by its name, e.g. "multiply 6 and
//   7" for a tool "multiply"): number arguments are taken from the numbers in the message in
//   order, a single string argument from the text after the tool's name. Once tool results
//   follow, it answers with them.
// - script() queues fixed replies (e.g. scripted tool calls) returned before any rule.
// It streams word by word and reports usage (approximate token counts).

#include <stategraph/models/chat_model.hpp>

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sg {

/// The offline deterministic model described above. Thread-safe.
class LocalModel final : public ChatModel {
 public:
  LocalModel() = default;

  /// Queues replies returned, in order, by the next calls (their ids are filled in when empty).
  /// Thread-safe.
  void script(std::vector<Message> replies);
  /// Replies still queued.
  [[nodiscard]] std::size_t scripted() const;

  [[nodiscard]] std::string model_name() const override { return "stategraph-local"; }
  [[nodiscard]] std::string provider() const override { return "local"; }

 protected:
  [[nodiscard]] boost::asio::awaitable<Message> agenerate(Request request) const override;
  [[nodiscard]] Message generate(const Request& request) const override;

 private:
  [[nodiscard]] Message reply_to(const Request& request) const;

  mutable std::mutex mu_;
  mutable std::deque<Message> script_;
};

/// The model every example, the demo and the CLI use, from the environment: an OpenAIChatModel
/// (OpenAIConfig::from_env()) when OPENAI_BASE_URL is set; else an AnthropicChatModel
/// (AnthropicConfig::from_env()) when ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL is set (an explicit
/// OPENAI_BASE_URL wins over an ANTHROPIC_API_KEY exported for other tools); else a LocalModel.
/// Says which once per process: through sg::log (info) when a log sink is set, else on stderr.
/// Throws ModelError (errc::kModelConfig) for a bad configuration. Thread-safe.
[[nodiscard]] std::shared_ptr<ChatModel> default_chat_model();

}  // namespace sg
