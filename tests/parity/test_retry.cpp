// SPDX-License-Identifier: MIT
// LangGraph's tests/test_retry.py: the retry behaviour a graph user observes (attempts, which
// errors are retried, backoff intervals, timeouts composed with retries, writes of failed
// attempts). LangGraph patches time.sleep / random.uniform; here the intervals are measured
// between the starts of consecutive attempts (an attempt's own run time is negligible).
#include <atomic>
#include <chrono>
#include <mutex>
#include <system_error>
#include <thread>

#include "parity.hpp"

namespace doctest {
template <>
struct StringMaker<std::vector<std::string>> {
  static String convert(const std::vector<std::string>& v) {
    std::string out = "{";
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", \"" : "\"") + v[i] + "\"";
    return (out + "}").c_str();
  }
};
}  // namespace doctest

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

struct State {
  std::string foo{};
  static constexpr auto schema() { return std::tuple{sg::field<"foo">(&State::foo)}; }
};

struct XState {
  int x = 0;
  static constexpr auto schema() { return std::tuple{sg::field<"x">(&XState::x)}; }
};

/// Python's ValueError (a programming error in LangGraph's default_retry_on).
struct ValueError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
/// A user exception (LangGraph: `class CustomException(Exception)`).
struct CustomException : std::runtime_error {
  using std::runtime_error::runtime_error;
};

bool is_value_error(const std::exception& e) {
  return dynamic_cast<const ValueError*>(&e) != nullptr;
}
bool is_node_timeout(const std::exception& e) {
  return dynamic_cast<const sg::NodeTimeoutError*>(&e) != nullptr;
}

std::chrono::duration<double> seconds(double s) {
  return std::chrono::duration<double>(s);
}

double gap_seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

sg::Update<State> foo(std::string value) {
  return sg::set<&State::foo>(std::move(value));
}

/// Attempts of a node that always throws `error`, with the default retry_on and two attempts.
template <class E>
int attempts_with_default_retry_on(const E& error) {
  auto attempts = std::make_shared<std::atomic<int>>(0);
  sg::StateGraph<State> g;
  g.add_node("node",
             [attempts, error](const State&) -> sg::Update<State> {
               ++*attempts;
               throw error;
             },
             {.retry = sg::RetryPolicy{
                  .max_attempts = 2, .initial_interval = seconds(0), .jitter = false}});
  g.add_edge(sg::START, "node");
  CHECK_THROWS((void)g.compile().invoke(foo("")));
  return attempts->load();
}

}  // namespace

TEST_CASE("langgraph/test_retry.py::test_should_retry_default_retry_on") {
  // LangGraph tests its default_retry_on predicate directly; here each exception is thrown by a
  // node with RetryPolicy() (default retry_on, 2 attempts): retried means 2 attempts.
  // Python classes without a C++ counterpart are left out: TypeError, ImportError, NameError,
  // SyntaxError, ReferenceError, StopIteration, StopAsyncIteration, httpx/requests HTTP errors,
  // and RuntimeError (std::runtime_error is the base of every C++ user exception, so it cannot
  // mean "a programming error" as Python's RuntimeError does). ArithmeticError is left out too
  // (C++'s arithmetic exceptions are split between logic_error and runtime_error).

  // ConnectionError (an OSError) is retried: std::system_error with a connection errc.
  CHECK(attempts_with_default_retry_on(std::system_error(
            std::make_error_code(std::errc::connection_refused), "connection refused")) == 2);
  // ValueError, LookupError are not.
  CHECK(attempts_with_default_retry_on(std::invalid_argument("invalid value")) == 1);
  CHECK(attempts_with_default_retry_on(std::out_of_range("key not found")) == 1);
  // Other OSErrors are not: std::system_error with a non-connection errc.
  CHECK(attempts_with_default_retry_on(std::system_error(
            std::make_error_code(std::errc::no_such_file_or_directory), "file not found")) == 1);
  // NodeTimeoutError is retried.
  CHECK(attempts_with_default_retry_on(sg::NodeTimeoutError("node timed out")) == 2);
  // Any other exception is retried.
  CHECK(attempts_with_default_retry_on(CustomException("custom error")) == 2);
}

