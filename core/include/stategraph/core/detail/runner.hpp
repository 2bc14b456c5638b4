#pragma once

// The Pregel executor: runs a compiled graph superstep by superstep. Internal to stategraph.
//
// Each superstep: the triggered tasks (edge-triggered nodes in node-name order, then Sends in
// the order they were sent) read the same state; a step with one task runs it on the calling
// thread, a step with several runs them on the thread pool with the calling thread helping.
// After all finish, their writes are applied field by field in task order, the routers and
// Commands pick the next tasks, and the stream gets its events.

#include <stategraph/core/context.hpp>
#include <stategraph/core/detail/node.hpp>
#include <stategraph/core/detail/topology.hpp>
#include <stategraph/core/error.hpp>
#include <stategraph/core/thread_pool.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace sg::detail {

template <State S>
struct NodeEntry {
  NodeFunction<S> fn;
  NodeOptions options;
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
  bool stream_custom = false;
  StreamModes sub_modes{};
  std::vector<std::string> ns;
  void* sink = nullptr;
  std::thread::id orchestrator;
  std::function<void(Custom&&)> deliver_custom;  // orchestrator thread only

  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::function<void()>> deliveries;  // guarded by mu: stream events from other threads
  std::vector<std::size_t> finished;              // guarded by mu: tasks done since the last drain
  std::size_t remaining = 0;       // guarded by mu: claimed tasks of the current batch
  std::size_t timed_finished = 0;  // guarded by mu: bumps when a timed attempt ends
  std::atomic<bool> step_failed{false};
  std::atomic<bool> alive{true};

  [[nodiscard]] const RunConfig& config() const noexcept override { return cfg; }
  [[nodiscard]] Store* store() const noexcept override { return store_ptr; }
  [[nodiscard]] bool aborted() const noexcept override {
    return step_failed.load(std::memory_order_relaxed);
  }
  [[nodiscard]] StreamModes subgraph_modes() const noexcept override { return sub_modes; }
  [[nodiscard]] const std::vector<std::string>& stream_ns() const noexcept override { return ns; }
  [[nodiscard]] void* event_sink() const noexcept override { return sink; }

  void write_custom(const std::string& node, int step, nlohmann::json value) override {
    if (!stream_custom) return;
    deliver([this, c = Custom{node, step, std::move(value)}]() mutable {
      deliver_custom(std::move(c));
    });
  }

  void deliver(std::function<void()> delivery) override {
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
  std::chrono::steady_clock::time_point deadline;
};

template <State S>
class Runner {
 public:
  Runner(std::shared_ptr<const GraphDef<S>> def, const RunConfig& config, StreamSpec<S>* stream)
      : def_(std::move(def)),
        topo_(def_->topo),
        stream_(stream),
        shared_(std::make_shared<RunShared>()) {
    shared_->cfg = config;
    shared_->orchestrator = std::this_thread::get_id();
    if (stream_) {
      shared_->stream_custom = stream_->modes.has(StreamMode::custom);
      shared_->deliver_custom = [this](RunShared::Custom&& c) { emit_custom(std::move(c)); };
      if (config.stream_subgraphs) shared_->sub_modes = stream_->modes;
      shared_->ns = stream_->ns;
      shared_->sink = &stream_->sink;
    }
    pull_mark_.assign(topo_.node_count, 0);
    join_marks_.resize(topo_.joins.size());
    for (std::size_t j = 0; j < topo_.joins.size(); ++j)
      join_marks_[j].assign(topo_.joins[j].sources.size(), 0);
  }

