// SPDX-License-Identifier: MIT
#pragma once

// The model of LangChain's agent tests (FakeToolCallingModel), so that their expected values
// port unchanged: the reply's text is the texts of the messages it got joined by "-", its id is
// the call's index ("0", "1", ...), and its tool calls are tool_calls[index % size] (none when
// empty); with a response_format, the script does not cycle: past its end there are no tool
// calls, and the text is `structured` as JSON. It records what each call got.

#include <stategraph/models/chat_model.hpp>

#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace sg::test {

class FakeToolCallingModel final : public ChatModel {
 public:
  explicit FakeToolCallingModel(std::vector<std::vector<ToolCall>> tool_calls = {},
                                nlohmann::json structured = nullptr)
      : tool_calls_(std::move(tool_calls)), structured_(std::move(structured)) {}

  [[nodiscard]] std::string model_name() const override { return "fake-tool-calling"; }
  [[nodiscard]] std::string provider() const override { return "fake"; }

  /// The messages and options of each call so far.
  [[nodiscard]] std::vector<std::vector<Message>> inputs() const {
    std::lock_guard lock(mu_);
    return inputs_;
  }
  [[nodiscard]] std::vector<ChatOptions> options() const {
    std::lock_guard lock(mu_);
    return options_;
  }

 protected:
  [[nodiscard]] boost::asio::awaitable<Message> agenerate(Request request) const override {
    co_return reply(request);
  }
  [[nodiscard]] Message generate(const Request& request) const override { return reply(request); }

 private:
  [[nodiscard]] Message reply(const Request& request) const {
    std::lock_guard lock(mu_);
    const std::size_t index = index_++;
    inputs_.push_back(*request.messages);
    options_.push_back(*request.options);
    std::string text;
    for (const auto& m : *request.messages) text += (text.empty() ? "" : "-") + m.text();
    std::vector<ToolCall> calls;
    if (request.options->response_format && index >= tool_calls_.size()) {
      if (!structured_.is_null()) text = structured_.dump();
    } else if (!tool_calls_.empty()) {
      calls = tool_calls_[index % tool_calls_.size()];
    }
    return ai(std::move(text), std::move(calls), std::to_string(index));
  }

  std::vector<std::vector<ToolCall>> tool_calls_;
  nlohmann::json structured_;
  mutable std::mutex mu_;
  mutable std::size_t index_ = 0;
  mutable std::vector<std::vector<Message>> inputs_;
  mutable std::vector<ChatOptions> options_;
};

/// A model that answers with `replies` in order (langgraph-supervisor's FakeChatModel: the
/// tests' scripts), recording what each call got. Throws sg::Error when the script is spent.
class ScriptedChatModel final : public ChatModel {
 public:
  explicit ScriptedChatModel(std::vector<Message> replies) : replies_(std::move(replies)) {}

  [[nodiscard]] std::string model_name() const override { return "scripted"; }
  [[nodiscard]] std::string provider() const override { return "fake"; }

  [[nodiscard]] std::vector<std::vector<Message>> inputs() const {
    std::lock_guard lock(mu_);
    return inputs_;
  }

 protected:
  [[nodiscard]] boost::asio::awaitable<Message> agenerate(Request request) const override {
    co_return reply(request);
  }
  [[nodiscard]] Message generate(const Request& request) const override { return reply(request); }

 private:
  [[nodiscard]] Message reply(const Request& request) const {
    std::lock_guard lock(mu_);
    inputs_.push_back(*request.messages);
    if (next_ >= replies_.size()) throw Error(errc::kInvalidArgument, "the script is spent");
    return replies_[next_++];
  }

  std::vector<Message> replies_;
  mutable std::mutex mu_;
  mutable std::size_t next_ = 0;
  mutable std::vector<std::vector<Message>> inputs_;
};

}  // namespace sg::test
