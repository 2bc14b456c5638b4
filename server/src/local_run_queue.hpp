// SPDX-License-Identifier: MIT
#pragma once

// The run queue of one server process (internal): per-thread queues in memory, the run records in
// the server's record store. Runs do not outlive the process: at start the runs a crash left
// unfinished are marked as failed.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "run_queue.hpp"

namespace sg::server {

/// RunQueue in this process. Runs wait in their thread's queue (the front is the active run),
/// then in `ready_` for a slot, or on the timer thread for their after_seconds. Thread-safe.
class LocalRunQueue final : public RunQueue {
 public:
  /// Marks the runs a crash left unfinished (their markers in the record store) as failed and
  /// their threads idle. Throws what the record store throws.
  explicit LocalRunQueue(Host host);
  /// Joins the timer thread.
  ~LocalRunQueue() override;
  LocalRunQueue(const LocalRunQueue&) = delete;
  LocalRunQueue& operator=(const LocalRunQueue&) = delete;

  void create(const std::shared_ptr<Run>& run, const std::string& strategy) override;
  [[nodiscard]] std::shared_ptr<Run> claim() override;
  void finish(const std::shared_ptr<Run>& run, std::string_view status,
              const nlohmann::json& result) override;
  [[nodiscard]] ApiResponse list(const std::string& thread_id, const ApiRequest& request) override;
  [[nodiscard]] ApiResponse get(const std::string& thread_id, const std::string& run_id) override;
  [[nodiscard]] ApiResponse join(const std::string& thread_id, const std::string& run_id,
                                 const ApiRequest& request, RunFollow::Kind kind) override;
  [[nodiscard]] std::string active_run(const std::string& thread_id) override;
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> active_runs(
      const std::string& thread_id, const std::string& status) override;
  std::shared_ptr<RunChannel> cancel(const std::string& thread_id, const std::string& run_id,
                                     const std::string& action, bool wait) override;
  void remove(const std::string& thread_id, const std::string& run_id) override;
  [[nodiscard]] bool busy(const std::string& thread_id) override;
  [[nodiscard]] Counts counts() override;
  void remove_thread(const std::string& thread_id) override;
  void close() override;
  void stop() override;

 private:
  /// `run`, its thread's front now, may start: into `ready_`, or to the timer until its
  /// after_seconds are over. Caller holds mu_.
  void make_startable_locked(const std::shared_ptr<Run>& run);
  /// Whether `run` is still its thread's next run, not started (not cancelled, not overtaken by
  /// an interrupt). Caller holds mu_.
  [[nodiscard]] bool next_of_thread_locked(const std::shared_ptr<Run>& run) const;
  /// The timer thread: makes delayed runs startable when due.
  void start_delayed();
  void save(const Run& run);
  [[nodiscard]] std::vector<SearchItem> run_records(const std::string& thread_id) const;
  void remove_run_records(const std::string& thread_id);

  std::mutex mu_;
  std::map<std::string, std::deque<std::shared_ptr<Run>>> queues_;  // by thread: active first
  std::map<std::string, std::shared_ptr<Run>> active_;              // pending or running, by id
  std::deque<std::weak_ptr<Run>> ready_;  // fronts of their threads' queues, waiting for a slot
  // Fronts of their threads' queues waiting for their after_seconds (the timer thread, made at
  // the first such run, moves them to ready_ when due).
  std::multimap<std::chrono::steady_clock::time_point, std::weak_ptr<Run>> delayed_;
  std::condition_variable delayed_changed_;
  std::thread timer_;
  bool stopping_ = false;
};

}  // namespace sg::server
