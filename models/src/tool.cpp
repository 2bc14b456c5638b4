// SPDX-License-Identifier: MIT
#include <stategraph/models/tool.hpp>
#include <stategraph/models/tool_node.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/execution.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/require.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

// g++ 12 wrongly reports awaitable frames freed by the frame's own operator delete as mismatched
// (GCC bug 109224).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace sg {
namespace net = boost::asio;

namespace {

void check_tool(const ToolSpec& spec, bool has_fn) {
  if (spec.name.empty()) throw Error(errc::kInvalidArgument, "a tool needs a name");
  if (!spec.parameters.is_object())
    throw Error(errc::kInvalidArgument,
                "tool '" + spec.name + "': the argument schema must be a JSON object");
  if (!has_fn) throw Error(errc::kInvalidArgument, "tool '" + spec.name + "' has no function");
}

}  // namespace

Tool::Tool(std::string name, std::string description, nlohmann::json parameters, Fn fn)
    : spec_{std::move(name), std::move(description), std::move(parameters)}, fn_(std::move(fn)) {
  check_tool(spec_, static_cast<bool>(fn_));
}

Tool::Tool(std::string name, std::string description, nlohmann::json parameters, AsyncFn fn)
    : spec_{std::move(name), std::move(description), std::move(parameters)},
      async_fn_(std::move(fn)) {
  check_tool(spec_, static_cast<bool>(async_fn_));
}

ToolResult Tool::call(const nlohmann::json& args, const ToolRuntime& runtime) const {
  if (fn_) return fn_(args, runtime);
  net::io_context io;
  ToolResult result;
  std::exception_ptr error;
  net::co_spawn(io, async_fn_(args, runtime), [&](std::exception_ptr e, ToolResult r) {
    error = e;
    result = std::move(r);
  });
  io.run();
  if (error) std::rethrow_exception(error);
  return result;
}

net::awaitable<ToolResult> Tool::acall(nlohmann::json args, ToolRuntime runtime) const {
  if (fn_) co_return fn_(args, runtime);
  ToolResult result = co_await async_fn_(std::move(args), runtime);
  co_return result;
}

Message tool_answer(Content content, const ToolCall& call, std::string status) {
  Message m = tool(std::move(content), call.id);
  m.name = call.name;
  m.status = std::move(status);
  return m;
}

std::vector<ToolSpec> tool_specs(const std::vector<Tool>& tools) {
  std::vector<ToolSpec> out;
  out.reserve(tools.size());
  for (const auto& t : tools) out.push_back(t.spec());
  return out;
}

namespace detail {
namespace {

/// The content of a tool message for a tool's result: strings as they are, other JSON as text.
Content result_content(const nlohmann::json& content) {
  if (content.is_string()) return Content(content.get<std::string>());
  if (content.is_null()) return Content(std::string());
  return Content(content.dump());
}

const Tool* find_tool(const std::vector<Tool>& tools, const ToolCall& call) {
  for (const auto& t : tools)
    if (t.name() == call.name) return &t;
  return nullptr;
}

/// The answer to a call of a tool that does not exist (LangGraph's
/// INVALID_TOOL_NAME_ERROR_TEMPLATE); throws it when errors are not handled.
ToolCallOutcome unknown_tool(const std::vector<Tool>& tools, const ToolCall& call,
                             const ToolNodeOptions& options) {
  std::string names;
  for (const auto& t : tools) names += (names.empty() ? "" : ", ") + t.name();
  std::string text =
      fmt::format("Error: {} is not a valid tool, try one of [{}].", call.name, names);
  if (!options.handle_errors && !options.handle_invalid_calls)
    throw Error(errc::kInvalidArgument, text);
  return ToolCallOutcome{tool_answer(std::move(text), call, "error"), {}};
}

ToolCallOutcome to_outcome(ToolResult result, const ToolCall& call) {
  if (result.command.has_value()) return ToolCallOutcome{std::nullopt, std::move(result.command)};
  if (result.message) {
    Message m = std::move(*result.message);
    if (m.type == MessageType::tool && m.tool_call_id.empty()) m.tool_call_id = call.id;
    if (m.type == MessageType::tool && m.name.empty()) m.name = call.name;
    return ToolCallOutcome{std::move(m), {}};
  }
  return ToolCallOutcome{tool_answer(result_content(result.content), call, "success"), {}};
}

/// The answer to a call whose tool threw `error` (LangGraph's TOOL_CALL_ERROR_TEMPLATE);
/// rethrows a cancellation, and any error `options` do not handle.
ToolCallOutcome error_outcome(const std::exception_ptr& error, const ToolCall& call,
                              const ToolNodeOptions& options) {
  try {
    std::rethrow_exception(error);
  } catch (const CancelledError&) {
    throw;
  } catch (const std::exception& e) {
    const auto* sg_error = dynamic_cast<const Error*>(&e);
    const bool invalid_call = sg_error != nullptr && sg_error->code() == errc::kToolArguments;
    if (!options.handle_errors && !(invalid_call && options.handle_invalid_calls)) throw;
    return ToolCallOutcome{
        tool_answer(fmt::format("Error: {}\n Please fix your mistakes.", e.what()), call, "error"),
        {}};
  }
}

/// A tool call's span in a run with callbacks (a tool message with status "error" is an error
/// span); nothing otherwise.
class ToolSpan {
 public:
  ToolSpan(Context* context, const ToolCall& call) {
    if (context == nullptr || !context->traced()) [[likely]]
      return;
    callbacks_ = &context->config().callbacks;
    span_.emplace(context->child_span(SpanKind::tool, call.name));
    span_->tool_call_id = call.id;
    span_->arguments = &call.args;
    detail::notify(*callbacks_, &Callbacks::on_tool_start, std::as_const(*span_));
    span_->arguments = nullptr;
  }

