// SPDX-License-Identifier: MIT
// Fuzz target: the server's requests, answered in-process by its handler (see fuzz_targets.hpp).
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/server/server.hpp>
#include <stategraph/stategraph.hpp>
#include <stategraph/store/memory_store.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "api.hpp"  // server/src: the request handler apart from the network
#include "fuzz_targets.hpp"

// Not an anonymous namespace: fuzz/replay compiles the targets in unity batches.
namespace sg::fuzz::http {

using nlohmann::json;
using server::ApiRequest;
using server::ApiResponse;

constexpr std::string_view kThread = "00000000-0000-4000-8000-000000000001";
constexpr std::string_view kSeparator = "\n--\n";

constexpr std::string_view kMethods[] = {"GET", "POST", "PATCH",   "DELETE",
                                         "PUT", "HEAD", "OPTIONS", "get"};
/// The routes of the API; {a} the graph's assistant, {t} the thread, {r} its run, {c} its
/// checkpoint. The first is empty: the target is the request's own.
constexpr std::string_view kRoutes[] = {"",
                                        "/ok",
                                        "/info",
                                        "/assistants",
                                        "/assistants/search",
                                        "/assistants/count",
                                        "/assistants/{a}",
                                        "/assistants/{a}/graph",
                                        "/assistants/{a}/versions",
                                        "/assistants/{a}/latest",
                                        "/threads",
                                        "/threads/search",
                                        "/threads/count",
                                        "/threads/{t}",
                                        "/threads/{t}/state",
                                        "/threads/{t}/state/{c}",
                                        "/threads/{t}/state/checkpoint",
                                        "/threads/{t}/history",
                                        "/threads/{t}/copy",
                                        "/threads/{t}/runs",
                                        "/threads/{t}/runs/stream",
                                        "/threads/{t}/runs/wait",
                                        "/threads/{t}/runs/{r}",
                                        "/threads/{t}/runs/{r}/join",
                                        "/threads/{t}/runs/{r}/stream",
                                        "/threads/{t}/runs/{r}/cancel",
                                        "/threads/{t}/stream",
                                        "/runs",
                                        "/runs/stream",
                                        "/runs/wait",
                                        "/runs/cancel",
                                        "/store/items",
                                        "/store/items/search",
                                        "/store/namespaces",
                                        "/studio"};

/// A served graph: agent -> ask (interrupts; answers with the resume value) -> END.
std::shared_ptr<const ServedGraph> asking_graph() {
  StateGraph<MessagesState> g;
  g.add_node("agent", [](const MessagesState& s) {
    return Update<MessagesState>{}.set<&MessagesState::messages>(
        ai("turn " + std::to_string(s.messages.size())));
  });
  g.add_node("ask", [](const MessagesState&) {
    const json answer = interrupt(json{{"question", "next?"}});
    return Update<MessagesState>{}.set<&MessagesState::messages>(
        human(answer.is_string() ? answer.get<std::string>()
                                 : answer.dump(-1, ' ', false, json::error_handler_t::replace)));
  });
  g.add_edge(START, "agent").add_edge("agent", "ask").add_edge("ask", END);
  return served_graph(std::move(g));
}

/// The API of a server serving asking_graph() as "agent", all in memory (what Server::start
/// builds, without the network).
struct InProcessServer {
  std::string assistant = system_assistant_id("agent");
  std::unique_ptr<server::Api> api;

  InProcessServer() {
    auto saver = std::make_shared<InMemorySaver>();
    auto store = std::make_shared<InMemoryStore>();
    const std::string now = iso_timestamp_now();
    json record = {{"assistant_id", assistant},
                   {"graph_id", "agent"},
                   {"config", json::object()},
                   {"context", json::object()},
                   {"metadata", {{"created_by", "system"}}},
                   {"name", "agent"},
                   {"description", nullptr},
                   {"version", 1},
                   {"created_at", now},
                   {"updated_at", now}};
    std::vector<server::GraphEntry> graphs{
        {"agent", asking_graph()->bind(saver, store), std::move(record)}};
    api = std::make_unique<server::Api>(std::move(graphs), std::make_shared<InMemoryStore>(), store,
                                        server::RunLimits{.max_runs = 64, .sync_workers = 2});
  }
};

/// Waits (at most a few seconds: a run may be delayed) for the end of the run a response
/// follows, reading its events as a client would.
void follow_to_end(const ApiResponse& response) {
  if (!response.follow) return;
  struct Wake {
    std::mutex mu;
    std::condition_variable cv;
    bool woken = false;
  };
  const auto wake = std::make_shared<Wake>();  // the channel may call back after this returns
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  std::size_t next = response.follow->from;
  for (;;) {
    {
      const std::lock_guard lock(wake->mu);
      wake->woken = false;
    }
    std::vector<server::RunChannel::Event> events;
    std::string result;
    const bool done = response.follow->channel->poll(next, events, &result, [wake] {
      const std::lock_guard lock(wake->mu);
      wake->woken = true;
      wake->cv.notify_all();
    });
    next += events.size();
    for (const auto& e : events) {
      if (!json::accept(e.data)) std::abort();  // every event's data is JSON
    }
    if (done) {
      if (response.follow->kind != server::RunFollow::Kind::done && !json::accept(result))
        std::abort();
      return;
    }
    if (!events.empty()) continue;
    std::unique_lock lock(wake->mu);
    if (!wake->cv.wait_until(lock, deadline, [&] { return wake->woken; })) return;
  }
}

/// Answers one request as Server does (the studio's files, then the API), and follows a run to
/// its end. A 5xx answer is a bug: nothing in memory fails.
ApiResponse answer(const InProcessServer& s, std::string method, std::string target,
                   std::string body, std::string last_event_id) {
  ApiResponse response;
  if (auto studio = server::studio_response(method, target)) {
    response = *std::move(studio);
  } else {
    ApiRequest request;
    try {
      request = server::parse_target(std::move(method), target, std::move(body));
      request.last_event_id = std::move(last_event_id);
      response = s.api->handle(request);
    } catch (const server::ApiError& e) {
      response = server::error_response(e.status, e.detail);
    }
  }
  if (response.status >= 500) {
    std::fprintf(stderr, "%u for %s: %s\n", response.status, target.c_str(), response.body.c_str());
    std::abort();
  }
  follow_to_end(response);
  return response;
}

/// `route` with its placeholders filled in.
std::string expand(std::string_view route, const InProcessServer& s, const std::string& run,
                   const std::string& checkpoint) {
  std::string out;
  for (std::size_t i = 0; i < route.size(); ++i) {
    if (route[i] == '{' && i + 2 < route.size() && route[i + 2] == '}') {
      const char name = route[i + 1];
      out += name == 'a'   ? s.assistant
             : name == 't' ? std::string(kThread)
             : name == 'r' ? run
                           : checkpoint;
      i += 2;
    } else {
      out += route[i];
    }
  }
  return out;
}

}  // namespace sg::fuzz::http

