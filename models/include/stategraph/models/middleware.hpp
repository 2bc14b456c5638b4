// SPDX-License-Identifier: MIT
#pragma once
// create_agent's built-in middleware (docs/agents.md): human approval of tool calls, model and
// tool call limits, model fallback and tool retries. PII redaction and context editing are in
// pii_middleware.hpp and context_editing_middleware.hpp.

#include <stategraph/core/error.hpp>
#include <stategraph/models/agent.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sg {

namespace errc {
inline constexpr std::string_view kModelCallLimit = "agent.model_call_limit";
inline constexpr std::string_view kToolCallLimit = "agent.tool_call_limit";
inline constexpr std::string_view kHumanResponse = "agent.human_response";
}  // namespace errc

// --- Human in the loop ---------------------------------------------------------------------------

/// What a reviewer may answer to one tool call (LangGraph's HumanInterruptConfig). In JSON:
/// {"allow_ignore", "allow_respond", "allow_edit", "allow_accept"}.
struct HumanInterruptConfig {
  bool allow_ignore = false;
  bool allow_respond = true;
  bool allow_edit = true;
  bool allow_accept = true;
};

/// How one tool's calls are reviewed: what the reviewer may answer, and the text shown (empty:
/// the options' prefix, the tool's name and its arguments).
struct ToolApproval {
  HumanInterruptConfig config{};
  std::string description{};
};

/// Options of human_in_the_loop_middleware.
struct HumanInTheLoopOptions {
  /// The tools whose calls wait for a reviewer, by name. Calls of other tools run as they are.
  std::map<std::string, ToolApproval> interrupt_on{};
  std::string description_prefix = "Tool execution requires approval";
};

/// The approval request of one tool call, in the shape agent UIs render (LangGraph's
/// HumanInterrupt): {"action_request": {"action": name, "args": args}, "config": {...},
/// "description": text}. Thread-safe.
[[nodiscard]] nlohmann::json human_interrupt(const ToolCall& call,
                                             const HumanInterruptConfig& config,
                                             const std::string& description);

/// The answers a reviewer gives (LangGraph's HumanResponse, {"type", "args"}): run the call as
/// it is; run it with `args` (and the tool `action`); answer it with `text` instead of running
/// it; or answer it and end the run.
[[nodiscard]] nlohmann::json accept_response();
[[nodiscard]] nlohmann::json edit_response(const std::string& action, nlohmann::json args);
[[nodiscard]] nlohmann::json text_response(const std::string& text);
[[nodiscard]] nlohmann::json ignore_response();

/// Human approval of tool calls (as LangChain's HumanInTheLoopMiddleware, in the HumanInterrupt
/// format): after each model call that asks for tools of `interrupt_on`, the run stops with one
/// interrupt whose value is a list of human_interrupt requests, one per such call. Resume it with
/// a list of responses in the same order (a single response object when there is one call):
/// - "accept": the call runs;
/// - "edit" with args {"action", "args"}: the call runs with those (its id kept);
/// - "response" with a text: the call is answered by a tool message (status "error") with that
///   text, or "User rejected the tool call for `NAME` with id ID" when empty, and does not
///   run;
/// - "ignore": the call is answered by "User ignored the tool call for `NAME` with id ID"
///   and the run ends after this turn.
/// When no call is left to run, the model is called again with the answers. A response that the
/// call's config does not allow, or a count that does not match, fails the run with sg::Error
/// (errc::kHumanResponse). Named "HumanInTheLoopMiddleware".
[[nodiscard]] AgentMiddleware human_in_the_loop_middleware(HumanInTheLoopOptions options);

// --- Call limits ---------------------------------------------------------------------------------

/// What a call limit does when reached: end the run with a message, fail it with an error, or
/// (tool limits) answer the blocked calls with error messages and let the model go on.
enum class LimitBehavior { end, error, continue_run };

/// A call limit reached with LimitBehavior::error: the message, and the thread's and the run's
/// counts (for tool calls, the counts the calls would have reached). Thread-safe to read.
class CallLimitExceededError : public Error {
 public:
  CallLimitExceededError(std::string_view code, const std::string& message, int thread_count,
                         int run_count)
      : Error(code, message), thread_count_(thread_count), run_count_(run_count) {}
  [[nodiscard]] int thread_count() const noexcept { return thread_count_; }
  [[nodiscard]] int run_count() const noexcept { return run_count_; }

 private:
  int thread_count_;
  int run_count_;
};

/// Thrown by model_call_limit_middleware with LimitBehavior::error (errc::kModelCallLimit).
class ModelCallLimitExceededError : public CallLimitExceededError {
 public:
  ModelCallLimitExceededError(const std::string& message, int thread_count, int run_count)
      : CallLimitExceededError(errc::kModelCallLimit, message, thread_count, run_count) {}
};