  void done(const ToolCallOutcome& out) {
    if (!span_) [[likely]]
      return;
    span_->end = std::chrono::system_clock::now();
    if (out.message) {
      span_->result = &*out.message;
      if (out.message->status == "error") {
        span_->status = SpanStatus::error;
        span_->error = out.message->text();
        span_->error_type = "tool_error";
      }
    }
    detail::notify(*callbacks_, &Callbacks::on_tool_end, std::as_const(*span_));
  }

  void failed(const std::exception_ptr& error) {
    if (!span_) [[likely]]
      return;
    span_->end = std::chrono::system_clock::now();
    detail::set_span_error(*span_, error);
    detail::notify(*callbacks_, &Callbacks::on_tool_end, std::as_const(*span_));
  }

 private:
  const CallbackList* callbacks_ = nullptr;
  std::optional<Span> span_{};
};

/// One call with `context` current: its outcome, or (handle_errors) its error as a tool message.
ToolCallOutcome run_one(const std::vector<Tool>& tools, const ToolCall& call, const std::any& state,
                        Context* context, const ToolNodeOptions& options) {
  detail::CurrentContextGuard guard(context);
  ToolSpan span(context, call);
  try {
    ToolCallOutcome out;
    if (const Tool* tool = find_tool(tools, call)) {
      ToolRuntime runtime{&call, &state, context ? context->store() : nullptr, context};
      try {
        out = to_outcome(tool->call(call.args, runtime), call);
      } catch (...) {
        out = error_outcome(std::current_exception(), call, options);
      }
    } else {
      out = unknown_tool(tools, call, options);
    }
    span.done(out);
    return out;
  } catch (...) {
    span.failed(std::current_exception());
    throw;
  }
}

/// An asynchronous tool's call on the caller's executor, as run_one runs a plain one.
net::awaitable<ToolCallOutcome> arun_async(const Tool& tool, const ToolCall& call,
                                           const std::any& state, Context* context,
                                           const ToolNodeOptions& options) {
  ToolSpan span(context, call);
  std::exception_ptr failure;
  ToolCallOutcome out;
  try {
    ToolRuntime runtime{&call, &state, context ? context->store() : nullptr, context};
    ToolResult result = co_await tool.acall(call.args, runtime);
    out = to_outcome(std::move(result), call);
  } catch (...) {
    failure = std::current_exception();
  }
  try {
    if (failure) out = error_outcome(failure, call, options);
  } catch (...) {
    span.failed(std::current_exception());
    throw;
  }
  span.done(out);
  co_return out;
}

/// Runs `fn` on a thread of its own; the caller resumes on its executor with what it returned or
/// threw. The thread lets go of its copy of the caller's executor before the caller may resume
/// (the completion waits for `handoff`): the last copy of a strand must not be destroyed there
/// after the caller's execution context is gone.
net::awaitable<ToolCallOutcome> on_own_thread(std::function<ToolCallOutcome()> fn) {
  return net::async_initiate<decltype(net::use_awaitable),
                             void(std::exception_ptr, ToolCallOutcome)>(
      [](auto handler, std::function<ToolCallOutcome()> work) {
        auto handoff = std::make_shared<std::mutex>();
        std::thread([handler = std::move(handler), work = std::move(work), handoff]() mutable {
          ToolCallOutcome outcome;
          std::exception_ptr error;
          try {
            outcome = work();
          } catch (...) {
            error = std::current_exception();
          }
          std::unique_lock hold(*handoff);
          {
            auto executor = net::get_associated_executor(handler);
            net::post(executor, [handler = std::move(handler), handoff, error = std::move(error),
                                 outcome = std::move(outcome)]() mutable {
              { std::lock_guard wait(*handoff); }
              std::move(handler)(std::move(error), std::move(outcome));
            });
          }
        }).detach();
      },
      net::use_awaitable, std::move(fn));
}

/// The executor one of several calls runs on: the node's, with the call's interrupt scope made
/// the thread's around every handler, so the call's interrupts are its own across co_await.
class ScopeExecutor {
 public:
  /// `scope` outlives every handler run through this executor.
  ScopeExecutor(net::any_io_executor inner, InterruptScope* scope) noexcept
      : inner_(std::move(inner)), scope_(scope) {}

