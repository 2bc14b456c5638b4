// SPDX-License-Identifier: MIT
#include <stategraph/core/error.hpp>
#include <stategraph/nodes/buffer_memory.hpp>

#include <algorithm>

namespace sg {
namespace {

std::shared_ptr<ChatMessageHistory> or_in_memory(std::shared_ptr<ChatMessageHistory> history) {
  return history ? std::move(history) : std::make_shared<InMemoryChatMessageHistory>();
}

std::vector<std::string> keys_of(const nlohmann::json& object) {
  std::vector<std::string> keys;
  for (auto it = object.begin(); it != object.end(); ++it) keys.push_back(it.key());
  return keys;
}

/// Python's repr of a list of strings, as LangChain's messages show it: ['a', 'b'].
std::string py_list(const std::vector<std::string>& names) {
  std::string out = "[";
  for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", '" : "'") + names[i] + "'";
  return out + "]";
}

/// The content of a human or AI message from a save_context value.
Content text_of(const nlohmann::json& value, std::string_view side, const std::string& key) {
  if (value.is_string()) return Content(value.get<std::string>());
  if (value.is_array()) return Content(value.get<Content::Blocks>());
  throw Error(errc::kInvalidArgument, "save_context: " + std::string(side) + "[\"" + key +
                                          "\"] must be a string or a list of content blocks; got " +
                                          value.dump());
}

void check_limit(std::int64_t limit, std::string_view who) {
  if (limit < 0) {
    throw Error(
        errc::kInvalidArgument,
        std::string(who) + ": the token limit must not be negative; got " + std::to_string(limit));
  }
}

}  // namespace

// --- BaseChatMemory ---------------------------------------------------------------------------

BaseChatMemory::BaseChatMemory(ChatMemoryOptions options,
                               std::shared_ptr<ChatMessageHistory> chat_memory)
    : options_(std::move(options)), chat_memory_(or_in_memory(std::move(chat_memory))) {}

nlohmann::json BaseChatMemory::load_memory_variables() const {
  nlohmann::json out = nlohmann::json::object();
  if (options_.return_messages) {
    out[options_.memory_key] = messages_to_json(buffer_as_messages());
  } else {
    out[options_.memory_key] = buffer_as_str();
  }
  return out;
}

void BaseChatMemory::save_context(const nlohmann::json& inputs, const nlohmann::json& outputs) {
  if (!inputs.is_object() || !outputs.is_object()) {
    throw Error(errc::kInvalidArgument, "save_context: inputs and outputs must be JSON objects");
  }
  // LangChain's get_prompt_input_key: the one input that is not a memory variable or "stop".
  std::string input_key = options_.input_key;
  if (input_key.empty()) {
    std::vector<std::string> candidates;
    for (const auto& key : keys_of(inputs)) {
      if (key != options_.memory_key && key != "stop") candidates.push_back(key);
    }
    if (candidates.size() != 1) {
      throw Error(errc::kInvalidArgument, "save_context: One input key expected got " +
                                              py_list(candidates) +
                                              " (set ChatMemoryOptions::input_key)");
    }
    input_key = candidates.front();
  } else if (!inputs.contains(input_key)) {
    throw Error(errc::kInvalidArgument, "save_context: the inputs have no key '" + input_key +
                                            "' (input_key); they have " + py_list(keys_of(inputs)));
  }
  std::string output_key = options_.output_key;
  if (output_key.empty()) {
    if (outputs.size() == 1) {
      output_key = outputs.begin().key();
    } else if (outputs.contains("output")) {
      output_key = "output";
    } else {
      throw Error(errc::kInvalidArgument,
                  "save_context: Got multiple output keys: " + py_list(keys_of(outputs)) +
                      ", cannot determine which to store in memory. "
                      "Please set the 'output_key' explicitly.");
    }
  } else if (!outputs.contains(output_key)) {
    throw Error(errc::kInvalidArgument, "save_context: the outputs have no key '" + output_key +
                                            "' (output_key); they have " +
                                            py_list(keys_of(outputs)));
  }
  const std::vector<Message> exchange{human(text_of(inputs[input_key], "inputs", input_key)),
                                      ai(text_of(outputs[output_key], "outputs", output_key))};
  std::lock_guard lock(mu_);
  chat_memory_->add_messages(exchange);
  after_save();
}

