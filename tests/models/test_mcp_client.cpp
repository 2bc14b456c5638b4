// SPDX-License-Identifier: MIT
// The MCP client over stdio against real servers: @modelcontextprotocol/server-everything and
// server-filesystem from npm, and tests/mcp/bad-server.mjs, written to misbehave (dies, sends
// malformed JSON-RPC, hangs, speaks another protocol version). Results are compared with what
// LangChain's @langchain/mcp-adapters makes of the same calls.
#include <stategraph/core/async.hpp>
#include <stategraph/core/log.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/mcp.hpp>
#include <stategraph/models/react_agent.hpp>
#include <stategraph/models/tool_node.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/execution.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/require.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <doctest/doctest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include "support/mcp_peers.hpp"
#include "support/temp_dir.hpp"

namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

const sg::Tool& tool_named(const std::vector<sg::Tool>& tools, const std::string& name) {
  for (const auto& t : tools)
    if (t.name() == name) return t;
  throw std::runtime_error("no tool " + name);
}

std::vector<std::string> tool_names(const std::vector<sg::Tool>& tools) {
  std::vector<std::string> out;
  for (const auto& t : tools) out.push_back(t.name());
  return out;
}

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

/// A tool called as ToolNode calls it, outside a graph: the tool message.
sg::Message call_tool(const sg::Tool& tool, json args) {
  sg::ToolRuntime runtime;
  sg::ToolResult result = tool.call(args, runtime);
  REQUIRE(result.message.has_value());
  return *result.message;
}

/// The error a call throws: its code and text.
std::pair<std::string, std::string> call_error(const std::function<void()>& call) {
  try {
    call();
  } catch (const sg::Error& e) {
    return {e.code(), e.what()};
  } catch (const std::exception& e) {
    return {"std::exception", e.what()};
  }
  return {"none", ""};
}

sg::McpClient one_server(const std::string& name, sg::McpServerConfig config,
                         sg::McpClientOptions options = {}) {
  return sg::McpClient({{name, std::move(config)}}, std::move(options));
}

/// A message as LangChain's JSON, the fields the adapters set.
json langchain_view(const sg::Message& m) {
  json content = sg::message_to_json(m)["content"];
  json artifact = m.additional_kwargs.is_object() && m.additional_kwargs.contains("artifact")
                      ? m.additional_kwargs["artifact"]
                      : json::array();
  return {{"content", content}, {"artifact", artifact}, {"status", m.status}};
}

/// Where the copies of a caller's executor (ProbedExecutor) were destroyed.
struct ExecutorProbe {
  std::thread::id owner = std::this_thread::get_id();
  std::atomic<int> foreign{0};  // copies destroyed on another thread than `owner`
};

/// An executor (of an io_context, or of a strand of one) that counts in its probe the copies of
/// it destroyed on another thread than the probe's owner. Like the executor of a graph run's
/// node, it can own part of the caller's io_context (a strand): a copy destroyed on another
/// thread after that io_context was destroyed touches freed memory. `tracks_work` false: it
/// cannot count outstanding work (as a node's executor cannot), and prefer() leaves it as it is.
class ProbedExecutor {
 public:
  ProbedExecutor(boost::asio::any_io_executor inner, std::shared_ptr<ExecutorProbe> probe,
                 bool tracks_work)
      : inner_(std::move(inner)), probe_(std::move(probe)), tracks_work_(tracks_work) {}
  ProbedExecutor(const ProbedExecutor&) = default;
  ProbedExecutor(ProbedExecutor&&) noexcept = default;
  ProbedExecutor& operator=(const ProbedExecutor&) = default;
  ProbedExecutor& operator=(ProbedExecutor&&) noexcept = default;
  ~ProbedExecutor() {
    if (probe_ && std::this_thread::get_id() != probe_->owner) ++probe_->foreign;
  }

  [[nodiscard]] boost::asio::execution_context& query(
      boost::asio::execution::context_t) const noexcept {
    return boost::asio::query(inner_, boost::asio::execution::context);
  }
  [[nodiscard]] ProbedExecutor require(boost::asio::execution::blocking_t::never_t) const {
    return {boost::asio::require(inner_, boost::asio::execution::blocking.never), probe_,
            tracks_work_};
  }
  [[nodiscard]] ProbedExecutor require(
      boost::asio::execution::outstanding_work_t::tracked_t) const {
    if (!tracks_work_) return *this;
    return {boost::asio::prefer(inner_, boost::asio::execution::outstanding_work.tracked), probe_,
            true};
  }
  [[nodiscard]] ProbedExecutor require(
      boost::asio::execution::outstanding_work_t::untracked_t) const {
    return {boost::asio::prefer(inner_, boost::asio::execution::outstanding_work.untracked), probe_,
            tracks_work_};
  }
  template <class F>
  void execute(F f) const {
    inner_.execute(std::move(f));
  }
  friend bool operator==(const ProbedExecutor& a, const ProbedExecutor& b) noexcept {
    return a.inner_ == b.inner_ && a.probe_ == b.probe_;
  }
  friend bool operator!=(const ProbedExecutor& a, const ProbedExecutor& b) noexcept {
    return !(a == b);
  }

 private:
  boost::asio::any_io_executor inner_;
  std::shared_ptr<ExecutorProbe> probe_;
  bool tracks_work_ = true;
};

}  // namespace

