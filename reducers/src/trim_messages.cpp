// SPDX-License-Identifier: MIT
// trim_messages with LangChain's semantics. Where LangChain Python and LangChain.js differ, see
// docs/messages.md: the golden vectors (LangChain.js) are followed except for the recorded JS
// defects, where Python's behaviour is kept.
#include <stategraph/core/error.hpp>
#include <stategraph/reducers/message_utils.hpp>

#include <algorithm>
#include <optional>

namespace sg {
namespace {

enum class Partial { none, first, last };

bool is_type(const Message& m, const std::vector<MessageType>& types) {
  return std::find(types.begin(), types.end(), m.type) != types.end();
}

class Trimmer {
 public:
  Trimmer(const TokenCounter& count, const TextSplitter& split) : count_(count), split_(split) {}

  /// The longest prefix of `messages` within `max_tokens`, with an optional partial boundary
  /// message, then shortened until its last message has a type in `end_on`.
  std::vector<Message> first_max_tokens(std::vector<Message> messages, std::int64_t max_tokens,
                                        Partial partial,
                                        const std::vector<MessageType>& end_on) const {
    if (messages.empty()) return messages;
    const std::size_t n = messages.size();
    std::size_t idx = n;
    if (count_(messages) > max_tokens) {
      // Longest fitting prefix (binary search; counters are monotone in the list).
      std::size_t lo = 0;
      std::size_t hi = n - 1;
      while (lo < hi) {
        const std::size_t mid = (lo + hi + 1) / 2;
        if (count_(std::span<const Message>(messages.data(), mid)) <= max_tokens) {
          lo = mid;
        } else {
          hi = mid - 1;
        }
      }
      idx = lo;
      if (partial != Partial::none) {
        auto kept = partial_message(std::span<const Message>(messages.data(), idx), messages[idx],
                                    max_tokens, partial);
        if (kept) messages[idx++] = std::move(*kept);
      }
    }
    if (!end_on.empty()) {
      while (idx > 0 && !is_type(messages[idx - 1], end_on)) --idx;
    }
    messages.resize(idx);
    return messages;
  }

 private:
  /// The part of `boundary` that fits after `prefix`, if any: whole content blocks first, else
  /// the longest run of text pieces (leading for Partial::first, trailing for Partial::last).
  std::optional<Message> partial_message(std::span<const Message> prefix, const Message& boundary,
                                         std::int64_t max_tokens, Partial partial) const {
    std::vector<Message> scratch(prefix.begin(), prefix.end());
    auto fits = [&](std::initializer_list<const Message*> tail) {
      scratch.resize(prefix.size());
      for (const Message* m : tail) scratch.push_back(*m);
      return count_(scratch) <= max_tokens;
    };

    if (boundary.content.is_blocks() && boundary.content.blocks().size() >= 2) {
      const auto& blocks = boundary.content.blocks();
      const std::size_t nb = blocks.size();
      auto with_blocks = [&](std::size_t k) {
        Message m = boundary;
        if (partial == Partial::first) {
          m.content =
              Content::Blocks(blocks.begin(), blocks.begin() + static_cast<std::ptrdiff_t>(k));
        } else {
          m.content = Content::Blocks(blocks.end() - static_cast<std::ptrdiff_t>(k), blocks.end());
        }
        return m;
      };
      const Message one = with_blocks(1);
      if (fits({&one})) {
        // LangChain.js accepts one block, then tries the next size next to that accepted copy
        // and, when it fits, emits duplicate copies (a defect). Where that happens, keep
        // LangChain Python's result instead: the longest run of blocks that fits, once.
        const Message two = with_blocks(2);
        if (!fits({&one, &two})) return one;
        for (std::size_t k = nb - 1; k >= 2; --k) {
          Message candidate = with_blocks(k);
          if (fits({&candidate})) return candidate;
        }
        return one;
      }
    }

    std::string text;
    if (boundary.content.is_string()) {
      text = boundary.content.str();
    } else {
      const auto& blocks = boundary.content.blocks();
      auto text_of = [](const nlohmann::json& block) -> const std::string* {
        if (!block.is_object() || block.value("type", nlohmann::json()) != "text") return nullptr;
        auto it = block.find("text");
        if (it == block.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
          return nullptr;
        }
        return &it->get_ref<const std::string&>();
      };
      if (partial == Partial::first) {
        for (auto it = blocks.begin(); it != blocks.end() && text.empty(); ++it) {
          if (const auto* t = text_of(*it)) text = *t;
        }
      } else {
        for (auto it = blocks.rbegin(); it != blocks.rend() && text.empty(); ++it) {
          if (const auto* t = text_of(*it)) text = *t;
        }
      }
    }
    if (text.empty()) return std::nullopt;

    const std::vector<std::string> pieces = split_(text);
    // Longest run of pieces short of the whole text (which did not fit), longest first.
    for (std::size_t k = pieces.size() > 0 ? pieces.size() - 1 : 0; k >= 1; --k) {
      std::string joined;
      if (partial == Partial::first) {
        for (std::size_t i = 0; i < k; ++i) joined += pieces[i];
      } else {
        for (std::size_t i = pieces.size() - k; i < pieces.size(); ++i) joined += pieces[i];
      }
      Message candidate = boundary;
      candidate.content = Content(std::move(joined));
      if (fits({&candidate})) return candidate;
    }
    return std::nullopt;
  }

