// SPDX-License-Identifier: MIT
// Fuzz target: state, update and Command JSON as the library and the server read them (see
// fuzz_targets.hpp).
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/server/served_graph.hpp>
#include <stategraph/stategraph.hpp>

#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_targets.hpp"

// Not an anonymous namespace: fuzz/replay compiles the targets in unity batches.
namespace sg::fuzz::updates {

using nlohmann::json;

/// A sum that saturates (the reducer is the target's own code: no overflow of its own).
std::int64_t saturating_sum(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out))
    return b > 0 ? std::numeric_limits<std::int64_t>::max()
                 : std::numeric_limits<std::int64_t>::min();
  return out;
}

/// Messages (add_messages) and channels with the other kinds of reducers: last value of a
/// string, a number, an optional and any JSON; a sum; lists with keep-slices.
struct FuzzState : MessagesState {
  std::string summary{};
  std::int64_t turns = 0;
  std::vector<std::string> notes{};
  std::vector<int> counts{};
  std::optional<double> score{};
  json extra{};
  static constexpr auto schema() {
    return std::tuple_cat(
        MessagesState::schema(),
        std::tuple{field<"summary">(&FuzzState::summary),
                   field<"turns">(&FuzzState::turns, saturating_sum),
                   field<"notes">(&FuzzState::notes, concat),
                   field<"counts">(&FuzzState::counts, concat), field<"score">(&FuzzState::score),
                   field<"extra">(&FuzzState::extra)});
  }
};

/// agent -> ask (interrupts; the resume value becomes a human message) -> END, served as the
/// server serves graphs, over one in-memory saver.
struct Graph {
  std::shared_ptr<InMemorySaver> saver = std::make_shared<InMemorySaver>();
  std::shared_ptr<const ServedGraph> served;

  Graph() {
    StateGraph<FuzzState> g;
    g.add_node("agent", [](const FuzzState& s) {
      return Update<FuzzState>{}
          .set<&FuzzState::messages>(ai("turn " + std::to_string(s.messages.size())))
          .set<&FuzzState::turns>(std::int64_t{1});
    });
    g.add_node("ask", [](const FuzzState&) {
      const json answer = interrupt(json{{"question", "next?"}});
      return Update<FuzzState>{}.set<&FuzzState::messages>(
          human(answer.is_string() ? answer.get<std::string>()
                                   : answer.dump(-1, ' ', false, json::error_handler_t::replace)));
    });
    g.add_edge(START, "agent").add_edge("agent", "ask").add_edge("ask", END);
    served = served_graph(g.compile({.checkpointer = saver}));
  }
};

/// Runs `run` on the thread `config` names, taking every event as the server does (converted to
/// JSON, written as text).
void run_served(const ServedGraph& served, ServedRun run) {
  run.modes = StreamMode::values | StreamMode::updates | StreamMode::messages;
  run.on_event = [](ServedEvent&& e) {
    (void)e.data.dump(-1, ' ', false, json::error_handler_t::replace);
  };
  (void)served.run(std::move(run));
}

}  // namespace sg::fuzz::updates

int sg::fuzz::state_update_json(const std::uint8_t* data, std::size_t size) {
  using namespace updates;  // NOLINT: this target's helpers
  const json input = json::parse(data, data + size, nullptr, false);
  if (input.is_discarded() || !input.is_object()) return 0;

  // A state: read, written, read again to the same JSON.
  if (const auto it = input.find("state"); it != input.end()) {
    try {
      const json written = state_to_json(state_from_json<FuzzState>(*it));
      if (state_to_json(state_from_json<FuzzState>(written)) != written) std::abort();
    } catch (const Error&) {
    }
  }
  // An update: read, written and read again to the same JSON, applied to a state.
  const auto update = input.find("update");
  if (update != input.end()) {
    try {
      Update<FuzzState> u = update_from_json<FuzzState>(*update);
      const json written = update_to_json(u);
      if (update_to_json(update_from_json<FuzzState>(written)) != written) std::abort();
      FuzzState state;
      state.messages = {human("hello", "m1"), ai("hi", "m2")};
      state.notes = {"a", "b"};
      apply_update(state, std::move(u), "agent");
      (void)state_from_json<FuzzState>(state_to_json(state));
    } catch (const Error&) {
    }
  }

  // As the server: a thread stopped at the interrupt, then the update as a node
  // (POST /threads/{id}/state), the command (resume, update, goto) or the input of a run.
  static const Graph graph;
  const ServedGraph& served = *graph.served;
  graph.saver->delete_thread("t");
  RunConfig config;
  config.thread_id = "t";
  run_served(served,
             {.input = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}}, .config = config});
  if (update != input.end()) {
    std::optional<std::string> as_node;
    if (const auto it = input.find("as_node"); it != input.end() && it->is_string())
      as_node = it->get<std::string>();
    try {
      (void)served.update_state(config, *update, as_node);
    } catch (const Error&) {
    }
  }
  const json command = input.value("command", json());
  const json run_input = input.value("input", json());
  if (!command.is_null() || !run_input.is_null()) {
    try {
      served.check_input(run_input, command);
    } catch (const Error&) {
      return 0;  // refused before the run, as the server does
    }
    try {
      run_served(served, {.input = run_input, .command = command, .config = config});
    } catch (const Error&) {
    }
  }
  return 0;
}

SG_FUZZ_ENTRY(sg::fuzz::state_update_json)
