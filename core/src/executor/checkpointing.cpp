// SPDX-License-Identifier: MIT
// Saving a run: checkpoints (only the channels changed since the last stored one, lists as
// deltas), task writes, the durability modes, the node cache.

#include <stategraph/core/cache.hpp>
#include <stategraph/core/detail/executor_core.hpp>
#include <stategraph/core/error.hpp>
#include <stategraph/core/time.hpp>

#include <algorithm>

#include "async_writer.hpp"

namespace sg::detail {

/// Whether this run's thread can be kept in (and taken from) the graph's recent threads: the
/// graph's own checkpointer, the root namespace, the latest checkpoint.
bool ExecutorCore::recent_applies() const {
  return graph_->options.recent_threads > 0 && saver_ &&
         saver_ == graph_->options.checkpointer.get() && shared_->cfg.checkpoint_ns.empty();
}

std::optional<std::size_t> ExecutorCore::field_index(std::string_view channel) const {
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i] == channel) return i;
  }
  return std::nullopt;
}

/// Saves writes against the current checkpoint. `with_checkpoint`: they go with the next
/// checkpoint, in its write (the writes of a task whose step stores a checkpoint right after).
/// Durability "exit" keeps them for the end (only those of the checkpoint stored then count).
void ExecutorCore::save_writes(std::string task_id, ChannelWrites writes, bool with_checkpoint) {
  if (durability_ == Durability::exit) {
    exit_writes_.emplace_back(current_id_, std::move(task_id), std::move(writes));
    return;
  }
  if (with_checkpoint) {
    held_writes_.push_back(TaskWrites{std::move(task_id), std::move(writes)});
    return;
  }
  auto job = [saver = saver_, config = current_config(),
              task = TaskWrites{std::move(task_id), std::move(writes)}] {
    saver->put_task_writes(config, task);
  };
  if (writer_) {
    writer_->submit(std::move(job));
  } else {
    job();
  }
}

/// Before the first checkpoint on top of an explicitly chosen (maybe older) checkpoint: new
/// versions must exceed every version of the thread, or the new branch would overwrite values
/// that the other branch's checkpoints still use.
void ExecutorCore::raise_to_thread_versions() {
  above_thread_versions_ = false;
  max_version_ = std::max(max_version_, newest_channel_version(*saver_, shared_->cfg.thread_id,
                                                               shared_->cfg.checkpoint_ns));
}

/// Records a checkpoint of the run's current state (stored now, in the background, or at the
/// end, by durability).
void ExecutorCore::save_checkpoint(const char* source) {
  if (!saver_) return;
  if (above_thread_versions_) raise_to_thread_versions();
  // Every channel written since the last checkpoint gets the new version v (so the channels of
  // a stored checkpoint's put are those above stored_through_).
  const std::int64_t v = ++max_version_;
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    if (!changed_[i]) continue;
    versions_[std::string(fields_[i])] = v;
    changed_[i] = 0;
  }
  // The triggers of the next step (branches, joins, sends, the input) get v and earlier triggers
  // go; entries that stay are updated in place.
  for (int node : next_pull_)
    versions_[graph_->branch_channels[static_cast<std::size_t>(node)]] = v;
  for (int node : deferred_) versions_[graph_->branch_channels[static_cast<std::size_t>(node)]] = v;
  if (!next_push_.empty()) versions_[std::string(kTasksChannel)] = v;
  for (std::size_t j = 0; j < topo_.joins.size(); ++j) {
    if (std::any_of(join_marks_[j].begin(), join_marks_[j].end(), [](char m) { return m != 0; }))
      versions_[graph_->join_channels[j]] = v;
  }
  // Only an input checkpoint holds the input (with durability "exit" it may never be stored, and
  // the next checkpoint must not carry it).
  const bool input = std::string_view(source) == "input" || std::string_view(source) == "fork";
  if (input && start_input_) versions_[std::string(kStartChannel)] = v;
  std::erase_if(versions_,
                [v](const auto& kv) { return kv.second != v && is_scheduling_channel(kv.first); });
  for (const Task& t : tasks_) {
    // START counts too (LangGraph records it: update_state then knows the input came last);
    // like every node it is recorded under its own trigger, which stores compactly.
    if (!t.ran) continue;
    const std::string& trigger = graph_->branch_channels[static_cast<std::size_t>(t.node)];
    auto& seen = versions_seen_[name_of(t.node)];
    if (seen.size() == 1 && seen.begin()->first == trigger) {
      seen.begin()->second = v;
    } else {
      seen = ChannelVersions{{trigger, v}};
    }
  }
  Checkpoint cp;
  cp.id = new_checkpoint_id(step_);
  cp.ts = iso_timestamp_now();
  cp.channel_versions = versions_;
  cp.versions_seen = versions_seen_;
  current_id_ = cp.id;
  saved_step_ = step_;
  nlohmann::json metadata = run_metadata();
  auto& fields = metadata.get_ref<nlohmann::json::object_t&>();
  fields.emplace("source", source);
  fields.emplace("step", step_);
  if (streams(StreamMode::debug)) {
    current_meta_ = metadata;
    current_parent_ =
        stored_.checkpoint_id.empty() ? std::nullopt : std::optional<CheckpointConfig>(stored_);
  }
  pending_checkpoint_ = std::make_pair(std::move(cp), std::move(metadata));
  if (durability_ != Durability::exit) store_pending_checkpoint();
}

