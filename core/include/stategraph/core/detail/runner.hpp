#pragma once

// The Pregel executor: runs a compiled graph superstep by superstep. Internal to stategraph.
//
// Each superstep: the triggered tasks (edge-triggered nodes in node-name order, then Sends in
// the order they were sent) read the same state; a step with one task runs it on the calling
// thread, a step with several runs them on the thread pool with the calling thread helping.
// After all finish, their writes are applied field by field in task order, the routers and
// Commands pick the next tasks, and the stream gets its events.

#include <stategraph/core/cache.hpp>
#include <stategraph/core/checkpointer.hpp>
#include <stategraph/core/context.hpp>
#include <stategraph/core/detail/node.hpp>
#include <stategraph/core/detail/persistence.hpp>
#include <stategraph/core/detail/topology.hpp>
#include <stategraph/core/error.hpp>
#include <stategraph/core/thread_pool.hpp>
#include <stategraph/core/uuid.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace sg::detail {

template <State S>
struct NodeEntry {
  NodeFunction<S> fn;
  NodeOptions options;
  ArgReader read_arg;  // rebuilds a Send argument from a checkpoint
};

/// The cache slot of a field whose reducer keeps none.
struct MonostateCache {
  struct Cache {};
};

template <State S, class Seq>
struct FieldCachesOf;
template <State S, std::size_t... I>
struct FieldCachesOf<S, std::index_sequence<I...>> {
  using type = std::tuple<
      typename std::conditional_t<CachedReducer<typename field_t<S, I>::reducer_type>,
                                  typename field_t<S, I>::reducer_type, MonostateCache>::Cache...>;
};
/// The reducer caches of a run, one per field (see CachedReducer).
template <State S>
using FieldCaches = typename FieldCachesOf<S, std::make_index_sequence<field_count_v<S>>>::type;

/// A thread as a run left it: its latest checkpoint's id and what restoring it would give.
template <State S>
struct FinishedThread {
  std::string checkpoint_id;
  S state;
  FieldCaches<S> caches;
  ChannelVersions versions;
  std::map<std::string, ChannelVersions> versions_seen;
  int step = -1;
};

/// A compiled graph's immutable data, shared by its runs (and by abandoned timed-out tasks).
template <State S>
struct GraphDef {
  GraphSpec spec;
  Topology topo;
  std::vector<NodeEntry<S>> nodes;  // by node id
  std::vector<Router<S>> routers;   // by branch index
  CompileOptions options;
  std::shared_ptr<ThreadPool> pool;
  /// Recent run time of each node in a multi-task superstep (ns, moving average; kUnknownCost
  /// until measured). Decides whether a step's tasks are worth sending to the pool.
  std::unique_ptr<std::atomic<std::uint32_t>[]> cost_ns;
  /// Threads recently finished by runs with options.checkpointer (CompileOptions::recent_threads).
  std::unique_ptr<RecentThreads<FinishedThread<S>>> recent;
  /// The compiled graphs added as nodes (same state type; by node name), and the names of those
  /// with another state type.
  std::map<std::string, std::shared_ptr<const GraphDef<S>>> subgraphs;
  std::set<std::string> foreign_subgraphs;
  /// The checkpoint channel names of each node's trigger ("branch:to:NODE", by node id) and of
  /// each join (by join index), made once.
  std::vector<std::string> branch_channels;
  std::vector<std::string> join_channels;
};

inline constexpr std::uint32_t kUnknownCost = 0xFFFFFFFFu;
/// Below this predicted total, a step's tasks run on the calling thread: handing them to pool
/// threads costs more (about 10 us per step on 2 cores) than running them.
inline constexpr std::uint64_t kInlineStepBudgetNs = 30'000;

template <State S>
using EventSink = std::function<void(StreamEvent<S>&&)>;

/// What a caller of stream() asked for. The sink runs on the thread that runs the graph.
template <State S>
struct StreamSpec {
  StreamModes modes{};
  EventSink<S> sink{};
  std::vector<std::string> ns{};
};

/// Retry decision for an attempt that threw `error`.
inline bool should_retry(const std::optional<RetryPolicy>& policy, int attempt,
                         std::exception_ptr error) {
  if (!policy || attempt >= policy->max_attempts) return false;
  try {
    std::rethrow_exception(error);
  } catch (const CancelledError&) {
    return false;
  } catch (const std::exception& e) {
    return policy->retry_on ? policy->retry_on(e) : default_retry_on(e);
  } catch (...) {
    return false;
  }
}

/// The pause before attempt `attempt + 1`.
inline std::chrono::duration<double> retry_interval(const RetryPolicy& policy, int attempt) {
  double seconds = policy.initial_interval.count();
  for (int i = 1; i < attempt; ++i) seconds *= policy.backoff_factor;
  seconds = std::min(seconds, policy.max_interval.count());
  if (policy.jitter) {
    thread_local std::mt19937 rng{std::random_device{}()};
    seconds += std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  }
  return std::chrono::duration<double>(seconds);
}

/// The part of a run that tasks on other threads touch; they keep it alive.
struct RunShared final : RunHooks {
  struct Custom {
    std::string node;
    int step;
    nlohmann::json value;
  };

  RunConfig cfg;
  Store* store_ptr = nullptr;
  Checkpointer* saver = nullptr;
  bool stream_custom = false;
  StreamModes sub_modes{};
  std::vector<std::string> ns;
  std::thread::id orchestrator;
  std::function<void(Custom&&)> deliver_custom;       // orchestrator thread only
  std::function<void(ForeignEvent&&)> deliver_child;  // orchestrator thread only

  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::function<void()>> deliveries;  // guarded by mu: stream events from other threads
  std::vector<std::size_t> finished;              // guarded by mu: tasks done since the last drain
  std::size_t remaining = 0;       // guarded by mu: claimed tasks of the current batch
  std::size_t timed_finished = 0;  // guarded by mu: bumps when a timed attempt ends
  std::atomic<bool> step_failed{false};
  std::atomic<bool> alive{true};

  /// Resuming: the run of the node that runs this one as a subgraph (its resume values answer
  /// ours), whether this is the first step of a resumed run, the resume map (read-only while
  /// tasks run) and the single resume value (taken once).
  RunHooks* parent = nullptr;
  std::atomic<bool> resuming_step{false};
  nlohmann::json resume_map{};
  std::mutex resume_mu;
  std::optional<nlohmann::json> null_resume;  // guarded by resume_mu

  /// Subgraph checkpoints: this run's "parents" metadata and its current checkpoint (owned by the
  /// runner, changed only between steps); the root's checkpoint map of a subgraph time travel;
  /// the root's replay bound with the subgraph namespaces that used it (guarded by resume_mu).
  nlohmann::json parents;  // null: none (no object allocated for a root run)
  const std::string* current_checkpoint = nullptr;
  nlohmann::json checkpoint_map{};
  std::optional<std::string> replay_before;
  std::set<std::string> replay_visited;

  [[nodiscard]] const RunConfig& config() const noexcept override { return cfg; }
  [[nodiscard]] Store* store() const noexcept override { return store_ptr; }
  [[nodiscard]] bool aborted() const noexcept override {
    return step_failed.load(std::memory_order_relaxed);
  }
  [[nodiscard]] StreamModes subgraph_modes() const noexcept override { return sub_modes; }
  [[nodiscard]] const std::vector<std::string>& stream_ns() const noexcept override { return ns; }
  [[nodiscard]] Checkpointer* checkpointer() const noexcept override { return saver; }
  [[nodiscard]] bool resuming() const noexcept override {
    return resuming_step.load(std::memory_order_relaxed);
  }

  [[nodiscard]] std::uint64_t task_id_seed() const noexcept override {
    return detail::task_id_seed(cfg.thread_id, cfg.checkpoint_ns,
                                current_checkpoint ? *current_checkpoint : std::string_view());
  }
  [[nodiscard]] nlohmann::json checkpoint_parents() const override {
    nlohmann::json out = parents.is_null() ? nlohmann::json::object() : parents;
    if (current_checkpoint && !current_checkpoint->empty())
      out[cfg.checkpoint_ns] = *current_checkpoint;
    return out;
  }

  [[nodiscard]] std::optional<std::string> mapped_checkpoint(
      const std::string& checkpoint_ns) const override {
    if (parent) return parent->mapped_checkpoint(checkpoint_ns);
    if (auto it = checkpoint_map.find(checkpoint_ns); it != checkpoint_map.end())
      return it->template get<std::string>();
    return std::nullopt;
  }

  std::optional<std::string> replay_bound(const std::string& checkpoint_ns) override {
    if (parent) return parent->replay_bound(checkpoint_ns);
    std::lock_guard lock(resume_mu);
    if (!replay_before) return std::nullopt;
    // The same subgraph in a later iteration (another task id) loads its latest checkpoint.
    const std::string stable = checkpoint_ns.substr(0, checkpoint_ns.rfind(':'));
    if (!replay_visited.insert(stable).second) return std::nullopt;
    return replay_before;
  }

  std::optional<nlohmann::json> take_resume(const std::string& interrupt_id) override {
    if (resume_map.is_object()) {
      if (auto it = resume_map.find(interrupt_id); it != resume_map.end()) return *it;
    }
    {
      std::lock_guard lock(resume_mu);
      if (null_resume) {
        std::optional<nlohmann::json> out = std::move(null_resume);
        null_resume.reset();
        return out;
      }
    }
    return parent ? parent->take_resume(interrupt_id) : std::nullopt;
  }

  void write_custom(const std::string& node, int step, nlohmann::json value) override {
    if (!stream_custom) return;
    deliver([this, c = Custom{node, step, std::move(value)}]() mutable {
      deliver_custom(std::move(c));
    });
  }

  void forward_event(ForeignEvent&& event) override {
    if (!deliver_child) return;
    deliver([this, e = std::move(event)]() mutable { deliver_child(std::move(e)); });
  }

  void deliver(std::function<void()> delivery) {
    if (!alive.load()) return;
    if (std::this_thread::get_id() == orchestrator) {
      delivery();
      return;
    }
    {
      std::lock_guard lock(mu);
      deliveries.push_back(std::move(delivery));
    }
    cv.notify_all();
  }
};

/// The claim counter of one multi-task superstep; helper threads keep it alive.
struct Batch {
  std::atomic<std::size_t> next{0};
  std::size_t count = 0;
};

/// One attempt of a node with a timeout: it owns its input, so it can be abandoned.
template <State S>
struct TimedAttempt {
  std::shared_ptr<const S> snapshot;
  std::any arg;
  TaskInfo info;
  std::atomic<int> status{0};  // 0 running, 1 finished, 2 abandoned
  std::optional<Command<S>> output;
  std::exception_ptr error;
  std::vector<Interrupt> interrupts;
  bool interrupted = false;
  std::chrono::steady_clock::time_point deadline;
};

/// What a run starts from: new input (applied by the START task), or the thread's checkpoint
/// (resume / continue), optionally with a Command's resume value, update and gotos.
/// `continue_saved`: a subgraph of a resumed parent step continues its checkpoint if it has one,
/// and otherwise starts from `input`.
template <State S>
struct RunRequest {
  std::optional<Update<S>> input{};
  std::optional<nlohmann::json> resume{};
  std::optional<Update<S>> update{};
  std::vector<Goto> go_to{};
  bool command = false;
  bool continue_saved = false;
  /// Load the namespace's newest checkpoint older than this id and apply `input` on top (a
  /// subgraph's first run while the root replays an older checkpoint).
  std::optional<std::string> load_before{};
};

template <State S>
class Runner {
 public:
  Runner(std::shared_ptr<const GraphDef<S>> def, const RunConfig& config, StreamSpec<S>* stream,
         Checkpointer* inherited = nullptr, Store* inherited_store = nullptr,
         RunHooks* parent = nullptr)
      : def_(std::move(def)),
        topo_(def_->topo),
        stream_(stream),
        shared_(std::make_shared<RunShared>()) {
    shared_->cfg = config;
    shared_->parent = parent;
    shared_->current_checkpoint = &current_id_;
    if (parent) shared_->parents = parent->checkpoint_parents();
    shared_->orchestrator = std::this_thread::get_id();
    if (stream_) {
      shared_->stream_custom = stream_->modes.has(StreamMode::custom);
      shared_->deliver_custom = [this](RunShared::Custom&& c) { emit_custom(std::move(c)); };
      if (config.stream_subgraphs) shared_->sub_modes = stream_->modes;
      shared_->ns = stream_->ns;
      shared_->deliver_child = [this](ForeignEvent&& e) { emit_child(std::move(e)); };
    }
    pull_mark_.assign(topo_.node_count, 0);
    defer_mark_.assign(topo_.node_count, 0);
    join_marks_.resize(topo_.joins.size());
    for (std::size_t j = 0; j < topo_.joins.size(); ++j)
      join_marks_[j].assign(topo_.joins[j].sources.size(), 0);
    changed_.assign(field_count_v<S>, 0);
    saver_ = def_->options.checkpointer ? def_->options.checkpointer.get() : inherited;
    saver_deltas_ = saver_ && saver_->stores_deltas();
    shared_->saver = saver_;
    shared_->store_ptr = def_->options.store ? def_->options.store.get() : inherited_store;
    if (saver_) {
      if constexpr (!kJsonState<S>) {
        throw Error(errc::kInvalidRun,
                    "a checkpointer needs a state whose fields convert to and from JSON");
      }
      if (config.thread_id.empty())
        throw Error(errc::kInvalidRun, "a graph with a checkpointer needs RunConfig::thread_id");
      durability_ = config.durability.value_or(saver_->default_durability());
      if (durability_ == Durability::async)
        writer_ = std::make_unique<AsyncWriter>(*def_->pool, *saver_);
      run_id_ = config.run_id.empty() ? new_uuid4() : config.run_id;
      stored_ = CheckpointConfig{config.thread_id, config.checkpoint_ns, {}};
      stored_version_.assign(field_count_v<S>, -1);
      for_each_field<S>([&](auto i) {
        using R = typename field_t<S, i>::reducer_type;
        if constexpr (TrackedListReducer<R>) std::get<i>(caches_).track = true;
      });
    }
  }