int sg::fuzz::http_request(const std::uint8_t* data, std::size_t size) {
  using namespace http;  // NOLINT: this target's helpers
  // Webhooks (a run's `webhook`) go to a proxy that refuses at once: never out of the machine.
  static const bool no_network = [] {
    for (const char* name : {"http_proxy", "https_proxy", "all_proxy", "HTTPS_PROXY", "ALL_PROXY"})
      setenv(name, "http://127.0.0.1:9", 1);
    unsetenv("no_proxy");
    unsetenv("NO_PROXY");
    return true;
  }();
  (void)no_network;
  const InProcessServer s;
  // A thread stopped at the interrupt, with a run and a checkpoint to name.
  const std::string thread(kThread);
  (void)answer(s, "POST", "/threads", json{{"thread_id", thread}}.dump(), "");
  (void)answer(s, "POST", "/threads/" + thread + "/runs/wait",
               json{{"assistant_id", "agent"}, {"input", {{"messages", {"hi"}}}}}.dump(), "");
  const json runs = json::parse(answer(s, "GET", "/threads/" + thread + "/runs", "", "").body);
  const json state = json::parse(answer(s, "GET", "/threads/" + thread + "/state", "", "").body);
  const std::string run = runs.at(0).at("run_id");
  const std::string checkpoint = state.at("checkpoint").at("checkpoint_id");

  // Requests: a method byte, a route byte, the rest of the target up to a newline (a tab in it
  // starts the Last-Event-ID header), the body; "\n--\n" between requests.
  std::string_view input(reinterpret_cast<const char*>(data), size);
  for (int count = 0; input.size() >= 2 && count < 8; ++count) {
    const std::size_t end = std::min(input.find(kSeparator), input.size());
    std::string_view request = input.substr(0, end);
    input.remove_prefix(std::min(end + kSeparator.size(), input.size()));
    if (request.size() < 2) continue;
    const auto method = kMethods[static_cast<std::uint8_t>(request[0]) % std::size(kMethods)];
    const auto route = kRoutes[static_cast<std::uint8_t>(request[1]) % std::size(kRoutes)];
    request.remove_prefix(2);
    const std::size_t newline = std::min(request.find('\n'), request.size());
    std::string_view target_rest = request.substr(0, newline);
    const std::string body(request.substr(std::min(newline + 1, request.size())));
    std::string last_event_id;
    if (const std::size_t tab = target_rest.find('\t'); tab != std::string_view::npos) {
      last_event_id = target_rest.substr(tab + 1);
      target_rest = target_rest.substr(0, tab);
    }
    const ApiResponse response =
        answer(s, std::string(method), expand(route, s, run, checkpoint) + std::string(target_rest),
               body, last_event_id);
    // A run created in the background: joined, as a client would, before the next request.
    if (response.status == 200 && response.content_type == "application/json") {
      const json created = json::parse(response.body, nullptr, false);
      if (created.is_object() && created.value("status", "") == "pending" &&
          created.contains("run_id") && created.contains("thread_id") &&
          created["run_id"].is_string() && created["thread_id"].is_string()) {
        (void)answer(s, "GET",
                     "/threads/" + created["thread_id"].get<std::string>() + "/runs/" +
                         created["run_id"].get<std::string>() + "/join",
                     "", "");
      }
    }
  }
  return 0;
}

SG_FUZZ_ENTRY(sg::fuzz::http_request)
