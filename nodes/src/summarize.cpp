// SPDX-License-Identifier: MIT
#include <stategraph/core/error.hpp>
#include <stategraph/nodes/summarize.hpp>

#include <fmt/args.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <unordered_map>

namespace sg {

void to_json(nlohmann::json& j, const RunningSummary& summary) {
  j = nlohmann::json{{"summary", summary.summary},
                     {"summarized_message_ids", summary.summarized_message_ids},
                     {"last_summarized_message_id", nullptr}};
  if (summary.last_summarized_message_id) {
    j["last_summarized_message_id"] = *summary.last_summarized_message_id;
  }
}

void from_json(const nlohmann::json& j, RunningSummary& summary) {
  summary.summary = j.at("summary").get<std::string>();
  summary.summarized_message_ids = j.at("summarized_message_ids").get<std::set<std::string>>();
  const auto& last = j.at("last_summarized_message_id");
  summary.last_summarized_message_id =
      last.is_null() ? std::nullopt : std::optional<std::string>(last.get<std::string>());
}

namespace {

void check_budget(const SummarizationOptions& options) {
  if (options.max_tokens <= 0) {
    throw Error(errc::kInvalidArgument, "summarization: `max_tokens` must be positive.");
  }
  if (options.max_summary_tokens >= options.max_tokens) {
    throw Error(errc::kInvalidArgument, "`max_summary_tokens` must be less than `max_tokens`.");
  }
  if (options.max_tokens_before_summary && *options.max_tokens_before_summary < 0) {
    throw Error(errc::kInvalidArgument,
                "summarization: `max_tokens_before_summary` must not be negative.");
  }
}

// One template with named arguments, fmt syntax (LangChain's f-string prompts).
std::string format_prompt(const std::string& tmpl, const char* name, const std::string& value) {
  fmt::dynamic_format_arg_store<fmt::format_context> args;
  args.push_back(fmt::arg(name, value));
  try {
    return fmt::vformat(tmpl, args);
  } catch (const fmt::format_error& e) {
    throw Error(errc::kInvalidArgument,
                std::string("summarization: bad prompt template \"") + tmpl + "\": " + e.what());
  }
}

// LangMem's _preprocess_messages: what to summarize, and the budgets.
struct Plan {
  std::optional<Message> system;      // the leading system message, never summarized
  std::span<const Message> body;      // the messages after it
  std::size_t summarized_before = 0;  // body messages covered by the running summary
  std::vector<Message> to_summarize;  // what a new summary covers (may be empty)
  std::int64_t tokens_to_summarize = 0;
  std::int64_t max_tokens_to_summarize = 0;
};

Plan preprocess(std::span<const Message> messages, const std::optional<RunningSummary>& running,
                const SummarizationOptions& options) {
  const TokenCounter& count = options.token_counter;
  const std::int64_t before_summary =
      options.max_tokens_before_summary.value_or(options.max_tokens);
  Plan plan;
  plan.max_tokens_to_summarize = options.max_tokens;
  std::int64_t max_remaining = options.max_tokens - options.max_summary_tokens;
  plan.body = messages;
  if (!messages.empty() && messages.front().type == MessageType::system) {
    plan.system = messages.front();
    plan.body = messages.subspan(1);
    max_remaining -= count(*plan.system);
  }
  if (plan.body.empty()) return plan;

  if (running) {
    plan.max_tokens_to_summarize -= count(system(running->summary));
    for (std::size_t i = 0; i < plan.body.size(); ++i) {
      if (running->last_summarized_message_id &&
          plan.body[i].id == *running->last_summarized_message_id) {
        plan.summarized_before = i + 1;
        break;
      }
    }
  }
  const std::int64_t total = count(plan.body.subspan(plan.summarized_before));
  std::int64_t n_tokens = 0;
  std::optional<std::size_t> cut;
  std::unordered_map<std::string, const Message*> tool_results;
  for (std::size_t i = plan.summarized_before; i < plan.body.size(); ++i) {
    const Message& m = plan.body[i];
    if (m.id.empty())
      throw Error(errc::kInvalidArgument, "Messages are required to have ID field.");
    if (running && running->summarized_message_ids.contains(m.id)) {
      throw Error(errc::kInvalidArgument,
                  "Message with ID " + m.id + " has already been summarized.");
    }
    if (m.type == MessageType::tool && !m.tool_call_id.empty()) tool_results[m.tool_call_id] = &m;
    n_tokens += count(m);
    if (!cut && n_tokens >= before_summary && total - n_tokens <= max_remaining) {
      plan.tokens_to_summarize = n_tokens;
      cut = i;
    }
  }
  if (!cut) return plan;
  plan.to_summarize.assign(plan.body.begin() + static_cast<std::ptrdiff_t>(plan.summarized_before),
                           plan.body.begin() + static_cast<std::ptrdiff_t>(*cut + 1));
  // An AI tool call summarized pulls its results in (LangMem never splits the pair).
  const Message& last = plan.to_summarize.back();
  if (last.type == MessageType::ai && !last.tool_calls.empty()) {
    const std::vector<ToolCall> calls = last.tool_calls;
    for (const ToolCall& call : calls) {
      if (auto it = tool_results.find(call.id); it != tool_results.end()) {
        plan.tokens_to_summarize += count(*it->second);
        plan.to_summarize.push_back(*it->second);
      }
    }
  }
  return plan;
}

// LangMem's _prepare_input_to_summarization_model (with _adjust_messages_before_summarization).
std::vector<Message> summary_prompt(const Plan& plan, const std::optional<RunningSummary>& running,
                                    const SummarizationOptions& options) {
  std::vector<Message> prompt;
  if (plan.tokens_to_summarize > plan.max_tokens_to_summarize) {
    TrimOptions trim;
    trim.max_tokens = plan.max_tokens_to_summarize;
    trim.token_counter = options.token_counter;
    trim.strategy = TrimStrategy::last;
    trim.start_on = {MessageType::human};
    trim.allow_partial = true;
    prompt = trim_messages(plan.to_summarize, trim);
    // Nothing fits: LangMem warns and sends everything (the model may then reject it).
    if (prompt.empty()) prompt = plan.to_summarize;
  } else {
    prompt = plan.to_summarize;
  }
  prompt.push_back(
      human(running ? format_prompt(options.prompts.existing, "existing_summary", running->summary)
                    : options.prompts.initial));
  return prompt;
}

RunningSummary next_summary(const Plan& plan, const std::optional<RunningSummary>& running,
                            const Message& reply) {
  RunningSummary next;
  next.summary = reply.text();
  if (running) next.summarized_message_ids = running->summarized_message_ids;
  for (const Message& m : plan.to_summarize) next.summarized_message_ids.insert(m.id);
  next.last_summarized_message_id = plan.to_summarize.back().id;
  return next;
}

// LangMem's _prepare_summarization_result.
SummarizationResult finish(const Plan& plan, const std::optional<RunningSummary>& previous,
                           std::optional<RunningSummary> running,
                           const SummarizationOptions& options) {
  SummarizationResult result;
  if (!running) {
    if (plan.system) result.messages.push_back(*plan.system);
    result.messages.insert(result.messages.end(), plan.body.begin(), plan.body.end());
    return result;
  }
  const std::size_t covered =
      std::min(plan.body.size(), plan.summarized_before + plan.to_summarize.size());
  // A system message that already carries the previous summary (a summarized list passed back
  // in) is replaced by the new summary message.
  const bool keep_system =
      plan.system &&
      !(previous && plan.system->text().find(previous->summary) != std::string::npos);
  if (keep_system) result.messages.push_back(*plan.system);
  result.messages.push_back(
      system(format_prompt(options.prompts.final_summary, "summary", running->summary)));
  result.messages.insert(result.messages.end(),
                         plan.body.begin() + static_cast<std::ptrdiff_t>(covered), plan.body.end());
  result.running_summary = std::move(running);
  return result;
}

}  // namespace

void check_summarization_options(const ChatModel* model, const SummarizationOptions& options) {
  if (model == nullptr) throw Error(errc::kInvalidArgument, "summarization: the model is null");
  check_budget(options);
}

SummarizationResult summarize_messages(std::span<const Message> messages,
                                       const std::optional<RunningSummary>& running_summary,
                                       const ChatModel& model,
                                       const SummarizationOptions& options) {
  check_budget(options);
  const Plan plan = preprocess(messages, running_summary, options);
  if (plan.body.empty()) {
    return {std::vector<Message>(messages.begin(), messages.end()), running_summary};
  }
  std::optional<RunningSummary> running = running_summary;
  if (!plan.to_summarize.empty()) {
    const Message reply =
        model.invoke(summary_prompt(plan, running_summary, options), options.model_options);
    running = next_summary(plan, running_summary, reply);
  }
  return finish(plan, running_summary, std::move(running), options);
}

boost::asio::awaitable<SummarizationResult> asummarize_messages(
    std::vector<Message> messages, std::optional<RunningSummary> running_summary,
    std::shared_ptr<const ChatModel> model, SummarizationOptions options) {
  check_summarization_options(model.get(), options);
  const Plan plan = preprocess(messages, running_summary, options);
  if (plan.body.empty()) co_return SummarizationResult{std::move(messages), running_summary};
  std::optional<RunningSummary> running = running_summary;
  if (!plan.to_summarize.empty()) {
    std::vector<Message> prompt = summary_prompt(plan, running_summary, options);
    const Message reply = co_await model->ainvoke(std::move(prompt), options.model_options);
    running = next_summary(plan, running_summary, reply);
  }
  co_return finish(plan, running_summary, std::move(running), options);
}

void check_summarize_conversation(const ChatModel* model) {
  if (model == nullptr) {
    throw Error(errc::kInvalidArgument, "summarize_conversation: the model is null");
  }
}

std::vector<Message> summarize_conversation_prompt(std::span<const Message> messages,
                                                   const std::string& summary,
                                                   const SummarizeConversationOptions& options) {
  std::vector<Message> prompt(messages.begin(), messages.end());
  prompt.push_back(human(summary.empty()
                             ? options.initial_prompt
                             : format_prompt(options.existing_prompt, "summary", summary)));
  return prompt;
}

}  // namespace sg
