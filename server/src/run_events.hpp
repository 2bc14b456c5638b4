// SPDX-License-Identifier: MIT
#pragma once
// The stream of a run as the API names it: the stream modes a request asks for, and the
// formatter that turns a run's ServedEvents into the API's SSE events (run_events.cpp).
#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "api.hpp"

namespace sg::server {

/// The stream modes of a body's `stream_mode` (a string or a list; default ["values"]). Throws
/// ApiError 422 for a mode the server does not stream.
[[nodiscard]] std::vector<std::string> stream_modes_field(const nlohmann::json& body);

/// The engine's stream modes that make the API's `modes`.
[[nodiscard]] StreamModes engine_modes(const std::vector<std::string>& modes);

/// Turns a run's ServedEvents into the API's events for the requested modes and publishes them
/// to the run's channel, only while a stream reads it (RunChannel::wanted). Used by the run's
/// thread only.
class EventFormatter {
 public:
  EventFormatter(std::vector<std::string> modes, std::string graph_id, std::string run_id,
                 RunChannel& channel);

  /// The graph's on_chain_start (events mode).
  void start(const nlohmann::json& input);
  /// The graph's on_chain_end (events mode).
  void end(const nlohmann::json& output);
  /// A run that stopped at an interrupt ends its values with `{"__interrupt__": [...]}` (the
  /// last values chunk LangGraph streams, and so what wait returns); an interrupt_before/after
  /// stop has an empty list. Returns that chunk.
  nlohmann::json interrupted(const std::vector<Interrupt>& interrupts);
  /// One event of the run.
  void operator()(ServedEvent&& e);

 private:
  void publish_event(const char* event, const std::string& name, nlohmann::json data,
                     const std::string& id, nlohmann::json metadata = nlohmann::json::object());
  void messages(ServedEvent&& e, const std::string& suffix);
  void debug(ServedEvent&& e, const std::string& suffix);

  std::vector<std::string> modes_;
  std::string graph_id_;
  std::string run_id_;
  RunChannel& channel_;
  bool events_;
  bool last_values_interrupt_ = false;
  std::set<std::string> seen_;
  std::map<std::string, nlohmann::json> partial_;
};

}  // namespace sg::server
