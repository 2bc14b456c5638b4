// SPDX-License-Identifier: MIT
// Which tasks run in the next superstep: triggers, waiting edges, deferred nodes, Sends.

#include <stategraph/core/detail/executor_core.hpp>
#include <stategraph/core/error.hpp>

#include <algorithm>

namespace sg::detail {

void ExecutorCore::reset_task(Task& t, int node, int send_index) {
  t.node = node;
  t.info.send_index = send_index;
  t.info.has_id = false;
  t.arg.reset();
  t.info.node = name_of(node);
  t.info.step = step_;
  t.info.attempt = 1;
  t.info.resume.clear();
  t.info.parts.reset();
  t.info.interrupts_seen = 0;
  t.has_output = false;
  t.go_to.clear();
  t.graph.clear();
  t.error = nullptr;
  t.info.stop = stop_;
  t.info.pushed.clear();
  t.info.span_open = false;
  t.info.more_updates.reset();
  t.info.subgraph_calls = 0;
  t.interrupts.clear();
  t.routes.clear();
  t.ran = false;
  t.restored = false;
  t.cached = false;
  t.interrupted = false;
}

Task ExecutorCore::start_task(int step) {
  Task start;
  reset_task(start, topo_.start, -1);
  start.info.step = step;
  assign_task_id(start);
  return start;
}

void ExecutorCore::assign_task_id(Task& t) const {
  detail::assign_task_id(t.info, shared_->task_id_seed());
}

/// Builds this step's tasks from what the previous step triggered. Deferred nodes run once
/// nothing else is left to run.
void ExecutorCore::prepare_tasks() {
  if (next_pull_.empty() && next_push_.empty() && !deferred_.empty()) {
    for (int node : deferred_) {
      defer_mark_[static_cast<std::size_t>(node)] = 0;
      pull_mark_[static_cast<std::size_t>(node)] = 1;
    }
    next_pull_.swap(deferred_);
  }
  // The waiting edges whose target runs now are consumed.
  for (std::size_t j = 0; j < topo_.joins.size(); ++j) {
    auto& marks = join_marks_[j];
    const int target = topo_.joins[j].target;
    if (pull_mark_[static_cast<std::size_t>(target)] &&
        std::all_of(marks.begin(), marks.end(), [](char m) { return m != 0; })) {
      std::fill(marks.begin(), marks.end(), 0);
    }
  }
  tasks_.resize(next_pull_.size() + next_push_.size());
  tasks_resized();
  std::sort(next_pull_.begin(), next_pull_.end(), [&](int a, int b) {
    return topo_.rank[static_cast<std::size_t>(a)] < topo_.rank[static_cast<std::size_t>(b)];
  });
  std::size_t i = 0;
  for (int node : next_pull_) {
    reset_task(tasks_[i++], node, -1);
    pull_mark_[static_cast<std::size_t>(node)] = 0;
  }
  int index = 0;
  for (auto& send : next_push_) {
    Task& t = tasks_[i++];
    reset_task(t, send.node, index++);
    t.arg = std::move(send.arg);
  }
  next_pull_.clear();
  next_push_.clear();
  // Without a checkpointer or a stream only a node may ask for its id (Context::task_id).
  if (saver_ || stream_) {
    const std::uint64_t seed = shared_->task_id_seed();
    for (auto& t : tasks_) detail::assign_task_id(t.info, seed);
  }
}

bool ExecutorCore::hits_names(const std::vector<std::string>& names) const {
  return std::any_of(tasks_.begin(), tasks_.end(), [&](const Task& t) {
    return std::any_of(names.begin(), names.end(),
                       [&](const std::string& n) { return n == "*" || n == name_of(t.node); });
  });
}

void ExecutorCore::trigger(int node) {
  if (node == Topology::kEnd) return;
  if (node != topo_.start && graph_->node_options[static_cast<std::size_t>(node)].defer) {
    if (!defer_mark_[static_cast<std::size_t>(node)]) {
      defer_mark_[static_cast<std::size_t>(node)] = 1;
      deferred_.push_back(node);
    }
    return;
  }
  if (!pull_mark_[static_cast<std::size_t>(node)]) {
    pull_mark_[static_cast<std::size_t>(node)] = 1;
    next_pull_.push_back(node);
  }
}

int ExecutorCore::goto_node(const Goto& go, std::string_view via) const {
  const int node = topo_.resolve(go.node(), via);  // a Send's node for a Send
  if (go.is_send()) {
    if (node == Topology::kEnd) throw Error(errc::kInvalidRun, std::string(via) + " sent to END");
    return node;
  }
  if (node != Topology::kEnd && topo_.send_only[static_cast<std::size_t>(node)]) {
    throw Error(errc::kInvalidRun,
                std::string(via) + " routed to '" + go.node() +
                    "', which takes a custom input and can only be started by a Send");
  }
  return node;
}

void ExecutorCore::follow(Goto& go, std::string_view via) {
  const int node = goto_node(go, via);
  if (go.is_send()) {
    Send& send = go.send();
    next_push_.push_back(
        PendingSend{node, std::move(send.arg), std::move(send.arg_to_json), std::nullopt});
    return;
  }
  trigger(node);
}

void ExecutorCore::schedule_next() {
  for (Task& t : tasks_) {
    for (int s : topo_.successors[static_cast<std::size_t>(t.node)]) trigger(s);
    if (!t.routes.empty()) {
      const std::string via = "the conditional edge after node '" + name_of(t.node) + "'";
      for (Goto& go : t.routes) follow(go, via);
    }
    if (t.has_output && !t.go_to.empty()) {
      const std::string via = "the Command of node '" + name_of(t.node) + "'";
      for (Goto& go : t.go_to) follow(go, via);
    }
    for (int j : topo_.joins_of[static_cast<std::size_t>(t.node)]) {
      const auto& join = topo_.joins[static_cast<std::size_t>(j)];
      auto& marks = join_marks_[static_cast<std::size_t>(j)];
      for (std::size_t s = 0; s < join.sources.size(); ++s) {
        if (join.sources[s] == t.node) marks[s] = 1;
      }
      // A full barrier stays full until its target runs (prepare_tasks consumes it), so an
      // update_state in between keeps the target scheduled (LangGraph's NamedBarrierValue).
      if (std::all_of(marks.begin(), marks.end(), [](char m) { return m != 0; }))
        trigger(join.target);
    }
  }
}

/// Forgets what was scheduled to run next. `keep_joins`: waiting edges keep the sources they
/// have seen and deferred nodes stay triggered (LangGraph's barrier and "after finish" channels
/// survive a new input and update_state).
void ExecutorCore::clear_schedule(bool keep_joins) {
  for (int node : next_pull_) pull_mark_[static_cast<std::size_t>(node)] = 0;
  next_pull_.clear();
  next_push_.clear();
  if (!keep_joins) {
    for (int node : deferred_) defer_mark_[static_cast<std::size_t>(node)] = 0;
    deferred_.clear();
  }
  for (std::size_t j = 0; j < topo_.joins.size(); ++j) {
    auto& marks = join_marks_[j];
    if (!keep_joins) {
      std::fill(marks.begin(), marks.end(), 0);
    } else if (std::all_of(marks.begin(), marks.end(), [](char m) { return m != 0; })) {
      trigger(topo_.joins[j].target);  // a full barrier still schedules its target
    }
  }
}

}  // namespace sg::detail
