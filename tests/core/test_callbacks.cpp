// SPDX-License-Identifier: MIT
// Callbacks and spans: the run, its tasks, retries, subgraphs and checkpoint writes, in invoke
// and ainvoke; W3C trace contexts; the libraries' log hook.
#include <stategraph/core/async.hpp>
#include <stategraph/core/log.hpp>
#include <stategraph/stategraph.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <doctest/doctest.h>

#include "support/recording_callbacks.hpp"

namespace {

struct Trail {
  std::vector<std::string> items{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"items">(&Trail::items, sg::concat)};
  }
};

sg::Update<Trail> trail_item(std::string name) {
  return sg::set<&Trail::items>(std::move(name));
}

/// Runs invoke, or ainvoke on a fresh io_context.
sg::RunResult<Trail> run_trail(bool async, const sg::CompiledGraph<Trail>& app,
                               sg::Update<Trail> input, const sg::RunConfig& config) {
  if (!async) return app.invoke(std::move(input), config);
  boost::asio::io_context io;
  std::optional<sg::RunResult<Trail>> out;
  std::exception_ptr error;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        try {
          out = co_await app.ainvoke(std::move(input), config);
        } catch (...) {
          error = std::current_exception();
        }
      },
      boost::asio::detached);
  io.run();
  if (error) std::rethrow_exception(error);
  return std::move(*out);
}

/// Records the libraries' log records while alive.
struct LogCapture {
  std::mutex mu;
  std::vector<std::pair<std::string, nlohmann::json>> records;
  explicit LogCapture(sg::LogLevel level = sg::LogLevel::debug) {
    sg::set_log_sink(
        [this](const sg::LogRecord& r) {
          std::lock_guard lock(mu);
          records.emplace_back(std::string(r.message), r.fields);
        },
        level);
  }
  ~LogCapture() { sg::set_log_sink(nullptr); }
  std::vector<nlohmann::json> with(const std::string& message) {
    std::lock_guard lock(mu);
    std::vector<nlohmann::json> out;
    for (auto& [m, f] : records)
      if (m == message) out.push_back(f);
    return out;
  }
};

}  // namespace