TEST_CASE("mcp stdio: server-everything's tools become sg::Tools that call it") {
  sg::McpClient client = one_server("everything", sg::test::everything_stdio());
  const std::vector<sg::Tool> tools = client.get_tools();
  const auto names = tool_names(tools);
  for (const char* expected :
       {"echo", "get-sum", "get-tiny-image", "get-structured-content",
        "trigger-long-running-operation", "get-resource-links", "get-resource-reference"}) {
    CHECK_MESSAGE(has(names, expected), expected);
  }
  const sg::Tool& sum = tool_named(tools, "get-sum");
  CHECK(sum.is_async());
  CHECK(sum.spec().parameters["type"] == "object");
  CHECK(sum.spec().parameters["properties"].contains("a"));
  CHECK(!sum.spec().parameters.contains("$schema"));
  CHECK(call_tool(sum, {{"a", 2}, {"b", 40}}).text() == "The sum of 2 and 40 is 42.");
  CHECK(call_tool(tool_named(tools, "echo"), {{"message", "hi"}}).text() == "Echo: hi");

  const sg::McpServerInfo info = client.server_info("everything");
  CHECK(info.protocol_version == "2025-11-25");
  CHECK(info.server_info["name"] == "mcp-servers/everything");
  CHECK(info.capabilities.contains("tools"));
  client.ping("everything");
}

TEST_CASE("mcp results map to ToolMessages as @langchain/mcp-adapters maps them") {
  const json calls = json::array({
      json::array({"echo", {{"message", "hi"}}}),
      json::array({"get-tiny-image", json::object()}),
      json::array({"get-structured-content", {{"location", "New York"}}}),
      json::array({"get-resource-links", {{"count", 2}}}),
      json::array({"get-resource-reference", {{"resourceType", "Text"}, {"resourceId", 3}}}),
      json::array({"get-resource-reference", {{"resourceType", "Blob"}, {"resourceId", 2}}}),
      json::array({"get-annotated-message", {{"messageType", "success"}, {"includeImage", true}}}),
  });
  for (const bool standard : {false, true}) {
    CAPTURE(standard);
    std::vector<std::string> args{sg::test::mcp_dir() + "/adapters-results.mjs",
                                  sg::test::everything_js(), calls.dump()};
    if (standard) args.emplace_back("standard");
    const sg::test::ProcessResult adapters = sg::test::run_process(sg::test::mcp_node(), args);
    REQUIRE_MESSAGE(adapters.exit_code == 0, adapters.err);
    const json expected = json::parse(adapters.out);
    REQUIRE(expected.size() == calls.size());

    sg::McpClientOptions options;
    options.use_standard_content_blocks = standard;
    sg::McpClient client = one_server("everything", sg::test::everything_stdio(), options);
    const std::vector<sg::Tool> tools = client.get_tools();
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const std::string name = calls[i][0];
      CAPTURE(name);
      json ours = langchain_view(call_tool(tool_named(tools, name), calls[i][1]));
      json theirs = expected[i];
      theirs.erase("name");
      // A lone text block beside structured content is the block's JSON text: equal as JSON
      // (stategraph's JSON objects sort their keys).
      if (ours["content"].is_string() && theirs["content"].is_string() &&
          ours["content"].get<std::string>().starts_with("{")) {
        ours["content"] = json::parse(ours["content"].get<std::string>());
        theirs["content"] = json::parse(theirs["content"].get<std::string>());
      }
      // Resources generated on the fly carry the time they were made: compared without it.
      for (json* side : {&ours, &theirs}) {
        for (auto& a : (*side)["artifact"]) {
          for (auto* field : {&a, a.contains("resource") ? &a["resource"] : nullptr}) {
            if (field == nullptr) continue;
            for (const char* key : {"text", "blob", "data"}) {
              if (name == "get-resource-reference" && field->contains(key)) {
                CHECK(!(*field)[key].get<std::string>().empty());
                (*field)[key] = "(made at the time)";
              }
            }
          }
        }
      }
      CHECK(ours == theirs);
    }
  }
}

TEST_CASE("mcp structured content reaches the artifact, isError becomes a tool error") {
  sg::McpClient client = one_server("everything", sg::test::everything_stdio());
  const std::vector<sg::Tool> tools = client.get_tools();
  const sg::Message weather =
      call_tool(tool_named(tools, "get-structured-content"), {{"location", "Chicago"}});
  CHECK(weather.status == "success");
  const json& artifact = weather.additional_kwargs["artifact"];
  REQUIRE(artifact.size() == 1);
  CHECK(artifact[0]["type"] == "mcp_structured_content");
  CHECK(artifact[0]["data"] ==
        json{{"temperature", 36}, {"conditions", "Light rain / drizzle"}, {"humidity", 82}});

  // Arguments the server rejects: the SDK answers isError, the tool throws McpError, and
  // ToolNode turns it into an error message.
  const sg::Tool& sum = tool_named(tools, "get-sum");
  const auto [code, text] = call_error([&] { (void)call_tool(sum, {{"a", "two"}, {"b", 3}}); });
  CHECK(code == sg::errc::kMcpToolError);
  CHECK(text.find("MCP tool 'get-sum' on server 'everything' returned an error:") == 0);

  sg::MessagesState state;
  state.messages = {sg::ai("", {sg::ToolCall{"c1", "get-sum", {{"a", "two"}, {"b", 3}}}})};
  const auto commands = sg::detail::run_tool_calls({sum}, state.messages.back().tool_calls,
                                                   std::any(&state), nullptr, {});
  REQUIRE(commands.size() == 1);
  REQUIRE(commands[0].message.has_value());
  CHECK(commands[0].message->status == "error");
  CHECK(commands[0].message->text().find("returned an error") != std::string::npos);

  // The raw result stays available.
  const json raw = client.call_tool("everything", "get-sum", {{"a", "two"}, {"b", 3}});
  CHECK(raw["isError"] == true);
}

