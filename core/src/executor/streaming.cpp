// SPDX-License-Identifier: MIT
// The stream events that carry no typed state: interrupts, custom data, debug events.

#include <stategraph/core/detail/executor_core.hpp>

namespace sg::detail {

namespace {

nlohmann::json config_json(const std::optional<CheckpointConfig>& c) {
  if (!c) return nullptr;
  return {{"configurable",
           {{"thread_id", c->thread_id},
            {"checkpoint_ns", c->checkpoint_ns},
            {"checkpoint_id", c->checkpoint_id}}}};
}

}  // namespace

/// The `updates` event of interrupts (LangGraph's `{"__interrupt__": [...]}`).
void ExecutorCore::emit_interrupt_update(std::vector<Interrupt> interrupts) {
  if (!streams(StreamMode::updates)) return;
  sink(StreamMode::updates, step_, INTERRUPT, nullptr, std::move(interrupts));
}

void ExecutorCore::emit_custom(RunShared::Custom&& c) {
  sink(StreamMode::custom, c.step, std::move(c.node), std::move(c.value), {});
}

void ExecutorCore::emit_debug_start(const Task& t) {
  nlohmann::json input;
  if (json_state_)
    input = t.arg.has_value() ? send_arg_json(name_of(t.node), t.arg, {}) : state_json();
  nlohmann::json data = {{"type", "task"},
                         {"step", step_},
                         {"payload",
                          {{"id", std::string(t.info.id.data(), t.info.id.size())},
                           {"name", name_of(t.node)},
                           {"input", std::move(input)},
                           {"send_index", t.info.send_index}}}};
  sink(StreamMode::debug, step_, name_of(t.node), std::move(data), {});
}

/// LangGraph's debug "checkpoint" event: the checkpoint a step starts from (its config, parent,
/// values, metadata) and the tasks that run next, as get_state_history shows it.
void ExecutorCore::emit_debug_checkpoint_now(bool start_next) {
  nlohmann::json tasks = nlohmann::json::array();
  nlohmann::json next = nlohmann::json::array();
  auto add = [&](const std::string& id, const std::string& name, const Task* t) {
    nlohmann::json task{{"id", id}, {"name", name}};
    nlohmann::json interrupts = nlohmann::json::array();
    if (t) {
      for (const auto& w : task_writes_of(*t)) {
        if (w.channel == kErrorChannel) task["error"] = w.value;
        if (w.channel == kInterruptChannel) interrupts = w.value;
      }
    }
    task["interrupts"] = std::move(interrupts);
    task["state"] = nullptr;
    next.push_back(name);
    tasks.push_back(std::move(task));
  };
  if (start_next || pending_start_) {
    const Task start = start_task(step_ + 1);  // the step after the input checkpoint
    add(std::string(start.info.id.data(), start.info.id.size()), START, nullptr);
  }
  for (const Task& t : tasks_) {
    add(std::string(t.info.id.data(), t.info.id.size()), name_of(t.node), &t);
  }
  const int step = current_meta_.value("step", step_ - 1);
  nlohmann::json data = {{"type", "checkpoint"},
                         {"step", step},
                         {"payload",
                          {{"config", config_json(current_config())},
                           {"parent_config", config_json(current_parent_)},
                           {"values", state_json()},
                           {"metadata", current_meta_},
                           {"next", std::move(next)},
                           {"tasks", std::move(tasks)}}}};
  sink(StreamMode::debug, step, {}, std::move(data), {});
}

namespace {

/// A value a node wrote that is a message in LangChain's JSON form.
bool is_message_json(const nlohmann::json& value) {
  if (!value.is_object() || !value.contains("content")) return false;
  auto type = value.find("type");
  return type != value.end() && type->is_string() &&
         (*type == "ai" || *type == "human" || *type == "system" || *type == "tool");
}

}  // namespace

/// LangGraph's StreamMessagesHandler.on_chain_end: the messages in a node's output (a message
/// value, or a list of them) whose ids the stream has not carried, each as a whole message.
void ExecutorCore::emit_task_messages(const Task& t) {
  if (!json_state_) return;
  nlohmann::json metadata;
  auto emit = [&](const nlohmann::json& value) {
    if (!is_message_json(value)) return;
    Message m = message_from_json(value);
    if (metadata.is_null()) {
      metadata = messages_metadata(shared_->cfg, t.info,
                                   std::string_view(t.info.id.data(), t.info.id.size()), {});
    }
    MessageEvent event{name_of(t.node), step_, MessageChunk{std::move(m), {}}, true, metadata};
    if (shared_->first_sight(event)) emit_message(std::move(event));  // on the loop already
  };
  for (const auto& w : output_writes(t)) {
    if (w.value.is_array()) {
      for (const auto& item : w.value) emit(item);
    } else {
      emit(w.value);
    }
  }
}

/// Streams a finished task: its update (updates mode) and its result (debug mode).
void ExecutorCore::emit_task_finished_now(Task& t, bool replayed) {
  const bool wrote = t.has_output && t.interrupts.empty() && !t.error;
  const bool messages = wrote && !replayed && streams(StreamMode::messages);
  if (messages) name_new_messages(t);  // before the updates, messages and saved writes read them
  if (wrote && streams(StreamMode::updates)) emit_task_updates(t, t.cached || replayed);
  if (messages) emit_task_messages(t);
  if (replayed) return;
  if (!t.interrupts.empty()) {
    // LangGraph: an updates chunk {"__interrupt__": [...]} and, in values mode, the state the
    // step started from with the interrupts.
    emit_interrupt_update(t.interrupts);
    emit_state(t.interrupts);
  }
  if (!streams(StreamMode::debug)) return;
  // LangGraph's task_result payload: id, name, error, result (a channel written twice shows
  // {"$writes": [...]}), interrupts.
  nlohmann::json payload{{"id", std::string(t.info.id.data(), t.info.id.size())},
                         {"name", name_of(t.node)},
                         {"error", nullptr},
                         {"result", nlohmann::json::object()},
                         {"interrupts", nlohmann::json::array()}};
  if (t.error) {
    try {
      std::rethrow_exception(t.error);
    } catch (const std::exception& ex) {
      payload["error"] = ex.what();
    } catch (...) {
      payload["error"] = "unknown exception";
    }
  } else if (!t.interrupts.empty()) {
    for (const auto& i : t.interrupts)
      payload["interrupts"].push_back({{"id", i.id}, {"value", i.value}});
  } else if (t.has_output && json_state_) {
    for (auto& w : output_writes(t)) {
      if (w.channel != kGotoWrite && w.channel != kNoWrites)
        add_result_write(payload["result"], w.channel, w.value);
    }
  }
  sink(StreamMode::debug, step_, name_of(t.node),
       {{"type", "task_result"}, {"step", step_}, {"payload", std::move(payload)}}, {});
}

void ExecutorCore::add_result_write(nlohmann::json& result, const std::string& channel,
                                    const nlohmann::json& value) {
  auto it = result.find(channel);
  if (it == result.end()) {
    result[channel] = value;
  } else if (it->is_object() && it->contains("$writes")) {
    (*it)["$writes"].push_back(value);
  } else {
    *it = nlohmann::json{{"$writes", nlohmann::json::array({*it, value})}};
  }
}

}  // namespace sg::detail
