// SPDX-License-Identifier: MIT
// `stategraph threads <op>`: inspect and edit the conversation threads of a RocksDB checkpoint
// database (the directory RocksDbSaver::open takes).
#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/core/channels.hpp>
#include <stategraph/core/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>

#include "cli.hpp"

namespace sg::cli {
namespace {

using nlohmann::json;

struct ThreadSettings {
  std::string db;
  std::string thread;
  std::string checkpoint;
  std::string ns;
  std::string to;
  std::size_t limit = 0;  // 0: no limit
  bool json = false;
};

/// Opens an existing database; a missing directory is an error (opening would create one).
std::shared_ptr<RocksDbSaver> open_db(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    throw Error(errc::kInvalidArgument, "no checkpoint database at '" + path + "'");
  }
  return RocksDbSaver::open(path);
}

/// The nodes a checkpoint would run next: its branch channels and pending Sends.
json next_nodes(const Checkpoint& cp) {
  json next = json::array();
  for (const auto& [channel, version] : cp.channel_versions) {
    if (const auto node = triggered_node(channel)) next.push_back(std::string(*node));
  }
  auto sends = cp.channel_values.find(std::string(kTasksChannel));
  if (sends != cp.channel_values.end() && sends->is_array()) {
    for (const auto& send : *sends) next.push_back(send.value("node", std::string("?")));
  }
  return next;
}

json interrupts_of(const CheckpointTuple& t) {
  json out = json::array();
  for (const auto& w : t.pending_writes) {
    if (w.channel != kInterruptChannel) continue;
    if (w.value.is_array()) {
      for (const auto& i : w.value) out.push_back(i);
    } else {
      out.push_back(w.value);
    }
  }
  return out;
}

/// The graph's own channels (values without the runtime's bookkeeping channels).
json state_values(const Checkpoint& cp) {
  json values = json::object();
  for (const auto& [channel, value] : cp.channel_values.items()) {
    if (channel.rfind("__", 0) == 0 || is_scheduling_channel(channel)) continue;
    values[channel] = value;
  }
  return values;
}

json config_json(const CheckpointConfig& c) {
  return {{"thread_id", c.thread_id},
          {"checkpoint_ns", c.checkpoint_ns},
          {"checkpoint_id", c.checkpoint_id}};
}

json tuple_json(const CheckpointTuple& t, bool with_values) {
  json out = {{"config", config_json(t.config)},
              {"metadata", t.metadata},
              {"created_at", t.checkpoint.ts},
              {"parent_config", t.parent_config ? config_json(*t.parent_config) : json()},
              {"next", next_nodes(t.checkpoint)},
              {"interrupts", interrupts_of(t)}};
  if (with_values) {
    out["values"] = state_values(t.checkpoint);
    out["channel_versions"] = t.checkpoint.channel_versions;
    json writes = json::array();
    for (const auto& w : t.pending_writes)
      writes.push_back({{"task_id", w.task_id}, {"channel", w.channel}, {"value", w.value}});
    out["pending_writes"] = std::move(writes);
  }
  return out;
}

std::string brief(const json& value, std::size_t width) {
  return one_line(value.is_string() ? value.get<std::string>() : value.dump(), width);
}

/// A stored message on one line: its text, then the tools an AI message calls (which often
/// has no text), and the call a tool message answers.
std::string message_line(const json& m) {
  std::string line = brief(m.value("content", json("")), 80);
  const json calls = m.value("tool_calls", json::array());
  if (calls.is_array() && !calls.empty()) {
    std::string names;
    for (const auto& c : calls) {
      names += fmt::format("{}{}({})", names.empty() ? "" : ", ", c.value("name", std::string("?")),
                           brief(c.value("args", json::object()), 40));
    }
    line += fmt::format("{}[calls {}]", line.empty() ? "" : " ", names);
  }
  if (m.value("type", std::string()) == "tool" && m.contains("tool_call_id")) {
    line += fmt::format(" [answers {}]", brief(m["tool_call_id"], 24));
  }
  return line;
}

bool looks_like_messages(const json& value) {
  return value.is_array() && !value.empty() && value.front().is_object() &&
         value.front().contains("type") && value.front().contains("content");
}

std::string metadata_line(const CheckpointTuple& t) {
  const json& m = t.metadata;
  std::string step = m.contains("step") ? m["step"].dump() : "?";
  return fmt::format("step {:>3}  {:<6}  {}", step, m.value("source", std::string("?")),
                     t.checkpoint.ts);
}

std::string join_names(const json& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n.get<std::string>();
  return out.empty() ? "-" : out;
}

CheckpointTuple require_tuple(RocksDbSaver& db, const ThreadSettings& s) {
  auto tuple = db.get_tuple(CheckpointConfig{s.thread, s.ns, s.checkpoint});
  if (tuple) return *std::move(tuple);
  if (!db.latest_checkpoint_id(s.thread, s.ns)) {
    throw Error(errc::kInvalidArgument, "thread '" + s.thread + "' does not exist in '" + s.db +
                                            "'" +
                                            (s.ns.empty() ? "" : " (namespace '" + s.ns + "')"));
  }
  throw Error(errc::kInvalidArgument,
              "thread '" + s.thread + "' has no checkpoint '" + s.checkpoint + "'");
}

void require_thread(RocksDbSaver& db, const ThreadSettings& s) {
  if (!db.latest_checkpoint_id(s.thread, s.ns)) {
    throw Error(errc::kInvalidArgument,
                "thread '" + s.thread + "' does not exist in '" + s.db + "'");
  }
}

void list_threads(const ThreadSettings& s) {
  auto db = open_db(s.db);
  json out = json::array();
  for (const auto& thread : db->threads()) {
    ListOptions options;
    options.thread_id = thread;
    options.checkpoint_ns = "";
    options.include_values = false;
    const auto checkpoints = db->list(options);
    json entry = {{"thread_id", thread}, {"checkpoints", checkpoints.size()}};
    if (!checkpoints.empty()) entry["latest"] = tuple_json(checkpoints.front(), false);
    out.push_back(std::move(entry));
  }
  if (s.json) return write_json(out, -1);
  if (out.empty()) {
    std::cout << "no threads\n";
    return;
  }
  for (const auto& t : out) {
    std::cout << fmt::format("{}  {} checkpoint{}", t["thread_id"].get<std::string>(),
                             t["checkpoints"].get<std::size_t>(), t["checkpoints"] == 1 ? "" : "s");
    if (t.contains("latest")) {
      const json& latest = t["latest"];
      std::cout << fmt::format("  latest {} step {} ({}) {}",
                               latest["config"]["checkpoint_id"].get<std::string>(),
                               latest["metadata"].value("step", json()).dump(),
                               latest["metadata"].value("source", std::string("?")),
                               latest["created_at"].get<std::string>());
    }
    std::cout << '\n';
  }
}

void show_thread(const ThreadSettings& s) {
  auto db = open_db(s.db);
  const CheckpointTuple t = require_tuple(*db, s);
  if (s.json) return write_json(tuple_json(t, true), 2);
  std::cout << fmt::format("thread      {}\n", t.config.thread_id);
  if (!t.config.checkpoint_ns.empty())
    std::cout << fmt::format("namespace   {}\n", t.config.checkpoint_ns);
  std::cout << fmt::format("checkpoint  {}  ({})\n", t.config.checkpoint_id, metadata_line(t));
  std::cout << fmt::format("parent      {}\n",
                           t.parent_config ? t.parent_config->checkpoint_id : "-");
  std::cout << fmt::format("next        {}\n", join_names(next_nodes(t.checkpoint)));
  const json interrupts = interrupts_of(t);
  if (!interrupts.empty()) std::cout << fmt::format("interrupts  {}\n", brief(interrupts, 100));
  if (!t.pending_writes.empty())
    std::cout << fmt::format("writes      {} pending\n", t.pending_writes.size());
  std::cout << "values\n";
  const json values = state_values(t.checkpoint);
  for (const auto& [channel, value] : values.items()) {
    if (looks_like_messages(value)) {
      std::cout << fmt::format("  {} ({} messages)\n", channel, value.size());
      for (const auto& m : value) {
        std::cout << fmt::format("    {:<6} {:<12} {}\n", m.value("type", std::string("?")),
                                 brief(m.value("id", json()), 12), message_line(m));
      }
    } else {
      std::cout << fmt::format("  {}: {}\n", channel, brief(value, 100));
    }
  }
}

void thread_history(const ThreadSettings& s) {
  auto db = open_db(s.db);
  require_thread(*db, s);
  ListOptions options;
  options.thread_id = s.thread;
  options.checkpoint_ns = s.ns;
  if (s.limit > 0) options.limit = s.limit;
  const auto checkpoints = db->list(options);
  if (s.json) {
    json out = json::array();
    for (const auto& t : checkpoints) out.push_back(tuple_json(t, true));
    return write_json(out, -1);
  }
  for (const auto& t : checkpoints) {
    std::cout << fmt::format("{}  {}  next: {}", t.config.checkpoint_id, metadata_line(t),
                             join_names(next_nodes(t.checkpoint)));
    if (!t.pending_writes.empty())
      std::cout << fmt::format("  ({} writes)", t.pending_writes.size());
    std::cout << '\n';
  }
}

void delete_thread(const ThreadSettings& s) {
  auto db = open_db(s.db);
  require_thread(*db, s);
  db->delete_thread(s.thread);
  if (s.json) return write_json({{"deleted", s.thread}}, -1);
  std::cout << fmt::format("deleted thread {}\n", s.thread);
}

/// A fork (sg::fork_checkpoint): a new checkpoint, child of the chosen one, with its values; it
/// becomes the thread's latest, so the next run continues from there.
void fork_thread(const ThreadSettings& s) {
  auto db = open_db(s.db);
  const CheckpointTuple source = require_tuple(*db, s);
  const CheckpointConfig stored =
      fork_checkpoint(*db, source, ForkOptions{.thread_id = s.to, .sibling = false});
  if (s.json) {
    return write_json(
        {{"config", config_json(stored)}, {"parent_config", config_json(source.config)}}, -1);
  }
  std::cout << fmt::format("forked {} at {} -> thread {}, checkpoint {}\n", s.thread,
                           source.config.checkpoint_id, stored.thread_id, stored.checkpoint_id);
}

}  // namespace

