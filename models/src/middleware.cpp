// SPDX-License-Identifier: MIT
// The built-in middleware of create_agent: human approval, call limits, fallback, tool retries.
#include <stategraph/models/middleware.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/core/demangle.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <typeinfo>
#include <utility>

// g++ 12 wrongly reports awaitable frames freed by the frame's own operator delete as mismatched
// (GCC bug 109224).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace sg {
namespace net = boost::asio;
using AgentSt = CreateAgentState;

namespace {

/// The state `name` keeps in middleware_state (an empty object when none).
nlohmann::json mw_state(const AgentSt& state, const std::string& name) {
  const auto it = state.middleware_state.find(name);
  return it == state.middleware_state.end() || !it->is_object() ? nlohmann::json::object() : *it;
}

/// An update writing `value` as `name`'s middleware state.
void set_mw_state(Update<AgentSt>& update, const std::string& name, nlohmann::json value) {
  update.set<&AgentSt::middleware_state>(nlohmann::json{{name, std::move(value)}});
}

// --- Human in the loop ---------------------------------------------------------------------------

std::vector<std::string> allowed_responses(const HumanInterruptConfig& config) {
  std::vector<std::string> out;
  if (config.allow_accept) out.emplace_back("accept");
  if (config.allow_edit) out.emplace_back("edit");
  if (config.allow_respond) out.emplace_back("response");
  if (config.allow_ignore) out.emplace_back("ignore");
  return out;
}

[[noreturn]] void bad_response(const nlohmann::json& response, const std::string& type,
                               const ToolCall& call, const HumanInterruptConfig& config) {
  throw Error(errc::kHumanResponse,
              fmt::format("Unexpected human response: {}. Response action '{}' is not allowed for "
                          "tool '{}'. Expected one of {} based on the tool's configuration.",
                          response.dump(), type, call.name,
                          nlohmann::json(allowed_responses(config)).dump()));
}

/// The reviewer's answers to `asked` calls as a list (one object is taken as a list of one).
std::vector<nlohmann::json> response_list(const nlohmann::json& resume, std::size_t asked) {
  std::vector<nlohmann::json> responses;
  if (resume.is_array()) {
    responses.assign(resume.begin(), resume.end());
  } else if (resume.is_object()) {
    responses.push_back(resume);
  }
  if (responses.size() != asked)
    throw Error(
        errc::kHumanResponse,
        fmt::format("Number of human responses ({}) does not match number of hanging "
                    "tool calls ({}).",
                    resume.is_array() ? resume.size() : (resume.is_object() ? 1 : 0), asked));
  return responses;
}

std::optional<HookResult> review_tool_calls(const HumanInTheLoopOptions& options,
                                            const AgentSt& state, Context& ctx) {
  const std::size_t ai_at = detail::last_ai_index(state.messages);
  if (ai_at == std::string::npos) return std::nullopt;
  const std::vector<ToolCall> pending = pending_tool_calls(state.messages);
  std::vector<const ToolCall*> reviewed;
  nlohmann::json requests = nlohmann::json::array();
  for (const auto& call : pending) {
    const auto it = options.interrupt_on.find(call.name);
    if (it == options.interrupt_on.end()) continue;
    reviewed.push_back(&call);
    std::string description = it->second.description;
    if (description.empty())
      description = fmt::format("{}\n\nTool: {}\nArgs: {}", options.description_prefix, call.name,
                                call.args.dump());
    requests.push_back(human_interrupt(call, it->second.config, description));
  }
  if (reviewed.empty()) return std::nullopt;
  const std::vector<nlohmann::json> responses =
      response_list(ctx.interrupt(std::move(requests)), reviewed.size());

  Message ai_message = state.messages[ai_at];
  std::vector<Message> answers;
  bool edited = false;
  bool ignored = false;
  for (std::size_t i = 0; i < reviewed.size(); ++i) {
    const ToolCall& call = *reviewed[i];
    const HumanInterruptConfig& config = options.interrupt_on.at(call.name).config;
    const nlohmann::json& response = responses[i];
    const std::string type =
        response.is_object() && response.contains("type") && response["type"].is_string()
            ? response["type"].get<std::string>()
            : std::string();
    const nlohmann::json args =
        response.is_object() ? response.value("args", nlohmann::json()) : nlohmann::json();
    if (type == "accept" && config.allow_accept) continue;
    if (type == "edit" && config.allow_edit) {
      if (!args.is_object() || !args.contains("args") || !args["args"].is_object())
        throw Error(errc::kHumanResponse,
                    fmt::format("An edit of tool call '{}' needs args {{\"action\": name, "
                                "\"args\": {{...}}}}, got {}",
                                call.id, args.dump()));
      for (auto& c : ai_message.tool_calls) {
        if (c.id != call.id) continue;
        if (args.contains("action") && args["action"].is_string())
          c.name = args["action"].get<std::string>();
        c.args = args["args"];
      }
      edited = true;
      continue;
    }
    if (type == "response" && config.allow_respond) {
      std::string text = args.is_string() ? args.get<std::string>() : std::string();
      if (text.empty())
        text = fmt::format("User rejected the tool call for `{}` with id {}", call.name, call.id);
      answers.push_back(tool_answer(std::move(text), call, "error"));
      continue;
    }
    if (type == "ignore" && config.allow_ignore) {
      answers.push_back(tool_answer(
          fmt::format("User ignored the tool call for `{}` with id {}", call.name, call.id), call,
          "error"));
      ignored = true;
      continue;
    }
    bad_response(response, type, call, config);
  }
  std::vector<Message> written;
  if (edited) written.push_back(std::move(ai_message));
  for (auto& m : answers) written.push_back(std::move(m));
  HookResult result;
  if (ignored) {
    // The calls left unanswered do not run either: the run ends with every call answered.
    for (const auto& call : pending) {
      const bool answered = std::any_of(written.begin(), written.end(), [&](const Message& m) {
        return m.type == MessageType::tool && m.tool_call_id == call.id;
      });
      if (!answered) written.push_back(tool_answer(cancelled_tool_call_text(call), call, "error"));
    }
    result.jump_to = "end";
  }
  if (!written.empty()) result.update.set<&AgentSt::messages>(std::move(written));
  return result;
}

// --- Limits --------------------------------------------------------------------------------------

constexpr const char* kModelLimitName = "ModelCallLimitMiddleware";

int count_in(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<int>() : 0;
}

std::string limit_behavior_name(LimitBehavior b) {
  switch (b) {
    case LimitBehavior::end:
      return "end";
    case LimitBehavior::error:
      return "error";
    case LimitBehavior::continue_run:
      return "continue";
  }
  return "?";
}

// --- Retries -------------------------------------------------------------------------------------

/// The error message a spent retry gives the model.
std::string tool_failure_text(const std::string& tool_name, int attempts, const std::exception& e) {
  return fmt::format("Tool '{}' failed after {} {} with {}: {}. Please try again.", tool_name,
                     attempts, attempts == 1 ? "attempt" : "attempts",
                     boost::core::demangle(typeid(e).name()), e.what());
}

net::awaitable<void> sleep_for(std::chrono::duration<double> delay) {
  net::steady_timer timer(co_await net::this_coro::executor);
  timer.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(delay));
  co_await timer.async_wait(net::use_awaitable);
}

}  // namespace

