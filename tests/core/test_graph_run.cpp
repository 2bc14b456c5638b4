// SPDX-License-Identifier: MIT
// Running graphs: Pregel supersteps, write order, conflicts, recursion limit, errors, retries,
// timeouts, cancellation.
#include <stategraph/stategraph.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <random>
#include <thread>

using namespace std::chrono_literals;

namespace {

struct Counter {
  int x = 0;
  static constexpr auto schema() { return std::tuple{sg::field<"x">(&Counter::x)}; }
};

struct Log {
  std::vector<std::string> items{};
  std::string last{};
  int count = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"items">(&Log::items, sg::concat), sg::field<"last">(&Log::last),
                      sg::field<"count">(&Log::count)};
  }
};

sg::Update<Log> item(std::string name) {
  return sg::set<&Log::items>(std::move(name));
}

sg::CompiledGraph<Counter> chain(int n) {
  sg::StateGraph<Counter> g;
  for (int i = 0; i < n; ++i) {
    g.add_node("n" + std::to_string(i),
               [](const Counter& s) { return sg::set<&Counter::x>(s.x + 1); });
    g.add_edge(i == 0 ? std::string(sg::START) : "n" + std::to_string(i - 1),
               "n" + std::to_string(i));
  }
  g.add_edge("n" + std::to_string(n - 1), sg::END);
  return g.compile();
}

}  // namespace

TEST_CASE("a chain runs one node per superstep") {
  const auto app = chain(10);
  const auto out = app.invoke(sg::set<&Counter::x>(5));
  CHECK(out.state.x == 15);
  CHECK_FALSE(out.interrupted());
  CHECK(app.invoke(Counter{.x = 1}).state.x == 11);  // a whole state as input
}

TEST_CASE("the recursion limit counts supersteps as LangGraph does (a chain of n needs n + 1)") {
  sg::RunConfig config;
  config.recursion_limit = 25;
  CHECK(chain(24).invoke(sg::Update<Counter>{}, config).state.x == 24);
  CHECK_THROWS_WITH_AS(
      (void)chain(25).invoke(sg::Update<Counter>{}, config),
      "Recursion limit of 25 reached without hitting a stop condition. You can increase the "
      "limit by setting the `recursion_limit` config key.",
      sg::GraphRecursionError);
  config.recursion_limit = 1;
  CHECK_THROWS_AS((void)chain(1).invoke(sg::Update<Counter>{}, config), sg::GraphRecursionError);
  config.recursion_limit = 2;
  CHECK(chain(1).invoke(sg::Update<Counter>{}, config).state.x == 1);
  // The default is 25.
  CHECK_THROWS_AS((void)chain(25).invoke(sg::Update<Counter>{}), sg::GraphRecursionError);
  config.recursion_limit = 0;
  CHECK_THROWS_AS((void)chain(1).invoke(sg::Update<Counter>{}, config), sg::Error);
}

TEST_CASE("parallel writes apply in node-name order, whatever the completion order") {
  // Nodes added as c, a, b; b keeps the last element: LangGraph.js gives ["from_a", "from_c"].
  sg::StateGraph<Log> g;
  g.add_node("c", [](const Log&) { return item("from_c"); });
  g.add_node("a", [](const Log&) {
    std::this_thread::sleep_for(2ms);
    return item("from_a");
  });
  g.add_node("b", [](const Log&) { return sg::set<&Log::items>(sg::keep_last(1)); });
  for (const char* n : {"c", "a", "b"}) g.add_edge(sg::START, n);
  const auto app = g.compile();
  for (int i = 0; i < 5; ++i) {
    const auto out = app.invoke(sg::set<&Log::items>(std::vector<std::string>{"x", "y", "z"}));
    CHECK(out.state.items == std::vector<std::string>{"from_a", "from_c"});
  }
}

TEST_CASE("parallel nodes with random latencies always give the same result") {
  sg::StateGraph<Log> g;
  for (int i = 0; i < 8; ++i) {
    const std::string name = "p" + std::to_string(i);
    g.add_node(name, [name](const Log& s) {
      thread_local std::mt19937 rng(std::random_device{}());
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
      return sg::Update<Log>{}.set<&Log::items>(name + ":" + std::to_string(s.items.size()));
    });
    g.add_edge(sg::START, name);
    g.add_edge(name, "join");
  }
  g.add_node("join",
             [](const Log& s) { return sg::set<&Log::count>(static_cast<int>(s.items.size())); });
  g.add_edge("join", sg::END);
  const auto app = g.compile();
  const std::vector<std::string> expected{"p0:0", "p1:0", "p2:0", "p3:0",
                                          "p4:0", "p5:0", "p6:0", "p7:0"};
  for (int run = 0; run < 30; ++run) {
    const auto out = app.invoke(sg::Update<Log>{});
    CHECK(out.state.items == expected);  // every node read the same snapshot
    CHECK(out.state.count == 8);
  }
}

