// SPDX-License-Identifier: MIT
// create_agent's built-in middleware, with the expectations of LangChain's middleware tests:
// human approval (the HumanInterrupt format), model and tool call limits, model fallback and
// tool retries.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/core/async.hpp>
#include <stategraph/models/middleware.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "support/fake_tool_calling_model.hpp"

namespace {

using sg::CreateAgentState;
using sg::test::FakeToolCallingModel;
using Calls = std::vector<std::vector<sg::ToolCall>>;

struct InputArgs {
  std::string input{};
  static constexpr auto schema() { return std::tuple{sg::field<"input">(&InputArgs::input)}; }
};

sg::ToolCall tc(std::string name, nlohmann::json args, std::string id) {
  return sg::ToolCall{std::move(id), std::move(name), std::move(args)};
}

/// A tool named `name` that answers "<name>: <input>" and counts its calls.
sg::Tool echo_tool(const std::string& name, std::atomic<int>* runs = nullptr) {
  return sg::make_tool<InputArgs>(name, "Echoes its input.", [name, runs](const InputArgs& a) {
    if (runs) ++*runs;
    return name + ": " + a.input;
  });
}

sg::Update<CreateAgentState> say(std::string text) {
  sg::Update<CreateAgentState> u;
  u.set<&CreateAgentState::messages>(std::vector<sg::Message>{sg::human(std::move(text))});
  return u;
}

sg::Command<CreateAgentState> resume(nlohmann::json value) {
  sg::Command<CreateAgentState> c;
  c.resume = std::move(value);
  return c;
}

sg::RunConfig on_thread(std::string id) {
  sg::RunConfig config;
  config.thread_id = std::move(id);
  return config;
}

std::vector<std::string> texts(const std::vector<sg::Message>& messages) {
  std::vector<std::string> out;
  for (const auto& m : messages) out.push_back(m.text());
  return out;
}

/// A model that always fails.
class BrokenModel final : public sg::ChatModel {
 public:
  explicit BrokenModel(std::string why) : why_(std::move(why)) {}
  [[nodiscard]] std::string model_name() const override { return "broken"; }
  [[nodiscard]] std::string provider() const override { return "fake"; }

 protected:
  [[nodiscard]] boost::asio::awaitable<sg::Message> agenerate(Request) const override {
    throw sg::ModelError(sg::errc::kModelConnection, why_);
    co_return sg::Message{};
  }

 private:
  std::string why_;
};

/// The exception a node threw, out of the NodeError the run threw.
template <class F>
std::exception_ptr node_failure(F&& run) {
  try {
    run();
  } catch (const sg::NodeError& e) {
    return e.cause();
  }
  return nullptr;
}

}  // namespace

// --- Human in the loop ---------------------------------------------------------------------------

