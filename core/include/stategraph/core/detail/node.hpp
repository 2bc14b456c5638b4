// SPDX-License-Identifier: MIT
#pragma once

// Type-erased nodes and routers. Internal to stategraph.

#include <stategraph/core/context.hpp>
#include <stategraph/core/graph_types.hpp>

#include <any>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

namespace boost::asio {
template <typename T, typename Executor>
class awaitable;  // <boost/asio/awaitable.hpp>; only coroutine nodes need the definition
}  // namespace boost::asio

namespace sg::detail {

/// T of boost::asio::awaitable<T>: what a coroutine node returns.
template <class A>
struct AwaitableValue {
  static constexpr bool value = false;
  using type = void;
};
template <class T, class E>
struct AwaitableValue<boost::asio::awaitable<T, E>> {
  static constexpr bool value = true;
  using type = T;
};

/// What a task runs on: the step's state, or the argument of the Send that started it.
template <State S>
struct TaskInput {
  const S* state = nullptr;
  const std::any* arg = nullptr;
};

/// A node, type-erased: every node returns a Command (an Update is a Command with no goto).
template <State S>
using NodeFunction = std::function<Command<S>(const TaskInput<S>&, Context&)>;

/// A started coroutine node, type-erased (detail/async_call.hpp holds the coroutine).
struct AsyncCall {
  struct Impl {
    virtual ~Impl() = default;
  };
  explicit AsyncCall(std::unique_ptr<Impl> i) noexcept : impl(std::move(i)) {}
  std::unique_ptr<Impl> impl;
};

/// A coroutine node, type-erased: starts the node on (input, ctx); the coroutine stores what the
/// node returned in `out`.
template <State S>
using AsyncNodeFunction = std::function<AsyncCall(const TaskInput<S>&, Context&, Command<S>&)>;

/// Makes the AsyncNodeFunction of a coroutine node F: defined in <stategraph/core/async.hpp>,
/// which a file adding a coroutine node must include.
template <class F>
struct CoroutineNodes;

/// Rebuilds a node's Send argument from a checkpoint.
using ArgReader = std::function<std::any(const nlohmann::json&)>;

/// The ArgReader of a node taking `In`.
template <State S, class In>
ArgReader make_arg_reader() {
  return [](const nlohmann::json& value) -> std::any {
    if constexpr (std::is_same_v<In, S>) {
      if constexpr (kJsonState<S>) {
        return std::any(state_from_json<S>(value));
      } else {
        throw Error(errc::kInvalidRun,
                    "a Send argument of this state type cannot be restored: its fields do not "
                    "convert to JSON");
      }
    } else if constexpr (JsonConvertible<In>) {
      return std::any(value.get<In>());
    } else {
      throw Error(errc::kInvalidRun,
                  "a Send argument of this type cannot be restored: it does not convert to JSON");
    }
  };
}

template <class T>
struct IsCommand : std::false_type {};
template <class S>
struct IsCommand<Command<S>> : std::true_type {};
template <class S>
struct IsCommand<std::vector<Command<S>>> : std::true_type {};

/// Converts what a user function returned into a Command.
template <State S, class R>
Command<S> to_command(R&& result) {
  using D = std::remove_cvref_t<R>;
  if constexpr (std::is_same_v<D, Command<S>>) {
    return std::forward<R>(result);
  } else if constexpr (std::is_same_v<D, Update<S>>) {
    return Command<S>{std::forward<R>(result), {}, {}, {}};
  } else {
    static_assert(sizeof(D) == 0,
                  "a node must return sg::Update<State>, sg::Command<State>, "
                  "std::vector<sg::Command<State>> or void");
  }
}

/// Calls `fn` with (input) or (input, ctx), whichever it takes.
template <class F, class In>
decltype(auto) call_with_context(const F& fn, const In& input, Context& ctx) {
  if constexpr (std::is_invocable_v<const F&, const In&, Context&>) {
    return fn(input, ctx);
  } else if constexpr (std::is_invocable_v<const F&, const In&, const Context&>) {
    return fn(input, static_cast<const Context&>(ctx));
  } else {
    static_assert(std::is_invocable_v<const F&, const In&>,
                  "a node or router must be callable as f(const State&), f(const State&, "
                  "sg::Context&) (with a const call operator: no mutable lambdas, nodes may run "
                  "concurrently)");
    return fn(input);
  }
}

template <State S, class F, class In>
Command<S> invoke_node(const F& fn, const In& input, Context& ctx) {
  using R = decltype(call_with_context(fn, input, ctx));
  if constexpr (std::is_void_v<R>) {
    call_with_context(fn, input, ctx);
    return Command<S>{};
  } else if constexpr (std::is_same_v<std::remove_cvref_t<R>, std::vector<Command<S>>>) {
    // Several Commands: the first is the task's output, the executor takes the others from the
    // task (their updates apply after it, their gotos add to it).
    std::vector<Command<S>> commands = call_with_context(fn, input, ctx);
    if (commands.empty()) return Command<S>{};
    Command<S> first = std::move(commands.front());
    commands.erase(commands.begin());
    if (!commands.empty()) ContextAccess::task(ctx).more_updates = std::move(commands);
    return first;
  } else {
    return to_command<S>(call_with_context(fn, input, ctx));
  }
}

/// Wraps a user callable taking the state (or a Send argument of type In) into a NodeFunction.
template <State S, class In, class F>
NodeFunction<S> make_node_function(F fn, std::string node_name) {
  return [fn = std::move(fn), node_name = std::move(node_name)](const TaskInput<S>& input,
                                                                Context& ctx) {
    if (input.arg) {
      const In* arg = std::any_cast<In>(input.arg);
      if (!arg) {
        throw Error(errc::kInvalidRun, "node '" + node_name +
                                           "' received a Send argument of type " +
                                           input.arg->type().name() + ", not the type it takes");
      }
      return invoke_node<S>(fn, *arg, ctx);
    }
    if constexpr (std::is_same_v<In, S>) {
      return invoke_node<S>(fn, *input.state, ctx);
    } else {
      throw Error(errc::kInvalidRun,
                  "node '" + node_name + "' takes a custom input and was not started by a Send");
    }
  };
}

/// What the callable returns (for a coroutine node: what its awaitable gives).
template <class In, class F>
using NodeResult = std::remove_cvref_t<decltype(call_with_context(
    std::declval<const F&>(), std::declval<const In&>(), std::declval<Context&>()))>;

/// True when the callable is a coroutine node (returns boost::asio::awaitable<...>).
template <class In, class F>
inline constexpr bool kCoroutineNode = AwaitableValue<NodeResult<In, F>>::value;

/// True when the callable returns a Command (or a coroutine node's awaitable gives one).
template <State S, class In, class F>
constexpr bool returns_command() {
  using R = NodeResult<In, F>;
  if constexpr (AwaitableValue<R>::value) {
    return IsCommand<std::remove_cvref_t<typename AwaitableValue<R>::type>>::value;
  } else {
    return IsCommand<R>::value;
  }
}

/// Appends what a router returned to `out`.
inline void append_gotos(std::vector<Goto>& out, const char* node) {
  out.emplace_back(node);
}
inline void append_gotos(std::vector<Goto>& out, std::string node) {
  out.emplace_back(std::move(node));
}
inline void append_gotos(std::vector<Goto>& out, std::string_view node) {
  out.emplace_back(node);
}
inline void append_gotos(std::vector<Goto>& out, Send send) {
  out.emplace_back(std::move(send));
}
inline void append_gotos(std::vector<Goto>& out, Goto go) {
  out.push_back(std::move(go));
}
template <class T>
void append_gotos(std::vector<Goto>& out, std::vector<T> list) {
  for (auto& item : list) append_gotos(out, std::move(item));
}

/// A conditional edge: the router (state -> targets) and its optional path map.
template <State S>
struct Router {
  std::function<void(const S&, Context&, std::vector<Goto>&)> fn;
  std::map<std::string, std::string> path_map;
};

template <State S, class F>
Router<S> make_router(F fn, std::map<std::string, std::string> path_map) {
  Router<S> router;
  router.fn = [fn = std::move(fn)](const S& state, Context& ctx, std::vector<Goto>& out) {
    append_gotos(out, call_with_context(fn, state, ctx));
  };
  router.path_map = std::move(path_map);
  return router;
}

}  // namespace sg::detail
