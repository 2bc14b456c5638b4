// SPDX-License-Identifier: MIT
#pragma once

// The executor's typed shell: the state, the reducers' caches, applying writes in task order,
// routing, and the per-field codecs checkpoints need. Everything else is ExecutorCore
// (executor_core.hpp, core/src/executor/). Internal to stategraph.

#include <stategraph/core/detail/executor_core.hpp>
#include <stategraph/core/detail/field_codec.hpp>
#include <stategraph/core/detail/graph_def.hpp>
#include <stategraph/core/detail/typed_task.hpp>
#include <stategraph/core/list_update.hpp>
#include <stategraph/core/message.hpp>
#include <stategraph/core/uuid.hpp>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace sg::detail {

template <State S>
class Executor final : public ExecutorCore {
 public:
  Executor(std::shared_ptr<const GraphDef<S>> def, const RunConfig& config, StreamSpec<S>* stream,
           Checkpointer* inherited = nullptr, Store* inherited_store = nullptr,
           RunHooks* parent = nullptr)
      : ExecutorCore(def, config, stream, field_names<S>(), kJsonState<S>, inherited,
                     inherited_store, parent),
        def_(std::move(def)),
        stream_sink_(stream) {
    if (saver_) Codec::track_lists(caches_);
  }

  /// A run's end, for callbacks (see run(); an asynchronous run calls them itself).
  using ExecutorCore::end_run_span;
  using ExecutorCore::end_run_span_error;

  /// Runs the graph: from new input, or (with a checkpointer) continuing the thread's checkpoint.
  RunResult<S> run(RunRequest<S>&& request) {
    try {
      const bool skip_breakpoint = begin(std::move(request));
      RunResult<S> result = finish(run_steps(skip_breakpoint));
      end_run_span(result.status);
      return result;
    } catch (...) {
      end_run_span_error(std::current_exception());
      throw;
    }
  }

  /// A run up to its first superstep: loads the thread, applies the input (the START step) or
  /// what a Command resumes with. Returns whether the first step skips its breakpoint.
  bool begin(RunRequest<S>&& request) {
    start_run_span_if_traced();
    const bool loaded = load_thread(request.load_before);
    if (saver_ && request.load_before) request.continue_saved = false;
    if (request.continue_saved && loaded) request.input.reset();
    bool input_saved = false;
    if (!request.input && !request.command && pending_start_) {
      // The thread stopped after storing an input its START task had not applied yet.
      if constexpr (kJsonState<S>) request.input = update_from_json<S>(*pending_start_);
      pending_start_.reset();
      input_saved = true;
    }
    bool skip_breakpoint = false;
    if (request.input) {
      std::optional<nlohmann::json> input_json;
      if constexpr (kJsonState<S>) {
        if (saver_ && !input_saved) input_json = update_to_json(*request.input);
      }
      begin_with_input(loaded, input_saved, std::move(input_json));
      set_output(tasks_[0], Command<S>{std::move(*request.input), {}, {}, {}});
      finish_start_step();
    } else {
      const bool time_travel = begin_resume(loaded, request.resume.has_value());
      if (request.command) {
        if (!request.resume && !request.update && request.go_to.empty())
          throw EmptyInputError("Received empty Command input");
        if (request.resume) answer_interrupts(std::move(*request.resume));
        if (request.update || !request.go_to.empty())
          apply_command(std::move(request.update), std::move(request.go_to));
      }
      after_resume(time_travel);
      // A resumed run does not stop again at the breakpoint it stopped at (LangGraph: nothing
      // changed since the last interrupt).
      skip_breakpoint = true;
    }
    return skip_breakpoint;
  }