nlohmann::json human_interrupt(const ToolCall& call, const HumanInterruptConfig& config,
                               const std::string& description) {
  return {{"action_request", {{"action", call.name}, {"args", call.args}}},
          {"config",
           {{"allow_ignore", config.allow_ignore},
            {"allow_respond", config.allow_respond},
            {"allow_edit", config.allow_edit},
            {"allow_accept", config.allow_accept}}},
          {"description", description}};
}

nlohmann::json accept_response() {
  return {{"type", "accept"}, {"args", nullptr}};
}
nlohmann::json edit_response(const std::string& action, nlohmann::json args) {
  return {{"type", "edit"}, {"args", {{"action", action}, {"args", std::move(args)}}}};
}
nlohmann::json text_response(const std::string& text) {
  return {{"type", "response"}, {"args", text}};
}
nlohmann::json ignore_response() {
  return {{"type", "ignore"}, {"args", nullptr}};
}

AgentMiddleware human_in_the_loop_middleware(HumanInTheLoopOptions options) {
  auto shared = std::make_shared<const HumanInTheLoopOptions>(std::move(options));
  AgentMiddleware m;
  m.name = "HumanInTheLoopMiddleware";
  m.can_jump_to = {"end"};
  m.after_model = [shared](const AgentSt& state, Context& ctx) {
    return review_tool_calls(*shared, state, ctx);
  };
  return m;
}

