// SPDX-License-Identifier: MIT
#pragma once
// OpenTelemetry traces of runs: OtlpTracer receives a run's spans (sg::Callbacks) and sends them
// to an OpenTelemetry collector over OTLP/HTTP with JSON bodies (POST <endpoint>, the protobuf
// JSON mapping of the OTLP specification). Names and attributes follow OpenTelemetry's GenAI
// semantic conventions ("chat <model>", "execute_tool <tool>", gen_ai.*), plus stategraph.*
// attributes for the thread, run, checkpoint and step. Message contents are never exported.
//
// Debian 12 packages no opentelemetry-cpp, so this is a small exporter of our own over libcurl
// (already the model client's dependency): the callbacks copy what each ended span exports into
// a queue; one background thread per tracer encodes the queue as JSON and sends it in batches
// (OpenTelemetry's batch span processor, with its OTEL_BSP_* settings).
//
//   if (auto tracer = sg::OtlpTracer::from_environment()) config.callbacks.push_back(tracer);
//   graph.invoke(input, config);   // spans leave in batches, or at tracer->flush()

#include <stategraph/core/callbacks.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sg {

/// Which traces are exported (OTEL_TRACES_SAMPLER's values). The decision is made per trace:
/// traceidratio keeps a trace when its id's low 8 bytes fall under the ratio (as OpenTelemetry's
/// SDKs do), so every span of a trace gets the same answer. The parentbased_* samplers follow
/// the caller's sampled flag for a trace continued from a remote traceparent
/// (TraceContext::remote) and apply the named root sampler to the others.
enum class OtlpSampler : std::uint8_t {
  always_on,
  always_off,
  traceidratio,
  parentbased_always_on,
  parentbased_always_off,
  parentbased_traceidratio,
};

/// The sampler's OTEL_TRACES_SAMPLER name, e.g. "parentbased_traceidratio".
[[nodiscard]] std::string_view to_string(OtlpSampler sampler) noexcept;
/// Parses an OTEL_TRACES_SAMPLER name (case-sensitive, as the specification spells them).
/// Throws sg::Error (errc::kInvalidArgument) naming the accepted values for another name.
/// Thread-safe.
[[nodiscard]] OtlpSampler parse_otlp_sampler(std::string_view name);

/// Where and how OtlpTracer exports. The defaults are OpenTelemetry's.
struct OtlpOptions {
  /// The full traces URL, e.g. "http://127.0.0.1:4318/v1/traces" (http or https).
  std::string endpoint{};
  /// Extra request headers (e.g. an API key for a hosted collector).
  std::map<std::string, std::string> headers{};
  /// The resource's service.name.
  std::string service_name = "stategraph";
  /// More resource attributes (OTEL_RESOURCE_ATTRIBUTES); they may override service.version
  /// and the telemetry.sdk.* defaults, never service.name (service_name decides it).
  std::map<std::string, std::string> resource_attributes{};
  OtlpSampler sampler = OtlpSampler::parentbased_always_on;
  /// The ratio of traceidratio and parentbased_traceidratio, in [0, 1].
  double sampler_ratio = 1.0;
  /// Spans waiting at most; a span ended while the queue is full is dropped (counted).
  std::size_t max_queue_size = 2048;
  /// Spans per request at most; a full batch is sent at once.
  std::size_t max_batch_size = 512;
  /// The longest a span waits for its batch to fill.
  std::chrono::milliseconds schedule_delay{5000};
  /// One request's time limit, and the destructor's for its last flush.
  std::chrono::milliseconds export_timeout{10000};
};

/// The resource attributes an exporter with `options` sends: service.name, service.version
/// (stategraph's), telemetry.sdk.name "stategraph", telemetry.sdk.language "cpp",
/// telemetry.sdk.version, and options.resource_attributes (which override all of them but
/// service.name). Thread-safe.
[[nodiscard]] std::map<std::string, std::string> otlp_resource_attributes(
    const OtlpOptions& options);

/// Reads one environment variable: its value, or nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

