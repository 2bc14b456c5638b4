// RunManager's runs in PostgreSQL, as any process reads and steers them (cluster.hpp): busy
// threads, list, get, join (the result, or the events of a run executed elsewhere), cancel and
// delete; the lock of a thread's record. The runs' lifecycle is cluster.cpp.
#include <fmt/format.h>

#include <algorithm>

#include "cluster.hpp"

namespace sg::server {

using nlohmann::json;

void RunManager::Cluster::catch_up(const std::string& run_id) {
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

std::shared_ptr<RunChannel> RunManager::Cluster::follow_remote(const std::string& run_id) {
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

std::shared_ptr<void> RunManager::Cluster::lock_thread_record(const std::string& thread_id) {
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
        (void)lease->exec(
            "SELECT pg_advisory_unlock(hashtextextended('sg_thread_record:' || $1, 0))", key);
      } catch (const std::exception&) {
      }
    }
  };
  auto held = std::make_shared<Held>(pool_.acquire(), pg::Params().text(thread_id));
  (void)held->lease->exec("SELECT pg_advisory_lock(hashtextextended('sg_thread_record:' || $1, 0))",
                          held->key);
  return held;
}

bool RunManager::Cluster::busy(const std::string& thread_id) {
  const pg::Result r = db([&](pg::Connection& c) {
    return c.exec(
        "SELECT EXISTS (SELECT 1 FROM sg_run WHERE thread_id = $1 AND "
        "status IN ('pending', 'running'))",
        pg::Params().text(thread_id));
  });
  return r.get(0, 0) == "t";
}

std::set<std::string> RunManager::Cluster::busy_threads() {
  const pg::Result r = db([&](pg::Connection& c) {
    return c.exec("SELECT DISTINCT thread_id FROM sg_run WHERE status IN ('pending', 'running')");
  });
  std::set<std::string> out;
  for (int row = 0; row < r.rows(); ++row) out.emplace(r.get(row, 0));
  return out;
}