TEST_CASE("human in the loop: one interrupt lists a HumanInterrupt per reviewed call") {
  auto model = std::make_shared<FakeToolCallingModel>(Calls{
      {tc("test_tool", {{"input", "test"}}, "1"), tc("free_tool", {{"input", "x"}}, "2")}, {}});
  std::atomic<int> test_runs{0};
  std::atomic<int> free_runs{0};
  sg::HumanInTheLoopOptions hitl;
  hitl.interrupt_on["test_tool"] = {};
  auto agent = sg::create_agent(
      model, {echo_tool("test_tool", &test_runs), echo_tool("free_tool", &free_runs)},
      {.middleware = {sg::human_in_the_loop_middleware(hitl)},
       .checkpointer = std::make_shared<sg::InMemorySaver>()});
  auto first = agent.invoke(say("Hello"), on_thread("t"));
  REQUIRE(first.interrupted());
  REQUIRE(first.interrupts.size() == 1);
  CHECK(first.interrupts[0].node == "HumanInTheLoopMiddleware.after_model");
  CHECK(first.interrupts[0].value == nlohmann::json::parse(R"([{
      "action_request": {"action": "test_tool", "args": {"input": "test"}},
      "config": {"allow_ignore": false, "allow_respond": true, "allow_edit": true,
                 "allow_accept": true},
      "description": "Tool execution requires approval\n\nTool: test_tool\nArgs: {\"input\":\"test\"}"
    }])"));
  CHECK(test_runs == 0);
  CHECK(free_runs == 0);

  SUBCASE("accept runs the call as it is, beside the call that needs no approval") {
    auto done =
        agent.invoke(resume(nlohmann::json::array({sg::accept_response()})), on_thread("t"));
    CHECK_FALSE(done.interrupted());
    CHECK(test_runs == 1);
    CHECK(free_runs == 1);
    CHECK(texts(done.state.messages)[2] == "test_tool: test");
    CHECK(texts(done.state.messages)[3] == "free_tool: x");
  }
  SUBCASE("edit runs the call with the reviewer's arguments, the AI message edited in place") {
    auto done = agent.invoke(
        resume(nlohmann::json::array({sg::edit_response("test_tool", {{"input", "edited"}})})),
        on_thread("t"));
    REQUIRE(done.state.messages.size() == 5);
    CHECK(done.state.messages[1].id == "0");
    CHECK(done.state.messages[1].tool_calls[0].args == nlohmann::json{{"input", "edited"}});
    CHECK(done.state.messages[2].text() == "test_tool: edited");
  }
  SUBCASE("response answers the call instead of running it; the model sees the answer") {
    auto done = agent.invoke(resume(sg::text_response("Custom response")), on_thread("t"));
    CHECK(test_runs == 0);
    CHECK(free_runs == 1);
    const auto& m = done.state.messages;
    REQUIRE(m.size() == 5);
    CHECK(m[2].type == sg::MessageType::tool);
    CHECK(m[2].text() == "Custom response");
    CHECK(m[2].status == "error");
    CHECK(m[2].tool_call_id == "1");
    CHECK(m[3].text() == "free_tool: x");
    CHECK(m[4].type == sg::MessageType::ai);
  }
  SUBCASE("an empty response answers with the rejection text") {
    auto done = agent.invoke(resume(sg::text_response("")), on_thread("t"));
    CHECK(done.state.messages[2].text() == "User rejected the tool call for `test_tool` with id 1");
  }
  SUBCASE("a response the config does not allow fails the run and names what is allowed") {
    CHECK_THROWS_WITH(
        (void)agent.invoke(resume(sg::ignore_response()), on_thread("t")),
        doctest::Contains("Response action 'ignore' is not allowed for tool 'test_tool'. "
                          "Expected one of [\"accept\",\"edit\",\"response\"] based on the "
                          "tool's configuration."));
  }
  SUBCASE("after a response that failed the run, the interrupt waits for a good one") {
    CHECK_THROWS((void)agent.invoke(resume(sg::ignore_response()), on_thread("t")));
    const auto snapshot = agent.get_state(on_thread("t"));
    REQUIRE(snapshot);
    CHECK(snapshot->next == std::vector<std::string>{"HumanInTheLoopMiddleware.after_model"});
    auto done = agent.invoke(resume(sg::accept_response()), on_thread("t"));
    CHECK_FALSE(done.interrupted());
    CHECK(test_runs == 1);
  }
  SUBCASE("a count of responses that does not match fails the run") {
    CHECK_THROWS_WITH((void)agent.invoke(resume(nlohmann::json::array()), on_thread("t")),
                      doctest::Contains("Number of human responses (0) does not match number "
                                        "of hanging tool calls (1)."));
  }
}

