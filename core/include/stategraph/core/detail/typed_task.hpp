// SPDX-License-Identifier: MIT
#pragma once

// The typed parts of a task: its output, what a node produced besides its Command, and an
// attempt that runs apart from the executor's loop. Internal to stategraph.

#include <stategraph/core/detail/executor_core.hpp>
#include <stategraph/core/detail/graph_def.hpp>

#include <any>
#include <memory>
#include <optional>
#include <vector>

namespace sg::detail {

/// A task's typed writes: its update, the messages it pushed (applied before) and the updates
/// of its second and later Commands (after). Valid while the task's has_output is true.
template <State S>
struct TaskOutputOf {
  Update<S> update;
  std::vector<Update<S>> pushed;
  std::vector<Update<S>> more;
};

/// Moves what a node produced besides its Command into its output: pushed messages (as updates
/// of their fields) and the updates of its further Commands, whose gotos go to `go_to`. Throws
/// sg::Error for a message pushed to a field that does not hold messages.
template <State S>
void collect_extras(TaskInfo& info, TaskOutputOf<S>& out, std::vector<Goto>& go_to) {
  if (info.pushed.empty() && !info.more_updates.has_value()) return;
  for (auto& pushed : info.pushed) {
    // Named, not a structured binding: clang before 16 cannot capture bindings in a lambda.
    const auto& field = pushed.first;
    auto& message = pushed.second;
    Update<S> u;
    detail::visit_field_named<S>(field, [&](auto i) {
      using U = typename field_t<S, i>::update_type;
      if constexpr (std::is_constructible_v<U, Message>) {
        u.template slot<i>().emplace(std::in_place_index<0>, U(std::move(message)));
      } else {
        throw Error(errc::kInvalidArgument,
                    "push_message: state field '" + field + "' does not hold messages");
      }
    });
    out.pushed.push_back(std::move(u));
  }
  info.pushed.clear();
  if (info.more_updates.has_value()) {
    if (auto* more = std::any_cast<std::vector<Command<S>>>(&info.more_updates)) {
      for (auto& c : *more) {
        out.more.push_back(std::move(c.update));
        for (auto& go : c.go_to) go_to.push_back(std::move(go));
      }
    }
    info.more_updates.reset();
  }
}

/// The Command a subgraph sent to this graph (Command{.graph = PARENT}); nullopt when it carries
/// an update of another state type.
template <State S>
std::optional<Command<S>> parent_command(ParentCommand& pc) {
  if (auto* command = std::any_cast<Command<S>>(&pc.command)) return std::move(*command);
  if (!pc.has_update) return Command<S>{{}, std::move(pc.go_to), {}, {}};
  return std::nullopt;
}

/// Runs coroutine node `node` to its end on this thread (a synchronous run).
template <State S>
[[gnu::noinline]] Command<S> run_coroutine_to_end(const GraphDef<S>& def, std::size_t node,
                                                  const TaskInput<S>& input, Context& ctx) {
  Command<S> command;
  ExecutorCore::run_blocking(def.async_fns[node](input, ctx, command));
  return command;
}

/// An attempt apart from the loop (a timed node, or a coroutine node of an asynchronous run):
/// the node runs on its own snapshot of the step's state.
template <State S>
struct TypedAttempt final : NodeAttempt {
  std::shared_ptr<const GraphDef<S>> def;
  std::shared_ptr<const S> snapshot;
  int node = 0;
  std::optional<Command<S>> output;

  [[nodiscard]] TaskInput<S> input() const {
    return {snapshot.get(), arg.has_value() ? &arg : nullptr};
  }
  void call(Context& ctx) override {
    const auto n = static_cast<std::size_t>(node);
    output.emplace(def->coroutine[n] ? run_coroutine_to_end(*def, n, input(), ctx)
                                     : def->fns[n](input(), ctx));
  }
  AsyncCall start(Context& ctx) override {
    output.emplace();
    return def->async_fns[static_cast<std::size_t>(node)](input(), ctx, *output);
  }
  bool take_parent_command(ParentCommand& pc) override {
    output = parent_command<S>(pc);
    return output.has_value();
  }
};

}  // namespace sg::detail
