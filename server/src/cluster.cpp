// SPDX-License-Identifier: MIT
// The run queue in PostgreSQL for many server processes (cluster.hpp): the runs' lifecycle. Every
// change of a run's status is one statement or function in the database, so that two processes
// never disagree: sg_run_create (multitask strategies under a per-thread advisory lock), the
// claim (SKIP LOCKED; a partial unique index keeps one running run per thread), the fenced finish
// (only the attempt that holds the run ends it) and sg_run_cancel. Reading and steering runs from
// any process (list, get, join, cancel, delete) is cluster_access.cpp; each process's background
// upkeep (notifications, leases, the sweeper) is cluster_upkeep.cpp.
#include "cluster.hpp"

#include <stategraph/core/error.hpp>
#include <stategraph/core/time.hpp>
#include <stategraph/core/uuid.hpp>
#include <stategraph/postgres/postgres_saver.hpp>

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

namespace sg::server {

namespace {

using nlohmann::json;

/// The advisory lock that serializes the cluster tables' creation among starting processes.
constexpr std::int64_t kClusterSchemaLock = 0x73675f72756e73;  // "sg_runs"

constexpr const char* kSchema[] = {
    "CREATE TABLE IF NOT EXISTS sg_run (run_id text PRIMARY KEY, thread_id text NOT NULL, "
    "seq bigserial NOT NULL, status text NOT NULL, record jsonb NOT NULL, spec jsonb NOT NULL, "
    "attempt int NOT NULL DEFAULT 0, worker text, lease_until timestamptz, cancel text, "
    "result jsonb)",
    // A run created with after_seconds is not claimed before start_at (tables made before it
    // get the column).
    "ALTER TABLE sg_run ADD COLUMN IF NOT EXISTS start_at timestamptz",
    // One running run per thread, whatever the processes do.
    "CREATE UNIQUE INDEX IF NOT EXISTS sg_run_one_running ON sg_run (thread_id) "
    "WHERE status = 'running'",
    "CREATE INDEX IF NOT EXISTS sg_run_pending ON sg_run (seq) WHERE status = 'pending'",
    "CREATE INDEX IF NOT EXISTS sg_run_thread ON sg_run (thread_id, seq)",
    // The status a thread's last run left (idle, interrupted or error) and when: written as the
    // run ends, in the statement that ends it, rather than into the thread's record (which takes
    // a lock and a read and write of the record).
    "CREATE TABLE IF NOT EXISTS sg_thread_status (thread_id text PRIMARY KEY, status text NOT "
    "NULL, updated_at text NOT NULL)",
    "CREATE TABLE IF NOT EXISTS sg_run_event (run_id text NOT NULL, seq int NOT NULL, "
    "mode text NOT NULL, name text NOT NULL, data text NOT NULL, PRIMARY KEY (run_id, seq))",
    // A new run and its thread's multitask strategy, serialized per thread: returns the busy
    // run's id when `reject` refuses, else NULL.
    "CREATE OR REPLACE FUNCTION sg_run_create(p_run text, p_thread text, p_strategy text, "
    "p_record jsonb, p_spec jsonb, p_now text) RETURNS text LANGUAGE plpgsql AS $$ "
    "DECLARE busy text; r record; "
    "BEGIN "
    "PERFORM pg_advisory_xact_lock(hashtextextended('sg_thread:' || p_thread, 0)); "
    "SELECT run_id INTO busy FROM sg_run WHERE thread_id = p_thread "
    "AND status IN ('pending', 'running') ORDER BY seq LIMIT 1; "
    "IF busy IS NOT NULL AND p_strategy = 'reject' THEN RETURN busy; END IF; "
    "IF busy IS NOT NULL AND p_strategy IN ('interrupt', 'rollback') THEN "
    "  FOR r IN SELECT run_id FROM sg_run WHERE thread_id = p_thread AND status = 'pending' LOOP "
    "    PERFORM sg_run_end_pending(r.run_id, p_strategy, p_now); "
    "  END LOOP; "
    "  FOR r IN UPDATE sg_run SET cancel = p_strategy WHERE thread_id = p_thread "
    "  AND status = 'running' RETURNING run_id LOOP "
    "    PERFORM pg_notify('sg_cancel', r.run_id || ' ' || p_strategy); "
    "  END LOOP; "
    "END IF; "
    "INSERT INTO sg_run (run_id, thread_id, status, record, spec, start_at) "
    "VALUES (p_run, p_thread, 'pending', p_record, p_spec, CASE WHEN "
    "coalesce((p_spec->>'after_ms')::bigint, 0) > 0 THEN clock_timestamp() + "
    "(p_spec->>'after_ms')::bigint * interval '1 millisecond' END); "
    "RETURN NULL; "
    "END $$",
    // A pending run cancelled: interrupted, or deleted (rollback).
    "CREATE OR REPLACE FUNCTION sg_run_end_pending(p_run text, p_action text, p_now text) "
    "RETURNS void LANGUAGE plpgsql AS $$ BEGIN "
    "IF p_action = 'rollback' THEN DELETE FROM sg_run WHERE run_id = p_run; "
    "ELSE UPDATE sg_run SET status = 'interrupted', cancel = p_action, result = '{}', "
    "record = record || jsonb_build_object('status', 'interrupted', 'updated_at', p_now) "
    "WHERE run_id = p_run; END IF; "
    "PERFORM pg_notify('sg_run_end', p_run); "
    "END $$",
    // POST .../cancel: returns the status the run had (NULL: no such active run).
    "CREATE OR REPLACE FUNCTION sg_run_cancel(p_run text, p_thread text, p_action text, "
    "p_now text) RETURNS text LANGUAGE plpgsql AS $$ DECLARE s text; BEGIN "
    "UPDATE sg_run SET cancel = p_action WHERE run_id = p_run AND thread_id = p_thread "
    "AND status IN ('pending', 'running') RETURNING status INTO s; "
    "IF s = 'pending' THEN PERFORM sg_run_end_pending(p_run, p_action, p_now); "
    "ELSIF s = 'running' THEN PERFORM pg_notify('sg_cancel', p_run || ' ' || p_action); "
    "END IF; "
    "RETURN s; END $$",
};

/// The claim: the oldest pending run (or run $2) whose thread has no running run and no older
/// pending one; locked rows are skipped, the unique index refuses a second running run.
constexpr const char* kClaim =
    "WITH cand AS (SELECT r.run_id FROM sg_run r WHERE r.status = 'pending' "
    "AND ($2::text = '' OR r.run_id = $2::text) "
    "AND (r.start_at IS NULL OR r.start_at <= clock_timestamp()) "
    "AND NOT EXISTS (SELECT 1 FROM sg_run o WHERE o.thread_id = r.thread_id "
    "AND (o.status = 'running' OR (o.status = 'pending' AND o.seq < r.seq))) "
    "ORDER BY r.seq LIMIT 1 FOR UPDATE SKIP LOCKED) "
    "UPDATE sg_run r SET status = 'running', attempt = r.attempt + 1, worker = $1, "
    "lease_until = clock_timestamp() + $3::bigint * interval '1 millisecond', "
    "record = r.record || jsonb_build_object('status', 'running', 'updated_at', $4::text) "
    "FROM cand WHERE r.run_id = cand.run_id "
    "RETURNING r.run_id, r.thread_id, r.attempt, r.spec::text, coalesce(r.cancel, ''), "
    "CASE WHEN r.spec->>'webhook' <> '' THEN r.record::text END";

std::string worker_name() {
  char host[256] = {};
  (void)gethostname(host, sizeof host - 1);
  return fmt::format("{}:{}:{}", host, getpid(), new_uuid4().substr(0, 8));
}

}  // namespace

PostgresRunQueue::PostgresRunQueue(Host host, const ClusterOptions& options)
    : RunQueue(std::move(host)),
      options_(options),
      worker_(worker_name()),
      pool_(options.conninfo, 16) {
  db([&](pg::Connection& c) {
    std::vector<pg::Statement> schema;
    schema.push_back(
        {"SELECT pg_advisory_xact_lock($1)", pg::Params().integer(kClusterSchemaLock)});
    for (const char* sql : kSchema) schema.push_back({sql, {}});
    (void)c.pipeline(schema);
    return 0;
  });
  host_.threads.share(
      [this](const std::string& thread_id) { return thread_status(thread_id); },
      [this] { return thread_statuses(); },
      [this](const std::string& thread_id) { return lock_thread_record(thread_id); });
  thread_ = std::thread([this] { background(); });
}

PostgresRunQueue::~PostgresRunQueue() {
  shutdown();
}

json PostgresRunQueue::spec_of(const Run& run) const {
  const RunConfig& c = run.config;
  return {
      {"graph_id", run.graph->graph_id},
      {"input", run.input},
      {"command", run.command},
      {"modes", run.modes},
      {"stateless", run.stateless},
      {"delete_thread_after", run.delete_thread_after},
      {"resumable", run.resumable},
      {"stream", run.streamed || run.resumable},
      {"webhook", run.webhook},
      {"after_ms", std::max<std::int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(
                                                 run.start_at - std::chrono::steady_clock::now())
                                                 .count())},
      {"config",
       {{"thread_id", c.thread_id},
        {"checkpoint_id", c.checkpoint_id},
        {"recursion_limit", c.recursion_limit},
        {"durability", durability_name(c.durability)},
        {"interrupt_before", c.interrupt_before},
        {"interrupt_after", c.interrupt_after},
        {"stream_subgraphs", c.stream_subgraphs},
        {"configurable", c.configurable},
        {"metadata", c.metadata},
        {"context", c.context}}}};
}

