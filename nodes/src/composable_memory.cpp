// SPDX-License-Identifier: MIT
#include <stategraph/core/error.hpp>
#include <stategraph/core/uuid.hpp>
#include <stategraph/nodes/composable_memory.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "invalid_argument.hpp"

namespace sg {
namespace {

void reject_removals(std::span<const Message> messages, std::string_view where) {
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].type == MessageType::remove)
      detail::invalid_argument(
          fmt::format("{}: message {} is a RemoveMessage, not a message to keep", where, i));
  }
}

/// Python's str.strip(): the ASCII whitespace Python strips.
std::string strip(std::string_view s) {
  auto space = [](char c) {
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
  };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return std::string(s);
}

bool starts_batch(const Message& message, bool batch_by_user_message) {
  return !batch_by_user_message || message.type == MessageType::human ||
         message.type == MessageType::system;
}

bool is_prefix(const Namespace& a, const Namespace& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace

void ChatMemory::put_messages(std::span<const Message> messages) {
  for (const auto& m : messages) put(m);
}

std::string_view chat_role(MessageType type) {
  switch (type) {
    case MessageType::human:
      return "user";
    case MessageType::ai:
      return "assistant";
    case MessageType::system:
      return "system";
    case MessageType::tool:
      return "tool";
    case MessageType::remove:
      break;
  }
  detail::invalid_argument("a RemoveMessage has no chat role");
}

// ---- ChatMemoryBuffer ----

std::vector<Message> chat_memory_window(std::span<const Message> history, std::int64_t token_limit,
                                        const TokenCounter& token_counter,
                                        std::int64_t initial_token_count) {
  if (token_limit < 1)
    detail::invalid_argument(fmt::format("token_limit must be >= 1, not {}", token_limit));
  if (initial_token_count > token_limit)
    detail::invalid_argument(fmt::format("the initial token count {} exceeds the token limit {}",
                                         initial_token_count, token_limit));
  const std::size_t n = history.size();
  // Tokens of history[i..]: each message counted once, summed from the end.
  std::vector<std::int64_t> suffix(n + 1, 0);
  for (std::size_t i = n; i-- > 0;)
    suffix[i] = suffix[i + 1] + token_counter(history.subspan(i, 1));
  auto tokens = [&](std::size_t start) { return suffix[start] + initial_token_count; };
  std::size_t start = 0;
  while (start < n && tokens(start) > token_limit && n - start > 1) {
    ++start;
    // A history must not start with a tool result or an assistant message.
    while (start < n &&
           (history[start].type == MessageType::tool || history[start].type == MessageType::ai))
      ++start;
  }
  if (start >= n || tokens(start) > token_limit) return {};
  return {history.begin() + static_cast<std::ptrdiff_t>(start), history.end()};
}

ChatMemoryBuffer::ChatMemoryBuffer(ChatMemoryBufferOptions options,
                                   std::vector<Message> chat_history)
    : options_(std::move(options)), history_(std::move(chat_history)) {
  if (options_.token_limit < 1)
    detail::invalid_argument(
        fmt::format("ChatMemoryBuffer: token_limit must be >= 1, not {}", options_.token_limit));
  reject_removals(history_, "ChatMemoryBuffer");
}

std::vector<Message> ChatMemoryBuffer::get(const std::optional<std::string>& input) {
  return get(input, 0);
}

std::vector<Message> ChatMemoryBuffer::get(const std::optional<std::string>& /*input*/,
                                           std::int64_t initial_token_count) {
  const std::vector<Message> history = get_all();
  return chat_memory_window(history, options_.token_limit, options_.token_counter,
                            initial_token_count);
}

std::vector<Message> ChatMemoryBuffer::get_all() {
  std::lock_guard lock(mu_);
  return history_;
}

void ChatMemoryBuffer::put(const Message& message) {
  reject_removals(std::span<const Message>(&message, 1), "ChatMemoryBuffer::put");
  std::lock_guard lock(mu_);
  history_.push_back(message);
}

void ChatMemoryBuffer::set(std::vector<Message> messages) {
  reject_removals(messages, "ChatMemoryBuffer::set");
  std::lock_guard lock(mu_);
  history_ = std::move(messages);
}

void ChatMemoryBuffer::reset() {
  std::lock_guard lock(mu_);
  history_.clear();
}

// ---- VectorMemory ----

VectorMemory::VectorMemory(std::shared_ptr<Store> store, Namespace ns, VectorMemoryOptions options)
    : store_(std::move(store)), ns_(std::move(ns)), options_(options) {
  if (!store_) detail::invalid_argument("VectorMemory needs a store");
  if (options_.similarity_top_k == 0)
    detail::invalid_argument("VectorMemory: similarity_top_k must be > 0");
  validate_namespace(ns_);
}

std::vector<Message> VectorMemory::get(const std::optional<std::string>& input) {
  if (!input) return {};
  SearchOp op;
  op.prefix = ns_;
  op.query = *input;
  op.limit = options_.similarity_top_k;
  std::vector<Message> out;
  for (const auto& hit : store_->search(std::move(op))) {
    const auto& value = hit.item.value;
    const auto messages = value.find("messages");
    if (messages == value.end() || !messages->is_array())
      throw StoreError(errc::kStoreCorrupt, "vector memory item '" + hit.item.key + "' under " +
                                                join_namespace(hit.item.ns) + " has no messages");
    for (auto& m : messages_from_json(*messages)) out.push_back(std::move(m));
  }
  return out;
}

std::vector<Message> VectorMemory::get_all() {
  detail::invalid_argument(
      "a vector memory cannot list all its messages: it retrieves them for an input (get)");
}

void VectorMemory::add_locked(const Message& message) {
  if (!batch_ || starts_batch(message, options_.batch_by_user_message)) {
    batch_ = Batch{};
    batch_->key = "batch-" + (message.id.empty() ? new_uuid4() : message.id);
  }
  const std::string text = message.text();
  if (batch_->text.empty()) {
    batch_->text += text;
  } else {
    batch_->text += " " + text;
  }
  batch_->messages.push_back(message);
}

void VectorMemory::commit_locked() {
  if (!batch_ || batch_->text.empty()) return;  // LlamaIndex stores no empty batch
  nlohmann::json value = {{"text", batch_->text}, {"messages", messages_to_json(batch_->messages)}};
  store_->put(ns_, batch_->key, std::move(value), std::nullopt, std::vector<std::string>{"text"});
}

void VectorMemory::put(const Message& message) {
  put_messages(std::span<const Message>(&message, 1));
}

void VectorMemory::put_messages(std::span<const Message> messages) {
  reject_removals(messages, "VectorMemory::put");
  std::lock_guard lock(mu_);
  put_locked(messages);
}

void VectorMemory::put_locked(std::span<const Message> messages) {
  bool pending = false;
  for (const auto& m : messages) {
    if (pending && starts_batch(m, options_.batch_by_user_message)) {
      commit_locked();
      pending = false;
    }
    add_locked(m);
    pending = true;
  }
  if (pending) commit_locked();
}

void VectorMemory::set(std::vector<Message> messages) {
  reject_removals(messages, "VectorMemory::set");
  std::lock_guard lock(mu_);
  reset_locked();
  put_locked(messages);
}

void VectorMemory::reset() {
  std::lock_guard lock(mu_);
  reset_locked();
}

void VectorMemory::reset_locked() {
  while (true) {
    SearchOp op;
    op.prefix = ns_;
    op.limit = 256;
    const auto hits = store_->search(std::move(op));
    if (hits.empty()) break;
    for (const auto& hit : hits) store_->remove(hit.item.ns, hit.item.key);
  }
  batch_.reset();
}

std::shared_ptr<VectorMemory> VectorMemory::copy_to(Namespace target) const {
  if (is_prefix(ns_, target) || is_prefix(target, ns_))
    detail::invalid_argument("VectorMemory::copy_to: " + join_namespace(target) + " overlaps " +
                             join_namespace(ns_));
  auto copy = std::make_shared<VectorMemory>(store_, target, options_);
  copy->reset();
  std::lock_guard lock(mu_);
  for (std::size_t offset = 0;;) {
    SearchOp op;
    op.prefix = ns_;
    op.limit = 256;
    op.offset = offset;
    const auto hits = store_->search(std::move(op));
    if (hits.empty()) break;
    offset += hits.size();
    for (const auto& hit : hits) {
      Namespace ns = target;
      ns.insert(ns.end(), hit.item.ns.begin() + static_cast<std::ptrdiff_t>(ns_.size()),
                hit.item.ns.end());
      store_->put(ns, hit.item.key, hit.item.value, std::nullopt, std::vector<std::string>{"text"});
    }
  }
  copy->batch_ = batch_;
  return copy;
}

// ---- composing ----

std::string format_secondary_messages(const std::vector<std::vector<Message>>& secondary) {
  std::string out = "\n\n" + std::string(kMemoryIntro) + "\n";
  for (std::size_t i = 0; i < secondary.size(); ++i) {
    out += fmt::format("\n=====Relevant messages from memory source {}=====\n\n", i + 1);
    for (const auto& m : secondary[i]) {
      std::string role(chat_role(m.type));
      std::transform(role.begin(), role.end(), role.begin(),
                     [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
      std::string text = m.text();
      if (text.empty() && !m.tool_calls.empty()) text = "None";  // Python's content=None
      out += "\t" + role + ": " + text + "\n";
    }
    out += fmt::format("\n=====End of relevant messages from memory source {}======\n\n", i + 1);
  }
  out += kMemoryOutro;
  return out;
}

bool same_memory_message(const Message& a, const Message& b) {
  return a.type == b.type && a.content == b.content && a.tool_calls == b.tool_calls &&
         a.tool_call_id == b.tool_call_id;
}

std::vector<Message> compose_memory(std::vector<Message> primary,
                                    const std::vector<std::vector<Message>>& secondary) {
  std::vector<std::vector<Message>> histories;
  for (const auto& history : secondary) {
    std::vector<Message> fresh;
    for (const auto& m : history) {
      const bool known = std::any_of(primary.begin(), primary.end(),
                                     [&](const Message& p) { return same_memory_message(p, m); });
      if (!known) fresh.push_back(m);
    }
    if (!fresh.empty()) histories.push_back(std::move(fresh));
  }
  if (histories.empty()) return primary;
  const std::string block = format_secondary_messages(histories);
  if (!primary.empty() && primary.front().type == MessageType::system) {
    const std::string text = primary.front().text();
    primary.front().content =
        strip(std::string_view(text).substr(0, text.find(kMemoryIntro))) + block;
  } else {
    primary.insert(primary.begin(), sg::system(std::string(kDefaultMemorySystemPrompt) + block));
  }
  return primary;
}

// ---- SimpleComposableMemory ----

SimpleComposableMemory::SimpleComposableMemory(std::shared_ptr<ChatMemory> primary,
                                               std::vector<std::shared_ptr<ChatMemory>> secondary)
    : primary_(std::move(primary)), secondary_(std::move(secondary)) {
  if (!primary_) detail::invalid_argument("SimpleComposableMemory needs a primary memory");
  for (std::size_t i = 0; i < secondary_.size(); ++i)
    if (!secondary_[i])
      detail::invalid_argument(
          fmt::format("SimpleComposableMemory: secondary source {} is null", i));
}

std::vector<Message> SimpleComposableMemory::get(const std::optional<std::string>& input) {
  std::vector<Message> messages = primary_->get(input);
  std::vector<std::vector<Message>> histories;
  histories.reserve(secondary_.size());
  for (const auto& source : secondary_) histories.push_back(source->get(input));
  return compose_memory(std::move(messages), histories);
}

std::vector<Message> SimpleComposableMemory::get_all() {
  return primary_->get_all();
}

void SimpleComposableMemory::put(const Message& message) {
  put_messages(std::span<const Message>(&message, 1));
}

void SimpleComposableMemory::put_messages(std::span<const Message> messages) {
  reject_removals(messages, "SimpleComposableMemory::put");  // before any source changes
  primary_->put_messages(messages);
  for (const auto& source : secondary_) source->put_messages(messages);
}

void SimpleComposableMemory::set(std::vector<Message> messages) {
  reject_removals(messages, "SimpleComposableMemory::set");
  primary_->set(messages);
  // The secondary sources are long-term memories: they get the messages put, not replaced.
  for (const auto& source : secondary_) source->put_messages(messages);
}

void SimpleComposableMemory::reset() {
  primary_->reset();
  for (const auto& source : secondary_) source->reset();
}

// ---- graph pieces ----

void check_composable_memory_hook(const std::vector<std::shared_ptr<ChatMemory>>& secondary,
                                  const ComposableMemoryHookOptions& options) {
  for (std::size_t i = 0; i < secondary.size(); ++i)
    if (!secondary[i])
      detail::invalid_argument(fmt::format("composable_memory_hook: source {} is null", i));
  if (options.token_limit < 1)
    detail::invalid_argument(fmt::format("composable_memory_hook: token_limit must be >= 1, not {}",
                                         options.token_limit));
}

std::vector<Message> compose_thread_memory(
    std::span<const Message> thread, const std::vector<std::shared_ptr<ChatMemory>>& secondary,
    const ComposableMemoryHookOptions& options) {
  check_composable_memory_hook(secondary, options);
  std::vector<Message> window =
      chat_memory_window(thread, options.token_limit, options.token_counter);
  if (!options.system_prompt.empty() &&
      (window.empty() || window.front().type != MessageType::system))
    window.insert(window.begin(), sg::system(options.system_prompt));
  std::optional<std::string> input;
  for (auto it = thread.rbegin(); it != thread.rend(); ++it) {
    if (it->type == MessageType::human) {
      input = it->text();
      break;
    }
  }
  std::vector<std::vector<Message>> histories;
  histories.reserve(secondary.size());
  for (const auto& source : secondary) histories.push_back(source->get(input));
  return compose_memory(std::move(window), histories);
}

std::span<const Message> last_turn(std::span<const Message> thread) {
  for (std::size_t i = thread.size(); i-- > 0;)
    if (thread[i].type == MessageType::human) return thread.subspan(i);
  return thread;
}

}  // namespace sg
