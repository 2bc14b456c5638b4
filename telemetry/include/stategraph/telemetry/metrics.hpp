// SPDX-License-Identifier: MIT
#pragma once
// Prometheus metrics: a registry of counter, gauge and histogram families rendered in the text
// exposition format 0.0.4 (what a /metrics endpoint serves), RunMetrics that records a run's
// model calls, tool calls, checkpoint writes and node tasks from its spans (sg::Callbacks), and
// the standard process collectors.
//
// Debian 12 packages no prometheus-cpp, so this is a small registry of our own: a family looks
// up a label set under a mutex and hands back a handle whose updates are atomics, so a hot path
// caches its handles.
//
//   sg::MetricsRegistry registry;
//   sg::register_process_metrics(registry);
//   config.callbacks.push_back(std::make_shared<sg::RunMetrics>(registry));
//   auto errors = registry.counter("stategraph_http_errors_total", "HTTP errors", {"route"});
//   errors.with({"/runs"}).inc();
//   std::string body = registry.render();   // Content-Type: kPrometheusContentType
//
// Names follow Prometheus' conventions: a `stategraph_` prefix, base units (seconds, bytes),
// counters ending in `_total`.

#include <stategraph/core/callbacks.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sg {

/// The Content-Type of MetricsRegistry::render()'s text.
inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

namespace detail {
struct MetricFamily;
struct MetricCell;
}  // namespace detail

/// One counter series (a family's label set): only goes up. A default-constructed handle does
/// nothing. Copyable; valid as long as its registry. Thread-safe and lock-free.
class Counter {
 public:
  Counter() = default;
  /// Adds `amount` (a negative or NaN amount is ignored).
  void inc(double amount = 1.0) const noexcept;
  /// The current value (0 for a null handle).
  [[nodiscard]] double value() const noexcept;

 private:
  friend class CounterFamily;
  explicit Counter(detail::MetricCell* cell) noexcept : cell_(cell) {}
  detail::MetricCell* cell_ = nullptr;
};

/// One gauge series: a value that goes up and down. A default-constructed handle does nothing.
/// Copyable; valid as long as its registry. Thread-safe and lock-free.
class Gauge {
 public:
  Gauge() = default;
  void set(double value) const noexcept;
  void inc(double amount = 1.0) const noexcept;
  void dec(double amount = 1.0) const noexcept;
  /// The current value (0 for a null handle).
  [[nodiscard]] double value() const noexcept;

 private:
  friend class GaugeFamily;
  explicit Gauge(detail::MetricCell* cell) noexcept : cell_(cell) {}
  detail::MetricCell* cell_ = nullptr;
};

/// One histogram series: observations counted into the family's buckets, with their sum and
/// count. A default-constructed handle does nothing. Copyable; valid as long as its registry.
/// Thread-safe and lock-free.
class Histogram {
 public:
  Histogram() = default;
  /// Records `value` (a NaN is ignored).
  void observe(double value) const noexcept;
  /// Observations so far.
  [[nodiscard]] std::uint64_t count() const noexcept;
  /// Their sum.
  [[nodiscard]] double sum() const noexcept;

 private:
  friend class HistogramFamily;
  explicit Histogram(detail::MetricCell* cell) noexcept : cell_(cell) {}
  detail::MetricCell* cell_ = nullptr;
};

/// A counter family: one metric name, label names, a series per label set. A handle valid as
/// long as its registry; copyable. Thread-safe.
class CounterFamily {
 public:
  /// The series of `label_values` (one per label name, in order), created at 0 on first use.
  /// Takes the family's mutex: cache the handle on hot paths. Throws sg::Error
  /// (errc::kInvalidArgument) when the number of values differs from the label names'.
  [[nodiscard]] Counter with(const std::vector<std::string>& label_values) const;
  /// Makes the series of `label_values` read `read()` at each render (e.g. CPU time), instead
  /// of a stored value; a null `read` removes that series. `read` runs on the rendering thread,
  /// must be thread-safe, and must not touch this registry. Throws like with().
  void set_callback(const std::vector<std::string>& label_values,
                    std::function<double()> read) const;
  [[nodiscard]] const std::string& name() const noexcept;

 private:
  friend class MetricsRegistry;
  explicit CounterFamily(detail::MetricFamily* family) noexcept : family_(family) {}
  detail::MetricFamily* family_;
};

/// A gauge family. As CounterFamily; a callback gauge suits values read from elsewhere (memory,
/// open connections, queue sizes). Thread-safe.
class GaugeFamily {
 public:
  /// The series of `label_values`, created at 0 on first use. Throws sg::Error
  /// (errc::kInvalidArgument) for a wrong number of values.
  [[nodiscard]] Gauge with(const std::vector<std::string>& label_values) const;
  /// As CounterFamily::set_callback.
  void set_callback(const std::vector<std::string>& label_values,
                    std::function<double()> read) const;
  [[nodiscard]] const std::string& name() const noexcept;

 private:
  friend class MetricsRegistry;
  explicit GaugeFamily(detail::MetricFamily* family) noexcept : family_(family) {}
  detail::MetricFamily* family_;
};

/// A histogram family (its bucket bounds are the family's). Thread-safe.
class HistogramFamily {
 public:
  /// The series of `label_values`, created empty on first use. Throws sg::Error
  /// (errc::kInvalidArgument) for a wrong number of values.
  [[nodiscard]] Histogram with(const std::vector<std::string>& label_values) const;
  [[nodiscard]] const std::string& name() const noexcept;
  /// The buckets' upper bounds (without +Inf).
  [[nodiscard]] const std::vector<double>& buckets() const noexcept;

