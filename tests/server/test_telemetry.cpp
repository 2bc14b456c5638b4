// SPDX-License-Identifier: MIT
// What a server shows of its runs: OTLP traces (a caller's traceparent continued, GenAI
// attributes, model calls carrying it onward), /metrics (checked by promtool and scraped by a
// real Prometheus server), request and run logs, and the studio's timeline of a run.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/core/log.hpp>
#include <stategraph/models/openai.hpp>
#include <stategraph/models/react_agent.hpp>

#include <boost/asio/ip/tcp.hpp>

#include <cmath>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "server_fixture.hpp"
#include "support/loopback_openai.hpp"
#include "support/loopback_otlp.hpp"
#include "support/prometheus.hpp"
#include "support/temp_dir.hpp"

using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

struct TelemetryAddArgs {
  int a = 0;
  int b = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"a">(&TelemetryAddArgs::a), sg::field<"b">(&TelemetryAddArgs::b)};
  }
};

/// A ReAct agent with an "add" tool on the model server at `base_url`.
std::shared_ptr<const sg::ServedGraph> telemetry_agent(const std::string& base_url,
                                                       int max_retries = 0) {
  sg::OpenAIConfig config;
  config.base_url = base_url;
  config.model = "loopback-model";
  config.max_retries = max_retries;
  sg::ReactAgentOptions agent;
  agent.checkpointer = std::make_shared<sg::InMemorySaver>();
  return sg::served_graph(sg::create_react_agent(
      std::make_shared<sg::OpenAIChatModel>(config),
      {sg::make_tool<TelemetryAddArgs>("add", "Adds.",
                                       [](const TelemetryAddArgs& x) { return x.a + x.b; })},
      agent));
}

/// Server options that send the runs' spans to `collector` in batches of 20 ms.
sg::ServerOptions traced_to(const sg::testing::LoopbackOtlp& collector) {
  sg::ServerOptions options;
  options.tracing = sg::OtlpOptions{.endpoint = collector.traces_url(), .schedule_delay = 20ms};
  return options;
}

/// The libraries' log records while alive.
class CapturedLog {
 public:
  CapturedLog() {
    sg::set_log_sink(
        [this](const sg::LogRecord& r) {
          std::lock_guard lock(mu_);
          records_.push_back({{"level", sg::to_string(r.level)}, {"msg", r.message}});
          if (r.fields.is_object()) records_.back().update(r.fields);
        },
        sg::LogLevel::debug);
  }
  ~CapturedLog() { sg::set_log_sink(nullptr); }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;
  /// The records with message `msg`.
  std::vector<json> with(const std::string& msg) const {
    std::lock_guard lock(mu_);
    std::vector<json> out;
    for (const auto& r : records_)
      if (r["msg"] == msg) out.push_back(r);
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::vector<json> records_;
};

const sg::testing::OtlpSpan* find_span(const std::vector<sg::testing::OtlpSpan>& spans,
                                       const std::string& span_id) {
  for (const auto& s : spans)
    if (s.span_id == span_id) return &s;
  return nullptr;
}

std::vector<sg::testing::OtlpSpan> named(const std::vector<sg::testing::OtlpSpan>& spans,
                                         const std::string& name) {
  std::vector<sg::testing::OtlpSpan> out;
  for (const auto& s : spans)
    if (s.name == name) out.push_back(s);
  return out;
}

constexpr const char* kNoSuchRun = "00000000-0000-4000-8000-0000000000aa";

/// Waits until the collector has received no new span for 200 ms (the exporter sends what the
/// run reported in batches).
bool eventually_spans_settle(const sg::testing::LoopbackOtlp& collector) {
  std::size_t last = collector.spans().size();
  for (int i = 0; i < 100; ++i) {
    std::this_thread::sleep_for(200ms);
    const std::size_t now = collector.spans().size();
    if (now == last) return true;
    last = now;
  }
  return false;
}

/// A TCP port free now on 127.0.0.1.
std::uint16_t telemetry_free_port() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor acceptor(
      io, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  return acceptor.local_endpoint().port();
}

}  // namespace

