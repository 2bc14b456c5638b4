// SPDX-License-Identifier: MIT
#pragma once
// FakeChatModel: LangMem's test double (tests/short_term/utils.py) for ported tests whose
// expectations name exact prompts: it returns scripted replies in order (cycling)
// and records every request. Tests of behaviour use sg::LocalModel or the loopback server.
#include <stategraph/models/chat_model.hpp>

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

namespace sg_test {

class FakeChatModel final : public sg::ChatModel {
 public:
  explicit FakeChatModel(std::vector<sg::Message> responses = {})
      : responses_(responses.empty() ? std::vector<sg::Message>{sg::ai("This is a mock summary.")}
                                     : std::move(responses)) {}

  [[nodiscard]] std::string model_name() const override { return "fake"; }
  [[nodiscard]] std::string provider() const override { return "fake"; }

  /// The messages of every call so far, in order.
  [[nodiscard]] std::vector<std::vector<sg::Message>> invoke_calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }

 protected:
  [[nodiscard]] boost::asio::awaitable<sg::Message> agenerate(Request request) const override {
    co_return generate(request);
  }
  [[nodiscard]] sg::Message generate(const Request& request) const override {
    std::lock_guard lock(mu_);
    calls_.push_back(*request.messages);
    const sg::Message& reply = responses_[next_];  // cycles, as FakeMessagesListChatModel
    next_ = (next_ + 1) % responses_.size();
    return reply;
  }

 private:
  std::vector<sg::Message> responses_;
  mutable std::mutex mu_;
  mutable std::vector<std::vector<sg::Message>> calls_;
  mutable std::size_t next_ = 0;
};

}  // namespace sg_test
