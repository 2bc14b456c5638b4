// SPDX-License-Identifier: MIT
// Loading a run from a checkpoint: versions, what runs next, the saved writes of its tasks and
// of resuming Commands, resume values.

#include <stategraph/core/detail/executor_core.hpp>
#include <stategraph/core/error.hpp>

#include <algorithm>

namespace sg::detail {

/// What both restores set: version bookkeeping and the checkpoint the run continues from.
/// The version bookkeeping of loaded channel versions: all of them are stored.
void ExecutorCore::versions_loaded() {
  max_version_ = 0;
  for (const auto& [ch, v] : versions_) max_version_ = std::max(max_version_, v);
  stored_through_ = max_version_;
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    auto v = versions_.find(std::string(fields_[i]));
    stored_version_[i] = v != versions_.end() ? v->second : -1;
  }
}

void ExecutorCore::after_restore(const std::string& checkpoint_id) {
  versions_loaded();
  stored_ = CheckpointConfig{shared_->cfg.thread_id, shared_->cfg.checkpoint_ns, checkpoint_id};
  current_id_ = checkpoint_id;
  saved_step_ = step_;
  loaded_source_ = "loop";
  resumed_writes_.clear();
  null_writes_.clear();
}

/// Loads a checkpoint into the run: state, what runs next, versions, saved writes.
void ExecutorCore::restore(const CheckpointTuple& tuple) {
  const auto& values = tuple.checkpoint.channel_values;
  versions_ = tuple.checkpoint.channel_versions;
  versions_seen_ = tuple.checkpoint.versions_seen;
  versions_loaded();
  step_ = tuple.metadata.value("step", -1);
  restore_fields(tuple);
  clear_schedule();
  pending_start_.reset();
  for (const auto& [ch, v] : versions_) {
    if (const auto triggered = triggered_node(ch)) {
      auto it = topo_.ids.find(std::string(*triggered));
      if (it == topo_.ids.end() || it->second == topo_.start) {
        throw CheckpointError(errc::kCheckpointInvalid,
                              "thread '" + tuple.config.thread_id + "', checkpoint '" +
                                  tuple.config.checkpoint_id + "' schedules node '" +
                                  std::string(*triggered) + "', which this graph does not have");
      }
      trigger(it->second);
    } else if (ch == kTasksChannel) {
      for (const auto& send : values.value(std::string(kTasksChannel), nlohmann::json::array())) {
        const int node =
            topo_.resolve(send.value("node", std::string()), "a checkpoint's pending Send");
        nlohmann::json arg = send.value("arg", nlohmann::json());
        next_push_.push_back(
            PendingSend{node, graph_->arg_readers[static_cast<std::size_t>(node)](arg), {}, arg});
      }
    } else if (ch.starts_with(kJoinPrefix)) {
      for (std::size_t j = 0; j < topo_.joins.size(); ++j) {
        if (graph_->join_channels[j] != ch) continue;
        for (const auto& seen : values.value(ch, nlohmann::json::array())) {
          for (std::size_t k = 0; k < topo_.joins[j].sources.size(); ++k) {
            if (name_of(topo_.joins[j].sources[k]) == seen) join_marks_[j][k] = 1;
          }
        }
      }
    } else if (ch == kStartChannel) {
      auto it = values.find(std::string(kStartChannel));
      if (it != values.end()) pending_start_ = *it;
    }
  }
  stored_ = tuple.config;
  current_id_ = tuple.config.checkpoint_id;
  saved_step_ = step_;
  loaded_source_ = tuple.metadata.value("source", std::string());
  current_meta_ = tuple.metadata;
  current_parent_ = tuple.parent_config;
  above_thread_versions_ = !shared_->cfg.checkpoint_id.empty();
  resumed_writes_.clear();
  shared_->null_resume.reset();
  null_writes_.clear();
  std::vector<const PendingWrite*> null_writes;
  for (const auto& w : tuple.pending_writes) {
    if (w.task_id == kRunTaskId) {
      null_writes.push_back(&w);
      if (!special_write_index(w.channel)) null_writes_.emplace_back(w.channel, w.value);
    } else {
      resumed_writes_[w.task_id].push_back(w);
    }
  }
  apply_null_writes(null_writes);
}

/// Applies the writes a resuming Command saved against the checkpoint (LangGraph's NULL task
/// writes): its update, its gotos and its resume value.
void ExecutorCore::apply_null_writes(const std::vector<const PendingWrite*>& writes) {
  for (const PendingWrite* w : writes) {
    if (w->channel == kResumeChannel) {
      shared_->null_resume = w->value;
    } else if (w->channel == kGotoWrite) {
      for (const auto& go : w->value) {
        Goto target = goto_from_json(go);
        follow(target, "a saved Command");
      }
    } else if (w->channel != kBreakpointWrite) {
      if (const auto field = field_index(w->channel)) apply_saved_write(*field, w->value);
    }
  }
}