std::shared_ptr<Run> PostgresRunQueue::run_of(const std::string& run_id,
                                              const std::string& thread_id,
                                              const json& spec) const {
  auto run = std::make_shared<Run>();
  run->run_id = run_id;
  run->thread_id = thread_id;
  run->graph = host_.api.assistant(spec.at("graph_id").get<std::string>()).graph;
  run->input = spec.value("input", json());
  run->command = spec.value("command", json());
  run->modes = spec.value("modes", std::vector<std::string>{"values"});
  run->stateless = spec.value("stateless", false);
  run->delete_thread_after = spec.value("delete_thread_after", false);
  run->resumable = spec.value("resumable", false);
  run->webhook = spec.value("webhook", std::string());
  const json& c = spec.at("config");
  RunConfig& config = run->config;
  config.thread_id = c.value("thread_id", std::string());
  config.checkpoint_id = c.value("checkpoint_id", std::string());
  config.recursion_limit = c.value("recursion_limit", 25);
  config.durability = durability_named(c.value("durability", std::string()));
  config.interrupt_before = c.value("interrupt_before", std::vector<std::string>());
  config.interrupt_after = c.value("interrupt_after", std::vector<std::string>());
  config.stream_subgraphs = c.value("stream_subgraphs", false);
  config.configurable = c.value("configurable", json::object());
  config.metadata = c.value("metadata", json::object());
  config.context = c.contains("context") ? c["context"] : json();
  config.run_id = run_id;
  config.cancellation = run->token;
  return run;
}