TEST_CASE("langgraph/test_retry.py::test_graph_with_single_retry_policy") {
  std::mutex mu;
  int attempt_count = 0;
  bool attempt_matches = true;
  std::vector<int> attempt_numbers;
  std::vector<Clock::time_point> starts;
  sg::StateGraph<State> g;
  g.add_node("failing_node",
             [&](const State&, sg::Context& ctx) {
               std::lock_guard lock(mu);
               ++attempt_count;
               attempt_matches = attempt_matches && ctx.attempt() == attempt_count;
               attempt_numbers.push_back(ctx.attempt());
               starts.push_back(Clock::now());
               if (attempt_count < 3) throw ValueError("Intentional failure");
               return foo("success");
             },
             {.retry = sg::RetryPolicy{.max_attempts = 3,
                                       .initial_interval = seconds(0.01),
                                       .backoff_factor = 2.0,
                                       .jitter = false,
                                       .retry_on = is_value_error}});
  g.add_node("other_node", [](const State&) { return foo("other_node"); });
  g.add_edge(sg::START, "failing_node");
  g.add_edge("failing_node", "other_node");
  const auto result = g.compile().invoke(foo(""));

  CHECK(attempt_count == 3);
  CHECK(attempt_matches);
  CHECK(attempt_numbers == std::vector<int>{1, 2, 3});
  // node_first_attempt_time (the same on every attempt) has no C++ counterpart.
  CHECK(result.state.foo == "other_node");
  // Sleeps: [0.01, 0.02] (no jitter). Lower bounds exactly, upper bounds with room for a busy
  // machine.
  REQUIRE(starts.size() == 3);
  const double first = gap_seconds(starts[0], starts[1]);
  const double second = gap_seconds(starts[1], starts[2]);
  CHECK(first >= 0.01);
  CHECK(first < 0.01 + 0.25);
  CHECK(second >= 0.02);
  CHECK(second < 0.02 + 0.25);
}

TEST_CASE("langgraph/test_retry.py::test_runtime_execution_info_defaults_without_retry") {
  int node_attempt = 0;
  sg::StateGraph<State> g;
  g.add_node("node", [&node_attempt](const State&, sg::Context& ctx) {
    node_attempt = ctx.attempt();
    return foo("ok");
  });
  g.add_edge(sg::START, "node");
  const auto result = g.compile().invoke(foo(""));
  CHECK(result.state.foo == "ok");
  CHECK(node_attempt == 1);
  // node_first_attempt_time (a float) has no C++ counterpart.
}

TEST_CASE("langgraph/test_retry.py::test_graph_with_jitter_retry_policy") {
  std::mutex mu;
  int attempt_count = 0;
  std::vector<Clock::time_point> starts;
  sg::StateGraph<State> g;
  g.add_node("failing_node",
             [&](const State&) {
               std::lock_guard lock(mu);
               ++attempt_count;
               starts.push_back(Clock::now());
               if (attempt_count < 2) throw ValueError("Intentional failure");
               return foo("success");
             },
             {.retry = sg::RetryPolicy{.max_attempts = 3,
                                       .initial_interval = seconds(0.01),
                                       .jitter = true,
                                       .retry_on = is_value_error}});
  g.add_edge(sg::START, "failing_node");
  const auto result = g.compile().invoke(foo(""));
  CHECK(attempt_count == 2);
  CHECK(result.state.foo == "success");
  // LangGraph mocks random.uniform(0, 1) -> 0.05 and checks sleep(0.01 + 0.05). Without the mock:
  // the sleep is 0.01 + uniform(0, 1).
  REQUIRE(starts.size() == 2);
  const double gap = gap_seconds(starts[0], starts[1]);
  CHECK(gap >= 0.01);
  CHECK(gap < 0.01 + 1.0 + 0.25);
}

TEST_CASE("langgraph/test_retry.py::test_graph_with_max_attempts_exceeded") {
  std::mutex mu;
  std::vector<Clock::time_point> starts;
  sg::StateGraph<State> g;
  g.add_node("always_failing",
             [&](const State&) -> sg::Update<State> {
               {
                 std::lock_guard lock(mu);
                 starts.push_back(Clock::now());
               }
               throw ValueError("Always fails");
             },
             {.retry = sg::RetryPolicy{.max_attempts = 2,
                                       .initial_interval = seconds(0.01),
                                       .jitter = false,
                                       .retry_on = is_value_error}});
  g.add_edge(sg::START, "always_failing");
  // LangGraph raises the node's ValueError("Always fails"); stategraph wraps it in NodeError.
  CHECK_THROWS_WITH_AS((void)g.compile().invoke(foo("")), doctest::Contains("Always fails"),
                       sg::NodeError);
  // sleep was last called with 0.01: two attempts, 0.01 s apart.
  REQUIRE(starts.size() == 2);
  CHECK(gap_seconds(starts[0], starts[1]) >= 0.01);
}

TEST_CASE_TEMPLATE(
    "langgraph/test_retry.py::test_execution_info_identity_fields_populated_on_retry", Saver,
    SG_PARITY_SAVERS) {
  Saver saver;
  std::mutex mu;
  std::vector<std::string> thread_ids;
  std::vector<int> node_attempts;
  sg::StateGraph<State> g;
  g.add_node("failing_node",
             [&](const State&, sg::Context& ctx) {
               std::lock_guard lock(mu);
               thread_ids.push_back(ctx.config().thread_id);
               node_attempts.push_back(ctx.attempt());
               if (node_attempts.size() < 2) throw ValueError("Intentional failure");
               return foo("success");
             },
             {.retry = sg::RetryPolicy{.max_attempts = 3,
                                       .initial_interval = seconds(0.01),
                                       .jitter = false,
                                       .retry_on = is_value_error}});
  g.add_edge(sg::START, "failing_node");
  const auto result =
      g.compile({.checkpointer = saver.get()}).invoke(foo(""), sg::parity::thread("retry-thread"));
  CHECK(result.state.foo == "success");
  CHECK(thread_ids == std::vector<std::string>{"retry-thread", "retry-thread"});
  CHECK(node_attempts == std::vector<int>{1, 2});
  // run_id / checkpoint_ns are captured but not asserted by LangGraph; node_first_attempt_time
  // has no C++ counterpart.
}

