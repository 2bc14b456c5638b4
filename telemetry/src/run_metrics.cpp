// SPDX-License-Identifier: MIT
// RunMetrics: a run's spans recorded as Prometheus series.

#include <stategraph/telemetry/metrics.hpp>

#include <chrono>
#include <string>

#include "telemetry_detail.hpp"

namespace sg {
namespace {

double seconds_of(const Span& span) {
  const double s = std::chrono::duration<double>(span.duration()).count();
  return s < 0 ? 0 : s;
}

/// LLM calls: from 50 ms (a small local model) to two minutes (a long reasoning reply).
std::vector<double> model_buckets() {
  return {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120};
}
/// Tools: from a local function (1 ms) to a slow web call.
std::vector<double> tool_buckets() {
  return {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}
/// Checkpoint writes: from an in-memory saver (50 µs) to a busy database.
std::vector<double> checkpoint_buckets() {
  return {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
          0.01,    0.025,  0.05,    0.1,    0.25,  0.5,    1};
}
/// Node tasks: a plain function to an agent step with several model calls.
std::vector<double> node_buckets() {
  return {0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
}

}  // namespace

RunMetrics::RunMetrics(MetricsRegistry& registry)
    : model_requests_(registry.counter("stategraph_model_requests_total",
                                       "Chat model calls by model and outcome",
                                       {"model", "outcome"})),
      model_duration_(registry.histogram("stategraph_model_request_duration_seconds",
                                         "Duration of chat model calls", {"model"},
                                         model_buckets())),
      model_tokens_(registry.counter("stategraph_model_tokens_total",
                                     "Tokens the models reported, by type (input or output)",
                                     {"model", "type"})),
      tool_calls_(registry.counter("stategraph_tool_calls_total", "Tool calls by tool and outcome",
                                   {"tool", "outcome"})),
      tool_duration_(registry.histogram("stategraph_tool_call_duration_seconds",
                                        "Duration of tool calls", {"tool"}, tool_buckets())),
      checkpoint_writes_(
          registry
              .counter("stategraph_checkpoint_writes_total", "Writes of checkpoints to the saver")
              .with({})),
      checkpoint_duration_(registry
                               .histogram("stategraph_checkpoint_write_duration_seconds",
                                          "Duration of checkpoint writes", {}, checkpoint_buckets())
                               .with({})),
      checkpoint_bytes_(registry
                            .counter("stategraph_checkpoint_write_bytes_total",
                                     "Bytes of checkpoints written, as the savers report them")
                            .with({})),
      node_duration_(registry.histogram("stategraph_node_duration_seconds",
                                        "Duration of node tasks", {"node"}, node_buckets())),
      node_errors_(
          registry.counter("stategraph_node_errors_total", "Node tasks that failed", {"node"})) {}

void RunMetrics::on_node_end(const Span& node) {
  node_duration_.with({node.name}).observe(seconds_of(node));
  if (node.status == SpanStatus::error) node_errors_.with({node.name}).inc();
}

void RunMetrics::on_model_end(const Span& model) {
  model_requests_.with({model.name, std::string(to_string(model.status))}).inc();
  model_duration_.with({model.name}).observe(seconds_of(model));
  const std::int64_t input = detail::span_tokens(model, model.input_tokens, "input_tokens");
  const std::int64_t output = detail::span_tokens(model, model.output_tokens, "output_tokens");
  if (input > 0) model_tokens_.with({model.name, "input"}).inc(static_cast<double>(input));
  if (output > 0) model_tokens_.with({model.name, "output"}).inc(static_cast<double>(output));
}

void RunMetrics::on_tool_end(const Span& tool) {
  tool_calls_.with({tool.name, std::string(to_string(tool.status))}).inc();
  tool_duration_.with({tool.name}).observe(seconds_of(tool));
}

void RunMetrics::on_checkpoint(const Span& write) {
  checkpoint_writes_.inc();
  checkpoint_duration_.observe(seconds_of(write));
  if (write.bytes > 0) checkpoint_bytes_.inc(static_cast<double>(write.bytes));
}

}  // namespace sg