TEST_CASE(
    "human in the loop: ignore answers the calls and ends the run, and several reviewed calls") {
  auto model = std::make_shared<FakeToolCallingModel>(
      Calls{{tc("a", {{"input", "1"}}, "c1"), tc("b", {{"input", "2"}}, "c2")}, {}});
  std::atomic<int> runs{0};
  sg::HumanInTheLoopOptions hitl;
  hitl.interrupt_on["a"] = {.config = {.allow_ignore = true}, .description = "Approve a?"};
  hitl.interrupt_on["b"] = {.config = {.allow_ignore = true}};
  auto agent = sg::create_agent(model, {echo_tool("a", &runs), echo_tool("b", &runs)},
                                {.middleware = {sg::human_in_the_loop_middleware(hitl)},
                                 .checkpointer = std::make_shared<sg::InMemorySaver>()});
  auto first = agent.invoke(say("go"), on_thread("t"));
  REQUIRE(first.interrupted());
  REQUIRE(first.interrupts[0].value.size() == 2);
  CHECK(first.interrupts[0].value[0]["description"] == "Approve a?");
  CHECK(first.interrupts[0].value[1]["action_request"]["action"] == "b");

  SUBCASE("ignore") {
    auto done =
        agent.invoke(resume(nlohmann::json::array({sg::accept_response(), sg::ignore_response()})),
                     on_thread("t"));
    CHECK_FALSE(done.interrupted());
    CHECK(runs == 0);  // the run ended: nothing ran
    const auto& m = done.state.messages;
    REQUIRE(m.size() == 4);
    CHECK(m[2].tool_call_id == "c2");
    CHECK(m[2].text() == "User ignored the tool call for `b` with id c2");
    CHECK(m[3].tool_call_id == "c1");
    CHECK(m[3].text() == sg::cancelled_tool_call_text(tc("a", {}, "c1")));
    CHECK(model->inputs().size() == 1);
    CHECK(sg::pending_tool_calls(m).empty());
  }
  SUBCASE("accept and respond") {
    auto done = agent.invoke(
        resume(nlohmann::json::array({sg::accept_response(), sg::text_response("no b")})),
        on_thread("t"));
    CHECK(runs == 1);
    CHECK(texts(done.state.messages) ==
          std::vector<std::string>{"go", "go", "no b", "a: 1", "go-go-no b-a: 1"});
  }
}

// --- Model call limits ---------------------------------------------------------------------------

TEST_CASE("model call limit: the thread limit counts across invocations (thread_limit=1)") {
  auto model = std::make_shared<FakeToolCallingModel>();
  auto agent =
      sg::create_agent(model, {},
                       {.middleware = {sg::model_call_limit_middleware({.thread_limit = 1})},
                        .checkpointer = std::make_shared<sg::InMemorySaver>()});
  auto first = agent.invoke(say("hi"), on_thread("t"));
  CHECK(first.state.messages.size() == 2);
  auto second = agent.invoke(say("again"), on_thread("t"));
  REQUIRE(second.state.messages.size() == 4);
  CHECK(second.state.messages[3].type == sg::MessageType::ai);
  CHECK(second.state.messages[3].text() == "Model call limits exceeded: thread limit (1/1)");
  CHECK(model->inputs().size() == 1);
}

TEST_CASE("model call limit: the run limit ends the run before the second call (run_limit=1)") {
  auto model =
      std::make_shared<FakeToolCallingModel>(Calls{{tc("simple_tool", {{"input", "x"}}, "1")}, {}});
  auto agent =
      sg::create_agent(model, {echo_tool("simple_tool")},
                       {.middleware = {sg::model_call_limit_middleware({.run_limit = 1})}});
  auto result = agent.invoke(say("go"));
  const auto& m = result.state.messages;
  REQUIRE(m.size() == 4);
  CHECK(m[1].tool_calls.size() == 1);
  CHECK(m[2].type == sg::MessageType::tool);
  CHECK(m[3].text() == "Model call limits exceeded: run limit (1/1)");
}

TEST_CASE("model call limit: the run count starts again with each invocation, and error fails") {
  auto model = std::make_shared<FakeToolCallingModel>(Calls{{}, {}, {}, {}});
  auto agent = sg::create_agent(
      model, {},
      {.middleware = {sg::model_call_limit_middleware(
           {.thread_limit = 3, .run_limit = 1, .exit_behavior = sg::LimitBehavior::error})},
       .checkpointer = std::make_shared<sg::InMemorySaver>()});
  for (int i = 0; i < 3; ++i) (void)agent.invoke(say("hi"), on_thread("t"));
  const auto failure = node_failure([&] { (void)agent.invoke(say("hi"), on_thread("t")); });
  REQUIRE(failure);
  try {
    std::rethrow_exception(failure);
  } catch (const sg::ModelCallLimitExceededError& e) {
    CHECK(std::string(e.what()) == "Model call limits exceeded: thread limit (3/3)");
    CHECK(e.thread_count() == 3);
    CHECK(e.run_count() == 0);
  }
  CHECK_THROWS_WITH((void)sg::model_call_limit_middleware({}),
                    "At least one limit must be specified (thread_limit or run_limit)");
  CHECK_THROWS_WITH((void)sg::model_call_limit_middleware(
                        {.run_limit = 1, .exit_behavior = sg::LimitBehavior::continue_run}),
                    "Invalid exit_behavior: continue. Must be 'end' or 'error'");
}