TEST_CASE("two writers of a last-value field in one step is an error naming both") {
  sg::StateGraph<Log> g;
  g.add_node("left", [](const Log&) { return sg::set<&Log::last>(std::string("l")); });
  g.add_node("right", [](const Log&) { return sg::set<&Log::last>(std::string("r")); });
  g.add_edge(sg::START, "left").add_edge(sg::START, "right");
  CHECK_THROWS_WITH_AS(
      (void)g.compile().invoke(sg::Update<Log>{}),
      "At key 'last': Can receive only one value per step. Use an Annotated key to handle "
      "multiple values. (Written by 'left', 'right'; give the field a reducer.)",
      sg::InvalidUpdateError);
}

TEST_CASE("a waiting edge runs its target once all sources finished") {
  sg::StateGraph<Log> g;
  g.add_node("fast", [](const Log&) { return item("fast"); });
  g.add_node("slow1", [](const Log&) { return item("slow1"); });
  g.add_node("slow2", [](const Log&) { return item("slow2"); });
  g.add_node("join",
             [](const Log& s) { return sg::set<&Log::count>(static_cast<int>(s.items.size())); });
  g.add_edge(sg::START, "fast").add_edge(sg::START, "slow1").add_edge("slow1", "slow2");
  g.add_edge({"fast", "slow2"}, "join");
  g.add_edge("join", sg::END);
  const auto out = g.compile().invoke(sg::Update<Log>{});
  CHECK(out.state.count == 3);
  CHECK(out.state.items == std::vector<std::string>{"fast", "slow1", "slow2"});
}

TEST_CASE("conditional edges: names, lists, path maps, START") {
  sg::StateGraph<Log> g;
  g.add_node("small", [](const Log&) { return item("small"); });
  g.add_node("big", [](const Log&) { return item("big"); });
  g.add_node("audit", [](const Log&) { return item("audit"); });
  g.add_conditional_edges(sg::START, [](const Log& s) -> std::vector<std::string> {
    if (s.count > 10) return {"big", "audit"};
    return {"small"};
  });
  g.add_conditional_edges(
      "small", [](const Log& s) { return s.items.size() > 5 ? "stop" : "again"; },
      sg::PathMap{{"again", "small"}, {"stop", sg::END}});
  const auto app = g.compile();
  CHECK(app.invoke(sg::set<&Log::count>(3)).state.items.size() == 6);
  CHECK(app.invoke(sg::set<&Log::count>(30)).state.items ==
        std::vector<std::string>{"audit", "big"});
}

TEST_CASE("a router sees its own node's writes, not its siblings'") {
  sg::StateGraph<Log> g;
  std::atomic<int> seen{-1};
  g.add_node("a", [](const Log&) { return item("a"); });
  g.add_node("b", [](const Log&) {
    return sg::set<&Log::items>(std::vector<std::string>{"b1", "b2"});
  });
  g.add_edge(sg::START, "a").add_edge(sg::START, "b");
  g.add_conditional_edges("a", [&seen](const Log& s) {
    seen = static_cast<int>(s.items.size());
    return sg::END;
  });
  const auto out = g.compile().invoke(sg::Update<Log>{});
  CHECK(out.state.items.size() == 3);
  CHECK(seen == 1);
}

TEST_CASE("add_sequence chains nodes") {
  sg::StateGraph<Log> g;
  g.add_sequence({{"one", [](const Log&) { return item("1"); }},
                  {"two", [](const Log&) { return item("2"); }},
                  {"three", [](const Log&) { return item("3"); }}});
  g.set_entry_point("one").set_finish_point("three");
  CHECK(g.compile().invoke(sg::Update<Log>{}).state.items ==
        std::vector<std::string>{"1", "2", "3"});
}

TEST_CASE("a node that throws: NodeError names the node and the step, siblings finish cleanly") {
  std::atomic<int> sibling_runs{0};
  std::atomic<bool> sibling_saw_abort{false};
  sg::StateGraph<Log> g;
  g.add_node("first", [](const Log&) { return item("first"); });
  g.add_node("boom", [](const Log&) -> sg::Update<Log> { throw std::runtime_error("kaput"); });
  g.add_node("sibling", [&](const Log&, sg::Context& ctx) {
    ++sibling_runs;
    for (int i = 0; i < 50 && !ctx.cancelled(); ++i) std::this_thread::sleep_for(1ms);
    sibling_saw_abort = ctx.cancelled();
    return item("sibling");
  });
  g.add_node("after", [](const Log&) { return item("after"); });
  g.add_edge(sg::START, "first").add_edge("first", "boom").add_edge("first", "sibling");
  g.add_edge("boom", "after").add_edge("sibling", "after");
  const auto app = g.compile();
  try {
    (void)app.invoke(sg::Update<Log>{});
    FAIL("expected NodeError");
  } catch (const sg::NodeError& e) {
    CHECK(std::string(e.what()) == "node 'boom' failed at step 2: kaput");
    CHECK(e.node() == "boom");
    CHECK(e.step() == 2);
    CHECK(e.code() == "run.node_failed");
    CHECK_THROWS_WITH_AS(std::rethrow_exception(e.cause()), "kaput", std::runtime_error);
  }
  CHECK(sibling_runs <= 1);
}