AgentMiddleware model_call_limit_middleware(ModelCallLimitOptions options) {
  if (!options.thread_limit && !options.run_limit)
    throw Error(errc::kInvalidArgument,
                "At least one limit must be specified (thread_limit or run_limit)");
  if (options.exit_behavior == LimitBehavior::continue_run)
    throw Error(errc::kInvalidArgument,
                fmt::format("Invalid exit_behavior: {}. Must be 'end' or 'error'",
                            limit_behavior_name(options.exit_behavior)));
  const std::string name = kModelLimitName;
  AgentMiddleware m;
  m.name = name;
  m.can_jump_to = {"end"};
  // A new invocation starts its run count at 0; the thread count goes on.
  m.before_agent = [name](const AgentSt& state, Context&) {
    nlohmann::json counts = mw_state(state, name);
    HookResult result;
    counts["run_model_call_count"] = 0;
    counts["thread_model_call_count"] = count_in(counts, "thread_model_call_count");
    set_mw_state(result.update, name, std::move(counts));
    return std::optional<HookResult>(std::move(result));
  };
  m.before_model = [name, options](const AgentSt& state, Context&) -> std::optional<HookResult> {
    const nlohmann::json counts = mw_state(state, name);
    const int thread_count = count_in(counts, "thread_model_call_count");
    const int run_count = count_in(counts, "run_model_call_count");
    std::vector<std::string> parts;
    if (options.thread_limit && thread_count >= *options.thread_limit)
      parts.push_back(fmt::format("thread limit ({}/{})", thread_count, *options.thread_limit));
    if (options.run_limit && run_count >= *options.run_limit)
      parts.push_back(fmt::format("run limit ({}/{})", run_count, *options.run_limit));
    if (parts.empty()) return std::nullopt;
    std::string text = "Model call limits exceeded: " + fmt::format("{}", fmt::join(parts, ", "));
    if (options.exit_behavior == LimitBehavior::error)
      throw ModelCallLimitExceededError(text, thread_count, run_count);
    HookResult result;
    result.update.set<&AgentSt::messages>(std::vector<Message>{ai(std::move(text))});
    result.jump_to = "end";
    return result;
  };
  m.after_model = [name](const AgentSt& state, Context&) {
    nlohmann::json counts = mw_state(state, name);
    counts["thread_model_call_count"] = count_in(counts, "thread_model_call_count") + 1;
    counts["run_model_call_count"] = count_in(counts, "run_model_call_count") + 1;
    HookResult result;
    set_mw_state(result.update, name, std::move(counts));
    return std::optional<HookResult>(std::move(result));
  };
  return m;
}

