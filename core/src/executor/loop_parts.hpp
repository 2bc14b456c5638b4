// SPDX-License-Identifier: MIT
#pragma once

// The parts of a superstep the synchronous loop (run.cpp, step.cpp) and the asynchronous one
// (async.cpp) share, inline in both: a call per part would cost the hot loop measurably.

#include <stategraph/core/detail/executor_core.hpp>
#include <stategraph/core/error.hpp>

#include "async_writer.hpp"

namespace sg::detail {

[[gnu::always_inline]] inline bool ExecutorCore::before_tasks(bool& skip_breakpoint) {
  check_cancelled();
  if (step_ > stop_) {
    throw GraphRecursionError("Recursion limit of " + std::to_string(shared_->cfg.recursion_limit) +
                              " reached without hitting a stop condition. You can increase the "
                              "limit by setting the `recursion_limit` config key.");
  }
  prepare_tasks();
  restore_task_writes();
  emit_debug_checkpoint();
  if (tasks_.empty()) {
    finish_persisting(/*finished=*/true);
    outcome_ = StepsOutcome{};
    return true;
  }
  if (!skip_breakpoint &&
      (hits(topo_.interrupt_before) || hits_config(shared_->cfg.interrupt_before))) {
    finish_persisting();
    outcome_ = StepsOutcome{StepsOutcome::Kind::breakpoint, {}};
    return true;
  }
  skip_breakpoint = false;
  set_managed_values();
  return false;
}

[[gnu::always_inline]] inline bool ExecutorCore::after_tasks() {
  if (auto error = first_error()) {
    finish_persisting();
    raise(*error);
  }
  if (any_interrupted()) {
    finish_persisting();
    outcome_ = StepsOutcome{StepsOutcome::Kind::interrupted, interrupts_of_step()};
    return true;
  }
  // A node returned Command{.graph = PARENT}: the command leaves this (sub)graph's run.
  for (Task& t : tasks_) {
    if (!t.has_output || t.graph.empty()) continue;
    if (t.graph != PARENT) {
      throw Error(errc::kInvalidRun, "node '" + name_of(t.node) +
                                         "' returned a Command for unknown graph '" + t.graph +
                                         "' (use sg::PARENT)");
    }
    raise_parent_command(t);
  }
  finish_step();
  save_step();
  shared_->resuming_step.store(false, std::memory_order_relaxed);  // tasks start after this
  resumed_writes_.clear();
  shared_->null_resume.reset();
  if (hits(topo_.interrupt_after) || hits_config(shared_->cfg.interrupt_after)) {
    finish_persisting();
    prepare_tasks();
    outcome_ = StepsOutcome{StepsOutcome::Kind::breakpoint, {}};
    return true;
  }
  return false;
}

[[gnu::always_inline]] inline void ExecutorCore::begin_tasks() {
  shared_->step_failed.store(false, std::memory_order_relaxed);  // tasks start after this
  if (streams(StreamMode::debug)) {
    for (const Task& t : tasks_) emit_debug_start(t);
  }
  if (streams(StreamMode::updates)) {
    // Tasks whose writes were saved before are not run again; their updates are streamed as
    // cached (LangGraph replays them at the start of the step).
    for (Task& t : tasks_) {
      if (t.restored) emit_task_finished(t, /*replayed=*/true);
    }
  }
  if (writer_) writer_->start_if_due(step_may_be_long());
}

[[gnu::always_inline]] inline bool ExecutorCore::run_single_task() {
  if (tasks_.size() != 1 || is_timed(tasks_[0]) || spawns(tasks_[0])) return false;
  if (plain_node_pool() != nullptr && !tasks_[0].restored) return false;
  Task& t = tasks_[0];
  if (t.restored) return true;
  if (writer_) {
    const auto began = std::chrono::steady_clock::now();
    run_task(t);
    record_cost(t.node, std::chrono::steady_clock::now() - began);
  } else {
    run_task(t);
  }
  // What the node streamed from other threads (an asynchronous run queues all it streams),
  // before its own events; a run that streams nothing never queues.
  if (stream_ != nullptr && shared_->queued.load(std::memory_order_relaxed)) drain();
  emit_task_finished(t);
  // A task that succeeded alone in its step: its writes go with the step's checkpoint.
  save_task_outcome(t, /*with_checkpoint=*/true);
  return true;
}

}  // namespace sg::detail
