// SPDX-License-Identifier: MIT
// Async runs: coroutine nodes, ainvoke and astream on Boost.Asio. Each behaviour runs in both
// forms (invoke / ainvoke) and must give the same result, the same events and the same
// checkpoints.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/core/async.hpp>
#include <stategraph/core/thread_pool.hpp>
#include <stategraph/stategraph.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>  // before Boost.Asio's awaitable headers (Boost 1.74 omits it)

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

struct AsyncLog {
  std::vector<std::string> items{};
  int count = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"items">(&AsyncLog::items, sg::concat),
                      sg::field<"count">(&AsyncLog::count)};
  }
};

sg::Update<AsyncLog> async_item(std::string name) {
  return sg::set<&AsyncLog::items>(std::move(name));
}

asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
  auto executor = co_await asio::this_coro::executor;
  asio::steady_timer timer(executor, d);
  co_await timer.async_wait(asio::use_awaitable);
}

enum class Form { sync, async };

/// Runs invoke or ainvoke of `input` (ainvoke on a fresh io_context). `returned`: when the run
/// returned or threw (io_context::run also waits for abandoned coroutine nodes).
template <class S, class Input>
sg::RunResult<S> run_in(Form form, const sg::CompiledGraph<S>& app, Input input,
                        const sg::RunConfig& config,
                        std::chrono::steady_clock::time_point* returned = nullptr) {
  if (form == Form::sync) {
    struct Stamp {
      std::chrono::steady_clock::time_point* at;
      ~Stamp() {
        if (at) *at = std::chrono::steady_clock::now();
      }
    } stamp{returned};
    return app.invoke(std::move(input), config);
  }
  asio::io_context io;
  std::optional<sg::RunResult<S>> out;
  std::exception_ptr error;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        try {
          sg::RunResult<S> r = co_await app.ainvoke(std::move(input), config);
          out = std::move(r);
        } catch (...) {
          error = std::current_exception();
        }
        if (returned) *returned = std::chrono::steady_clock::now();
      },
      asio::detached);
  io.run();
  if (error) std::rethrow_exception(error);
  return std::move(*out);
}

/// A coroutine node that waits, then appends `name`.
auto waiting(std::string name, std::chrono::milliseconds d) {
  return [name, d](const AsyncLog&) -> asio::awaitable<sg::Update<AsyncLog>> {
    co_await sleep_for(d);
    co_return async_item(name);
  };
}

std::vector<std::string> history_sources(const sg::CompiledGraph<AsyncLog>& app,
                                         const sg::RunConfig& config) {
  std::vector<std::string> out;
  for (const auto& s : app.get_state_history(config))
    out.push_back(s.metadata.value("source", std::string()) + ":" +
                  std::to_string(s.metadata.value("step", -9)) + ":" +
                  std::to_string(s.values.items.size()));
  return out;
}

}  // namespace

TEST_CASE("a coroutine node runs in invoke and in ainvoke with the same result") {
  sg::StateGraph<AsyncLog> g;
  g.add_node("a", waiting("a", 5ms));
  g.add_node("b", [](const AsyncLog& s) {
    return sg::set<&AsyncLog::count>(static_cast<int>(s.items.size()));
  });
  g.add_edge(sg::START, "a").add_edge("a", "b").add_edge("b", sg::END);
  const auto app = g.compile();
  for (Form form : {Form::sync, Form::async}) {
    CAPTURE(static_cast<int>(form));
    auto r = run_in(form, app, async_item("in"), {});
    CHECK(r.state.items == std::vector<std::string>{"in", "a"});
    CHECK(r.state.count == 2);
  }
}

