// SPDX-License-Identifier: MIT
// The run queue in PostgreSQL, as any process reads and steers it (cluster.hpp): busy threads,
// list, get, join (the result, or the events of a run executed elsewhere), cancel and delete; the
// lock of a thread's record. The runs' lifecycle is cluster.cpp.
#include <fmt/format.h>

#include <algorithm>

#include "cluster.hpp"

namespace sg::server {

using nlohmann::json;

void PostgresRunQueue::catch_up(const std::string& run_id) {
  Follower follower;
  {
    std::lock_guard lock(mu_);
    const auto it = followers_.find(run_id);
    if (it == followers_.end()) return;
    follower = it->second;
  }
  try {
    const auto results = db([&](pg::Connection& c) {
      return c.pipeline(
          {{"SELECT seq, mode, name, data FROM sg_run_event WHERE run_id = $1 AND seq >= $2 "
            "ORDER BY seq",
            pg::Params().text(run_id).integer(follower.next_event)},
           {"SELECT status, coalesce(result::text, '{}') FROM sg_run WHERE run_id = $1",
            pg::Params().text(run_id)}},
          /*atomic=*/false);
    });
    std::lock_guard lock(mu_);
    const auto it = followers_.find(run_id);
    if (it == followers_.end()) return;
    const pg::Result& events = results[0];
    for (int row = 0; row < events.rows(); ++row) {
      it->second.channel->publish_text({std::string(events.get(row, 1)),
                                        std::string(events.get(row, 2)),
                                        std::string(events.get(row, 3))});
      it->second.next_event = events.get_int(row, 0) + 1;
    }
    const pg::Result& state = results[1];
    if (state.rows() == 0 || run_ended(state.get(0, 0))) {
      it->second.channel->finish(state.rows() == 0 ? json::object() : json::parse(state.get(0, 1)));
      followers_.erase(it);
      if (!executing_.contains(run_id)) local_.erase(run_id);  // created here, ended elsewhere
    }
  } catch (const std::exception&) {
    // Tried again at the next notification or poll.
  }
}

std::shared_ptr<RunChannel> PostgresRunQueue::follow_remote(const std::string& run_id) {
  std::int64_t next = 0;
  const pg::Result last = db([&](pg::Connection& c) {
    return c.exec("SELECT coalesce(max(seq) + 1, 0) FROM sg_run_event WHERE run_id = $1",
                  pg::Params().text(run_id));
  });
  next = last.get_int(0, 0);
  std::lock_guard lock(mu_);
  auto& follower = followers_[run_id];
  if (!follower.channel) follower = {std::make_shared<RunChannel>(), next};
  return follower.channel;
}

std::shared_ptr<void> PostgresRunQueue::lock_thread_record(const std::string& thread_id) {
  return lock_shared("sg_thread_record:" + thread_id);
}

std::shared_ptr<void> PostgresRunQueue::lock_shared(const std::string& key) {
  // A session lock on a connection of the pool, released (and the connection given back) with
  // the handle; a broken connection takes its lock with it.
  struct Held {
    pg::Pool::Lease lease;
    pg::Params key;
    Held(pg::Pool::Lease l, pg::Params k) : lease(std::move(l)), key(std::move(k)) {}
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    ~Held() {
      try {
        (void)lease->exec("SELECT pg_advisory_unlock(hashtextextended($1, 0))", key);
      } catch (const std::exception&) {
      }
    }
  };
  auto held = std::make_shared<Held>(pool_.acquire(), pg::Params().text(key));
  (void)held->lease->exec("SELECT pg_advisory_lock(hashtextextended($1, 0))", held->key);
  return held;
}

RunQueue::Counts PostgresRunQueue::counts() {
  const pg::Result r = db([&](pg::Connection& c) {
    return c.exec(
        "SELECT count(*) FILTER (WHERE status = 'pending'), "
        "count(*) FILTER (WHERE status = 'running') FROM sg_run "
        "WHERE status IN ('pending', 'running')");
  });
  return {static_cast<std::size_t>(std::stoull(std::string(r.get(0, 0)))),
          static_cast<std::size_t>(std::stoull(std::string(r.get(0, 1))))};
}

bool PostgresRunQueue::busy(const std::string& thread_id) {
  const pg::Result r = db([&](pg::Connection& c) {
    return c.exec(
        "SELECT EXISTS (SELECT 1 FROM sg_run WHERE thread_id = $1 AND "
        "status IN ('pending', 'running'))",
        pg::Params().text(thread_id));
  });
  return r.get(0, 0) == "t";
}

std::optional<ThreadRegistry::SharedStatus> PostgresRunQueue::thread_status(
    const std::string& thread_id) {
  const pg::Result r = db([&](pg::Connection& c) {
    return c.exec(
        "SELECT CASE WHEN EXISTS (SELECT 1 FROM sg_run WHERE thread_id = $1 AND status IN "
        "('pending', 'running')) THEN 'busy' ELSE s.status END, "
        "coalesce(s.updated_at, '') FROM (SELECT 1) one "
        "LEFT JOIN sg_thread_status s ON s.thread_id = $1",
        pg::Params().text(thread_id));
  });
  if (r.is_null(0, 0)) return std::nullopt;
  ThreadRegistry::SharedStatus status{std::string(r.get(0, 0)), std::string(r.get(0, 1))};
  if (status.status == "busy") status.updated_at.clear();
  return status;
}

std::map<std::string, ThreadRegistry::SharedStatus> PostgresRunQueue::thread_statuses() {
  const auto results = db([&](pg::Connection& c) {
    return c.pipeline(
        {{"SELECT thread_id, status, updated_at FROM sg_thread_status", {}},
         {"SELECT DISTINCT thread_id FROM sg_run WHERE status IN ('pending', 'running')", {}}},
        /*atomic=*/true);
  });
  std::map<std::string, ThreadRegistry::SharedStatus> out;
  for (int row = 0; row < results[0].rows(); ++row) {
    out[std::string(results[0].get(row, 0))] = {std::string(results[0].get(row, 1)),
                                                std::string(results[0].get(row, 2))};
  }
  for (int row = 0; row < results[1].rows(); ++row) {
    out[std::string(results[1].get(row, 0))] = {"busy", ""};
  }
  return out;
}

ApiResponse PostgresRunQueue::list(const std::string& thread_id, const ApiRequest& request) {
  // Not a structured binding: the lambda below uses it (clang before 16 cannot capture one).
  const RunListQuery query = run_list_query(request);
  const pg::Result rows = db([&](pg::Connection& c) {
    return c.exec(
        "SELECT record::text FROM sg_run WHERE thread_id = $1 AND ($2 = '' OR status = $2) "
        "ORDER BY seq DESC LIMIT $3 OFFSET $4",
        pg::Params().text(thread_id).text(query.status).integer(query.limit).integer(query.offset));
  });
  json out = json::array();
  for (int row = 0; row < rows.rows(); ++row) out.push_back(json::parse(rows.get(row, 0)));
  return json_response(out);
}

ApiResponse PostgresRunQueue::get(const std::string& thread_id, const std::string& run_id) {
  const pg::Result row = db([&](pg::Connection& c) {
    return c.exec("SELECT record::text FROM sg_run WHERE run_id = $1 AND thread_id = $2",
                  pg::Params().text(run_id).text(thread_id));
  });
  if (row.rows() == 0) throw ApiError{404, fmt::format("run '{}' not found", run_id)};
  return json_response(json::parse(row.get(0, 0)));
}

ApiResponse PostgresRunQueue::join(const std::string& thread_id, const std::string& run_id,
                                   const ApiRequest& request, RunFollow::Kind kind) {
  const std::optional<std::size_t> resume_from = resume_position(request, kind);
  std::shared_ptr<Run> run;  // created or executing here
  bool executing_here = false;
  {
    std::lock_guard lock(mu_);
    if (const auto it = local_.find(run_id);
        it != local_.end() && it->second->thread_id == thread_id) {
      run = it->second;
      executing_here = executing_.contains(run_id);
    }
  }
  std::shared_ptr<RunChannel> channel = run ? run->channel : nullptr;
  bool replayable = run && run->resumable;
  if (!channel && resume_from) {  // a resumable run that ended here (not one of another process)
    channel = host_.ended.find(run_id);
    replayable = channel != nullptr;
  }
  std::optional<std::size_t> from;  // a stream's first event: the next one published
  if (!channel || (run && !executing_here)) {
    // Executed elsewhere (or not yet claimed): its events come through the database.
    if (!channel) {
      const pg::Result row = db([&](pg::Connection& c) {
        return c.exec("SELECT status FROM sg_run WHERE run_id = $1 AND thread_id = $2",
                      pg::Params().text(run_id).text(thread_id));
      });
      if (row.rows() == 0) throw ApiError{404, fmt::format("run '{}' not found", run_id)};
      if (run_ended(row.get(0, 0))) {
        return ended_run_follow(host_.api, host_.threads.require(thread_id), kind);
      }
      channel = follow_remote(run_id);
    }
    // Taken before the worker is asked for the events: none it forwards from now on is skipped.
    from = channel->published();
    if (kind == RunFollow::Kind::stream) {
      // The worker forwards the run's events from now on; a process that claims it later does
      // too (its spec says streamed).
      db([&](pg::Connection& c) {
        return c.pipeline(
            {{"UPDATE sg_run SET spec = jsonb_set(spec, '{stream}', 'true') WHERE run_id = $1",
              pg::Params().text(run_id)},
             {"SELECT pg_notify('sg_stream', $1)", pg::Params().text(run_id)}});
      });
    }
    catch_up(run_id);  // it may have ended meanwhile
  }
  ApiResponse response =
      join_response(request, kind, channel, /*listen=*/true, replayable ? resume_from : from);
  if (query_flag(request, "cancel_on_disconnect")) {
    response.follow->on_disconnect = [this, thread_id, run_id] {
      try {
        (void)cancel(thread_id, run_id, "interrupt", /*wait=*/false);
      } catch (const std::exception&) {
      }
    };
  }
  return response;
}

std::string PostgresRunQueue::active_run(const std::string& thread_id) {
  const pg::Result row = db([&](pg::Connection& c) {
    return c.exec(
        "SELECT run_id FROM sg_run WHERE thread_id = $1 AND status IN ('pending', "
        "'running') ORDER BY seq LIMIT 1",
        pg::Params().text(thread_id));
  });
  return row.rows() == 0 ? std::string() : std::string(row.get(0, 0));
}

std::vector<std::pair<std::string, std::string>> PostgresRunQueue::active_runs(
    const std::string& thread_id, const std::string& status) {
  const pg::Result rows = db([&](pg::Connection& c) {
    return c.exec(
        "SELECT thread_id, run_id FROM sg_run WHERE status IN ('pending', 'running') "
        "AND ($1 = '' OR thread_id = $1) AND ($2 = '' OR status = $2)",
        pg::Params().text(thread_id).text(status));
  });
  std::vector<std::pair<std::string, std::string>> out;
  for (int row = 0; row < rows.rows(); ++row) {
    out.emplace_back(std::string(rows.get(row, 0)), std::string(rows.get(row, 1)));
  }
  return out;
}

std::shared_ptr<RunChannel> PostgresRunQueue::cancel(const std::string& thread_id,
                                                     const std::string& run_id,
                                                     const std::string& action, bool wait) {
  std::shared_ptr<RunChannel> channel;
  if (wait) {  // followed before the cancel, so that its end is not missed
    std::lock_guard lock(mu_);
    if (const auto it = local_.find(run_id); it != local_.end()) channel = it->second->channel;
  }
  if (wait && !channel) channel = follow_remote(run_id);
  const pg::Result r = db([&](pg::Connection& c) {
    return c.exec("SELECT sg_run_cancel($1, $2, $3, $4)",
                  pg::Params().text(run_id).text(thread_id).text(action).text(iso_timestamp_now()));
  });
  if (r.is_null(0, 0)) {
    {
      std::lock_guard lock(mu_);
      followers_.erase(run_id);
    }
    const pg::Result row = db([&](pg::Connection& c) {
      return c.exec("SELECT 1 FROM sg_run WHERE run_id = $1 AND thread_id = $2",
                    pg::Params().text(run_id).text(thread_id));
    });
    if (row.rows() == 0) throw ApiError{404, fmt::format("run '{}' not found", run_id)};
    throw ApiError{409, fmt::format("run '{}' has already ended", run_id)};
  }
  if (r.get(0, 0) == "pending") {
    // Ended in the database; a follower here of a run created here ends now.
    std::shared_ptr<Run> run;
    {
      std::lock_guard lock(mu_);
      if (const auto it = local_.find(run_id); it != local_.end() && !executing_.contains(run_id)) {
        run = it->second;
        local_.erase(it);
        followers_.erase(run_id);
      }
    }
    if (run) run->channel->finish(json::object());
    start_claimable();  // the thread's next run may be claimable now
  }
  if (wait) catch_up(run_id);
  return channel;
}

void PostgresRunQueue::remove(const std::string& thread_id, const std::string& run_id) {
  const auto results = db([&](pg::Connection& c) {
    return c.pipeline(
        {{"SELECT status FROM sg_run WHERE run_id = $1 AND thread_id = $2",
          pg::Params().text(run_id).text(thread_id)},
         {"DELETE FROM sg_run WHERE run_id = $1 AND thread_id = $2 AND status NOT IN "
          "('pending', 'running')",
          pg::Params().text(run_id).text(thread_id)},
         {"DELETE FROM sg_run_event WHERE run_id = $1 AND NOT EXISTS (SELECT 1 FROM sg_run "
          "WHERE run_id = $1)",
          pg::Params().text(run_id)}});
  });
  if (results[0].rows() == 0) throw ApiError{404, fmt::format("run '{}' not found", run_id)};
  if (!run_ended(results[0].get(0, 0))) {
    throw ApiError{409,
                   fmt::format("run '{}' is {}: cancel it first", run_id, results[0].get(0, 0))};
  }
}

void PostgresRunQueue::remove_thread(const std::string& thread_id) {
  const auto results = db([&](pg::Connection& c) {
    return c.pipeline(
        {{"SELECT pg_advisory_xact_lock(hashtextextended('sg_thread:' || $1, 0))",
          pg::Params().text(thread_id)},
         {"SELECT count(*) FROM sg_run WHERE thread_id = $1 AND status IN ('pending', "
          "'running')",
          pg::Params().text(thread_id)},
         {"DELETE FROM sg_run_event WHERE run_id IN (SELECT run_id FROM sg_run WHERE "
          "thread_id = $1 AND status NOT IN ('pending', 'running'))",
          pg::Params().text(thread_id)},
         {"DELETE FROM sg_run WHERE thread_id = $1 AND status NOT IN ('pending', 'running')",
          pg::Params().text(thread_id)},
         {"DELETE FROM sg_thread_status WHERE thread_id = $1 AND NOT EXISTS (SELECT 1 FROM sg_run "
          "WHERE thread_id = $1 AND status IN ('pending', 'running'))",
          pg::Params().text(thread_id)}});
  });
  if (results[1].get_int(0, 0) > 0) {
    throw ApiError{409,
                   fmt::format("thread '{}' has a run in progress: cancel it first", thread_id)};
  }
}

}  // namespace sg::server
