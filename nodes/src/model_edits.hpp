// SPDX-License-Identifier: MIT
#pragma once
// Private to nodes/: asking a model for edits (tool calls) until one is accepted, and the
// conversation text the memory prompts quote.

#include <stategraph/models/chat_model.hpp>

#include <functional>
#include <span>
#include <string>
#include <vector>

namespace sg::nodes_detail {

/// Asks `model` with `prompt` and hands the reply to `accept`. When accept throws sg::Error (the
/// proposal is rejected and nothing was applied), the reply goes back to the model with the
/// error as the result of each of its tool calls (or as a human message when it made none) and
/// the model is asked again, at most `max_attempts` times in all. Returns the attempts used.
/// Throws sg::Error (errc::kInvalidArgument) "<what>: the model's proposal was rejected N
/// times; nothing was changed. Last error: ..." after the last rejection; model errors
/// propagate.
int ask_until_accepted(const ChatModel& model, std::vector<Message> prompt,
                       const ChatOptions& options, int max_attempts, const std::string& what,
                       const std::function<void(const Message&)>& accept);

/// The conversation as the memory prompts quote it: get_buffer_string, one "Human: ..." /
/// "AI: ..." line per message.
std::string conversation_text(std::span<const Message> messages);

/// The text between <tag> and </tag> in `text`, trimmed; the whole text trimmed when the tags
/// are absent.
std::string between_tags(const std::string& text, const std::string& tag);

}  // namespace sg::nodes_detail