void PostgresRunQueue::create(const std::shared_ptr<Run>& run, const std::string& strategy) {
  if (host_.slots.stopping()) throw ApiError{503, "the server is stopping"};
  host_.threads.set_status(run->thread_id, "busy", run->thread_metadata,  // its metadata
                           &run->thread_record);
  json spec = spec_of(*run);
  {
    std::lock_guard lock(mu_);
    local_[run->run_id] = run;
  }
  // Created, and claimed here in the same round trip when a slot is free and so is its thread
  // (its events then stay in this process).
  bool slot = host_.slots.take();
  const auto create_run = [&](bool claim) {
    return db([&](pg::Connection& c) {
      std::vector<pg::Statement> statements{
          {"SELECT sg_run_create($1, $2, $3, $4::jsonb, $5::jsonb, $6)",
           pg::Params()
               .text(run->run_id)
               .text(run->thread_id)
               .text(strategy)
               .text(run->record_now().dump())
               .text(spec.dump())
               .text(iso_timestamp_now())}};
      if (claim) statements.push_back({kClaim, claim_params(run->run_id)});
      return c.pipeline(statements);
    });
  };
  const std::vector<pg::Result> results = [&] {
    try {
      try {
        return create_run(slot);
      } catch (const PostgresError& e) {
        // The claim lost a race for the thread to another process's (the one running run a
        // thread may have): created alone, it waits its turn.
        if (!slot || e.sqlstate() != "23505") throw;
        host_.slots.give_back();
        slot = false;
        return create_run(false);
      }
    } catch (...) {
      if (slot) host_.slots.give_back();
      std::lock_guard lock(mu_);
      local_.erase(run->run_id);
      throw;
    }
  }();
  if (!results[0].is_null(0, 0)) {
    if (slot) host_.slots.give_back();
    std::lock_guard lock(mu_);
    local_.erase(run->run_id);
    throw ApiError{409, fmt::format("thread '{}' is busy with run '{}' (multitask_strategy reject)",
                                    run->thread_id, results[0].get(0, 0))};
  }
  if (auto claimed = slot ? take_claimed(results[1]) : nullptr) {
    host_.launch(std::move(claimed));
  } else {
    // Queued behind another run, or no worker free here: whichever process claims it, its
    // followers here hear of its events and its end (until this process claims it itself).
    {
      std::lock_guard lock(mu_);
      if (!executing_.contains(run->run_id) && local_.contains(run->run_id)) {
        followers_.try_emplace(run->run_id, Follower{run->channel, 0});
      }
    }
    // Other processes with a free worker may take it (a run queued behind another is claimed
    // by the process that finishes that one, which claims again as it finishes).
    try {
      db([&](pg::Connection& c) {
        return c.exec("SELECT pg_notify('sg_runs', $1)", pg::Params().text(run->thread_id));
      });
    } catch (const std::exception&) {
      // The one-second poll of every process finds it.
    }
  }
}