TEST_CASE("retry policy: attempts, backoff, predicate") {
  std::atomic<int> calls{0};
  sg::StateGraph<Counter> g;
  sg::RetryPolicy policy;
  policy.max_attempts = 4;
  policy.initial_interval = 1ms;
  policy.backoff_factor = 2.0;
  policy.jitter = false;
  g.add_node("flaky",
             [&calls](const Counter& s, sg::Context& ctx) {
               ++calls;
               if (ctx.attempt() < 3) throw std::runtime_error("transient");
               return sg::set<&Counter::x>(s.x + ctx.attempt());
             },
             {.retry = policy});
  g.add_edge(sg::START, "flaky");
  const auto started = std::chrono::steady_clock::now();
  CHECK(g.compile().invoke(sg::Update<Counter>{}).state.x == 3);
  CHECK(calls == 3);
  CHECK(std::chrono::steady_clock::now() - started >= 3ms);  // 1 ms + 2 ms of backoff

  SUBCASE("gives up after max_attempts") {
    calls = 0;
    sg::StateGraph<Counter> always;
    policy.max_attempts = 2;
    always.add_node("bad",
                    [&calls](const Counter&) -> sg::Update<Counter> {
                      ++calls;
                      throw std::runtime_error("down");
                    },
                    {.retry = policy});
    always.add_edge(sg::START, "bad");
    CHECK_THROWS_WITH_AS((void)always.compile().invoke(sg::Update<Counter>{}),
                         "node 'bad' failed at step 1: down", sg::NodeError);
    CHECK(calls == 2);
  }
  SUBCASE("programming errors are not retried by default") {
    calls = 0;
    sg::StateGraph<Counter> logic;
    logic.add_node("bug",
                   [&calls](const Counter&) -> sg::Update<Counter> {
                     ++calls;
                     throw std::invalid_argument("bad argument");
                   },
                   {.retry = policy});
    logic.add_edge(sg::START, "bug");
    CHECK_THROWS_AS((void)logic.compile().invoke(sg::Update<Counter>{}), sg::NodeError);
    CHECK(calls == 1);
  }
  SUBCASE("a custom predicate") {
    calls = 0;
    policy.max_attempts = 5;
    policy.retry_on = [](const std::exception& e) { return std::string(e.what()) == "retry me"; };
    sg::StateGraph<Counter> custom;
    custom.add_node("n",
                    [&calls](const Counter&) -> sg::Update<Counter> {
                      ++calls;
                      throw std::runtime_error(calls < 2 ? "retry me" : "fatal");
                    },
                    {.retry = policy});
    custom.add_edge(sg::START, "n");
    CHECK_THROWS_WITH_AS((void)custom.compile().invoke(sg::Update<Counter>{}),
                         "node 'n' failed at step 1: fatal", sg::NodeError);
    CHECK(calls == 2);
  }
  CHECK(sg::default_retry_on(std::runtime_error("x")));
  CHECK_FALSE(sg::default_retry_on(std::out_of_range("x")));
  CHECK_FALSE(sg::default_retry_on(sg::InvalidUpdateError("x")));
}

TEST_CASE("per-node timeout: the attempt is abandoned, the retry policy decides") {
  std::atomic<int> calls{0};
  sg::StateGraph<Counter> g;
  g.add_node("slow",
             [&calls](const Counter& s) {
               const int call = ++calls;
               if (call == 1) std::this_thread::sleep_for(300ms);  // only the first attempt hangs
               return sg::set<&Counter::x>(s.x + 10);
             },
             {.retry = sg::RetryPolicy{.max_attempts = 2, .initial_interval = 1ms, .jitter = false},
              .timeout = 50ms});
  g.add_edge(sg::START, "slow");
  const auto started = std::chrono::steady_clock::now();
  CHECK(g.compile().invoke(sg::set<&Counter::x>(1)).state.x == 11);
  CHECK(std::chrono::steady_clock::now() - started < 250ms);
  CHECK(calls == 2);

  sg::StateGraph<Counter> never;
  never.add_node("hang",
                 [](const Counter&) {
                   std::this_thread::sleep_for(200ms);
                   return sg::Update<Counter>{};
                 },
                 {.timeout = 20ms});
  never.add_edge(sg::START, "hang");
  try {
    (void)never.compile().invoke(sg::Update<Counter>{});
    FAIL("expected a timeout");
  } catch (const sg::NodeTimeoutError& e) {
    CHECK(std::string(e.what()) == "node 'hang' timed out after 20 ms at step 1 (attempt 1)");
    CHECK(e.code() == "run.node_timeout");
  }
}

