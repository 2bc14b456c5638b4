// SPDX-License-Identifier: MIT
// The run queue in PostgreSQL (cluster.hpp): the upkeep each process does on its background
// thread. It listens for the cluster's notifications (new runs, cancels, ends, events, streams),
// renews the leases of its running runs (heartbeat), gives the runs of dead workers back to the
// queue or fails them (sweep), deletes old stream events, and claims runs for its free workers.
// The runs' lifecycle itself is cluster.cpp.
#include <stategraph/core/time.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "cluster.hpp"

namespace sg::server {

namespace {
using UpkeepClock = std::chrono::steady_clock;
}  // namespace

void PostgresRunQueue::background() {
  const auto beat_every = std::max(options_.lease / 3, std::chrono::milliseconds(50));
  auto next_beat = UpkeepClock::now() + beat_every;
  auto next_poll = UpkeepClock::now();
  auto next_cleanup = UpkeepClock::now() + options_.event_retention;
  std::unique_ptr<pg::Connection> listener;
  while (!stop_) {
    try {
      if (!listener) {
        listener = std::make_unique<pg::Connection>(options_.conninfo);
        for (const char* channel :
             {"sg_runs", "sg_cancel", "sg_run_end", "sg_run_event", "sg_stream"}) {
          listener->listen(channel);
        }
        next_poll = UpkeepClock::now();  // catch up with what happened while not listening
      }
      const auto notes = listener->wait_for_notifications(std::chrono::milliseconds(100));
      bool claimable = false;
      std::set<std::string> to_catch_up;
      for (const auto& n : notes) {
        if (n.channel == "sg_runs") {
          claimable = true;
        } else if (n.channel == "sg_cancel") {
          const auto space = n.payload.find(' ');
          const std::string id = n.payload.substr(0, space);
          const std::string action =
              space == std::string::npos ? "interrupt" : n.payload.substr(space + 1);
          std::shared_ptr<Run> run;
          {
            std::lock_guard lock(mu_);
            if (executing_.contains(id)) {
              run = local_[id];
            } else if (local_.contains(id)) {
              cancel_early_.insert(id);  // claimed here, not yet registered
            }
          }
          if (run) run->cancel(action, true);
        } else if (n.channel == "sg_stream") {
          std::shared_ptr<Run> run;
          {
            std::lock_guard lock(mu_);
            if (executing_.contains(n.payload)) run = local_[n.payload];
          }
          if (run) forward_events(run);
        } else {  // sg_run_end, sg_run_event
          std::lock_guard lock(mu_);
          if (followers_.contains(n.payload)) to_catch_up.insert(n.payload);
        }
      }
      for (const auto& id : to_catch_up) catch_up(id);
      const auto now = UpkeepClock::now();
      if (now >= next_beat) {
        heartbeat();
        next_beat = now + beat_every;
      }
      if (now >= next_poll) {  // the fallback for a missed notification, and the sweeper
        sweep();
        std::vector<std::string> followed;
        {
          std::lock_guard lock(mu_);
          for (const auto& [id, f] : followers_) followed.push_back(id);
        }
        for (const auto& id : followed) catch_up(id);
        claimable = true;
        next_poll = now + std::chrono::seconds(1);
      }
      if (now >= next_cleanup) {
        forget_old_events();
        next_cleanup = now + options_.event_retention;
      }
      if (claimable) start_claimable();
    } catch (const std::exception&) {
      listener.reset();  // the database restarted or the connection broke: listen anew
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
}

void PostgresRunQueue::heartbeat() {
  std::map<std::string, std::shared_ptr<Run>> mine;
  {
    std::lock_guard lock(mu_);
    for (const auto& id : executing_) mine[id] = local_[id];
  }
  if (mine.empty()) return;
  const pg::Result held = db([&](pg::Connection& c) {
    return c.exec(
        "UPDATE sg_run SET lease_until = clock_timestamp() + $2::bigint * interval "
        "'1 millisecond' WHERE worker = $1 AND status = 'running' RETURNING run_id, attempt, "
        "coalesce(cancel, '')",
        pg::Params().text(worker_).integer(options_.lease.count()));
  });
  std::map<std::string, std::pair<int, std::string>> renewed;
  for (int row = 0; row < held.rows(); ++row) {
    renewed[std::string(held.get(row, 0))] = {static_cast<int>(held.get_int(row, 1)),
                                              std::string(held.get(row, 2))};
  }
  for (const auto& [id, run] : mine) {
    const auto it = renewed.find(id);
    if (it == renewed.end() || it->second.first != run->attempt) {
      run->token.cancel();  // lost: another worker has it (the fence refuses our writes)
    } else if (!it->second.second.empty() && !run->token.cancelled()) {
      run->cancel(it->second.second, true);  // a cancel whose notification was missed
    }
  }
}

void PostgresRunQueue::sweep() {
  const std::string now = iso_timestamp_now();
  const pg::Result swept = db([&](pg::Connection& c) {
    return c.exec(
        "WITH swept AS (UPDATE sg_run SET status = CASE WHEN attempt >= $1 THEN 'error' ELSE "
        "'pending' END, worker = NULL, lease_until = NULL, result = CASE WHEN attempt >= $1 THEN "
        "jsonb_build_object('__error__', jsonb_build_object('error', 'WorkerLost', 'message', "
        "'the run lost its worker ' || attempt || ' times')) ELSE result END, "
        "record = record || jsonb_build_object('status', CASE WHEN attempt >= $1 THEN 'error' "
        "ELSE 'pending' END, 'updated_at', $2::text) "
        "WHERE status = 'running' AND lease_until < clock_timestamp() "
        "RETURNING run_id, thread_id, status), "
        // A failed run's thread fails too, as when a run ends (finish), unless another of its
        // runs is active.
        "stored AS (INSERT INTO sg_thread_status (thread_id, status, updated_at) "
        "SELECT s.thread_id, 'error', $2 FROM swept s WHERE s.status = 'error' AND NOT EXISTS "
        "(SELECT 1 FROM sg_run o WHERE o.thread_id = s.thread_id AND o.run_id <> s.run_id AND "
        "o.status IN ('pending', 'running')) " +
            std::string(kStatusUpsert) +
            ") SELECT run_id, thread_id, status, pg_notify('sg_run_end', run_id), "
            "pg_notify('sg_runs', thread_id) FROM swept",
        pg::Params().integer(options_.max_attempts).text(now));
  });
}

void PostgresRunQueue::forget_old_events() {
  // Followers in other processes read up to the end as soon as they hear of it.
  const std::string before = iso_timestamp_now(-options_.event_retention);
  db([&](pg::Connection& c) {
    return c.exec(
        "DELETE FROM sg_run_event e USING sg_run r WHERE e.run_id = r.run_id AND r.status NOT "
        "IN ('pending', 'running') AND r.record->>'updated_at' < $1",
        pg::Params().text(before));
  });
}

}  // namespace sg::server
