// SPDX-License-Identifier: MIT
#pragma once

// Shared helpers of the ported LangGraph tests: both savers as doctest template parameters,
// thread configs, and small state helpers.
//
//   TEST_CASE_TEMPLATE("langgraph/test_pregel.py::test_name", Saver, SG_PARITY_SAVERS) {
//     Saver saver;                       // a fresh, empty checkpointer of that kind
//     auto app = g.compile({.checkpointer = saver.get()});
//     ...
//   }

#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/stategraph.hpp>

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"

namespace sg::parity {

/// A fresh InMemorySaver.
struct MemorySaver {
  std::shared_ptr<sg::InMemorySaver> saver = std::make_shared<sg::InMemorySaver>();
  [[nodiscard]] std::shared_ptr<sg::KvCheckpointer> get() const { return saver; }
  /// Another handle on the same data (a reopened database for RocksDB; the same object here).
  [[nodiscard]] std::shared_ptr<sg::KvCheckpointer> reopen() { return saver; }
};

/// A fresh RocksDbSaver in a temporary directory.
struct RocksSaver {
  sg::test::TempDir dir;
  std::shared_ptr<sg::KvCheckpointer> saver = sg::RocksDbSaver::open(dir.sub("db"));
  [[nodiscard]] std::shared_ptr<sg::KvCheckpointer> get() const { return saver; }
  /// Closes the database and opens it again (what a new process would see).
  [[nodiscard]] std::shared_ptr<sg::KvCheckpointer> reopen() {
    saver.reset();
    saver = sg::RocksDbSaver::open(dir.sub("db"));
    return saver;
  }
};

#define SG_PARITY_SAVERS ::sg::parity::MemorySaver, ::sg::parity::RocksSaver

/// A RunConfig for `thread_id`.
inline sg::RunConfig thread(std::string thread_id) {
  sg::RunConfig config;
  config.thread_id = std::move(thread_id);
  return config;
}

/// The same config, pointing at a checkpoint.
inline sg::RunConfig at(const sg::CheckpointConfig& checkpoint) {
  sg::RunConfig config;
  config.thread_id = checkpoint.thread_id;
  config.checkpoint_ns = checkpoint.checkpoint_ns;
  config.checkpoint_id = checkpoint.checkpoint_id;
  return config;
}

/// `source` and `step` of each checkpoint of a thread, newest first ("loop2", "input-1", ...).
template <class App>
std::vector<std::string> history_sources(const App& app, const sg::RunConfig& config) {
  std::vector<std::string> out;
  for (const auto& s : app.get_state_history(config)) {
    out.push_back(s.metadata.value("source", std::string("?")) +
                  std::to_string(s.metadata.value("step", -99)));
  }
  return out;
}

/// The names of a snapshot's tasks, in order.
inline std::vector<std::string> task_names(const std::vector<sg::TaskState>& tasks) {
  std::vector<std::string> out;
  for (const auto& t : tasks) out.push_back(t.name);
  return out;
}

using Strings = std::vector<std::string>;

/// The keys of `want` in `actual` (LangGraph's dicts omit keys never written; a C++ state has
/// them at their defaults). Arrays are projected element by element.
inline nlohmann::json subset(const nlohmann::json& actual, const nlohmann::json& want) {
  if (actual.is_array() && want.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t i = 0; i < actual.size(); ++i)
      out.push_back(i < want.size() ? subset(actual[i], want[i]) : actual[i]);
    return out;
  }
  if (!actual.is_object() || !want.is_object()) return actual;
  nlohmann::json out = nlohmann::json::object();
  for (auto it = want.begin(); it != want.end(); ++it)
    if (actual.contains(it.key())) out[it.key()] = actual[it.key()];
  return out;
}

/// The values of interrupts, as a JSON array (how LangGraph's tests compare them).
inline nlohmann::json interrupt_values(const std::vector<sg::Interrupt>& interrupts) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& i : interrupts) out.push_back(i.value);
  return out;
}

}  // namespace sg::parity