TEST_CASE("ainvoke: runs waiting on timers share one thread and wait at the same time") {
  std::atomic<int> in_flight{0};
  std::atomic<int> most{0};
  sg::StateGraph<AsyncLog> g;
  g.add_node("wait", [&](const AsyncLog&) -> asio::awaitable<sg::Update<AsyncLog>> {
    const int now = ++in_flight;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    co_await sleep_for(20ms);
    --in_flight;
    co_return sg::set<&AsyncLog::count>(1);
  });
  g.add_edge(sg::START, "wait");
  const auto app = g.compile();
  asio::io_context io;
  int finished = 0;
  std::set<std::thread::id> threads;
  for (int i = 0; i < 50; ++i) {
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          sg::Update<AsyncLog> input;
          auto r = co_await app.ainvoke(std::move(input));
          threads.insert(std::this_thread::get_id());
          if (r.state.count == 1) ++finished;
        },
        asio::detached);
  }
  io.run();
  CHECK(finished == 50);
  CHECK(most.load() == 50);  // every run was waiting before the first timer fired
  CHECK(threads == std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST_CASE("ainvoke on a thread pool: parallel coroutine branches of one run are serialized") {
  // Fan-out to three coroutine nodes; on a 4-thread pool the run's strand keeps its tasks apart.
  std::atomic<int> inside{0};
  std::atomic<bool> overlapped{false};
  auto node = [&](std::string name) {
    return [&, name](const AsyncLog&) -> asio::awaitable<sg::Update<AsyncLog>> {
      for (int i = 0; i < 5; ++i) {
        if (++inside > 1) overlapped = true;
        std::this_thread::sleep_for(1ms);
        --inside;
        co_await sleep_for(1ms);
      }
      co_return async_item(name);
    };
  };
  sg::StateGraph<AsyncLog> g;
  g.add_node("x", node("x")).add_node("y", node("y")).add_node("z", node("z"));
  g.add_edge(sg::START, "x").add_edge(sg::START, "y").add_edge(sg::START, "z");
  const auto app = g.compile();
  asio::thread_pool pool(4);
  auto result = asio::co_spawn(
      pool,
      [&]() -> asio::awaitable<sg::RunResult<AsyncLog>> {
        auto input = async_item("in");
        auto r = co_await app.ainvoke(std::move(input));
        co_return r;
      },
      asio::use_future);
  auto r = result.get();
  pool.join();
  CHECK(r.state.items == std::vector<std::string>{"in", "x", "y", "z"});  // task order
  CHECK_FALSE(overlapped.load());
}

TEST_CASE("ainvoke from a strand runs in place on it, its parallel branches serialized") {
  // Two runs at once, each started from a strand of an io_context run by 4 threads: each run's
  // tasks never overlap.
  asio::io_context io;
  struct Caller {
    asio::strand<asio::io_context::executor_type> strand;
    std::atomic<int> inside{0};
    std::atomic<bool> overlapped{false};
    std::atomic<bool> elsewhere{false};
  };
  Caller first{asio::make_strand(io)};
  Caller second{asio::make_strand(io)};
  auto graph_of = [](Caller& caller) {
    auto node = [&caller](std::string name) {
      return [&caller, name](const AsyncLog&) -> asio::awaitable<sg::Update<AsyncLog>> {
        for (int i = 0; i < 5; ++i) {
          if (!caller.strand.running_in_this_thread()) caller.elsewhere = true;
          if (++caller.inside > 1) caller.overlapped = true;
          std::this_thread::sleep_for(1ms);
          --caller.inside;
          co_await sleep_for(1ms);
        }
        co_return async_item(name);
      };
    };
    sg::StateGraph<AsyncLog> g;
    g.add_node("x", node("x")).add_node("y", node("y")).add_node("z", node("z"));
    g.add_edge(sg::START, "x").add_edge(sg::START, "y").add_edge(sg::START, "z");
    return g.compile();
  };
  const auto app_first = graph_of(first);
  const auto app_second = graph_of(second);
  auto start = [](Caller& caller, const sg::CompiledGraph<AsyncLog>& app) {
    return asio::co_spawn(
        caller.strand,
        [&app]() -> asio::awaitable<sg::RunResult<AsyncLog>> {
          auto input = async_item("in");
          auto r = co_await app.ainvoke(std::move(input));
          co_return r;
        },
        asio::use_future);
  };
  auto a = start(first, app_first);
  auto b = start(second, app_second);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back([&io] { io.run(); });
  for (auto& t : threads) t.join();
  CHECK(a.get().state.items == std::vector<std::string>{"in", "x", "y", "z"});
  CHECK(b.get().state.items == std::vector<std::string>{"in", "x", "y", "z"});
  for (const Caller* caller : {&first, &second}) {
    CHECK_FALSE(caller->overlapped.load());
    CHECK_FALSE(caller->elsewhere.load());
  }

  // In place: the same run, started from a strand, passes the io_context's queue fewer times
  // than started from the io_context itself (which makes a strand for it).
  sg::StateGraph<AsyncLog> g;
  g.add_node("a", waiting("a", 0ms));
  g.add_edge(sg::START, "a");
  const auto app = g.compile();
  auto handlers = [&app](bool on_strand) {
    asio::io_context one;
    auto run = [&app]() -> asio::awaitable<void> {
      auto input = async_item("in");
      auto r = co_await app.ainvoke(std::move(input));
      CHECK(r.state.items == std::vector<std::string>{"in", "a"});
    };
    if (on_strand) {
      asio::co_spawn(asio::make_strand(one), run, asio::detached);
    } else {
      asio::co_spawn(one, run, asio::detached);
    }
    return one.run();
  };
  const std::size_t from_strand = handlers(true);
  const std::size_t from_io = handlers(false);
  INFO("handlers: from a strand " << from_strand << ", from the io_context " << from_io);
  CHECK(from_strand < from_io);
}

TEST_CASE("both forms: interrupts inside coroutine nodes, resumed with a Command") {
  for (Form form : {Form::sync, Form::async}) {
    CAPTURE(static_cast<int>(form));
    sg::StateGraph<AsyncLog> g;
    g.add_node("ask",
               [](const AsyncLog&, sg::Context& ctx) -> asio::awaitable<sg::Update<AsyncLog>> {
                 co_await sleep_for(1ms);
                 const auto answer = ctx.interrupt("name?");
                 co_return async_item("hello " + answer.get<std::string>());
               });
    g.add_edge(sg::START, "ask");
    sg::CompileOptions options;
    options.checkpointer = std::make_shared<sg::InMemorySaver>();
    const auto app = g.compile(options);
    sg::RunConfig config;
    config.thread_id = "t";
    auto first = run_in(form, app, async_item("in"), config);
    REQUIRE(first.interrupted());
    REQUIRE(first.interrupts.size() == 1);
    CHECK(first.interrupts[0].value == "name?");
    CHECK(first.next == std::vector<std::string>{"ask"});
    sg::Command<AsyncLog> resume;
    resume.resume = "Ada";
    auto second = run_in(form, app, std::move(resume), config);
    CHECK_FALSE(second.interrupted());
    CHECK(second.state.items == std::vector<std::string>{"in", "hello Ada"});
    CHECK(history_sources(app, config) ==
          std::vector<std::string>{"loop:1:2", "loop:0:1", "input:-1:0"});
  }
}

TEST_CASE("both forms: the same checkpoints, with every durability") {
  for (auto durability : {sg::Durability::sync, sg::Durability::async, sg::Durability::exit}) {
    std::vector<std::vector<std::string>> histories;
    for (Form form : {Form::sync, Form::async}) {
      sg::StateGraph<AsyncLog> g;
      g.add_node("a", waiting("a", 1ms)).add_node("b", waiting("b", 2ms));
      g.add_node("c", [](const AsyncLog&) { return async_item("c"); });
      g.add_edge(sg::START, "a").add_edge(sg::START, "b").add_edge({"a", "b"}, "c");
      sg::CompileOptions options;
      options.checkpointer = std::make_shared<sg::InMemorySaver>();
      const auto app = g.compile(options);
      sg::RunConfig config;
      config.thread_id = "t";
      config.durability = durability;
      auto r = run_in(form, app, async_item("in"), config);
      CHECK(r.state.items == std::vector<std::string>{"in", "a", "b", "c"});
      histories.push_back(history_sources(app, config));
      auto again = run_in(form, app, async_item("more"), config);  // continues the thread
      CHECK(again.state.items.size() == 8);
    }
    CHECK(histories[0] == histories[1]);
  }
}

TEST_CASE("both forms: retries of a failing coroutine node, then its error") {
  for (Form form : {Form::sync, Form::async}) {
    CAPTURE(static_cast<int>(form));
    std::atomic<int> calls{0};
    sg::StateGraph<AsyncLog> g;
    sg::NodeOptions retry;
    retry.retry = sg::RetryPolicy{3,     std::chrono::duration<double>(0.001),
                                  2.0,   std::chrono::duration<double>(0.01),
                                  false, {}};
    g.add_node(
        "flaky",
        [&](const AsyncLog&) -> asio::awaitable<sg::Update<AsyncLog>> {
          co_await sleep_for(1ms);
          if (++calls < 3) throw std::runtime_error("try again");
          co_return async_item("ok");
        },
        retry);
    g.add_node("broken",
               [](const AsyncLog&) -> asio::awaitable<sg::Update<AsyncLog>> {
                 co_await sleep_for(1ms);
                 throw std::runtime_error("always");
               },
               {});
    g.add_edge(sg::START, "flaky").add_edge("flaky", "broken");
    const auto app = g.compile();
    try {
      run_in(form, app, async_item("in"), {});
      FAIL("expected a NodeError");
    } catch (const sg::NodeError& e) {
      CHECK(std::string(e.what()).find("node 'broken' failed at step 2: always") !=
            std::string::npos);
    }
    CHECK(calls.load() == 3);
  }
}

TEST_CASE("both forms: a coroutine node past its timeout is a NodeTimeoutError") {
  for (Form form : {Form::sync, Form::async}) {
    CAPTURE(static_cast<int>(form));
    sg::StateGraph<AsyncLog> g;
    sg::NodeOptions timeout;
    timeout.timeout = 20ms;
    g.add_node("slow", waiting("slow", 2000ms), timeout);
    g.add_edge(sg::START, "slow");
    const auto app = g.compile();
    const auto t0 = std::chrono::steady_clock::now();
    auto returned = t0;
    CHECK_THROWS_AS(run_in(form, app, async_item("in"), {}, &returned), sg::NodeTimeoutError);
    CHECK(returned - t0 < 1500ms);  // not the node's 2 s
  }
}

TEST_CASE("both forms: cancellation stops the run at the next step") {
  for (Form form : {Form::sync, Form::async}) {
    CAPTURE(static_cast<int>(form));
    auto token = sg::CancellationToken::create();
    sg::StateGraph<AsyncLog> g;
    g.add_node("first", [token](const AsyncLog&) -> asio::awaitable<sg::Update<AsyncLog>> {
      co_await sleep_for(1ms);
      token.cancel();
      co_return async_item("first");
    });
    g.add_node("second", waiting("second", 1ms));
    g.add_edge(sg::START, "first").add_edge("first", "second");
    const auto app = g.compile();
    sg::RunConfig config;
    config.cancellation = token;
    CHECK_THROWS_AS(run_in(form, app, async_item("in"), config), sg::CancelledError);
  }
}

TEST_CASE("both forms: Sends to a coroutine node, a plain subgraph, a stream") {
  struct Job {
    std::string name{};
  };
  sg::StateGraph<AsyncLog> sub;
  sub.add_node("inner", [](const AsyncLog&) { return async_item("inner"); });
  sub.add_edge(sg::START, "inner");
  const auto child = sub.compile();
  std::vector<std::vector<std::string>> seen;
  for (Form form : {Form::sync, Form::async}) {
    sg::StateGraph<AsyncLog> g;
    g.add_node("fan", [](const AsyncLog&) { return sg::Update<AsyncLog>(); });
    g.add_node("work", [](const Job& job) -> asio::awaitable<sg::Update<AsyncLog>> {
      const auto wait = std::chrono::milliseconds(job.name == "x" ? 5 : 1);
      co_await sleep_for(wait);
      co_return async_item("work " + job.name);
    });
    g.add_node("child", child);
    g.add_edge(sg::START, "fan");
    g.add_conditional_edges("fan", [](const AsyncLog&) {
      return std::vector<sg::Send>{sg::Send("work", Job{"x"}), sg::Send("work", Job{"y"})};
    });
    g.add_edge("work", "child");
    const auto app = g.compile();
    std::vector<std::string> events;
    auto on_event = [&](const sg::StreamEvent<AsyncLog>& e) {
      events.push_back(std::string(sg::to_string(e.mode)) + ":" + e.node + ":" +
                       (e.values ? std::to_string(e.values->items.size()) : "-"));
    };
    const sg::StreamModes modes = sg::StreamMode::values | sg::StreamMode::updates;
    sg::RunResult<AsyncLog> r;
    if (form == Form::sync) {
      r = app.stream(async_item("in"), {}, modes, on_event);
    } else {
      asio::io_context io;
      asio::co_spawn(
          io,
          [&]() -> asio::awaitable<void> {
            sg::RunConfig config;
            auto input = async_item("in");
            r = co_await app.astream(std::move(input), config, modes, on_event);
          },
          asio::detached);
      io.run();
    }
    CHECK(r.state.items ==
          std::vector<std::string>{"in", "work x", "work y", "in", "work x", "work y", "inner"});
    seen.push_back(events);
  }
  CHECK(seen[0] == seen[1]);
}

TEST_CASE("both forms: a coroutine node returning a Command with a goto routes") {
  for (Form form : {Form::sync, Form::async}) {
    CAPTURE(static_cast<int>(form));
    sg::StateGraph<AsyncLog> g;
    g.add_node("route", [](const AsyncLog&) -> asio::awaitable<sg::Command<AsyncLog>> {
      co_await sleep_for(1ms);
      co_return sg::Command<AsyncLog>{async_item("route"), {"end"}, {}, {}};
    });
    g.add_node("end", waiting("end", 1ms));
    g.add_edge(sg::START, "route");
    const auto app = g.compile();
    auto r = run_in(form, app, async_item("in"), {});
    CHECK(r.state.items == std::vector<std::string>{"in", "route", "end"});
  }
}

TEST_CASE("CancellationToken::on_cancel calls back once, at cancel or at once, never after reset") {
  auto token = sg::CancellationToken::create();
  int first = 0;
  int second = 0;
  auto a = token.on_cancel([&] { ++first; });
  {
    auto b = token.on_cancel([&] { ++second; });
  }  // unregistered
  token.cancel();
  token.cancel();
  CHECK(first == 1);
  CHECK(second == 0);
  int late = 0;
  auto c = token.on_cancel([&] { ++late; });  // already cancelled: right away
  CHECK(late == 1);
  int never = 0;
  auto d = sg::CancellationToken{}.on_cancel([&] { ++never; });
  CHECK(never == 0);

  SUBCASE("a subscription reset while its callback runs on another thread waits for it") {
    auto t2 = sg::CancellationToken::create();
    std::atomic<bool> entered{false};
    std::atomic<bool> finished{false};
    auto sub = t2.on_cancel([&] {
      entered = true;
      std::this_thread::sleep_for(50ms);
      finished = true;
    });
    std::thread canceller([&] { t2.cancel(); });
    while (!entered) std::this_thread::yield();
    sub.reset();
    CHECK(finished.load());
    canceller.join();
  }
}

namespace {

struct ChatLog {
  std::vector<sg::Message> messages{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"messages">(&ChatLog::messages, sg::concat)};
  }
};

}  // namespace

