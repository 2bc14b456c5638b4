// SPDX-License-Identifier: MIT
#pragma once
// The server's metrics (GET /metrics), its traces (OTLP) and the spans of recent runs (the
// studio's timeline): what every run reports, and what the server counts itself.

#include <stategraph/core/callbacks.hpp>
#include <stategraph/server/server.hpp>
#include <stategraph/telemetry/metrics.hpp>
#include <stategraph/telemetry/otlp.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace sg::server {

/// The spans of the most recent runs, by run id, for GET /threads/{}/runs/{}/spans: the
/// run, its nodes (with their subgraphs' runs and nodes), model and tool calls, and checkpoint
/// writes, as JSON. Keeps kRuns runs and kSpansPerRun spans each. Thread-safe.
class RecentSpans : public Callbacks {
 public:
  static constexpr std::size_t kRuns = 256;
  static constexpr std::size_t kSpansPerRun = 2000;

  void on_run_end(const Span& s) override { add(s); }
  void on_node_end(const Span& s) override { add(s); }
  void on_model_end(const Span& s) override { add(s); }
  void on_tool_end(const Span& s) override { add(s); }
  void on_checkpoint(const Span& s) override { add(s); }

  /// The spans of run `run_id` in the order they ended (`[]` when none is kept): objects with
  /// kind, name, span_id, parent_span_id, trace_id, start and end (ISO 8601), duration_ms,
  /// status, and the fields that apply (node, step, error, model, provider, input_tokens,
  /// output_tokens, tool_call_id, checkpoints, bytes).
  [[nodiscard]] nlohmann::json spans(const std::string& run_id) const;

 private:
  void add(const Span& s);

  mutable std::mutex mu_;
  std::map<std::string, std::vector<Span>> by_run_;  // copies, their pointers cleared
  std::deque<std::string> order_;                    // run ids, oldest first
};

/// Everything the server observes. Thread-safe.
class ServerTelemetry {
 public:
  /// Registers the server's metric families; starts the OTLP exporter of options.tracing.
  /// Throws sg::Error (errc::kInvalidArgument) for bad tracing options.
  explicit ServerTelemetry(const ServerOptions& options);
  ~ServerTelemetry();
  ServerTelemetry(const ServerTelemetry&) = delete;
  ServerTelemetry& operator=(const ServerTelemetry&) = delete;

  /// What every run reports to: the metrics, the recent spans, the tracer, and
  /// ServerOptions::callbacks.
  [[nodiscard]] const CallbackList& run_callbacks() const noexcept { return callbacks_; }
  /// A request answered: counted by method, route and status, its duration observed.
  void request(std::string_view method, std::string_view route, unsigned status,
               std::chrono::steady_clock::duration took);
  /// A run ended with `status` (success, error, interrupted, timeout; "" for a deleted one).
  void run_ended(const std::string& graph_id, std::string_view status,
                 std::chrono::steady_clock::duration took);
  /// Gauges read when /metrics is rendered (the run queue, open connections, the store).
  void add_gauge(const std::string& name, const std::string& help, std::function<double()> read);
  /// Counts of the store's operations by kind, read at render time.
  void watch_store(std::shared_ptr<Store> store);
  /// GET /metrics: the text exposition format.
  [[nodiscard]] std::string render() const { return registry_.render(); }
  [[nodiscard]] const RecentSpans& recent() const noexcept { return *recent_; }
  /// Sends the spans still queued (at stop).
  void flush();

 private:
  MetricsRegistry registry_;
  std::shared_ptr<RunMetrics> run_metrics_;
  std::shared_ptr<RecentSpans> recent_;
  std::shared_ptr<OtlpTracer> tracer_;
  CallbackList callbacks_;
  CounterFamily http_requests_;
  HistogramFamily http_duration_;
  CounterFamily runs_;
  HistogramFamily run_duration_;
};

}  // namespace sg::server