namespace {

/// Configurable keys LangGraph keeps out of checkpoint metadata (EXCLUDED_METADATA_KEYS).
bool is_checkpoint_key(std::string_view key) {
  static constexpr std::string_view kExcluded[] = {
      "thread_id",          "checkpoint_id",  "checkpoint_ns",
      "checkpoint_map",     "langgraph_step", "langgraph_node",
      "langgraph_triggers", "langgraph_path", "langgraph_checkpoint_ns"};
  return std::find(std::begin(kExcluded), std::end(kExcluded), key) != std::end(kExcluded);
}

}  // namespace

/// The metadata every checkpoint of this run shares, built once: "parents", "run_id", and
/// (LangGraph's get_checkpoint_metadata) the run's metadata and configurable values (strings,
/// numbers, booleans; not keys starting with "__", naming the checkpoint, "source" or "step").
const nlohmann::json& ExecutorCore::run_metadata() {
  if (run_metadata_.is_null()) {
    nlohmann::json metadata(nlohmann::json::value_t::object);
    metadata["parents"] = shared_->parents.is_null() ? nlohmann::json::object() : shared_->parents;
    metadata["run_id"] = run_id_;
    for (const nlohmann::json* values : {&shared_->cfg.metadata, &shared_->cfg.configurable}) {
      if (!values->is_object()) continue;
      for (const auto& [key, value] : values->items()) {
        if (!value.is_primitive() || value.is_null() || metadata.contains(key) || key == "source" ||
            key == "step" || key.rfind("__", 0) == 0 || is_checkpoint_key(key)) {
          continue;
        }
        metadata[key] = value;
      }
    }
    run_metadata_ = std::move(metadata);
  }
  return run_metadata_;
}

/// Writes the recorded checkpoint: only the channels changed since the last stored one, tracked
/// lists as deltas.
void ExecutorCore::store_pending_checkpoint() {
  if (!pending_checkpoint_) return;
  auto [cp, metadata] = std::move(*pending_checkpoint_);
  pending_checkpoint_.reset();
  ChannelVersions new_versions;
  std::map<std::string, ListDelta> lists;
  for (const auto& [ch, version] : versions_) {
    if (version <= stored_through_) continue;
    new_versions.emplace_hint(new_versions.end(), ch, version);
    if (ch == kStartChannel && start_input_) {
      cp.channel_values[ch] = std::move(*start_input_);  // reset below
      continue;
    }
    const auto field = field_index(ch);
    if (!field) {
      cp.channel_values[ch] = channel_value(ch);
      continue;
    }
    ListDelta delta;
    if (saver_deltas_ && field_list_delta(*field, delta)) {
      lists.emplace(ch, std::move(delta));
    } else {
      cp.channel_values[ch] = field_json(*field);
    }
    stored_version_[*field] = version;
    field_stored(*field);  // the next delta is against this version
  }
  stored_through_ = max_version_;
  start_input_.reset();
  CheckpointPut put{stored_,
                    std::move(cp),
                    std::move(metadata),
                    std::move(new_versions),
                    std::move(held_writes_),
                    std::move(lists)};
  held_writes_.clear();
  stored_ = CheckpointConfig{shared_->cfg.thread_id, shared_->cfg.checkpoint_ns, put.checkpoint.id};
  held_puts_.push_back(std::move(put));
  if (!hold_puts_) flush_held_puts();
}