TEST_CASE("mcp progress notifications of a long operation reach the callback") {
  std::mutex mu;
  std::vector<sg::McpProgress> seen;
  sg::McpClientOptions options;
  options.on_progress = [&](const sg::McpProgress& p) {
    std::lock_guard lock(mu);
    seen.push_back(p);
  };
  sg::McpClient client = one_server("everything", sg::test::everything_stdio(), options);
  const std::vector<sg::Tool> tools = client.get_tools();
  const json args = {{"duration", 0.4}, {"steps", 4}};
  const sg::Message done = call_tool(tool_named(tools, "trigger-long-running-operation"), args);
  CHECK(done.text().find("Long running operation completed") == 0);
  std::lock_guard lock(mu);
  REQUIRE(seen.size() == 4);
  for (std::size_t i = 0; i < seen.size(); ++i) {
    CHECK(seen[i].server == "everything");
    CHECK(seen[i].tool == "trigger-long-running-operation");
    CHECK(seen[i].args == args);
    CHECK(seen[i].progress == static_cast<double>(i + 1));
    CHECK(seen[i].total == 4.0);
  }
}

TEST_CASE("mcp progress reaches the run's custom stream with stream_progress (astream)") {
  sg::McpClientOptions options;
  options.stream_progress = true;
  std::atomic<int> called{0};
  options.on_progress = [&](const sg::McpProgress&) { ++called; };
  sg::McpClient client = one_server("bad", sg::test::bad_server("good"), options);
  const std::vector<sg::Tool> tools = client.get_tools();
  auto model = std::make_shared<sg::LocalModel>();
  model->script({sg::ai("", {sg::ToolCall{"c1", "slow", {{"ms", 450}}}}), sg::ai("done")});
  auto agent = sg::create_react_agent(model, tools);
  sg::Update<sg::AgentState> input;
  input.set<&sg::AgentState::messages>(std::vector<sg::Message>{sg::human("go")});
  std::vector<json> custom;
  std::vector<sg::Message> messages;
  auto on_event = [&](const sg::StreamEvent<sg::AgentState>& e) {
    if (e.mode == sg::StreamMode::custom) custom.push_back(e.data);
    if (e.mode == sg::StreamMode::values) messages = e.values->messages;
  };
  boost::asio::io_context io;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        sg::RunConfig config;
        co_await agent.astream(input, config, sg::StreamMode::custom | sg::StreamMode::values,
                               on_event);
      },
      boost::asio::detached);
  io.run();
  REQUIRE(messages.size() == 4);
  CHECK(messages[2].text() == "slept 450");
  CHECK(called.load() >= 3);
  REQUIRE(custom.size() >= 3);
  CHECK(custom[0]["type"] == "mcp_progress");
  CHECK(custom[0]["server"] == "bad");
  CHECK(custom[0]["tool"] == "slow");
  CHECK(custom[0]["progress"] == 1);
  CHECK(custom[0]["message"] == "step 1");
  CHECK(custom[1]["progress"] == 2);
}

TEST_CASE("mcp asynchronous calls leave nothing of the caller's executor to the I/O thread") {
  // Each round: an io_context on this thread awaits aget_tools, acall_tool (a result, a server
  // error, a progress callback owning a copy of the caller's executor), an MCP tool's acall and
  // a closed client, then is destroyed as soon as run() returns. The client's I/O thread must
  // not hold (nor destroy) a copy of the caller's executor once the caller may resume: such a
  // copy would outlive the io_context. The probe counts the copies destroyed on other threads.
  sg::McpClient client = one_server("bad", sg::test::bad_server("good"));
  sg::McpClient closed = one_server("bad", sg::test::bad_server("good"));
  closed.close();
  auto probe = std::make_shared<ExecutorProbe>();
  constexpr int kRounds = 40;
  int finished = 0;
  for (int round = 0; round < kRounds; ++round) {
    // Even rounds: the io_context's executor, counting outstanding work (the only work of the
    // io_context while a call waits is the call's). Odd rounds: a strand that cannot count work,
    // as a graph run's node executor; a work guard kept until the coroutine ends holds the
    // io_context instead.
    const bool tracks_work = round % 2 == 0;
    CAPTURE(round);
    std::string failure;
    {
      boost::asio::io_context io;
      std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> hold;
      if (!tracks_work) hold.emplace(io.get_executor());
      boost::asio::any_io_executor inner = io.get_executor();
      if (!tracks_work) inner = boost::asio::make_strand(io);
      ProbedExecutor executor(inner, probe, tracks_work);
      boost::asio::co_spawn(
          executor,
          [&, executor]() -> boost::asio::awaitable<void> {
            auto check = [&](bool ok, const std::string& what) {
              if (!ok && failure.empty()) failure = what;
            };
            const std::thread::id here = std::this_thread::get_id();
            std::vector<sg::Tool> tools = co_await client.aget_tools();
            check(std::this_thread::get_id() == here && has(tool_names(tools), "echo"),
                  "aget_tools");
            const std::string text = "round " + std::to_string(round);
            // (Arguments in named locals: g++ 12 miscompiles co_await over braced initializers.)
            const json args = {{"text", text}};
            const json no_args = json::object();
            sg::McpCallOptions options;
            options.on_progress = [executor](const sg::McpProgress&) {};
            json echoed = co_await client.acall_tool("bad", "echo", args, options);
            check(echoed["content"][0]["text"] == "echo: " + text, "acall_tool: " + echoed.dump());
            std::string code;
            try {
              (void)co_await client.acall_tool("bad", "no-such-tool", no_args);
            } catch (const sg::Error& e) {
              code = e.code();
            }
            check(code == sg::errc::kMcpServerError, "a server error: " + code);
            sg::ToolRuntime runtime;
            sg::ToolResult called = co_await tool_named(tools, "echo").acall(args, runtime);
            check(called.message.has_value() && called.message->text() == "echo: " + text,
                  "Tool::acall");
            code.clear();
            try {
              (void)co_await closed.acall_tool("bad", "echo", args);
            } catch (const sg::Error& e) {
              code = e.code();
            }
            check(code == sg::errc::kMcpConnection, "a closed client: " + code);
            code.clear();
            try {
              (void)co_await closed.aget_tools();
            } catch (const sg::Error& e) {
              code = e.code();
            }
            check(code == sg::errc::kMcpConnection, "aget_tools of a closed client: " + code);
            ++finished;
            hold.reset();
          },
          boost::asio::detached);
      io.run();
    }  // the io_context (and its strands) destroyed right away
    REQUIRE_MESSAGE(failure.empty(), failure);
    REQUIRE(finished == round + 1);  // run() returned only once the coroutine had ended
  }
  client.close();  // joins the I/O thread: whatever it still held is destroyed by now
  closed.close();
  CHECK(probe->foreign.load() == 0);
}

