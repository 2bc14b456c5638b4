// SPDX-License-Identifier: MIT
#include "model_edits.hpp"

#include <stategraph/core/error.hpp>
#include <stategraph/models/tool.hpp>
#include <stategraph/reducers/message_utils.hpp>

namespace sg::nodes_detail {

int ask_until_accepted(const ChatModel& model, std::vector<Message> prompt,
                       const ChatOptions& options, int max_attempts, const std::string& what,
                       const std::function<void(const Message&)>& accept) {
  if (max_attempts < 1)
    throw Error(errc::kInvalidArgument, what + ": max_attempts must be at least 1");
  std::string last_error;
  for (int attempt = 1; attempt <= max_attempts; ++attempt) {
    Message reply = model.invoke(prompt, options);
    try {
      accept(reply);
      return attempt;
    } catch (const Error& e) {
      if (e.code() != errc::kInvalidArgument) throw;
      last_error = e.what();
    }
    const std::string feedback =
        "Error: " + last_error + "\nNothing was applied. Fix the mistake and try again.";
    std::vector<ToolCall> calls = reply.tool_calls;
    prompt.push_back(std::move(reply));
    if (calls.empty()) {
      prompt.push_back(human(feedback));
    } else {
      for (const auto& call : calls) {
        prompt.push_back(tool_answer(feedback, call, "error"));
      }
    }
  }
  throw Error(errc::kInvalidArgument, what + ": the model's proposal was rejected " +
                                          std::to_string(max_attempts) +
                                          (max_attempts == 1 ? " time" : " times") +
                                          "; nothing was changed. Last error: " + last_error);
}

std::string conversation_text(std::span<const Message> messages) {
  return get_buffer_string(messages);
}

std::string between_tags(const std::string& text, const std::string& tag) {
  auto trim = [](std::string s) {
    const auto first = s.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) return std::string();
    const auto last = s.find_last_not_of(" \t\r\n");
    return s.substr(first, last - first + 1);
  };
  const std::string open = "<" + tag + ">";
  const std::string close = "</" + tag + ">";
  const auto begin = text.find(open);
  if (begin == std::string::npos) return trim(text);
  const auto from = begin + open.size();
  const auto end = text.find(close, from);
  return trim(text.substr(from, end == std::string::npos ? std::string::npos : end - from));
}

}  // namespace sg::nodes_detail