/// Stores the checkpoints recorded so far, in one write.
void ExecutorCore::flush_held_puts() {
  if (held_puts_.empty()) return;
  std::vector<CheckpointPut> puts = std::move(held_puts_);
  held_puts_.clear();
  if (writer_) {
    writer_->submit(std::move(puts));
  } else {
    put_checkpoints(*saver_, puts, trace_.get());
  }
}

/// The value of a channel that is not a state field, for a checkpoint.
nlohmann::json ExecutorCore::channel_value(const std::string& channel) const {
  if (triggered_node(channel)) return true;
  if (channel == kStartChannel) return start_input_.value_or(nlohmann::json::object());
  if (channel == kTasksChannel) {
    nlohmann::json sends = nlohmann::json::array();
    for (const auto& send : next_push_) {
      sends.push_back(
          {{"node", name_of(send.node)},
           {"arg", send.arg_json ? *send.arg_json
                                 : send_arg_json(name_of(send.node), send.arg, send.to_json)}});
    }
    return sends;
  }
  if (channel.starts_with(kJoinPrefix)) {
    nlohmann::json seen = nlohmann::json::array();
    for (std::size_t j = 0; j < topo_.joins.size(); ++j) {
      if (graph_->join_channels[j] != channel) continue;
      for (std::size_t k = 0; k < topo_.joins[j].sources.size(); ++k) {
        if (join_marks_[j][k]) seen.push_back(name_of(topo_.joins[j].sources[k]));
      }
    }
    return seen;
  }
  return nlohmann::json();
}

/// Makes everything recorded durable before the run returns: the deferred checkpoint and writes
/// of durability "exit", and the queue of durability "async". `finished`: the run ended normally
/// (not at an interrupt or a failure).
void ExecutorCore::finish_persisting(bool finished) {
  if (!saver_) return;
  if (durability_ == Durability::exit) {
    // LangGraph: a subgraph with a namespace per call stores nothing when it just finishes.
    const bool per_call_subgraph =
        shared_->parent != nullptr && shared_->cfg.checkpoint_ns.find(':') != std::string::npos;
    if (finished && per_call_subgraph) {
      pending_checkpoint_.reset();
      exit_writes_.clear();
      return;
    }
    store_pending_checkpoint();
    // Only the writes of the checkpoint stored last: those of earlier steps are in it.
    for (auto& [checkpoint_id, task_id, writes] : exit_writes_) {
      if (checkpoint_id != current_id_) continue;
      saver_->put_task_writes(
          CheckpointConfig{shared_->cfg.thread_id, shared_->cfg.checkpoint_ns, checkpoint_id},
          TaskWrites{task_id, std::move(writes)});
    }
    exit_writes_.clear();
  }
  if (!held_writes_.empty()) {
    // No checkpoint followed (the step failed while applying its writes): the writes go alone,
    // except those that only refer to that checkpoint's messages.
    for (auto& w : held_writes_) {
      if (std::any_of(w.writes.begin(), w.writes.end(),
                      [](const TaskWrite& cw) { return cw.kind == TaskWrite::Kind::appended; })) {
        continue;
      }
      auto job = [saver = saver_, config = current_config(), w = std::move(w)] {
        saver->put_task_writes(config, w);
      };
      if (writer_) {
        writer_->submit(std::move(job));
      } else {
        job();
      }
    }
    held_writes_.clear();
  }
  if (writer_) writer_->wait();
}

