// SPDX-License-Identifier: MIT
// MetricsRegistry and RunMetrics: the text exposition format parsed back, label escaping,
// cumulative buckets, callbacks, concurrent updates, the process collectors, and promtool's
// own check of the rendered text.
#include <stategraph/core/error.hpp>
#include <stategraph/core/message.hpp>
#include <stategraph/telemetry/metrics.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/prometheus.hpp"

namespace {

/// One sample line parsed back: the metric name and its labels, unescaped.
struct ParsedSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

/// A parse of the text format 0.0.4 (what Prometheus' parser accepts of it): samples,
/// HELP and TYPE per family. Throws std::runtime_error on a line it cannot read.
struct ParsedExposition {
  std::vector<ParsedSample> samples;
  std::map<std::string, std::string> help;
  std::map<std::string, std::string> type;

  /// The value of the sample `name` with exactly `labels`; throws when there is none.
  double value(const std::string& name,
               const std::map<std::string, std::string>& labels = {}) const {
    for (const auto& s : samples)
      if (s.name == name && s.labels == labels) return s.value;
    throw std::runtime_error("no sample " + name);
  }
  bool has(const std::string& name, const std::map<std::string, std::string>& labels = {}) const {
    for (const auto& s : samples)
      if (s.name == name && s.labels == labels) return true;
    return false;
  }
};

std::string unescape_text(std::string_view s, bool quotes) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out += s[i];
      continue;
    }
    if (++i == s.size()) throw std::runtime_error("a trailing backslash");
    if (s[i] == 'n') {
      out += '\n';
    } else if (s[i] == '\\' || (quotes && s[i] == '"')) {
      out += s[i];
    } else {
      throw std::runtime_error(std::string("an unknown escape \\") + s[i]);
    }
  }
  return out;
}

double parse_sample_value(const std::string& text) {
  if (text == "+Inf") return INFINITY;
  if (text == "-Inf") return -INFINITY;
  if (text == "NaN") return NAN;
  std::size_t used = 0;
  const double v = std::stod(text, &used);
  if (used != text.size()) throw std::runtime_error("a bad value: " + text);
  return v;
}

ParsedExposition parse_exposition(const std::string& text) {
  ParsedExposition out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
      const std::string rest = line.substr(7);
      const std::size_t space = rest.find(' ');
      if (space == std::string::npos) throw std::runtime_error("a bad comment: " + line);
      auto& map = line[2] == 'H' ? out.help : out.type;
      map[rest.substr(0, space)] =
          line[2] == 'H' ? unescape_text(rest.substr(space + 1), false) : rest.substr(space + 1);
      continue;
    }
    ParsedSample s;
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (line.at(i) != '}') {
        const std::size_t eq = line.find('=', i);
        const std::string key = line.substr(i, eq - i);
        if (line.at(eq + 1) != '"') throw std::runtime_error("an unquoted label: " + line);
        std::size_t j = eq + 2;
        std::string raw;
        while (line.at(j) != '"') {
          if (line[j] == '\\') raw += line[j++];
          raw += line.at(j++);
        }
        s.labels[key] = unescape_text(raw, true);
        i = j + 1;
        if (line.at(i) == ',') ++i;
      }
      ++i;
    }
    if (line.at(i) != ' ') throw std::runtime_error("no value: " + line);
    s.value = parse_sample_value(line.substr(i + 1));
    out.samples.push_back(std::move(s));
  }
  return out;
}

sg::Span metrics_test_span(sg::SpanKind kind, std::string name, std::chrono::milliseconds took,
                           sg::SpanStatus status = sg::SpanStatus::ok) {
  sg::Span s;
  s.kind = kind;
  s.context = sg::TraceContext::root();
  s.name = std::move(name);
  s.end = std::chrono::system_clock::now();
  s.start = s.end - took;
  s.status = status;
  return s;
}

}  // namespace