pg::Params PostgresRunQueue::claim_params(const std::string& run_id) const {
  return pg::Params()
      .text(worker_)
      .text(run_id)
      .integer(options_.lease.count())
      .text(iso_timestamp_now());
}

std::shared_ptr<Run> PostgresRunQueue::claim_run(const std::string& run_id) {
  if (!host_.slots.take()) return nullptr;
  pg::Result row;
  try {
    row = db([&](pg::Connection& c) { return c.exec(kClaim, claim_params(run_id)); });
  } catch (const std::exception&) {
    host_.slots.give_back();
    return nullptr;
  }
  return take_claimed(row);
}

std::shared_ptr<Run> PostgresRunQueue::take_claimed(const pg::Result& row) {
  std::shared_ptr<Run> run;
  std::string cancel;
  bool forward = false;  // created elsewhere and streamed there
  try {
    if (row.rows() == 0) {
      host_.slots.give_back();
      return nullptr;
    }
    const std::string id(row.get(0, 0));
    const std::string thread_id(row.get(0, 1));
    const int attempt = static_cast<int>(row.get_int(0, 2));
    cancel = std::string(row.get(0, 4));
    {
      std::lock_guard lock(mu_);
      if (auto it = local_.find(id); it != local_.end()) run = it->second;
    }
    if (!run) {
      const json spec = json::parse(row.get(0, 3));
      run = run_of(id, thread_id, spec);
      if (!run->webhook.empty()) run->record = json::parse(row.get(0, 5));  // what it POSTs
      forward = spec.value("stream", false);
      std::lock_guard lock(mu_);
      // A join here that waited for the run elsewhere reads it here now: its channel becomes
      // the run's.
      if (const auto f = followers_.find(id); f != followers_.end())
        run->channel = f->second.channel;
      local_[id] = run;
    }
    run->attempt = attempt;
    {
      std::lock_guard lock(mu_);
      executing_.insert(id);
      if (cancel_early_.erase(id) > 0 && cancel.empty()) cancel = "interrupt";
      followers_.erase(id);  // it is here now
    }
    set_fence(*run, fmt::format("{}:{}", id, attempt));
    if (attempt > 1) {
      // A run taken over from a worker that died continues from its last checkpoint when it
      // made one; otherwise it starts again from its input.
      if (const auto saver = run->graph->graph->checkpointer()) {
        const auto latest = saver->get_tuple(CheckpointConfig{thread_id, "", ""});
        if (latest && latest->metadata.value("run_id", std::string()) == id) {
          run->input = nullptr;
          run->command = nullptr;
          run->config.checkpoint_id.clear();
        }
      }
    }
  } catch (const std::exception&) {
    host_.slots.give_back();
    if (run) {
      // The claim got through: the sweeper gives the run back once its lease runs out, and
      // whoever runs it then ends it for the followers here.
      std::lock_guard lock(mu_);
      executing_.erase(run->run_id);
      followers_.try_emplace(run->run_id, Follower{run->channel, 0});
    }
    return nullptr;
  }
  if (!cancel.empty()) run->cancel(cancel, true);
  if (forward) forward_events(run);  // its creator streams it: the events go through the database
  return run;
}