AgentMiddleware tool_call_limit_middleware(ToolCallLimitOptions options) {
  if (!options.thread_limit && !options.run_limit)
    throw Error(errc::kInvalidArgument,
                "At least one limit must be specified (thread_limit or run_limit)");
  if (options.thread_limit && options.run_limit && *options.run_limit > *options.thread_limit)
    throw Error(errc::kInvalidArgument,
                fmt::format("run_limit ({}) cannot exceed thread_limit ({}). The run limit should "
                            "be less than or equal to the thread limit.",
                            *options.run_limit, *options.thread_limit));
  const std::string name = options.tool_name.empty()
                               ? std::string("ToolCallLimitMiddleware")
                               : "ToolCallLimitMiddleware[" + options.tool_name + "]";
  const std::string key = options.tool_name.empty() ? std::string("__all__") : options.tool_name;
  AgentMiddleware m;
  m.name = name;
  m.can_jump_to = {"end"};
  m.before_agent = [name, key](const AgentSt& state, Context&) {
    nlohmann::json counts = mw_state(state, name);
    if (!counts.contains("thread_tool_call_count"))
      counts["thread_tool_call_count"] = nlohmann::json::object();
    counts["run_tool_call_count"] = nlohmann::json::object();
    HookResult result;
    set_mw_state(result.update, name, std::move(counts));
    return std::optional<HookResult>(std::move(result));
  };
  m.after_model = [name, key, options](const AgentSt& state,
                                       Context&) -> std::optional<HookResult> {
    const std::vector<ToolCall> calls = pending_tool_calls(state.messages);
    const auto counted = [&](const ToolCall& c) {
      return options.tool_name.empty() || c.name == options.tool_name;
    };
    if (std::none_of(calls.begin(), calls.end(), counted)) return std::nullopt;
    nlohmann::json counts = mw_state(state, name);
    nlohmann::json thread_counts = counts.value("thread_tool_call_count", nlohmann::json::object());
    nlohmann::json run_counts = counts.value("run_tool_call_count", nlohmann::json::object());
    int thread_count = thread_counts.value(key, 0);
    int run_count = run_counts.value(key, 0);
    std::vector<const ToolCall*> allowed;
    std::vector<const ToolCall*> blocked;
    for (const auto& call : calls) {
      if (!counted(call)) continue;
      const bool over = (options.thread_limit && thread_count + 1 > *options.thread_limit) ||
                        (options.run_limit && run_count + 1 > *options.run_limit);
      if (over) {
        blocked.push_back(&call);
      } else {
        allowed.push_back(&call);
        ++thread_count;
        ++run_count;
      }
    }
    run_count += static_cast<int>(blocked.size());
    thread_counts[key] = thread_count;
    run_counts[key] = run_count;
    counts["thread_tool_call_count"] = thread_counts;
    counts["run_tool_call_count"] = run_counts;
    HookResult result;
    set_mw_state(result.update, name, counts);
    if (blocked.empty()) return result;

    const int thread_would = thread_count + static_cast<int>(blocked.size());
    std::vector<std::string> limits;
    if (options.thread_limit && thread_would > *options.thread_limit)
      limits.push_back(
          fmt::format("thread limit exceeded ({}/{} calls)", thread_would, *options.thread_limit));
    if (options.run_limit && run_count > *options.run_limit)
      limits.push_back(
          fmt::format("run limit exceeded ({}/{} calls)", run_count, *options.run_limit));
    const std::string what =
        options.tool_name.empty() ? std::string("Tool") : "'" + options.tool_name + "' tool";
    const std::string final_text =
        fmt::format("{} call limit reached: {}.", what, fmt::join(limits, " and "));
    if (options.exit_behavior == LimitBehavior::error)
      throw ToolCallLimitExceededError(final_text, thread_would, run_count);
    const std::string blocked_text =
        options.tool_name.empty()
            ? std::string("Tool call limit exceeded. Do not make additional tool calls.")
            : fmt::format("Tool call limit exceeded. Do not call '{}' again.", options.tool_name);
    std::vector<Message> messages;
    if (options.exit_behavior == LimitBehavior::end) {
      std::vector<std::string> others;
      for (const auto& call : calls)
        if (!counted(call)) others.push_back(call.name);
      if (!others.empty())
        throw Error(errc::kInvalidArgument,
                    fmt::format("Cannot end execution with other tool calls pending. Found calls "
                                "to: {}. Use 'continue' or 'error' behavior instead.",
                                fmt::join(others, ", ")));
      // The run ends here: no call runs, so each is answered.
      for (const auto& call : calls) messages.push_back(tool_answer(blocked_text, call, "error"));
      messages.push_back(ai(final_text));
      result.jump_to = "end";
    } else {
      for (const ToolCall* call : blocked)
        messages.push_back(tool_answer(blocked_text, *call, "error"));
    }
    result.update.set<&AgentSt::messages>(std::move(messages));
    return result;
  };
  return m;
}