  ~Runner() {
    shared_->alive.store(false);
    writer_.reset();  // waits for queued background writes
  }
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  /// Runs the graph: from new input, or (with a checkpointer) continuing the thread's checkpoint.
  RunResult<S> run(RunRequest<S>&& request) {
    const int limit = shared_->cfg.recursion_limit;
    if (limit < 1) throw Error(errc::kInvalidRun, "recursion_limit must be at least 1");
    bool loaded = false;
    if (saver_ && !shared_->parent && !shared_->cfg.checkpoint_ns.empty()) {
      resolve_subgraph_checkpoint();
    }
    if (saver_ && request.load_before) {
      ListOptions before;
      before.thread_id = shared_->cfg.thread_id;
      before.checkpoint_ns = shared_->cfg.checkpoint_ns;
      before.before = *request.load_before;
      before.limit = 1;
      auto older = saver_->list(before);
      if (!older.empty()) {
        restore(older.front());
        loaded = true;
        above_thread_versions_ = true;  // a new branch from an older checkpoint
      }
      request.continue_saved = false;
    } else if (saver_) {
      loaded = restore_recent();
      if (!loaded) {
        auto tuple = saver_->get_tuple(CheckpointConfig{
            shared_->cfg.thread_id, shared_->cfg.checkpoint_ns, shared_->cfg.checkpoint_id});
        if (!shared_->cfg.checkpoint_id.empty() && !tuple) {
          throw Error(errc::kInvalidRun, "thread '" + shared_->cfg.thread_id +
                                             "' has no checkpoint '" + shared_->cfg.checkpoint_id +
                                             "'");
        }
        if (tuple) restore(*tuple);
        loaded = tuple.has_value();
      }
    }
    if (request.continue_saved && loaded) request.input.reset();

    bool skip_breakpoint = false;
    bool input_saved = false;
    if (!request.input && !request.command && pending_start_) {
      // The thread stopped after storing an input its START task had not applied yet.
      request.input = std::move(pending_start_);
      pending_start_.reset();
      input_saved = true;
    }
    if (request.input) {
      // New input: the START task applies it (after an input checkpoint when persisting). On an
      // existing thread, the previous run's unfinished tasks are dropped (a waiting edge keeps
      // the sources it has seen, as LangGraph's barrier channels do).
      clear_schedule(/*keep_joins=*/true);
      resumed_writes_.clear();
      null_writes_.clear();
      shared_->null_resume.reset();
      if (saver_ && !input_saved) {
        step_ = loaded ? step_ + 1 : -1;
        if constexpr (kJsonState<S>) start_input_ = update_to_json(*request.input);
        // The input checkpoint is stored with the next one, in one write: no node runs between.
        hold_puts_ = true;
        save_checkpoint("input");
        hold_puts_ = false;
        tasks_.clear();
        emit_debug_checkpoint(/*start_next=*/true);
      } else if (!saver_) {
        step_ = -1;
      }
      stop_ = step_ + limit + 1;
      ++step_;
      tasks_.resize(1);
      reset_task(tasks_[0], topo_.start, -1);
      tasks_[0].output.emplace(Command<S>{std::move(*request.input), {}, {}, {}});
      if (saver_) {
        // The START task's writes, against the input checkpoint (as LangGraph saves them).
        assign_task_id(tasks_[0]);
        tasks_[0].ran = true;
        save_task_outcome(tasks_[0], /*with_checkpoint=*/true);
      }
      try {
        finish_step();
      } catch (...) {
        flush_held_puts();  // an input the graph rejects is still recorded, as in LangGraph
        throw;
      }
      save_step();
    } else {
      if (!saver_ || !loaded) {
        throw EmptyInputError(
            "Received no input for __start__" +
            (saver_ ? ": thread '" + shared_->cfg.thread_id + "' has no checkpoint to resume"
                    : std::string(": continuing a thread needs a checkpointer")));
      }
      stop_ = step_ + 1 + limit + 1;
      // Replaying an older checkpoint (not answering its interrupts): a new branch, on which
      // every task runs again and interrupts fire again.
      const bool time_travel = !shared_->cfg.checkpoint_id.empty() && !request.resume;
      if (time_travel) {
        shared_->null_resume.reset();
        resumed_writes_.clear();
        if (!shared_->parent) {
          // Subgraphs load their state from before the replayed checkpoint (for an update or
          // fork checkpoint: before the one it was made from).
          const bool derived = loaded_source_ == "update" || loaded_source_ == "fork";
          shared_->replay_before =
              derived && current_parent_ ? current_parent_->checkpoint_id : current_id_;
        }
      }
      if (request.command) {
        if (!request.resume && !request.update && request.go_to.empty())
          throw EmptyInputError("Received empty Command input");
        if (request.resume) answer_interrupts(std::move(*request.resume));
        if (request.update || !request.go_to.empty())
          apply_command(std::move(request.update), std::move(request.go_to));
      }
      if (time_travel && loaded_source_ != "update" && loaded_source_ != "fork") {
        save_checkpoint("fork");
      }
      // A resumed run does not stop again at the breakpoint it stopped at (LangGraph: nothing
      // changed since the last interrupt).
      skip_breakpoint = true;
      shared_->resuming_step.store(true);
      emit_values();
    }

    for (++step_;; ++step_) {
      check_cancelled();
      if (step_ > stop_) {
        throw GraphRecursionError("Recursion limit of " + std::to_string(limit) +
                                  " reached without hitting a stop condition. You can increase the "
                                  "limit by setting the `recursion_limit` config key.");
      }
      prepare_tasks();
      restore_task_writes();
      emit_debug_checkpoint();
      if (tasks_.empty()) break;
      if (!skip_breakpoint &&
          (hits(topo_.interrupt_before) || hits_config(shared_->cfg.interrupt_before))) {
        finish_persisting();
        return interrupted({}, /*breakpoint=*/true);
      }
      skip_breakpoint = false;
      set_managed_values();
      execute_tasks();
      if (auto error = first_error()) {
        finish_persisting();
        raise(*error);
      }
      bool stopped = false;
      if (auto pending = collect_interrupts(stopped); stopped) {
        finish_persisting();
        return interrupted(std::move(pending), /*breakpoint=*/false);
      }
      raise_parent_commands();
      finish_step();
      save_step();
      shared_->resuming_step.store(false, std::memory_order_relaxed);  // tasks start after this
      resumed_writes_.clear();
      shared_->null_resume.reset();
      if (hits(topo_.interrupt_after) || hits_config(shared_->cfg.interrupt_after)) {
        finish_persisting();
        prepare_tasks();
        return interrupted({}, /*breakpoint=*/true);
      }
    }
    finish_persisting(/*finished=*/true);
    remember_finished();
    RunResult<S> result;
    result.state = std::move(state_);
    return result;
  }

  /// A root run given a subgraph's checkpoint (time travel to a point inside a subgraph, as
  /// LangGraph's checkpoint_map does): the run replays the root checkpoint that subgraph
  /// checkpoint was made under, and the subgraphs on the way load theirs.
  void resolve_subgraph_checkpoint() {
    auto sub = saver_->get_tuple(CheckpointConfig{
        shared_->cfg.thread_id, shared_->cfg.checkpoint_ns, shared_->cfg.checkpoint_id});
    if (!sub) {
      throw Error(errc::kInvalidRun, "thread '" + shared_->cfg.thread_id +
                                         "' has no checkpoint in namespace '" +
                                         shared_->cfg.checkpoint_ns + "'");
    }
    nlohmann::json map = sub->metadata.value("parents", nlohmann::json::object());
    if (!map.is_object() || !map.contains("")) {
      throw Error(errc::kInvalidRun, "checkpoint '" + sub->config.checkpoint_id +
                                         "' of namespace '" + shared_->cfg.checkpoint_ns +
                                         "' does not record the checkpoint of its parent graph");
    }
    map[shared_->cfg.checkpoint_ns] = sub->config.checkpoint_id;
    shared_->cfg.checkpoint_ns.clear();
    shared_->cfg.checkpoint_id = map[""].get<std::string>();
    shared_->checkpoint_map = std::move(map);
    stored_ = CheckpointConfig{shared_->cfg.thread_id, "", {}};
  }

  /// The snapshot of the checkpoint `config` names (latest when it names none). For the latest
  /// checkpoint, the writes of tasks that finished are part of the values and those tasks are
  /// not in `next` (LangGraph's get_state).
  std::optional<StateSnapshot<S>> snapshot() {
    auto loaded = saver_->get_tuple(CheckpointConfig{
        shared_->cfg.thread_id, shared_->cfg.checkpoint_ns, shared_->cfg.checkpoint_id});
    if (!loaded) return std::nullopt;
    return snapshot_of(*loaded, shared_->cfg.checkpoint_id.empty());
  }

  /// The snapshot of a loaded checkpoint; `apply_finished`: apply the writes of its finished
  /// tasks (get_state of the latest checkpoint) or not (history, explicit checkpoint ids).
  StateSnapshot<S> snapshot_of(const CheckpointTuple& tuple, bool apply_finished = false) {
    restore(tuple);
    ++step_;
    prepare_tasks();
    restore_task_writes();
    StateSnapshot<S> out;
    auto add_task = [&](const Task& t) {
      TaskState ts;
      ts.id = std::string(t.info.id.data(), t.info.id.size());
      ts.name = name_of(t.node);
      bool has_writes = false;  // LangGraph: any saved write but an error or an interrupt
      nlohmann::json result = nlohmann::json::object();
      for (const auto& w : task_writes_of(t)) {
        if (w.channel == kErrorChannel) {
          ts.error = w.value.is_string() ? w.value.template get<std::string>() : w.value.dump();
          continue;
        }
        if (w.channel == kInterruptChannel) {
          for (const auto& i : w.value) {
            ts.interrupts.push_back(Interrupt{i.value("id", std::string()),
                                              i.value("value", nlohmann::json()),
                                              i.value("node", std::string())});
          }
          continue;
        }
        has_writes = true;
        if (w.channel != kGotoWrite && w.channel != kResumeChannel && w.channel != kNoWrites)
          add_result_write(result, w.channel, w.value);
      }
      if (has_writes) ts.result = std::move(result);
      if (!(apply_finished && has_writes)) out.next.push_back(name_of(t.node));
      out.interrupts.insert(out.interrupts.end(), ts.interrupts.begin(), ts.interrupts.end());
      out.tasks.push_back(std::move(ts));
    };
    if (pending_start_) {
      // An input checkpoint: START applies the input next.
      add_task(start_task(step_));
    }
    for (const Task& t : tasks_) add_task(t);
    if (apply_finished) (void)apply_writes_in_task_order();
    out.values = std::move(state_);
    out.config = tuple.config;
    out.metadata = tuple.metadata;
    out.created_at = tuple.checkpoint.ts;
    out.parent_config = tuple.parent_config;
    return out;
  }

  /// LangGraph's task result: a channel written more than once shows {"$writes": [...]}.
  static void add_result_write(nlohmann::json& result, const std::string& channel,
                               const nlohmann::json& value) {
    auto it = result.find(channel);
    if (it == result.end()) {
      result[channel] = value;
    } else if (it->is_object() && it->contains("$writes")) {
      (*it)["$writes"].push_back(value);
    } else {
      *it = nlohmann::json{{"$writes", nlohmann::json::array({*it, value})}};
    }
  }