TEST_CASE("both forms: sg::current_context() finds the coroutine node across co_await") {
  for (Form form : {Form::sync, Form::async}) {
    CAPTURE(static_cast<int>(form));
    std::atomic<int> right{0};
    sg::StateGraph<AsyncLog> g;
    auto node = [&right](std::string name, std::chrono::milliseconds d) {
      return [&right, name, d](const AsyncLog&,
                               sg::Context& ctx) -> asio::awaitable<sg::Update<AsyncLog>> {
        for (int i = 0; i < 3; ++i) {
          co_await sleep_for(d);
          // The parallel branch ran in between on the same strand.
          if (sg::current_context() == &ctx && sg::current_context()->node() == name) ++right;
        }
        co_return async_item(name);
      };
    };
    g.add_node("x", node("x", 2ms));
    g.add_node("y", node("y", 3ms));
    g.add_edge(sg::START, "x").add_edge(sg::START, "y");
    const auto app = g.compile();
    auto r = run_in(form, app, async_item("in"), {});
    CHECK(r.state.items == std::vector<std::string>{"in", "x", "y"});
    CHECK(right == 6);
  }
}

TEST_CASE("both forms: messages mode carries streamed chunks and the messages nodes return") {
  for (Form form : {Form::sync, Form::async}) {
    CAPTURE(static_cast<int>(form));
    sg::StateGraph<ChatLog> g;
    g.add_node("model", [](const ChatLog&) -> asio::awaitable<sg::Update<ChatLog>> {
      co_await sleep_for(1ms);
      sg::Context* ctx = sg::current_context();
      const nlohmann::json meta = ctx->messages_metadata({{"ls_model_name", "m"}});
      for (const char* piece : {"hel", "lo"}) {
        sg::MessageChunk chunk{sg::ai(piece, "reply-1"), {}};
        ctx->write_message_chunk(chunk, meta);
      }
      ctx->write_message_done(sg::ai("hello", "reply-1"), meta);  // streamed: not again
      co_return sg::set<&ChatLog::messages>(std::vector<sg::Message>{sg::ai("hello", "reply-1")});
    });
    g.add_node("tool", [](const ChatLog&) {
      return sg::set<&ChatLog::messages>(std::vector<sg::Message>{sg::tool("42", "c1", "t-1")});
    });
    g.add_edge(sg::START, "tool").add_edge("tool", "model");  // chunks in the last step too
    const auto app = g.compile();
    std::vector<std::string> events;
    auto on_event = [&](const sg::StreamEvent<ChatLog>& e) {
      REQUIRE(e.mode == sg::StreamMode::messages);
      REQUIRE(e.message);
      events.push_back(e.node + ":" + (e.complete ? "whole:" : "chunk:") +
                       e.message->message.text() + ":" + e.data.value("langgraph_node", "?") + ":" +
                       std::to_string(e.data.value("langgraph_step", -1)) + ":" +
                       e.data.value("ls_model_name", "-"));
    };
    sg::RunConfig config;
    config.thread_id = "t";
    sg::Update<ChatLog> input =
        sg::set<&ChatLog::messages>(std::vector<sg::Message>{sg::human("hi", "h-1")});
    if (form == Form::sync) {
      app.stream(std::move(input), config, sg::StreamMode::messages, on_event);
    } else {
      asio::io_context io;
      asio::co_spawn(
          io,
          [&]() -> asio::awaitable<void> {
            co_await app.astream(std::move(input), config, sg::StreamMode::messages, on_event);
          },
          asio::detached);
      io.run();
    }
    CAPTURE(nlohmann::json(events).dump());
    // The input is not a node's output; the model's reply streamed once; the tool's message whole.
    CHECK(events == std::vector<std::string>{"tool:whole:42:tool:1:-", "model:chunk:hel:model:2:m",
                                             "model:chunk:lo:model:2:m"});
  }
}

