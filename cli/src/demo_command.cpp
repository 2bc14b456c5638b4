// SPDX-License-Identifier: MIT
// `stategraph demo`: the summarize-and-trim graph over a scripted conversation of 40 turns whose
// first turns state facts and whose last turns ask about them, on a RocksDB thread that a second
// run continues.
#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/nodes/summarize_trim.hpp>

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <iostream>

#include "builtin_graphs.hpp"
#include "cli.hpp"

namespace sg::cli {

namespace {

/// Facts first, everyday chat in the middle, the questions about the facts last.
const std::vector<std::string>& demo_script() {
  static const std::vector<std::string> script = [] {
    std::vector<std::string> turns{"Hi! My name is Ada.", "I live in Lisbon.",
                                   "My dog is called Rex.", "I work as a ship engineer."};
    const char* days[] = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
    const char* things[] = {"repaired a pump", "walked by the river", "read about tides",
                            "cooked bacalhau", "fixed a bicycle",     "visited a museum"};
    for (int i = 0; i < 32; ++i) {
      turns.push_back(fmt::format("On {} I {} ({}).", days[i % 6], things[(i / 6 + i) % 6], i + 1));
    }
    for (const char* q :
         {"What is my name?", "Where do I live?", "What is my dog called?", "What is my work?"})
      turns.emplace_back(q);
    return turns;
  }();
  return script;
}

std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) {
  g_interrupted.store(true);
}

struct DemoArgs {
  std::string db = "stategraph-data";
  std::string thread = "demo";
  bool fresh = false;
  int turns = 0;  // 0: all that remain
  bool json = false;
};

std::string bar(std::size_t done, std::size_t total) {
  constexpr std::size_t kWidth = 20;
  const std::size_t filled = total == 0 ? kWidth : done * kWidth / total;
  return "[" + std::string(filled, '#') + std::string(kWidth - filled, '.') + "]";
}

void run_demo(const DemoArgs& args) {
  auto saver = RocksDbSaver::open(args.db);
  if (args.fresh) saver->delete_thread(args.thread);
  const SummaryTrimOptions options = demo_graph_options();
  const auto app =
      summarize_and_trim_graph(default_chat_model(), options).compile({.checkpointer = saver});
  RunConfig config;
  config.thread_id = args.thread;
  const auto& script = demo_script();
  const auto existing = app.get_state(config);
  auto done = existing ? static_cast<std::size_t>(existing->values.turns) : std::size_t{0};
  const bool terminal = isatty(STDOUT_FILENO) == 1;
  if (!args.json) {
    std::cout << fmt::format("thread '{}' in {}: {}\n", args.thread, args.db,
                             done == 0 ? "new" : fmt::format("continuing after turn {}", done));
  }
  if (done >= script.size() && !args.json) {
    std::cout << fmt::format("all {} turns are done; --fresh starts over\n", script.size());
  }
  g_interrupted = false;
  auto previous = std::signal(SIGINT, on_sigint);
  std::size_t ran = 0;
  while (done < script.size() && !g_interrupted &&
         (args.turns <= 0 || ran < static_cast<std::size_t>(args.turns))) {
    const std::string& text = script[done];
    auto update = Update<SummaryTrimState>{}.set<&SummaryTrimState::messages>(human(text));
    const SummaryTrimState state = app.invoke(std::move(update), config).state;
    ++done;
    ++ran;
    const auto context = summary_trim_context(state, options);
    const std::int64_t tokens = options.token_counter(context);
    const std::string reply = state.messages.empty() ? "" : state.messages.back().text();
    if (args.json) {
      write_json({{"turn", done},
                  {"messages_kept", state.messages.size()},
                  {"context_tokens", tokens},
                  {"summary_chars", state.summary.size()},
                  {"human", text},
                  {"ai", reply}},
                 -1);
      continue;
    }
    std::cout << fmt::format(
        "{}turn {:>2}/{} | kept {:>2} msgs | {:>3} tokens in context | "
        "summary {:>4} chars\n  you: {}\n  ai:  {}\n",
        terminal ? bar(done, script.size()) + " " : "", done, script.size(), state.messages.size(),
        tokens, state.summary.size(), text, reply);
    std::cout.flush();  // each turn shows as it ends, also when stdout is a pipe or file
  }
  std::signal(SIGINT, previous);
  if (g_interrupted) {
    std::cout << fmt::format("stopped after turn {}; run again to continue\n", done);
    return;
  }
  if (args.json) return;
  const auto history = app.get_state_history(config);
  std::cout << fmt::format("\ncheckpoint history of thread '{}': {} checkpoints, newest first\n",
                           args.thread, history.size());
  for (std::size_t i = 0; i < history.size() && i < 5; ++i) {
    const auto& h = history[i];
    std::cout << fmt::format("  step {:>3}  {:<6} next: {}\n", h.metadata.value("step", -1),
                             h.metadata.value("source", std::string()), next_text(h.next));
  }
  if (history.empty()) return;
  // The newest checkpoint ends a finished run: its values are the thread's state.
  const SummaryTrimState& last = history.front().values;
  if (last.summary.empty()) {
    std::cout << fmt::format(
        "\nsummary: none yet (the thread's messages are under the {}-token budget)\n",
        options.summarize_after_tokens);
  } else {
    std::cout << fmt::format("\nsummary ({} chars): {}\n", last.summary.size(), last.summary);
  }
  // Where the facts of the first turns are now: in the summary that replaced those turns, still
  // in the messages the thread keeps, or lost.
  std::string where;
  const char* facts[] = {"Ada", "Lisbon", "Rex", "ship engineer"};  // said at turns 1 to 4
  for (std::size_t i = 0; i < std::size(facts); ++i) {
    const std::string fact = facts[i];
    const bool in_messages =
        std::any_of(last.messages.begin(), last.messages.end(), [&](const Message& m) {
          return m.type == MessageType::human && m.text().find(fact) != std::string::npos;
        });
    const char* place = done <= i                                      ? "not said yet"
                        : last.summary.find(fact) != std::string::npos ? "in the summary"
                        : in_messages                                  ? "in the kept messages"
                                                                       : "lost";
    where += fmt::format("{}{} ({})", where.empty() ? "" : ", ", fact, place);
  }
  std::cout << "facts of turns 1-4: " << where << '\n';
}

}  // namespace

void add_demo_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<DemoArgs>();
  auto* demo = app.add_subcommand(
      "demo",
      "The summarize-and-trim graph over a 40-turn conversation (facts early, questions late), "
      "persisted in RocksDB; a second run continues the thread");
  demo->add_option("--db", args->db, "RocksDB directory")->capture_default_str();
  demo->add_option("--thread", args->thread, "Thread id")->capture_default_str();
  demo->add_flag("--fresh", args->fresh, "Delete the thread first and start over");
  demo->add_option("--turns", args->turns, "Run at most this many turns now (0: all)")
      ->check(CLI::NonNegativeNumber);
  demo->add_flag("--json", args->json, "One JSON line per turn");
  demo->callback([&action, args] { action = [args] { run_demo(*args); }; });
}

}  // namespace sg::cli
