// SPDX-License-Identifier: MIT
#include "telemetry.hpp"

#include <stategraph/core/time.hpp>
#include <stategraph/store/kv_store.hpp>

namespace sg::server {
namespace {

std::int64_t micros_of(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

/// The span as the timeline shows it.
nlohmann::json span_json(const Span& s) {
  TraceContext parent = s.context;
  parent.span_id = s.parent_span_id;
  nlohmann::json out = {
      {"kind", to_string(s.kind)},
      {"name", s.name},
      {"trace_id", s.context.trace_id_hex()},
      {"span_id", s.context.span_id_hex()},
      {"parent_span_id",
       s.parent_span_id == std::array<std::uint8_t, 8>{} ? std::string() : parent.span_id_hex()},
      {"start", iso_timestamp(micros_of(s.start))},
      {"end", iso_timestamp(micros_of(s.end))},
      {"duration_ms",
       static_cast<double>(
           std::chrono::duration_cast<std::chrono::microseconds>(s.duration()).count()) /
           1000.0},
      {"status", to_string(s.status)}};
  if (!s.error.empty()) out["error"] = s.error;
  if (!s.node.empty()) out["node"] = s.node;
  if (s.step >= 0) out["step"] = s.step;
  if (!s.checkpoint_ns.empty()) out["checkpoint_ns"] = s.checkpoint_ns;
  if (s.kind == SpanKind::model) {
    out["provider"] = s.provider;
    if (s.input_tokens >= 0) out["input_tokens"] = s.input_tokens;
    if (s.output_tokens >= 0) out["output_tokens"] = s.output_tokens;
  }
  if (s.kind == SpanKind::tool) out["tool_call_id"] = s.tool_call_id;
  if (s.kind == SpanKind::checkpoint) {
    out["checkpoints"] = s.checkpoints;
    out["bytes"] = s.bytes;
  }
  return out;
}

double seconds_of(std::chrono::steady_clock::duration took) {
  return std::chrono::duration<double>(took).count();
}

}  // namespace

void RecentSpans::add(const Span& s) {
  if (s.run_id.empty()) return;  // a run without an id is not the server's
  Span entry = s;                // JSON only when asked for: the run's path just copies
  entry.messages = nullptr;
  entry.reply = nullptr;
  entry.arguments = nullptr;
  entry.result = nullptr;
  std::lock_guard lock(mu_);
  auto it = by_run_.find(s.run_id);
  if (it == by_run_.end()) {
    if (order_.size() >= kRuns) {
      by_run_.erase(order_.front());
      order_.pop_front();
    }
    it = by_run_.emplace(s.run_id, std::vector<Span>{}).first;
    order_.push_back(s.run_id);
  }
  if (it->second.size() < kSpansPerRun) it->second.push_back(std::move(entry));
}

nlohmann::json RecentSpans::spans(const std::string& run_id) const {
  std::vector<Span> kept;
  {
    std::lock_guard lock(mu_);
    const auto it = by_run_.find(run_id);
    if (it != by_run_.end()) kept = it->second;
  }
  nlohmann::json out = nlohmann::json::array();
  for (const Span& s : kept) out.push_back(span_json(s));
  return out;
}

ServerTelemetry::ServerTelemetry(const ServerOptions& options)
    : run_metrics_(std::make_shared<RunMetrics>(registry_)),
      recent_(std::make_shared<RecentSpans>()),
      http_requests_(registry_.counter("stategraph_http_requests_total",
                                       "HTTP requests answered, by method, route and status",
                                       {"method", "route", "status"})),
      http_duration_(registry_.histogram(
          "stategraph_http_request_duration_seconds",
          "Time to answer an HTTP request (a streamed response: until its run ended)",
          {"method", "route"}, exponential_buckets(0.0005, 4, 10))),
      runs_(registry_.counter("stategraph_runs_total", "Runs that ended, by graph and status",
                              {"graph", "status"})),
      run_duration_(registry_.histogram("stategraph_run_duration_seconds",
                                        "Time from a run's start to its end, by graph", {"graph"},
                                        exponential_buckets(0.001, 4, 11))) {
  register_process_metrics(registry_);
  callbacks_ = {run_metrics_, recent_};
  if (options.tracing) {
    tracer_ = std::make_shared<OtlpTracer>(*options.tracing);
    callbacks_.push_back(tracer_);
  }
  callbacks_.insert(callbacks_.end(), options.callbacks.begin(), options.callbacks.end());
}

ServerTelemetry::~ServerTelemetry() = default;

void ServerTelemetry::request(std::string_view method, std::string_view route, unsigned status,
                              std::chrono::steady_clock::duration took) {
  http_requests_.with({std::string(method), std::string(route), std::to_string(status)}).inc();
  http_duration_.with({std::string(method), std::string(route)}).observe(seconds_of(took));
}

void ServerTelemetry::run_ended(const std::string& graph_id, std::string_view status,
                                std::chrono::steady_clock::duration took) {
  runs_.with({graph_id, status.empty() ? std::string("deleted") : std::string(status)}).inc();
  run_duration_.with({graph_id}).observe(seconds_of(took));
}

void ServerTelemetry::add_gauge(const std::string& name, const std::string& help,
                                std::function<double()> read) {
  registry_.gauge(name, help).set_callback({}, std::move(read));
}

void ServerTelemetry::watch_store(std::shared_ptr<Store> store) {
  auto kv = std::dynamic_pointer_cast<KvStore>(std::move(store));
  if (!kv) return;
  const CounterFamily ops = registry_.counter(
      "stategraph_store_operations_total",
      "Operations on the long-term memory store (the API's and the graphs'), by kind", {"op"});
  using Counts = KvStore::OperationCounts;
  const std::pair<const char*, std::uint64_t Counts::*> kinds[] = {
      {"get", &Counts::get},
      {"put", &Counts::put},
      {"delete", &Counts::del},
      {"search", &Counts::search},
      {"list_namespaces", &Counts::list_namespaces}};
  for (const auto& [name, field] : kinds) {
    ops.set_callback(
        {name}, [kv, field = field] { return static_cast<double>(kv->operation_counts().*field); });
  }
}

void ServerTelemetry::flush() {
  if (tracer_) (void)tracer_->flush(std::chrono::seconds(5));
}

}  // namespace sg::server