TEST_CASE("messages mode: a message a node returns without an id streams with the id it keeps") {
  // LangGraph names such a message as it streams it (StreamMessagesHandler): the messages event,
  // the updates event and the thread's state show one id. Without messages mode, add_messages
  // names it in the state and the updates show none.
  sg::StateGraph<sg::MessagesState> g;
  g.add_node("reply", [](const sg::MessagesState& s) {
    return sg::set<&sg::MessagesState::messages>(sg::ai("re: " + s.messages.back().text()));
  });
  g.add_edge(sg::START, "reply").add_edge("reply", sg::END);
  const auto app = g.compile({.checkpointer = std::make_shared<sg::InMemorySaver>()});
  for (const bool with_messages : {true, false}) {
    CAPTURE(with_messages);
    sg::RunConfig config;
    config.thread_id = with_messages ? "named" : "plain";
    std::string streamed;
    nlohmann::json updated;
    sg::StreamModes modes = sg::StreamMode::updates;
    if (with_messages) modes = modes | sg::StreamMode::messages;
    app.stream(sg::set<&sg::MessagesState::messages>(sg::human("hi", "h-1")), config, modes,
               [&](const sg::StreamEvent<sg::MessagesState>& e) {
                 if (e.mode == sg::StreamMode::messages) streamed = e.message->message.id;
                 if (e.mode == sg::StreamMode::updates) {
                   const auto& slot = e.update->slot<0>();  // messages
                   REQUIRE(slot.has_value());
                   const std::string& id = std::get<0>(*slot).items().at(0).id;
                   updated = id.empty() ? nlohmann::json() : nlohmann::json(id);
                 }
               });
    const std::string kept = app.get_state(config)->values.messages.back().id;
    CHECK_FALSE(kept.empty());
    if (with_messages) {
      CHECK(streamed == kept);
      CHECK(updated == kept);
    } else {
      CHECK(streamed.empty());
      CHECK(updated.is_null());
    }
  }
}