  /// One superstep of LangGraph's bulk_update_state: each update is applied as the writes of its
  /// `as_node` (its reducers; then its edges pick what runs next) in a new checkpoint with source
  /// "update". Special `as_node`s: END with no values clears what would run next (the writes of
  /// tasks that finished still apply), END with values applies them and clears; sg::INPUT stores
  /// the values as new graph input (an "input" checkpoint: START runs next); "__copy__" copies
  /// the checkpoint as a sibling of it (source "fork"). Returns the new checkpoint's config.
  CheckpointConfig update_state(std::vector<StateUpdate<S>>&& updates) {
    if (updates.empty()) throw InvalidUpdateError("No updates provided");
    auto loaded = saver_->get_tuple(CheckpointConfig{
        shared_->cfg.thread_id, shared_->cfg.checkpoint_ns, shared_->cfg.checkpoint_id});
    if (loaded) restore(*loaded);
    // A subgraph's checkpoint keeps the parents of the one it updates (LangGraph).
    if (loaded && !shared_->cfg.checkpoint_ns.empty()) {
      shared_->parents = loaded->metadata.value("parents", nlohmann::json::object());
      run_metadata_ = nullptr;
    }
    const std::string first_as = updates[0].as_node.value_or("");
    if (first_as == "__copy__") {
      if (updates.size() > 1)
        throw InvalidUpdateError("Cannot copy checkpoint with multiple updates");
      if (!loaded) throw InvalidUpdateError("Cannot copy a non-existent checkpoint");
      // A sibling of the copied checkpoint: same parent, same values.
      stored_ = loaded->parent_config.value_or(
          CheckpointConfig{shared_->cfg.thread_id, shared_->cfg.checkpoint_ns, {}});
      ++step_;
      resumed_writes_.clear();
      if constexpr (kJsonState<S>) {
        if (pending_start_) start_input_ = update_to_json(*pending_start_);  // the copy keeps it
      }
      save_checkpoint("fork");
      finish_persisting();
      return stored_;
    }
    if (first_as == INPUT) {
      if (updates.size() > 1)
        throw InvalidUpdateError("Cannot apply multiple updates when updating as input");
      if constexpr (kJsonState<S>) start_input_ = update_to_json(updates[0].values);
      step_ = loaded ? step_ + 1 : -1;
      save_checkpoint("input");
      finish_persisting();
      return stored_;
    }
    if (first_as == END) {
      if (updates.size() > 1)
        throw InvalidUpdateError("Cannot apply multiple updates when clearing state");
      ++step_;
      if (loaded) {
        // The tasks that finished keep their writes (and their edges); the others are dropped.
        prepare_tasks();
        restore_task_writes();
        std::erase_if(tasks_, [](const Task& t) { return !t.restored; });
        if (!tasks_.empty()) finish_step();
      } else {
        tasks_.clear();
      }
      resumed_writes_.clear();
      if (!updates[0].values.empty()) {
        Update<S> values = std::move(updates[0].values);
        apply_update_to_state(std::move(values), END);
      }
      save_checkpoint("update");
      finish_persisting();
      return stored_;
    }
    std::vector<int> nodes;
    if (updates.size() == 1) {
      nodes.push_back(update_target(updates[0].as_node, loaded.has_value()));
    } else {
      for (const auto& u : updates) {
        if (!u.as_node)
          throw InvalidUpdateError("as_node is required when applying multiple updates");
        nodes.push_back(update_target(u.as_node, true));
      }
    }
    // The ids the checkpoint's next tasks would have: the update's writes are saved against the
    // checkpoint under them, so history shows them as those tasks' results (as LangGraph does).
    std::vector<std::string> task_ids(updates.size());
    if (loaded) {
      const auto pull = next_pull_;
      const auto pull_mark = pull_mark_;
      const auto deferred = deferred_;
      const auto defer_mark = defer_mark_;
      const auto push = next_push_;
      const auto joins = join_marks_;
      ++step_;
      prepare_tasks();
      std::vector<bool> used(tasks_.size(), false);
      const Task start = start_task(step_);
      for (std::size_t u = 0; u < updates.size(); ++u) {
        if (updates[u].task_id) {
          task_ids[u] = *updates[u].task_id;
          continue;
        }
        if (nodes[u] == topo_.start && pending_start_) {
          task_ids[u] = std::string(start.info.id.data(), start.info.id.size());
          continue;
        }
        for (std::size_t k = 0; k < tasks_.size(); ++k) {
          if (used[k] || tasks_[k].node != nodes[u]) continue;
          used[k] = true;
          task_ids[u] = std::string(tasks_[k].info.id.data(), tasks_[k].info.id.size());
          break;
        }
      }
      --step_;
      next_pull_ = pull;
      pull_mark_ = pull_mark;
      deferred_ = deferred;
      defer_mark_ = defer_mark;
      next_push_ = push;
      join_marks_ = joins;
    } else {
      step_ = -1;
    }
    ++step_;
    // LangGraph's update bumps a step: scheduled nodes and Sends are dropped, a waiting edge keeps
    // the sources it has seen.
    clear_schedule(/*keep_joins=*/true);
    pending_start_.reset();  // an input not applied yet is dropped too
    resumed_writes_.clear();
    tasks_.resize(updates.size());
    for (std::size_t u = 0; u < updates.size(); ++u) {
      reset_task(tasks_[u], nodes[u], -1);
      tasks_[u].output.emplace(Command<S>{std::move(updates[u].values), {}, {}, {}});
      if (loaded && !task_ids[u].empty()) {
        if constexpr (kJsonState<S>) {
          std::vector<std::pair<std::string, nlohmann::json>> writes;
          append_field_writes(tasks_[u].output->update, writes);
          if (!writes.empty()) save_writes(task_ids[u], std::move(writes));
        }
      }
    }
    finish_step();
    save_checkpoint("update");
    finish_persisting();
    return stored_;
  }

 private:
  struct Task {
    int node = 0;
    std::any arg;
    TaskInfo info;
    std::optional<Command<S>> output;
    std::exception_ptr error;
    std::vector<Interrupt> interrupts;
    std::vector<Goto> routes;
    /// Writes besides `output->update`, applied around it in this order: messages the node
    /// pushed (before), the updates of its second and later Commands (after).
    std::vector<Update<S>> pushed;
    std::vector<Update<S>> more;
    bool ran = false;
    bool restored = false;     // its writes were saved before a crash or interrupt: not run again
    bool cached = false;       // its writes came from the node cache
    bool interrupted = false;  // it stopped with interrupts (none: a subgraph's breakpoint)
  };
  struct PendingSend {
    int node;
    std::any arg;
    std::function<nlohmann::json(const std::any&)> to_json{};
    std::optional<nlohmann::json> arg_json{};  // as read from a checkpoint
  };

  [[nodiscard]] const std::string& name_of(int id) const {
    return topo_.names[static_cast<std::size_t>(id)];
  }

  void reset_task(Task& t, int node, int send_index) {
    t.node = node;
    t.info.send_index = send_index;
    t.info.has_id = false;
    t.arg.reset();
    t.info.node = name_of(node);
    t.info.step = step_;
    t.info.attempt = 1;
    t.info.resume.clear();
    t.info.interrupts_seen = 0;
    t.output.reset();
    t.error = nullptr;
    t.info.stop = stop_;
    t.info.pushed.clear();
    t.info.more_updates.reset();
    t.info.subgraph_calls = 0;
    t.interrupts.clear();
    t.routes.clear();
    t.pushed.clear();
    t.more.clear();
    t.ran = false;
    t.restored = false;
    t.cached = false;
    t.interrupted = false;
  }

  /// START as a task of `step` (the step after an input checkpoint), with its id.
  Task start_task(int step) {
    Task start;
    reset_task(start, topo_.start, -1);
    start.info.step = step;
    assign_task_id(start);
    return start;
  }

  /// The task's deterministic id (detail::assign_task_id).
  void assign_task_id(Task& t) const { detail::assign_task_id(t.info, shared_->task_id_seed()); }

  /// Builds this step's tasks from what the previous step triggered. Deferred nodes run once
  /// nothing else is left to run.
  void prepare_tasks() {
    if (next_pull_.empty() && next_push_.empty() && !deferred_.empty()) {
      for (int node : deferred_) {
        defer_mark_[static_cast<std::size_t>(node)] = 0;
        pull_mark_[static_cast<std::size_t>(node)] = 1;
      }
      next_pull_.swap(deferred_);
    }
    // The waiting edges whose target runs now are consumed.
    for (std::size_t j = 0; j < topo_.joins.size(); ++j) {
      auto& marks = join_marks_[j];
      const int target = topo_.joins[j].target;
      if (pull_mark_[static_cast<std::size_t>(target)] &&
          std::all_of(marks.begin(), marks.end(), [](char m) { return m != 0; })) {
        std::fill(marks.begin(), marks.end(), 0);
      }
    }
    tasks_.resize(next_pull_.size() + next_push_.size());
    std::sort(next_pull_.begin(), next_pull_.end(), [&](int a, int b) {
      return topo_.rank[static_cast<std::size_t>(a)] < topo_.rank[static_cast<std::size_t>(b)];
    });
    std::size_t i = 0;
    for (int node : next_pull_) {
      reset_task(tasks_[i++], node, -1);
      pull_mark_[static_cast<std::size_t>(node)] = 0;
    }
    int index = 0;
    for (auto& send : next_push_) {
      Task& t = tasks_[i++];
      reset_task(t, send.node, index++);
      t.arg = std::move(send.arg);
    }
    next_pull_.clear();
    next_push_.clear();
    // Without a checkpointer or a stream only a node may ask for its id (Context::task_id).
    if (saver_ || stream_) {
      const std::uint64_t seed = shared_->task_id_seed();
      for (auto& t : tasks_) detail::assign_task_id(t.info, seed);
    }
  }

  [[nodiscard]] bool hits(const std::vector<bool>& flags) const {
    return std::any_of(tasks_.begin(), tasks_.end(),
                       [&](const Task& t) { return flags[static_cast<std::size_t>(t.node)]; });
  }
  [[nodiscard]] bool hits_config(const std::vector<std::string>& names) const {
    if (names.empty()) return false;
    return std::any_of(tasks_.begin(), tasks_.end(), [&](const Task& t) {
      return std::any_of(names.begin(), names.end(),
                         [&](const std::string& n) { return n == "*" || n == name_of(t.node); });
    });
  }

  /// The result of a run that stops: at a breakpoint (interrupt_before/after), or because nodes
  /// called interrupt(). In the second case the writes of the step's tasks that finished are
  /// applied to the returned state (not to a checkpoint: they are saved as pending writes), and
  /// `next` leaves those tasks out.
  RunResult<S> interrupted(std::vector<Interrupt> interrupts, bool breakpoint) {
    RunResult<S> result;
    result.status = RunStatus::interrupted;
    if (breakpoint) {
      for (const Task& t : tasks_) result.next.push_back(name_of(t.node));
    } else {
      for (const Task& t : tasks_) {
        if (!t.output) result.next.push_back(name_of(t.node));
      }
      if (apply_writes_in_task_order()) emit_values();
    }
    // LangGraph's {"__interrupt__": ()} for a stop without interrupt values (a breakpoint, here
    // or in a subgraph), from the root graph only.
    if (interrupts.empty() && shared_->parent == nullptr) emit_interrupt_update({});
    result.interrupts = std::move(interrupts);
    result.state = std::move(state_);
    return result;
  }

  void check_cancelled() const {
    if (shared_->cfg.cancellation.cancelled()) throw CancelledError();
  }

  // ------------------------------------------------------------------ running tasks

  [[nodiscard]] bool is_timed(const Task& t) const {
    return def_->nodes[static_cast<std::size_t>(t.node)].options.timeout.count() > 0;
  }

  /// Runs one task to completion (with its retries) on the calling thread.
  void run_task(Task& t) {
    const auto& entry = def_->nodes[static_cast<std::size_t>(t.node)];
    std::optional<std::string> cache_key;
    if (entry.options.cache_policy && def_->options.cache) {
      cache_key = cache_key_of(t, *entry.options.cache_policy);
      if (take_cached(t, *cache_key)) return;
    }
    TaskInput<S> input{&state_, t.arg.has_value() ? &t.arg : nullptr};
    for (int attempt = 1;; ++attempt) {
      t.info.attempt = attempt;
      t.info.interrupts_seen = 0;
      t.info.pushed.clear();
      t.info.more_updates.reset();
      t.info.subgraph_calls = 0;
      try {
        Context ctx(*shared_, t.info);
        CurrentContextGuard guard(&ctx);
        t.output.emplace(entry.fn(input, ctx));
        collect_extras(t, t.info);
        t.ran = true;
        if (cache_key) put_cached(t, *cache_key, *entry.options.cache_policy);
        return;
      } catch (GraphInterrupt& gi) {
        t.interrupts = std::move(gi.interrupts);
        t.interrupted = true;
        t.ran = true;
        return;
      } catch (ParentCommand& pc) {
        // A subgraph run by this node sent a Command to its parent: this node's output.
        if (auto* command = std::any_cast<Command<S>>(&pc.command)) {
          t.output = std::move(*command);
          t.ran = true;
          return;
        }
        if (!pc.has_update) {
          t.output.emplace(Command<S>{{}, std::move(pc.go_to), {}, {}});
          t.ran = true;
          return;
        }
        t.error = std::make_exception_ptr(
            Error(errc::kInvalidRun,
                  "a Command to the parent graph with an update needs the parent's state type"));
        t.ran = true;
        shared_->step_failed.store(true);
        return;
      } catch (...) {
        auto error = std::current_exception();
        if (!should_retry(entry.options.retry, attempt, error)) {
          t.error = error;
          t.ran = true;
          shared_->step_failed.store(true);
          return;
        }
        if (shared_->cfg.cancellation.wait_for(retry_interval(*entry.options.retry, attempt))) {
          t.error = std::make_exception_ptr(CancelledError());
          t.ran = true;
          return;
        }
      }
    }
  }

  /// Whether a task of this step may run for kAsyncWriteDelay or more (or was never timed).
  [[nodiscard]] bool step_may_be_long() const {
    constexpr auto kLong =
        std::chrono::duration_cast<std::chrono::nanoseconds>(kAsyncWriteDelay).count();
    return std::any_of(tasks_.begin(), tasks_.end(), [&](const Task& t) {
      if (t.restored) return false;
      const std::uint32_t cost =
          def_->cost_ns[static_cast<std::size_t>(t.node)].load(std::memory_order_relaxed);
      return cost == kUnknownCost || cost >= kLong;
    });
  }