TEST_CASE("metrics: counters, gauges and histograms render and parse back") {
  sg::MetricsRegistry registry;
  auto requests =
      registry.counter("stategraph_test_requests_total", "Requests handled", {"route", "code"});
  requests.with({"/runs", "200"}).inc();
  requests.with({"/runs", "200"}).inc(2);
  requests.with({"/threads", "404"}).inc(0.5);
  requests.with({"/threads", "404"}).inc(-3);  // ignored: counters only go up
  auto queue = registry.gauge("stategraph_test_queue_size", "Waiting items");
  queue.with({}).set(7);
  queue.with({}).dec(2);
  queue.with({}).inc();
  auto latency =
      registry.histogram("stategraph_test_latency_seconds", "Latency", {"route"}, {0.1, 1, 5});
  const sg::Histogram runs = latency.with({"/runs"});
  for (const double v : {0.05, 0.1, 0.7, 3.0, 100.0}) runs.observe(v);
  runs.observe(NAN);  // ignored
  CHECK(runs.count() == 5);
  CHECK(runs.sum() == doctest::Approx(103.85));
  // A family never used with labels is left out of the text.
  (void)registry.counter("stategraph_test_unused_total", "Never incremented", {"kind"});

  const std::string text = registry.render();
  const ParsedExposition p = parse_exposition(text);
  CHECK(p.type.at("stategraph_test_requests_total") == "counter");
  CHECK(p.type.at("stategraph_test_queue_size") == "gauge");
  CHECK(p.type.at("stategraph_test_latency_seconds") == "histogram");
  CHECK(p.help.at("stategraph_test_requests_total") == "Requests handled");
  CHECK(p.type.count("stategraph_test_unused_total") == 0);
  CHECK(p.value("stategraph_test_requests_total", {{"route", "/runs"}, {"code", "200"}}) == 3);
  CHECK(p.value("stategraph_test_requests_total", {{"route", "/threads"}, {"code", "404"}}) == 0.5);
  CHECK(p.value("stategraph_test_queue_size") == 6);
  // Buckets are cumulative, an observation on a bound counts in it, +Inf holds all.
  const auto bucket = [&](const std::string& le) {
    return p.value("stategraph_test_latency_seconds_bucket", {{"route", "/runs"}, {"le", le}});
  };
  CHECK(bucket("0.1") == 2);
  CHECK(bucket("1") == 3);
  CHECK(bucket("5") == 4);
  CHECK(bucket("+Inf") == 5);
  CHECK(p.value("stategraph_test_latency_seconds_count", {{"route", "/runs"}}) == 5);
  CHECK(p.value("stategraph_test_latency_seconds_sum", {{"route", "/runs"}}) ==
        doctest::Approx(103.85));
  // The buckets come in order, ending with +Inf, then the sum and the count.
  const std::size_t b01 = text.find(R"(le="0.1")");
  const std::size_t binf = text.find(R"(le="+Inf")");
  const std::size_t sum = text.find("stategraph_test_latency_seconds_sum");
  CHECK(b01 < binf);
  CHECK(binf < sum);
  CHECK(text.find("# TYPE stategraph_test_latency_seconds histogram\n") != std::string::npos);
}

TEST_CASE("metrics: label values and help texts are escaped") {
  sg::MetricsRegistry registry;
  const std::string nasty = "a\\b\"c\nd";
  auto c =
      registry.counter("stategraph_test_escapes_total", "Help with \\ and\nnewline", {"value"});
  c.with({nasty}).inc();
  const std::string text = registry.render();
  CHECK(text.find(R"(stategraph_test_escapes_total{value="a\\b\"c\nd"} 1)") != std::string::npos);
  CHECK(text.find(R"(# HELP stategraph_test_escapes_total Help with \\ and\nnewline)") !=
        std::string::npos);
  const ParsedExposition p = parse_exposition(text);
  CHECK(p.value("stategraph_test_escapes_total", {{"value", nasty}}) == 1);
  CHECK(p.help.at("stategraph_test_escapes_total") == "Help with \\ and\nnewline");
  const auto checked = sg::test::promtool_check(text);
  CHECK_MESSAGE(checked.exit_code == 0, (checked.out + checked.err));
}