TEST_CASE("mcp cancellation mid-call: CancelledError at once, and the server is told") {
  sg::McpClient client = one_server("bad", sg::test::bad_server("good"));
  sg::McpCallOptions options;
  options.cancellation = sg::CancellationToken::create();
  std::thread canceller([token = options.cancellation] {
    std::this_thread::sleep_for(milliseconds(300));
    token.cancel();
  });
  const auto start = Clock::now();
  const auto [code, text] = call_error([&] { (void)client.call_tool("bad", "hang", {}, options); });
  canceller.join();
  CHECK(code == sg::errc::kCancelled);
  CHECK(Clock::now() - start < std::chrono::seconds(3));
  const json told = json::parse(
      client.call_tool("bad", "cancellations", {})["content"][0]["text"].get<std::string>());
  REQUIRE(told.size() == 1);
  CHECK(told[0]["requestId"].is_number_integer());
  CHECK(told[0]["reason"] == "cancelled by the client");

  // A run's cancellation ends its MCP tool calls the same way (the run's token).
  auto tools = client.get_tools();
  auto model = std::make_shared<sg::LocalModel>();
  model->script({sg::ai("", {sg::ToolCall{"c2", "hang", json::object()}})});
  auto agent = sg::create_react_agent(model, tools);
  sg::RunConfig config;
  config.cancellation = sg::CancellationToken::create();
  std::thread run_canceller([token = config.cancellation] {
    std::this_thread::sleep_for(milliseconds(300));
    token.cancel();
  });
  sg::Update<sg::AgentState> input;
  input.set<&sg::AgentState::messages>(std::vector<sg::Message>{sg::human("go")});
  const auto run_start = Clock::now();
  CHECK_THROWS_AS((void)agent.invoke(input, config), sg::CancelledError);
  run_canceller.join();
  CHECK(Clock::now() - run_start < std::chrono::seconds(3));
  const json told_again = json::parse(
      client.call_tool("bad", "cancellations", {})["content"][0]["text"].get<std::string>());
  CHECK(told_again.size() == 2);
}

TEST_CASE("mcp ping in both directions, unknown server requests get a JSON-RPC error") {
  sg::McpClient client = one_server("bad", sg::test::bad_server("good"));
  client.ping("bad");
  const json answer = json::parse(
      client.call_tool("bad", "ping-client", {})["content"][0]["text"].get<std::string>());
  CHECK(answer["jsonrpc"] == "2.0");
  CHECK(answer["result"] == json::object());
  const json refused =
      json::parse(client
                      .call_tool("bad", "ask-client",
                                 {{"method", "sampling/createMessage"}})["content"][0]["text"]
                      .get<std::string>());
  CHECK(refused["error"]["code"] == -32601);
}

TEST_CASE("mcp tools/list pages are all read, in order") {
  sg::McpClient client = one_server("paged", sg::test::bad_server("paged"));
  const auto names = tool_names(client.get_tools());
  CHECK(names == std::vector<std::string>{"echo", "crash", "malformed", "no-result", "hang", "slow",
                                          "cancellations", "ping-client", "ask-client", "add-tool",
                                          "pid", "initializations"});
}