TEST_CASE("server telemetry: a ReAct run's spans continue the client's trace, with GenAI data") {
  sg::testing::LoopbackOpenAI model({.call_tool = "add", .tool_args = {{"a", 2}, {"b", 3}}});
  sg::testing::LoopbackOtlp collector;
  CapturedLog logs;
  sg::test::Served s(traced_to(collector), {{"react", telemetry_agent(model.base_url())}});
  const std::string thread = s.new_thread();
  const std::string client_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
  const std::string client_span = "00f067aa0ba902b7";
  const auto answer = sg::test::http_request(
      "POST", s.server.url() + "/threads/" + thread + "/runs/wait",
      json{{"assistant_id", "react"}, {"input", sg::test::human_input("add 2 and 3")}}.dump(),
      {"traceparent: 00-" + client_trace + "-" + client_span + "-01"});
  REQUIRE(answer.status == 200);
  const auto run_list = s.get_json("/threads/" + thread + "/runs");
  REQUIRE(run_list.size() == 1);
  const std::string run_id = run_list[0]["run_id"];

  // The run, 3 node tasks (agent, tools, agent), 2 model calls, 1 tool call, checkpoint writes.
  REQUIRE(collector.wait_for_spans(8));
  REQUIRE(eventually_spans_settle(collector));
  const auto spans = collector.spans();
  const auto runs = named(spans, "react");
  REQUIRE(runs.size() == 1);
  const auto& run = runs[0];
  CHECK(run.trace_id == client_trace);
  CHECK(run.parent_span_id == client_span);
  CHECK(run.attribute("gen_ai.operation.name") == "invoke_agent");
  CHECK(run.attribute("stategraph.thread_id") == thread);
  CHECK(run.attribute("stategraph.run_id") == run_id);
  CHECK(run.attribute("gen_ai.conversation.id") == thread);
  CHECK(run.resource["service.name"] == "stategraph");
  for (const auto& s2 : spans) CHECK(s2.trace_id == client_trace);

  const auto agents = named(spans, "agent");
  const auto tools_nodes = named(spans, "tools");
  REQUIRE(agents.size() == 2);
  REQUIRE(tools_nodes.size() == 1);
  for (const auto& node : {agents[0], agents[1], tools_nodes[0]}) {
    CHECK(node.parent_span_id == run.span_id);
    CHECK(node.attribute("stategraph.run_id") == run_id);
    CHECK(node.attribute("stategraph.task_id").get<std::string>().size() == 16);
    CHECK(node.start_unix_nano >= run.start_unix_nano);
    CHECK(node.end_unix_nano <= run.end_unix_nano);
  }
  const auto chats = named(spans, "chat loopback-model");
  REQUIRE(chats.size() == 2);
  for (const auto& chat : chats) {
    const auto* parent = find_span(spans, chat.parent_span_id);
    REQUIRE(parent != nullptr);
    CHECK(parent->name == "agent");
    CHECK(chat.kind == 3);  // client
    CHECK(chat.attribute("gen_ai.operation.name") == "chat");
    CHECK(chat.attribute("gen_ai.request.model") == "loopback-model");
    CHECK(chat.attribute("gen_ai.usage.input_tokens").get<int>() > 0);
    CHECK(chat.attribute("gen_ai.usage.output_tokens").get<int>() > 0);
    CHECK(chat.start_unix_nano >= parent->start_unix_nano);
    CHECK(chat.end_unix_nano <= parent->end_unix_nano);
  }
  // The model server got each call's span as its traceparent.
  const auto model_requests = model.requests();
  REQUIRE(model_requests.size() == 2);
  for (const auto& request : model_requests) {
    const std::string header = request.header("traceparent");
    REQUIRE(header.size() == 55);
    CHECK(header.substr(3, 32) == client_trace);
    const auto* chat = find_span(spans, header.substr(36, 16));
    REQUIRE(chat != nullptr);
    CHECK(chat->name == "chat loopback-model");
  }
  const auto tool_spans = named(spans, "execute_tool add");
  REQUIRE(tool_spans.size() == 1);
  CHECK(tool_spans[0].parent_span_id == tools_nodes[0].span_id);
  CHECK(tool_spans[0].attribute("gen_ai.tool.name") == "add");
  CHECK(tool_spans[0].attribute("gen_ai.tool.call.id") ==
        json::parse(answer.body)["messages"][1]["tool_calls"][0]["id"]);
  CHECK_FALSE(named(spans, "checkpoint write").empty());

  // The studio's timeline: the same spans, from the server.
  const auto timeline = s.get_json("/threads/" + thread + "/runs/" + run_id + "/spans");
  std::set<std::string> kinds;
  for (const auto& span : timeline) kinds.insert(span["kind"].get<std::string>());
  CHECK(kinds == std::set<std::string>{"run", "node", "model", "tool", "checkpoint"});
  CHECK(s.get("/threads/" + thread + "/runs/" + kNoSuchRun + "/spans").status == 404);

  // The logs: the request (its route, not its path, and its ids) and the run's lifecycle.
  bool logged_wait = false;
  for (const auto& r : logs.with("request")) {
    if (r["route"] != "/threads/{}/runs/wait") continue;
    logged_wait = true;
    CHECK(r["method"] == "POST");
    CHECK(r["status"] == 200);
    CHECK(r["thread_id"] == thread);
    CHECK(r["run_id"] == run_id);
    CHECK(r["duration_ms"].get<double>() > 0);
  }
  CHECK(logged_wait);
  for (const char* msg : {"run created", "run started", "run ended"}) {
    CAPTURE(msg);
    const auto lines = logs.with(msg);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0]["run_id"] == run_id);
    CHECK(lines[0]["graph_id"] == "react");
  }
  CHECK(logs.with("run ended")[0]["status"] == "success");
}

