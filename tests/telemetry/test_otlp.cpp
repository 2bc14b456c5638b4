// SPDX-License-Identifier: MIT
// OtlpTracer against a real OTLP/HTTP JSON receiver on 127.0.0.1 (tests/support/loopback_otlp):
// the encoding (names, parents, GenAI attributes, resource), headers, batching, flush, failures
// and sampling. The spans are made by hand and given to the callbacks directly, as the executor
// would: these tests are the exporter's own.
#include <stategraph/core/error.hpp>
#include <stategraph/core/log.hpp>
#include <stategraph/core/message.hpp>
#include <stategraph/core/version.hpp>
#include <stategraph/telemetry/metrics.hpp>
#include <stategraph/telemetry/otlp.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/loopback_otlp.hpp"

namespace {

using namespace std::chrono_literals;
using namespace std::string_literals;
using sg::testing::LoopbackOtlp;
using sg::testing::LoopbackReply;
using Clock = std::chrono::steady_clock;

/// A span of `kind` in the trace of `context`, child of `parent`, that took 5 ms.
sg::Span otlp_test_span(sg::SpanKind kind, std::string name, const sg::TraceContext& context,
                        const sg::TraceContext* parent = nullptr) {
  sg::Span s;
  s.kind = kind;
  s.context = context;
  if (parent != nullptr) s.parent_span_id = parent->span_id;
  s.name = std::move(name);
  s.end = std::chrono::system_clock::now();
  s.start = s.end - 5ms;
  s.thread_id = "thread-1";
  s.run_id = "run-1";
  return s;
}

/// Options for a collector: a long schedule delay, so that only full batches and flushes send.
sg::OtlpOptions options_for(const LoopbackOtlp& collector) {
  sg::OtlpOptions o;
  o.endpoint = collector.traces_url();
  o.schedule_delay = 60s;
  o.export_timeout = 5s;
  return o;
}

/// Collects the log messages (sg::log) while it lives.
class LogCapture {
 public:
  LogCapture() {
    sg::set_log_sink(
        [this](const sg::LogRecord& r) {
          std::lock_guard lock(mu_);
          records_.push_back({std::string(r.message), r.fields});
        },
        sg::LogLevel::warn);
  }
  ~LogCapture() { sg::set_log_sink(nullptr); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  /// The fields of the first message saying `message`, or null.
  nlohmann::json find(const std::string& message) const {
    std::lock_guard lock(mu_);
    for (const auto& [m, f] : records_)
      if (m == message) return f;
    return nullptr;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<std::string, nlohmann::json>> records_;
};

/// A port nothing listens on: a collector's, once it has stopped.
std::uint16_t closed_port() {
  std::string url;
  {
    const LoopbackOtlp gone;
    url = gone.endpoint();
  }
  return static_cast<std::uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
}

/// A trace id whose low 8 bytes are all `low` (for the ratio sampler).
sg::TraceContext context_with_low_bytes(std::uint8_t low) {
  sg::TraceContext c = sg::TraceContext::root();
  for (std::size_t i = 8; i < 16; ++i) c.trace_id[i] = low;
  return c;
}

}  // namespace

TEST_CASE("otlp: a run's spans reach the collector with names, parents and GenAI attributes") {
  LoopbackOtlp collector;
  sg::OtlpOptions options = options_for(collector);
  options.service_name = "my-agent";
  options.resource_attributes = {{"deployment.environment", "test"}};
  auto tracer = std::make_shared<sg::OtlpTracer>(options);

  const sg::TraceContext run_ctx = sg::TraceContext::root();
  const sg::TraceContext node_ctx = run_ctx.child();
  const sg::TraceContext model_ctx = node_ctx.child();
  const sg::TraceContext tool_ctx = node_ctx.child();
  const sg::TraceContext checkpoint_ctx = run_ctx.child();

  // Contents that must never leave the process.
  const std::vector<sg::Message> prompt = {sg::human("secret-prompt")};
  sg::Message reply = sg::ai("secret-answer", "chatcmpl-42");
  reply.response_metadata = {{"model_name", "gpt-4o-2024-08-06"}, {"finish_reason", "stop"}};
  const nlohmann::json arguments = {{"query", "secret-arguments"}};
  const sg::Message tool_result = sg::tool("secret-result", "call_7");

  sg::Span model = otlp_test_span(sg::SpanKind::model, "gpt-4o", model_ctx, &node_ctx);
  model.provider = "openai";
  model.node = "agent";
  model.step = 1;
  model.task_id = "task-1";
  model.messages = &prompt;
  tracer->on_model_start(model);
  model.reply = &reply;
  model.input_tokens = 12;
  model.output_tokens = 3;
  tracer->on_model_end(model);

  sg::Span tool = otlp_test_span(sg::SpanKind::tool, "search", tool_ctx, &node_ctx);
  tool.tool_call_id = "call_7";
  tool.node = "agent";
  tool.step = 1;
  tool.arguments = &arguments;
  tracer->on_tool_start(tool);
  tool.result = &tool_result;
  tracer->on_tool_end(tool);

  sg::Span node = otlp_test_span(sg::SpanKind::node, "agent", node_ctx, &run_ctx);
  node.step = 1;
  node.task_id = "task-1";
  node.checkpoint_ns = "";
  tracer->on_node_start(node);
  tracer->on_node_end(node);

  sg::Span write = otlp_test_span(sg::SpanKind::checkpoint, "checkpoint", checkpoint_ctx, &run_ctx);
  write.checkpoint_id = "1ef-checkpoint";
  write.checkpoints = 2;
  write.bytes = 1234;
  tracer->on_checkpoint(write);

  sg::Span run = otlp_test_span(sg::SpanKind::run, "my_graph", run_ctx);
  tracer->on_run_start(run);
  tracer->on_run_end(run);

  REQUIRE(tracer->flush(5s));
  REQUIRE(collector.wait_for_spans(5));
  CHECK(collector.spans().size() == 5);
  CHECK(tracer->stats().exported == 5);

  const auto r = collector.span("my_graph");
  CHECK(r.trace_id == run_ctx.trace_id_hex());
  CHECK(r.span_id == run_ctx.span_id_hex());
  CHECK(r.parent_span_id.empty());
  CHECK(r.kind == 1);
  CHECK(r.status_code == 1);
  CHECK(r.attribute("gen_ai.operation.name") == "invoke_agent");
  CHECK(r.attribute("gen_ai.agent.name") == "my_graph");
  CHECK(r.attribute("gen_ai.conversation.id") == "thread-1");
  CHECK(r.attribute("stategraph.thread_id") == "thread-1");
  CHECK(r.attribute("stategraph.run_id") == "run-1");
  CHECK_FALSE(r.has("stategraph.step"));
  CHECK_FALSE(r.has("stategraph.checkpoint_ns"));
  // Times: decimal strings of nanoseconds since the epoch.
  CHECK(r.raw["startTimeUnixNano"].is_string());
  CHECK(r.end_unix_nano - r.start_unix_nano == 5'000'000);
  const auto now_ns =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  CHECK(r.end_unix_nano <= now_ns);
  CHECK(r.end_unix_nano > now_ns - 60'000'000'000ULL);

  const auto n = collector.span("agent");
  CHECK(n.trace_id == run_ctx.trace_id_hex());
  CHECK(n.parent_span_id == run_ctx.span_id_hex());
  CHECK(n.kind == 1);
  CHECK(n.attribute("stategraph.node") == "agent");
  CHECK(n.attribute("stategraph.step") == 1);
  CHECK(n.raw["attributes"].dump().find(R"("intValue":"1")") != std::string::npos);
  CHECK(n.attribute("stategraph.task_id") == "task-1");

  const auto m = collector.span("chat gpt-4o");
  CHECK(m.parent_span_id == node_ctx.span_id_hex());
  CHECK(m.kind == 3);  // client
  CHECK(m.attribute("gen_ai.operation.name") == "chat");
  CHECK(m.attribute("gen_ai.provider.name") == "openai");
  CHECK(m.attribute("gen_ai.system") == "openai");
  CHECK(m.attribute("gen_ai.request.model") == "gpt-4o");
  CHECK(m.attribute("gen_ai.response.model") == "gpt-4o-2024-08-06");
  CHECK(m.attribute("gen_ai.response.id") == "chatcmpl-42");
  CHECK(m.attribute("gen_ai.usage.input_tokens") == 12);
  CHECK(m.attribute("gen_ai.usage.output_tokens") == 3);
  CHECK(m.attribute("gen_ai.response.finish_reasons") == nlohmann::json::array({"stop"}));
  CHECK(m.attribute("stategraph.node") == "agent");
  CHECK(m.attribute("gen_ai.conversation.id") == "thread-1");

  const auto t = collector.span("execute_tool search");
  CHECK(t.parent_span_id == node_ctx.span_id_hex());
  CHECK(t.kind == 1);
  CHECK(t.attribute("gen_ai.operation.name") == "execute_tool");
  CHECK(t.attribute("gen_ai.tool.name") == "search");
  CHECK(t.attribute("gen_ai.tool.call.id") == "call_7");
  CHECK(t.attribute("gen_ai.tool.type") == "function");

  const auto c = collector.span("checkpoint write");
  CHECK(c.parent_span_id == run_ctx.span_id_hex());
  CHECK(c.attribute("stategraph.checkpoint.count") == 2);
  CHECK(c.attribute("stategraph.checkpoint.bytes") == 1234);
  CHECK(c.attribute("stategraph.checkpoint_id") == "1ef-checkpoint");

  // Resource and scope.
  CHECK(r.resource["service.name"] == "my-agent");
  CHECK(r.resource["service.version"] == std::string(sg::kVersion));
  CHECK(r.resource["telemetry.sdk.name"] == "stategraph");
  CHECK(r.resource["telemetry.sdk.language"] == "cpp");
  CHECK(r.resource["deployment.environment"] == "test");
  CHECK(r.scope["name"] == "stategraph");
  CHECK(r.scope["version"] == std::string(sg::kVersion));

  // The request: POST, JSON, and nothing of the messages.
  const auto exports = collector.exports();
  REQUIRE(exports.size() == 1);
  CHECK(exports[0].method == "POST");
  CHECK(exports[0].header("content-type") == "application/json");
  for (const char* secret :
       {"secret-prompt", "secret-answer", "secret-arguments", "secret-result"}) {
    CHECK_MESSAGE(exports[0].body.find(secret) == std::string::npos, secret);
  }
}

TEST_CASE("otlp: errors get status 2 and an exception event, interrupts and cancels stay unset") {
  LoopbackOtlp collector;
  sg::OtlpTracer tracer(options_for(collector));
  const sg::TraceContext run_ctx = sg::TraceContext::root();

  sg::Span failed = otlp_test_span(sg::SpanKind::node, "flaky", run_ctx.child(), &run_ctx);
  failed.status = sg::SpanStatus::error;
  failed.error = "boom";
  failed.error_type = "model.http_status";
  tracer.on_node_end(failed);

  sg::Span interrupted = otlp_test_span(sg::SpanKind::run, "paused_graph", run_ctx);
  interrupted.status = sg::SpanStatus::interrupted;
  tracer.on_run_end(interrupted);

  const sg::TraceContext other = sg::TraceContext::root();
  sg::Span cancelled = otlp_test_span(sg::SpanKind::run, "cancelled_graph", other);
  cancelled.status = sg::SpanStatus::cancelled;
  cancelled.error = "the run was cancelled";
  tracer.on_run_end(cancelled);

  // A model call without usage: no token attributes; usage_metadata alone is enough.
  sg::Span bare = otlp_test_span(sg::SpanKind::model, "local-model", run_ctx.child(), &run_ctx);
  bare.provider = "local";
  tracer.on_model_end(bare);
  sg::Message reply = sg::ai("hi");
  reply.usage_metadata = {{"input_tokens", 7}, {"output_tokens", 2}, {"total_tokens", 9}};
  sg::Span usage_only =
      otlp_test_span(sg::SpanKind::model, "usage-model", run_ctx.child(), &run_ctx);
  usage_only.reply = &reply;
  tracer.on_model_end(usage_only);

  REQUIRE(tracer.flush(5s));
  REQUIRE(collector.wait_for_spans(5));

  const auto f = collector.span("flaky");
  CHECK(f.status_code == 2);
  CHECK(f.status_message == "boom");
  CHECK(f.attribute("error.type") == "model.http_status");
  REQUIRE(f.events.size() == 1);
  CHECK(f.events[0]["name"] == "exception");
  CHECK(f.events[0]["attributes"]["exception.type"] == "model.http_status");
  CHECK(f.events[0]["attributes"]["exception.message"] == "boom");

  const auto i = collector.span("paused_graph");
  CHECK(i.status_code == 0);
  CHECK(i.attribute("stategraph.status") == "interrupted");
  CHECK(i.events.empty());
  const auto c = collector.span("cancelled_graph");
  CHECK(c.status_code == 0);
  CHECK(c.status_message.empty());
  CHECK(c.attribute("stategraph.status") == "cancelled");

  const auto b = collector.span("chat local-model");
  CHECK(b.attribute("gen_ai.provider.name") == "local");
  CHECK_FALSE(b.has("gen_ai.usage.input_tokens"));
  CHECK_FALSE(b.has("gen_ai.usage.output_tokens"));
  CHECK_FALSE(b.has("gen_ai.response.model"));
  const auto u = collector.span("chat usage-model");
  CHECK(u.attribute("gen_ai.usage.input_tokens") == 7);
  CHECK(u.attribute("gen_ai.usage.output_tokens") == 2);
  CHECK_FALSE(u.has("gen_ai.provider.name"));
}

TEST_CASE("otlp: any bytes in names and attributes reach the collector as valid JSON") {
  LoopbackOtlp collector;
  sg::OtlpOptions options = options_for(collector);
  options.resource_attributes = {{"key \"quoted\"\n", "value\\\x01"}};
  sg::OtlpTracer tracer(options);
  // What each text becomes: a JSON library's writing of it, invalid UTF-8 replaced by U+FFFD.
  const auto as_sent = [](const std::string& text) {
    return nlohmann::json::parse(
               nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
        .get<std::string>();
  };
  const std::vector<std::string> texts = {
      "quote \" backslash \\ slash /",
      "controls \b\f\n\r\t \x01\x1f \x7f and a NUL \0 inside"s,
      "UTF-8: \xc3\xa9t\xc3\xa9, \xe6\xbc\xa2\xe5\xad\x97, \xf0\x9f\x98\x80",
      // A stray byte, a continuation, an overlong form, a surrogate, beyond U+10FFFF, a cut one.
      "invalid: \xff \x80 \xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 \xe2\x82",
      "\xe2\x82",
      std::string(13, 'a') + "\"" + std::string(20, 'b') + "\xe9" + std::string(9, 'c'),
  };
  const sg::TraceContext run_ctx = sg::TraceContext::root();
  for (std::size_t i = 0; i < texts.size(); ++i) {
    sg::Span model = otlp_test_span(sg::SpanKind::model, texts[i], run_ctx.child(), &run_ctx);
    model.thread_id = texts[i];
    model.node = "node-" + std::to_string(i);
    model.status = sg::SpanStatus::error;
    model.error = texts[i];
    model.error_type = texts[i];
    tracer.on_model_end(model);
  }
  REQUIRE(tracer.flush(5s));
  REQUIRE(collector.wait_for_spans(texts.size()));
  CHECK(tracer.stats().exported == texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i) {
    CAPTURE(i);
    const std::string want = as_sent(texts[i]);
    const auto spans = collector.spans();
    const auto it = std::find_if(spans.begin(), spans.end(), [&](const auto& span) {
      return span.attribute("stategraph.node") == "node-" + std::to_string(i);
    });
    REQUIRE(it != spans.end());
    CHECK(it->name == "chat " + want);
    CHECK(it->attribute("gen_ai.request.model") == want);
    CHECK(it->attribute("stategraph.thread_id") == want);
    CHECK(it->attribute("gen_ai.conversation.id") == want);
    CHECK(it->attribute("error.type") == want);
    CHECK(it->status_message == want);
    REQUIRE(it->events.size() == 1);
    CHECK(it->events[0]["attributes"]["exception.message"] == want);
  }
  const auto any = collector.spans().front();
  CHECK(any.resource[as_sent("key \"quoted\"\n")] == "value\\\x01");
  CHECK(as_sent(texts[3]).find("\xef\xbf\xbd") != std::string::npos);  // U+FFFD
}

TEST_CASE("otlp: a span is copied at its callback: what its pointers showed stays") {
  LoopbackOtlp collector;
  sg::OtlpTracer tracer(options_for(collector));
  const sg::TraceContext run_ctx = sg::TraceContext::root();
  auto reply = std::make_unique<sg::Message>(sg::ai("answer", "chatcmpl-7"));
  reply->response_metadata = {{"model_name", "gpt-4o-2024-08-06"},
                              {"finish_reason", nlohmann::json::array({"stop", "length"})}};
  reply->usage_metadata = {{"input_tokens", 21}, {"output_tokens", 5}};
  sg::Span model = otlp_test_span(sg::SpanKind::model, "gpt-4o", run_ctx.child(), &run_ctx);
  model.reply = reply.get();
  tracer.on_model_end(model);
  // After the callback the reply and the span's texts change, then the reply is gone.
  reply->response_metadata = {{"model_name", "changed"}, {"finish_reason", "changed"}};
  reply->usage_metadata = {{"input_tokens", 1}, {"output_tokens", 1}};
  reply->id = "changed";
  reply.reset();
  model.name = "changed";
  model.thread_id = "changed";
  REQUIRE(tracer.flush(5s));
  const auto m = collector.span("chat gpt-4o");
  CHECK(m.attribute("gen_ai.response.model") == "gpt-4o-2024-08-06");
  CHECK(m.attribute("gen_ai.response.id") == "chatcmpl-7");
  CHECK(m.attribute("gen_ai.response.finish_reasons") == nlohmann::json::array({"stop", "length"}));
  CHECK(m.attribute("gen_ai.usage.input_tokens") == 21);
  CHECK(m.attribute("gen_ai.usage.output_tokens") == 5);
  CHECK(m.attribute("stategraph.thread_id") == "thread-1");
}

TEST_CASE("otlp: spans leave in the order they ended, across many batches") {
  LoopbackOtlp collector;
  sg::OtlpOptions options = options_for(collector);
  options.max_batch_size = 7;
  options.max_queue_size = 1000;
  sg::OtlpTracer tracer(options);
  const sg::TraceContext run_ctx = sg::TraceContext::root();
  constexpr int kSpans = 500;
  for (int i = 0; i < kSpans; ++i) {
    tracer.on_node_end(
        otlp_test_span(sg::SpanKind::node, "n" + std::to_string(i), run_ctx.child(), &run_ctx));
  }
  REQUIRE(tracer.flush(10s));
  CHECK(tracer.stats().exported == kSpans);
  const auto spans = collector.spans();
  REQUIRE(spans.size() == kSpans);
  for (int i = 0; i < kSpans; ++i)
    CHECK(spans[static_cast<std::size_t>(i)].name == "n" + std::to_string(i));
  for (const auto& e : collector.exports()) {
    CHECK(e.json()["resourceSpans"][0]["scopeSpans"][0]["spans"].size() <= 7);
  }
}

TEST_CASE("otlp: spans ended on several threads at once are each exported or dropped, once") {
  LoopbackOtlp collector;
  sg::OtlpOptions options = options_for(collector);
  options.max_batch_size = 16;
  options.max_queue_size = 64;  // small: some spans are dropped while a batch is sent
  sg::OtlpTracer tracer(options);
  constexpr int kThreads = 4;
  constexpr int kSpansEach = 400;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&tracer, t] {
      const sg::TraceContext run_ctx = sg::TraceContext::root();
      for (int i = 0; i < kSpansEach; ++i) {
        const std::string name = "t" + std::to_string(t) + "-" + std::to_string(i);
        tracer.on_node_end(otlp_test_span(sg::SpanKind::node, name, run_ctx.child(), &run_ctx));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  REQUIRE(tracer.flush(10s));
  const sg::OtlpExportStats stats = tracer.stats();
  CHECK(stats.exported + stats.dropped == kThreads * kSpansEach);
  CHECK(stats.failed == 0);
  CHECK(stats.queued == 0);
  const auto spans = collector.spans();
  CHECK(spans.size() == stats.exported);
  std::set<std::string> names;
  for (const auto& span : spans) names.insert(span.name);
  CHECK(names.size() == spans.size());
}

TEST_CASE("otlp: the headers of OTEL_EXPORTER_OTLP_HEADERS and the resource reach the collector") {
  LoopbackOtlp collector;
  const std::map<std::string, std::string> env = {
      {"OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint() + "/"},
      {"OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=k%3D1 2, x-tenant = acme, x-empty="},
      {"OTEL_SERVICE_NAME", "env-service"},
      {"OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=staging,team=agents"},
      {"OTEL_BSP_SCHEDULE_DELAY", "60000"},
  };
  const auto options =
      sg::otlp_options_from_environment([&](std::string_view name) -> std::optional<std::string> {
        const auto it = env.find(std::string(name));
        if (it == env.end()) return std::nullopt;
        return it->second;
      });
  REQUIRE(options);
  CHECK(options->endpoint == collector.traces_url());
  sg::OtlpTracer tracer(*options);
  const sg::TraceContext ctx = sg::TraceContext::root();
  tracer.on_run_end(otlp_test_span(sg::SpanKind::run, "g", ctx));
  REQUIRE(tracer.flush(5s));
  const auto exports = collector.exports();
  REQUIRE(exports.size() == 1);
  CHECK(exports[0].target == "/v1/traces");
  CHECK(exports[0].header("x-api-key") == "k=1 2");
  CHECK(exports[0].header("x-tenant") == "acme");
  bool empty_sent = false;
  for (const auto& [name, value] : exports[0].headers)
    empty_sent |= name == "x-empty" && value.empty();
  CHECK(empty_sent);
  const auto span = collector.span("g");
  CHECK(span.resource["service.name"] == "env-service");
  CHECK(span.resource["deployment.environment"] == "staging");
  CHECK(span.resource["team"] == "agents");
}

TEST_CASE("otlp: many spans leave in full batches, flush sends the rest") {
  LoopbackOtlp collector;
  sg::OtlpOptions options = options_for(collector);
  options.max_batch_size = 50;
  options.max_queue_size = 1000;
  sg::OtlpTracer tracer(options);
  const sg::TraceContext run_ctx = sg::TraceContext::root();
  for (int i = 0; i < 220; ++i) {
    tracer.on_node_end(
        otlp_test_span(sg::SpanKind::node, "n" + std::to_string(i), run_ctx.child(), &run_ctx));
  }
  // Four full batches leave without a flush (the schedule delay is a minute).
  REQUIRE(collector.wait_for_spans(200));
  CHECK(tracer.stats().queued <= 20);
  REQUIRE(tracer.flush(5s));
  CHECK(collector.spans().size() == 220);
  const auto exports = collector.exports();
  CHECK(exports.size() == 5);
  for (const auto& e : exports) {
    const std::size_t spans = e.json()["resourceSpans"][0]["scopeSpans"][0]["spans"].size();
    CHECK(spans <= 50);
  }
  const sg::OtlpExportStats stats = tracer.stats();
  CHECK(stats.exported == 220);
  CHECK(stats.requests == 5);
  CHECK(stats.failed == 0);
  CHECK(stats.dropped == 0);
  CHECK(stats.queued == 0);
  // Nothing queued: flush returns at once and sends nothing.
  CHECK(tracer.flush(1s));
  CHECK(collector.exports().size() == 5);
}

TEST_CASE("otlp: spans leave after the schedule delay without a flush") {
  LoopbackOtlp collector;
  sg::OtlpOptions options = options_for(collector);
  options.schedule_delay = 100ms;
  sg::OtlpTracer tracer(options);
  const sg::TraceContext run_ctx = sg::TraceContext::root();
  for (int i = 0; i < 3; ++i) {
    tracer.on_node_end(otlp_test_span(sg::SpanKind::node, "n", run_ctx.child(), &run_ctx));
  }
  REQUIRE(collector.wait_for_spans(3, 10s));
  CHECK(collector.exports().size() == 1);
}

TEST_CASE("otlp: the destructor flushes what is queued") {
  LoopbackOtlp collector;
  {
    sg::OtlpTracer tracer(options_for(collector));
    const sg::TraceContext ctx = sg::TraceContext::root();
    tracer.on_run_end(otlp_test_span(sg::SpanKind::run, "a", ctx));
    tracer.on_run_end(otlp_test_span(sg::SpanKind::run, "b", sg::TraceContext::root()));
    CHECK(collector.spans().empty());  // waiting for the (one minute) schedule delay
  }
  CHECK(collector.spans().size() == 2);
}

TEST_CASE("otlp: a dead endpoint is counted and logged, never thrown, and does not hang") {
  LogCapture logs;
  const auto started = Clock::now();
  sg::OtlpExportStats stats;
  {
    sg::OtlpOptions options;
    options.endpoint = "http://127.0.0.1:" + std::to_string(closed_port()) + "/v1/traces";
    options.schedule_delay = 60s;
    options.export_timeout = 2s;
    sg::OtlpTracer tracer(options);
    const sg::TraceContext ctx = sg::TraceContext::root();
    for (int i = 0; i < 3; ++i) {
      CHECK_NOTHROW(tracer.on_node_end(otlp_test_span(sg::SpanKind::node, "n", ctx.child(), &ctx)));
    }
    CHECK(tracer.flush(5s));  // the export ended: failed
    stats = tracer.stats();
    tracer.on_run_end(otlp_test_span(sg::SpanKind::run, "last", ctx));
  }  // the destructor's flush fails too, within the export timeout
  CHECK(Clock::now() - started < 8s);
  CHECK(stats.failed == 3);
  CHECK(stats.exported == 0);
  CHECK(stats.requests == 1);  // a refused connection is not retried
  CHECK(stats.failed_requests == 1);
  const nlohmann::json logged = logs.find("OTLP export failed");
  REQUIRE(logged.is_object());
  CHECK(logged["spans"] == 3);
  CHECK(logged["error"].get<std::string>().find("onnect") != std::string::npos);
}

TEST_CASE("otlp: a 500 answer fails the batch without a retry, the next batch goes through") {
  LogCapture logs;
  LoopbackOtlp collector;
  collector.server().push(LoopbackReply::error(500, "collector broken"));
  sg::OtlpTracer tracer(options_for(collector));
  const sg::TraceContext ctx = sg::TraceContext::root();
  tracer.on_run_end(otlp_test_span(sg::SpanKind::run, "lost", ctx));
  REQUIRE(tracer.flush(5s));
  sg::OtlpExportStats stats = tracer.stats();
  CHECK(stats.failed == 1);
  CHECK(stats.requests == 1);
  CHECK(stats.failed_requests == 1);
  const nlohmann::json logged = logs.find("OTLP export failed");
  REQUIRE(logged.is_object());
  CHECK(logged["status"] == 500);
  CHECK(logged["body"].get<std::string>().find("collector broken") != std::string::npos);

  tracer.on_run_end(otlp_test_span(sg::SpanKind::run, "kept", sg::TraceContext::root()));
  REQUIRE(tracer.flush(5s));
  stats = tracer.stats();
  CHECK(stats.exported == 1);
  CHECK(stats.failed == 1);
  CHECK(collector.spans().size() == 1);
  CHECK(collector.spans()[0].name == "kept");
}

TEST_CASE("otlp: a 503 answer is retried once") {
  LoopbackOtlp collector;
  collector.server().push(LoopbackReply::error(503, "busy", {{"Retry-After", "0"}}));
  sg::OtlpTracer tracer(options_for(collector));
  tracer.on_run_end(otlp_test_span(sg::SpanKind::run, "retried", sg::TraceContext::root()));
  REQUIRE(tracer.flush(10s));
  const sg::OtlpExportStats stats = tracer.stats();
  CHECK(stats.exported == 1);
  CHECK(stats.requests == 2);
  CHECK(stats.failed_requests == 1);
  CHECK(collector.span("retried").name == "retried");

  // Two failures in a row: the span is lost after one retry.
  collector.server().push(LoopbackReply::error(503, "busy", {{"Retry-After", "0"}}));
  collector.server().push(LoopbackReply::error(429, "slow down", {{"Retry-After", "0"}}));
  tracer.on_run_end(otlp_test_span(sg::SpanKind::run, "lost", sg::TraceContext::root()));
  REQUIRE(tracer.flush(10s));
  CHECK(tracer.stats().failed == 1);
  CHECK(tracer.stats().requests == 4);
}

TEST_CASE("otlp: a partial success counts the rejected spans as failed") {
  LogCapture logs;
  LoopbackOtlp collector;
  collector.server().push(LoopbackReply::json(
      {{"partialSuccess", {{"rejectedSpans", "1"}, {"errorMessage", "span too old"}}}}));
  sg::OtlpTracer tracer(options_for(collector));
  const sg::TraceContext ctx = sg::TraceContext::root();
  tracer.on_node_end(otlp_test_span(sg::SpanKind::node, "a", ctx.child(), &ctx));
  tracer.on_node_end(otlp_test_span(sg::SpanKind::node, "b", ctx.child(), &ctx));
  REQUIRE(tracer.flush(5s));
  CHECK(tracer.stats().exported == 1);
  CHECK(tracer.stats().failed == 1);
  const nlohmann::json logged = logs.find("OTLP export partly rejected");
  REQUIRE(logged.is_object());
  CHECK(logged["message"] == "span too old");
}

TEST_CASE("otlp: a full queue drops spans and counts them, the caller never waits") {
  LoopbackOtlp collector;
  // The first export hangs for a while, so that the queue fills behind it.
  LoopbackReply slow = LoopbackReply::json(nlohmann::json::object());
  slow.delay = 1500ms;
  collector.server().push(slow);
  sg::OtlpOptions options = options_for(collector);
  options.max_queue_size = 2;
  options.max_batch_size = 2;
  sg::OtlpTracer tracer(options);
  const sg::TraceContext ctx = sg::TraceContext::root();
  const auto span = [&] { return otlp_test_span(sg::SpanKind::node, "n", ctx.child(), &ctx); };
  tracer.on_node_end(span());
  tracer.on_node_end(span());  // a full batch: the exporter takes both and waits on the server
  const auto deadline = Clock::now() + 5s;
  while (collector.server().stats().in_flight == 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  REQUIRE(collector.server().stats().in_flight == 1);
  const auto before = Clock::now();
  for (int i = 0; i < 5; ++i) tracer.on_node_end(span());  // 2 queued, 3 dropped
  CHECK(Clock::now() - before < 500ms);
  CHECK(tracer.stats().dropped == 3);
  CHECK(tracer.stats().queued == 2);
  REQUIRE(tracer.flush(10s));
  const sg::OtlpExportStats stats = tracer.stats();
  CHECK(stats.exported == 4);
  CHECK(stats.dropped == 3);
}

TEST_CASE("otlp: samplers always_off and traceidratio 0 export nothing") {
  LoopbackOtlp collector;
  for (const auto& setting : std::vector<std::pair<sg::OtlpSampler, double>>{
           {sg::OtlpSampler::always_off, 1.0},
           {sg::OtlpSampler::traceidratio, 0.0},
           {sg::OtlpSampler::parentbased_traceidratio, 0.0},
           {sg::OtlpSampler::parentbased_always_off, 1.0}}) {
    const std::string_view sampler = sg::to_string(setting.first);
    CAPTURE(sampler);
    sg::OtlpOptions options = options_for(collector);
    options.sampler = setting.first;
    options.sampler_ratio = setting.second;
    sg::OtlpTracer tracer(options);
    for (int i = 0; i < 10; ++i) {
      const sg::TraceContext ctx = sg::TraceContext::root();
      tracer.on_run_end(otlp_test_span(sg::SpanKind::run, "g", ctx));
      tracer.on_node_end(otlp_test_span(sg::SpanKind::node, "n", ctx.child(), &ctx));
    }
    CHECK(tracer.flush(5s));
    CHECK(tracer.stats().not_sampled == 20);
    CHECK(tracer.stats().requests == 0);
  }
  CHECK(collector.requests().empty());
}

TEST_CASE("otlp: parent-based samplers follow a remote parent's sampled flag") {
  LoopbackOtlp collector;
  auto remote = sg::TraceContext::parse("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00");
  REQUIRE(remote);
  REQUIRE(remote->remote);
  REQUIRE_FALSE(remote->sampled);
  {
    sg::OtlpTracer tracer(options_for(collector));  // parentbased_always_on
    const sg::TraceContext run_ctx = remote->child();
    CHECK_FALSE(tracer.sampled(run_ctx));
    tracer.on_run_end(otlp_test_span(sg::SpanKind::run, "unsampled", run_ctx, &*remote));
    tracer.on_node_end(
        otlp_test_span(sg::SpanKind::node, "unsampled_node", run_ctx.child(), &run_ctx));
    CHECK(tracer.flush(5s));
    CHECK(tracer.stats().not_sampled == 2);
    // A local root is sampled (always_on as the root sampler).
    CHECK(tracer.sampled(sg::TraceContext::root()));
  }
  CHECK(collector.requests().empty());

  // A sampled remote parent is followed even by parentbased_always_off.
  auto sampled = sg::TraceContext::parse("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  REQUIRE(sampled);
  sg::OtlpOptions options = options_for(collector);
  options.sampler = sg::OtlpSampler::parentbased_always_off;
  sg::OtlpTracer tracer(options);
  const sg::TraceContext run_ctx = sampled->child();
  tracer.on_run_end(otlp_test_span(sg::SpanKind::run, "continued", run_ctx, &*sampled));
  tracer.on_run_end(otlp_test_span(sg::SpanKind::run, "local_root", sg::TraceContext::root()));
  REQUIRE(tracer.flush(5s));
  REQUIRE(collector.wait_for_spans(1));
  CHECK(collector.spans().size() == 1);
  const auto span = collector.span("continued");
  CHECK(span.trace_id == "0af7651916cd43dd8448eb211c80319c");
  CHECK(span.parent_span_id == "b7ad6b7169203331");
  CHECK(tracer.stats().not_sampled == 1);
}

TEST_CASE("otlp: traceidratio decides by the trace id's low bytes, the same for every span") {
  LoopbackOtlp collector;
  sg::OtlpOptions options = options_for(collector);
  options.sampler = sg::OtlpSampler::traceidratio;
  options.sampler_ratio = 0.5;
  sg::OtlpTracer tracer(options);
  const sg::TraceContext low = context_with_low_bytes(0x10);
  const sg::TraceContext high = context_with_low_bytes(0xF0);
  CHECK(tracer.sampled(low));
  CHECK(tracer.sampled(low.child()));
  CHECK_FALSE(tracer.sampled(high));
  CHECK_FALSE(tracer.sampled(high.child()));
  // About half of random traces.
  int kept = 0;
  for (int i = 0; i < 2000; ++i) kept += tracer.sampled(sg::TraceContext::root()) ? 1 : 0;
  CHECK(kept > 800);
  CHECK(kept < 1200);
  // Remote flags do not matter to a sampler that is not parent-based.
  sg::TraceContext remote_unsampled = low;
  remote_unsampled.remote = true;
  remote_unsampled.sampled = false;
  CHECK(tracer.sampled(remote_unsampled));
}

TEST_CASE("otlp: invalid options are refused") {
  sg::OtlpOptions options;
  options.endpoint = "localhost:4318/v1/traces";
  CHECK_THROWS_AS(sg::OtlpTracer{options}, sg::Error);
  options.endpoint = "http://127.0.0.1:4318/v1/traces";
  options.max_batch_size = 4096;
  CHECK_THROWS_WITH_AS(sg::OtlpTracer{options}, doctest::Contains("max_batch_size"), sg::Error);
  options.max_batch_size = 512;
  options.sampler_ratio = 1.5;
  CHECK_THROWS_WITH_AS(sg::OtlpTracer{options}, doctest::Contains("sampler_ratio"), sg::Error);
  options.sampler_ratio = 1.0;
  options.max_queue_size = 0;
  CHECK_THROWS_AS(sg::OtlpTracer{options}, sg::Error);
  options.max_queue_size = 2048;
  options.headers = {{"x-key", "v\r\nInjected: 1"}};
  CHECK_THROWS_WITH_AS(sg::OtlpTracer{options}, doctest::Contains("x-key"), sg::Error);
  options.headers = {{"bad name", "v"}};
  CHECK_THROWS_AS(sg::OtlpTracer{options}, sg::Error);
}

TEST_CASE("otlp: the exporter's counters as Prometheus series") {
  LoopbackOtlp collector;
  sg::MetricsRegistry registry;
  sg::OtlpOptions options = options_for(collector);
  options.sampler = sg::OtlpSampler::traceidratio;
  options.sampler_ratio = 0.5;
  auto tracer = std::make_shared<sg::OtlpTracer>(options);
  sg::register_otlp_metrics(registry, tracer);
  const sg::TraceContext kept = context_with_low_bytes(0x01);
  const sg::TraceContext left_out = context_with_low_bytes(0xFF);
  for (int i = 0; i < 3; ++i) {
    tracer->on_node_end(otlp_test_span(sg::SpanKind::node, "n", kept.child(), &kept));
  }
  tracer->on_run_end(otlp_test_span(sg::SpanKind::run, "g", left_out));
  CHECK(registry.render().find("stategraph_otlp_queued_spans 3\n") != std::string::npos);
  REQUIRE(tracer->flush(5s));
  const auto expect = [&](const std::string& text) {
    const std::string rendered = registry.render();
    CHECK_MESSAGE(rendered.find(text) != std::string::npos, (text + " in:\n" + rendered));
  };
  expect("stategraph_otlp_spans_total{outcome=\"exported\"} 3\n");
  expect("stategraph_otlp_spans_total{outcome=\"not_sampled\"} 1\n");
  expect("stategraph_otlp_spans_total{outcome=\"dropped\"} 0\n");
  expect("stategraph_otlp_export_requests_total{outcome=\"ok\"} 1\n");
  expect("stategraph_otlp_export_requests_total{outcome=\"error\"} 0\n");
  expect("stategraph_otlp_queued_spans 0\n");
  tracer.reset();  // gone: the counters stay
  expect("stategraph_otlp_spans_total{outcome=\"exported\"} 3\n");
}