ChannelWrites ExecutorCore::output_writes(const Task& t, bool for_saver, bool with_checkpoint) {
  ChannelWrites writes;
  const bool appendable =
      for_saver && with_checkpoint && durability_ != Durability::exit && saver_deltas_;
  append_task_writes(t, writes, for_saver, appendable);
  if (!t.go_to.empty()) writes.emplace_back(std::string(kGotoWrite), gotos_json(t.go_to));
  if (writes.empty()) writes.emplace_back(std::string(kNoWrites), nullptr);
  return writes;
}

nlohmann::json ExecutorCore::gotos_json(const std::vector<Goto>& go_to) const {
  nlohmann::json gotos = nlohmann::json::array();
  for (const auto& go : go_to) {
    if (!go.is_send()) {
      gotos.push_back(go.node());
      continue;
    }
    auto& send = const_cast<Goto&>(go).send();
    gotos.push_back(
        {{"node", send.node}, {"arg", send_arg_json(send.node, send.arg, send.arg_to_json)}});
  }
  return gotos;
}

/// Saves what a finished task produced against the current checkpoint: its writes or its
/// interrupts (with the resume values it used), or its error alone.
void ExecutorCore::save_task_outcome_now(const Task& t, bool with_checkpoint) {
  ChannelWrites writes;
  if (t.error) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(t.error);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    writes.emplace_back(std::string(kErrorChannel), what);
  } else if (!t.interrupts.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& i : t.interrupts)
      list.push_back({{"id", i.id}, {"value", i.value}, {"node", i.node}});
    writes.emplace_back(std::string(kInterruptChannel), std::move(list));
  } else if (t.has_output) {
    writes = output_writes(t, /*for_saver=*/saver_deltas_, with_checkpoint);
  } else {
    return;
  }
  // A failed task keeps no resume values: resumed again, its interrupt() calls take the new
  // values (as LangGraph saves only the error of a failed task). The values of interrupts in
  // scopes (parallel tool calls) go by id: {"values": [in call order], "by_id": {id: value}};
  // without them, the array alone (LangGraph's form).
  if (!t.error && t.info.parts && !t.info.parts->scoped_resume.empty()) {
    nlohmann::json by_id = nlohmann::json::object();
    for (const auto& [id, value] : t.info.parts->scoped_resume) by_id[id] = value;
    writes.emplace_back(std::string(kResumeChannel),
                        nlohmann::json{{"values", t.info.resume}, {"by_id", std::move(by_id)}});
  } else if (!t.error && !t.info.resume.empty()) {
    writes.emplace_back(std::string(kResumeChannel), nlohmann::json(t.info.resume));
  }
  save_writes(std::string(t.info.id.data(), t.info.id.size()), std::move(writes),
              with_checkpoint && t.has_output);
}

/// The cache key of a task's input under its node's policy.
std::string ExecutorCore::cache_key_of(const Task& t, const CachePolicy& policy) const {
  if (!json_state_) {
    throw Error(errc::kInvalidRun,
                "node '" + name_of(t.node) +
                    "' has a cache policy, which needs a state whose fields convert to JSON");
  }
  const nlohmann::json input =
      t.arg.has_value() ? send_arg_json(name_of(t.node), t.arg, {}) : state_json();
  return policy.key ? policy.key(input) : input.dump();
}

/// Takes a task's writes from the cache; false on a miss.
bool ExecutorCore::take_cached(Task& t, const std::string& key) {
  auto hit = graph_->options.cache->get(name_of(t.node), key);
  if (!hit || !hit->is_array()) return false;
  std::vector<PendingWrite> writes;
  for (const auto& w : *hit)
    writes.push_back(PendingWrite{{}, w.at(0).get<std::string>(), w.at(1)});
  restore_output(t, writes);
  t.cached = true;
  return true;
}

void ExecutorCore::put_cached(const Task& t, const std::string& key, const CachePolicy& policy) {
  nlohmann::json entry = nlohmann::json::array();
  for (auto& w : output_writes(t))
    entry.push_back(nlohmann::json::array({std::move(w.channel), std::move(w.value)}));
  graph_->options.cache->set(name_of(t.node), key, std::move(entry), policy.ttl);
}

}  // namespace sg::detail