TEST_CASE("server telemetry: a run whose model fails has error spans, an error log and metrics") {
  sg::testing::LoopbackOpenAI model;
  model.push(sg::testing::LoopbackReply::error(500, "the model is down"));
  sg::testing::LoopbackOtlp collector;
  CapturedLog logs;
  sg::test::Served s(traced_to(collector), {{"react", telemetry_agent(model.base_url())}});
  const std::string thread = s.new_thread();
  const json result =
      s.post_json("/threads/" + thread + "/runs/wait",
                  {{"assistant_id", "react"}, {"input", sg::test::human_input("hi")}});
  REQUIRE(result.contains("__error__"));

  REQUIRE(collector.wait_for_spans(3));  // the run, the agent node, the model call
  REQUIRE(eventually_spans_settle(collector));
  const auto spans = collector.spans();
  const auto runs = named(spans, "react");
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].status_code == 2);
  CHECK(runs[0].status_message.find("the model is down") != std::string::npos);
  const auto chats = named(spans, "chat loopback-model");
  REQUIRE(chats.size() == 1);
  CHECK(chats[0].status_code == 2);
  REQUIRE(!chats[0].events.empty());
  CHECK(chats[0].events[0]["name"] == "exception");

  const auto failed = logs.with("run failed");
  REQUIRE(failed.size() == 1);
  CHECK(failed[0]["level"] == "error");
  CHECK(failed[0]["error"].get<std::string>().find("the model is down") != std::string::npos);
  CHECK(failed[0]["thread_id"] == thread);
  const auto model_failed = logs.with("model call failed");
  REQUIRE(model_failed.size() == 1);
  CHECK(model_failed[0]["code"] == "model.http_status");

  const std::string metrics = s.get("/metrics").body;
  CHECK(sg::test::metric_value(metrics, R"(stategraph_runs_total{graph="react",status="error"})") ==
        1);
  CHECK(sg::test::metric_value(
            metrics,
            R"(stategraph_model_requests_total{model="loopback-model",outcome="error"})") == 1);
}

