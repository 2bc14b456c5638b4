// SPDX-License-Identifier: MIT
// Asynchronous runs: the superstep loop as a coroutine on the run's strand, coroutine nodes
// spawned on it, and coroutine nodes run to completion in a synchronous run.

#include <stategraph/core/detail/async_call.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <typeinfo>

#include "loop_parts.hpp"

namespace sg::detail {

/// What a coroutine node's handlers run with: its Context, and what the Context points into.
struct TaskScope {
  TaskScope(std::shared_ptr<NodeAttempt> a, std::shared_ptr<RunShared> s)
      : attempt(std::move(a)), shared(std::move(s)), ctx(*shared, attempt->info) {}
  std::shared_ptr<NodeAttempt> attempt;
  std::shared_ptr<RunShared> shared;
  Context ctx;
};

/// The executor a coroutine node runs on: the run's strand, with the node's Context made current
/// on the thread around every handler, so sg::current_context() (and with it sg::interrupt()
/// and model calls) finds the task across co_await.
class ScopedExecutor {
 public:
  ScopedExecutor(boost::asio::any_io_executor inner, std::shared_ptr<TaskScope> scope) noexcept
      : inner_(std::move(inner)), scope_(std::move(scope)) {}

  [[nodiscard]] boost::asio::execution_context& query(
      boost::asio::execution::context_t) const noexcept {
    return boost::asio::query(inner_, boost::asio::execution::context);
  }
  /// possibly (a handler may run inline, on the strand) unless required to be never.
  [[nodiscard]] boost::asio::execution::blocking_t query(
      boost::asio::execution::blocking_t) const noexcept {
    if (never_) return boost::asio::execution::blocking.never;
    return boost::asio::execution::blocking.possibly;
  }
  [[nodiscard]] ScopedExecutor require(boost::asio::execution::blocking_t::never_t) const {
    ScopedExecutor out(boost::asio::require(inner_, boost::asio::execution::blocking.never),
                       scope_);
    out.never_ = true;
    return out;
  }

  template <class F>
  void execute(F f) const {
    inner_.execute([scope = scope_, f = std::move(f)]() mutable {
      CurrentContextGuard guard(&scope->ctx);
      f();
    });
  }

  friend bool operator==(const ScopedExecutor& a, const ScopedExecutor& b) noexcept {
    return a.inner_ == b.inner_ && a.scope_ == b.scope_ && a.never_ == b.never_;
  }
  friend bool operator!=(const ScopedExecutor& a, const ScopedExecutor& b) noexcept {
    return !(a == b);
  }

 private:
  boost::asio::any_io_executor inner_;
  std::shared_ptr<TaskScope> scope_;
  bool never_ = false;
};

/// What an asynchronous run adds to its executor: the strand it runs on, and the timer its loop
/// waits on (cancelled to wake it).
struct AsyncState {
  boost::asio::any_io_executor strand;
  std::shared_ptr<boost::asio::steady_timer> timer;
};

struct AsyncLoop {
  static boost::asio::awaitable<StepsOutcome> run_steps(ExecutorCore& core, bool skip_breakpoint) {
    for (++core.step_;; ++core.step_) {
      if (core.before_tasks(skip_breakpoint)) co_return std::move(core.outcome_);
      co_await execute(core);
      if (core.after_tasks()) co_return std::move(core.outcome_);
    }
  }