TEST_CASE("mcp notifications/tools/list_changed: the list is read again, old tools still work") {
  std::mutex mu;
  std::condition_variable cv;
  int changes = 0;
  sg::McpClientOptions options;
  options.on_tools_changed = [&](const std::string& server) {
    CHECK(server == "bad");
    std::lock_guard lock(mu);
    ++changes;
    cv.notify_all();
  };
  sg::McpClient client = one_server("bad", sg::test::bad_server("good"), options);
  const std::vector<sg::Tool> before = client.get_tools();
  CHECK(!has(tool_names(before), "extra"));
  CHECK(call_tool(tool_named(before, "add-tool"), {{"name", "extra"}}).text() == "added extra");
  {
    std::unique_lock lock(mu);
    REQUIRE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return changes >= 1; }));
  }
  const std::vector<sg::Tool> after = client.get_tools();
  CHECK(has(tool_names(after), "extra"));
  CHECK(call_tool(tool_named(after, "extra"), json::object()).text() == "extra works");
  // The tools handed out before call by name: still valid.
  CHECK(call_tool(tool_named(before, "echo"), {{"text", "x"}}).text() == "echo: x");
}

TEST_CASE("mcp list_changed from server-everything (its tools registered after initialize)") {
  std::atomic<int> changes{0};
  sg::McpClientOptions options;
  options.on_tools_changed = [&](const std::string&) { ++changes; };
  sg::McpClient client = one_server("everything", sg::test::everything_stdio(), options);
  (void)client.get_tools();
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (changes.load() == 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(20));
  CHECK(changes.load() >= 1);
  CHECK(has(tool_names(client.get_tools()), "simulate-research-query"));
}

TEST_CASE("mcp two servers at once, tool names prefixed on request") {
  sg::test::TempDir dir;
  std::ofstream(dir.path() / "notes.txt") << "MCP works from C++";
  std::map<std::string, sg::McpServerConfig> servers;
  servers["everything"] = sg::test::everything_stdio();
  servers["files"] = sg::test::node_server({sg::test::filesystem_js(), dir.path().string()});
  sg::McpClientOptions options;
  options.prefix_tool_name_with_server_name = true;
  options.additional_tool_name_prefix = "mcp";
  sg::McpClient client(servers, options);
  const std::vector<sg::Tool> tools = client.get_tools();
  const auto names = tool_names(tools);
  CHECK(has(names, "mcp__everything__echo"));
  CHECK(has(names, "mcp__files__read_text_file"));
  CHECK(!has(names, "echo"));
  CHECK(names.front().starts_with("mcp__everything__"));  // configuration order
  CHECK(names.back().starts_with("mcp__files__"));

  const std::string notes = (dir.path() / "notes.txt").string();
  // One text block beside structured content: the block's JSON text, as the adapters give it.
  const json read = json::parse(
      call_tool(tool_named(tools, "mcp__files__read_text_file"), {{"path", notes}}).text());
  CHECK(read["text"] == "MCP works from C++");
  CHECK(read["structuredContent"]["content"] == "MCP works from C++");
  const sg::Message written =
      call_tool(tool_named(tools, "mcp__files__write_file"),
                {{"path", (dir.path() / "out.txt").string()}, {"content", "written"}});
  CHECK(written.status == "success");
  std::ifstream in(dir.path() / "out.txt");
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(content == "written");
  const std::string listing = json::parse(
      call_tool(tool_named(tools, "mcp__files__list_directory"), {{"path", dir.path().string()}})
          .text())["text"];
  CHECK(listing.find("[FILE] notes.txt") != std::string::npos);
  CHECK(listing.find("[FILE] out.txt") != std::string::npos);
  // Outside the allowed directory: the server's error, as a tool error.
  const auto [code, text] = call_error([&] {
    (void)call_tool(tool_named(tools, "mcp__files__read_text_file"), {{"path", "/etc/passwd"}});
  });
  CHECK(code == sg::errc::kMcpToolError);
  CHECK(call_tool(tool_named(tools, "mcp__everything__echo"), {{"message", "both"}}).text() ==
        "Echo: both");

  // get_tools of one server.
  CHECK(tool_names(client.get_tools({"files"})).front().starts_with("mcp__files__"));
  CHECK_THROWS_WITH_AS((void)client.get_tools({"nope"}),
                       "no MCP server is named 'nope' (configured: everything, files)", sg::Error);
}

TEST_CASE("mcp a ReAct agent answers with an MCP tool through ToolNode (LocalModel)") {
  sg::McpClient client = one_server("everything", sg::test::everything_stdio());
  auto agent = sg::create_react_agent(std::make_shared<sg::LocalModel>(), client.get_tools());
  sg::Update<sg::AgentState> input;
  input.set<&sg::AgentState::messages>(std::vector<sg::Message>{sg::human("get-sum 19 and 23")});
  for (const bool async : {false, true}) {
    CAPTURE(async);
    sg::RunResult<sg::AgentState> result;
    if (async) {
      boost::asio::io_context io;
      boost::asio::co_spawn(
          io,
          [&]() -> boost::asio::awaitable<void> {
            sg::RunConfig config;
            result = co_await agent.ainvoke(input, config);
          },
          boost::asio::detached);
      io.run();
    } else {
      result = agent.invoke(input);
    }
    const auto& messages = result.state.messages;
    REQUIRE(messages.size() == 4);
    CHECK(messages[1].tool_calls.at(0).name == "get-sum");
    CHECK(messages[1].tool_calls.at(0).args == json{{"a", 19}, {"b", 23}});
    CHECK(messages[2].type == sg::MessageType::tool);
    CHECK(messages[2].name == "get-sum");
    CHECK(messages[2].status == "success");
    CHECK(messages[3].text() == "The get-sum tool says: The sum of 19 and 23 is 42.");
  }
}

