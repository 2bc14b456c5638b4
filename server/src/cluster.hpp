// SPDX-License-Identifier: MIT
#pragma once

// The run queue shared by many server processes on one PostgreSQL database (internal): the
// queue is table sg_run, claimed with SKIP LOCKED by any process with a free slot; a lease
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
#include "run_queue.hpp"

namespace sg::server {

/// Ends an INSERT INTO sg_thread_status: a thread's later status replaces its earlier one (what
/// a run's end, or its last lost attempt, leaves: ThreadRegistry::SharedStatus).
inline constexpr const char* kStatusUpsert =
    "ON CONFLICT (thread_id) DO UPDATE SET status = EXCLUDED.status, updated_at = "
    "EXCLUDED.updated_at";

/// RunQueue in PostgreSQL, shared by every server process on the database. Thread-safe.
class PostgresRunQueue final : public RunQueue {
 public:
  /// Connects and creates the tables when missing; starts the thread that listens for
  /// notifications, renews leases and sweeps. Throws PostgresError.
  PostgresRunQueue(Host host, const ClusterOptions& options);
  /// Stops (shutdown()).
  ~PostgresRunQueue() override;
  PostgresRunQueue(const PostgresRunQueue&) = delete;
  PostgresRunQueue& operator=(const PostgresRunQueue&) = delete;

  /// Queues the run (one transaction, serialized per thread across processes), then claims it
  /// here when its thread is free and a slot is; otherwise whichever process claims it, this
  /// one follows it.
  void create(const std::shared_ptr<Run>& run, const std::string& strategy) override;
  /// Claims the oldest claimable run for this process.
  [[nodiscard]] std::shared_ptr<Run> claim() override { return claim_run(""); }
  /// Records the end of a run this process executed (nothing when another worker took it over
  /// meanwhile: its followers here then wait for that worker), then claims the next runs.
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
  /// A PostgreSQL advisory lock of `key` (a session lock on a connection of the pool, which the
  /// handle gives back).
  [[nodiscard]] std::shared_ptr<void> lock_shared(const std::string& key) override;
  /// Stops the runs executing here (the server stops): they go back to the queue, and another
  /// process continues them.
  void stop() override;
  /// Stops the background thread (after the runs stopped).
  void shutdown() override;

 private:
  /// Claims the oldest claimable run (`run_id` empty) or that one for this process.
  [[nodiscard]] std::shared_ptr<Run> claim_run(const std::string& run_id);
  /// The parameters of kClaim for `run_id` (empty: the oldest claimable run).
  [[nodiscard]] pg::Params claim_params(const std::string& run_id) const;
  /// The run of kClaim's `row` (none: null), ready to launch; its slot (taken before the claim)
  /// is given back when there is no run, or when preparing it fails.
  [[nodiscard]] std::shared_ptr<Run> take_claimed(const pg::Result& row);
  /// A thread's status: busy with an active run (in any process), else what its last run left;
  /// nullopt when neither.
  [[nodiscard]] std::optional<ThreadRegistry::SharedStatus> thread_status(
      const std::string& thread_id);
  /// thread_status() of every thread that has one.
  [[nodiscard]] std::map<std::string, ThreadRegistry::SharedStatus> thread_statuses();
  /// Holds the cross-process lock of a thread's record until the handle is released.
  [[nodiscard]] std::shared_ptr<void> lock_thread_record(const std::string& thread_id);
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