TEST_CASE("ainvoke with a plain_node_pool: a blocking plain node holds none of the executor") {
  // One io_context thread, two runs. Run "a" has a plain node that blocks until run "b"'s
  // coroutine node has run: on the io thread it would wait forever (b could not start), on the
  // pool b runs meanwhile. The blocking node gives up after 20 s, so a failure cannot hang.
  std::mutex mu;
  std::condition_variable cv;
  bool b_ran = false;
  std::thread::id plain_thread;
  std::thread::id coroutine_thread;
  sg::StateGraph<AsyncLog> a;
  a.add_node("block", [&](const AsyncLog&) {
    std::unique_lock lock(mu);
    plain_thread = std::this_thread::get_id();
    const bool seen = cv.wait_for(lock, 20s, [&] { return b_ran; });
    return async_item(seen ? "b ran meanwhile" : "gave up");
  });
  a.add_edge(sg::START, "block");
  sg::StateGraph<AsyncLog> b;
  b.add_node("co", [&](const AsyncLog&) -> asio::awaitable<sg::Update<AsyncLog>> {
    co_await sleep_for(1ms);
    {
      std::lock_guard lock(mu);
      b_ran = true;
      coroutine_thread = std::this_thread::get_id();
    }
    cv.notify_all();
    co_return async_item("co");
  });
  b.add_edge(sg::START, "co");
  const auto app_a = a.compile();
  const auto app_b = b.compile();
  sg::RunConfig config;
  config.plain_node_pool = std::make_shared<sg::ThreadPool>(2);
  asio::io_context io;
  std::vector<std::string> a_items;
  std::vector<std::string> b_items;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto input = async_item("a");
        auto r = co_await app_a.ainvoke(std::move(input), config);
        a_items = r.state.items;
      },
      asio::detached);
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto input = async_item("b");
        auto r = co_await app_b.ainvoke(std::move(input), config);
        b_items = r.state.items;
      },
      asio::detached);
  io.run();
  CHECK(a_items == std::vector<std::string>{"a", "b ran meanwhile"});
  CHECK(b_items == std::vector<std::string>{"b", "co"});
  CHECK(plain_thread != std::this_thread::get_id());
  CHECK(coroutine_thread == std::this_thread::get_id());
}