void add_threads_command(CLI::App& app, Action& action) {
  auto settings = std::make_shared<ThreadSettings>();
  auto* threads = app.add_subcommand("threads",
                                     "Inspect the threads of a RocksDB checkpoint "
                                     "database (RocksDbSaver)");
  threads->require_subcommand(1);

  auto common = [&settings](CLI::App* cmd, bool needs_thread) {
    cmd->add_option("--db", settings->db, "Checkpoint database directory")->required();
    if (needs_thread) cmd->add_option("--thread", settings->thread, "Thread id")->required();
    cmd->add_flag("--json", settings->json, "JSON output for scripts");
  };

  auto* list = threads->add_subcommand("list",
                                       "Every thread with its checkpoint count and latest "
                                       "checkpoint");
  common(list, false);
  list->callback([settings, &action] { action = [settings] { list_threads(*settings); }; });

  auto* show = threads->add_subcommand("show", "A thread's state (latest, or --checkpoint)");
  common(show, true);
  show->add_option("--checkpoint", settings->checkpoint, "Checkpoint id (default: the latest)");
  show->add_option("--ns", settings->ns, "Checkpoint namespace (default: the root graph)");
  show->callback([settings, &action] { action = [settings] { show_thread(*settings); }; });

  auto* history = threads->add_subcommand("history", "A thread's checkpoints, newest first");
  common(history, true);
  history->add_option("--limit", settings->limit, "At most this many checkpoints");
  history->add_option("--ns", settings->ns, "Checkpoint namespace (default: the root graph)");
  history->callback([settings, &action] { action = [settings] { thread_history(*settings); }; });

  auto* del = threads->add_subcommand("delete", "Deletes a thread with all its checkpoints");
  common(del, true);
  del->callback([settings, &action] { action = [settings] { delete_thread(*settings); }; });

  auto* fork = threads->add_subcommand(
      "fork", "A new latest checkpoint copying --checkpoint: the next run continues from there");
  common(fork, true);
  fork->add_option("--checkpoint", settings->checkpoint, "Checkpoint id to fork from")->required();
  fork->add_option("--to", settings->to, "Fork into this new thread (default: the same thread)");
  fork->callback([settings, &action] { action = [settings] { fork_thread(*settings); }; });
}

}  // namespace sg::cli
