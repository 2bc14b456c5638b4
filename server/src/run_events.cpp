// SPDX-License-Identifier: MIT
// The stream of a run as the API names it: the requested stream modes, and EventFormatter,
// which turns a run's events into the API's SSE events (run_events.hpp).
#include "run_events.hpp"

#include <stategraph/core/time.hpp>
#include <stategraph/core/uuid.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace sg::server {

using nlohmann::json;

namespace {

constexpr std::array kApiModes = {"values", "updates", "messages",    "messages-tuple", "custom",
                                  "debug",  "tasks",   "checkpoints", "events"};

bool has_mode(const std::vector<std::string>& modes, std::string_view mode) {
  return std::find(modes.begin(), modes.end(), mode) != modes.end();
}

/// `object[key]` when it is a string, else `fallback` (nlohmann's value() throws on a null).
std::string text_at(const json& object, const char* key, std::string fallback = {}) {
  if (!object.is_object()) return fallback;
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

}  // namespace

std::vector<std::string> stream_modes_field(const json& body) {
  std::vector<std::string> modes;
  const auto it = body.find("stream_mode");
  if (it == body.end() || it->is_null()) {
    modes.emplace_back("values");
  } else if (it->is_string()) {
    modes.push_back(it->get<std::string>());
  } else {
    modes = string_list_field(body, "stream_mode", "stream mode names");
  }
  for (const auto& mode : modes) {
    if (std::find(kApiModes.begin(), kApiModes.end(), mode) == kApiModes.end()) {
      throw ApiError{422, fmt::format("unsupported stream mode '{}' (supported: {})", mode,
                                      fmt::join(kApiModes, ", "))};
    }
  }
  return modes;
}

StreamModes engine_modes(const std::vector<std::string>& modes) {
  StreamModes out;
  for (const auto& mode : modes) {
    if (mode == "values") out = out | StreamMode::values;
    if (mode == "updates") out = out | StreamMode::updates;
    if (mode == "messages" || mode == "messages-tuple") out = out | StreamMode::messages;
    if (mode == "custom") out = out | StreamMode::custom;
    if (mode == "debug" || mode == "tasks" || mode == "checkpoints") {
      out = out | StreamMode::debug;
    }
    if (mode == "events") {
      out =
          out | StreamMode::values | StreamMode::messages | StreamMode::debug | StreamMode::custom;
    }
  }
  return out;
}

EventFormatter::EventFormatter(std::vector<std::string> modes, std::string graph_id,
                               std::string run_id, RunChannel& channel)
    : modes_(std::move(modes)),
      graph_id_(std::move(graph_id)),
      run_id_(std::move(run_id)),
      channel_(channel),
      events_(has_mode(modes_, "events")) {}

void EventFormatter::start(const json& input) {
  if (events_ && channel_.wanted()) {
    publish_event("on_chain_start", graph_id_, {{"input", input}}, run_id_);
  }
}

void EventFormatter::end(const json& output) {
  if (events_ && channel_.wanted())
    publish_event("on_chain_end", graph_id_, {{"output", output}}, run_id_);
}

json EventFormatter::interrupted(const std::vector<Interrupt>& interrupts) {
  json data = {{INTERRUPT, interrupts_json(interrupts)}};
  if (!last_values_interrupt_ && has_mode(modes_, "values") && channel_.wanted()) {
    channel_.publish("values", "values", data);
  }
  return data;
}

void EventFormatter::operator()(ServedEvent&& e) {
  // Nobody reads the stream (a wait, a background run): no event is made. The final state
  // goes to the result separately.
  if (!channel_.wanted()) {
    if (e.mode == StreamMode::values && e.ns.empty()) {
      last_values_interrupt_ = !e.interrupts.empty();
    }
    return;
  }
  const std::string suffix =
      e.ns.empty() ? std::string() : "|" + fmt::format("{}", fmt::join(e.ns, "|"));
  switch (e.mode) {
    case StreamMode::values: {
      if (e.data.is_null() && e.interrupts.empty()) break;  // a bare event (nobody read then)
      json data = e.interrupts.empty() ? std::move(e.data)
                                       : json{{INTERRUPT, interrupts_json(e.interrupts)}};
      add_langchain_defaults(data);
      if (e.ns.empty()) last_values_interrupt_ = !e.interrupts.empty();
      if (events_ && e.ns.empty()) {
        publish_event("on_chain_stream", graph_id_, {{"chunk", data}}, run_id_);
      }
      if (has_mode(modes_, "values")) channel_.publish("values", "values" + suffix, data);
      break;
    }
    case StreamMode::updates: {
      json data;
      if (e.node == INTERRUPT) {
        data = {{INTERRUPT, interrupts_json(e.interrupts)}};
      } else {
        add_langchain_defaults(e.data);
        data = {{e.node, std::move(e.data)}};
      }
      channel_.publish("updates", "updates" + suffix, data);
      break;
    }
    case StreamMode::messages:
      messages(std::move(e), suffix);
      break;
    case StreamMode::custom:
      if (has_mode(modes_, "custom")) channel_.publish("custom", "custom" + suffix, e.data);
      break;
    case StreamMode::debug:
      debug(std::move(e), suffix);
      break;
  }
}

void EventFormatter::publish_event(const char* event, const std::string& name, json data,
                                   const std::string& id, json metadata) {
  channel_.publish("events", "events",
                   {{"event", event},
                    {"name", name},
                    {"run_id", id},
                    {"tags", json::array()},
                    {"metadata", std::move(metadata)},
                    {"data", std::move(data)},
                    {"parent_ids", id == run_id_ ? json::array() : json::array({run_id_})}});
}

void EventFormatter::messages(ServedEvent&& e, const std::string& suffix) {
  add_langchain_defaults(e.data);
  std::string id = text_at(e.data, "id");
  if (id.empty() && e.data.is_object()) {
    // A node's message without an id (the reducer gives it one later): clients key messages
    // by id, so this event names it.
    id = new_uuid4();
    e.data["id"] = id;
  }
  if (events_ && !e.complete) {
    publish_event("on_chat_model_stream", text_at(e.metadata, "ls_model_name", "model"),
                  {{"chunk", e.data}}, id.empty() ? run_id_ : id, e.metadata);
  }
  if (has_mode(modes_, "messages-tuple")) {
    channel_.publish("messages-tuple", "messages" + suffix, json::array({e.data, e.metadata}));
  }
  if (!has_mode(modes_, "messages")) return;
  // LangGraph's legacy messages mode: metadata once per message id, then the message so far.
  if (!id.empty() && seen_.insert(id).second) {
    channel_.publish("messages", "messages/metadata" + suffix, {{id, {{"metadata", e.metadata}}}});
  }
  if (e.complete) {
    partial_.erase(id);
    channel_.publish("messages", "messages/complete" + suffix, json::array({e.data}));
    return;
  }
  json& so_far = partial_[id];
  if (so_far.is_null()) {
    so_far = e.data;
  } else if (so_far["content"].is_string() && e.data["content"].is_string()) {
    so_far["content"] = so_far["content"].get<std::string>() + e.data["content"].get<std::string>();
  }
  channel_.publish("messages", "messages/partial" + suffix, json::array({so_far}));
}

void EventFormatter::debug(ServedEvent&& e, const std::string& suffix) {
  const std::string type = text_at(e.data, "type");
  if (events_ && e.ns.empty() && e.data.contains("payload")) {
    const json& payload = e.data["payload"];
    const std::string task = text_at(payload, "id", run_id_);
    const std::string name = text_at(payload, "name");
    if (type == "task") {
      publish_event("on_chain_start", name, {{"input", payload.value("input", json())}}, task,
                    {{"langgraph_node", name}, {"langgraph_step", e.step}});
    } else if (type == "task_result") {
      json output = payload.value("result", json());
      add_langchain_defaults(output);
      publish_event("on_chain_end", name, {{"output", std::move(output)}}, task,
                    {{"langgraph_node", name}, {"langgraph_step", e.step}});
    }
  }
  if (has_mode(modes_, "tasks") && e.data.contains("payload") &&
      (type == "task" || type == "task_result")) {
    json payload = e.data["payload"];
    add_langchain_defaults(payload);
    channel_.publish("tasks", "tasks" + suffix, payload);
  }
  if (has_mode(modes_, "checkpoints") && e.data.contains("payload") && type == "checkpoint") {
    json payload = e.data["payload"];
    add_langchain_defaults(payload);
    channel_.publish("checkpoints", "checkpoints" + suffix, payload);
  }
  if (has_mode(modes_, "debug")) {
    json data = std::move(e.data);
    if (data.is_object() && !data.contains("timestamp")) data["timestamp"] = iso_timestamp_now();
    add_langchain_defaults(data);
    channel_.publish("debug", "debug" + suffix, data);
  }
}

}  // namespace sg::server
