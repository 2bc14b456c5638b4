// SPDX-License-Identifier: MIT
// A run from start to end: loading the thread, input or resuming, the superstep loop, and the
// untyped parts of get_state and update_state.

#include <stategraph/core/detail/executor_core.hpp>
#include <stategraph/core/error.hpp>
#include <stategraph/core/uuid.hpp>

#include <algorithm>

#include "async_writer.hpp"
#include "loop_parts.hpp"

namespace sg::detail {

std::vector<std::pair<std::string, const GraphCore::Subgraph*>> list_subgraphs(
    const GraphCore& graph, std::optional<std::string_view> ns, bool recurse) {
  // As LangGraph's get_subgraphs: a namespace selects the nodes it starts with, and returns as
  // soon as one is the whole namespace.
  std::vector<std::pair<std::string, const GraphCore::Subgraph*>> out;
  for (const GraphCore::Subgraph& subgraph : graph.subgraph_nodes) {
    const std::string& name = subgraph.node;
    if (ns && ns->substr(0, name.size()) != name) continue;
    if (ns && *ns == name) {
      out.emplace_back(name, &subgraph);
      return out;
    }
    if (!ns) out.emplace_back(name, &subgraph);
    if (recurse) {
      std::optional<std::string_view> rest;
      if (ns) rest = ns->substr(std::min(ns->size(), name.size() + 1));
      for (auto& [path, nested] : list_subgraphs(*subgraph.def, rest, recurse)) {
        out.emplace_back(name + "|" + path, nested);
      }
    }
  }
  return out;
}

void GraphCore::finish_compiling() {
  branch_channels.clear();
  join_channels.clear();
  for (const auto& name : topo.names) branch_channels.push_back(branch_channel(name));
  for (const auto& join : topo.joins) {
    std::vector<std::string> sources;
    for (int s : join.sources) sources.push_back(topo.names[static_cast<std::size_t>(s)]);
    join_channels.push_back(
        join_channel(sources, topo.names[static_cast<std::size_t>(join.target)]));
  }
  pool = options.pool ? options.pool : ThreadPool::shared();
  cost_ns = std::make_unique<std::atomic<std::uint32_t>[]>(topo.node_count + 1);
  for (std::size_t i = 0; i <= topo.node_count; ++i) cost_ns[i].store(kUnknownCost);
}

ExecutorCore::ExecutorCore(std::shared_ptr<const GraphCore> graph, const RunConfig& config,
                           StreamTarget* stream, std::span<const std::string_view> fields,
                           bool json_state, Checkpointer* inherited, Store* inherited_store,
                           RunHooks* parent)
    : graph_(std::move(graph)),
      topo_(graph_->topo),
      stream_(stream),
      shared_(std::make_shared<RunShared>()),
      fields_(fields),
      json_state_(json_state) {
  shared_->cfg = config;
  shared_->parent = parent;
  shared_->current_checkpoint = &current_id_;
  if (parent) shared_->parents = parent->checkpoint_parents();
  shared_->orchestrator = std::this_thread::get_id();
  if (stream_) {
    shared_->stream_custom = stream_->modes.has(StreamMode::custom);
    shared_->deliver_custom = [this](RunShared::Custom&& c) { emit_custom(std::move(c)); };
    if (config.stream_subgraphs) shared_->sub_modes = stream_->modes;
    shared_->ns = stream_->ns;
    shared_->deliver_child = [this](ForeignEvent&& e) { emit_child(std::move(e)); };
    shared_->stream_messages = stream_->modes.has(StreamMode::messages);
    if (shared_->stream_messages) shared_->seen = std::make_unique<RunShared::SeenIds>();
    shared_->deliver_message = [this](MessageEvent&& e) { emit_message(std::move(e)); };
  }
  pull_mark_.assign(topo_.node_count, 0);
  defer_mark_.assign(topo_.node_count, 0);
  join_marks_.resize(topo_.joins.size());
  for (std::size_t j = 0; j < topo_.joins.size(); ++j)
    join_marks_[j].assign(topo_.joins[j].sources.size(), 0);
  changed_.assign(fields_.size(), 0);
  saver_ = graph_->options.checkpointer ? graph_->options.checkpointer.get() : inherited;
  saver_deltas_ = saver_ && saver_->stores_deltas();
  shared_->saver = saver_;
  shared_->store_ptr = graph_->options.store ? graph_->options.store.get() : inherited_store;
  if (saver_) {
    if (!json_state_) {
      throw Error(errc::kInvalidRun,
                  "a checkpointer needs a state whose fields convert to and from JSON");
    }
    if (config.thread_id.empty())
      throw Error(errc::kInvalidRun, "a graph with a checkpointer needs RunConfig::thread_id");
    durability_ = config.durability.value_or(saver_->default_durability());
    if (durability_ == Durability::async)
      writer_ = std::make_unique<AsyncWriter>(*graph_->pool, *saver_);
    run_id_ = config.run_id.empty() ? new_uuid4() : config.run_id;
    stored_ = CheckpointConfig{config.thread_id, config.checkpoint_ns, {}};
    stored_version_.assign(fields_.size(), -1);
  }
}

ExecutorCore::~ExecutorCore() {
  shared_->alive.store(false);
  if (shared_->has_wake) {
    std::lock_guard lock(shared_->mu);
    shared_->wake = nullptr;
  }
  writer_.reset();  // waits for queued background writes
}

bool ExecutorCore::load_thread(const std::optional<std::string>& load_before) {
  if (shared_->cfg.recursion_limit < 1)
    throw Error(errc::kInvalidRun, "recursion_limit must be at least 1");
  if (!saver_) return false;
  if (!shared_->parent && !shared_->cfg.checkpoint_ns.empty()) resolve_subgraph_checkpoint();
  if (load_before) {
    ListOptions before;
    before.thread_id = shared_->cfg.thread_id;
    before.checkpoint_ns = shared_->cfg.checkpoint_ns;
    before.before = *load_before;
    before.limit = 1;
    auto older = saver_->list(before);
    if (older.empty()) return false;
    restore(older.front());
    above_thread_versions_ = true;  // a new branch from an older checkpoint
    return true;
  }
  if (restore_recent()) return true;
  auto tuple = saver_->get_tuple(CheckpointConfig{
      shared_->cfg.thread_id, shared_->cfg.checkpoint_ns, shared_->cfg.checkpoint_id});
  if (!shared_->cfg.checkpoint_id.empty() && !tuple) {
    throw Error(errc::kInvalidRun, "thread '" + shared_->cfg.thread_id + "' has no checkpoint '" +
                                       shared_->cfg.checkpoint_id + "'");
  }
  if (tuple) restore(*tuple);
  return tuple.has_value();
}

void ExecutorCore::begin_with_input(bool loaded, bool input_saved,
                                    std::optional<nlohmann::json> input_json) {
  // On an existing thread, the previous run's unfinished tasks are dropped (a waiting edge keeps
  // the sources it has seen, as LangGraph's barrier channels do).
  clear_schedule(/*keep_joins=*/true);
  resumed_writes_.clear();
  null_writes_.clear();
  shared_->null_resume.reset();
  if (saver_ && !input_saved) {
    step_ = loaded ? step_ + 1 : -1;
    start_input_ = std::move(input_json);
    // The input checkpoint is stored with the next one, in one write: no node runs between.
    hold_puts_ = true;
    save_checkpoint("input");
    hold_puts_ = false;
    tasks_.clear();
    tasks_resized();
    emit_debug_checkpoint(/*start_next=*/true);
  } else if (!saver_) {
    step_ = -1;
  }
  stop_ = step_ + shared_->cfg.recursion_limit + 1;
  ++step_;
  tasks_.resize(1);
  tasks_resized();
  reset_task(tasks_[0], topo_.start, -1);
}

void ExecutorCore::finish_start_step() {
  if (saver_) {
    // The START task's writes, against the input checkpoint (as LangGraph saves them).
    assign_task_id(tasks_[0]);
    tasks_[0].ran = true;
    save_task_outcome(tasks_[0], /*with_checkpoint=*/true);
  }
  try {
    finish_step();
  } catch (...) {
    flush_held_puts();  // an input the graph rejects is still recorded, as in LangGraph
    throw;
  }
  save_step();
}

bool ExecutorCore::begin_resume(bool loaded, bool has_resume) {
  if (!saver_ || !loaded) {
    throw EmptyInputError(
        "Received no input for __start__" +
        (saver_ ? ": thread '" + shared_->cfg.thread_id + "' has no checkpoint to resume"
                : std::string(": continuing a thread needs a checkpointer")));
  }
  stop_ = step_ + 1 + shared_->cfg.recursion_limit + 1;
  // Replaying an older checkpoint (not answering its interrupts): a new branch, on which every
  // task runs again and interrupts fire again.
  const bool time_travel = !shared_->cfg.checkpoint_id.empty() && !has_resume;
  if (time_travel) {
    shared_->null_resume.reset();
    resumed_writes_.clear();
    if (!shared_->parent) {
      // Subgraphs load their state from before the replayed checkpoint (for an update or fork
      // checkpoint: before the one it was made from).
      const bool derived = loaded_source_ == "update" || loaded_source_ == "fork";
      shared_->replay_before =
          derived && current_parent_ ? current_parent_->checkpoint_id : current_id_;
    }
  }
  return time_travel;
}

void ExecutorCore::after_resume(bool time_travel) {
  if (time_travel && loaded_source_ != "update" && loaded_source_ != "fork") {
    save_checkpoint("fork");
  }
  shared_->resuming_step.store(true);
  emit_values();
}

StepsOutcome ExecutorCore::run_steps(bool skip_breakpoint) {
  for (++step_;; ++step_) {
    if (before_tasks(skip_breakpoint)) return std::move(outcome_);
    execute_tasks();
    if (after_tasks()) return std::move(outcome_);
  }
}

std::vector<std::string> ExecutorCore::stopped_next(bool breakpoint) const {
  std::vector<std::string> next;
  for (const Task& t : tasks_) {
    if (breakpoint || !t.has_output) next.push_back(name_of(t.node));
  }
  return next;
}

void ExecutorCore::snapshot_tasks(bool apply_finished, std::vector<std::string>& next,
                                  std::vector<TaskState>& tasks,
                                  std::vector<Interrupt>& interrupts) {
  ++step_;
  prepare_tasks();
  restore_task_writes();
  auto add_task = [&](const Task& t) {
    TaskState ts;
    ts.id = std::string(t.info.id.data(), t.info.id.size());
    ts.name = name_of(t.node);
    bool has_writes = false;  // LangGraph: any saved write but an error or an interrupt
    nlohmann::json result = nlohmann::json::object();
    for (const auto& w : task_writes_of(t)) {
      if (w.channel == kErrorChannel) {
        ts.error = w.value.is_string() ? w.value.get<std::string>() : w.value.dump();
        continue;
      }
      if (w.channel == kInterruptChannel) {
        for (const auto& i : w.value) {
          ts.interrupts.push_back(Interrupt{i.value("id", std::string()),
                                            i.value("value", nlohmann::json()),
                                            i.value("node", std::string())});
        }
        continue;
      }
      has_writes = true;
      if (w.channel != kGotoWrite && w.channel != kResumeChannel && w.channel != kNoWrites)
        add_result_write(result, w.channel, w.value);
    }
    if (has_writes) ts.result = std::move(result);
    if (!(apply_finished && has_writes)) next.push_back(name_of(t.node));
    interrupts.insert(interrupts.end(), ts.interrupts.begin(), ts.interrupts.end());
    tasks.push_back(std::move(ts));
  };
  if (pending_start_) {
    // An input checkpoint: START applies the input next.
    add_task(start_task(step_));
  }
  for (const Task& t : tasks_) add_task(t);
}

/// A root run given a subgraph's checkpoint (time travel to a point inside a subgraph, as
/// LangGraph's checkpoint_map does): the run replays the root checkpoint that subgraph
/// checkpoint was made under, and the subgraphs on the way load theirs.
void ExecutorCore::resolve_subgraph_checkpoint() {
  auto sub = saver_->get_tuple(CheckpointConfig{shared_->cfg.thread_id, shared_->cfg.checkpoint_ns,
                                                shared_->cfg.checkpoint_id});
  if (!sub) {
    throw Error(errc::kInvalidRun, "thread '" + shared_->cfg.thread_id +
                                       "' has no checkpoint in namespace '" +
                                       shared_->cfg.checkpoint_ns + "'");
  }
  nlohmann::json map = sub->metadata.value("parents", nlohmann::json::object());
  if (!map.is_object() || !map.contains("")) {
    throw Error(errc::kInvalidRun, "checkpoint '" + sub->config.checkpoint_id + "' of namespace '" +
                                       shared_->cfg.checkpoint_ns +
                                       "' does not record the checkpoint of its parent graph");
  }
  map[shared_->cfg.checkpoint_ns] = sub->config.checkpoint_id;
  shared_->cfg.checkpoint_ns.clear();
  shared_->cfg.checkpoint_id = map[""].get<std::string>();
  shared_->checkpoint_map = std::move(map);
  stored_ = CheckpointConfig{shared_->cfg.thread_id, "", {}};
}

std::optional<CheckpointTuple> ExecutorCore::load_for_update() {
  auto loaded = saver_->get_tuple(CheckpointConfig{
      shared_->cfg.thread_id, shared_->cfg.checkpoint_ns, shared_->cfg.checkpoint_id});
  if (loaded) restore(*loaded);
  // A subgraph's checkpoint keeps the parents of the one it updates (LangGraph).
  if (loaded && !shared_->cfg.checkpoint_ns.empty()) {
    shared_->parents = loaded->metadata.value("parents", nlohmann::json::object());
    run_metadata_ = nullptr;
  }
  return loaded;
}

CheckpointConfig ExecutorCore::copy_checkpoint(const CheckpointTuple& loaded) {
  stored_ = fork_checkpoint(*saver_, loaded, ForkOptions{.sibling = true});
  return stored_;
}

CheckpointConfig ExecutorCore::store_input(nlohmann::json input, bool loaded) {
  start_input_ = std::move(input);
  step_ = loaded ? step_ + 1 : -1;
  save_checkpoint("input");
  finish_persisting();
  return stored_;
}

std::vector<std::string> ExecutorCore::next_task_ids(
    const std::vector<int>& nodes, const std::vector<std::optional<std::string>>& given) {
  std::vector<std::string> task_ids(nodes.size());
  const auto pull = next_pull_;
  const auto pull_mark = pull_mark_;
  const auto deferred = deferred_;
  const auto defer_mark = defer_mark_;
  const auto push = next_push_;
  const auto joins = join_marks_;
  ++step_;
  prepare_tasks();
  std::vector<bool> used(tasks_.size(), false);
  const Task start = start_task(step_);
  for (std::size_t u = 0; u < nodes.size(); ++u) {
    if (given[u]) {
      task_ids[u] = *given[u];
      continue;
    }
    if (nodes[u] == topo_.start && pending_start_) {
      task_ids[u] = std::string(start.info.id.data(), start.info.id.size());
      continue;
    }
    for (std::size_t k = 0; k < tasks_.size(); ++k) {
      if (used[k] || tasks_[k].node != nodes[u]) continue;
      used[k] = true;
      task_ids[u] = std::string(tasks_[k].info.id.data(), tasks_[k].info.id.size());
      break;
    }
  }
  --step_;
  next_pull_ = pull;
  pull_mark_ = pull_mark;
  deferred_ = deferred;
  defer_mark_ = defer_mark;
  next_push_ = push;
  join_marks_ = joins;
  return task_ids;
}

/// The node that wrote last (for update_state without as_node).
int ExecutorCore::last_writer() const {
  std::int64_t best = -1;
  std::vector<std::string> nodes;
  for (const auto& [node, seen] : versions_seen_) {
    if (!topo_.ids.count(node)) continue;  // not a node of this graph (LangGraph skips it)
    std::int64_t v = -1;
    for (const auto& [ch, version] : seen) v = std::max(v, version);
    if (v > best) {
      best = v;
      nodes = {node};
    } else if (v == best) {
      nodes.push_back(node);
    }
  }
  if (nodes.empty()) return topo_.start;
  if (nodes.size() > 1) throw InvalidUpdateError("Ambiguous update, specify as_node");
  return topo_.ids.at(nodes[0]);
}

/// The node update_state applies an update as: `as_node`, or when none is given START on a
/// thread where nothing ran, else the node that ran last (START counts, as in LangGraph, whose
/// "only node" rule never applies to a StateGraph: START is a node). Throws InvalidUpdateError
/// (LangGraph's wording) for an unknown node or an ambiguous last node.
int ExecutorCore::update_target(const std::optional<std::string>& as_node, bool loaded) const {
  if (!as_node) {
    if (!loaded) return topo_.start;
    return last_writer();
  }
  if (*as_node == START) return topo_.start;
  auto it = topo_.ids.find(*as_node);
  if (it == topo_.ids.end() || it->second == topo_.start)
    throw InvalidUpdateError("Node " + *as_node + " does not exist");
  return it->second;
}

}  // namespace sg::detail