TEST_CASE("metrics: registering, names and label counts") {
  sg::MetricsRegistry registry;
  auto a = registry.counter("stategraph_test_things_total", "Things", {"kind"});
  auto b = registry.counter("stategraph_test_things_total", "Things", {"kind"});
  a.with({"x"}).inc();
  CHECK(b.with({"x"}).value() == 1);  // the same family
  CHECK_THROWS_AS((void)registry.gauge("stategraph_test_things_total", "Things", {"kind"}),
                  sg::Error);
  CHECK_THROWS_AS((void)registry.counter("stategraph_test_things_total", "Things", {"other"}),
                  sg::Error);
  CHECK_THROWS_AS((void)registry.counter("bad-name", "x"), sg::Error);
  CHECK_THROWS_AS((void)registry.counter("9starts_with_digit", "x"), sg::Error);
  CHECK_THROWS_AS((void)registry.counter("stategraph_ok_total", "x", {"__reserved"}), sg::Error);
  CHECK_THROWS_AS((void)registry.counter("stategraph_ok_total", "x", {"a", "a"}), sg::Error);
  CHECK_THROWS_AS((void)registry.histogram("stategraph_h_seconds", "x", {"le"}, {1}), sg::Error);
  CHECK_THROWS_AS((void)registry.histogram("stategraph_h_seconds", "x", {}, {}), sg::Error);
  CHECK_THROWS_AS((void)registry.histogram("stategraph_h_seconds", "x", {}, {2, 1}), sg::Error);
  CHECK_THROWS_AS((void)registry.histogram("stategraph_h_seconds", "x", {}, {1, NAN}), sg::Error);
  CHECK_THROWS_WITH_AS((void)a.with({"x", "y"}), doctest::Contains("takes 1 label values"),
                       sg::Error);
  // A default handle does nothing.
  const sg::Counter none;
  none.inc();
  CHECK(none.value() == 0);
  CHECK(sg::exponential_buckets(0.001, 10, 3) ==
        std::vector<double>{0.001, 0.001 * 10, 0.001 * 10 * 10});
  CHECK_THROWS_AS((void)sg::exponential_buckets(0, 2, 3), sg::Error);
}

TEST_CASE("metrics: callbacks are read at render time") {
  sg::MetricsRegistry registry;
  double connections = 3;
  auto open = registry.gauge("stategraph_test_open_connections", "Open connections", {"server"});
  open.set_callback({"main"}, [&] { return connections; });
  open.set_callback({"broken"}, []() -> double { throw std::runtime_error("unavailable"); });
  CHECK(parse_exposition(registry.render())
            .value("stategraph_test_open_connections", {{"server", "main"}}) == 3);
  connections = 5;
  ParsedExposition p = parse_exposition(registry.render());
  CHECK(p.value("stategraph_test_open_connections", {{"server", "main"}}) == 5);
  CHECK_FALSE(p.has("stategraph_test_open_connections", {{"server", "broken"}}));
  open.set_callback({"main"}, nullptr);
  open.set_callback({"broken"}, nullptr);
  CHECK(registry.render().find("stategraph_test_open_connections") == std::string::npos);
}

TEST_CASE("metrics: concurrent updates are all counted") {
  sg::MetricsRegistry registry;
  auto counter = registry.counter("stategraph_test_hits_total", "Hits", {"worker"});
  auto histogram =
      registry.histogram("stategraph_test_work_seconds", "Work", {}, {0.001, 0.01, 0.1});
  constexpr int kThreads = 4;
  constexpr int kEach = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const sg::Histogram h = histogram.with({});
      for (int i = 0; i < kEach; ++i) {
        counter.with({i % 2 == 0 ? "even" : "odd"}).inc();
        h.observe(0.005);
        if (t == 0 && i % 1000 == 0) (void)registry.render();  // rendering meanwhile
      }
    });
  }
  for (auto& t : threads) t.join();
  const ParsedExposition p = parse_exposition(registry.render());
  CHECK(p.value("stategraph_test_hits_total", {{"worker", "even"}}) == kThreads * kEach / 2);
  CHECK(p.value("stategraph_test_hits_total", {{"worker", "odd"}}) == kThreads * kEach / 2);
  CHECK(p.value("stategraph_test_work_seconds_count") == kThreads * kEach);
  CHECK(p.value("stategraph_test_work_seconds_bucket", {{"le", "0.001"}}) == 0);
  CHECK(p.value("stategraph_test_work_seconds_bucket", {{"le", "0.01"}}) == kThreads * kEach);
  CHECK(p.value("stategraph_test_work_seconds_sum") ==
        doctest::Approx(0.005 * kThreads * kEach).epsilon(1e-6));
}