TEST_CASE("both forms, with a plain_node_pool: plain and coroutine nodes mixed, the same run") {
  // A plain fan-out (one node writing to the stream) and a coroutine join, on a checkpointer:
  // the pool changes where the plain nodes run, nothing else.
  auto build = [] {
    sg::StateGraph<AsyncLog> g;
    g.add_node("p1", [](const AsyncLog&) { return async_item("p1"); })
        .add_node("p2",
                  [](const AsyncLog&, sg::Context& ctx) {
                    ctx.write({{"from", "p2"}});
                    return async_item("p2");
                  })
        .add_node("join",
                  [](const AsyncLog& s) -> asio::awaitable<sg::Update<AsyncLog>> {
                    co_await sleep_for(1ms);
                    co_return sg::Update<AsyncLog>{}
                        .set<&AsyncLog::items>(std::string("join"))
                        .set<&AsyncLog::count>(static_cast<int>(s.items.size()));
                  })
        .add_node("last", [](const AsyncLog&) { return async_item("last"); });
    g.add_edge(sg::START, "p1").add_edge(sg::START, "p2");
    g.add_edge("p1", "join").add_edge("p2", "join").add_edge("join", "last");
    sg::CompileOptions options;
    options.checkpointer = std::make_shared<sg::InMemorySaver>();
    return g.compile(options);
  };
  const auto plain = build();
  const auto pooled = build();
  sg::RunConfig config;
  config.thread_id = "t";
  const auto expected = run_in(Form::async, plain, async_item("in"), config);
  config.plain_node_pool = std::make_shared<sg::ThreadPool>(2);
  const auto got = run_in(Form::async, pooled, async_item("in"), config);
  const auto sync = run_in(Form::sync, build(), async_item("in"), config);  // ignores the pool
  CHECK(expected.state.items == std::vector<std::string>{"in", "p1", "p2", "join", "last"});
  CHECK(expected.state.count == 3);
  CHECK(got.state.items == expected.state.items);
  CHECK(got.state.count == expected.state.count);
  CHECK(sync.state.items == expected.state.items);
  const auto history = [&](const sg::CompiledGraph<AsyncLog>& app) {
    std::vector<std::string> out;
    sg::RunConfig at;
    at.thread_id = "t";
    for (const auto& s : app.get_state_history(at)) {
      out.push_back(std::to_string(s.values.items.size()) + ":" +
                    (s.next.empty() ? std::string() : s.next.front()));
    }
    return out;
  };
  CHECK(history(pooled) == history(plain));
}