  [[nodiscard]] net::execution_context& query(net::execution::context_t) const noexcept {
    return net::query(inner_, net::execution::context);
  }
  /// possibly (a handler may run inline) unless required to be never.
  [[nodiscard]] net::execution::blocking_t query(net::execution::blocking_t) const noexcept {
    if (never_) return net::execution::blocking.never;
    return net::execution::blocking.possibly;
  }
  [[nodiscard]] ScopeExecutor require(net::execution::blocking_t::never_t) const {
    ScopeExecutor out(net::require(inner_, net::execution::blocking.never), scope_);
    out.never_ = true;
    return out;
  }

  template <class F>
  void execute(F f) const {
    inner_.execute([scope = scope_, f = std::move(f)]() mutable {
      InterruptScopeGuard guard(scope);
      f();
    });
  }

  friend bool operator==(const ScopeExecutor& a, const ScopeExecutor& b) noexcept {
    return a.inner_ == b.inner_ && a.scope_ == b.scope_ && a.never_ == b.never_;
  }
  friend bool operator!=(const ScopeExecutor& a, const ScopeExecutor& b) noexcept {
    return !(a == b);
  }

 private:
  net::any_io_executor inner_;
  InterruptScope* scope_;
  bool never_ = false;
};

/// The interrupt scope of call `index` of several that a task (null: none) runs at once. Called
/// on the task's thread before the calls start.
std::shared_ptr<InterruptScope> call_scope(TaskInfo* task, std::size_t index) {
  if (task == nullptr) return nullptr;
  ensure_parts_shared(*task);
  auto scope = std::make_shared<InterruptScope>();
  scope->task = task;
  scope->key = std::to_string(index);
  return scope;
}

TaskInfo* task_of(Context* context) noexcept {
  return context != nullptr ? &ContextAccess::task(*context) : nullptr;
}

/// Throws what calls run at once threw (`errors`, in call order): the first error that is not
/// an interrupt, else one GraphInterrupt carrying every call's interrupts in call order.
void rethrow_gathered(const std::vector<std::exception_ptr>& errors) {
  std::vector<Interrupt> interrupts;
  bool interrupted = false;
  for (const auto& error : errors) {
    if (!error) continue;
    try {
      std::rethrow_exception(error);
    } catch (GraphInterrupt& gi) {
      interrupted = true;
      for (auto& i : gi.interrupts) interrupts.push_back(std::move(i));
    } catch (...) {
      throw;
    }
  }
  if (interrupted) throw GraphInterrupt{std::move(interrupts)};
}

/// The calls of one step running at once on one executor: each ends by storing its outcome or
/// error; the last one wakes the waiting node. Touched only on that executor.
struct Gathering {
  explicit Gathering(const net::any_io_executor& executor, std::size_t calls)
      : outcomes(calls), errors(calls), left(calls), all_done(executor) {
    all_done.expires_at(net::steady_timer::time_point::max());
  }
  void finished() {
    if (--left == 0) all_done.cancel();
  }
  std::vector<ToolCallOutcome> outcomes;
  std::vector<std::exception_ptr> errors;
  std::size_t left;
  net::steady_timer all_done;
};

}  // namespace

std::vector<ToolCallOutcome> run_tool_calls(const std::vector<Tool>& tools,
                                            const std::vector<ToolCall>& calls,
                                            const std::any& state, Context* context,
                                            const ToolNodeOptions& options) {
  std::vector<ToolCallOutcome> out;
  out.reserve(calls.size());
  if (calls.size() == 1) {
    out.push_back(run_one(tools, calls[0], state, context, options));
    return out;
  }
  // Tool calls block (on I/O, usually): each gets its own thread, none waits for a pool the
  // node itself may be occupying, and its own interrupt scope. Results are taken in call order.
  std::vector<std::shared_ptr<InterruptScope>> scopes;
  std::vector<std::future<ToolCallOutcome>> running;
  scopes.reserve(calls.size());
  running.reserve(calls.size());
  for (std::size_t i = 0; i < calls.size(); ++i) {
    scopes.push_back(call_scope(task_of(context), i));
    running.push_back(std::async(std::launch::async, [&tools, &call = calls[i], &state, context,
                                                      &options, scope = scopes.back().get()] {
      InterruptScopeGuard in_scope(scope);
      return run_one(tools, call, state, context, options);
    }));
  }
  std::vector<std::exception_ptr> errors(calls.size());
  for (std::size_t i = 0; i < calls.size(); ++i) {
    try {
      out.push_back(running[i].get());
    } catch (...) {
      errors[i] = std::current_exception();
    }
  }
  rethrow_gathered(errors);
  return out;
}

net::awaitable<ToolCallOutcome> arun_tool_call(const std::vector<Tool>& tools, const ToolCall& call,
                                               const std::any& state, Context* context,
                                               const ToolNodeOptions& options, bool own_thread) {
  const Tool* tool = find_tool(tools, call);
  if (tool != nullptr && tool->is_async())
    co_return co_await arun_async(*tool, call, state, context, options);
  if (!own_thread) co_return run_one(tools, call, state, context, options);
  // The call's interrupt scope (one of several calls) goes with it to its thread; it lives as
  // long as this coroutine waits.
  InterruptScope* scope = current_interrupt_scope();
  co_return co_await on_own_thread([&tools, &call, &state, context, &options, scope] {
    InterruptScopeGuard in_scope(scope);
    return run_one(tools, call, state, context, options);
  });
}

namespace {

/// gather_tool_calls for the calls of `task` (null: outside a graph): each call in an interrupt
/// scope of its own (its index) when there are several.
net::awaitable<std::vector<ToolCallOutcome>> gather_in_scopes(
    std::size_t count, const std::function<net::awaitable<ToolCallOutcome>(std::size_t)>& run,
    TaskInfo* task) {
  const net::any_io_executor executor = co_await net::this_coro::executor;
  Gathering gathering(executor, count);
  // The calls' scopes live in this frame, which waits for every call to end.
  std::vector<std::shared_ptr<InterruptScope>> scopes;
  if (count > 1) scopes.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    auto done = [&gathering, i](std::exception_ptr e, ToolCallOutcome outcome) {
      gathering.outcomes[i] = std::move(outcome);
      gathering.errors[i] = e;
      gathering.finished();
    };
    if (auto scope = count > 1 ? call_scope(task, i) : nullptr) {
      scopes.push_back(std::move(scope));
      net::co_spawn(ScopeExecutor(executor, scopes.back().get()), run(i), std::move(done));
    } else {
      net::co_spawn(executor, run(i), std::move(done));
    }
  }
  boost::system::error_code ignored;
  if (gathering.left > 0)
    co_await gathering.all_done.async_wait(net::redirect_error(net::use_awaitable, ignored));
  rethrow_gathered(gathering.errors);
  co_return std::move(gathering.outcomes);
}

}  // namespace