TEST_CASE("metrics: RunMetrics records model calls, tools, checkpoints and nodes") {
  sg::MetricsRegistry registry;
  sg::RunMetrics metrics(registry);
  using std::chrono::milliseconds;

  sg::Span model = metrics_test_span(sg::SpanKind::model, "gpt-4o", milliseconds(1500));
  model.input_tokens = 100;
  model.output_tokens = 20;
  metrics.on_model_start(model);
  metrics.on_model_end(model);
  sg::Span usage_only = metrics_test_span(sg::SpanKind::model, "gpt-4o", milliseconds(300));
  sg::Message reply = sg::ai("x");
  reply.usage_metadata = {{"input_tokens", 5}, {"output_tokens", 1}};
  usage_only.reply = &reply;
  metrics.on_model_end(usage_only);
  metrics.on_model_end(
      metrics_test_span(sg::SpanKind::model, "gpt-4o", milliseconds(80), sg::SpanStatus::error));
  metrics.on_model_end(metrics_test_span(sg::SpanKind::model, "llama3.2", milliseconds(40),
                                         sg::SpanStatus::cancelled));

  metrics.on_tool_end(metrics_test_span(sg::SpanKind::tool, "search", milliseconds(20)));
  metrics.on_tool_end(
      metrics_test_span(sg::SpanKind::tool, "search", milliseconds(2), sg::SpanStatus::error));

  sg::Span write = metrics_test_span(sg::SpanKind::checkpoint, "checkpoint", milliseconds(0));
  write.start = write.end - std::chrono::microseconds(70);
  write.checkpoints = 2;
  write.bytes = 4096;
  metrics.on_checkpoint(write);
  write.bytes = 0;  // a saver that reports no bytes
  metrics.on_checkpoint(write);

  metrics.on_node_end(metrics_test_span(sg::SpanKind::node, "agent", milliseconds(1600)));
  metrics.on_node_end(
      metrics_test_span(sg::SpanKind::node, "tools", milliseconds(25), sg::SpanStatus::error));
  // Runs are the server's to count.
  metrics.on_run_end(metrics_test_span(sg::SpanKind::run, "graph", milliseconds(2000)));

  const std::string text = registry.render();
  const ParsedExposition p = parse_exposition(text);
  CHECK(p.value("stategraph_model_requests_total", {{"model", "gpt-4o"}, {"outcome", "ok"}}) == 2);
  CHECK(p.value("stategraph_model_requests_total", {{"model", "gpt-4o"}, {"outcome", "error"}}) ==
        1);
  CHECK(p.value("stategraph_model_requests_total",
                {{"model", "llama3.2"}, {"outcome", "cancelled"}}) == 1);
  CHECK(p.value("stategraph_model_tokens_total", {{"model", "gpt-4o"}, {"type", "input"}}) == 105);
  CHECK(p.value("stategraph_model_tokens_total", {{"model", "gpt-4o"}, {"type", "output"}}) == 21);
  CHECK_FALSE(p.has("stategraph_model_tokens_total", {{"model", "llama3.2"}, {"type", "input"}}));
  CHECK(p.value("stategraph_model_request_duration_seconds_count", {{"model", "gpt-4o"}}) == 3);
  CHECK(p.value("stategraph_model_request_duration_seconds_sum", {{"model", "gpt-4o"}}) ==
        doctest::Approx(1.88));
  CHECK(p.value("stategraph_model_request_duration_seconds_bucket",
                {{"model", "gpt-4o"}, {"le", "0.05"}}) == 0);
  CHECK(p.value("stategraph_model_request_duration_seconds_bucket",
                {{"model", "gpt-4o"}, {"le", "0.1"}}) == 1);
  CHECK(p.value("stategraph_model_request_duration_seconds_bucket",
                {{"model", "gpt-4o"}, {"le", "2.5"}}) == 3);
  CHECK(p.has("stategraph_model_request_duration_seconds_bucket",
              {{"model", "gpt-4o"}, {"le", "120"}}));

  CHECK(p.value("stategraph_tool_calls_total", {{"tool", "search"}, {"outcome", "ok"}}) == 1);
  CHECK(p.value("stategraph_tool_calls_total", {{"tool", "search"}, {"outcome", "error"}}) == 1);
  CHECK(p.value("stategraph_tool_call_duration_seconds_count", {{"tool", "search"}}) == 2);

  CHECK(p.value("stategraph_checkpoint_writes_total") == 2);
  CHECK(p.value("stategraph_checkpoint_write_bytes_total") == 4096);
  CHECK(p.value("stategraph_checkpoint_write_duration_seconds_bucket", {{"le", "5e-05"}}) == 0);
  CHECK(p.value("stategraph_checkpoint_write_duration_seconds_bucket", {{"le", "0.0001"}}) == 2);

  CHECK(p.value("stategraph_node_duration_seconds_count", {{"node", "agent"}}) == 1);
  CHECK(p.value("stategraph_node_duration_seconds_count", {{"node", "tools"}}) == 1);
  CHECK(p.value("stategraph_node_errors_total", {{"node", "tools"}}) == 1);
  CHECK_FALSE(p.has("stategraph_node_errors_total", {{"node", "agent"}}));
  CHECK(text.find("\"graph\"") == std::string::npos);  // no run series

  // A second RunMetrics on the same registry shares the families.
  sg::RunMetrics again(registry);
  again.on_checkpoint(write);
  CHECK(parse_exposition(registry.render()).value("stategraph_checkpoint_writes_total") == 3);
}