AgentMiddleware model_fallback_middleware(std::vector<std::shared_ptr<const ChatModel>> fallbacks) {
  if (fallbacks.empty())
    throw Error(errc::kInvalidArgument, "model_fallback_middleware needs a fallback model");
  for (const auto& f : fallbacks)
    if (!f) throw Error(errc::kInvalidArgument, "model_fallback_middleware: a null fallback model");
  AgentMiddleware m;
  m.name = "ModelFallbackMiddleware";
  m.wrap_model_call = [fallbacks = std::move(fallbacks)](
                          ModelRequest request,
                          ModelHandler next) -> net::awaitable<ModelResponse> {
    std::exception_ptr failure;
    for (std::size_t attempt = 0; attempt <= fallbacks.size(); ++attempt) {
      ModelRequest this_request = request;
      if (attempt > 0) this_request.model = fallbacks[attempt - 1];
      try {
        co_return co_await next(std::move(this_request));
      } catch (const CancelledError&) {
        throw;
      } catch (const std::exception&) {
        failure = std::current_exception();
      }
    }
    std::rethrow_exception(failure);
  };
  return m;
}

std::chrono::duration<double> retry_delay(int retry_number, const ToolRetryOptions& options) {
  double delay = options.backoff_factor == 0.0 ? options.initial_delay.count()
                                               : options.initial_delay.count() *
                                                     std::pow(options.backoff_factor, retry_number);
  delay = std::min(delay, options.max_delay.count());
  if (options.jitter && delay > 0) {
    thread_local std::mt19937_64 random{std::random_device{}()};
    std::uniform_real_distribution<double> spread(-0.25 * delay, 0.25 * delay);
    delay = std::max(0.0, delay + spread(random));
  }
  return std::chrono::duration<double>(delay);
}

AgentMiddleware tool_retry_middleware(ToolRetryOptions options) {
  if (options.max_retries < 0) throw Error(errc::kInvalidArgument, "max_retries must be >= 0");
  if (options.initial_delay.count() < 0)
    throw Error(errc::kInvalidArgument, "initial_delay must be >= 0");
  if (options.max_delay.count() < 0) throw Error(errc::kInvalidArgument, "max_delay must be >= 0");
  if (options.backoff_factor < 0)
    throw Error(errc::kInvalidArgument, "backoff_factor must be >= 0");
  auto shared = std::make_shared<const ToolRetryOptions>(std::move(options));
  AgentMiddleware m;
  m.name = "ToolRetryMiddleware";
  m.wrap_tool_call = [shared](ToolCallRequest request,
                              ToolHandler next) -> net::awaitable<ToolCallOutcome> {
    const ToolRetryOptions& o = *shared;
    if (!o.tools.empty() &&
        std::find(o.tools.begin(), o.tools.end(), request.call.name) == o.tools.end())
      co_return co_await next(std::move(request));
    for (int attempt = 0;; ++attempt) {
      std::exception_ptr failure;
      try {
        co_return co_await next(request);
      } catch (...) {
        failure = std::current_exception();
      }
      std::string failure_text;
      bool spent = false;
      try {
        std::rethrow_exception(failure);
      } catch (const CancelledError&) {
        throw;
      } catch (const std::exception& e) {
        if (o.retry_on && !o.retry_on(e)) throw;
        if (attempt >= o.max_retries) {
          if (o.rethrow) throw;
          spent = true;
          failure_text =
              o.on_failure ? o.on_failure(e) : tool_failure_text(request.call.name, attempt + 1, e);
        }
      }  // anything else (an interrupt) goes through
      if (!spent) {
        co_await sleep_for(retry_delay(attempt, o));
        continue;
      }
      co_return ToolCallOutcome{tool_answer(std::move(failure_text), request.call, "error"), {}};
    }
  };
  return m;
}

}  // namespace sg