void BaseChatMemory::clear() {
  std::lock_guard lock(mu_);
  chat_memory_->clear();
}

std::vector<Message> BaseChatMemory::buffer_as_messages() const {
  std::lock_guard lock(mu_);
  return select(chat_memory_->messages());
}

std::string BaseChatMemory::buffer_as_str() const {
  return get_buffer_string(buffer_as_messages(), options_.human_prefix, options_.ai_prefix);
}

// --- window and token buffer ------------------------------------------------------------------

std::vector<Message> ConversationBufferWindowMemory::select(std::vector<Message> stored) const {
  if (k_ <= 0) return {};
  const auto keep = std::min(stored.size(), static_cast<std::size_t>(k_) * 2);
  stored.erase(stored.begin(), stored.end() - static_cast<std::ptrdiff_t>(keep));
  return stored;
}

ConversationTokenBufferMemory::ConversationTokenBufferMemory(
    std::int64_t max_token_limit, TokenCounter token_counter, ChatMemoryOptions options,
    std::shared_ptr<ChatMessageHistory> chat_memory)
    : BaseChatMemory(std::move(options), std::move(chat_memory)),
      max_token_limit_(max_token_limit),
      token_counter_(std::move(token_counter)) {
  check_limit(max_token_limit_, "ConversationTokenBufferMemory");
}

void ConversationTokenBufferMemory::after_save() {
  const std::vector<Message> buffer = chat_memory().messages();
  chat_memory().keep_last(messages_within(buffer, max_token_limit_, token_counter_));
}

// --- bounded histories ------------------------------------------------------------------------

WindowedChatMessageHistory::WindowedChatMessageHistory(std::size_t window_size,
                                                       std::shared_ptr<ChatMessageHistory> inner)
    : window_size_(window_size), inner_(or_in_memory(std::move(inner))) {}

void WindowedChatMessageHistory::add_messages(std::span<const Message> messages) {
  std::lock_guard lock(mu_);
  inner_->add_messages(messages);  // throws before counting anything
  total_seen_ += messages.size();
  inner_->keep_last(window_size_ * 2);
}

std::size_t WindowedChatMessageHistory::total_messages_seen() const {
  std::lock_guard lock(mu_);
  return total_seen_;
}

TokenLimitedChatMessageHistory::TokenLimitedChatMessageHistory(
    std::int64_t max_tokens, TokenCounter token_counter, std::shared_ptr<ChatMessageHistory> inner)
    : max_tokens_(max_tokens),
      token_counter_(std::move(token_counter)),
      inner_(or_in_memory(std::move(inner))) {
  check_limit(max_tokens_, "TokenLimitedChatMessageHistory");
}

void TokenLimitedChatMessageHistory::add_messages(std::span<const Message> messages) {
  std::lock_guard lock(mu_);
  inner_->add_messages(messages);
  const std::vector<Message> all = inner_->messages();
  inner_->keep_last(messages_within(all, max_tokens_, token_counter_));
}

// --- helpers ----------------------------------------------------------------------------------

std::size_t messages_within(std::span<const Message> messages, std::int64_t max_tokens,
                            const TokenCounter& token_counter) {
  // The oldest message goes first while the rest is over the limit (LangChain's pop(0) loop):
  // the longest suffix that fits, which trim_messages' last strategy finds.
  TrimOptions trim;
  trim.max_tokens = max_tokens;
  trim.token_counter = token_counter;
  return trim_messages(messages, trim).size();
}

std::vector<Message> last_exchanges(std::span<const Message> messages, std::size_t k,
                                    bool include_system) {
  // trim_messages with a counter of human messages: the longest suffix holding k of them,
  // starting on the k-th.
  TrimOptions trim;
  trim.max_tokens = static_cast<std::int64_t>(k);
  trim.token_counter = [](std::span<const Message> m) {
    return static_cast<std::int64_t>(std::count_if(
        m.begin(), m.end(), [](const Message& x) { return x.type == MessageType::human; }));
  };
  trim.start_on = {MessageType::human};
  trim.include_system = include_system;
  return trim_messages(messages, trim);
}

}  // namespace sg
