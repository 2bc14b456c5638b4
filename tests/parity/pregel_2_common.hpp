// SPDX-License-Identifier: MIT
// Shared by the two halves of LangGraph's test_pregel.py port from line 4744 on
// (test_pregel_2a.cpp, test_pregel_2b.cpp): catching errors and stream events as lines. Each
// includer is one test binary, so the anonymous namespace gives each its own copy.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "parity.hpp"

namespace {

/// What `f` threw: whether it was an E, and its what().
struct Caught {
  bool of_type = false;
  std::string what = "(no exception)";
};
template <class E, class F>
Caught caught(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return {true, e.what()};
  } catch (const std::exception& e) {
    return {false, e.what()};
  }
  return {};
}

inline bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

/// A stream event as one line, close to LangGraph's chunk: `values {...}`, `node {update}`,
/// `custom <data>`, `__interrupt__ [values]` (the interrupt chunk), with ` [...]` (interrupt
/// values) appended to a values chunk that carries interrupts and ` cached` to a cached update.
/// Values print every field (an unwritten field shows its default, where LangGraph's dict omits
/// the key).
template <class S>
std::string line(const sg::StreamEvent<S>& e) {
  std::string out;
  switch (e.mode) {
    case sg::StreamMode::values:
      out = "values " + (e.values ? sg::state_to_json(*e.values).dump() : std::string("null"));
      break;
    case sg::StreamMode::updates:
      if (e.node == "__interrupt__") {
        out = "__interrupt__";
      } else {
        out =
            e.node + " " + (e.update ? sg::update_to_json(*e.update).dump() : std::string("null"));
      }
      break;
    case sg::StreamMode::custom:
      out = "custom " + e.data.dump();
      break;
    case sg::StreamMode::debug:
      out = "debug " + e.data.dump();
      break;
    case sg::StreamMode::messages:
      out = "messages " + (e.message ? sg::message_to_json(e.message->message).dump() : "null");
      break;
  }
  if (!e.interrupts.empty()) out += " " + sg::parity::interrupt_values(e.interrupts).dump();
  if (e.cached) out += " cached";
  return out;
}

template <class S>
sg::parity::Strings lines(const std::vector<sg::StreamEvent<S>>& events) {
  sg::parity::Strings out;
  for (const auto& e : events) out.push_back(line(e));
  return out;
}

/// Runs stream() and collects its events (input: an Update or a Command).
template <class S, class In>
std::vector<sg::StreamEvent<S>> collect(const sg::CompiledGraph<S>& app, In input,
                                        const sg::RunConfig& config, sg::StreamModes modes) {
  std::vector<sg::StreamEvent<S>> out;
  (void)app.stream(std::move(input), config, modes,
                   [&](const sg::StreamEvent<S>& e) { out.push_back(e); });
  return out;
}

}  // namespace