TEST_CASE("mcp a server that dies mid-call: the call fails at once with its exit status") {
  sg::McpServerConfig config = sg::test::bad_server("good");
  sg::McpClient client = one_server("bad", config);
  const auto start = Clock::now();
  const auto [code, text] = call_error([&] { (void)client.call_tool("bad", "crash", {}); });
  CHECK(code == sg::errc::kMcpConnection);
  CHECK(text.find("MCP server 'bad'") == 0);
  CHECK(text.find("exited with status 3") != std::string::npos);
  CHECK(text.find("about to crash") != std::string::npos);  // its stderr, logged and quoted
  CHECK(Clock::now() - start < std::chrono::seconds(3));
  // The next call starts the server again.
  CHECK(client.call_tool("bad", "echo", {{"text", "again"}})["content"][0]["text"] ==
        "echo: again");
}

TEST_CASE("mcp malformed JSON-RPC: bad lines are skipped, a timeout names them") {
  sg::McpServerConfig config = sg::test::bad_server("good");
  sg::McpClient client = one_server("bad", config);
  // A bad line, then the answer: the line is skipped, the call succeeds.
  CHECK(client.call_tool("bad", "malformed", {{"answer", true}})["content"][0]["text"] ==
        "answered after a bad line");
  // A bad line and no answer: the call ends at its timeout, saying what came.
  sg::McpCallOptions options;
  options.timeout = milliseconds(500);
  const auto [code, text] =
      call_error([&] { (void)client.call_tool("bad", "malformed", {}, options); });
  CHECK(code == sg::errc::kMcpTimeout);
  CHECK(text.find("tools/call got no answer within 500 ms") != std::string::npos);
  CHECK(text.find("this is not JSON") != std::string::npos);
  // A response with neither result nor error: a protocol error at once.
  const auto [code2, text2] = call_error([&] { (void)client.call_tool("bad", "no-result", {}); });
  CHECK(code2 == sg::errc::kMcpProtocol);
  CHECK(text2.find("neither result nor error") != std::string::npos);
  // The connection is still good.
  CHECK(client.call_tool("bad", "echo", {{"text", "ok"}})["content"][0]["text"] == "echo: ok");
}

TEST_CASE("mcp a server that hangs: per-call timeouts, and the server is told") {
  sg::McpServerConfig config = sg::test::bad_server("good");
  config.tool_timeout = milliseconds(300);
  sg::McpClient client = one_server("bad", config);
  const auto tools = client.get_tools();
  const auto start = Clock::now();
  const auto [code, text] = call_error([&] { (void)call_tool(tool_named(tools, "hang"), {}); });
  CHECK(code == sg::errc::kMcpTimeout);
  CHECK(text == "MCP server 'bad': tools/call got no answer within 300 ms");
  CHECK(Clock::now() - start < std::chrono::seconds(2));
  const json told = json::parse(
      client.call_tool("bad", "cancellations", {})["content"][0]["text"].get<std::string>());
  REQUIRE(told.size() == 1);
  CHECK(told[0]["reason"] == "Request timed out");

  // A server that never answers initialize: the connect timeout.
  sg::McpServerConfig silent = sg::test::bad_server("hang-initialize");
  silent.connect_timeout = milliseconds(400);
  sg::McpClient stuck = one_server("silent", silent);
  const auto [code2, text2] = call_error([&] { (void)stuck.get_tools(); });
  CHECK(code2 == sg::errc::kMcpTimeout);
  CHECK(text2 == "MCP server 'silent': initialize got no answer within 400 ms");
}

TEST_CASE("mcp a server of another protocol version is refused clearly") {
  sg::McpClient client = one_server("old", sg::test::bad_server("wrong-version"));
  const auto [code, text] = call_error([&] { (void)client.get_tools(); });
  CHECK(code == sg::errc::kMcpProtocol);
  CHECK(text ==
        "MCP server 'old' answered protocol version '1999-01-01', which this client does not "
        "support (it supports 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)");
}

TEST_CASE("mcp servers that cannot start say why") {
  {
    sg::McpClient client = one_server("quits", sg::test::bad_server("exit-at-start"));
    const auto [code, text] = call_error([&] { (void)client.get_tools(); });
    CHECK(code == sg::errc::kMcpConnection);
    CHECK(text.find("exited with status 7") != std::string::npos);
    CHECK(text.find("exit-at-start: giving up") != std::string::npos);
  }
  {
    sg::McpServerConfig config;
    config.command = "sg-no-such-mcp-server";
    sg::McpClient client = one_server("missing", config);
    const auto [code, text] = call_error([&] { (void)client.get_tools(); });
    CHECK(code == sg::errc::kMcpConnection);
    CHECK(text.find(
              "MCP server 'missing': command 'sg-no-such-mcp-server' was not found on PATH") == 0);
  }
  {
    sg::McpServerConfig config = sg::test::bad_server("good");
    config.cwd = "/no/such/dir";
    sg::McpClient client = one_server("nowhere", config);
    const auto [code, text] = call_error([&] { (void)client.get_tools(); });
    CHECK(text == "MCP server 'nowhere': cwd '/no/such/dir' is not a directory");
  }
  // With onConnectionError "ignore", the other servers' tools still come.
  std::map<std::string, sg::McpServerConfig> servers{
      {"quits", sg::test::bad_server("exit-at-start")}, {"good", sg::test::bad_server("good")}};
  sg::McpClientOptions options;
  options.ignore_connection_errors = true;
  sg::McpClient client(servers, options);
  CHECK(has(tool_names(client.get_tools()), "echo"));
}