  /// The result of a run whose supersteps ended with `outcome`.
  RunResult<S> finish(StepsOutcome&& outcome) {
    RunResult<S> result;
    if (outcome.kind == StepsOutcome::Kind::finished) {
      remember_finished();
      result.state = std::move(state_);
      return result;
    }
    // Stopped at a breakpoint, or because nodes called interrupt(). In the second case the
    // writes of the step's tasks that finished are applied to the returned state (not to a
    // checkpoint: they are saved as pending writes), and `next` leaves those tasks out.
    const bool breakpoint = outcome.kind == StepsOutcome::Kind::breakpoint;
    result.status = RunStatus::interrupted;
    result.next = stopped_next(breakpoint);
    if (!breakpoint && apply_writes_in_task_order()) emit_values();
    // LangGraph's {"__interrupt__": ()} for a stop without interrupt values (a breakpoint, here
    // or in a subgraph), from the root graph only.
    if (outcome.interrupts.empty() && shared_->parent == nullptr) emit_interrupt_update({});
    result.interrupts = std::move(outcome.interrupts);
    result.state = std::move(state_);
    return result;
  }

  /// The snapshot of the checkpoint the config names (latest when it names none). For the latest
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
    StateSnapshot<S> out;
    snapshot_tasks(apply_finished, out.next, out.tasks, out.interrupts);
    if (apply_finished) (void)apply_writes_in_task_order();
    out.values = std::move(state_);
    out.config = tuple.config;
    out.metadata = tuple.metadata;
    out.created_at = tuple.checkpoint.ts;
    out.parent_config = tuple.parent_config;
    return out;
  }

  /// One superstep of LangGraph's bulk_update_state: each update is applied as the writes of its
  /// `as_node` (its reducers; then its edges pick what runs next) in a new checkpoint with source
  /// "update". Special `as_node`s: END with no values clears what would run next (the writes of
  /// tasks that finished still apply), END with values applies them and clears; sg::INPUT stores
  /// the values as new graph input (an "input" checkpoint: START runs next); "__copy__" copies
  /// the checkpoint as a sibling of it (source "fork"). Returns the new checkpoint's config.
  CheckpointConfig update_state(std::vector<StateUpdate<S>>&& updates) {
    if (updates.empty()) throw InvalidUpdateError("No updates provided");
    auto loaded = load_for_update();
    const std::string first_as = updates[0].as_node.value_or("");
    if (first_as == "__copy__") {
      if (updates.size() > 1)
        throw InvalidUpdateError("Cannot copy checkpoint with multiple updates");
      if (!loaded) throw InvalidUpdateError("Cannot copy a non-existent checkpoint");
      return copy_checkpoint(*loaded);
    }
    if (first_as == INPUT) {
      if (updates.size() > 1)
        throw InvalidUpdateError("Cannot apply multiple updates when updating as input");
      nlohmann::json input;
      if constexpr (kJsonState<S>) input = update_to_json(updates[0].values);
      return store_input(std::move(input), loaded.has_value());
    }
    if (first_as == END) {
      if (updates.size() > 1)
        throw InvalidUpdateError("Cannot apply multiple updates when clearing state");
      ++step_;
      if (loaded) {
        // The tasks that finished keep their writes (and their edges); the others are dropped.
        prepare_tasks();
        restore_task_writes();
        std::size_t kept = 0;
        for (std::size_t k = 0; k < tasks_.size(); ++k) {
          if (!tasks_[k].restored) continue;
          if (kept != k) {
            tasks_[kept] = std::move(tasks_[k]);
            outs_[kept] = std::move(outs_[k]);
          }
          ++kept;
        }
        tasks_.resize(kept);
        outs_.resize(kept);
        if (!tasks_.empty()) finish_step();
      } else {
        tasks_.clear();
        outs_.clear();
      }
      resumed_writes_.clear();
      if (!updates[0].values.empty()) apply_update_to_state(std::move(updates[0].values), END);
      return store_update();
    }
    std::vector<int> nodes;
    std::vector<std::optional<std::string>> given;
    for (const auto& u : updates) {
      if (updates.size() > 1 && !u.as_node)
        throw InvalidUpdateError("as_node is required when applying multiple updates");
      nodes.push_back(update_target(u.as_node, updates.size() > 1 || loaded.has_value()));
      given.push_back(u.task_id);
    }
    // The ids the checkpoint's next tasks would have: the update's writes are saved against the
    // checkpoint under them, so history shows them as those tasks' results (as LangGraph does).
    std::vector<std::string> task_ids(updates.size());
    if (loaded) {
      task_ids = next_task_ids(nodes, given);
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
    tasks_resized();
    for (std::size_t u = 0; u < updates.size(); ++u) {
      reset_task(tasks_[u], nodes[u], -1);
      set_output(tasks_[u], Command<S>{std::move(updates[u].values), {}, {}, {}});
      if (loaded && !task_ids[u].empty()) {
        ChannelWrites writes;
        append_field_writes(out(tasks_[u]).update, writes);
        if (!writes.empty()) save_writes(task_ids[u], std::move(writes));
      }
    }
    finish_step();
    return store_update();
  }

 private:
  using Output = TaskOutputOf<S>;
  using Codec = FieldCodec<S>;

  /// The typed output of a task of tasks_.
  Output& out(const Task& t) { return outs_[static_cast<std::size_t>(&t - tasks_.data())]; }
  const Output& out(const Task& t) const {
    return outs_[static_cast<std::size_t>(&t - tasks_.data())];
  }

  void tasks_resized() override { outs_.resize(tasks_.size()); }

  CheckpointConfig store_update() {
    save_checkpoint("update");
    finish_persisting();
    return stored_;
  }

  /// Sets a task's output from a node's Command.
  [[gnu::always_inline]] void set_output(Task& t, Command<S>&& command) {
    Output& o = out(t);
    o.update = std::move(command.update);
    o.pushed.clear();
    o.more.clear();
    t.go_to = std::move(command.go_to);
    if (!command.graph.empty()) t.graph = std::move(command.graph);
    t.has_output = true;
  }

  // ------------------------------------------------------------------ ExecutorCore's hooks

  void call_node(Task& t, Context& ctx) override {
    TaskInput<S> input{&state_, t.arg.has_value() ? &t.arg : nullptr};
    const auto node = static_cast<std::size_t>(t.node);
    if (def_->coroutine[node]) [[unlikely]] {
      set_output(t, run_coroutine_to_end(*def_, node, input, ctx));
    } else {
      set_output(t, def_->fns[node](input, ctx));
    }
    collect_extras(t.info, out(t), t.go_to);
  }

  void name_new_messages(Task& t) override {
    Output& o = out(t);
    const auto name = [](Update<S>& u) {
      for_each_field<S>([&](auto i) {
        if constexpr (std::is_same_v<typename field_t<S, i>::update_type, ListUpdate<Message>>) {
          auto& slot = u.template slot<i>();
          if (!slot) return;
          auto* list = std::get_if<0>(&*slot);
          if (list == nullptr || list->is_keep()) return;
          for (Message& m : list->items()) {
            if (m.id.empty()) m.id = new_uuid4();
          }
        }
      });
    };
    for (auto& u : o.pushed) name(u);
    name(o.update);
    for (auto& u : o.more) name(u);
  }

  bool take_parent_command(Task& t, ParentCommand& pc) override {
    auto command = parent_command<S>(pc);
    if (command) set_output(t, std::move(*command));
    return command.has_value();
  }

  std::shared_ptr<NodeAttempt> make_attempt(const Task& t) override {
    if (!snapshot_) snapshot_ = std::make_shared<const S>(state_);
    auto attempt = std::make_shared<TypedAttempt<S>>();
    attempt->def = def_;
    attempt->snapshot = snapshot_;
    attempt->node = t.node;
    return attempt;
  }

  void take_attempt_output(Task& t, NodeAttempt& attempt) override {
    auto& a = static_cast<TypedAttempt<S>&>(attempt);
    if (!a.returned || !a.output) return;
    set_output(t, std::move(*a.output));
    collect_extras(a.info, out(t), t.go_to);
  }

  void release_snapshot() noexcept override { snapshot_.reset(); }

  [[noreturn]] void raise_parent_command(Task& t) override {
    Command<S> command{std::move(out(t).update), std::move(t.go_to), {}, {}};
    std::vector<Goto> go_to = command.go_to;
    const bool has_update = !command.update.empty();
    throw ParentCommand{std::any(std::move(command)), std::move(go_to), has_update};
  }

  /// Applies the step's writes, picks the next tasks and streams the step.
  void finish_step() override {
    const bool single = tasks_.size() == 1;
    if (!single) {
      // A router reads the state as its own node left it: the step's snapshot plus that node's
      // writes, not its siblings'.
      for (Task& t : tasks_) {
        if (topo_.branches_of[static_cast<std::size_t>(t.node)].empty()) continue;
        S local = state_;
        const Output& o = out(t);
        for (const auto& u : o.pushed) apply_update(local, Update<S>(u), name_of(t.node));
        apply_update(local, Update<S>(o.update), name_of(t.node));
        for (const auto& u : o.more) apply_update(local, Update<S>(u), name_of(t.node));
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
        if (!t.has_output) continue;
        Output& o = out(t);
        for (auto& u : o.pushed) add(t, u);
        add(t, o.update);
        for (auto& u : o.more) add(t, u);
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

  void set_managed_values() override {
    for_each_field<S>([&](auto i) {
      using M = typename field_t<S, i>::value_type;
      if constexpr (std::is_same_v<M, RemainingSteps>) {
        field_value<i>(state_).value = stop_ - step_;
      } else if constexpr (std::is_same_v<M, IsLastStep>) {
        field_value<i>(state_).value = step_ == stop_ - 1;
      }
    });
  }

  // ------------------------------------------------------------------ checkpoints

  void restore_fields(const CheckpointTuple& tuple) override {
    Codec::restore(state_, caches_, tuple);
  }

  /// Restores the thread as the last run on it left it, if that is still its latest checkpoint.
  bool restore_recent() override {
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
    def_->recent->put(
        shared_->cfg.thread_id,
        FinishedThread<S>{stored_.checkpoint_id, state_, std::move(caches_), std::move(versions_),
                          std::move(versions_seen_), saved_step_});
  }

  void restore_output(Task& t, const std::vector<PendingWrite>& writes) override {
    std::vector<Update<S>> more;
    set_output(t, Codec::restore_command(
                      writes, more, [&](const nlohmann::json& go) { return goto_from_json(go); }));
    for (auto& u : more) out(t).more.push_back(std::move(u));
    t.ran = true;
  }

  void apply_saved_write(std::size_t field, const nlohmann::json& value) override {
    apply_update_to_state(Codec::saved_write(field, value), INPUT);
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

  /// A resuming Command's update and gotos (LangGraph's NULL task writes): saved against the
  /// checkpoint the run resumes, and applied before its next step, whose tasks keep their ids
  /// (so their saved writes and interrupts still match).
  void apply_command(std::optional<Update<S>> update, std::vector<Goto> go_to) {
    // A goto to no node, or an update a reducer refuses, fails the run before anything is saved:
    // saved, it would fail every later read of the checkpoint.
    for (const Goto& go : go_to) (void)goto_node(go, "the resuming Command");
    // The writes of earlier Commands on this checkpoint stay first (LangGraph accumulates them).
    ChannelWrites writes = null_writes_;
    if (!go_to.empty()) writes.emplace_back(std::string(kGotoWrite), gotos_json(go_to));
    if (update) {
      append_field_writes(*update, writes, /*for_saver=*/saver_deltas_);
      apply_update_to_state(std::move(*update), INPUT);
    }
    save_writes(std::string(kRunTaskId), std::move(writes));
    for (Goto& go : go_to) follow(go, "the resuming Command");
  }

  void append_task_writes(const Task& t, ChannelWrites& writes, bool for_saver,
                          bool appendable) override {
    const Output& o = out(t);
    appendable = appendable && o.pushed.empty() && o.more.empty();
    for (const auto& u : o.pushed) append_field_writes(u, writes, for_saver);
    append_field_writes(o.update, writes, for_saver, appendable);
    for (const auto& u : o.more) append_field_writes(u, writes, for_saver);
  }

  void append_field_writes(const Update<S>& update, ChannelWrites& writes, bool for_saver = false,
                           bool appendable = false) {
    Codec::append_writes(update, writes, for_saver, appendable, &state_, &caches_);
  }

  nlohmann::json field_json(std::size_t field) const override {
    return Codec::field_json(state_, field);
  }

  bool field_list_delta(std::size_t field, ListDelta& delta) const override {
    return Codec::list_delta(state_, caches_, field, stored_version_[field], delta);
  }

  void field_stored(std::size_t field) override { Codec::stored(state_, caches_, field); }

  nlohmann::json state_json() const override { return Codec::state_json(state_); }

  nlohmann::json send_arg_json(
      const std::string& node, const std::any& arg,
      const std::function<nlohmann::json(const std::any&)>& to_json) const override {
    return Codec::send_arg_json(node, arg, to_json);
  }

  // ------------------------------------------------------------------ streaming

  StreamEvent<S> event(StreamMode mode, int step, std::string node) const {
    StreamEvent<S> e;
    e.mode = mode;
    e.step = step;
    e.node = std::move(node);
    e.ns = stream_sink_->ns;
    return e;
  }

  void sink(StreamMode mode, int step, std::string node, nlohmann::json data,
            std::vector<Interrupt> interrupts) override {
    StreamEvent<S> e = event(mode, step, std::move(node));
    e.data = std::move(data);
    e.interrupts = std::move(interrupts);
    stream_sink_->sink(std::move(e));
  }

  void emit_state(std::vector<Interrupt> interrupts) override {
    if (!streams(StreamMode::values)) return;
    StreamEvent<S> e = event(StreamMode::values, step_, {});
    e.values = state_;
    e.interrupts = std::move(interrupts);
    stream_sink_->sink(std::move(e));
  }

  void emit_task_updates(const Task& t, bool cached) override {
    const Output& o = out(t);
    StreamEvent<S> e = event(StreamMode::updates, step_, name_of(t.node));
    e.update = o.update;
    e.cached = cached;
    stream_sink_->sink(std::move(e));
    // Several Commands: one event per update, in order.
    for (const auto& more : o.more) {
      StreamEvent<S> m = event(StreamMode::updates, step_, name_of(t.node));
      m.update = more;
      m.cached = cached;
      stream_sink_->sink(std::move(m));
    }
  }

  void emit_message(MessageEvent&& m) override {
    StreamEvent<S> e = event(StreamMode::messages, m.step, std::move(m.node));
    e.message = std::move(m.chunk);
    e.complete = m.complete;
    e.data = std::move(m.metadata);
    stream_sink_->sink(std::move(e));
  }

  void emit_child(ForeignEvent&& child) override {
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
      e.message = std::move(child.message);
      e.complete = child.complete;
    }
    stream_sink_->sink(std::move(e));
  }

  template <class Seq>
  struct ScratchOf;
  template <std::size_t... I>
  struct ScratchOf<std::index_sequence<I...>> {
    using type = std::tuple<std::vector<Write<typename field_t<S, I>::reducer_type>*>...>;
  };

  std::shared_ptr<const GraphDef<S>> def_;
  StreamSpec<S>* stream_sink_;
  S state_{};
  FieldCaches<S> caches_;
  std::vector<Output> outs_;           // by task index
  std::shared_ptr<const S> snapshot_;  // the step's state for timed attempts
  typename ScratchOf<std::make_index_sequence<field_count_v<S>>>::type scratch_;
  std::vector<std::string_view> names_;
};

}  // namespace sg::detail