 private:
  friend class MetricsRegistry;
  explicit HistogramFamily(detail::MetricFamily* family) noexcept : family_(family) {}
  detail::MetricFamily* family_;
};

/// The metric families of a process (or of a server), rendered for Prometheus. Registering a
/// name again with the same type, label names (and buckets) returns the family already there.
/// Families and series live as long as the registry. Thread-safe.
class MetricsRegistry {
 public:
  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  /// A counter family. `name` should end in `_total`. Throws sg::Error
  /// (errc::kInvalidArgument) for an invalid metric or label name, a duplicate label name, or a
  /// name registered before with another type or other labels. Thread-safe.
  CounterFamily counter(const std::string& name, const std::string& help,
                        const std::vector<std::string>& label_names = {});
  /// A gauge family. Throws as counter(). Thread-safe.
  GaugeFamily gauge(const std::string& name, const std::string& help,
                    const std::vector<std::string>& label_names = {});
  /// A histogram family with `buckets`, the upper bounds in increasing order (a final +Inf is
  /// implied). Throws as counter(), and for empty, unsorted or NaN bounds or a label named
  /// "le". Thread-safe.
  HistogramFamily histogram(const std::string& name, const std::string& help,
                            const std::vector<std::string>& label_names,
                            const std::vector<double>& buckets);

  /// Every family in the text exposition format 0.0.4, in registration order: HELP and TYPE
  /// lines, then the series in label order (histograms as cumulative `_bucket{le=...}` lines
  /// ending with +Inf, then `_sum` and `_count`). A labelled family without series is left
  /// out. Callbacks run here, outside the registry's locks; one that throws leaves its series
  /// out. Thread-safe.
  [[nodiscard]] std::string render() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Bucket bounds: `start`, `start * factor`, ... (`count` bounds). Throws sg::Error
/// (errc::kInvalidArgument) unless start > 0, factor > 1 and count >= 1. Thread-safe.
[[nodiscard]] std::vector<double> exponential_buckets(double start, double factor, int count);

/// Records a run's operations into a registry (put it in RunConfig::callbacks):
///
/// - `stategraph_model_requests_total{model,outcome}`: model calls by model and outcome ("ok",
///   "error", "cancelled"; "interrupted" for a call a human-in-the-loop interrupt stopped);
/// - `stategraph_model_request_duration_seconds{model}`: their duration (0.05 s .. 120 s);
/// - `stategraph_model_tokens_total{model,type}`: tokens reported, type "input" or "output";
/// - `stategraph_tool_calls_total{tool,outcome}`, `stategraph_tool_call_duration_seconds{tool}`;
/// - `stategraph_checkpoint_writes_total`: writes to the saver (one may hold several
///   checkpoints), `stategraph_checkpoint_write_duration_seconds` (from 50 µs),
///   `stategraph_checkpoint_write_bytes_total` (what savers report);
/// - `stategraph_node_duration_seconds{node}`: node tasks; `stategraph_node_errors_total{node}`:
///   those that failed.
///
/// Runs (by graph and status) are the server's to count: run spans are not recorded here.
/// Thread-safe.
class RunMetrics : public Callbacks {
 public:
  /// Registers the families above in `registry`, which must outlive this object. Throws sg::Error
  /// (errc::kInvalidArgument) when one of the names is registered with another type or labels.
  explicit RunMetrics(MetricsRegistry& registry);

  void on_node_end(const Span& node) override;
  void on_model_end(const Span& model) override;
  void on_tool_end(const Span& tool) override;
  void on_checkpoint(const Span& write) override;

 private:
  CounterFamily model_requests_;
  HistogramFamily model_duration_;
  CounterFamily model_tokens_;
  CounterFamily tool_calls_;
  HistogramFamily tool_duration_;
  Counter checkpoint_writes_;
  Histogram checkpoint_duration_;
  Counter checkpoint_bytes_;
  HistogramFamily node_duration_;
  CounterFamily node_errors_;
};

class OtlpTracer;

/// Registers the OTLP exporter's own counters, read from `tracer`'s stats() at each render:
/// `stategraph_otlp_spans_total{outcome}` (outcome "exported", "dropped", "failed" or
/// "not_sampled"), `stategraph_otlp_export_requests_total{outcome}` ("ok" or "error") and the
/// gauge `stategraph_otlp_queued_spans`. The registry keeps a weak reference: once the tracer
/// is gone its series keep their last values. Throws sg::Error (errc::kInvalidArgument) when a
/// name is taken by another type; a second tracer replaces the first. Thread-safe.
void register_otlp_metrics(MetricsRegistry& registry, const std::shared_ptr<OtlpTracer>& tracer);

/// This process's memory: resident (RSS) and virtual sizes in bytes.
struct ProcessMemory {
  std::uint64_t resident_bytes = 0;
  std::uint64_t virtual_bytes = 0;
};

/// Reads /proc/self/statm; nullopt where there is none (not Linux). Thread-safe.
[[nodiscard]] std::optional<ProcessMemory> read_process_memory() noexcept;

/// Registers Prometheus' standard process collectors on `registry`, read at each render:
/// process_resident_memory_bytes, process_virtual_memory_bytes, process_open_fds,
/// process_max_fds, process_start_time_seconds and process_cpu_seconds_total (from /proc; a
/// system without /proc gets none). Throws sg::Error (errc::kInvalidArgument) when one of the
/// names is taken by another type. Calling it twice is harmless. Thread-safe.
void register_process_metrics(MetricsRegistry& registry);

}  // namespace sg