TEST_CASE("cancellation from another thread") {
  std::atomic<int> steps{0};
  sg::StateGraph<Counter> g;
  g.add_node("work", [&steps](const Counter& s, sg::Context& ctx) {
    ++steps;
    for (int i = 0; i < 20 && !ctx.cancelled(); ++i) std::this_thread::sleep_for(1ms);
    return sg::set<&Counter::x>(s.x + 1);
  });
  g.add_edge(sg::START, "work");
  g.add_conditional_edges("work", [](const Counter&) { return "work"; }, {"work", sg::END});
  const auto app = g.compile();
  sg::RunConfig config;
  config.recursion_limit = 100000;
  config.cancellation = sg::CancellationToken::create();
  std::thread canceller([token = config.cancellation] {
    std::this_thread::sleep_for(30ms);
    token.cancel();
  });
  const auto started = std::chrono::steady_clock::now();
  CHECK_THROWS_AS((void)app.invoke(sg::Update<Counter>{}, config), sg::CancelledError);
  canceller.join();
  CHECK(std::chrono::steady_clock::now() - started < 2s);
  CHECK(steps >= 1);
  // A cancelled token cancels the next run at once.
  CHECK_THROWS_AS((void)app.invoke(sg::Update<Counter>{}, config), sg::CancelledError);
}

TEST_CASE("context: config, node, step, task ids") {
  sg::StateGraph<Log> g;
  g.add_node("a", [](const Log&, sg::Context& ctx) {
    return sg::Update<Log>{}
        .set<&Log::last>(std::string(ctx.node()) + "@" + std::to_string(ctx.step()) + ":" +
                         ctx.config().configurable.value("user", std::string()) + ":" +
                         std::string(ctx.task_id()))
        .set<&Log::count>(ctx.config().context.value("n", 0));
  });
  g.add_edge(sg::START, "a");
  sg::RunConfig config;
  config.thread_id = "t1";
  config.configurable = {{"user", "ada"}};
  config.context = {{"n", 7}};
  const auto app = g.compile();
  const auto one = app.invoke(sg::Update<Log>{}, config).state;
  const auto two = app.invoke(sg::Update<Log>{}, config).state;
  CHECK(one.last.rfind("a@1:ada:", 0) == 0);
  CHECK(one.last.size() == std::string("a@1:ada:").size() + 16);
  CHECK(one.last == two.last);  // deterministic task ids
  CHECK(one.count == 7);
  CHECK_THROWS_AS((void)sg::interrupt("outside"), sg::Error);
}

TEST_CASE("many threads invoke one compiled graph at once") {
  sg::StateGraph<Log> g;
  for (int i = 0; i < 4; ++i) {
    const std::string name = "w" + std::to_string(i);
    g.add_node(name, [name](const Log& s) {
      return sg::set<&Log::items>(name + std::to_string(s.count));
    });
    g.add_edge(sg::START, name).add_edge(name, "sum");
  }
  g.add_node("sum",
             [](const Log& s) { return sg::set<&Log::last>(std::to_string(s.items.size())); });
  const auto app = g.compile();
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const auto out = app.invoke(sg::set<&Log::count>(t));
        const std::string k = std::to_string(t);
        if (out.state.items == std::vector<std::string>{"w0" + k, "w1" + k, "w2" + k, "w3" + k} &&
            out.state.last == "4") {
          ++good;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(good == 300);
}

TEST_CASE("max_concurrency caps parallel tasks") {
  std::atomic<int> running{0};
  std::atomic<int> peak{0};
  sg::StateGraph<Log> g;
  for (int i = 0; i < 6; ++i) {
    const std::string name = "t" + std::to_string(i);
    g.add_node(name, [&running, &peak](const Log&) {
      const int now = ++running;
      int seen = peak.load();
      while (now > seen && !peak.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(5ms);
      --running;
      return sg::Update<Log>{};
    });
    g.add_edge(sg::START, name);
  }
  const auto app = g.compile({.pool = std::make_shared<sg::ThreadPool>(4)});
  sg::RunConfig config;
  config.max_concurrency = 2;
  (void)app.invoke(sg::Update<Log>{}, config);
  CHECK(peak <= 2);
  peak = 0;
  (void)app.invoke(sg::Update<Log>{});
  CHECK(peak >= 2);  // slow tasks do run in parallel
}