TEST_CASE("mcp close: stdin closed, then SIGTERM, then SIGKILL, and no process is left") {
  for (const std::string mode : {"good", "stubborn"}) {
    CAPTURE(mode);
    sg::McpServerConfig config = sg::test::bad_server(mode);
    config.shutdown_timeout = milliseconds(300);
    sg::McpClient client = one_server("s", config);
    const int pid =
        std::stoi(client.call_tool("s", "pid", {})["content"][0]["text"].get<std::string>());
    CHECK(::kill(pid, 0) == 0);
    const auto start = Clock::now();
    client.close();
    const auto took = Clock::now() - start;
    CHECK(::kill(pid, 0) == -1);  // gone and reaped
    if (mode == "good") {
      CHECK(took < milliseconds(300));  // it exits when its stdin closes
    } else {
      CHECK(took >= milliseconds(600));  // it ignores both: SIGKILL after two waits
    }
    const auto [code, text] = call_error([&] { (void)client.call_tool("s", "pid", {}); });
    CHECK(code == sg::errc::kMcpConnection);
    CHECK(text == "MCP server 's': the MCP client was closed");
  }
}

TEST_CASE("mcp a callback on the client's I/O thread drops the client and its last tool") {
  // What the callback and this thread share; the callback runs on the client's I/O thread.
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<sg::McpClient> client;
    std::vector<sg::Tool> tools;
    bool call_returned = false;  // this thread let go of the call that made the tools change
    bool dropped = false;        // the callback dropped what it drops
    std::thread::id callback_thread{};
    std::string close_code{};
  };
  bool keep_tools = false;  // this thread keeps the tools: the callback drops only the client
  SUBCASE("the callback drops the client, then the last tool") {}
  SUBCASE("the callback drops the client; this thread keeps the tools") {
    keep_tools = true;
  }
  CAPTURE(keep_tools);
  const int threads_before = sg::test::thread_count();
  Shared shared;
  std::vector<sg::Tool> kept;
  sg::McpClientOptions options;
  options.on_tools_changed = [&shared](const std::string&) {
    std::unique_lock lock(shared.mu);
    shared.callback_thread = std::this_thread::get_id();
    shared.cv.wait_for(lock, std::chrono::seconds(10), [&] { return shared.call_returned; });
    try {
      shared.client->close();  // a blocking function: refused here
    } catch (const sg::Error& e) {
      shared.close_code = e.code();
    }
    shared.client.reset();  // its sessions start closing; the tools may still hold the client
    shared.tools.clear();   // the last reference, unless this thread kept copies
    shared.dropped = true;
    shared.cv.notify_all();
  };
  shared.client.emplace(one_server("bad", sg::test::bad_server("good"), options));
  shared.tools = shared.client->get_tools();
  if (keep_tools) kept = shared.tools;
  const int pid = std::stoi(
      shared.client->call_tool("bad", "pid", {})["content"][0]["text"].get<std::string>());
  CHECK(::kill(pid, 0) == 0);
  // add-tool makes the server send notifications/tools/list_changed: the callback runs.
  CHECK(call_tool(tool_named(shared.tools, "add-tool"), {{"name", "extra"}}).text() ==
        "added extra");
  {
    std::unique_lock lock(shared.mu);
    shared.call_returned = true;
    shared.cv.notify_all();
    REQUIRE(shared.cv.wait_for(lock, std::chrono::seconds(10), [&] { return shared.dropped; }));
  }
  CHECK(shared.callback_thread != std::this_thread::get_id());
  CHECK(shared.close_code == sg::errc::kInvalidArgument);
  // The session still ends: the server exits (and is reaped) without waiting for anything here.
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (::kill(pid, 0) == 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(20));
  CHECK(::kill(pid, 0) == -1);
  if (keep_tools) {
    const auto [code, text] = call_error([&] { (void)call_tool(tool_named(kept, "echo"), {}); });
    CHECK(code == sg::errc::kMcpConnection);
    CHECK(text == "MCP server 'bad': the MCP client was closed");
    kept.clear();  // the last reference, on this thread
  }
  // The client's I/O thread ends, and so does the thread that ended it.
  while (sg::test::thread_count() > threads_before && Clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(20));
  CHECK(sg::test::thread_count() == threads_before);
}

TEST_CASE("mcp environment and working directory of a stdio server") {
  sg::test::TempDir dir;
  sg::McpServerConfig config = sg::test::everything_stdio();
  config.env = {{"SG_MCP_TEST_VALUE", "forty-two"}};
  config.cwd = dir.path().string();
  ::setenv("SG_MCP_TEST_SECRET", "not for servers", 1);
  sg::McpClient client = one_server("everything", config);
  const std::string env = client.call_tool("everything", "get-env", {})["content"][0]["text"];
  CHECK(env.find("\"SG_MCP_TEST_VALUE\": \"forty-two\"") != std::string::npos);
  CHECK(env.find("\"PATH\"") != std::string::npos);
  CHECK(env.find("SG_MCP_TEST_SECRET") == std::string::npos);  // as the official SDKs
  ::unsetenv("SG_MCP_TEST_SECRET");
}