namespace {

enum class StreamForm { callback, iterable, astream };

/// The lines "mode:node[:data]" of a run's events in `modes`, streamed with stream() and a
/// callback, stream() as an iterable, or astream() (on a fresh io_context).
template <class S>
std::vector<std::string> stream_lines(StreamForm form, const sg::CompiledGraph<S>& app,
                                      sg::Update<S> input, sg::StreamModes modes) {
  std::vector<std::string> lines;
  auto on_event = [&](const sg::StreamEvent<S>& e) {
    std::string line = std::string(sg::to_string(e.mode)) + ":" + e.node;
    if (e.mode == sg::StreamMode::custom) line += ":" + e.data.dump();
    if (e.mode == sg::StreamMode::messages) {
      line += std::string(e.complete ? ":whole:" : ":chunk:") + e.message->message.text();
    }
    lines.push_back(std::move(line));
  };
  switch (form) {
    case StreamForm::callback:
      (void)app.stream(std::move(input), {}, modes, on_event);
      break;
    case StreamForm::iterable:
      for (const auto& e : app.stream(std::move(input), {}, modes)) on_event(e);
      break;
    case StreamForm::astream: {
      asio::io_context io;
      asio::co_spawn(
          io,
          [&]() -> asio::awaitable<void> {
            sg::RunConfig config;
            co_await app.astream(std::move(input), config, modes, on_event);
          },
          [](std::exception_ptr error) {
            if (error) std::rethrow_exception(error);
          });
      io.run();
      break;
    }
  }
  return lines;
}

constexpr StreamForm kStreamForms[] = {StreamForm::callback, StreamForm::iterable,
                                       StreamForm::astream};

/// Calls ctx.write(value) on a thread of its own and joins it (as a tool's I/O thread would
/// report progress while the node waits).
void write_from_thread(const sg::Context& ctx, int n) {
  std::thread([&ctx, n] { ctx.write({{"n", n}}); }).join();
}

/// The node's own writes and its threads' writes, interleaved: 1 (node), 2 and 3 (a thread),
/// 4 (node), 5 (a thread, just before the node returns).
void interleaved_writes(const sg::Context& ctx) {
  ctx.write({{"n", 1}});
  std::thread([&ctx] {
    ctx.write({{"n", 2}});
    ctx.write({{"n", 3}});
  }).join();
  ctx.write({{"n", 4}});
  write_from_thread(ctx, 5);
}

std::vector<std::string> custom_lines(const std::string& node, std::initializer_list<int> ns) {
  std::vector<std::string> out;
  for (int n : ns) out.push_back("custom:" + node + ":{\"n\":" + std::to_string(n) + "}");
  return out;
}

/// START -> work -> next, `work` made by `add`.
template <class Add>
sg::CompiledGraph<AsyncLog> writer_graph(Add add) {
  sg::StateGraph<AsyncLog> g;
  add(g);
  g.add_node("next", [](const AsyncLog&) { return async_item("next"); });
  g.add_edge(sg::START, "work").add_edge("work", "next");
  return g.compile();
}

}  // namespace

TEST_CASE("all stream forms: a plain node's write from a thread it joins reaches custom") {
  const auto app = writer_graph([](sg::StateGraph<AsyncLog>& g) {
    g.add_node("work", [](const AsyncLog&, sg::Context& ctx) {
      write_from_thread(ctx, 1);
      return async_item("work");
    });
  });
  std::vector<std::string> expected = custom_lines("work", {1});
  expected.insert(expected.end(), {"updates:work", "updates:next"});
  for (StreamForm form : kStreamForms) {
    CAPTURE(static_cast<int>(form));
    const auto lines =
        stream_lines(form, app, async_item("in"), sg::StreamMode::custom | sg::StreamMode::updates);
    CAPTURE(nlohmann::json(lines).dump());
    CHECK(lines == expected);
  }
  // Without custom mode the write is dropped, and the run is the same.
  CHECK(stream_lines(StreamForm::callback, app, async_item("in"), sg::StreamMode::updates) ==
        std::vector<std::string>{"updates:work", "updates:next"});
  CHECK(run_in(Form::sync, app, async_item("in"), {}).state.items ==
        std::vector<std::string>{"in", "work", "next"});
}