/// OtlpOptions from OpenTelemetry's standard environment variables; nullopt when tracing is
/// off: OTEL_SDK_DISABLED=true, OTEL_TRACES_EXPORTER=none, or no endpoint (neither
/// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, used as it is, nor OTEL_EXPORTER_OTLP_ENDPOINT, to which
/// "/v1/traces" is appended). OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL may say http/json or
/// http/protobuf (JSON is sent: an OTLP/HTTP receiver takes both), not grpc. Also read:
/// OTEL_EXPORTER_OTLP_HEADERS and OTEL_EXPORTER_OTLP_TRACES_HEADERS ("k=v,k2=v2", values
/// percent-decoded; the traces variable wins for a key both name), OTEL_SERVICE_NAME,
/// OTEL_RESOURCE_ATTRIBUTES (its service.name when OTEL_SERVICE_NAME is unset),
/// OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG, OTEL_BSP_SCHEDULE_DELAY (ms),
/// OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE, OTEL_EXPORTER_OTLP_TIMEOUT and
/// OTEL_EXPORTER_OTLP_TRACES_TIMEOUT (ms). An empty value counts as unset. Throws sg::Error
/// (errc::kInvalidArgument) naming the variable whose value is malformed. Thread-safe when
/// `getenv` is.
[[nodiscard]] std::optional<OtlpOptions> otlp_options_from_environment(const EnvLookup& getenv);
/// The same, reading the process's environment (std::getenv). Throws as above. Thread-safe as
/// long as nothing changes the environment meanwhile.
[[nodiscard]] std::optional<OtlpOptions> otlp_options_from_environment();

/// What an OtlpTracer has done so far.
struct OtlpExportStats {
  /// Spans the endpoint accepted (a 2xx answer, less any it reported as rejected).
  std::uint64_t exported = 0;
  /// Spans dropped because the queue was full (or still queued when the tracer stopped).
  std::uint64_t dropped = 0;
  /// Spans whose export failed: no connection, a non-2xx answer after the retry, a timeout,
  /// or rejected in a partial success.
  std::uint64_t failed = 0;
  /// Spans the sampler left out.
  std::uint64_t not_sampled = 0;
  /// HTTP requests sent, retries included.
  std::uint64_t requests = 0;
  /// Requests that got no 2xx answer (each attempt).
  std::uint64_t failed_requests = 0;
  /// Spans waiting in the queue now.
  std::size_t queued = 0;
};

/// Exports a run's spans to OpenTelemetry: put it in RunConfig::callbacks. Each end event
/// (on_run_end, on_node_end, on_model_end, on_tool_end, on_checkpoint) of a sampled trace
/// becomes an OTLP span queued for the background thread, which encodes and sends a batch when
/// it is full or when the schedule delay has passed. A callback never waits for the network nor
/// builds JSON: it copies the span's ids, times, status, texts and token counts (and the reply's
/// model, id and finish reasons) and takes a short lock; when the queue is full the span is
/// dropped and counted. A span the sampler leaves out is only counted.
/// Failed exports are counted and logged (sg::log, warn) with their cause, never thrown; a 429,
/// 502, 503 or 504 answer is retried once. Thread-safe.
class OtlpTracer : public Callbacks {
 public:
  /// Starts the exporter thread. Throws sg::Error (errc::kInvalidArgument) for an endpoint
  /// that is not an http(s) URL, a zero batch or queue size, a batch larger than the queue or
  /// a sampler ratio outside [0, 1].
  explicit OtlpTracer(OtlpOptions options);
  /// Flushes what is queued (waiting at most export_timeout), then stops the thread; a request
  /// still running then is aborted.
  ~OtlpTracer() override;
  OtlpTracer(const OtlpTracer&) = delete;
  OtlpTracer& operator=(const OtlpTracer&) = delete;

  /// A tracer configured by otlp_options_from_environment(), or null when the environment
  /// turns tracing off. Throws sg::Error (errc::kInvalidArgument) naming a malformed variable.
  [[nodiscard]] static std::shared_ptr<OtlpTracer> from_environment();

  void on_run_end(const Span& run) override;
  void on_node_end(const Span& node) override;
  void on_model_end(const Span& model) override;
  void on_tool_end(const Span& tool) override;
  void on_checkpoint(const Span& write) override;

  /// Sends every span queued before the call and waits until their exports ended (sent or
  /// failed). False when `timeout` passed first. Thread-safe.
  bool flush(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  /// The counters now. Thread-safe.
  [[nodiscard]] OtlpExportStats stats() const;
  /// Whether the sampler exports the trace of `context` (the same answer for every span of a
  /// trace). A caller that propagates a traceparent may set its sampled flag from it.
  /// Thread-safe.
  [[nodiscard]] bool sampled(const TraceContext& context) const noexcept;
  /// The options it was made with.
  [[nodiscard]] const OtlpOptions& options() const noexcept;

 private:
  void export_span(const Span& span);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sg