ApiResponse RunManager::Cluster::list(const std::string& thread_id, const ApiRequest& request) {
  (void)m_.threads_.require(thread_id);
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

ApiResponse RunManager::Cluster::get(const std::string& thread_id, const std::string& run_id) {
  (void)m_.threads_.require(thread_id);
  const pg::Result row = db([&](pg::Connection& c) {
    return c.exec("SELECT record::text FROM sg_run WHERE run_id = $1 AND thread_id = $2",
                  pg::Params().text(run_id).text(thread_id));
  });
  if (row.rows() == 0) throw ApiError{404, fmt::format("run '{}' not found", run_id)};
  return json_response(json::parse(row.get(0, 0)));
}

ApiResponse RunManager::Cluster::join(const std::string& thread_id, const std::string& run_id,
                                      const ApiRequest& request, RunFollow::Kind kind) {
  const json thread = m_.threads_.require(thread_id);
  const std::optional<std::size_t> resume_from = resume_position(request, kind);
  std::shared_ptr<Run> run;
  {
    std::lock_guard lock(mu_);
    if (const auto it = local_.find(run_id);
        it != local_.end() && it->second->thread_id == thread_id) {
      run = it->second;
    }
  }
  std::shared_ptr<RunChannel> channel = run ? run->channel : nullptr;
  bool replayable = run && run->resumable;
  if (!channel && resume_from) {  // a resumable run that ended here (not one of another process)
    std::lock_guard lock(m_.state_->mu);
    if (const auto ended = m_.state_->ended_resumable.find(run_id);
        ended != m_.state_->ended_resumable.end()) {
      channel = ended->second;
      replayable = true;
    }
  }
  if (!channel) {
    const pg::Result row = db([&](pg::Connection& c) {
      return c.exec("SELECT status FROM sg_run WHERE run_id = $1 AND thread_id = $2",
                    pg::Params().text(run_id).text(thread_id));
    });
    if (row.rows() == 0) throw ApiError{404, fmt::format("run '{}' not found", run_id)};
    if (run_ended(row.get(0, 0))) return m_.ended_run_follow(thread, kind);
    channel = follow_remote(run_id);
    if (kind == RunFollow::Kind::stream) {
      db([&](pg::Connection& c) {  // the worker forwards the run's events from now on
        return c.exec("SELECT pg_notify('sg_stream', $1)", pg::Params().text(run_id));
      });
    }
    catch_up(run_id);  // it may have ended meanwhile
  }
  ApiResponse response = join_response(request, kind, channel, /*listen=*/true,
                                       replayable ? resume_from : std::nullopt);
  if (query_flag(request, "cancel_on_disconnect")) {
    response.follow->on_disconnect = [this, thread_id, run_id] {
      ApiRequest cancel_request;
      try {
        (void)cancel(thread_id, run_id, cancel_request);
      } catch (const std::exception&) {
      }
    };
  }
  return response;
}

ApiResponse RunManager::Cluster::join_thread(const std::string& thread_id,
                                             const ApiRequest& request) {
  (void)m_.threads_.require(thread_id);
  const pg::Result row = db([&](pg::Connection& c) {
    return c.exec(
        "SELECT run_id FROM sg_run WHERE thread_id = $1 AND status IN ('pending', "
        "'running') ORDER BY seq LIMIT 1",
        pg::Params().text(thread_id));
  });
  if (row.rows() == 0) return ended_stream();
  return join(thread_id, std::string(row.get(0, 0)), request, RunFollow::Kind::stream);
}

ApiResponse RunManager::Cluster::cancel(const std::string& thread_id, const std::string& run_id,
                                        const ApiRequest& request) {
  (void)m_.threads_.require(thread_id);
  const std::string action = cancel_action(request);
  const bool wait = query_flag(request, "wait");
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
    claim_all();  // the thread's next run may be claimable now
  }
  ApiResponse response;
  if (wait) {
    catch_up(run_id);
    response.follow = std::make_shared<RunFollow>();
    response.follow->kind = RunFollow::Kind::done;
    response.follow->channel = channel;
    return response;
  }
  response.status = 202;
  response.content_type.clear();
  return response;
}

ApiResponse RunManager::Cluster::cancel_many(const ApiRequest& request) {
  const json body = body_object(request);
  std::string action = "interrupt";
  if (const auto it = request.query.find("action"); it != request.query.end()) action = it->second;
  const std::string thread_id = string_field(body, "thread_id");
  const std::vector<std::string> run_ids = string_list_field(body, "run_ids", "run ids");
  std::string status = string_field(body, "status");
  if (status == "all") status.clear();
  const pg::Result rows = db([&](pg::Connection& c) {
    return c.exec(
        "SELECT thread_id, run_id FROM sg_run WHERE status IN ('pending', 'running') "
        "AND ($1 = '' OR thread_id = $1) AND ($2 = '' OR status = $2)",
        pg::Params().text(thread_id).text(status));
  });
  ApiRequest cancel_request;
  cancel_request.query.emplace("action", action);
  for (int row = 0; row < rows.rows(); ++row) {
    const std::string id(rows.get(row, 1));
    if (!run_ids.empty() && std::find(run_ids.begin(), run_ids.end(), id) == run_ids.end()) {
      continue;
    }
    try {
      (void)cancel(std::string(rows.get(row, 0)), id, cancel_request);
    } catch (const ApiError&) {
      // Ended meanwhile.
    }
  }
  return no_content();
}

ApiResponse RunManager::Cluster::remove(const std::string& thread_id, const std::string& run_id) {
  (void)m_.threads_.require(thread_id);
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
  return no_content();
}

void RunManager::Cluster::remove_thread(const std::string& thread_id) {
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
          pg::Params().text(thread_id)}});
  });
  if (results[1].get_int(0, 0) > 0) {
    throw ApiError{409,
                   fmt::format("thread '{}' has a run in progress: cancel it first", thread_id)};
  }
}

}  // namespace sg::server