  ~Runner() { shared_->alive.store(false); }
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  /// Runs the graph from its empty state with `input` as the START task's writes.
  RunResult<S> run(Update<S>&& input) {
    const int limit = shared_->cfg.recursion_limit;
    if (limit < 1) throw Error(errc::kInvalidRun, "recursion_limit must be at least 1");

    // Superstep 0: the START task applies the input through the reducers.
    step_ = 0;
    tasks_.resize(1);
    reset_task(tasks_[0], topo_.start, -1);
    tasks_[0].output.emplace(Command<S>{std::move(input), {}, {}, {}});
    finish_step();

    for (step_ = 1;; ++step_) {
      check_cancelled();
      if (step_ > limit) {
        throw GraphRecursionError("Recursion limit of " + std::to_string(limit) +
                                  " reached without hitting a stop condition. You can increase the "
                                  "limit by setting the `recursion_limit` config key.");
      }
      prepare_tasks();
      if (tasks_.empty()) break;
      if (hits(topo_.interrupt_before) || hits_config(shared_->cfg.interrupt_before)) {
        return interrupted({});
      }
      execute_tasks();
      raise_errors();
      if (auto pending = collect_interrupts(); !pending.empty())
        return interrupted(std::move(pending));
      raise_parent_commands();
      finish_step();
      if (hits(topo_.interrupt_after) || hits_config(shared_->cfg.interrupt_after)) {
        prepare_tasks();
        return interrupted({});
      }
    }
    RunResult<S> result;
    result.state = std::move(state_);
    return result;
  }

 private:
  struct Task {
    int node = 0;
    int send_index = -1;
    std::any arg;
    TaskInfo info;
    std::optional<Command<S>> output;
    std::exception_ptr error;
    std::vector<Interrupt> interrupts;
    std::vector<Goto> routes;
    bool ran = false;
  };
  struct PendingSend {
    int node;
    std::any arg;
  };

  [[nodiscard]] const std::string& name_of(int id) const {
    return topo_.names[static_cast<std::size_t>(id)];
  }

  void reset_task(Task& t, int node, int send_index) {
    t.node = node;
    t.send_index = send_index;
    t.arg.reset();
    t.info.node = name_of(node);
    t.info.step = step_;
    t.info.attempt = 1;
    t.info.resume.clear();
    t.info.interrupts_seen = 0;
    t.output.reset();
    t.error = nullptr;
    t.interrupts.clear();
    t.routes.clear();
    t.ran = false;
  }

  /// Deterministic task id: a hash of the thread, step, node and Send index.
  void assign_task_id(Task& t) const {
    std::uint64_t h = 14695981039346656037ULL;
    auto mix = [&h](std::string_view s) {
      for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
      h = (h ^ 0xFF) * 1099511628211ULL;
    };
    mix(shared_->cfg.thread_id);
    mix(shared_->cfg.checkpoint_ns);
    const std::int64_t numbers[2] = {step_, t.send_index};
    mix(std::string_view(reinterpret_cast<const char*>(numbers), sizeof numbers));
    mix(name_of(t.node));
    static constexpr char kHex[] = "0123456789abcdef";
    for (int i = 15; i >= 0; --i, h >>= 4) t.info.id[static_cast<std::size_t>(i)] = kHex[h & 0xF];
  }