  const TokenCounter& count_;
  const TextSplitter& split_;
};

}  // namespace

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> pieces;
  std::size_t start = 0;
  for (std::size_t nl = text.find('\n'); nl != std::string_view::npos;
       nl = text.find('\n', start)) {
    pieces.emplace_back(text.substr(start, nl + 1 - start));
    start = nl + 1;
  }
  pieces.emplace_back(text.substr(start));
  return pieces;
}

TrimStrategy parse_trim_strategy(std::string_view name) {
  if (name == "first") return TrimStrategy::first;
  if (name == "last") return TrimStrategy::last;
  throw Error(errc::kInvalidArgument, "Unrecognized strategy='" + std::string(name) +
                                          "'. Supported strategies are 'last' and 'first'.");
}

std::vector<Message> trim_messages(std::span<const Message> messages, const TrimOptions& options) {
  if (!options.start_on.empty() && options.strategy == TrimStrategy::first) {
    throw Error(errc::kInvalidArgument, "start_on parameter is only valid with strategy='last'");
  }
  if (options.include_system && options.strategy == TrimStrategy::first) {
    throw Error(errc::kInvalidArgument,
                "include_system parameter is only valid with strategy='last'");
  }
  const TextSplitter splitter =
      options.text_splitter ? options.text_splitter : TextSplitter(split_lines);
  const Trimmer trimmer(options.token_counter, splitter);

  std::vector<Message> list(messages.begin(), messages.end());
  if (options.strategy == TrimStrategy::first) {
    return trimmer.first_max_tokens(std::move(list), options.max_tokens,
                                    options.allow_partial ? Partial::first : Partial::none,
                                    options.end_on);
  }

  if (!options.end_on.empty()) {
    while (!list.empty() && !is_type(list.back(), options.end_on)) list.pop_back();
  }
  std::optional<Message> system_message;
  if (options.include_system && !list.empty() && list.front().type == MessageType::system) {
    system_message = std::move(list.front());
    list.erase(list.begin());
  }
  std::int64_t budget = options.max_tokens;
  if (system_message) {
    const std::int64_t system_tokens = options.token_counter(*system_message);
    budget = std::max<std::int64_t>(0, budget - system_tokens);
  }
  std::reverse(list.begin(), list.end());
  std::vector<Message> kept = trimmer.first_max_tokens(
      std::move(list), budget, options.allow_partial ? Partial::last : Partial::none,
      options.start_on);
  std::reverse(kept.begin(), kept.end());
  if (system_message) kept.insert(kept.begin(), std::move(*system_message));
  return kept;
}

}  // namespace sg