TEST_CASE("mcp tools outlive nothing they need: load_mcp_tools keeps its client") {
  const json config = {{"mcpServers",
                        {{"everything",
                          {{"command", sg::test::mcp_node()},
                           {"args", {sg::test::everything_js()}},
                           {"stderr", "ignore"}}}}},
                       {"prefixToolNameWithServerName", true}};
  std::vector<sg::Tool> tools = sg::load_mcp_tools(config);
  CHECK(call_tool(tool_named(tools, "everything__echo"), {{"message", "kept"}}).text() ==
        "Echo: kept");
  // A client's tools after close() fail clearly.
  sg::McpClient client(config);
  const std::vector<sg::Tool> closed = client.get_tools();
  client.close();
  const auto [code, text] =
      call_error([&] { (void)call_tool(tool_named(closed, "everything__echo"), {}); });
  CHECK(code == sg::errc::kMcpConnection);
}

TEST_CASE("mcp configuration: the mcpServers shape, with errors naming the bad field") {
  const json good = json::parse(R"({
    "mcpServers": {
      "fs": {"command": "npx", "args": ["-y", "server"], "env": {"A": "1"}, "cwd": "/tmp",
             "stderr": "ignore", "defaultToolTimeout": 1500, "disabled": false},
      "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}},
      "legacy": {"url": "http://127.0.0.1:1/sse", "transport": "sse"},
      "typed": {"type": "streamable_http", "url": "http://127.0.0.1:1/mcp"}
    },
    "prefixToolNameWithServerName": true,
    "additionalToolNamePrefix": "mcp",
    "useStandardContentBlocks": true,
    "outputHandling": {"resource": "content"},
    "defaultToolTimeout": 2000,
    "onConnectionError": "ignore",
    "streamProgress": true
  })");
  const sg::McpConfig parsed = sg::parse_mcp_config(good);
  const sg::McpServerConfig& fs = parsed.servers.at("fs");
  CHECK(fs.transport == sg::McpTransport::stdio);
  CHECK(fs.command == "npx");
  CHECK(fs.args == std::vector<std::string>{"-y", "server"});
  CHECK(fs.env.at("A") == "1");
  CHECK(fs.cwd == "/tmp");
  CHECK(fs.stderr_mode == sg::McpStderr::ignore);
  CHECK(fs.tool_timeout == milliseconds(1500));
  CHECK(parsed.servers.at("remote").transport == sg::McpTransport::streamable_http);
  CHECK(parsed.servers.at("remote").headers.at("Authorization") == "Bearer x");
  CHECK(parsed.servers.at("legacy").transport == sg::McpTransport::sse);
  CHECK(parsed.servers.at("typed").transport == sg::McpTransport::streamable_http);
  CHECK(parsed.options.prefix_tool_name_with_server_name);
  CHECK(parsed.options.additional_tool_name_prefix == "mcp");
  CHECK(parsed.options.use_standard_content_blocks);
  CHECK(parsed.options.output_handling.at("resource") == sg::McpOutput::content);
  CHECK(parsed.options.tool_timeout == milliseconds(2000));
  CHECK(parsed.options.ignore_connection_errors);
  CHECK(parsed.options.stream_progress);
  // The server map alone.
  CHECK(sg::parse_mcp_config(json{{"a", {{"command", "x"}}}}).servers.at("a").command == "x");

  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"([1])", "mcp configuration: expected a JSON object, got [1]"},
      {R"({"mcpServers": {}})", "mcpServers: no MCP servers are configured"},
      {R"({"mcpServers": {"a": {}}})",
       "mcpServers.a: needs `command` (a stdio server) or `url` (HTTP)"},
      {R"({"mcpServers": {"a": {"command": "x", "args": ["y", 2]}}})",
       "mcpServers.a.args[1]: expected a string, got 2"},
      {R"({"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}})",
       "mcpServers.a.env.K: expected a string, got 1"},
      {R"({"mcpServers": {"a": {"command": 5}}})",
       "mcpServers.a.command: expected a string, got 5"},
      {R"({"mcpServers": {"a": {"url": "ftp://x"}}})",
       "mcpServers.a.url: expected an http:// or https:// URL, got 'ftp://x'"},
      {R"({"mcpServers": {"a": {"url": "http://x", "transport": "websocket"}}})",
       "mcpServers.a.transport: unknown transport 'websocket' (expected stdio, http or sse)"},
      {R"({"mcpServers": {"a": {"command": "x", "url": "http://x"}}})",
       "mcpServers.a: has both `command` (stdio) and `url` (HTTP)"},
      {R"({"mcpServers": {"a": {"command": "x", "stderr": "loud"}}})",
       "mcpServers.a.stderr: expected inherit, log or ignore, got 'loud'"},
      {R"({"mcpServers": {"a": {"command": "x", "defaultToolTimeout": -1}}})",
       "mcpServers.a.defaultToolTimeout: expected a number of milliseconds above 0, got -1"},
      {R"({"mcpServers": {"a": {"command": "x"}}, "outputHandling": {"video": "content"}})",
       "outputHandling.video: unknown content type"},
      {R"({"mcpServers": {"a": {"command": "x"}}, "prefixToolNameWithServerName": "yes"})",
       "mcp configuration.prefixToolNameWithServerName: expected true or false, got \"yes\""},
  };
  for (const auto& [text, message] : bad) {
    CAPTURE(text);
    const auto [code, what] = call_error([&] { (void)sg::parse_mcp_config(json::parse(text)); });
    CHECK(code == sg::errc::kInvalidArgument);
    CHECK(what == message);
  }
  CHECK_THROWS_WITH_AS(sg::McpClient(std::map<std::string, sg::McpServerConfig>{}),
                       "mcpServers: no MCP servers are configured", sg::Error);
}