// --- Tool call limits ----------------------------------------------------------------------------

TEST_CASE("tool call limit: end blocks the call over the run limit and ends the run") {
  auto model = std::make_shared<FakeToolCallingModel>(Calls{{tc("search", {{"input", "a"}}, "a")},
                                                            {tc("search", {{"input", "b"}}, "b")},
                                                            {tc("search", {{"input", "c"}}, "c")},
                                                            {}});
  std::atomic<int> runs{0};
  auto agent = sg::create_agent(
      model, {echo_tool("search", &runs)},
      {.middleware = {sg::tool_call_limit_middleware(
           {.thread_limit = 3, .run_limit = 2, .exit_behavior = sg::LimitBehavior::end})}});
  auto result = agent.invoke(say("go"));
  CHECK(runs == 2);
  const auto& m = result.state.messages;
  REQUIRE(m.size() == 8);
  CHECK(m[6].type == sg::MessageType::tool);
  CHECK(m[6].status == "error");
  CHECK(m[6].text() == "Tool call limit exceeded. Do not make additional tool calls.");
  CHECK(m[7].type == sg::MessageType::ai);
  CHECK(m[7].text() == "Tool call limit reached: run limit exceeded (3/2 calls).");
  const auto& counts = result.state.middleware_state["ToolCallLimitMiddleware"];
  CHECK(counts["thread_tool_call_count"] == nlohmann::json{{"__all__", 2}});
  CHECK(counts["run_tool_call_count"] == nlohmann::json{{"__all__", 3}});
}

TEST_CASE("tool call limit: end answers every call of the turn (run_limit=1, two calls)") {
  auto model = std::make_shared<FakeToolCallingModel>(
      Calls{{tc("search", {{"input", "a"}}, "id-a"), tc("search", {{"input", "b"}}, "id-b")}});
  auto agent = sg::create_agent(model, {echo_tool("search")},
                                {.middleware = {sg::tool_call_limit_middleware(
                                     {.run_limit = 1, .exit_behavior = sg::LimitBehavior::end})}});
  auto result = agent.invoke(say("go"));
  std::vector<std::string> ids;
  for (const auto& m : result.state.messages) {
    if (m.type != sg::MessageType::tool) continue;
    ids.push_back(m.tool_call_id);
    CHECK(m.status == "error");
  }
  CHECK(ids == std::vector<std::string>{"id-a", "id-b"});
}