  /// Folds a run time of `node` into its moving average.
  void record_cost(int node, std::chrono::steady_clock::duration took) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(took).count();
    auto& cost = def_->cost_ns[static_cast<std::size_t>(node)];
    const std::uint32_t sample =
        static_cast<std::uint32_t>(std::min<std::int64_t>(ns, kUnknownCost - 1));
    const std::uint32_t old = cost.load(std::memory_order_relaxed);
    cost.store(old == kUnknownCost ? sample : old - old / 4 + sample / 4,
               std::memory_order_relaxed);
  }

  void execute_tasks() {
    shared_->step_failed.store(false, std::memory_order_relaxed);  // tasks start after this
    if (streams(StreamMode::debug)) {
      for (const Task& t : tasks_) emit_debug_start(t);
    }
    if (streams(StreamMode::updates)) {
      // Tasks whose writes were saved before are not run again; their updates are streamed as
      // cached (LangGraph replays them at the start of the step).
      for (const Task& t : tasks_) {
        if (t.restored) emit_task_finished(t, /*replayed=*/true);
      }
    }
    if (writer_) writer_->start_if_due(step_may_be_long());
    if (tasks_.size() == 1 && !is_timed(tasks_[0])) {
      if (tasks_[0].restored) return;
      if (writer_) {
        const auto began = std::chrono::steady_clock::now();
        run_task(tasks_[0]);
        record_cost(tasks_[0].node, std::chrono::steady_clock::now() - began);
      } else {
        run_task(tasks_[0]);
      }
      emit_task_finished(tasks_[0]);
      // A task that succeeded alone in its step: its writes go with the step's checkpoint.
      save_task_outcome(tasks_[0], /*with_checkpoint=*/true);
      return;
    }
    claimable_.clear();
    timed_.clear();
    for (std::size_t i = 0; i < tasks_.size(); ++i) {
      if (tasks_[i].restored) continue;
      if (is_timed(tasks_[i])) {
        timed_.emplace_back(i);
      } else {
        claimable_.push_back(i);
      }
    }
    auto batch = std::make_shared<Batch>();
    batch->count = claimable_.size();
    {
      std::lock_guard lock(shared_->mu);
      shared_->remaining = claimable_.size();
      shared_->finished.clear();
    }
    std::size_t helpers = claimable_.empty() ? 0 : claimable_.size() - 1;
    helpers = std::min(helpers, def_->pool->size());
    if (shared_->cfg.max_concurrency > 0)
      helpers = std::min(helpers, shared_->cfg.max_concurrency - 1);
    std::uint64_t predicted_ns = 0;
    for (std::size_t index : claimable_) {
      const std::uint32_t cost = def_->cost_ns[static_cast<std::size_t>(tasks_[index].node)].load(
          std::memory_order_relaxed);
      predicted_ns += cost == kUnknownCost ? kInlineStepBudgetNs : cost;
    }
    auto post_helpers = [&] {
      for (std::size_t h = 0; h < helpers; ++h) {
        def_->pool->post([batch, shared = shared_, this] {
          for (std::size_t k = batch->next.fetch_add(1); k < batch->count;
               k = batch->next.fetch_add(1)) {
            run_claimed(k, *shared);
          }
        });
      }
      helpers = 0;
    };
    // While a stream is read, the calling thread delivers events as tasks finish (LangGraph
    // streams each task's output when it completes) instead of running a task itself; it still
    // takes tasks the pool does not start (a busy pool cannot stall the run).
    const bool deliver_promptly = stream_ != nullptr && claimable_.size() > 1;
    if (deliver_promptly) {
      helpers = std::min(claimable_.size(), def_->pool->size());
      if (shared_->cfg.max_concurrency > 0)
        helpers = std::min(helpers, shared_->cfg.max_concurrency);
      post_helpers();
    } else if (predicted_ns >= kInlineStepBudgetNs) {
      post_helpers();
    }
    if (!timed_.empty()) snapshot_ = std::make_shared<const S>(state_);
    for (auto& slot : timed_) start_attempt(slot, 1);
    const auto began = std::chrono::steady_clock::now();
    if (!deliver_promptly) {
      for (std::size_t k = batch->next.fetch_add(1); k < batch->count;
           k = batch->next.fetch_add(1)) {
        run_claimed(k, *shared_);
        drain();
        // Tasks turned out slower than predicted: let the pool take the rest.
        if (helpers > 0 && std::chrono::steady_clock::now() - began >
                               std::chrono::nanoseconds(kInlineStepBudgetNs)) {
          post_helpers();
        }
      }
    }
    wait_for_batch(deliver_promptly ? batch.get() : nullptr);
    snapshot_.reset();
  }

  /// Runs the k-th claimable task (any thread) and reports it finished. Once `remaining` drops,
  /// the run may end: after that only `shared` (kept alive by the caller) may be touched.
  void run_claimed(std::size_t k, RunShared& shared) {
    const std::size_t index = claimable_[k];
    if (!shared.cfg.cancellation.cancelled()) {
      const auto began = std::chrono::steady_clock::now();
      run_task(tasks_[index]);
      record_cost(tasks_[index].node, std::chrono::steady_clock::now() - began);
    }
    {
      std::lock_guard lock(shared.mu);
      shared.finished.push_back(index);
      --shared.remaining;
    }
    shared.cv.notify_all();
  }

  /// A timed task of the current step. A finished attempt's thread is joined, so nothing it
  /// holds (the graph, its checkpointer) is released on it after the run returns; an abandoned
  /// attempt's thread is detached.
  struct TimedSlot {
    std::size_t task;
    std::shared_ptr<TimedAttempt<S>> attempt{};
    int attempt_no = 0;
    std::optional<std::chrono::steady_clock::time_point> retry_at{};
    bool done = false;
    std::thread worker{};

    explicit TimedSlot(std::size_t task_index) : task(task_index) {}
    TimedSlot(TimedSlot&&) noexcept = default;
    TimedSlot& operator=(TimedSlot&&) = delete;
    ~TimedSlot() { release_worker(); }

    /// Joins the attempt's thread when it finished, otherwise abandons and detaches it.
    void release_worker() {
      if (!worker.joinable()) return;
      int running = 0;
      if (attempt && !attempt->status.compare_exchange_strong(running, 2) &&
          attempt->status.load() == 1) {
        worker.join();
      } else {
        worker.detach();
      }
    }
  };

  void start_attempt(TimedSlot& slot, int attempt_no) {
    Task& t = tasks_[slot.task];
    auto attempt = std::make_shared<TimedAttempt<S>>();
    attempt->snapshot = snapshot_;
    attempt->arg = t.arg;
    attempt->info = t.info;
    attempt->info.attempt = attempt_no;
    attempt->deadline = std::chrono::steady_clock::now() +
                        def_->nodes[static_cast<std::size_t>(t.node)].options.timeout;
    slot.release_worker();
    slot.attempt = attempt;
    slot.attempt_no = attempt_no;
    slot.retry_at.reset();
    // A thread of its own: an abandoned attempt that never returns must not hold a pool thread
    // that other runs need.
    slot.worker = std::thread([attempt, shared = shared_, def = def_, node = t.node] {
      TaskInput<S> input{attempt->snapshot.get(),
                         attempt->arg.has_value() ? &attempt->arg : nullptr};
      try {
        Context ctx(*shared, attempt->info);
        CurrentContextGuard guard(&ctx);
        attempt->output.emplace(def->nodes[static_cast<std::size_t>(node)].fn(input, ctx));
      } catch (GraphInterrupt& gi) {
        attempt->interrupts = std::move(gi.interrupts);
        attempt->interrupted = true;
      } catch (ParentCommand& pc) {
        if (auto* command = std::any_cast<Command<S>>(&pc.command)) {
          attempt->output = std::move(*command);
        } else if (!pc.has_update) {
          attempt->output.emplace(Command<S>{{}, std::move(pc.go_to), {}, {}});
        } else {
          attempt->error = std::make_exception_ptr(
              Error(errc::kInvalidRun,
                    "a Command to the parent graph with an update needs the parent's state type"));
        }
      } catch (...) {
        attempt->error = std::current_exception();
      }
      int running = 0;
      if (attempt->status.compare_exchange_strong(running, 1)) {
        {
          std::lock_guard lock(shared->mu);
          ++shared->timed_finished;
        }
        shared->cv.notify_all();
      }
    });
  }

  /// Settles timed attempts: takes finished results, abandons late ones, schedules retries.
  /// Returns the earliest time the orchestrator must look again.
  std::chrono::steady_clock::time_point service_timed() {
    const auto now = std::chrono::steady_clock::now();
    auto wake = now + std::chrono::milliseconds(50);
    for (auto& slot : timed_) {
      if (slot.done) continue;
      Task& t = tasks_[slot.task];
      const auto& entry = def_->nodes[static_cast<std::size_t>(t.node)];
      if (slot.retry_at) {
        if (now >= *slot.retry_at) {
          start_attempt(slot, slot.attempt_no + 1);
        } else {
          wake = std::min(wake, *slot.retry_at);
          continue;
        }
      }
      auto& a = *slot.attempt;
      std::exception_ptr error;
      if (a.status.load() == 1) {
        slot.release_worker();
        if (!a.error) {
          t.output = std::move(a.output);
          t.interrupts = std::move(a.interrupts);
          t.interrupted = a.interrupted;
          t.info.resume = std::move(a.info.resume);
          if (t.output) {
            try {
              collect_extras(t, a.info);
            } catch (...) {
              t.output.reset();
              t.error = std::current_exception();
              shared_->step_failed.store(true);
            }
          }
          t.ran = true;
          slot.done = true;
          emit_task_finished(t);
          save_task_outcome(t);
          continue;
        }
        error = a.error;
      } else if (now >= a.deadline) {
        int running = 0;
        if (!a.status.compare_exchange_strong(running, 2)) continue;  // it just finished
        slot.release_worker();
        error = std::make_exception_ptr(NodeTimeoutError(
            "node '" + name_of(t.node) + "' timed out after " +
            std::to_string(entry.options.timeout.count()) + " ms at step " + std::to_string(step_) +
            " (attempt " + std::to_string(slot.attempt_no) + ")"));
      } else {
        wake = std::min(wake, a.deadline);
        continue;
      }
      if (should_retry(entry.options.retry, slot.attempt_no, error) &&
          !shared_->cfg.cancellation.cancelled()) {
        slot.retry_at = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                  retry_interval(*entry.options.retry, slot.attempt_no));
        wake = std::min(wake, *slot.retry_at);
      } else {
        t.error = error;
        t.ran = true;
        slot.done = true;
        shared_->step_failed.store(true);
        emit_task_finished(t);
        save_task_outcome(t);
      }
    }
    return wake;
  }

  void abandon_timed() {
    for (auto& slot : timed_) {
      if (slot.done) continue;
      slot.release_worker();
      tasks_[slot.task].error = std::make_exception_ptr(CancelledError());
      slot.done = true;
    }
  }

  /// Waits until the batch's claimed tasks and its timed tasks are settled, delivering stream
  /// events as they come. Cancellation abandons timed tasks; claimed tasks always finish.
  /// `help`: the batch's unclaimed tasks, which this thread takes when the pool has not started
  /// one for kHelpAfter.
  void wait_for_batch(Batch* help = nullptr) {
    constexpr auto kHelpAfter = std::chrono::milliseconds(2);
    std::size_t last_claimed = help ? help->next.load() : 0;
    auto since = std::chrono::steady_clock::now();
    for (;;) {
      drain();
      auto wake = service_timed();
      if (help) {
        const std::size_t claimed = help->next.load();
        const auto now = std::chrono::steady_clock::now();
        if (claimed != last_claimed) {
          last_claimed = claimed;
          since = now;
        } else if (claimed < help->count && now - since >= kHelpAfter) {
          if (const std::size_t k = help->next.fetch_add(1); k < help->count) {
            run_claimed(k, *shared_);
          }
          last_claimed = help->next.load();
          since = std::chrono::steady_clock::now();
          continue;
        }
        if (claimed < help->count) wake = std::min(wake, since + kHelpAfter);
      }
      if (shared_->cfg.cancellation.cancelled()) abandon_timed();
      const bool timed_open =
          std::any_of(timed_.begin(), timed_.end(), [](const TimedSlot& s) { return !s.done; });
      std::unique_lock lock(shared_->mu);
      const bool pending = !shared_->deliveries.empty() || !shared_->finished.empty();
      if (shared_->remaining == 0 && !timed_open && !pending) return;
      if (pending) continue;
      const std::size_t seen = shared_->timed_finished;
      shared_->cv.wait_until(lock, wake, [&] {
        return !shared_->deliveries.empty() || !shared_->finished.empty() ||
               shared_->timed_finished != seen || (shared_->remaining == 0 && !timed_open);
      });
    }
  }

  /// Delivers stream events queued by other threads and the completion of finished tasks
  /// (orchestrator thread).
  void drain() {
    std::vector<std::function<void()>> deliveries;
    std::vector<std::size_t> finished;
    {
      std::lock_guard lock(shared_->mu);
      deliveries.swap(shared_->deliveries);
      finished.swap(shared_->finished);
    }
    for (auto& d : deliveries) d();
    for (std::size_t i : finished) {
      emit_task_finished(tasks_[i]);
      if (tasks_[i].ran) save_task_outcome(tasks_[i]);
    }
  }

  /// The first failed task in task order (cancellation first of all).
  /// A task's own failure comes before the cancellations it caused in its siblings (which
  /// see Context::cancelled() and may throw CancelledError).
  std::optional<std::size_t> first_error() {
    if (shared_->cfg.cancellation.cancelled()) return tasks_.size();
    std::optional<std::size_t> cancelled;
    for (std::size_t i = 0; i < tasks_.size(); ++i) {
      if (!tasks_[i].error) continue;
      try {
        std::rethrow_exception(tasks_[i].error);
      } catch (const CancelledError&) {
        if (!cancelled) cancelled = i;
        continue;
      } catch (...) {
      }
      return i;
    }
    return cancelled;
  }

  /// Throws task `index`'s failure: CancelledError, NodeTimeoutError, or NodeError wrapping what
  /// the node threw (index == tasks_.size(): the run was cancelled).
  [[noreturn]] void raise(std::size_t index) {
    if (index >= tasks_.size()) throw CancelledError();
    const Task& t = tasks_[index];
    try {
      std::rethrow_exception(t.error);
    } catch (const CancelledError&) {
      throw;
    } catch (const NodeTimeoutError&) {
      throw;
    } catch (const std::exception& e) {
      throw NodeError("node '" + name_of(t.node) + "' failed at step " + std::to_string(step_) +
                          ": " + e.what(),
                      name_of(t.node), step_);
    } catch (...) {
      throw NodeError("node '" + name_of(t.node) + "' failed at step " + std::to_string(step_) +
                          ": an exception not derived from std::exception",
                      name_of(t.node), step_);
    }
  }

  /// A node returned Command{.graph = PARENT}: the command leaves this (sub)graph's run.
  void raise_parent_commands() {
    for (Task& t : tasks_) {
      if (!t.output || t.output->graph.empty()) continue;
      if (t.output->graph != PARENT) {
        throw Error(errc::kInvalidRun, "node '" + name_of(t.node) +
                                           "' returned a Command for unknown graph '" +
                                           t.output->graph + "' (use sg::PARENT)");
      }
      Command<S> command = std::move(*t.output);
      command.graph.clear();
      std::vector<Goto> go_to = command.go_to;
      const bool has_update = !command.update.empty();
      throw ParentCommand{std::any(std::move(command)), std::move(go_to), has_update};
    }
  }

  /// The interrupts of the step's tasks; `any` tells whether a task was interrupted (a
  /// subgraph's breakpoint interrupts its node without an interrupt value).
  std::vector<Interrupt> collect_interrupts(bool& any) {
    std::vector<Interrupt> out;
    any = false;
    for (Task& t : tasks_) {
      any = any || t.interrupted;
      for (auto& i : t.interrupts) out.push_back(i);
    }
    return out;
  }

  // ------------------------------------------------------------------ applying a step

  /// Applies the step's writes, picks the next tasks and streams the step.
  void finish_step() {
    const bool single = tasks_.size() == 1;
    if (!single) {
      // A router reads the state as its own node left it: the step's snapshot plus that node's
      // writes, not its siblings'.
      for (Task& t : tasks_) {
        if (topo_.branches_of[static_cast<std::size_t>(t.node)].empty()) continue;
        S local = state_;
        for (const auto& u : t.pushed) apply_update(local, Update<S>(u), name_of(t.node));
        apply_update(local, Update<S>(t.output->update), name_of(t.node));
        for (const auto& u : t.more) apply_update(local, Update<S>(u), name_of(t.node));
        route(t, local);
      }
    }
    const bool wrote = apply_writes_in_task_order();
    if (single) route(tasks_[0], state_);
    if (wrote) emit_values();
    schedule_next();
  }

  /// Applies the writes of the step's tasks that have an output, field by field in task order
  /// (a task's pushed messages, then its update, then its further Commands' updates). Returns
  /// whether any field was written. Writes to managed values are ignored.
  bool apply_writes_in_task_order() {
    bool wrote = false;
    names_.clear();
    for_each_field<S>([&](auto i) {
      using R = typename field_t<S, i>::reducer_type;
      if constexpr (kManagedValue<typename field_t<S, i>::value_type>) return;
      auto& writes = std::get<i>(scratch_);
      writes.clear();
      names_.clear();
      auto add = [&](Task& t, Update<S>& u) {
        if (auto& slot = u.template slot<i>()) {
          writes.push_back(&*slot);
          names_.push_back(name_of(t.node));
        }
      };
      for (Task& t : tasks_) {
        if (!t.output) continue;
        for (auto& u : t.pushed) add(t, u);
        add(t, t.output->update);
        for (auto& u : t.more) add(t, u);
      }
      if (writes.empty()) return;
      changed_[i] = 1;
      wrote = true;
      if constexpr (CachedReducer<R>) {
        apply_writes<R>(field_reducer<S, i>(), field_value<i>(state_),
                        std::span<Write<R>* const>(writes), names_, field_t<S, i>::name,
                        &std::get<i>(caches_));
      } else {
        apply_writes<R>(field_reducer<S, i>(), field_value<i>(state_),
                        std::span<Write<R>* const>(writes), names_, field_t<S, i>::name);
      }
    });
    return wrote;
  }

  /// Evaluates the task's routers on `view`.
  void route(Task& t, const S& view) {
    for (int b : topo_.branches_of[static_cast<std::size_t>(t.node)]) {
      const Router<S>& router = def_->routers[static_cast<std::size_t>(b)];
      const std::size_t first = t.routes.size();
      try {
        Context ctx(*shared_, t.info);
        router.fn(view, ctx, t.routes);
      } catch (const std::exception& e) {
        throw NodeError("the conditional edge after node '" + name_of(t.node) +
                            "' failed at step " + std::to_string(step_) + ": " + e.what(),
                        name_of(t.node), step_);
      }
      if (router.path_map.empty()) continue;
      for (std::size_t r = first; r < t.routes.size(); ++r) {
        if (t.routes[r].is_send()) continue;
        auto it = router.path_map.find(t.routes[r].node());
        if (it == router.path_map.end()) {
          throw Error(errc::kInvalidRun, "the conditional edge after node '" + name_of(t.node) +
                                             "' returned '" + t.routes[r].node() +
                                             "', which is not in its path map");
        }
        t.routes[r] = Goto(it->second);
      }
    }
  }

  void trigger(int node) {
    if (node == Topology::kEnd) return;
    if (node != topo_.start && def_->nodes[static_cast<std::size_t>(node)].options.defer) {
      if (!defer_mark_[static_cast<std::size_t>(node)]) {
        defer_mark_[static_cast<std::size_t>(node)] = 1;
        deferred_.push_back(node);
      }
      return;
    }
    if (!pull_mark_[static_cast<std::size_t>(node)]) {
      pull_mark_[static_cast<std::size_t>(node)] = 1;
      next_pull_.push_back(node);
    }
  }

  void follow(Goto& go, std::string_view via) {
    if (go.is_send()) {
      Send& send = go.send();
      const int node = topo_.resolve(send.node, via);
      if (node == Topology::kEnd) throw Error(errc::kInvalidRun, std::string(via) + " sent to END");
      next_push_.push_back(
          PendingSend{node, std::move(send.arg), std::move(send.arg_to_json), std::nullopt});
      return;
    }
    const int node = topo_.resolve(go.node(), via);
    if (node != Topology::kEnd && topo_.send_only[static_cast<std::size_t>(node)]) {
      throw Error(errc::kInvalidRun,
                  std::string(via) + " routed to '" + go.node() +
                      "', which takes a custom input and can only be started by a Send");
    }
    trigger(node);
  }

  void schedule_next() {
    for (Task& t : tasks_) {
      for (int s : topo_.successors[static_cast<std::size_t>(t.node)]) trigger(s);
      if (!t.routes.empty()) {
        const std::string via = "the conditional edge after node '" + name_of(t.node) + "'";
        for (Goto& go : t.routes) follow(go, via);
      }
      if (t.output && !t.output->go_to.empty()) {
        const std::string via = "the Command of node '" + name_of(t.node) + "'";
        for (Goto& go : t.output->go_to) follow(go, via);
      }
      for (int j : topo_.joins_of[static_cast<std::size_t>(t.node)]) {
        const auto& join = topo_.joins[static_cast<std::size_t>(j)];
        auto& marks = join_marks_[static_cast<std::size_t>(j)];
        for (std::size_t s = 0; s < join.sources.size(); ++s) {
          if (join.sources[s] == t.node) marks[s] = 1;
        }
        // A full barrier stays full until its target runs (prepare_tasks consumes it), so an
        // update_state in between keeps the target scheduled (LangGraph's NamedBarrierValue).
        if (std::all_of(marks.begin(), marks.end(), [](char m) { return m != 0; }))
          trigger(join.target);
      }
    }
  }

  // ------------------------------------------------------------------ persistence

  [[nodiscard]] CheckpointConfig current_config() const {
    return CheckpointConfig{shared_->cfg.thread_id, shared_->cfg.checkpoint_ns, current_id_};
  }

  /// Forgets what was scheduled to run next. `keep_joins`: waiting edges keep the sources they
  /// have seen and deferred nodes stay triggered (LangGraph's barrier and "after finish"
  /// channels survive a new input and update_state).
  void clear_schedule(bool keep_joins = false) {
    for (int node : next_pull_) pull_mark_[static_cast<std::size_t>(node)] = 0;
    next_pull_.clear();
    next_push_.clear();
    if (!keep_joins) {
      for (int node : deferred_) defer_mark_[static_cast<std::size_t>(node)] = 0;
      deferred_.clear();
    }
    for (std::size_t j = 0; j < topo_.joins.size(); ++j) {
      auto& marks = join_marks_[j];
      if (!keep_joins) {
        std::fill(marks.begin(), marks.end(), 0);
      } else if (std::all_of(marks.begin(), marks.end(), [](char m) { return m != 0; })) {
        trigger(topo_.joins[j].target);  // a full barrier still schedules its target
      }
    }
  }

  /// Whether this run's thread can be kept in (and taken from) the graph's recent threads: the
  /// graph's own checkpointer, the root namespace, the latest checkpoint.
  [[nodiscard]] bool recent_applies() const {
    return def_->recent && saver_ == def_->options.checkpointer.get() &&
           shared_->cfg.checkpoint_ns.empty();
  }

  /// Restores the thread as the last run on it left it, if that is still its latest checkpoint.
  bool restore_recent() {
    if (!recent_applies() || !shared_->cfg.checkpoint_id.empty() || streams(StreamMode::debug))
      return false;
    const std::string& thread = shared_->cfg.thread_id;
    if (!def_->recent->contains(thread)) return false;
    const auto latest = saver_->latest_checkpoint_id(thread, shared_->cfg.checkpoint_ns);
    auto finished = def_->recent->take(thread);
    if (!finished || !latest || finished->checkpoint_id != *latest) return false;
    state_ = std::move(finished->state);
    caches_ = std::move(finished->caches);
    versions_ = std::move(finished->versions);
    versions_seen_ = std::move(finished->versions_seen);
    step_ = finished->step;
    clear_schedule();
    pending_start_.reset();
    after_restore(finished->checkpoint_id);
    return true;
  }

  /// Keeps the thread's final state for the next run (after a run that finished normally). The
  /// last use of the run's bookkeeping: it moves away; the state is copied (the run returns it).
  void remember_finished() {
    if (!recent_applies() || pending_start_ || stored_.checkpoint_id.empty()) return;
    if constexpr (std::is_copy_constructible_v<S>) {
      def_->recent->put(
          shared_->cfg.thread_id,
          FinishedThread<S>{stored_.checkpoint_id, state_, std::move(caches_), std::move(versions_),
                            std::move(versions_seen_), saved_step_});
    }
  }

  /// What both restores set: version bookkeeping and the checkpoint the run continues from.
  void after_restore(const std::string& checkpoint_id) {
    max_version_ = 0;
    for (const auto& [ch, v] : versions_) max_version_ = std::max(max_version_, v);
    stored_through_ = max_version_;
    for_each_field<S>([&](auto i) {
      auto v = versions_.find(std::string(field_t<S, i>::name));
      stored_version_[i] = v != versions_.end() ? v->second : -1;
    });
    stored_ = CheckpointConfig{shared_->cfg.thread_id, shared_->cfg.checkpoint_ns, checkpoint_id};
    current_id_ = checkpoint_id;
    saved_step_ = step_;
    loaded_source_ = "loop";
    resumed_writes_.clear();
    null_writes_.clear();
  }

  /// Loads a checkpoint into the run: state, what runs next, versions, saved writes.
  void restore(const CheckpointTuple& tuple) {
    if constexpr (kJsonState<S>) {
      const auto& values = tuple.checkpoint.channel_values;
      state_ = S{};
      versions_ = tuple.checkpoint.channel_versions;
      versions_seen_ = tuple.checkpoint.versions_seen;
      max_version_ = 0;
      for (const auto& [ch, v] : versions_) max_version_ = std::max(max_version_, v);
      stored_through_ = max_version_;
      step_ = tuple.metadata.value("step", -1);
      for_each_field<S>([&](auto i) {
        const std::string name(field_t<S, i>::name);
        auto it = values.find(name);
        if (it != values.end()) {
          try {
            field_value<i>(state_) = it->template get<typename field_t<S, i>::value_type>();
          } catch (const std::exception& e) {
            throw CheckpointError(errc::kCheckpointCorrupt,
                                  "thread '" + tuple.config.thread_id + "', checkpoint '" +
                                      tuple.config.checkpoint_id + "': field '" + name +
                                      "' does not fit the state: " + e.what());
          }
        }
        using R = typename field_t<S, i>::reducer_type;
        if constexpr (CachedReducer<R>) {
          auto& cache = std::get<i>(caches_);
          cache.overwritten(field_value<i>(state_));
          if constexpr (TrackedListReducer<R>) cache.rebase(field_value<i>(state_));
        }
        auto v = versions_.find(name);
        stored_version_[i] = v != versions_.end() ? v->second : -1;
      });
      clear_schedule();
      pending_start_.reset();
      for (const auto& [ch, v] : versions_) {
        if (ch.rfind(kBranchPrefix, 0) == 0) {
          const std::string node = ch.substr(kBranchPrefix.size());
          auto it = topo_.ids.find(node);
          if (it == topo_.ids.end() || it->second == topo_.start) {
            throw CheckpointError(errc::kCheckpointInvalid,
                                  "thread '" + tuple.config.thread_id + "', checkpoint '" +
                                      tuple.config.checkpoint_id + "' schedules node '" + node +
                                      "', which this graph does not have");
          }
          trigger(it->second);
        } else if (ch == kTasksChannel) {
          for (const auto& send :
               values.value(std::string(kTasksChannel), nlohmann::json::array())) {
            const int node =
                topo_.resolve(send.value("node", std::string()), "a checkpoint's pending Send");
            next_push_.push_back(PendingSend{node,
                                             def_->nodes[static_cast<std::size_t>(node)].read_arg(
                                                 send.value("arg", nlohmann::json())),
                                             {},
                                             send.value("arg", nlohmann::json())});
          }
        } else if (ch.rfind(kJoinPrefix, 0) == 0) {
          for (std::size_t j = 0; j < topo_.joins.size(); ++j) {
            if (def_->join_channels[j] != ch) continue;
            for (const auto& seen : values.value(ch, nlohmann::json::array())) {
              for (std::size_t k = 0; k < topo_.joins[j].sources.size(); ++k) {
                if (name_of(topo_.joins[j].sources[k]) == seen) join_marks_[j][k] = 1;
              }
            }
          }
        } else if (ch == kStartChannel) {
          auto it = values.find(std::string(kStartChannel));
          if (it != values.end()) pending_start_ = update_from_json<S>(*it);
        }
      }
      stored_ = tuple.config;
      current_id_ = tuple.config.checkpoint_id;
      saved_step_ = step_;
      loaded_source_ = tuple.metadata.value("source", std::string());
      current_meta_ = tuple.metadata;
      current_parent_ = tuple.parent_config;
      above_thread_versions_ = !shared_->cfg.checkpoint_id.empty();
      resumed_writes_.clear();
      shared_->null_resume.reset();
      null_writes_.clear();
      std::vector<const PendingWrite*> null_writes;
      for (const auto& w : tuple.pending_writes) {
        if (w.task_id == kRunTaskId) {
          null_writes.push_back(&w);
          if (!special_write_index(w.channel)) null_writes_.emplace_back(w.channel, w.value);
        } else {
          resumed_writes_[w.task_id].push_back(w);
        }
      }
      apply_null_writes(null_writes);
    }
  }

  /// Applies the writes a resuming Command saved against the checkpoint (LangGraph's NULL task
  /// writes): its update, its gotos and its resume value.
  void apply_null_writes(const std::vector<const PendingWrite*>& writes) {
    if constexpr (kJsonState<S>) {
      for (const PendingWrite* w : writes) {
        if (w->channel == kResumeChannel) {
          shared_->null_resume = w->value;
        } else if (w->channel == kGotoWrite) {
          for (const auto& go : w->value) {
            Goto target = goto_from_json(go);
            follow(target, "a saved Command");
          }
        } else if (w->channel != kBreakpointWrite) {
          Update<S> update;
          detail::visit_field_named<S>(w->channel, [&](auto i) {
            update.template slot<i>() =
                write_from_json<typename field_t<S, i>::reducer_type>(w->value);
          });
          apply_update_to_state(std::move(update), INPUT);
        }
      }
    }
  }

  /// Applies `update` to the run's state outside a superstep (a Command's update, update_state
  /// as END): the fields it sets are stored with the next checkpoint.
  void apply_update_to_state(Update<S>&& update, std::string_view writer) {
    for_each_field<S>([&](auto i) {
      if constexpr (kManagedValue<typename field_t<S, i>::value_type>) {
        update.template slot<i>().reset();
      } else if (update.template slot<i>()) {
        changed_[i] = 1;
      }
    });
    apply_update(state_, std::move(update), writer);
    for_each_field<S>([&](auto i) {
      using R = typename field_t<S, i>::reducer_type;
      if constexpr (CachedReducer<R>) {
        if (changed_[i]) std::get<i>(caches_).overwritten(field_value<i>(state_));
      }
    });
  }

  [[nodiscard]] const std::vector<PendingWrite>& task_writes_of(const Task& t) const {
    static const std::vector<PendingWrite> none;
    auto it = resumed_writes_.find(std::string(t.info.id.data(), t.info.id.size()));
    return it == resumed_writes_.end() ? none : it->second;
  }

  /// Applies the writes saved for this step's tasks: finished tasks are not run again, and
  /// interrupted tasks get the resume values their interrupt() calls returned before.
  void restore_task_writes() {
    if (!saver_ || resumed_writes_.empty()) return;
    for (Task& t : tasks_) {
      const auto& writes = task_writes_of(t);
      bool finished = false;
      for (const auto& w : writes) {
        if (is_finished_write(w.channel)) finished = true;
        if (w.channel == kResumeChannel && w.value.is_array())
          t.info.resume = w.value.template get<std::vector<nlohmann::json>>();
      }
      if (finished) {
        restore_output(t, writes);
        t.restored = true;
      }
    }
  }

  /// Number of interrupts of the checkpoint that no resume value answered yet (LangGraph's
  /// hanging interrupts).
  [[nodiscard]] std::size_t hanging_interrupts() const {
    std::size_t count = 0;
    for (const auto& [task_id, writes] : resumed_writes_) {
      const bool resumed = std::any_of(writes.begin(), writes.end(), [](const PendingWrite& w) {
        return w.channel == kResumeChannel;
      });
      if (resumed) continue;
      for (const auto& w : writes) {
        if (w.channel == kInterruptChannel && w.value.is_array()) count += w.value.size();
      }
    }
    return count;
  }

  /// A Command's resume value: a map from interrupt ids to values answers those interrupts (in
  /// subgraphs too); any other value answers the first interrupt() call of the resumed tasks.
  void answer_interrupts(nlohmann::json resume) {
    const bool as_map = resume.is_object() && !resume.empty() &&
                        std::all_of(resume.items().begin(), resume.items().end(),
                                    [](const auto& kv) { return is_interrupt_id(kv.key()); });
    if (as_map) {
      shared_->resume_map = std::move(resume);
      return;
    }
    if (hanging_interrupts() > 1) {
      throw Error(errc::kInvalidRun,
                  "When there are multiple pending interrupts, you must specify the interrupt id "
                  "when resuming. Docs: "
                  "https://docs.langchain.com/oss/python/langgraph/"
                  "add-human-in-the-loop#resume-multiple-interrupts-with-one-invocation.");
    }
    save_writes(std::string(kRunTaskId), {{std::string(kResumeChannel), resume}});
    shared_->null_resume = std::move(resume);
  }

  /// Interrupt ids are 16 lowercase hex digits.
  [[nodiscard]] static bool is_interrupt_id(std::string_view key) {
    return key.size() == 16 && std::all_of(key.begin(), key.end(), [](char c) {
             return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
  }

  /// A saved goto: a node name, or {"node", "arg"} for a Send.
  Goto goto_from_json(const nlohmann::json& go) const {
    if (go.is_string()) return Goto(go.get<std::string>());
    const std::string node = go.value("node", std::string());
    const int id = topo_.resolve(node, "a saved Send");
    return Goto(Send(node, def_->nodes[static_cast<std::size_t>(id)].read_arg(
                               go.value("arg", nlohmann::json()))));
  }

  /// Rebuilds a finished task's output from its saved (or cached) writes. A field written twice
  /// (several Commands) goes to `more`.
  void restore_output(Task& t, const std::vector<PendingWrite>& writes) {
    if constexpr (kJsonState<S>) {
      Command<S> command;
      for (const auto& w : writes) {
        if (w.channel == kGotoWrite) {
          for (const auto& go : w.value) command.go_to.push_back(goto_from_json(go));
          continue;
        }
        if (!is_finished_write(w.channel) || w.channel == kNoWrites) continue;
        detail::visit_field_named<S>(w.channel, [&](auto i) {
          auto& slot = command.update.template slot<i>();
          auto write = write_from_json<typename field_t<S, i>::reducer_type>(w.value);
          if (!slot) {
            slot = std::move(write);
            return;
          }
          Update<S> extra;
          extra.template slot<i>() = std::move(write);
          t.more.push_back(std::move(extra));
        });
      }
      t.output = std::move(command);
      t.ran = true;
    }
  }

  /// The writes of a finished task as saved: its fields (pushed messages, update, further
  /// Commands, in that order) and its gotos.
  /// `for_saver`: messages appended to a message list go pre-encoded (saved_write_json), for
  /// savers that take deltas.
  /// `appendable`: see output_writes.
  void append_field_writes(const Update<S>& update,
                           std::vector<std::pair<std::string, nlohmann::json>>& writes,
                           bool for_saver = false, bool appendable = false) {
    if constexpr (kJsonState<S>) {
      for_each_field<S>([&](auto i) {
        using R = typename field_t<S, i>::reducer_type;
        if constexpr (!kManagedValue<typename field_t<S, i>::value_type>) {
          if (const auto& slot = update.template slot<i>()) {
            if (appendable) {
              if (auto k = pure_append<i>(*slot)) {
                nlohmann::json appended(nlohmann::json::value_t::object);
                appended.get_ref<nlohmann::json::object_t&>().emplace(std::string(kAppendedWrite),
                                                                      *k);
                writes.emplace_back(std::string(field_t<S, i>::name), std::move(appended));
                return;
              }
              if constexpr (kSingleWriter<R>) {
                // A last value: what the step's checkpoint stores for the field.
                if (slot->index() == 0) {
                  nlohmann::json stored(nlohmann::json::value_t::object);
                  stored[std::string(kStoredWrite)] = write_to_json<R>(*slot);
                  writes.emplace_back(std::string(field_t<S, i>::name), std::move(stored));
                  return;
                }
              }
            }
            writes.emplace_back(std::string(field_t<S, i>::name),
                                for_saver ? saved_write_json<R>(*slot) : write_to_json<R>(*slot));
          }
        }
      });
    }
  }

  /// The number of messages a write of message-list field I appends at the end of the list,
  /// when that is all it does (new ids, no removals; checked before it is applied); nullopt
  /// otherwise.
  template <std::size_t I, class W>
  std::optional<std::size_t> pure_append(const W& write) {
    using R = typename field_t<S, I>::reducer_type;
    if constexpr (TrackedListReducer<R> &&
                  std::is_same_v<typename R::update_type, ListUpdate<Message>> &&
                  requires(typename R::Cache & c, const typename R::value_type& list,
                           const typename R::update_type& u) { c.appended_count(list, u); }) {
      auto& cache = std::get<I>(caches_);
      const auto* update = std::get_if<0>(&write);
      if (!update || !cache.track) return std::nullopt;
      return cache.appended_count(field_value<I>(state_), *update);
    } else {
      (void)write;
      return std::nullopt;
    }
  }
  /// `with_checkpoint`: the writes go with the step's checkpoint, which the task alone produces:
  /// messages it only appends are sent as {"$appended": k} (kAppendedWrite) to savers that
  /// take that, instead of being encoded a second time.
  std::vector<std::pair<std::string, nlohmann::json>> output_writes(const Task& t,
                                                                    bool for_saver = false,
                                                                    bool with_checkpoint = false) {
    std::vector<std::pair<std::string, nlohmann::json>> writes;
    const bool appendable = for_saver && with_checkpoint && t.pushed.empty() && t.more.empty() &&
                            durability_ != Durability::exit && saver_deltas_;
    for (const auto& u : t.pushed) append_field_writes(u, writes, for_saver);
    append_field_writes(t.output->update, writes, for_saver, appendable);
    for (const auto& u : t.more) append_field_writes(u, writes, for_saver);
    if (!t.output->go_to.empty())
      writes.emplace_back(std::string(kGotoWrite), gotos_json(t.output->go_to));
    if (writes.empty()) writes.emplace_back(std::string(kNoWrites), nullptr);
    return writes;
  }
  nlohmann::json gotos_json(const std::vector<Goto>& go_to) const {
    nlohmann::json gotos = nlohmann::json::array();
    for (const auto& go : go_to) {
      if (!go.is_send()) {
        gotos.push_back(go.node());
        continue;
      }
      auto& send = const_cast<Goto&>(go).send();
      gotos.push_back(
          {{"node", send.node}, {"arg", send_arg_json(send.node, send.arg, send.arg_to_json)}});
    }
    return gotos;
  }

  /// Saves what a finished task produced against the current checkpoint: its writes, its
  /// interrupts (with the resume values it used), or its error.
  void save_task_outcome(const Task& t, bool with_checkpoint = false) {
    if (saver_ && !t.restored) save_task_outcome_now(t, with_checkpoint);
  }
  void save_task_outcome_now(const Task& t, bool with_checkpoint) {
    if constexpr (kJsonState<S>) {
      std::vector<std::pair<std::string, nlohmann::json>> writes;
      if (t.error) {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(t.error);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        writes.emplace_back(std::string(kErrorChannel), what);
      } else if (!t.interrupts.empty()) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& i : t.interrupts)
          list.push_back({{"id", i.id}, {"value", i.value}, {"node", i.node}});
        writes.emplace_back(std::string(kInterruptChannel), std::move(list));
      } else if (t.output) {
        writes = output_writes(t, /*for_saver=*/saver_deltas_, with_checkpoint);
      } else {
        return;
      }
      if (!t.info.resume.empty())
        writes.emplace_back(std::string(kResumeChannel), nlohmann::json(t.info.resume));
      save_writes(std::string(t.info.id.data(), t.info.id.size()), std::move(writes),
                  with_checkpoint && t.output.has_value());
    }
  }

  /// Moves what a node produced besides its Command into the task: pushed messages (as updates
  /// of their fields) and the updates and gotos of its further Commands. Throws sg::Error for a
  /// message pushed to a field that does not hold messages.
  void collect_extras(Task& t, TaskInfo& info) const {
    if (!info.pushed.empty() || info.more_updates.has_value()) collect_extras_now(t, info);
  }
  void collect_extras_now(Task& t, TaskInfo& info) const {
    for (auto& [field, message] : info.pushed) {
      Update<S> u;
      detail::visit_field_named<S>(field, [&](auto i) {
        using U = typename field_t<S, i>::update_type;
        if constexpr (std::is_constructible_v<U, Message>) {
          u.template slot<i>().emplace(std::in_place_index<0>, U(std::move(message)));
        } else {
          throw Error(errc::kInvalidArgument,
                      "push_message: state field '" + field + "' does not hold messages");
        }
      });
      t.pushed.push_back(std::move(u));
    }
    info.pushed.clear();
    if (info.more_updates.has_value()) {
      auto* more = std::any_cast<std::vector<Command<S>>>(&info.more_updates);
      if (more) {
        for (auto& c : *more) {
          t.more.push_back(std::move(c.update));
          for (auto& go : c.go_to) t.output->go_to.push_back(std::move(go));
        }
      }
      info.more_updates.reset();
    }
  }

  // ------------------------------------------------------------------ node cache

  /// The cache key of a task's input under its node's policy.
  std::string cache_key_of(const Task& t, const CachePolicy& policy) const {
    if constexpr (kJsonState<S>) {
      nlohmann::json input;
      if (t.arg.has_value()) {
        input = send_arg_json(name_of(t.node), t.arg, {});
      } else {
        input = state_to_json(state_);
        for_each_field<S>([&](auto i) {
          if constexpr (kManagedValue<typename field_t<S, i>::value_type>)
            input.erase(std::string(field_t<S, i>::name));
        });
      }
      return policy.key ? policy.key(input) : input.dump();
    } else {
      throw Error(errc::kInvalidRun,
                  "node '" + name_of(t.node) +
                      "' has a cache policy, which needs a state whose fields convert to JSON");
    }
  }

  /// Takes a task's writes from the cache; false on a miss.
  bool take_cached(Task& t, const std::string& key) {
    auto hit = def_->options.cache->get(name_of(t.node), key);
    if (!hit || !hit->is_array()) return false;
    std::vector<PendingWrite> writes;
    for (const auto& w : *hit) {
      writes.push_back(PendingWrite{{}, w.at(0).template get<std::string>(), w.at(1)});
    }
    restore_output(t, writes);
    t.cached = true;
    return true;
  }

  void put_cached(const Task& t, const std::string& key, const CachePolicy& policy) {
    nlohmann::json entry = nlohmann::json::array();
    for (auto& [channel, value] : output_writes(t))
      entry.push_back(nlohmann::json::array({channel, std::move(value)}));
    def_->options.cache->set(name_of(t.node), key, std::move(entry), policy.ttl);
  }

  nlohmann::json send_arg_json(
      const std::string& node, const std::any& arg,
      const std::function<nlohmann::json(const std::any&)>& to_json) const {
    if constexpr (kJsonState<S>) {
      if (const S* state = std::any_cast<S>(&arg)) return state_to_json(*state);
    }
    if (to_json) return to_json(arg);
    throw Error(errc::kInvalidRun,
                "the argument of a Send to node '" + node +
                    "' cannot be checkpointed: its type does not convert to JSON");
  }

  /// Saves writes against the current checkpoint. `with_checkpoint`: they go with the next
  /// checkpoint, in its write (the writes of a task whose step stores a checkpoint right after).
  /// Durability "exit" keeps them for the end (only those of the checkpoint stored then count).
  void save_writes(std::string task_id, std::vector<std::pair<std::string, nlohmann::json>> writes,
                   bool with_checkpoint = false) {
    if (durability_ == Durability::exit) {
      exit_writes_.emplace_back(current_id_, std::move(task_id), std::move(writes));
      return;
    }
    if (with_checkpoint) {
      held_writes_.push_back(TaskWrites{std::move(task_id), std::move(writes)});
      return;
    }
    auto job = [saver = saver_, config = current_config(), task_id = std::move(task_id),
                writes = std::move(writes)] { saver->put_writes(config, writes, task_id); };
    if (writer_) {
      writer_->submit(std::move(job));
    } else {
      job();
    }
  }

  /// After a superstep: a "loop" checkpoint.
  void save_step() { save_checkpoint("loop"); }

  /// Before the first checkpoint on top of an explicitly chosen (maybe older) checkpoint: new
  /// versions must exceed every version of the thread, or the new branch would overwrite values
  /// that the other branch's checkpoints still use. The newest checkpoint holds the highest.
  void raise_to_thread_versions() {
    above_thread_versions_ = false;
    ListOptions newest;
    newest.thread_id = shared_->cfg.thread_id;
    newest.checkpoint_ns = shared_->cfg.checkpoint_ns;
    newest.limit = 1;
    newest.include_values = false;
    for (const auto& t : saver_->list(newest)) {
      for (const auto& [ch, v] : t.checkpoint.channel_versions)
        max_version_ = std::max(max_version_, v);
    }
  }

  /// Records a checkpoint of the run's current state (stored now, in the background, or at the
  /// end, by durability).
  void save_checkpoint(const char* source) {
    if (!saver_) return;
    if constexpr (kJsonState<S>) {
      if (above_thread_versions_) raise_to_thread_versions();
      // Every channel written since the last checkpoint gets the new version v (so the
      // channels of a stored checkpoint's put are those above stored_through_).
      const std::int64_t v = ++max_version_;
      for_each_field<S>([&](auto i) {
        if (!changed_[i]) return;
        versions_[std::string(field_t<S, i>::name)] = v;
        changed_[i] = 0;
      });
      // The triggers of the next step (branches, joins, sends, the input) get v and earlier
      // triggers go; entries that stay are updated in place.
      for (int node : next_pull_)
        versions_[def_->branch_channels[static_cast<std::size_t>(node)]] = v;
      for (int node : deferred_)
        versions_[def_->branch_channels[static_cast<std::size_t>(node)]] = v;
      if (!next_push_.empty()) versions_[std::string(kTasksChannel)] = v;
      for (std::size_t j = 0; j < topo_.joins.size(); ++j) {
        if (std::any_of(join_marks_[j].begin(), join_marks_[j].end(),
                        [](char m) { return m != 0; })) {
          versions_[def_->join_channels[j]] = v;
        }
      }
      // Only an input checkpoint holds the input (with durability "exit" it may never be stored,
      // and the next checkpoint must not carry it).
      const bool input = std::string_view(source) == "input" || std::string_view(source) == "fork";
      if (input && start_input_) versions_[std::string(kStartChannel)] = v;
      std::erase_if(versions_, [v](const auto& kv) {
        const std::string& ch = kv.first;
        return kv.second != v &&
               (ch.rfind(kBranchPrefix, 0) == 0 || ch.rfind(kJoinPrefix, 0) == 0 ||
                ch == kTasksChannel || ch == kStartChannel);
      });
      for (const Task& t : tasks_) {
        // START counts too (LangGraph records it: update_state then knows the input came last);
        // like every node it is recorded under its own trigger, which stores compactly.
        if (!t.ran) continue;
        const std::string& trigger = def_->branch_channels[static_cast<std::size_t>(t.node)];
        auto& seen = versions_seen_[name_of(t.node)];
        if (seen.size() == 1 && seen.begin()->first == trigger) {
          seen.begin()->second = v;
        } else {
          seen = ChannelVersions{{trigger, v}};
        }
      }
      Checkpoint cp;
      cp.id = new_checkpoint_id(step_);
      cp.ts = iso_timestamp_now();
      cp.channel_versions = versions_;
      cp.versions_seen = versions_seen_;
      current_id_ = cp.id;
      saved_step_ = step_;
      nlohmann::json metadata = run_metadata();
      auto& fields = metadata.get_ref<nlohmann::json::object_t&>();
      fields.emplace("source", source);
      fields.emplace("step", step_);
      if (streams(StreamMode::debug)) {
        current_meta_ = metadata;
        current_parent_ =
            stored_.checkpoint_id.empty() ? std::nullopt : std::optional<CheckpointConfig>(stored_);
      }
      pending_checkpoint_ = std::make_pair(std::move(cp), std::move(metadata));
      if (durability_ != Durability::exit) store_pending_checkpoint();
    }
  }

  /// The metadata every checkpoint of this run shares, built once: "parents", "run_id", and
  /// (LangGraph's get_checkpoint_metadata) the run's metadata and configurable values (strings,
  /// numbers, booleans; not keys starting with "__", naming the checkpoint, "source" or "step").
  const nlohmann::json& run_metadata() {
    if (run_metadata_.is_null()) {
      nlohmann::json metadata(nlohmann::json::value_t::object);
      metadata["parents"] =
          shared_->parents.is_null() ? nlohmann::json::object() : shared_->parents;
      metadata["run_id"] = run_id_;
      for (const nlohmann::json* values : {&shared_->cfg.metadata, &shared_->cfg.configurable}) {
        if (!values->is_object()) continue;
        for (const auto& [key, value] : values->items()) {
          if (!value.is_primitive() || value.is_null() || metadata.contains(key) ||
              key == "source" || key == "step" || key.rfind("__", 0) == 0 ||
              is_checkpoint_key(key)) {
            continue;
          }
          metadata[key] = value;
        }
      }
      run_metadata_ = std::move(metadata);
    }
    return run_metadata_;
  }

  /// Configurable keys LangGraph keeps out of checkpoint metadata (EXCLUDED_METADATA_KEYS).
  [[nodiscard]] static bool is_checkpoint_key(std::string_view key) {
    static constexpr std::string_view kExcluded[] = {
        "thread_id",          "checkpoint_id",  "checkpoint_ns",
        "checkpoint_map",     "langgraph_step", "langgraph_node",
        "langgraph_triggers", "langgraph_path", "langgraph_checkpoint_ns"};
    return std::find(std::begin(kExcluded), std::end(kExcluded), key) != std::end(kExcluded);
  }

  /// Writes the recorded checkpoint: only the channels changed since the last stored one, message
  /// lists as deltas.
  void store_pending_checkpoint() {
    if (!pending_checkpoint_) return;
    if constexpr (kJsonState<S>) {
      auto [cp, metadata] = std::move(*pending_checkpoint_);
      pending_checkpoint_.reset();
      ChannelVersions new_versions;
      std::map<std::string, ListDelta> lists;
      for (const auto& [ch, version] : versions_) {
        if (version <= stored_through_) continue;
        new_versions.emplace_hint(new_versions.end(), ch, version);
        if (ch == kStartChannel && start_input_) {
          cp.channel_values[ch] = std::move(*start_input_);  // reset below
        } else if (!saver_deltas_ || !list_delta(ch, lists)) {
          cp.channel_values[ch] = channel_value(ch);
        }
      }
      stored_through_ = max_version_;
      for_each_field<S>([&](auto i) {
        const std::string name(field_t<S, i>::name);
        if (!new_versions.count(name)) return;
        stored_version_[i] = versions_[name];
        using R = typename field_t<S, i>::reducer_type;
        if constexpr (TrackedListReducer<R>) std::get<i>(caches_).rebase(field_value<i>(state_));
      });
      start_input_.reset();
      CheckpointPut put{stored_,
                        std::move(cp),
                        std::move(metadata),
                        std::move(new_versions),
                        std::move(held_writes_),
                        std::move(lists)};
      held_writes_.clear();
      stored_ =
          CheckpointConfig{shared_->cfg.thread_id, shared_->cfg.checkpoint_ns, put.checkpoint.id};
      held_puts_.push_back(std::move(put));
      if (!hold_puts_) flush_held_puts();
    }
  }

  /// Stores the checkpoints recorded so far, in one write.
  void flush_held_puts() {
    if (held_puts_.empty()) return;
    std::vector<CheckpointPut> puts = std::move(held_puts_);
    held_puts_.clear();
    if (writer_) {
      writer_->submit(std::move(puts));
    } else {
      saver_->put_all(puts);
    }
  }

  /// Adds channel `channel` to `lists` as a delta against the version stored before, if it is
  /// a field that tracks its list; returns whether it is.
  bool list_delta(const std::string& channel, std::map<std::string, ListDelta>& lists) const {
    bool tracked = false;
    for_each_field<S>([&](auto i) {
      using R = typename field_t<S, i>::reducer_type;
      if constexpr (TrackedListReducer<R>) {
        if (field_t<S, i>::name != channel) return;
        lists.emplace(channel, tracked_list_delta(field_value<i>(state_),
                                                  std::get<i>(caches_).origin, stored_version_[i]));
        tracked = true;
      }
    });
    return tracked;
  }

  /// The value of a channel for a checkpoint (plain; see list_delta for tracked lists).
  nlohmann::json channel_value(const std::string& channel) const {
    if constexpr (kJsonState<S>) {
      if (channel.rfind(kBranchPrefix, 0) == 0) return true;
      if (channel == kStartChannel) return start_input_.value_or(nlohmann::json::object());
      if (channel == kTasksChannel) {
        nlohmann::json sends = nlohmann::json::array();
        for (const auto& send : next_push_) {
          sends.push_back(
              {{"node", name_of(send.node)},
               {"arg", send.arg_json ? *send.arg_json
                                     : send_arg_json(name_of(send.node), send.arg, send.to_json)}});
        }
        return sends;
      }
      if (channel.rfind(kJoinPrefix, 0) == 0) {
        nlohmann::json seen = nlohmann::json::array();
        for (std::size_t j = 0; j < topo_.joins.size(); ++j) {
          if (def_->join_channels[j] != channel) continue;
          for (std::size_t k = 0; k < topo_.joins[j].sources.size(); ++k) {
            if (join_marks_[j][k]) seen.push_back(name_of(topo_.joins[j].sources[k]));
          }
        }
        return seen;
      }
      nlohmann::json out;
      detail::visit_field_named<S>(channel,
                                   [&](auto i) { out = nlohmann::json(field_value<i>(state_)); });
      return out;
    }
    return nlohmann::json();
  }

  /// Makes everything recorded durable before the run returns: the deferred checkpoint and writes
  /// of durability "exit", and the queue of durability "async".
  /// `finished`: the run ended normally (not at an interrupt or a failure).
  void finish_persisting(bool finished = false) {
    if (!saver_) return;
    if (durability_ == Durability::exit) {
      // LangGraph: a subgraph with a namespace per call stores nothing when it just finishes.
      const bool per_call_subgraph =
          shared_->parent != nullptr && shared_->cfg.checkpoint_ns.find(':') != std::string::npos;
      if (finished && per_call_subgraph) {
        pending_checkpoint_.reset();
        exit_writes_.clear();
        return;
      }
      store_pending_checkpoint();
      // Only the writes of the checkpoint stored last: those of earlier steps are in it.
      for (auto& [checkpoint_id, task_id, writes] : exit_writes_) {
        if (checkpoint_id != current_id_) continue;
        saver_->put_writes(
            CheckpointConfig{shared_->cfg.thread_id, shared_->cfg.checkpoint_ns, checkpoint_id},
            writes, task_id);
      }
      exit_writes_.clear();
    }
    if (!held_writes_.empty()) {
      // No checkpoint followed (the step failed while applying its writes): the writes go alone,
      // except those that only refer to that checkpoint's messages.
      for (auto& w : held_writes_) {
        if (std::any_of(w.writes.begin(), w.writes.end(), [](const auto& cw) {
              return cw.second.is_object() && cw.second.contains(kAppendedWrite);
            })) {
          continue;
        }
        auto job = [saver = saver_, config = current_config(), w = std::move(w)] {
          saver->put_writes(config, w.writes, w.task_id);
        };
        if (writer_) {
          writer_->submit(std::move(job));
        } else {
          job();
        }
      }
      held_writes_.clear();
    }
    if (writer_) writer_->wait();
  }

  /// The node that wrote last (for update_state without as_node).
  int last_writer() const {
    std::int64_t best = -1;
    std::vector<std::string> nodes;
    for (const auto& [node, seen] : versions_seen_) {
      if (!topo_.ids.count(node)) continue;  // not a node of this graph (LangGraph skips it)
      std::int64_t v = -1;
      for (const auto& [ch, version] : seen) v = std::max(v, version);
      if (v > best) {
        best = v;
        nodes = {node};
      } else if (v == best) {
        nodes.push_back(node);
      }
    }
    if (nodes.empty()) return topo_.start;
    if (nodes.size() > 1) throw InvalidUpdateError("Ambiguous update, specify as_node");
    return topo_.ids.at(nodes[0]);
  }

  /// The node update_state applies an update as: `as_node`, or when none is given START on a
  /// thread where nothing ran, else the node that ran last (START counts, as in LangGraph, whose
  /// "only node" rule never applies to a StateGraph: START is a node). Throws
  /// InvalidUpdateError (LangGraph's wording) for an unknown node or an ambiguous last node.
  int update_target(const std::optional<std::string>& as_node, bool loaded) const {
    if (!as_node) {
      if (!loaded) return topo_.start;
      return last_writer();
    }
    if (*as_node == START) return topo_.start;
    auto it = topo_.ids.find(*as_node);
    if (it == topo_.ids.end() || it->second == topo_.start)
      throw InvalidUpdateError("Node " + *as_node + " does not exist");
    return it->second;
  }

  /// A resuming Command's update and gotos (LangGraph's NULL task writes): saved against the
  /// checkpoint the run resumes, and applied before its next step, whose tasks keep their ids
  /// (so their saved writes and interrupts still match).
  void apply_command(std::optional<Update<S>> update, std::vector<Goto> go_to) {
    if constexpr (kJsonState<S>) {
      // The writes of earlier Commands on this checkpoint stay first (LangGraph accumulates them).
      std::vector<std::pair<std::string, nlohmann::json>> writes = null_writes_;
      if (!go_to.empty()) writes.emplace_back(std::string(kGotoWrite), gotos_json(go_to));
      if (update) append_field_writes(*update, writes, /*for_saver=*/saver_deltas_);
      save_writes(std::string(kRunTaskId), std::move(writes));
    }
    if (update) apply_update_to_state(std::move(*update), INPUT);
    for (Goto& go : go_to) follow(go, "the resuming Command");
  }

  /// Fills the state's managed values (RemainingSteps, IsLastStep) for this step.
  void set_managed_values() {
    for_each_field<S>([&](auto i) {
      using M = typename field_t<S, i>::value_type;
      if constexpr (std::is_same_v<M, RemainingSteps>) {
        field_value<i>(state_).value = stop_ - step_;
      } else if constexpr (std::is_same_v<M, IsLastStep>) {
        field_value<i>(state_).value = step_ == stop_ - 1;
      }
    });
  }

  // ------------------------------------------------------------------ streaming

  [[nodiscard]] bool streams(StreamMode mode) const { return stream_ && stream_->modes.has(mode); }

  /// A `values` event with the current state (and the interrupts that stopped it, if any).
  void emit_values() {
    if (streams(StreamMode::values)) emit_values(std::vector<Interrupt>{});
  }
  void emit_values(std::vector<Interrupt> interrupts) {
    if (!streams(StreamMode::values)) return;
    StreamEvent<S> e;
    e.mode = StreamMode::values;
    e.step = step_;
    e.ns = stream_->ns;
    e.values = state_;
    e.interrupts = std::move(interrupts);
    stream_->sink(std::move(e));
  }

  /// The `updates` event of interrupts (LangGraph's `{"__interrupt__": [...]}`).
  void emit_interrupt_update(std::vector<Interrupt> interrupts) {
    if (!streams(StreamMode::updates)) return;
    StreamEvent<S> e;
    e.mode = StreamMode::updates;
    e.step = step_;
    e.node = INTERRUPT;
    e.ns = stream_->ns;
    e.interrupts = std::move(interrupts);
    stream_->sink(std::move(e));
  }

  /// A subgraph's event, in this run's stream.
  void emit_child(ForeignEvent&& child) {
    StreamEvent<S> e;
    if (auto* typed = std::any_cast<StreamEvent<S>>(&child.typed)) {
      e = std::move(*typed);
    } else {
      // Another state type: values and updates arrive as JSON in `data`.
      e.mode = child.mode;
      e.step = child.step;
      e.node = std::move(child.node);
      e.ns = std::move(child.ns);
      e.data = child.mode == StreamMode::values || child.mode == StreamMode::updates
                   ? std::move(child.payload)
                   : std::move(child.data);
      e.interrupts = std::move(child.interrupts);
      e.cached = child.cached;
    }
    stream_->sink(std::move(e));
  }

  void emit_custom(RunShared::Custom&& c) {
    StreamEvent<S> e;
    e.mode = StreamMode::custom;
    e.step = c.step;
    e.node = std::move(c.node);
    e.ns = stream_->ns;
    e.data = std::move(c.value);
    stream_->sink(std::move(e));
  }

  void emit_debug_start(const Task& t) {
    StreamEvent<S> e;
    e.mode = StreamMode::debug;
    e.step = step_;
    e.node = name_of(t.node);
    e.ns = stream_->ns;
    nlohmann::json input;
    if constexpr (kJsonState<S>) {
      input = t.arg.has_value() ? send_arg_json(name_of(t.node), t.arg, {}) : state_json();
    }
    e.data = {{"type", "task"},
              {"step", step_},
              {"payload",
               {{"id", std::string(t.info.id.data(), t.info.id.size())},
                {"name", name_of(t.node)},
                {"input", std::move(input)},
                {"send_index", t.info.send_index}}}};
    stream_->sink(std::move(e));
  }

  /// The state as JSON, managed values left out.
  nlohmann::json state_json() const {
    if constexpr (kJsonState<S>) {
      nlohmann::json out = state_to_json(state_);
      for_each_field<S>([&](auto i) {
        if constexpr (kManagedValue<typename field_t<S, i>::value_type>)
          out.erase(std::string(field_t<S, i>::name));
      });
      return out;
    }
    return nullptr;
  }

  static nlohmann::json config_json(const std::optional<CheckpointConfig>& c) {
    if (!c) return nullptr;
    return {{"configurable",
             {{"thread_id", c->thread_id},
              {"checkpoint_ns", c->checkpoint_ns},
              {"checkpoint_id", c->checkpoint_id}}}};
  }

  /// LangGraph's debug "checkpoint" event: the checkpoint a step starts from (its config, parent,
  /// values, metadata) and the tasks that run next, as get_state_history shows it.
  void emit_debug_checkpoint(bool start_next = false) {
    if (saver_ && streams(StreamMode::debug)) emit_debug_checkpoint_now(start_next);
  }
  void emit_debug_checkpoint_now(bool start_next) {
    nlohmann::json tasks = nlohmann::json::array();
    nlohmann::json next = nlohmann::json::array();
    auto add = [&](const std::string& id, const std::string& name, const Task* t) {
      nlohmann::json task{{"id", id}, {"name", name}};
      nlohmann::json interrupts = nlohmann::json::array();
      if (t) {
        for (const auto& w : task_writes_of(*t)) {
          if (w.channel == kErrorChannel) task["error"] = w.value;
          if (w.channel == kInterruptChannel) interrupts = w.value;
        }
      }
      task["interrupts"] = std::move(interrupts);
      task["state"] = nullptr;
      next.push_back(name);
      tasks.push_back(std::move(task));
    };
    if (start_next || pending_start_) {
      const Task start = start_task(step_ + 1);  // the step after the input checkpoint
      add(std::string(start.info.id.data(), start.info.id.size()), START, nullptr);
    }
    for (const Task& t : tasks_) {
      add(std::string(t.info.id.data(), t.info.id.size()), name_of(t.node), &t);
    }
    StreamEvent<S> e;
    e.mode = StreamMode::debug;
    e.step = current_meta_.value("step", step_ - 1);
    e.ns = stream_->ns;
    e.data = {{"type", "checkpoint"},
              {"step", e.step},
              {"payload",
               {{"config", config_json(current_config())},
                {"parent_config", config_json(current_parent_)},
                {"values", state_json()},
                {"metadata", current_meta_},
                {"next", std::move(next)},
                {"tasks", std::move(tasks)}}}};
    stream_->sink(std::move(e));
  }

  /// Streams a finished task: its update (updates mode) and its result (debug mode).
  void emit_task_finished(const Task& t, bool replayed = false) {
    if (stream_) emit_task_finished_now(t, replayed);
  }
  void emit_task_finished_now(const Task& t, bool replayed) {
    if (streams(StreamMode::updates) && t.output && t.interrupts.empty() && !t.error) {
      StreamEvent<S> e;
      e.mode = StreamMode::updates;
      e.step = step_;
      e.node = name_of(t.node);
      e.ns = stream_->ns;
      e.update = t.output->update;
      e.cached = t.cached || replayed;
      stream_->sink(std::move(e));
      // Several Commands: one event per update, in order.
      for (const auto& more : t.more) {
        StreamEvent<S> m;
        m.mode = StreamMode::updates;
        m.step = step_;
        m.node = name_of(t.node);
        m.ns = stream_->ns;
        m.update = more;
        m.cached = t.cached || replayed;
        stream_->sink(std::move(m));
      }
    }
    if (replayed) return;
    if (!t.interrupts.empty()) {
      // LangGraph: an updates chunk {"__interrupt__": [...]} and, in values mode, the state the
      // step started from with the interrupts.
      emit_interrupt_update(t.interrupts);
      emit_values(t.interrupts);
    }
    if (streams(StreamMode::debug)) {
      // LangGraph's task_result payload: id, name, error, result (a channel written twice
      // shows {"$writes": [...]}), interrupts.
      nlohmann::json payload{{"id", std::string(t.info.id.data(), t.info.id.size())},
                             {"name", name_of(t.node)},
                             {"error", nullptr},
                             {"result", nlohmann::json::object()},
                             {"interrupts", nlohmann::json::array()}};
      if (t.error) {
        try {
          std::rethrow_exception(t.error);
        } catch (const std::exception& ex) {
          payload["error"] = ex.what();
        } catch (...) {
          payload["error"] = "unknown exception";
        }
      } else if (!t.interrupts.empty()) {
        for (const auto& i : t.interrupts)
          payload["interrupts"].push_back({{"id", i.id}, {"value", i.value}});
      } else if (t.output) {
        if constexpr (kJsonState<S>) {
          for (auto& [channel, value] : output_writes(t)) {
            if (channel != kGotoWrite && channel != kNoWrites)
              add_result_write(payload["result"], channel, value);
          }
        }
      }
      StreamEvent<S> e;
      e.mode = StreamMode::debug;
      e.step = step_;
      e.node = name_of(t.node);
      e.ns = stream_->ns;
      e.data = {{"type", "task_result"}, {"step", step_}, {"payload", std::move(payload)}};
      stream_->sink(std::move(e));
    }
  }

  template <class Seq>
  struct ScratchOf;
  template <std::size_t... I>
  struct ScratchOf<std::index_sequence<I...>> {
    using type = std::tuple<std::vector<Write<typename field_t<S, I>::reducer_type>*>...>;
  };

  std::shared_ptr<const GraphDef<S>> def_;
  const Topology& topo_;
  StreamSpec<S>* stream_;
  std::shared_ptr<RunShared> shared_;

  S state_{};
  int step_ = 0;
  int saved_step_ = -1;                 // the step of the latest checkpoint
  bool above_thread_versions_ = false;  // see raise_to_thread_versions()
  std::vector<Task> tasks_;
  std::vector<int> next_pull_;
  std::vector<char> pull_mark_;
  std::vector<int> deferred_;  // triggered deferred nodes: they run once nothing else is left
  std::vector<char> defer_mark_;
  int stop_ = 0;                 // the last step the recursion limit allows + 1 (LangGraph's stop)
  std::string loaded_source_;    // metadata "source" of the restored checkpoint
  nlohmann::json current_meta_;  // debug streams: the latest checkpoint's
  std::optional<CheckpointConfig> current_parent_;  // metadata and parent
  std::vector<PendingSend> next_push_;
  std::vector<std::vector<char>> join_marks_;
  std::vector<std::size_t> claimable_;
  std::vector<TimedSlot> timed_;
  std::shared_ptr<const S> snapshot_;
  typename ScratchOf<std::make_index_sequence<field_count_v<S>>>::type scratch_;
  std::vector<std::string_view> names_;

  FieldCaches<S> caches_;
  std::vector<char> changed_;  // per field: written in the step being finished

  // Persistence (with a checkpointer).
  Checkpointer* saver_ = nullptr;
  Durability durability_ = Durability::sync;
  std::unique_ptr<AsyncWriter> writer_;
  std::vector<CheckpointPut> held_puts_;  // recorded checkpoints not yet handed to the saver
  nlohmann::json run_metadata_;           // see run_metadata()
  bool saver_deltas_ = false;  // saver_->stores_deltas(): lists as deltas, messages as CBOR
  std::vector<TaskWrites> held_writes_;  // task writes that go with the next checkpoint
  bool hold_puts_ = false;               // keep the next one for a joint write
  std::string run_id_;
  CheckpointConfig stored_;  // the last stored checkpoint: the parent of the next
  std::string current_id_;   // the latest checkpoint, stored or not: task writes go against it
  ChannelVersions versions_;
  std::int64_t max_version_ = 0;
  std::map<std::string, ChannelVersions> versions_seen_;
  std::int64_t stored_through_ = 0;  // the highest version in a stored (or loaded) checkpoint
  std::vector<std::int64_t> stored_version_;  // per field: its last stored version, or -1
  std::map<std::string, std::vector<PendingWrite>> resumed_writes_;  // by task id
  std::vector<std::pair<std::string, nlohmann::json>> null_writes_;  // saved by earlier Commands
  std::optional<std::pair<Checkpoint, nlohmann::json>> pending_checkpoint_;
  std::vector<
      std::tuple<std::string, std::string, std::vector<std::pair<std::string, nlohmann::json>>>>
      exit_writes_;
  std::optional<nlohmann::json> start_input_;
  std::optional<Update<S>> pending_start_;
};

}  // namespace sg::detail