/// Thrown by tool_call_limit_middleware with LimitBehavior::error (errc::kToolCallLimit).
class ToolCallLimitExceededError : public CallLimitExceededError {
 public:
  ToolCallLimitExceededError(const std::string& message, int thread_count, int run_count)
      : CallLimitExceededError(errc::kToolCallLimit, message, thread_count, run_count) {}
};

/// Options of model_call_limit_middleware: at least one limit.
struct ModelCallLimitOptions {
  /// The most model calls on a thread (kept in its checkpoints).
  std::optional<int> thread_limit{};
  /// The most model calls in one invocation (a resumed run goes on counting).
  std::optional<int> run_limit{};
  /// end or error.
  LimitBehavior exit_behavior = LimitBehavior::end;
};

/// Caps model calls (as LangChain's ModelCallLimitMiddleware). Before a call over a limit, the
/// run ends with the AI message "Model call limits exceeded: thread limit (t/T), run limit
/// (r/R)" (the limits reached), or fails with ModelCallLimitExceededError. The counts live in
/// `middleware_state["ModelCallLimitMiddleware"]`. Throws sg::Error (errc::kInvalidArgument)
/// without a limit or with exit behavior continue_run.
[[nodiscard]] AgentMiddleware model_call_limit_middleware(ModelCallLimitOptions options);

/// Options of tool_call_limit_middleware: at least one limit; run_limit <= thread_limit.
struct ToolCallLimitOptions {
  /// The tool counted; empty: every tool call.
  std::string tool_name{};
  std::optional<int> thread_limit{};
  std::optional<int> run_limit{};
  LimitBehavior exit_behavior = LimitBehavior::continue_run;
};

/// Caps tool calls (as LangChain's ToolCallLimitMiddleware), checked after each model call: a
/// call over a limit does not run. continue_run answers it with an error message ("Tool call
/// limit exceeded. Do not call 'TOOL' again."); end also ends the run with the AI message
/// "'TOOL' tool call limit reached: thread limit exceeded (t/T calls)."; error fails the run
/// with ToolCallLimitExceededError. Blocked calls count for the run, not the thread. Named
/// "ToolCallLimitMiddleware" or "ToolCallLimitMiddleware[TOOL]". Throws sg::Error
/// (errc::kInvalidArgument) for options that are not allowed.
[[nodiscard]] AgentMiddleware tool_call_limit_middleware(ToolCallLimitOptions options);

// --- Fallback and retries ------------------------------------------------------------------------

/// Falls back to `fallbacks`, in order, when a model call fails (as LangChain's
/// ModelFallbackMiddleware); the last failure is thrown when every model failed. Cancellation
/// is not a failure. Throws sg::Error (errc::kInvalidArgument) without fallbacks or with a null
/// one. Named "ModelFallbackMiddleware".
[[nodiscard]] AgentMiddleware model_fallback_middleware(
    std::vector<std::shared_ptr<const ChatModel>> fallbacks);

/// Options of tool_retry_middleware.
struct ToolRetryOptions {
  /// Retries after the first attempt.
  int max_retries = 2;
  /// The tools retried, by name; empty: all.
  std::vector<std::string> tools{};
  /// Which errors are retried; unset: every error (never a cancellation or an interrupt).
  std::function<bool(const std::exception&)> retry_on{};
  /// When the retries are spent: the error's message for the model (unset: "Tool 'NAME'
  /// failed after N attempts with TYPE: WHAT. Please try again."). Ignored when
  /// `rethrow` is set.
  std::function<std::string(const std::exception&)> on_failure{};
  /// Fail the run with the last error instead of answering the call.
  bool rethrow = false;
  double backoff_factor = 2.0;
  std::chrono::duration<double> initial_delay{1.0};
  std::chrono::duration<double> max_delay{60.0};
  /// Spreads each delay by up to a quarter either way.
  bool jitter = true;
};

/// The delay before retry `retry_number` (0 for the first retry): initial_delay *
/// backoff_factor^retry_number (initial_delay when the factor is 0), at most max_delay, then
/// jittered. Thread-safe.
[[nodiscard]] std::chrono::duration<double> retry_delay(int retry_number,
                                                        const ToolRetryOptions& options);

/// Retries failing tool calls with exponential backoff, waiting on the run's executor without a
/// thread (as LangChain's ToolRetryMiddleware). Throws sg::Error (errc::kInvalidArgument) for a
/// negative count, delay or factor. Named "ToolRetryMiddleware".
[[nodiscard]] AgentMiddleware tool_retry_middleware(ToolRetryOptions options = {});

}  // namespace sg