TEST_CASE("tool call limit: a named tool, continue and error behaviours, and bad options") {
  SUBCASE("continue answers the blocked call and lets the model go on") {
    auto model = std::make_shared<FakeToolCallingModel>(
        Calls{{tc("search", {{"input", "a"}}, "a")}, {tc("search", {{"input", "b"}}, "b")}, {}});
    auto limit = sg::tool_call_limit_middleware({.tool_name = "search", .run_limit = 1});
    CHECK(limit.name == "ToolCallLimitMiddleware[search]");
    auto agent = sg::create_agent(model, {echo_tool("search")}, {.middleware = {limit}});
    auto result = agent.invoke(say("go"));
    const auto& m = result.state.messages;
    REQUIRE(m.size() == 6);
    CHECK(m[4].text() == "Tool call limit exceeded. Do not call 'search' again.");
    CHECK(m[4].status == "error");
    CHECK(m[5].type == sg::MessageType::ai);
    CHECK(m[5].tool_calls.empty());
  }
  SUBCASE("end with calls of other tools pending is refused") {
    auto model = std::make_shared<FakeToolCallingModel>(
        Calls{{tc("search", {{"input", "a"}}, "a"), tc("calculator", {{"input", "1"}}, "b")}});
    auto agent = sg::create_agent(model, {echo_tool("search"), echo_tool("calculator")},
                                  {.middleware = {sg::tool_call_limit_middleware(
                                       {.tool_name = "search",
                                        .thread_limit = 0,
                                        .exit_behavior = sg::LimitBehavior::end})}});
    CHECK_THROWS_WITH((void)agent.invoke(say("go")),
                      doctest::Contains("Cannot end execution with other tool calls pending. "
                                        "Found calls to: calculator."));
  }
  SUBCASE("error reports the counts the calls would have reached") {
    auto model = std::make_shared<FakeToolCallingModel>(
        Calls{{tc("search", {{"input", "a"}}, "a"), tc("search", {{"input", "b"}}, "b"),
               tc("search", {{"input", "c"}}, "c")}});
    auto agent =
        sg::create_agent(model, {echo_tool("search")},
                         {.middleware = {sg::tool_call_limit_middleware(
                              {.thread_limit = 2, .exit_behavior = sg::LimitBehavior::error})}});
    const auto failure = node_failure([&] { (void)agent.invoke(say("go")); });
    REQUIRE(failure);
    try {
      std::rethrow_exception(failure);
    } catch (const sg::ToolCallLimitExceededError& e) {
      CHECK(e.thread_count() == 3);
      CHECK(e.run_count() == 3);
      CHECK(std::string(e.what()) == "Tool call limit reached: thread limit exceeded (3/2 calls).");
    }
  }
  CHECK_THROWS_WITH((void)sg::tool_call_limit_middleware({}),
                    "At least one limit must be specified (thread_limit or run_limit)");
  CHECK_THROWS_WITH((void)sg::tool_call_limit_middleware({.thread_limit = 1, .run_limit = 2}),
                    "run_limit (2) cannot exceed thread_limit (1). The run limit should be less "
                    "than or equal to the thread limit.");
  CHECK_NOTHROW((void)sg::tool_call_limit_middleware({.thread_limit = 2, .run_limit = 2}));
}

// --- Model fallback ------------------------------------------------------------------------------

TEST_CASE("model fallback: the next model answers when one fails, the last error when all do") {
  auto fallback = std::make_shared<FakeToolCallingModel>();
  auto primary = std::make_shared<BrokenModel>("primary down");
  auto agent =
      sg::create_agent(primary, {},
                       {.middleware = {sg::model_fallback_middleware(
                            {std::make_shared<BrokenModel>("fallback1 down"), fallback})}});
  auto result = agent.invoke(say("hi"));
  CHECK(result.state.messages.back().text() == "hi");
  CHECK(fallback->inputs().size() == 1);
  auto failing = sg::create_agent(primary, {},
                                  {.middleware = {sg::model_fallback_middleware(
                                       {std::make_shared<BrokenModel>("last down")})}});
  CHECK_THROWS_WITH((void)failing.invoke(say("hi")), doctest::Contains("last down"));
  CHECK_THROWS_AS((void)sg::model_fallback_middleware({}), sg::Error);
}

// --- Tool retry ----------------------------------------------------------------------------------

TEST_CASE("tool retry: the delays follow the backoff, capped, jittered by a quarter") {
  sg::ToolRetryOptions o{.backoff_factor = 10.0,
                         .initial_delay = std::chrono::duration<double>(1.0),
                         .max_delay = std::chrono::duration<double>(2.0),
                         .jitter = false};
  CHECK(sg::retry_delay(0, o).count() == doctest::Approx(1.0));
  CHECK(sg::retry_delay(1, o).count() == doctest::Approx(2.0));
  CHECK(sg::retry_delay(2, o).count() == doctest::Approx(2.0));
  o.backoff_factor = 1.0;
  o.jitter = true;
  std::vector<double> seen;
  for (int i = 0; i < 10; ++i) {
    const double d = sg::retry_delay(0, o).count();
    CHECK(d >= 0.75);
    CHECK(d <= 1.25);
    seen.push_back(d);
  }
  CHECK(std::adjacent_find(seen.begin(), seen.end(), std::not_equal_to<>()) != seen.end());
  const sg::ToolRetryOptions defaults;
  CHECK(defaults.max_retries == 2);
  CHECK(defaults.backoff_factor == 2.0);
  CHECK(defaults.initial_delay.count() == 1.0);
  CHECK(defaults.max_delay.count() == 60.0);
  CHECK(defaults.jitter);
  CHECK_THROWS_WITH((void)sg::tool_retry_middleware({.max_retries = -1}),
                    "max_retries must be >= 0");
}

