// SPDX-License-Identifier: MIT
// The OTLP exporter's counters as Prometheus series.

#include <stategraph/telemetry/metrics.hpp>
#include <stategraph/telemetry/otlp.hpp>

#include <memory>
#include <mutex>

namespace sg {
namespace {

/// The tracer, weakly, and its last stats: a tracer gone keeps its counters where they were.
class OtlpStatsSource {
 public:
  explicit OtlpStatsSource(const std::shared_ptr<OtlpTracer>& tracer) : tracer_(tracer) {}

  OtlpExportStats read() {
    std::lock_guard lock(mu_);
    if (const auto t = tracer_.lock()) {
      last_ = t->stats();
    } else {
      last_.queued = 0;
    }
    return last_;
  }

 private:
  std::mutex mu_;
  std::weak_ptr<OtlpTracer> tracer_;
  OtlpExportStats last_{};
};

}  // namespace

void register_otlp_metrics(MetricsRegistry& registry, const std::shared_ptr<OtlpTracer>& tracer) {
  auto source = std::make_shared<OtlpStatsSource>(tracer);
  const auto reader = [source](std::uint64_t OtlpExportStats::*field) {
    return [source, field] { return static_cast<double>(source->read().*field); };
  };
  const CounterFamily spans = registry.counter(
      "stategraph_otlp_spans_total", "Spans the OTLP exporter handled, by outcome", {"outcome"});
  spans.set_callback({"exported"}, reader(&OtlpExportStats::exported));
  spans.set_callback({"dropped"}, reader(&OtlpExportStats::dropped));
  spans.set_callback({"failed"}, reader(&OtlpExportStats::failed));
  spans.set_callback({"not_sampled"}, reader(&OtlpExportStats::not_sampled));
  const CounterFamily requests =
      registry.counter("stategraph_otlp_export_requests_total",
                       "Export requests the OTLP exporter sent, by outcome", {"outcome"});
  requests.set_callback({"ok"}, [source] {
    const OtlpExportStats s = source->read();
    return static_cast<double>(s.requests - s.failed_requests);
  });
  requests.set_callback({"error"}, reader(&OtlpExportStats::failed_requests));
  registry.gauge("stategraph_otlp_queued_spans", "Spans waiting to be exported")
      .set_callback({}, [source] { return static_cast<double>(source->read().queued); });
}

}  // namespace sg