  /// The step's tasks: plain ones as in a synchronous run (inline or on the pool), coroutine
  /// nodes spawned on the strand; then waits, without holding the thread, until all settled.
  static boost::asio::awaitable<void> execute(ExecutorCore& core) {
    core.begin_tasks();
    if (core.run_single_task()) co_return;
    // A coroutine task alone in its step, when nothing it streams is delivered before the step
    // ends (no custom or messages mode, no subgraph events): its first attempt is awaited here
    // rather than spawned, so the loop needs no wake-up when it ends. Otherwise the loop stays
    // free to deliver what the task streams as it comes.
    const RunShared& shared = *core.shared_;
    core.await_lone_attempt_ = core.tasks_.size() == 1 && !core.tasks_[0].restored &&
                               core.spawns(core.tasks_[0]) && !core.is_timed(core.tasks_[0]) &&
                               !shared.stream_custom && !shared.stream_messages &&
                               !shared.deliver_child;
    core.start_batch();
    core.await_lone_attempt_ = false;
    if (auto attempt = std::move(core.lone_attempt_)) {
      auto scope = std::make_shared<TaskScope>(std::move(attempt), core.shared_);
      ScopedExecutor executor(core.async_->strand, scope);
      co_await boost::asio::co_spawn(executor, run_attempt(std::move(scope)),
                                     boost::asio::use_awaitable);
    }
    AsyncState& state = *core.async_;
    for (;;) {
      auto wake = std::chrono::steady_clock::now();
      if (core.batch_settled(wake)) break;
      state.timer->expires_at(wake);
      boost::system::error_code ec;  // cancelled: woken up
      auto token = boost::asio::redirect_error(boost::asio::use_awaitable, ec);
      co_await state.timer->async_wait(token);
    }
    core.end_batch();
  }

  static void enable(ExecutorCore& core, const boost::asio::any_io_executor& strand);

  /// One attempt of a coroutine node, on the strand (through the scope's ScopedExecutor).
  static boost::asio::awaitable<void> run_attempt(std::shared_ptr<TaskScope> scope) {
    std::exception_ptr thrown;
    try {
      AsyncCall call = scope->attempt->start(scope->ctx);
      co_await take_work(call);
    } catch (...) {
      thrown = std::current_exception();
    }
    scope->attempt->end(thrown, *scope->shared);
  }
};

bool is_strand(const boost::asio::any_io_executor& executor) noexcept {
  using IoStrand = boost::asio::strand<boost::asio::io_context::executor_type>;
  using AnyStrand = boost::asio::strand<boost::asio::any_io_executor>;
  // Boost 1.74's any_executor::target() does not check the type: compare target_type().
  const std::type_info& type = executor.target_type();
  return type == typeid(IoStrand) || type == typeid(AnyStrand);
}

void enable_async(ExecutorCore& core, const boost::asio::any_io_executor& strand) {
  AsyncLoop::enable(core, strand);
}

void AsyncLoop::enable(ExecutorCore& core, const boost::asio::any_io_executor& strand) {
  auto state = std::make_shared<AsyncState>();
  state->strand = strand;
  state->timer = std::make_shared<boost::asio::steady_timer>(strand);
  // Every stream delivery from a node queues and wakes the loop (the strand may move between
  // threads, so no thread is the orchestrator).
  core.shared_->orchestrator = std::thread::id();
  std::weak_ptr<boost::asio::steady_timer> timer = state->timer;
  core.shared_->wake = [strand, timer] {
    boost::asio::post(strand, [timer] {
      if (auto t = timer.lock()) t->cancel();
    });
  };
  core.shared_->has_wake = true;
  core.async_ = std::move(state);
}

boost::asio::awaitable<StepsOutcome> run_steps_async(ExecutorCore& core, bool skip_breakpoint) {
  return AsyncLoop::run_steps(core, skip_breakpoint);
}

void ExecutorCore::spawn_attempt(const std::shared_ptr<NodeAttempt>& attempt) {
  if (await_lone_attempt_) {
    lone_attempt_ = attempt;
    return;
  }
  auto scope = std::make_shared<TaskScope>(attempt, shared_);
  ScopedExecutor executor(async_->strand, scope);
  boost::asio::co_spawn(executor, AsyncLoop::run_attempt(std::move(scope)), boost::asio::detached);
}

void ExecutorCore::run_blocking(AsyncCall&& call) {
  boost::asio::io_context io;
  std::exception_ptr error;
  boost::asio::co_spawn(io, take_work(call), [&error](std::exception_ptr e) { error = e; });
  io.run();
  if (error) std::rethrow_exception(error);
}

}  // namespace sg::detail
