// SPDX-License-Identifier: MIT
#pragma once

// The crons API (internal): runs on a schedule, as the SDK's `client.crons` creates and manages
// them (POST /runs/crons, POST /threads/{id}/runs/crons, PATCH and DELETE /runs/crons/{id},
// /runs/crons/search and /count).

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "api.hpp"

namespace sg::server {

/// Crons: records in the server's record store (crons_namespace(), key cron_id) and a thread of
/// their own that creates each due run through RunManager::create, as a client's POST would: on
/// the cron's thread, or (a stateless cron) on a new thread that its end deletes unless
/// `on_run_completed` is "keep". A due time that passed while no server ran is made up once,
/// then the next comes from the schedule. With `lock` (a cluster), each firing holds the lock of
/// its cron across processes and re-reads the record, so that one process fires each due time.
/// Thread-safe.
class Crons {
 public:
  /// A lock of `key` shared by every server process (released with the handle).
  using SharedLock = std::function<std::shared_ptr<void>(const std::string& key)>;

  /// `api`, `runs` and `threads` must outlive the crons; start() starts firing.
  Crons(const Api& api, RunManager& runs, ThreadRegistry& threads, std::shared_ptr<Store> records,
        SharedLock lock);
  /// stop().
  ~Crons();
  Crons(const Crons&) = delete;
  Crons& operator=(const Crons&) = delete;

  /// Starts the thread that fires due crons: it wakes at the next due time, and, with a shared
  /// lock, at least every second for the crons other processes created.
  void start();
  /// Stops and joins it. Idempotent.
  void stop();

  /// POST /threads/{id}/runs/crons (`thread_id` set) and POST /runs/crons: the Cron object.
  /// Throws ApiError 404 (assistant, thread) or 422 (schedule, timezone, end_time, a run field).
  /// `access` (crons:create) may replace the metadata; the request's user becomes the cron's
  /// user_id and the langgraph_auth_* of its runs' configurable.
  [[nodiscard]] ApiResponse create(const std::string& thread_id, const ApiRequest& request,
                                   const Access& access = {});
  /// PATCH /runs/crons/{id}: the given fields change (metadata merged); a new schedule,
  /// timezone or enabling recomputes next_run_date. Throws ApiError 404 or 422.
  /// A cron `access` (crons:update) does not allow is a 404; it may replace the metadata.
  [[nodiscard]] ApiResponse update(const std::string& cron_id, const ApiRequest& request,
                                   const Access& access = {});
  /// DELETE /runs/crons/{id}. Throws ApiError 404.
  /// A cron `access` (crons:delete) does not allow is a 404.
  void remove(const std::string& cron_id, const Access& access = {});
  /// POST /runs/crons/search: {assistant_id, thread_id, enabled, metadata, paging, select}.
  /// Only the crons `access` (crons:search) allows.
  [[nodiscard]] ApiResponse search(const ApiRequest& request, const Access& access = {}) const;
  /// POST /runs/crons/count: {assistant_id, thread_id, metadata}.
  [[nodiscard]] ApiResponse count(const ApiRequest& request, const Access& access = {}) const;
  /// Deletes the crons of a deleted thread.
  void remove_thread(const std::string& thread_id);

  /// Creates the runs of the crons due at `now`; returns the earliest later due time.
  std::optional<std::chrono::sys_seconds> fire_due(std::chrono::sys_seconds now);

 private:
  /// Creates the cron's run when it is still due at `now` (read under its lock) and sets its
  /// next due time; returns that time (none: no more).
  std::optional<std::chrono::sys_seconds> fire(const std::string& cron_id,
                                               std::chrono::sys_seconds now);
  [[nodiscard]] std::vector<nlohmann::json> matching(const nlohmann::json& body,
                                                     const Access& access) const;
  [[nodiscard]] nlohmann::json require(const std::string& cron_id) const;
  /// The local and (with a cluster) shared lock of one cron's record.
  [[nodiscard]] std::pair<std::unique_lock<std::mutex>, std::shared_ptr<void>> lock(
      const std::string& cron_id);
  void wake();

  const Api& api_;
  RunManager& runs_;
  ThreadRegistry& threads_;
  std::shared_ptr<Store> records_;
  SharedLock shared_lock_;

  std::mutex change_mu_;  // one change of a record at a time in this process
  std::mutex mu_;         // guards the fields below
  std::condition_variable changed_;
  bool stopping_ = false;
  bool woken_ = false;
  std::thread thread_;
};

/// Cron records: ("stategraph", "crons"), key cron_id.
[[nodiscard]] const Namespace& crons_namespace();

}  // namespace sg::server
