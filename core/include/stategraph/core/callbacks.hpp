// SPDX-License-Identifier: MIT
#pragma once
// Callbacks: what a run reports to tracers and metrics as it goes, in the shape of LangChain's
// callback handlers. Each operation is a span: the run (the graph), each node task, each model
// call, each tool call and each checkpoint write. A span has W3C trace ids, so exporters send it
// to OpenTelemetry as it is.
//
//   struct Printer : sg::Callbacks {
//     void on_node_end(const sg::Span& s) override { std::cout << s.name << "\n"; }
//   };
//   sg::RunConfig config;
//   config.callbacks.push_back(std::make_shared<Printer>());
//   graph.invoke(input, config);
//
// A run without callbacks pays one branch per hook point and makes no span.

#include <stategraph/core/message.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sg {

/// A W3C trace context: the trace a span belongs to, the span's id and the sampled flag (the
/// `traceparent` header). `remote` marks a trace continued from another process's traceparent
/// (its children keep the flag), so that parent-based samplers follow the caller's decision.
struct TraceContext {
  std::array<std::uint8_t, 16> trace_id{};
  std::array<std::uint8_t, 8> span_id{};
  bool sampled = true;
  bool remote = false;

  /// True when both ids are non-zero (W3C: all-zero ids are invalid).
  [[nodiscard]] bool valid() const noexcept;
  /// 32 lowercase hex digits.
  [[nodiscard]] std::string trace_id_hex() const;
  /// 16 lowercase hex digits.
  [[nodiscard]] std::string span_id_hex() const;
  /// The `traceparent` header value: "00-<trace id>-<span id>-<flags>".
  [[nodiscard]] std::string traceparent() const;
  /// Parses a `traceparent` header (version 00, or a later version's first four fields); nullopt
  /// when it is malformed or its ids are zero. The result is `remote`. Thread-safe.
  [[nodiscard]] static std::optional<TraceContext> parse(std::string_view header) noexcept;
  /// A new trace with a random trace id and span id. Thread-safe.
  [[nodiscard]] static TraceContext root();
  /// A new span of this trace: the same trace id and flags, a random span id. Thread-safe.
  [[nodiscard]] TraceContext child() const;
};

/// What a span measures.
enum class SpanKind : std::uint8_t { run, node, model, tool, checkpoint };
/// How a span ended: ok, or the reason it did not.
enum class SpanStatus : std::uint8_t { ok, error, interrupted, cancelled };

/// "run", "node", "model", "tool" or "checkpoint".
[[nodiscard]] std::string_view to_string(SpanKind kind) noexcept;
/// "ok", "error", "interrupted" or "cancelled".
[[nodiscard]] std::string_view to_string(SpanStatus status) noexcept;

/// One operation of a run, as callbacks see it. The start events carry the ids, the name and
/// the start time; the end events add the end time, the status and what the operation
/// produced. The pointers are valid during the callback only.
struct Span {
  SpanKind kind = SpanKind::run;
  TraceContext context{};
  /// The parent span (zero for a root span): the run for a node, the node for a model or tool
  /// call or a subgraph's run, the caller's span for a run given a trace parent.
  std::array<std::uint8_t, 8> parent_span_id{};
  /// The graph (run), node, model or tool name; "checkpoint" for a checkpoint write.
  std::string name{};
  std::chrono::system_clock::time_point start{};
  std::chrono::system_clock::time_point end{};  // set in end events
  SpanStatus status = SpanStatus::ok;
  /// The error's message (status error), set in end events.
  std::string error{};
  /// The error's type: an sg::Error's code (e.g. "model.http_status"), else "exception".
  std::string error_type{};

  // Where in the run: the run's thread, run id and checkpoint namespace; for node, model and
  // tool spans the superstep and task id; for checkpoint spans the checkpoint id.
  std::string thread_id{};
  std::string run_id{};
  std::string checkpoint_ns{};
  std::string checkpoint_id{};
  int step = -1;
  std::string task_id{};
  /// The node a model or tool call ran in.
  std::string node{};

  // Model calls: the provider ("openai", "local", ...), the messages (start), the reply (end)
  // and its token usage (-1: not reported).
  std::string provider{};
  const std::vector<Message>* messages = nullptr;
  const Message* reply = nullptr;
  std::int64_t input_tokens = -1;
  std::int64_t output_tokens = -1;

  // Tool calls: the call's id and arguments (start) and the tool message (end).
  std::string tool_call_id{};
  const nlohmann::json* arguments = nullptr;
  const Message* result = nullptr;

  // Checkpoint writes: the checkpoints and bytes written (bytes: 0 when the saver does not
  // report them, see note_checkpoint_bytes).
  int checkpoints = 0;
  std::uint64_t bytes = 0;

  /// end - start.
  [[nodiscard]] std::chrono::nanoseconds duration() const noexcept { return end - start; }
};

/// Receives a run's spans (LangChain's callback handler). Every method does nothing by default:
/// override what you need. Methods are called from the threads that run the operations
/// (several at once in parallel steps), so implementations must be thread-safe, and fast: they
/// run on the run's path. An exception a callback throws is caught and logged; the run goes on.
class Callbacks {
 public:
  virtual ~Callbacks() = default;
  virtual void on_run_start(const Span& run) { (void)run; }
  /// The run ended: ok (done), interrupted, cancelled, or error with its cause.
  virtual void on_run_end(const Span& run) { (void)run; }
  virtual void on_node_start(const Span& node) { (void)node; }
  virtual void on_node_end(const Span& node) { (void)node; }
  /// A node's attempt failed and is retried: `error` says why; `next_attempt` is 2 or more.
  virtual void on_node_retry(const Span& node, std::string_view error, int next_attempt) {
    (void)node, (void)error, (void)next_attempt;
  }
  virtual void on_model_start(const Span& model) { (void)model; }
  /// A piece of a streamed reply.
  virtual void on_model_token(const Span& model, const MessageChunk& chunk) {
    (void)model, (void)chunk;
  }
  virtual void on_model_end(const Span& model) { (void)model; }
  virtual void on_tool_start(const Span& tool) { (void)tool; }
  virtual void on_tool_end(const Span& tool) { (void)tool; }
  /// Checkpoints were written (one event per write to the saver, with its duration).
  virtual void on_checkpoint(const Span& write) { (void)write; }
};

/// The callbacks of a run: what RunConfig::callbacks holds.
using CallbackList = std::vector<std::shared_ptr<Callbacks>>;

/// A saver reports `bytes` it wrote for the checkpoints of the current put_all() call, on the
/// calling thread; checkpoint spans carry the sum. Thread-safe (a per-thread counter).
void note_checkpoint_bytes(std::uint64_t bytes) noexcept;

namespace detail {

/// The bytes note_checkpoint_bytes counted on this thread so far.
[[nodiscard]] std::uint64_t checkpoint_bytes_noted() noexcept;

/// Logs (sg::log, warn) the exception a callback threw, being handled.
void log_callback_error() noexcept;

/// Calls `method` of each callback with `args`; an exception a callback throws is logged
/// (sg::log, warn) and dropped.
template <class... Params, class... Args>
void notify(const CallbackList& callbacks, void (Callbacks::*method)(Params...),
            Args&&... args) noexcept {
  for (const auto& c : callbacks) {
    try {
      ((*c).*method)(args...);
    } catch (...) {
      log_callback_error();
    }
  }
}

/// Fills `span`'s error, error_type and status from `error` (cancelled for a CancelledError).
void set_span_error(Span& span, const std::exception_ptr& error);

}  // namespace detail

}  // namespace sg