TEST_CASE("all stream forms: a coroutine node's write from a thread it joins reaches custom") {
  const auto app = writer_graph([](sg::StateGraph<AsyncLog>& g) {
    g.add_node("work",
               [](const AsyncLog&, sg::Context& ctx) -> asio::awaitable<sg::Update<AsyncLog>> {
                 co_await sleep_for(1ms);
                 write_from_thread(ctx, 1);
                 co_await sleep_for(1ms);
                 write_from_thread(ctx, 2);
                 co_return async_item("work");
               });
  });
  std::vector<std::string> expected = custom_lines("work", {1, 2});
  expected.insert(expected.end(), {"updates:work", "updates:next"});
  for (StreamForm form : kStreamForms) {
    CAPTURE(static_cast<int>(form));
    const auto lines =
        stream_lines(form, app, async_item("in"), sg::StreamMode::custom | sg::StreamMode::updates);
    CAPTURE(nlohmann::json(lines).dump());
    CHECK(lines == expected);
  }
}

TEST_CASE("all stream forms: a node's own writes and its threads' writes keep their order") {
  const auto plain = writer_graph([](sg::StateGraph<AsyncLog>& g) {
    g.add_node("work", [](const AsyncLog&, sg::Context& ctx) {
      interleaved_writes(ctx);
      return async_item("work");
    });
  });
  const auto coroutine = writer_graph([](sg::StateGraph<AsyncLog>& g) {
    g.add_node("work",
               [](const AsyncLog&, sg::Context& ctx) -> asio::awaitable<sg::Update<AsyncLog>> {
                 co_await sleep_for(1ms);
                 interleaved_writes(ctx);
                 co_return async_item("work");
               });
  });
  std::vector<std::string> expected = custom_lines("work", {1, 2, 3, 4, 5});
  expected.insert(expected.end(), {"updates:work", "updates:next"});
  for (const auto* app : {&plain, &coroutine}) {
    for (StreamForm form : kStreamForms) {
      CAPTURE(app == &plain);
      CAPTURE(static_cast<int>(form));
      const auto lines = stream_lines(form, *app, async_item("in"),
                                      sg::StreamMode::custom | sg::StreamMode::updates);
      CAPTURE(nlohmann::json(lines).dump());
      CHECK(lines == expected);
    }
  }
}

TEST_CASE("all stream forms: threaded writes beside a sibling task keep their order") {
  // Two tasks in the step: the writer runs on the pool or on the calling thread, a plain
  // sibling beside it, and a timed sibling that always runs on a thread of its own (so the
  // calling thread of stream() may run the writer itself).
  for (const bool timed : {false, true}) {
    sg::StateGraph<AsyncLog> g;
    g.add_node("work", [](const AsyncLog&, sg::Context& ctx) {
      interleaved_writes(ctx);
      return async_item("work");
    });
    sg::NodeOptions options;
    if (timed) options.timeout = 10s;
    g.add_node(
        "sibling", [](const AsyncLog&) { return async_item("sibling"); }, options);
    g.add_edge(sg::START, "work").add_edge(sg::START, "sibling");
    const auto app = g.compile();
    std::vector<std::string> expected = custom_lines("work", {1, 2, 3, 4, 5});
    expected.emplace_back("updates:work");
    for (StreamForm form : kStreamForms) {
      CAPTURE(timed);
      CAPTURE(static_cast<int>(form));
      auto lines = stream_lines(form, app, async_item("in"),
                                sg::StreamMode::custom | sg::StreamMode::updates);
      CAPTURE(nlohmann::json(lines).dump());
      CHECK(std::count(lines.begin(), lines.end(), "updates:sibling") == 1);
      std::erase(lines, "updates:sibling");  // finishes at any time
      CHECK(lines == expected);
    }
  }
}

TEST_CASE("all stream forms: message chunks written from a thread reach messages") {
  sg::StateGraph<ChatLog> g;
  g.add_node("model", [](const ChatLog&, sg::Context& ctx) {
    std::thread([&ctx] {
      const nlohmann::json meta = ctx.messages_metadata({});
      for (const char* piece : {"hel", "lo"}) {
        ctx.write_message_chunk(sg::MessageChunk{sg::ai(piece, "reply-1"), {}}, meta);
      }
    }).join();
    return sg::set<&ChatLog::messages>(std::vector<sg::Message>{sg::ai("hello", "reply-1")});
  });
  g.add_edge(sg::START, "model");
  const auto app = g.compile();
  for (StreamForm form : kStreamForms) {
    CAPTURE(static_cast<int>(form));
    // Streamed as chunks, so not again whole when the node returns it.
    const auto lines = stream_lines(form, app, sg::Update<ChatLog>{}, sg::StreamMode::messages);
    CAPTURE(nlohmann::json(lines).dump());
    CHECK(lines == std::vector<std::string>{"messages:model:chunk:hel", "messages:model:chunk:lo"});
  }
}