TEST_CASE("TraceContext: traceparent headers as W3C Trace Context defines them") {
  const std::string header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  const auto parsed = sg::TraceContext::parse(header);
  REQUIRE(parsed);
  CHECK(parsed->trace_id_hex() == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(parsed->span_id_hex() == "00f067aa0ba902b7");
  CHECK(parsed->sampled);
  CHECK(parsed->remote);
  CHECK(parsed->traceparent() == header);
  const auto unsampled =
      sg::TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  REQUIRE(unsampled);
  CHECK_FALSE(unsampled->sampled);
  // A later version may add fields after the flags.
  CHECK(sg::TraceContext::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"));
  for (const char* bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",       // no flags
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // version ff
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",    // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",    // zero span id
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",    // upper case
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",  // version 00 is exact
           "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
           "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
       }) {
    CAPTURE(bad);
    CHECK_FALSE(sg::TraceContext::parse(bad));
  }
  const sg::TraceContext root = sg::TraceContext::root();
  CHECK(root.valid());
  CHECK_FALSE(root.remote);
  const sg::TraceContext child = root.child();
  CHECK(child.trace_id == root.trace_id);
  CHECK(child.span_id != root.span_id);
  CHECK(sg::TraceContext::parse(child.traceparent())->span_id == child.span_id);
}

TEST_CASE("callbacks see the run, its tasks, a retry, a subgraph and the checkpoint writes") {
  for (const bool async : {false, true}) {
    CAPTURE(async);
    sg::StateGraph<Trail> inner;
    inner.add_node("deep", [](const Trail&) { return trail_item("deep"); });
    inner.add_edge(sg::START, "deep");
    const auto sub = inner.compile({.name = "inner"});

    int failures = 0;
    sg::StateGraph<Trail> g;
    g.add_node("first", [](const Trail&) { return trail_item("first"); });
    g.add_node("flaky",
               [&failures](const Trail&) {
                 if (failures++ == 0) throw std::runtime_error("flaky once");
                 return trail_item("flaky");
               },
               {.retry = sg::RetryPolicy{.initial_interval = std::chrono::duration<double>(0.001),
                                         .jitter = false}});
    g.add_node("inner", sub);
    g.add_edge(sg::START, "first").add_edge("first", "flaky").add_edge("first", "inner");
    const auto app = g.compile({.checkpointer = std::make_shared<sg::InMemorySaver>()});

    auto recorder = std::make_shared<sg::testing::RecordingCallbacks>();
    sg::RunConfig config;
    config.thread_id = async ? "t-async" : "t-sync";
    config.run_id = "run-1";
    config.callbacks.push_back(recorder);
    LogCapture logs;
    const auto out = run_trail(async, app, sg::Update<Trail>{}, config);
    // The subgraph's output is its whole state ("first" again, then "deep").
    CHECK(out.state.items == std::vector<std::string>{"first", "flaky", "first", "deep"});

    const auto events = recorder->events();
    REQUIRE(!events.empty());
    CHECK(events.front().what == "run_start");
    CHECK(events.back().what == "run_end");
    const sg::Span run = events.back().span;
    CHECK(run.name == "LangGraph");
    CHECK(run.status == sg::SpanStatus::ok);
    CHECK(run.thread_id == config.thread_id);
    CHECK(run.run_id == "run-1");
    CHECK(run.parent_span_id == std::array<std::uint8_t, 8>{});
    CHECK(run.end >= run.start);
    CHECK_FALSE(run.checkpoint_id.empty());

    // Every node of the root run is a child of the run span; its start and end match.
    for (const char* node : {"first", "flaky", "inner"}) {
      CAPTURE(node);
      const auto ended = recorder->ended(sg::SpanKind::node, node);
      REQUIRE(ended.size() == 1);
      const sg::Span& s = ended[0];
      CHECK(s.context.trace_id == run.context.trace_id);
      CHECK(s.parent_span_id == run.context.span_id);
      CHECK(s.status == sg::SpanStatus::ok);
      CHECK(s.task_id.size() == 16);
      CHECK(s.thread_id == config.thread_id);
      CHECK(s.start >= run.start);
      CHECK(s.end <= run.end);
    }
    CHECK(recorder->ended(sg::SpanKind::node, "first")[0].step == 1);
    CHECK(recorder->ended(sg::SpanKind::node, "flaky")[0].step == 2);

    // The retry: reported with its cause, and logged.
    const auto retries = recorder->named("node_retry");
    REQUIRE(retries.size() == 1);
    CHECK(retries[0].span.name == "flaky");
    CHECK(retries[0].text == "flaky once");
    CHECK(retries[0].attempt == 2);
    const auto logged = logs.with("node retried");
    REQUIRE(logged.size() == 1);
    CHECK(logged[0]["node"] == "flaky");
    CHECK(logged[0]["error"] == "flaky once");
    CHECK(logged[0]["thread_id"] == config.thread_id);

    // The subgraph's run is a child of the task that runs it; its node a child of that run.
    const auto runs = recorder->ended(sg::SpanKind::run);
    REQUIRE(runs.size() == 2);
    const sg::Span& sub_run = runs[0];
    CHECK(sub_run.name == "inner");
    CHECK(sub_run.parent_span_id ==
          recorder->ended(sg::SpanKind::node, "inner")[0].context.span_id);
    CHECK(sub_run.checkpoint_ns.rfind("inner:", 0) == 0);
    CHECK(sub_run.run_id == "run-1");  // the root's run id
    const auto deep = recorder->ended(sg::SpanKind::node, "deep");
    REQUIRE(deep.size() == 1);
    CHECK(deep[0].parent_span_id == sub_run.context.span_id);
    CHECK(deep[0].context.trace_id == run.context.trace_id);

    // Checkpoint writes: children of their run, with the bytes the saver wrote.
    const auto writes = recorder->ended(sg::SpanKind::checkpoint);
    REQUIRE(!writes.empty());
    std::uint64_t bytes = 0;
    for (const auto& w : writes) {
      CHECK(
          (w.parent_span_id == run.context.span_id || w.parent_span_id == sub_run.context.span_id));
      CHECK(w.checkpoints >= 1);
      CHECK_FALSE(w.checkpoint_id.empty());
      bytes += w.bytes;
    }
    CHECK(bytes > 0);
  }
}

TEST_CASE("callbacks: an interrupted run, a failed run, a caller's trace parent") {
  sg::StateGraph<Trail> g;
  g.add_node("ask", [](const Trail&) {
    const auto answer = sg::interrupt("name?");
    return trail_item(answer.get<std::string>());
  });
  g.add_edge(sg::START, "ask");
  const auto app =
      g.compile({.checkpointer = std::make_shared<sg::InMemorySaver>(), .name = "asker"});
  auto recorder = std::make_shared<sg::testing::RecordingCallbacks>();
  sg::RunConfig config;
  config.thread_id = "t";
  config.callbacks.push_back(recorder);
  const auto parent =
      sg::TraceContext::parse("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  config.trace_parent = parent;
  CHECK(app.invoke(sg::Update<Trail>{}, config).interrupted());
  const auto runs = recorder->ended(sg::SpanKind::run);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].name == "asker");
  CHECK(runs[0].status == sg::SpanStatus::interrupted);
  CHECK(runs[0].context.trace_id == parent->trace_id);
  CHECK(runs[0].parent_span_id == parent->span_id);
  CHECK(runs[0].context.remote);
  CHECK(recorder->ended(sg::SpanKind::node, "ask")[0].status == sg::SpanStatus::interrupted);

  sg::StateGraph<Trail> broken;
  broken.add_node(
      "boom", [](const Trail&) -> sg::Update<Trail> { throw sg::Error("test.boom", "it broke"); });
  broken.add_edge(sg::START, "boom");
  auto failing = std::make_shared<sg::testing::RecordingCallbacks>();
  sg::RunConfig failing_config;
  failing_config.callbacks.push_back(failing);
  failing_config.run_name = "named run";
  CHECK_THROWS_AS(broken.compile().invoke(sg::Update<Trail>{}, failing_config), sg::Error);
  const auto failed = failing->ended(sg::SpanKind::run);
  REQUIRE(failed.size() == 1);
  CHECK(failed[0].name == "named run");
  CHECK(failed[0].status == sg::SpanStatus::error);
  CHECK(failed[0].error == "node 'boom' failed at step 1: it broke");
  CHECK(failed[0].error_type == "run.node_failed");
  const auto boom = failing->ended(sg::SpanKind::node, "boom");
  REQUIRE(boom.size() == 1);
  CHECK(boom[0].status == sg::SpanStatus::error);
  CHECK(boom[0].error == "it broke");  // the node's own error
  CHECK(boom[0].error_type == "test.boom");
}

