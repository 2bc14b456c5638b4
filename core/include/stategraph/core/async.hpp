// SPDX-License-Identifier: MIT
#pragma once

// Asynchronous runs and coroutine nodes on Boost.Asio (C++20 coroutines).
//
// A node may be a coroutine: it returns boost::asio::awaitable<sg::Update<S>> (or a Command, a
// vector of Commands, or void) and co_awaits timers, sockets or a model client without holding
// a thread while it waits:
//
//   boost::asio::awaitable<sg::Update<Chat>> wait(const Chat& s, sg::Context& ctx) {
//     auto executor = co_await boost::asio::this_coro::executor;
//     boost::asio::steady_timer timer(executor, 100ms);
//     co_await timer.async_wait(boost::asio::use_awaitable);
//     co_return sg::set<&Chat::turns>(s.turns + 1);
//   }
//
// `co_await app.ainvoke(input, config)` runs a graph on the caller's executor (on a strand of
// it: one run's tasks never run at the same time); `invoke` runs coroutine nodes to completion
// on the calling thread. Semantics are the same in both forms (docs/executor.md, "Async runs").
//
// A coroutine node runs on an executor that makes its Context current around every resumption,
// so sg::current_context(), sg::interrupt() and model calls find the node across co_await.
// g++ 12.2 miscompiles
// co_await inside a braced initializer or a call's arguments (`f(co_await x)`, `T{co_await x}`)
// and temporaries in co_await operands: bind results, inputs and configs to named locals.

#include <stategraph/core/compiled_graph.hpp>
#include <stategraph/core/detail/async_call.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>  // before Boost.Asio's awaitable headers (Boost 1.74 omits it)
#include <vector>

namespace sg::detail {

/// Runs a coroutine node to its end and stores what it returned in `*out`. `fn` (shared with the
/// graph), `input`, `ctx` and `out` outlive the coroutine.
template <State S, class F, class In>
boost::asio::awaitable<void> run_coroutine_node(std::shared_ptr<const F> fn, const In* input,
                                                Context* ctx, Command<S>* out) {
  using A = decltype(call_with_context(*fn, *input, *ctx));
  using R = typename AwaitableValue<std::remove_cvref_t<A>>::type;
  if constexpr (std::is_void_v<R>) {
    co_await call_with_context(*fn, *input, *ctx);
    *out = Command<S>{};
  } else if constexpr (std::is_same_v<R, std::vector<Command<S>>>) {
    std::vector<Command<S>> commands = co_await call_with_context(*fn, *input, *ctx);
    if (commands.empty()) {
      *out = Command<S>{};
      co_return;
    }
    *out = std::move(commands.front());
    commands.erase(commands.begin());
    if (!commands.empty()) ContextAccess::task(*ctx).more_updates = std::move(commands);
  } else {
    // Bound to a local first: g++ 12.2 miscompiles co_await inside call arguments.
    R result = co_await call_with_context(*fn, *input, *ctx);
    *out = to_command<S>(std::move(result));
  }
}

/// Makes the AsyncNodeFunction of a coroutine node (see Node in state_graph.hpp).
template <class F>
struct CoroutineNodes {
  template <State S, class In>
  static AsyncNodeFunction<S> make(F fn, std::string node_name) {
    auto shared = std::make_shared<const F>(std::move(fn));
    return [shared, node_name = std::move(node_name)](const TaskInput<S>& input, Context& ctx,
                                                      Command<S>& out) -> AsyncCall {
      const In* arg = nullptr;
      if (input.arg) {
        arg = std::any_cast<In>(input.arg);
        if (!arg) {
          throw Error(errc::kInvalidRun, "node '" + node_name +
                                             "' received a Send argument of type " +
                                             input.arg->type().name() + ", not the type it takes");
        }
      } else if constexpr (std::is_same_v<In, S>) {
        arg = input.state;
      } else {
        throw Error(errc::kInvalidRun,
                    "node '" + node_name + "' takes a custom input and was not started by a Send");
      }
      return AsyncCall(
          std::make_unique<AwaitableCall>(run_coroutine_node<S, F, In>(shared, arg, &ctx, &out)));
    };
  }
};

/// ainvoke and astream (see CompiledGraph).
template <State S>
struct AsyncRuns {
  using Events = std::function<void(const StreamEvent<S>&)>;

  static boost::asio::awaitable<RunResult<S>> run(std::shared_ptr<const GraphDef<S>> def,
                                                  RunRequest<S> request, RunConfig config,
                                                  StreamModes modes, Events on_event) {
    auto executor = co_await boost::asio::this_coro::executor;
    auto work = on_strand(std::move(def), std::move(request), std::move(config), modes,
                          std::move(on_event));
    if (is_strand(executor)) {  // awaited in place: no hand-over through the executor's queue
      RunResult<S> result = co_await std::move(work);
      co_return result;
    }
    auto strand = boost::asio::make_strand(executor);
    RunResult<S> result =
        co_await boost::asio::co_spawn(strand, std::move(work), boost::asio::use_awaitable);
    co_return result;
  }

 private:
  static boost::asio::awaitable<RunResult<S>> on_strand(std::shared_ptr<const GraphDef<S>> def,
                                                        RunRequest<S> request, RunConfig config,
                                                        StreamModes modes, Events on_event) {
    StreamSpec<S> spec;
    spec.modes = modes;
    spec.sink = [&on_event](StreamEvent<S>&& e) { on_event(e); };
    Executor<S> executor(std::move(def), config, on_event ? &spec : nullptr);
    auto strand = co_await boost::asio::this_coro::executor;
    enable_async(executor, strand);
    StepsOutcome outcome;
    std::exception_ptr error;
    try {
      const bool skip_breakpoint = executor.begin(std::move(request));
      outcome = co_await run_steps_async(executor, skip_breakpoint);
    } catch (ParentCommand&) {
      error = std::make_exception_ptr(
          Error(errc::kInvalidRun,
                "a node returned Command{.graph = sg::PARENT} but this graph has no parent"));
    } catch (...) {
      error = std::current_exception();
    }
    if (!error) {
      try {
        RunResult<S> result = executor.finish(std::move(outcome));
        executor.end_run_span(result.status);
        co_return result;
      } catch (...) {
        error = std::current_exception();
      }
    }
    executor.end_run_span_error(error);
    std::rethrow_exception(error);
  }
};

}  // namespace sg::detail