void PostgresRunQueue::set_fence(const Run& run, const std::string& token) {
  const auto saver = std::dynamic_pointer_cast<PostgresSaver>(run.graph->graph->checkpointer());
  if (!saver) return;  // a graph whose checkpoints are not in the database: nothing to fence
  if (!token.empty()) {
    const pg::Statement statement = saver->fence_statement(run.thread_id, token);
    db([&](pg::Connection& c) { return c.exec(statement.sql, statement.params); });
  }
  saver->fence(run.thread_id, token);
}

void PostgresRunQueue::forward_events(const std::shared_ptr<Run>& run) {
  run->channel->forward_to([this, run_id = run->run_id](const RunChannel::Event& e) {
    try {
      db([&](pg::Connection& c) {
        return c.pipeline(
            {{"INSERT INTO sg_run_event SELECT $1, coalesce(max(seq) + 1, 0), $2, $3, $4 "
              "FROM sg_run_event WHERE run_id = $1",
              pg::Params().text(run_id).text(e.mode).text(e.name).text(e.data)},
             {"SELECT pg_notify('sg_run_event', $1)", pg::Params().text(run_id)}});
      });
    } catch (const std::exception&) {
      // A lost event costs a remote stream that event only; the run goes on.
    }
  });
}

void PostgresRunQueue::finish(const std::shared_ptr<Run>& run, std::string_view status,
                              const json& result) {
  const std::string now = iso_timestamp_now();
  bool fenced = false;
  bool idle = false;      // a temporary thread with no run left: deleted
  bool claimable = true;  // whether a run may wait for a worker (unknown: it may)
  const bool stopping = host_.slots.stopping() && run->cancelled_with().empty();
  if (stopping) {
    // The server stops, not the run: it goes back to the queue for another process.
    try {
      db([&](pg::Connection& c) {
        return c.pipeline(
            {{"UPDATE sg_run SET status = 'pending', worker = NULL, lease_until = NULL, "
              "record = record || jsonb_build_object('status', 'pending') WHERE run_id = $1 "
              "AND attempt = $2 AND worker = $3 AND status = 'running'",
              pg::Params().text(run->run_id).integer(run->attempt).text(worker_)},
             {"SELECT pg_notify('sg_runs', $1)", pg::Params().text(run->thread_id)}});
      });
    } catch (const std::exception&) {
      // The sweeper re-queues it once its lease runs out.
    }
    fenced = true;
  } else {
    try {
      const auto results = db([&](pg::Connection& c) {
        pg::Params params;
        params.text(run->run_id).integer(run->attempt).text(worker_);
        std::string end_run;
        if (status.empty()) {
          end_run =
              "DELETE FROM sg_run WHERE run_id = $1 AND attempt = $2 AND worker = $3 AND "
              "status = 'running' RETURNING run_id";
        } else {
          params.text(std::string(status)).text(result.dump()).text(now);
          end_run =
              "UPDATE sg_run SET status = $4, result = $5::jsonb, worker = NULL, "
              "lease_until = NULL, record = record || jsonb_build_object('status', $4::text, "
              "'updated_at', $6::text) WHERE run_id = $1 AND attempt = $2 AND worker = $3 AND "
              "status = 'running' RETURNING run_id";
        }
        if (!run->delete_thread_after) {
          // The thread's status, in the same statement: only when this worker ended the run (a
          // fenced one ends elsewhere) and no other run of the thread is active. A temporary
          // thread is deleted instead.
          const std::size_t t = params.size() + 1;
          params.text(run->thread_id)
              .text(std::string(thread_status_after(status, run->token.cancelled())))
              .text(now);
          end_run = fmt::format(
              "WITH ended AS ({}), stored AS (INSERT INTO sg_thread_status (thread_id, status, "
              "updated_at) SELECT ${}, ${}, ${} FROM ended WHERE NOT EXISTS (SELECT 1 FROM sg_run "
              "WHERE thread_id = ${} AND run_id <> $1 AND status IN ('pending', 'running')) {}) "
              "SELECT run_id FROM ended",
              end_run, t, t + 1, t + 2, t, kStatusUpsert);
        }
        std::vector<pg::Statement> statements{{end_run, params}};
        if (run->delete_thread_after) {
          statements.push_back(
              {"SELECT count(*) FROM sg_run WHERE thread_id = $1 AND "
               "status IN ('pending', 'running')",
               pg::Params().text(run->thread_id)});
        }
        // No sg_runs notification: this process claims the thread's next run itself (below).
        statements.push_back(
            {"SELECT pg_notify('sg_run_end', $1)", pg::Params().text(run->run_id)});
        // Whether a claim may find a run: none waits most of the time, and the claim's query
        // costs more than this one (a run created later is claimed by its creator or on its
        // notification).
        statements.push_back(
            {"SELECT EXISTS (SELECT 1 FROM sg_run WHERE status = 'pending' AND "
             "(start_at IS NULL OR start_at <= clock_timestamp()))",
             {}});
        return c.pipeline(statements);
      });
      fenced = results[0].rows() == 0;
      idle = run->delete_thread_after && results[1].get_int(0, 0) == 0;
      claimable = results.back().get(0, 0) == "t";
    } catch (const std::exception&) {
      fenced = true;  // unknown: the sweeper gives the run back, and its followers wait for it
    }
  }
  try {
    set_fence(*run, "");
  } catch (const std::exception&) {
  }
  {
    std::lock_guard lock(mu_);
    executing_.erase(run->run_id);
    local_.erase(run->run_id);
    if (fenced && !stopping) {
      // Another worker has the run now (or will): followers here wait for its end.
      followers_[run->run_id] = {run->channel, 0};
    }
  }
  if (!fenced) {
    if (idle) {  // a temporary thread; any other's status is stored (above)
      if (run->graph->graph->checkpointer()) {
        try {
          run->graph->graph->delete_thread(run->thread_id);
        } catch (const std::exception&) {
          // A temporary thread left behind costs space only.
        }
      }
      try {
        remove_thread(run->thread_id);
      } catch (const std::exception&) {
      }
      try {
        host_.threads.remove_record(run->thread_id);
      } catch (const std::exception&) {
        // A temporary thread's record left behind costs space only.
      }
    }
    run->channel->finish(result);
    host_.webhook(*run, status, result);
  }
  if (!fenced && run->resumable) host_.ended.keep(*run);
  // The slot is free (the next claim may take it), but shutdown waits until this call is out of
  // the queue's code.
  const RunSlots::Finishing finishing = host_.slots.release();
  if (fenced) catch_up(run->run_id);
  if (!stop_ && claimable) start_claimable();
}

void PostgresRunQueue::stop() {
  std::vector<std::shared_ptr<Run>> runs;
  {
    std::lock_guard lock(mu_);
    for (const auto& id : executing_) runs.push_back(local_[id]);
  }
  for (const auto& run : runs) run->token.cancel();
}

void PostgresRunQueue::shutdown() {
  if (stopped_.exchange(true)) return;
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

}  // namespace sg::server