const std::vector<PendingWrite>& ExecutorCore::task_writes_of(const Task& t) const {
  static const std::vector<PendingWrite> none;
  auto it = resumed_writes_.find(std::string(t.info.id.data(), t.info.id.size()));
  return it == resumed_writes_.end() ? none : it->second;
}

namespace {

/// A task's saved resume values (its kResumeChannel write): an array in call order, or
/// {"values": [...], "by_id": {id: value}} when interrupts in scopes were answered.
void restore_resume_values(TaskInfo& info, const nlohmann::json& saved) {
  const nlohmann::json* values = &saved;
  if (saved.is_object()) {
    if (auto it = saved.find("by_id"); it != saved.end() && it->is_object()) {
      detail::ensure_parts_shared(info);
      for (const auto& [id, value] : it->items())
        info.parts->scoped_resume.insert_or_assign(id, value);
    }
    auto it = saved.find("values");
    if (it == saved.end()) return;
    values = &*it;
  }
  if (values->is_array()) info.resume = values->get<std::vector<nlohmann::json>>();
}

}  // namespace

/// Applies the writes saved for this step's tasks: finished tasks are not run again, and
/// interrupted tasks get the resume values their interrupt() calls returned before.
void ExecutorCore::restore_task_writes() {
  if (!saver_ || resumed_writes_.empty()) return;
  for (Task& t : tasks_) {
    const auto& writes = task_writes_of(t);
    bool finished = false;
    for (const auto& w : writes) {
      if (is_finished_write(w.channel)) finished = true;
      if (w.channel == kResumeChannel) restore_resume_values(t.info, w.value);
    }
    if (finished) {
      restore_output(t, writes);
      t.restored = true;
    }
  }
}

/// Number of interrupts of the checkpoint that no resume value answered yet (LangGraph's
/// hanging interrupts). A task resumed by position counts as answered (as in LangGraph); one
/// whose resume values go by id (parallel tool calls) counts the interrupts it raised since.
std::size_t ExecutorCore::hanging_interrupts() const {
  std::size_t count = 0;
  for (const auto& [task_id, writes] : resumed_writes_) {
    const auto resume = std::find_if(writes.begin(), writes.end(), [](const PendingWrite& w) {
      return w.channel == kResumeChannel;
    });
    if (resume != writes.end() && !resume->value.is_object()) continue;
    for (const auto& w : writes) {
      if (w.channel != kInterruptChannel || !w.value.is_array()) continue;
      for (const auto& i : w.value) {
        const bool answered = resume != writes.end() && i.is_object() &&
                              resume->value.value("by_id", nlohmann::json::object())
                                  .contains(i.value("id", std::string()));
        if (!answered) ++count;
      }
    }
  }
  return count;
}

namespace {

/// Interrupt ids are 16 lowercase hex digits.
bool is_interrupt_id(std::string_view key) {
  return key.size() == 16 && std::all_of(key.begin(), key.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

/// A Command's resume value: a map from interrupt ids to values answers those interrupts (in
/// subgraphs too); any other value answers the first interrupt() call of the resumed tasks.
void ExecutorCore::answer_interrupts(nlohmann::json resume) {
  const bool as_map = resume.is_object() && !resume.empty() &&
                      std::all_of(resume.items().begin(), resume.items().end(),
                                  [](const auto& kv) { return is_interrupt_id(kv.key()); });
  if (as_map) {
    shared_->resume_map = std::move(resume);
    return;
  }
  if (hanging_interrupts() > 1) {
    throw Error(errc::kInvalidRun,
                "When there are multiple pending interrupts, you must specify the interrupt id "
                "when resuming. Docs: "
                "https://docs.langchain.com/oss/python/langgraph/"
                "add-human-in-the-loop#resume-multiple-interrupts-with-one-invocation.");
  }
  save_writes(std::string(kRunTaskId), {{std::string(kResumeChannel), resume}});
  shared_->null_resume = std::move(resume);
}

/// A saved goto: a node name, or {"node", "arg"} for a Send.
Goto ExecutorCore::goto_from_json(const nlohmann::json& go) const {
  if (go.is_string()) return Goto(go.get<std::string>());
  const std::string node = go.value("node", std::string());
  const int id = topo_.resolve(node, "a saved Send");
  return Goto(Send(
      node, graph_->arg_readers[static_cast<std::size_t>(id)](go.value("arg", nlohmann::json()))));
}

}  // namespace sg::detail