TEST_CASE("callbacks: one that throws is logged and the run goes on") {
  struct Throwing : sg::Callbacks {
    void on_node_start(const sg::Span&) override { throw std::runtime_error("callback broke"); }
  };
  sg::StateGraph<Trail> g;
  g.add_node("a", [](const Trail&) { return trail_item("a"); });
  g.add_edge(sg::START, "a");
  auto recorder = std::make_shared<sg::testing::RecordingCallbacks>();
  sg::RunConfig config;
  config.callbacks = {std::make_shared<Throwing>(), recorder};
  LogCapture logs(sg::LogLevel::warn);
  CHECK(g.compile().invoke(sg::Update<Trail>{}, config).state.items ==
        std::vector<std::string>{"a"});
  CHECK(recorder->named("node_start").size() == 1);  // the next callback still hears it
  const auto logged = logs.with("a callback threw; the run goes on");
  REQUIRE(logged.size() == 1);
  CHECK(logged[0]["error"] == "callback broke");
}

TEST_CASE("the log hook: silent by default, levels, names") {
  CHECK_FALSE(sg::log_enabled(sg::LogLevel::error));
  sg::log(sg::LogLevel::error, "nobody hears this");  // no sink: nothing happens
  {
    LogCapture logs(sg::LogLevel::warn);
    CHECK(sg::log_enabled(sg::LogLevel::error));
    CHECK(sg::log_enabled(sg::LogLevel::warn));
    CHECK_FALSE(sg::log_enabled(sg::LogLevel::info));
    sg::log(sg::LogLevel::info, "below the level");
    sg::log(sg::LogLevel::warn, "at the level", {{"k", 1}});
    CHECK(logs.with("below the level").empty());
    REQUIRE(logs.with("at the level").size() == 1);
    CHECK(logs.with("at the level")[0]["k"] == 1);
  }
  CHECK_FALSE(sg::log_enabled(sg::LogLevel::error));
  CHECK(sg::parse_log_level("WARNING") == sg::LogLevel::warn);
  CHECK(sg::parse_log_level("debug") == sg::LogLevel::debug);
  CHECK(sg::parse_log_level("off") == sg::LogLevel::off);
  CHECK(sg::to_string(sg::LogLevel::error) == "error");
  CHECK_THROWS_WITH_AS((void)sg::parse_log_level("loud"),
                       doctest::Contains("unknown log level 'loud'"), sg::Error);
}