TEST_CASE("tool retry: retries, then answers the model with the failure") {
  std::atomic<int> attempts{0};
  int fail_count = 100;
  auto failing = sg::make_tool<InputArgs>(
      "failing_tool", "Fails.", [&attempts, &fail_count](const InputArgs& a) -> std::string {
        if (++attempts <= fail_count) throw std::invalid_argument("Failed: " + a.input);
        return "Success after " + std::to_string(attempts.load()) + " attempts: " + a.input;
      });
  const auto run = [&](sg::ToolRetryOptions options) {
    attempts = 0;
    options.initial_delay = std::chrono::duration<double>(0.0);
    options.jitter = false;
    auto model = std::make_shared<FakeToolCallingModel>(
        Calls{{tc("failing_tool", {{"input", "test"}}, "1"),
               tc("working_tool", {{"input", "test2"}}, "2")},
              {}});
    auto agent = sg::create_agent(model, {failing, echo_tool("working_tool")},
                                  {.middleware = {sg::tool_retry_middleware(std::move(options))}});
    return agent.invoke(say("go")).state.messages;
  };
  SUBCASE("spent retries") {
    const auto m = run({});
    CHECK(attempts == 3);
    CHECK(m[2].status == "error");
    CHECK(m[2].text() ==
          "Tool 'failing_tool' failed after 3 attempts with std::invalid_argument: Failed: test. "
          "Please try again.");
    CHECK(m[3].text() == "working_tool: test2");
  }
  SUBCASE("no retries") {
    const auto m = run({.max_retries = 0});
    CHECK(attempts == 1);
    CHECK(m[2].text() ==
          "Tool 'failing_tool' failed after 1 attempt with std::invalid_argument: Failed: test. "
          "Please try again.");
  }
  SUBCASE("a temporary failure") {
    fail_count = 2;
    const auto m = run({.max_retries = 3});
    CHECK(m[2].text() == "Success after 3 attempts: test");
    CHECK(m[2].status == "success");
  }
  SUBCASE("only the named tools") {
    const auto m = run({.tools = {"failing_tool"}});
    CHECK(attempts == 3);
    CHECK(m[3].text() == "working_tool: test2");
    CHECK_THROWS_WITH((void)run({.tools = {"working_tool"}}), doctest::Contains("Failed: test"));
    CHECK(attempts == 1);
  }
  SUBCASE("a custom failure text") {
    const auto m = run({.on_failure = [](const std::exception& e) {
      return std::string("Custom error: ") + e.what();
    }});
    CHECK(m[2].text() == "Custom error: Failed: test");
  }
  SUBCASE("rethrow, and errors retry_on refuses") {
    CHECK_THROWS_WITH((void)run({.rethrow = true}), doctest::Contains("Failed: test"));
    CHECK(attempts == 3);
    CHECK_THROWS_WITH((void)run({.retry_on = [](const std::exception&) { return false; }}),
                      doctest::Contains("Failed: test"));
    CHECK(attempts == 1);
  }
}

TEST_CASE("tool retry: the waits follow the backoff") {
  std::atomic<int> attempts{0};
  auto failing = sg::make_tool<InputArgs>("failing_tool", "Fails.",
                                          [&attempts](const InputArgs&) -> std::string {
                                            ++attempts;
                                            throw std::runtime_error("down");
                                          });
  auto model = std::make_shared<FakeToolCallingModel>(
      Calls{{tc("failing_tool", {{"input", "x"}}, "1")}, {}});
  auto agent = sg::create_agent(model, {failing},
                                {.middleware = {sg::tool_retry_middleware(
                                     {.max_retries = 2,
                                      .backoff_factor = 2.0,
                                      .initial_delay = std::chrono::duration<double>(0.05),
                                      .jitter = false})}});
  const auto start = std::chrono::steady_clock::now();
  (void)agent.invoke(say("go"));
  CHECK(attempts == 3);
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(150));
}