TEST_CASE("langgraph/test_retry.py::test_state_graph_add_node_timeout_composes_with_retry") {
  // LangGraph uses TimeoutPolicy(idle_timeout=0.3); the node emits no stream events, so the idle
  // timeout behaves as stategraph's run timeout (NodeOptions::timeout).
  auto attempts = std::make_shared<std::atomic<int>>(0);
  sg::StateGraph<XState> builder;
  builder.add_node("flaky",
                   [attempts](const XState& s) {
                     if (++*attempts < 2) std::this_thread::sleep_for(1s);
                     return sg::set<&XState::x>(s.x + 1);
                   },
                   {.retry = sg::RetryPolicy{.max_attempts = 3,
                                             .initial_interval = seconds(0),
                                             .jitter = false,
                                             .retry_on = is_node_timeout},
                    .timeout = 300ms});
  builder.add_edge(sg::START, "flaky");
  builder.add_edge("flaky", sg::END);
  const auto result = builder.compile().invoke(sg::set<&XState::x>(0));
  CHECK(result.state.x == 1);
  CHECK(attempts->load() == 2);
}

// LangGraph checks, on run_with_retry directly, that writes a timed-out attempt makes through
// CONFIG_KEY_SEND never reach the task's writes. A stategraph node writes by returning, except
// through Context::push_message: these are the graph-level counterparts, with push_message as
// the mid-node write and the thread's state as the observed writes.

TEST_CASE_TEMPLATE(
    "langgraph/test_retry.py::test_arun_with_retry_timeout_discards_stale_executor_writes", Saver,
    SG_PARITY_SAVERS) {
  Saver saver;
  struct Shared {
    std::atomic<int> calls{0};
    std::atomic<bool> release{false};
  };
  auto shared = std::make_shared<Shared>();
  sg::StateGraph<sg::MessagesState> g;
  g.add_node("flaky",
             [shared](const sg::MessagesState&, sg::Context& ctx) {
               if (++shared->calls == 1) {
                 // The first attempt writes "stale" once the second one has run (after its
                 // timeout).
                 for (int i = 0; i < 1000 && !shared->release; ++i)
                   std::this_thread::sleep_for(1ms);
                 ctx.push_message(sg::ai("stale", "stale"));
                 return;
               }
               shared->release = true;
               ctx.push_message(sg::ai("fresh", "fresh"));
             },
             {.retry = sg::RetryPolicy{.max_attempts = 2,
                                       .initial_interval = seconds(0),
                                       .jitter = false,
                                       .retry_on = is_node_timeout},
              .timeout = 50ms});
  g.add_edge(sg::START, "flaky");
  const auto app = g.compile({.checkpointer = saver.get()});
  const auto config = sg::parity::thread("t");
  const auto result = app.invoke(sg::Update<sg::MessagesState>{}, config);
  std::this_thread::sleep_for(50ms);
  const std::vector<sg::Message> fresh{sg::ai("fresh", "fresh")};
  CHECK(result.state.messages == fresh);
  const auto state = app.get_state(config);
  REQUIRE(state);
  CHECK(state->values.messages == fresh);
}

TEST_CASE_TEMPLATE(
    "langgraph/test_retry.py::test_arun_with_retry_timeout_discards_pre_timeout_writes", Saver,
    SG_PARITY_SAVERS) {
  Saver saver;
  sg::StateGraph<sg::MessagesState> g;
  g.add_node("aslow-writer",
             [](const sg::MessagesState&, sg::Context& ctx) {
               ctx.push_message(sg::ai("stale-before-idle-timeout", "stale"));
               std::this_thread::sleep_for(200ms);
             },
             {.timeout = 50ms});
  g.add_edge(sg::START, "aslow-writer");
  const auto app = g.compile({.checkpointer = saver.get()});
  const auto config = sg::parity::thread("t");
  CHECK_THROWS_AS((void)app.invoke(sg::Update<sg::MessagesState>{}, config), sg::NodeTimeoutError);
  std::this_thread::sleep_for(250ms);  // the abandoned attempt has returned
  // task.writes == []: the failed task has no saved result and the state has no message.
  const auto state = app.get_state(config);
  REQUIRE(state);
  CHECK(state->values.messages.empty());
  REQUIRE(state->tasks.size() == 1);
  CHECK(state->tasks[0].result.is_null());
}
