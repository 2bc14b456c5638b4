#pragma once

// RunManager's runs shared by many server processes on one PostgreSQL database (internal): the
// queue is table sg_run, claimed with SKIP LOCKED by any process with a free worker; a lease
// renewed by heartbeats, a sweeper that re-queues the runs of dead workers, fences (PostgresSaver)
// that keep a worker which lost its run from writing; cancellation, run ends and stream events
// travel by NOTIFY (and sg_run_event). docs/scale-out.md tells the lifecycle.

#include <stategraph/postgres/pg.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "api.hpp"
#include "runs_state.hpp"

namespace sg::server {

/// Whether a run of status `status` has ended (not pending, not running).
[[nodiscard]] inline bool run_ended(std::string_view status) {
  return status != "pending" && status != "running";
}

struct RunManager::Cluster {
  /// Connects and creates the tables when missing; starts the thread that listens for
  /// notifications, renews leases and sweeps. Throws PostgresError.
  Cluster(RunManager& manager, const ClusterOptions& options);
  /// Stops (shutdown()).
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  /// Queues a new run with its thread's multitask `strategy` (one transaction, serialized per
  /// thread across processes), then starts it here when its thread is free. Throws ApiError 409
  /// (reject on a busy thread).
  void enqueue(const std::shared_ptr<Run>& run, const std::string& strategy);
  /// Records the end of a run this process executed (nothing when another worker took it over
  /// meanwhile: its followers here then wait for that worker), then starts the next runs.
  void finish(const std::shared_ptr<Run>& run, std::string_view status,
              const nlohmann::json& result);

  [[nodiscard]] ApiResponse list(const std::string& thread_id, const ApiRequest& request);
  [[nodiscard]] ApiResponse get(const std::string& thread_id, const std::string& run_id);
  [[nodiscard]] ApiResponse join(const std::string& thread_id, const std::string& run_id,
                                 const ApiRequest& request, RunFollow::Kind kind);
  [[nodiscard]] ApiResponse join_thread(const std::string& thread_id, const ApiRequest& request);
  [[nodiscard]] ApiResponse cancel(const std::string& thread_id, const std::string& run_id,
                                   const ApiRequest& request);
  [[nodiscard]] ApiResponse cancel_many(const ApiRequest& request);
  [[nodiscard]] ApiResponse remove(const std::string& thread_id, const std::string& run_id);
  [[nodiscard]] bool busy(const std::string& thread_id);
  [[nodiscard]] std::set<std::string> busy_threads();
  /// Holds the cross-process lock of a thread's record until the handle is released.
  [[nodiscard]] std::shared_ptr<void> lock_thread_record(const std::string& thread_id);
  void remove_thread(const std::string& thread_id);
  /// Stops the runs executing here (the server stops): they go back to the queue, and another
  /// process continues them.
  void stop_runs();
  /// Stops the background thread (after the runs stopped).
  void shutdown();

 private:
  /// Claims the oldest claimable run (`run_id` empty) or that one, and executes it here.
  /// Returns whether it claimed one.
  bool claim(const std::string& run_id);
  /// Claims runs while workers are free.
  void claim_all();
  void background();
  void heartbeat();
  void sweep();
  /// Deletes the stream events of runs that ended more than ClusterOptions::event_retention ago.
  void forget_old_events();
  /// A follower here of a run executed elsewhere: its new events and, once it ended, its result.
  void catch_up(const std::string& run_id);
  /// The channel that follows run `run_id` (executed elsewhere), from its `from_event` on.
  std::shared_ptr<RunChannel> follow_remote(const std::string& run_id);
  void forward_events(const std::shared_ptr<Run>& run);
  void set_fence(const Run& run, const std::string& token);
  [[nodiscard]] nlohmann::json spec_of(const Run& run) const;
  [[nodiscard]] std::shared_ptr<Run> run_of(const std::string& run_id, const std::string& thread_id,
                                            const nlohmann::json& spec) const;
  /// Runs `work(connection)` on a connection of the pool (once more on a new one after a
  /// broken one).
  template <typename Work>
  auto db(Work&& work) {
    return pool_.with_retry(std::forward<Work>(work));
  }

  RunManager& m_;
  ClusterOptions options_;
  std::string worker_;  // this process's name in sg_run.worker
  pg::Pool pool_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Run>> local_;  // created or executing here, by id
  std::set<std::string> executing_;                    // ids of local_ runs executing here
  struct Follower {
    std::shared_ptr<RunChannel> channel;
    std::int64_t next_event = 0;  // the sg_run_event seq to read next
  };
  std::map<std::string, Follower> followers_;  // runs executed elsewhere, followed here
  std::set<std::string> cancel_early_;         // cancels heard before the claim registered
  std::atomic<bool> stop_{false};
  std::atomic<bool> stopped_{false};
  std::thread thread_;
};

}  // namespace sg::server
