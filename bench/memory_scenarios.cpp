// SPDX-License-Identifier: MIT
// memory_conversation: the summarize-and-trim chat of the memory nodes (issue 13) over 10,000
// turns on RocksDB with LocalModel: the model sees the summary plus the turns that fit 512
// tokens (trim_messages); past six messages, summarize_conversation extends the summary and
// removes all but the last two. Reported: turns/s, bytes written per turn early and late (flat:
// the storage is incremental), peak RSS. The LangGraph.js side (bench/js/memory_conversation.mjs)
// runs LangGraph's summarization how-to with an instant fake model on SqliteSaver.
#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/nodes/summarize.hpp>
#include <stategraph/stategraph.hpp>

#include "bench_common.hpp"

namespace {

using bench::Json;

constexpr std::uint32_t kHumanSeed = 0x20000000;
constexpr int kTurns = 10'000;
constexpr int kWindow = 1'000;

struct Chat : sg::MessagesState {
  std::string summary{};
  static constexpr auto schema() {
    return std::tuple_cat(sg::MessagesState::schema(),
                          std::tuple{sg::field<"summary">(&Chat::summary)});
  }
};

sg::CompiledGraph<Chat> chat_graph(std::shared_ptr<sg::Checkpointer> saver) {
  auto model = std::make_shared<sg::LocalModel>();
  sg::TrimOptions trim;
  trim.max_tokens = 512;
  trim.include_system = true;
  trim.start_on = {sg::MessageType::human};
  trim.end_on = {sg::MessageType::human};
  sg::StateGraph<Chat> g;
  g.add_node("call_model", [model, trim](const Chat& s) {
    std::vector<sg::Message> context;
    if (!s.summary.empty())
      context.push_back(sg::system("Summary of conversation earlier: " + s.summary));
    context.insert(context.end(), s.messages.begin(), s.messages.end());
    const sg::Message reply = model->invoke(sg::trim_messages(context, trim));
    return sg::Update<Chat>{}.set<&Chat::messages>(reply);
  });
  g.add_node("summarize_conversation", sg::summarize_conversation<Chat>(model));
  g.add_edge(sg::START, "call_model");
  g.add_conditional_edges("call_model", sg::should_summarize<Chat>(6),
                          {"summarize_conversation", sg::END});
  g.add_edge("summarize_conversation", sg::END);
  return g.compile({.checkpointer = std::move(saver)});
}

sg::Update<Chat> turn_input(int t) {
  return sg::Update<Chat>{}.set<&Chat::messages>(
      sg::human(bench::text_for(kHumanSeed + static_cast<std::uint32_t>(t), 150) + ".",
                "h-" + std::to_string(t)));
}

Json run_memory_conversation() {
  {
    auto warm = sg::RocksDbSaver::open(bench::fresh_dir("memory_conversation_warmup"));
    const auto app = chat_graph(warm);
    sg::RunConfig config;
    config.thread_id = "warmup";
    config.durability = sg::Durability::async;
    for (int t = 0; t < 50; ++t) (void)app.invoke(turn_input(t), config);
  }
  auto saver = sg::RocksDbSaver::open(bench::fresh_dir("memory_conversation"));
  const auto app = chat_graph(saver);
  sg::RunConfig config;
  config.thread_id = "memory-1";
  config.durability = sg::Durability::async;  // LangGraph's default, as the JS side runs
  std::vector<std::uint64_t> bytes_at;        // bytes written before turn t
  std::vector<double> seconds_at;
  bytes_at.reserve(kTurns + 1);
  const double c0 = bench::cpu_seconds();
  const auto t0 = bench::Clock::now();
  for (int t = 0; t < kTurns; ++t) {
    bytes_at.push_back(saver->bytes_written());
    seconds_at.push_back(bench::seconds_since(t0));
    (void)app.invoke(turn_input(t), config);
  }
  const double wall = bench::seconds_since(t0);
  const double cpu = bench::cpu_seconds() - c0;
  bytes_at.push_back(saver->bytes_written());
  seconds_at.push_back(wall);
  auto per_turn = [&](int from) {
    const auto f = static_cast<std::size_t>(from);
    return static_cast<double>(bytes_at[f + kWindow] - bytes_at[f]) / kWindow;
  };
  const auto state = app.get_state(config);
  Json r = bench::rate(kTurns, wall);
  r["turns_per_s"] = r["ops_per_s"];
  r["cpu_s"] = bench::round_to(cpu, 3);
  r["saver"] = "rocksdb";
  r["durability"] = "async";
  r["model"] = "LocalModel";
  r["bytes_per_turn_first_1000"] = bench::round_to(per_turn(0), 1);
  r["bytes_per_turn_last_1000"] = bench::round_to(per_turn(kTurns - kWindow), 1);
  r["bytes_last_over_first"] = bench::round_to(per_turn(kTurns - kWindow) / per_turn(0), 3);
  r["first_1000_turns_s"] = bench::round_to(seconds_at[kWindow], 3);
  r["last_1000_turns_s"] =
      bench::round_to(wall - seconds_at[static_cast<std::size_t>(kTurns - kWindow)], 3);
  r["bytes_written"] = saver->bytes_written();
  r["final_messages"] = state->values.messages.size();
  r["summary_length"] = state->values.summary.size();
  saver->flush();
  r["disk_bytes"] = saver->disk_bytes();
  r["peak_rss_mb"] = bench::peak_rss_mb();
  return r;
}

const bench::Register memory_conversation("memory_conversation",
                                          [] { return run_memory_conversation(); });

}  // namespace