TEST_CASE("metrics: the standard process collectors") {
  const auto memory = sg::read_process_memory();
  REQUIRE(memory);
  CHECK(memory->resident_bytes > 1024 * 1024);
  CHECK(memory->virtual_bytes >= memory->resident_bytes);

  sg::MetricsRegistry registry;
  sg::register_process_metrics(registry);
  sg::register_process_metrics(registry);  // harmless twice
  const ParsedExposition p = parse_exposition(registry.render());
  CHECK(p.type.at("process_resident_memory_bytes") == "gauge");
  CHECK(p.type.at("process_cpu_seconds_total") == "counter");
  CHECK(p.value("process_resident_memory_bytes") > 1024 * 1024);
  CHECK(p.value("process_virtual_memory_bytes") >= p.value("process_resident_memory_bytes"));
  CHECK(p.value("process_open_fds") >= 3);
  CHECK(p.value("process_max_fds") >= p.value("process_open_fds"));
  CHECK(p.value("process_cpu_seconds_total") >= 0);
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  CHECK(p.value("process_start_time_seconds") <= now + 1);
  CHECK(p.value("process_start_time_seconds") > now - 3600);
}

TEST_CASE("metrics: promtool accepts the rendered text") {
  sg::MetricsRegistry registry;
  sg::register_process_metrics(registry);
  sg::RunMetrics metrics(registry);
  metrics.on_model_end(metrics_test_span(sg::SpanKind::model, "gpt-4o", std::chrono::seconds(2)));
  metrics.on_tool_end(
      metrics_test_span(sg::SpanKind::tool, "search", std::chrono::milliseconds(15)));
  metrics.on_node_end(
      metrics_test_span(sg::SpanKind::node, "agent", std::chrono::milliseconds(15)));
  sg::Span write =
      metrics_test_span(sg::SpanKind::checkpoint, "checkpoint", std::chrono::milliseconds(1));
  write.bytes = 100;
  metrics.on_checkpoint(write);
  registry.gauge("stategraph_test_queue_size", "Waiting items", {"queue"})
      .with({"quote\" and \\ and\nnewline"})
      .set(2);

  const std::string text = registry.render();
  const auto checked = sg::test::promtool_check(text);
  CHECK_MESSAGE(checked.exit_code == 0, ("promtool: " + checked.out + checked.err + "\n" + text));
  CHECK(checked.out.empty());

  // The check can fail: promtool refuses broken text and lints a counter without _total.
  CHECK(sg::test::promtool_check("stategraph_broken{label=\"x} 1\n").exit_code != 0);
  CHECK(
      sg::test::promtool_check("# HELP stategraph_requests x\n# TYPE stategraph_requests counter\n"
                               "stategraph_requests 1\n")
          .exit_code != 0);
}