net::awaitable<std::vector<ToolCallOutcome>> gather_tool_calls(
    std::size_t count, const std::function<net::awaitable<ToolCallOutcome>(std::size_t)>& run) {
  co_return co_await gather_in_scopes(count, run, task_of(current_context()));
}

net::awaitable<std::vector<ToolCallOutcome>> arun_tool_calls(const std::vector<Tool>& tools,
                                                             const std::vector<ToolCall>& calls,
                                                             const std::any& state,
                                                             Context* context,
                                                             const ToolNodeOptions& options) {
  bool any_async = false;
  for (const auto& call : calls) {
    const Tool* tool = find_tool(tools, call);
    any_async = any_async || (tool != nullptr && tool->is_async());
  }
  if (!any_async) co_return run_tool_calls(tools, calls, state, context, options);
  if (calls.size() == 1) {
    std::vector<ToolCallOutcome> out;
    out.push_back(co_await arun_tool_call(tools, calls[0], state, context, options, false));
    co_return out;
  }
  // Asynchronous tools run as coroutines on this executor (keeping the node's Context current),
  // plain ones each on a thread of their own when there are several calls.
  const bool own_thread = calls.size() > 1;
  const std::function<net::awaitable<ToolCallOutcome>(std::size_t)> run = [&](std::size_t i) {
    return arun_tool_call(tools, calls[i], state, context, options, own_thread);
  };
  co_return co_await gather_in_scopes(calls.size(), run, task_of(context));
}

const std::vector<ToolCall>& last_tool_calls(const std::vector<Message>& messages) {
  if (messages.empty() || messages.back().type != MessageType::ai)
    throw Error(errc::kInvalidArgument, "ToolNode: the last message is not an AI message");
  return messages.back().tool_calls;
}

}  // namespace detail
}  // namespace sg