TEST_CASE("server /metrics: the runs made, checked by promtool, behind the API key") {
  sg::testing::LoopbackOpenAI model({.call_tool = "add", .tool_args = {{"a", 1}, {"b", 1}}});
  sg::ServerOptions options;
  options.api_key = "metrics-key";
  sg::test::Served s(options, {{"react", telemetry_agent(model.base_url())}});
  const std::vector<std::string> key = {"x-api-key: metrics-key"};
  CHECK(s.get("/metrics").status == 401);  // the server's authentication applies
  const auto thread_answer = sg::test::http_request("POST", s.server.url() + "/threads", "{}", key);
  const std::string thread = json::parse(thread_answer.body)["thread_id"];
  for (int i = 0; i < 3; ++i) {
    const auto r = sg::test::http_request(
        "POST", s.server.url() + "/threads/" + thread + "/runs/wait",
        json{{"assistant_id", "react"}, {"input", sg::test::human_input("one more")}}.dump(), key);
    REQUIRE(r.status == 200);
  }
  const auto scraped = s.get("/metrics", key);
  REQUIRE(scraped.status == 200);
  CHECK(scraped.headers.at("content-type").rfind("text/plain; version=0.0.4", 0) == 0);
  const std::string& text = scraped.body;
  const auto check = sg::test::promtool_check(text);
  INFO(check.out << check.err);
  CHECK(check.exit_code == 0);
  using sg::test::metric_value;
  CHECK(metric_value(text, R"(stategraph_runs_total{graph="react",status="success"})") == 3);
  CHECK(metric_value(text, R"(stategraph_run_duration_seconds_count{graph="react"})") == 3);
  CHECK(metric_value(
            text, R"(stategraph_model_requests_total{model="loopback-model",outcome="ok"})") == 6);
  CHECK(metric_value(
            text, R"(stategraph_model_request_duration_seconds_count{model="loopback-model"})") ==
        6);
  CHECK(metric_value(text,
                     R"(stategraph_model_tokens_total{model="loopback-model",type="input"})") > 0);
  CHECK(metric_value(text, R"(stategraph_tool_calls_total{tool="add",outcome="ok"})") == 3);
  CHECK(metric_value(text, "stategraph_checkpoint_writes_total") >= 3);
  CHECK(metric_value(text, "stategraph_checkpoint_write_bytes_total") > 0);
  CHECK(
      metric_value(
          text,
          R"(stategraph_http_requests_total{method="POST",route="/threads/{}/runs/wait",status="200"})") ==
      3);
  CHECK(metric_value(
            text,
            R"(stategraph_http_requests_total{method="GET",route="/metrics",status="401"})") == 1);
  CHECK(metric_value(text, "stategraph_runs_pending") == 0);
  CHECK(metric_value(text, "stategraph_runs_running") == 0);
  CHECK(metric_value(text, "stategraph_open_connections") >= 1);
  CHECK(metric_value(text, "process_resident_memory_bytes") > 1e6);
  CHECK(metric_value(text, R"(stategraph_node_duration_seconds_count{node="agent"})") == 6);
}

TEST_CASE("server /metrics: public for a scraper, and a real Prometheus server queries the runs") {
  const std::string prometheus = "/usr/bin/prometheus";
  if (!std::filesystem::exists(prometheus)) {
    FAIL("Prometheus is not installed (Debian's prometheus package): run scripts/install-deps");
  }
  sg::ServerOptions options;
  options.api_key = "scrape-key";
  options.public_paths.emplace_back("/metrics");  // stategraph serve --metrics-public
  sg::test::Served s(options);
  CHECK(s.get("/metrics").status == 200);
  CHECK(s.get("/threads/" + std::string(kNoSuchRun)).status == 401);  // the rest is not
  const std::vector<std::string> key = {"x-api-key: scrape-key"};
  for (int i = 0; i < 4; ++i) {
    const auto r = sg::test::http_request(
        "POST", s.server.url() + "/runs/wait",
        json{{"assistant_id", "agent"}, {"input", sg::test::human_input("hi")}}.dump(), key);
    REQUIRE(r.status == 200);
  }

  sg::test::TempDir dir;
  const std::uint16_t port = telemetry_free_port();
  {
    std::ofstream config(dir.sub("prometheus.yml"));
    config << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
              "scrape_configs:\n  - job_name: stategraph\n    static_configs:\n"
              "      - targets: ['127.0.0.1:"
           << s.server.port() << "']\n";
  }
  sg::test::BackgroundProcess server(
      prometheus,
      {"--config.file=" + dir.sub("prometheus.yml"), "--storage.tsdb.path=" + dir.sub("data"),
       "--web.listen-address=127.0.0.1:" + std::to_string(port)});
  const std::string query =
      "http://127.0.0.1:" + std::to_string(port) + "/api/v1/query?query=" +
      "stategraph_runs_total%7Bgraph%3D%22agent%22%2Cstatus%3D%22success%22%7D";
  json answer;
  const bool found = sg::test::eventually(
      [&] {
        try {
          const auto r = sg::test::http_request("GET", query);
          if (r.status != 200) return false;
          answer = json::parse(r.body);
          return answer["status"] == "success" && !answer["data"]["result"].empty();
        } catch (const std::exception&) {
          return false;  // not listening yet
        }
      },
      60s);
  INFO(answer.dump() << "\n" << server.err());
  REQUIRE(found);
  const json& sample = answer["data"]["result"][0];
  CHECK(sample["metric"]["job"] == "stategraph");
  CHECK(sample["value"][1] == "4");
}
