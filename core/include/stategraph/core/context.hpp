#pragma once

#include <stategraph/core/graph_types.hpp>

#include <nlohmann/json.hpp>

#include <any>
#include <array>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace sg {

class Store;

namespace detail {

/// What a node task needs from its run (implemented by the executor).
class RunHooks {
 public:
  virtual ~RunHooks() = default;
  [[nodiscard]] virtual const RunConfig& config() const noexcept = 0;
  [[nodiscard]] virtual Store* store() const noexcept = 0;
  /// Delivers a custom stream event (from any thread).
  virtual void write_custom(const std::string& node, int step, nlohmann::json value) = 0;
  /// True when the current superstep is being abandoned (a sibling task failed).
  [[nodiscard]] virtual bool aborted() const noexcept = 0;
  /// Streaming of subgraph runs: the parent's modes and namespace (empty modes: not streamed),
  /// its event sink (an EventSink<ParentState>*), and a way to run a delivery on the thread that
  /// owns the parent's stream.
  [[nodiscard]] virtual StreamModes subgraph_modes() const noexcept = 0;
  [[nodiscard]] virtual const std::vector<std::string>& stream_ns() const noexcept = 0;
  [[nodiscard]] virtual void* event_sink() const noexcept = 0;
  virtual void deliver(std::function<void()> delivery) = 0;
  /// The run's checkpointer (subgraphs compiled without one use it), or null.
  [[nodiscard]] virtual Checkpointer* checkpointer() const noexcept = 0;
};

/// Per-task data a Context exposes.
struct TaskInfo {
  std::string_view node;  // points into the compiled graph
  int step = 0;
  std::array<char, 16> id{};  // hex digits of the task id
  int attempt = 1;
  /// Resume values for this task's interrupt() calls, in call order.
  std::vector<nlohmann::json> resume{};
  std::size_t interrupts_seen = 0;
};

/// Thrown by interrupt() to stop the task; the executor turns it into an interrupted result.
struct GraphInterrupt {
  std::vector<Interrupt> interrupts;
};

/// Thrown out of a subgraph's run when one of its nodes returned Command{.graph = PARENT}; the
/// parent graph's node applies the command.
struct ParentCommand {
  std::any command;  // Command<State of the parent>
};

}  // namespace detail

/// What a node gets besides the state: the run's config, its place in the run, cancellation,
/// custom streaming, interrupts and the store. Valid only during the node call; one per task, used
/// by the thread running the node.
class Context {
 public:
  Context(detail::RunHooks& run, detail::TaskInfo& task) noexcept : run_(&run), task_(&task) {}

  /// The run's configuration (thread id, configurable values, runtime context, ...).
  [[nodiscard]] const RunConfig& config() const noexcept { return run_->config(); }
  /// The node being run.
  [[nodiscard]] std::string_view node() const noexcept { return task_->node; }
  /// The superstep.
  [[nodiscard]] int step() const noexcept { return task_->step; }
  /// The attempt number (1 for the first; see RetryPolicy).
  [[nodiscard]] int attempt() const noexcept { return task_->attempt; }
  /// A deterministic id of this task (16 hex digits).
  [[nodiscard]] std::string_view task_id() const noexcept {
    return {task_->id.data(), task_->id.size()};
  }
  /// The long-term memory store given to compile(), or null.
  [[nodiscard]] Store* store() const noexcept { return run_->store(); }

  /// True once the run was cancelled, or a sibling task of this superstep failed; long nodes
  /// should check it and return.
  [[nodiscard]] bool cancelled() const noexcept {
    return run_->config().cancellation.cancelled() || run_->aborted();
  }
  /// Throws CancelledError if the run was cancelled.
  void throw_if_cancelled() const {
    if (cancelled()) throw CancelledError();
  }

  /// Streams `value` to the run's `custom` stream mode. Thread-safe.
  void write(nlohmann::json value) const {
    run_->write_custom(std::string(task_->node), task_->step, std::move(value));
  }

  /// Pauses the run for human input: the first call in a task stops the run, which returns an
  /// interrupted RunResult carrying `value`; when the run is resumed with Command{.resume}, the
  /// node runs again from the start and this call returns the resume value (the k-th call the
  /// k-th value). Do not catch the exception it throws (catch (...) must rethrow).
  nlohmann::json interrupt(nlohmann::json value) const;

  /// The run behind this context (for stategraph's own use, e.g. running subgraphs).
  [[nodiscard]] detail::RunHooks& run_hooks() const noexcept { return *run_; }
  /// The values the run was resumed with for this task's interrupts, in order.
  [[nodiscard]] const std::vector<nlohmann::json>& resume_values() const noexcept {
    return task_->resume;
  }

 private:
  detail::RunHooks* run_;
  detail::TaskInfo* task_;
};

/// The Context of the node running on this thread, or null outside a node.
[[nodiscard]] Context* current_context() noexcept;

/// `sg::interrupt(value)` inside a node: see Context::interrupt. Throws sg::Error outside a node.
nlohmann::json interrupt(nlohmann::json value);

namespace detail {
/// Makes `ctx` the current context of this thread for the lifetime of the guard.
class CurrentContextGuard {
 public:
  explicit CurrentContextGuard(Context* ctx) noexcept;
  ~CurrentContextGuard();
  CurrentContextGuard(const CurrentContextGuard&) = delete;
  CurrentContextGuard& operator=(const CurrentContextGuard&) = delete;

 private:
  Context* previous_;
};
}  // namespace detail

}  // namespace sg
