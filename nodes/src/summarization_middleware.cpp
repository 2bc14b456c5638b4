// SPDX-License-Identifier: MIT
// LangChain's SummarizationMiddleware for create_agent.
#include <stategraph/core/error.hpp>
#include <stategraph/nodes/summarization_middleware.hpp>

#include <fmt/args.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "invalid_argument.hpp"

namespace sg {
namespace {

constexpr std::size_t summ_mw_default_keep = 20;    // LangChain's _DEFAULT_MESSAGES_TO_KEEP
constexpr std::size_t summ_mw_fallback_count = 15;  // _DEFAULT_FALLBACK_MESSAGE_COUNT
constexpr std::string_view summ_mw_name = "SummarizationMiddleware";

// A value as Python prints it in LangChain's messages: a whole count as an int, a fraction as
// a float ("0.0", "1.5").
std::string summ_mw_python_number(double value, bool as_float) {
  if (!as_float && std::isfinite(value) && value == std::floor(value) && std::abs(value) < 1e18)
    return fmt::format("{}", static_cast<std::int64_t>(value));
  std::string text = fmt::format("{}", value);
  if (std::isfinite(value) && text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

// LangChain's _validate_context_size.
void summ_mw_check_size(const ContextSize& size, std::string_view parameter) {
  switch (size.kind) {
    case ContextSize::Kind::fraction:
      if (!(size.value > 0 && size.value <= 1))
        detail::invalid_argument(
            fmt::format("Fractional {} values must be between 0 and 1, got {}.", parameter,
                        summ_mw_python_number(size.value, true)));
      return;
    case ContextSize::Kind::messages:
    case ContextSize::Kind::tokens: {
      const std::string_view kind =
          size.kind == ContextSize::Kind::messages ? "messages" : "tokens";
      if (!(size.value > 0))
        detail::invalid_argument(fmt::format("{} thresholds must be greater than 0, got {}.",
                                             parameter, summ_mw_python_number(size.value, false)));
      if (size.value != std::floor(size.value) || !std::isfinite(size.value))
        detail::invalid_argument(fmt::format("{} {} values must be integers, got {}.", kind,
                                             parameter, summ_mw_python_number(size.value, false)));
      return;
    }
  }
  detail::invalid_argument(fmt::format("Unsupported context size type {} for {}.",
                                       static_cast<int>(size.kind), parameter));
}

// The prompt with {messages} replaced (Python's str.format, fmt syntax).
std::string summ_mw_format_prompt(const std::string& prompt, const std::string& messages) {
  fmt::dynamic_format_arg_store<fmt::format_context> args;
  args.push_back(fmt::arg("messages", messages));
  return fmt::vformat(prompt, args);
}

// Python's int(value), clamped to the range of std::int64_t.
std::int64_t summ_mw_whole(double value) {
  if (!(value > -9.2e18)) return std::numeric_limits<std::int64_t>::min();
  if (!(value < 9.2e18)) return std::numeric_limits<std::int64_t>::max();
  return static_cast<std::int64_t>(value);
}

// int(max_input_tokens * fraction), at least 1 (LangChain's threshold and keep budget).
std::int64_t summ_mw_fraction_tokens(std::int64_t max_input_tokens, double fraction) {
  return std::max<std::int64_t>(summ_mw_whole(static_cast<double>(max_input_tokens) * fraction), 1);
}

// LangChain's _find_safe_cutoff: keep the last `keep` messages.
std::size_t summ_mw_cutoff_by_count(std::span<const Message> messages, std::size_t keep) {
  if (messages.size() <= keep) return 0;
  return safe_summarization_cutoff(messages, messages.size() - keep);
}

// LangChain's _find_token_based_cutoff: the earliest index whose suffix fits `target` tokens.
std::size_t summ_mw_cutoff_by_tokens(std::span<const Message> messages, std::int64_t target,
                                     const TokenCounter& count) {
  if (messages.empty()) return 0;
  target = std::max<std::int64_t>(target, 1);
  if (count(messages) <= target) return 0;
  std::size_t left = 0;
  std::size_t right = messages.size();
  std::size_t candidate = messages.size();
  while (left < right) {
    const std::size_t mid = left + (right - left) / 2;
    if (count(messages.subspan(mid)) <= target) {
      candidate = mid;
      right = mid;
    } else {
      left = mid + 1;
    }
  }
  if (candidate == messages.size()) candidate = left;
  if (candidate >= messages.size()) {
    if (messages.size() == 1) return 0;
    candidate = messages.size() - 1;
  }
  return safe_summarization_cutoff(messages, candidate);
}

std::string summ_mw_strip(std::string_view text) {
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  const std::size_t begin = text.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  const std::size_t end = text.find_last_not_of(kSpace);
  return std::string(text.substr(begin, end - begin + 1));
}

}  // namespace

void check_summarization_middleware_options(const SummarizationMiddlewareOptions& options) {
  bool fraction = false;
  for (const ContextSize& size : options.trigger) {
    summ_mw_check_size(size, "trigger");
    fraction = fraction || size.kind == ContextSize::Kind::fraction;
  }
  summ_mw_check_size(options.keep, "keep");
  fraction = fraction || options.keep.kind == ContextSize::Kind::fraction;
  if (options.max_input_tokens && *options.max_input_tokens <= 0)
    detail::invalid_argument(
        fmt::format("max_input_tokens must be greater than 0, got {}.", *options.max_input_tokens));
  if (fraction && !options.max_input_tokens)
    detail::invalid_argument(
        "Model profile information is required to use fractional token limits, and is "
        "unavailable for the specified model. Please use absolute token counts instead, or set "
        "`max_input_tokens` to the model's maximum input tokens.");
  if (options.trim_tokens_to_summarize && *options.trim_tokens_to_summarize <= 0)
    detail::invalid_argument(fmt::format("trim_tokens_to_summarize must be greater than 0, got {}.",
                                         *options.trim_tokens_to_summarize));
  try {
    (void)summ_mw_format_prompt(options.summary_prompt, "");
  } catch (const fmt::format_error& e) {
    detail::invalid_argument(fmt::format("summary_prompt does not format: {}", e.what()));
  }
}

bool should_summarize(std::span<const Message> messages, std::int64_t total_tokens,
                      const SummarizationMiddlewareOptions& options) {
  for (const ContextSize& size : options.trigger) {
    switch (size.kind) {
      case ContextSize::Kind::messages:
        if (static_cast<double>(messages.size()) >= size.value) return true;
        break;
      case ContextSize::Kind::tokens:
        if (static_cast<double>(total_tokens) >= size.value) return true;
        break;
      case ContextSize::Kind::fraction:
        if (options.max_input_tokens &&
            total_tokens >= summ_mw_fraction_tokens(*options.max_input_tokens, size.value))
          return true;
        break;
    }
  }
  return false;
}

std::size_t safe_summarization_cutoff(std::span<const Message> messages, std::size_t cutoff) {
  if (cutoff >= messages.size() || messages[cutoff].type != MessageType::tool) return cutoff;
  std::set<std::string> answered;
  std::size_t end = cutoff;
  for (; end < messages.size() && messages[end].type == MessageType::tool; ++end) {
    if (!messages[end].tool_call_id.empty()) answered.insert(messages[end].tool_call_id);
  }
  for (std::size_t i = cutoff; i-- > 0;) {
    const Message& m = messages[i];
    if (m.type != MessageType::ai) continue;
    const bool made_one = std::any_of(
        m.tool_calls.begin(), m.tool_calls.end(),
        [&](const ToolCall& call) { return !call.id.empty() && answered.contains(call.id); });
    if (made_one) return i;
  }
  return end;
}

std::size_t summarization_cutoff(std::span<const Message> messages,
                                 const SummarizationMiddlewareOptions& options) {
  const ContextSize& keep = options.keep;
  switch (keep.kind) {
    case ContextSize::Kind::messages:
      if (!(keep.value < static_cast<double>(messages.size()))) return 0;  // keeps them all
      return summ_mw_cutoff_by_count(messages, static_cast<std::size_t>(std::max(keep.value, 0.0)));
    case ContextSize::Kind::tokens:
      return summ_mw_cutoff_by_tokens(messages, summ_mw_whole(keep.value), options.token_counter);
    case ContextSize::Kind::fraction:
      if (!options.max_input_tokens) return summ_mw_cutoff_by_count(messages, summ_mw_default_keep);
      return summ_mw_cutoff_by_tokens(
          messages, summ_mw_fraction_tokens(*options.max_input_tokens, keep.value),
          options.token_counter);
  }
  return summ_mw_cutoff_by_count(messages, summ_mw_default_keep);
}

std::vector<Message> messages_to_summarize(std::span<const Message> messages,
                                           const SummarizationMiddlewareOptions& options) {
  if (!options.trim_tokens_to_summarize) return {messages.begin(), messages.end()};
  TrimOptions trim;
  trim.max_tokens = *options.trim_tokens_to_summarize;
  trim.token_counter = options.token_counter;
  trim.strategy = TrimStrategy::last;
  trim.start_on = {MessageType::human};
  trim.allow_partial = true;
  trim.include_system = true;
  try {
    return trim_messages(messages, trim);
  } catch (const std::exception&) {
    const std::size_t n = std::min(messages.size(), summ_mw_fallback_count);
    return {messages.end() - static_cast<std::ptrdiff_t>(n), messages.end()};
  }
}

std::string summarize_conversation_history(const ChatModel& model,
                                           std::span<const Message> messages,
                                           const SummarizationMiddlewareOptions& options) {
  if (messages.empty()) return "No previous conversation history.";
  const std::vector<Message> trimmed = messages_to_summarize(messages, options);
  if (trimmed.empty()) return "Previous conversation was too long to summarize.";
  try {
    std::string prompt = summ_mw_format_prompt(options.summary_prompt, get_buffer_string(trimmed));
    prompt.erase(prompt.find_last_not_of(" \t\n\r\f\v") + 1);  // LangChain's .rstrip()
    const Message reply = model.invoke({human(std::move(prompt))}, options.model_options);
    return summ_mw_strip(reply.text());
  } catch (const CancelledError&) {
    throw;
  } catch (const std::exception& e) {
    return std::string("Error generating summary: ") + e.what();
  }
}

Message summarization_message(const std::string& summary) {
  Message m = human(std::string(kSummaryMessagePrefix) + summary);
  m.additional_kwargs = nlohmann::json{{"lc_source", "summarization"}};
  return m;
}

std::optional<std::vector<Message>> summarization_update(
    const ChatModel& model, std::span<const Message> messages,
    const SummarizationMiddlewareOptions& options) {
  if (options.trigger.empty()) return std::nullopt;
  const std::int64_t total = options.token_counter(messages);
  if (!should_summarize(messages, total, options)) return std::nullopt;
  const std::size_t cutoff = summarization_cutoff(messages, options);
  if (cutoff == 0) return std::nullopt;
  const std::size_t split = std::min(cutoff, messages.size());
  std::vector<Message> update;
  update.reserve(messages.size() - split + 2);
  update.push_back(remove_message(std::string(kRemoveAllMessages)));
  update.push_back(
      summarization_message(summarize_conversation_history(model, messages.first(split), options)));
  update.insert(update.end(), messages.begin() + static_cast<std::ptrdiff_t>(split),
                messages.end());
  return update;
}

AgentMiddleware summarization_middleware(std::shared_ptr<const ChatModel> model,
                                         SummarizationMiddlewareOptions options) {
  if (!model) detail::invalid_argument("SummarizationMiddleware: the model is null");
  check_summarization_middleware_options(options);
  AgentMiddleware m;
  m.name = std::string(summ_mw_name);
  m.before_model = [model = std::move(model),
                    options =
                        std::make_shared<const SummarizationMiddlewareOptions>(std::move(options))](
                       const CreateAgentState& state, Context&) -> std::optional<HookResult> {
    std::optional<std::vector<Message>> messages =
        summarization_update(*model, state.messages, *options);
    if (!messages) return std::nullopt;
    HookResult result;
    result.update.set<&CreateAgentState::messages>(std::move(*messages));
    return result;
  };
  return m;
}

}  // namespace sg