  /// Builds this step's tasks from what the previous step triggered.
  void prepare_tasks() {
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
    for (auto& t : tasks_) assign_task_id(t);
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

  RunResult<S> interrupted(std::vector<Interrupt> interrupts) {
    RunResult<S> result;
    result.status = RunStatus::interrupted;
    result.interrupts = std::move(interrupts);
    for (const Task& t : tasks_) result.next.push_back(name_of(t.node));
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
    TaskInput<S> input{&state_, t.arg.has_value() ? &t.arg : nullptr};
    for (int attempt = 1;; ++attempt) {
      t.info.attempt = attempt;
      t.info.interrupts_seen = 0;
      try {
        Context ctx(*shared_, t.info);
        CurrentContextGuard guard(&ctx);
        t.output.emplace(entry.fn(input, ctx));
        t.ran = true;
        return;
      } catch (GraphInterrupt& gi) {
        t.interrupts = std::move(gi.interrupts);
        t.ran = true;
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

  void execute_tasks() {
    shared_->step_failed.store(false);
    if (streams(StreamMode::debug)) {
      for (const Task& t : tasks_) emit_debug_start(t);
    }
    if (tasks_.size() == 1 && !is_timed(tasks_[0])) {
      run_task(tasks_[0]);
      emit_task_finished(tasks_[0]);
      return;
    }
    claimable_.clear();
    timed_.clear();
    for (std::size_t i = 0; i < tasks_.size(); ++i) {
      if (is_timed(tasks_[i])) {
        timed_.push_back(TimedSlot{i});
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
    if (predicted_ns >= kInlineStepBudgetNs) post_helpers();
    if (!timed_.empty()) snapshot_ = std::make_shared<const S>(state_);
    for (auto& slot : timed_) start_attempt(slot, 1);
    const auto began = std::chrono::steady_clock::now();
    for (std::size_t k = batch->next.fetch_add(1); k < batch->count; k = batch->next.fetch_add(1)) {
      run_claimed(k, *shared_);
      drain();
      // Tasks turned out slower than predicted: let the pool take the rest.
      if (helpers > 0 && std::chrono::steady_clock::now() - began >
                             std::chrono::nanoseconds(kInlineStepBudgetNs)) {
        post_helpers();
      }
    }
    wait_for_batch();
    snapshot_.reset();
  }

  /// Runs the k-th claimable task (any thread) and reports it finished. Once `remaining` drops,
  /// the run may end: after that only `shared` (kept alive by the caller) may be touched.
  void run_claimed(std::size_t k, RunShared& shared) {
    const std::size_t index = claimable_[k];
    if (!shared.step_failed.load() && !shared.cfg.cancellation.cancelled()) {
      const auto began = std::chrono::steady_clock::now();
      run_task(tasks_[index]);
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now() - began)
                          .count();
      auto& cost = def_->cost_ns[static_cast<std::size_t>(tasks_[index].node)];
      const std::uint32_t sample =
          static_cast<std::uint32_t>(std::min<std::int64_t>(ns, kUnknownCost - 1));
      const std::uint32_t old = cost.load(std::memory_order_relaxed);
      cost.store(old == kUnknownCost ? sample : old - old / 4 + sample / 4,
                 std::memory_order_relaxed);
    }
    {
      std::lock_guard lock(shared.mu);
      shared.finished.push_back(index);
      --shared.remaining;
    }
    shared.cv.notify_all();
  }

  struct TimedSlot {
    std::size_t task;
    std::shared_ptr<TimedAttempt<S>> attempt{};
    int attempt_no = 0;
    std::optional<std::chrono::steady_clock::time_point> retry_at{};
    bool done = false;
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
    slot.attempt = attempt;
    slot.attempt_no = attempt_no;
    slot.retry_at.reset();
    def_->pool->post([attempt, shared = shared_, def = def_, node = t.node] {
      TaskInput<S> input{attempt->snapshot.get(),
                         attempt->arg.has_value() ? &attempt->arg : nullptr};
      try {
        Context ctx(*shared, attempt->info);
        CurrentContextGuard guard(&ctx);
        attempt->output.emplace(def->nodes[static_cast<std::size_t>(node)].fn(input, ctx));
      } catch (GraphInterrupt& gi) {
        attempt->interrupts = std::move(gi.interrupts);
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
        if (!a.error) {
          t.output = std::move(a.output);
          t.interrupts = std::move(a.interrupts);
          t.ran = true;
          slot.done = true;
          emit_task_finished(t);
          continue;
        }
        error = a.error;
      } else if (now >= a.deadline) {
        int running = 0;
        if (!a.status.compare_exchange_strong(running, 2)) continue;  // it just finished
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
      }
    }
    return wake;
  }

  void abandon_timed() {
    for (auto& slot : timed_) {
      if (slot.done) continue;
      if (slot.attempt) {
        int running = 0;
        slot.attempt->status.compare_exchange_strong(running, 2);
      }
      tasks_[slot.task].error = std::make_exception_ptr(CancelledError());
      slot.done = true;
    }
  }

  /// Waits until the batch's claimed tasks and its timed tasks are settled, delivering stream
  /// events as they come. Cancellation abandons timed tasks; claimed tasks always finish.
  void wait_for_batch() {
    for (;;) {
      drain();
      auto wake = service_timed();
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
    for (std::size_t i : finished) emit_task_finished(tasks_[i]);
  }

  /// Throws the first failure in task order: CancelledError, NodeTimeoutError, or NodeError
  /// wrapping what the node threw.
  void raise_errors() {
    check_cancelled();
    for (Task& t : tasks_) {
      if (!t.error) continue;
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
      throw ParentCommand{std::any(std::move(command))};
    }
  }

  std::vector<Interrupt> collect_interrupts() {
    std::vector<Interrupt> out;
    for (Task& t : tasks_) {
      for (auto& i : t.interrupts) out.push_back(std::move(i));
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
        Update<S> own = t.output->update;
        apply_update(local, std::move(own), name_of(t.node));
        route(t, local);
      }
    }
    apply_writes_in_task_order();
    if (single) route(tasks_[0], state_);
    if (stream_ && stream_->modes.has(StreamMode::values)) {
      StreamEvent<S> e;
      e.mode = StreamMode::values;
      e.step = step_;
      e.ns = stream_->ns;
      e.values = state_;
      stream_->sink(std::move(e));
    }
    schedule_next();
  }

  void apply_writes_in_task_order() {
    names_.clear();
    for_each_field<S>([&](auto i) {
      using R = typename field_t<S, i>::reducer_type;
      auto& writes = std::get<i>(scratch_);
      writes.clear();
      names_.clear();
      for (Task& t : tasks_) {
        if (auto& slot = t.output->update.template slot<i>()) {
          writes.push_back(&*slot);
          names_.push_back(name_of(t.node));
        }
      }
      if (writes.empty()) return;
      apply_writes<R>(field_reducer<S, i>(), field_value<i>(state_),
                      std::span<Write<R>* const>(writes), names_, field_t<S, i>::name);
    });
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
      next_push_.push_back(PendingSend{node, std::move(send.arg)});
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
        if (std::all_of(marks.begin(), marks.end(), [](char m) { return m != 0; })) {
          std::fill(marks.begin(), marks.end(), 0);
          trigger(join.target);
        }
      }
    }
  }

  // ------------------------------------------------------------------ streaming

  [[nodiscard]] bool streams(StreamMode mode) const { return stream_ && stream_->modes.has(mode); }

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
    e.data = {{"type", "task"},
              {"step", step_},
              {"payload",
               {{"id", std::string(t.info.id.data(), t.info.id.size())},
                {"name", name_of(t.node)},
                {"send_index", t.send_index}}}};
    stream_->sink(std::move(e));
  }

  /// Streams a finished task: its update (updates mode) and its result (debug mode).
  void emit_task_finished(const Task& t) {
    if (!stream_) return;
    if (streams(StreamMode::updates) && t.output && t.interrupts.empty() && !t.error) {
      StreamEvent<S> e;
      e.mode = StreamMode::updates;
      e.step = step_;
      e.node = name_of(t.node);
      e.ns = stream_->ns;
      e.update = t.output->update;
      stream_->sink(std::move(e));
    }
    if (streams(StreamMode::debug)) {
      nlohmann::json payload{{"id", std::string(t.info.id.data(), t.info.id.size())},
                             {"name", name_of(t.node)}};
      if (t.error) {
        try {
          std::rethrow_exception(t.error);
        } catch (const std::exception& ex) {
          payload["error"] = ex.what();
        } catch (...) {
          payload["error"] = "unknown exception";
        }
      } else if (!t.interrupts.empty()) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& i : t.interrupts) list.push_back({{"id", i.id}, {"value", i.value}});
        payload["interrupts"] = std::move(list);
      } else if (t.output) {
        if constexpr (kJsonState<S>) {
          payload["result"] = update_to_json(t.output->update);
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
  std::vector<Task> tasks_;
  std::vector<int> next_pull_;
  std::vector<char> pull_mark_;
  std::vector<PendingSend> next_push_;
  std::vector<std::vector<char>> join_marks_;
  std::vector<std::size_t> claimable_;
  std::vector<TimedSlot> timed_;
  std::shared_ptr<const S> snapshot_;
  typename ScratchOf<std::make_index_sequence<field_count_v<S>>>::type scratch_;
  std::vector<std::string_view> names_;
};

}  // namespace sg::detail
