// SPDX-License-Identifier: MIT
// Runs as coroutines: many runs wait on a model at once without holding threads, and cancelling
// a run aborts its model call. Against a loopback OpenAI-compatible model that answers after a
// long delay and counts the requests in flight and those whose client went away.
#include <stategraph/models/openai.hpp>
#include <stategraph/server/server.hpp>
#include <stategraph/stategraph.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <thread>

#include "server_fixture.hpp"
#include "support/loopback_openai.hpp"

namespace {

using nlohmann::json;
using sg::test::eventually;
using namespace std::chrono_literals;

/// A plain node, then a coroutine node that awaits the model: the graph of a served agent.
std::shared_ptr<const sg::ServedGraph> model_graph(std::shared_ptr<const sg::ChatModel> model) {
  sg::StateGraph<sg::MessagesState> g;
  g.add_node("prepare", [](const sg::MessagesState&) { return sg::Update<sg::MessagesState>{}; });
  g.add_node(
      "call",
      [model](const sg::MessagesState& s) -> boost::asio::awaitable<sg::Update<sg::MessagesState>> {
        std::vector<sg::Message> input = s.messages;
        sg::Message reply = co_await model->ainvoke(std::move(input));
        co_return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(
            std::move(reply));
      });
  g.add_edge(sg::START, "prepare").add_edge("prepare", "call").add_edge("call", sg::END);
  return sg::served_graph(std::move(g));
}

}  // namespace

TEST_CASE("server runs: 200 runs wait on a model at once, and cancelling them aborts the calls") {
  sg::testing::LoopbackOptions model_options;
  model_options.delay = 600s;  // never answers within the test: every call ends by cancellation
  sg::testing::LoopbackOpenAI model_server(model_options);
  sg::OpenAIConfig config;
  config.base_url = model_server.base_url();
  config.api_key = "test-key";
  config.model = "test-model";
  sg::ServerOptions options;
  options.sync_node_workers = 2;  // the plain nodes of 200 runs share 2 threads
  sg::test::Served s(options,
                     {{"model", model_graph(std::make_shared<sg::OpenAIChatModel>(config))}});
  const auto status_of = [&](const std::string& path) {
    return s.get_json(path).value("status", std::string());
  };

  constexpr std::size_t kRuns = 200;
  std::vector<std::string> runs;
  for (std::size_t i = 0; i < kRuns; ++i) {
    const std::string thread = s.new_thread();
    const json run =
        s.post_json("/threads/" + thread + "/runs",
                    {{"assistant_id", "model"}, {"input", sg::test::human_input("hi")}});
    runs.push_back("/threads/" + thread + "/runs/" + run["run_id"].get<std::string>());
  }
  // Every run waits on its model call at the same time.
  CHECK(eventually([&] { return model_server.stats().in_flight == kRuns; }, 60s));
  CHECK(model_server.stats().max_in_flight == kRuns);
  CHECK(status_of(runs.front()) == "running");
  CHECK(status_of(runs.back()) == "running");

  // Cancelling a run mid-call closes the model request: the model server sees each go.
  for (const auto& run : runs) CHECK(s.post(run + "/cancel", json::object()).status / 100 == 2);
  CHECK(eventually([&] { return model_server.stats().aborted == kRuns; }, 60s));
  CHECK(model_server.stats().in_flight == 0);
  for (const auto& run : runs) {
    INFO(run);
    CHECK(sg::test::wait_for_field(s, run, "status", "interrupted"));
  }
  CHECK(model_server.stats().requests == kRuns);
}
