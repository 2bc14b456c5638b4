// SPDX-License-Identifier: MIT
// The persistence scenarios of WORKLOADS.md: loop (b), summarize_trim (c), checkpoint_io (e),
// each with the in-memory saver ("memory") and RocksDbSaver ("rocksdb"). As the workloads
// specify, runs use LangGraph's default durability, "async"; "rocksdb_sync" runs loop and
// summarize_trim with RocksDbSaver's own default, "sync" (every superstep durable before the
// next starts), which LangGraph.js's numbers do not pay for.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/postgres/pg.hpp>
#include <stategraph/postgres/postgres_saver.hpp>
#include <stategraph/stategraph.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <stdexcept>

#include "bench_common.hpp"

namespace {

using bench::Json;

constexpr std::uint32_t kLoopSeed = 0x10000000;
constexpr std::uint32_t kSummarizeSeed = 0x20000000;
constexpr std::uint32_t kCheckpointSeed = 0x30000000;

/// A saver of one variant, and how to report its storage.
/// The database of the postgres variants: SG_BENCH_POSTGRES, a libpq connection string
/// (bench/postgres/run.sh starts a throwaway cluster and sets it).
std::string bench_postgres() {
  const char* conninfo = std::getenv("SG_BENCH_POSTGRES");
  if (conninfo == nullptr || *conninfo == '\0') {
    throw std::runtime_error(
        "the postgres variants need SG_BENCH_POSTGRES (a libpq connection string); "
        "bench/postgres/run.sh sets it");
  }
  return conninfo;
}

struct Saver {
  std::shared_ptr<sg::KvCheckpointer> saver;
  std::shared_ptr<sg::RocksDbSaver> rocks;
  std::shared_ptr<sg::InMemorySaver> memory;
  std::string postgres_table;  // the postgres variants' table
  std::string variant;

  static Saver make(const std::string& variant, const std::string& name) {
    Saver s;
    s.variant = variant;
    if (variant.rfind("postgres", 0) == 0) {
      s.postgres_table = "bench_" + name;
      sg::pg::Connection c(bench_postgres());
      (void)c.exec("DROP TABLE IF EXISTS " + sg::pg::quote_identifier(s.postgres_table));
      // postgres_exclusive: the table held by one process (PostgresOptions::exclusive).
      s.saver = sg::PostgresSaver::open(
          bench_postgres(),
          {.table = s.postgres_table, .exclusive = variant == "postgres_exclusive"});
    } else if (variant == "rocksdb" || variant == "rocksdb_sync") {
      s.rocks = sg::RocksDbSaver::open(bench::fresh_dir(name));
      s.saver = s.rocks;
    } else {
      s.memory = std::make_shared<sg::InMemorySaver>();
      s.saver = s.memory;
    }
    return s;
  }

  /// Checkpoints and writes stored, and bytes: held in memory, or of the database directory.
  Json storage() const {
    std::size_t checkpoints = 0;
    std::size_t writes = 0;
    sg::ListOptions all;
    all.include_values = false;
    for (const auto& t : saver->list(all)) {
      ++checkpoints;
      writes += t.pending_writes.size();
    }
    Json out;
    out["checkpoints"] = checkpoints;
    out["writes"] = writes;
    if (rocks) {
      out["disk_bytes"] = rocks->disk_bytes();
    } else if (!postgres_table.empty()) {
      sg::pg::Connection c(bench_postgres());
      const auto r = c.exec(
          "SELECT pg_total_relation_size($1::regclass), pg_relation_size($1::regclass), "
          "(SELECT count(*) FROM " +
              sg::pg::quote_identifier(postgres_table) + ")",
          sg::pg::Params().text(sg::pg::quote_identifier(postgres_table)));
      out["total_bytes"] = r.get_int(0, 0);  // table, index and TOAST
      out["heap_bytes"] = r.get_int(0, 1);
      out["rows"] = r.get_int(0, 2);
    } else {
      out["stored_bytes"] = memory->stored_bytes();
    }
    return out;
  }

  /// The durability of the runs: async (the workloads' LangGraph default), or sync.
  [[nodiscard]] sg::Durability durability() const {
    return variant == "rocksdb_sync" || variant == "postgres_sync" ? sg::Durability::sync
                                                                   : sg::Durability::async;
  }
  [[nodiscard]] std::string durability_name() const {
    return durability() == sg::Durability::sync ? "sync" : "async";
  }
};

std::string pad5(std::size_t i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%05zu", i);
  return buf;
}

std::string reverse(std::string s) {
  std::reverse(s.begin(), s.end());
  return s;
}

double ms_between(bench::Clock::time_point a, bench::Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

/// The fields every loop / summarize_trim unit reports.
Json run_fields(std::size_t ops, const char* label, double wall, double cpu, double load,
                const std::string& variant, const Saver& saver) {
  Json r = bench::rate(ops, wall);
  r["ops_label"] = label;
  r["cpu_s"] = bench::round_to(cpu, 3);
  r["loadavg_1m_at_start"] = load;
  r["saver"] = variant;
  r["durability"] = saver.durability_name();
  return r;
}

// ---------------------------------------------------------------------------------- loop

sg::CompiledGraph<sg::MessagesState> loop_graph(std::shared_ptr<sg::Checkpointer> saver,
                                                std::size_t steps,
                                                std::vector<bench::Clock::time_point>* entries) {
  auto node = [entries](bool ai) {
    return [entries, ai](const sg::MessagesState& s) {
      const std::size_t i = s.messages.size();
      if (entries) entries->push_back(bench::Clock::now());
      std::string id = "m-" + pad5(i);
      std::string text = bench::text_for(kLoopSeed + static_cast<std::uint32_t>(i), 200);
      sg::Message message =
          ai ? sg::ai(std::move(text), std::move(id)) : sg::human(std::move(text), std::move(id));
      sg::Update<sg::MessagesState> update;
      update.set<&sg::MessagesState::messages>(std::move(message));
      return update;
    };
  };
  auto route = [steps](const char* next) {
    return [steps, next](const sg::MessagesState& s) {
      return s.messages.size() >= steps + 1 ? sg::END : next;
    };
  };
  sg::StateGraph<sg::MessagesState> g;
  g.add_node("agent", node(true)).add_node("tool", node(false));
  g.add_edge(sg::START, "agent");
  g.add_conditional_edges("agent", route("tool"), {"tool", sg::END});
  g.add_conditional_edges("tool", route("agent"), {"agent", sg::END});
  return g.compile({.checkpointer = std::move(saver)});
}

sg::Update<sg::MessagesState> loop_input() {
  return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(
      sg::human(bench::text_for(kLoopSeed, 200), "m-00000"));
}

Json run_loop(const std::string& variant) {
  constexpr std::size_t kSteps = 1000;
  constexpr std::size_t kWindow = 100;
  {
    auto warm = Saver::make(variant, "loop_warmup");
    sg::RunConfig config;
    config.thread_id = "warmup";
    config.callbacks = bench::trace_callbacks();
    config.recursion_limit = 100000;
    config.durability = warm.durability();
    (void)loop_graph(warm.saver, 100, nullptr).invoke(loop_input(), config);
  }
  auto saver = Saver::make(variant, "loop");
  std::vector<bench::Clock::time_point> entries;
  entries.reserve(kSteps);
  const auto app = loop_graph(saver.saver, kSteps, &entries);
  sg::RunConfig config;
  config.thread_id = "loop-1";
  config.callbacks = bench::trace_callbacks();
  config.recursion_limit = 100000;
  config.durability = saver.durability();
  const double l0 = bench::load1();
  const double c0 = bench::cpu_seconds();
  const auto t0 = bench::Clock::now();
  const auto out = app.invoke(loop_input(), config);
  const double wall = bench::seconds_since(t0);
  const double cpu = bench::cpu_seconds() - c0;
  if (out.state.messages.size() != kSteps + 1)
    throw std::runtime_error("loop: wrong message count");
  if (entries.size() != kSteps) throw std::runtime_error("loop: wrong node execution count");
  const double first = ms_between(entries[0], entries[kWindow]);
  const double last = ms_between(entries[kSteps - 1 - kWindow], entries[kSteps - 1]);
  Json r = run_fields(kSteps, "supersteps", wall, cpu, l0, variant, saver);
  r["supersteps_per_s"] = r["ops_per_s"];
  r["warmup_supersteps"] = 100;
  r["first_100_steps_ms"] = bench::round_to(first, 2);
  r["last_100_steps_ms"] = bench::round_to(last, 2);
  r["last_over_first"] = bench::round_to(last / first, 2);
  r["final_messages"] = out.state.messages.size();
  r["final_digest"] = bench::messages_digest(out.state.messages);
  r["storage"] = saver.storage();
  r["peak_rss_mb"] = bench::peak_rss_mb();
  return r;
}

const bench::Register loop_memory("loop:memory", [] { return run_loop("memory"); });
const bench::Register loop_postgres("loop:postgres", [] { return run_loop("postgres"); });
const bench::Register loop_postgres_exclusive("loop:postgres_exclusive",
                                              [] { return run_loop("postgres_exclusive"); });
const bench::Register loop_postgres_sync("loop:postgres_sync",
                                         [] { return run_loop("postgres_sync"); });
const bench::Register loop_rocksdb("loop:rocksdb", [] { return run_loop("rocksdb"); });
const bench::Register loop_rocksdb_sync("loop:rocksdb_sync",
                                        [] { return run_loop("rocksdb_sync"); });

// ------------------------------------------------------------------------- summarize_trim

struct Summary : sg::MessagesState {
  std::string summary{};
  static constexpr auto schema() {
    return std::tuple_cat(sg::MessagesState::schema(),
                          std::tuple{sg::field<"summary">(&Summary::summary)});
  }
};

sg::CompiledGraph<Summary> summarize_graph(std::shared_ptr<sg::Checkpointer> saver) {
  sg::StateGraph<Summary> g;
  g.add_node("call_model", [](const Summary& s) {
    auto human = std::find_if(s.messages.rbegin(), s.messages.rend(), [](const sg::Message& m) {
      return m.type == sg::MessageType::human;
    });
    return sg::Update<Summary>{}.set<&Summary::messages>(
        sg::ai(reverse(human->content.str()), "a-" + human->id.substr(2)));
  });
  g.add_node("summarize_conversation", [](const Summary& s) {
    std::string parts;
    for (std::size_t i = 0; i < s.messages.size(); ++i) {
      if (i) parts += '\n';
      parts += s.messages[i].content.str().substr(0, 40);
    }
    std::string summary = s.summary.empty() ? parts : s.summary + "\n" + parts;
    if (summary.size() > 500) summary = summary.substr(summary.size() - 500);
    std::vector<sg::Message> remove;
    for (std::size_t i = 0; i + 2 < s.messages.size(); ++i)
      remove.push_back(sg::remove_message(s.messages[i].id));
    return sg::Update<Summary>{}
        .set<&Summary::summary>(std::move(summary))
        .set<&Summary::messages>(std::move(remove));
  });
  g.add_edge(sg::START, "call_model");
  g.add_conditional_edges(
      "call_model",
      [](const Summary& s) { return s.messages.size() > 6 ? "summarize_conversation" : sg::END; },
      {"summarize_conversation", sg::END});
  g.add_edge("summarize_conversation", sg::END);
  return g.compile({.checkpointer = std::move(saver)});
}

sg::Update<Summary> turn_input(int t) {
  return sg::Update<Summary>{}.set<&Summary::messages>(
      sg::human(bench::text_for(kSummarizeSeed + static_cast<std::uint32_t>(t), 150),
                "h-" + std::to_string(t)));
}

Json run_summarize(const std::string& variant) {
  constexpr int kTurns = 500;
  constexpr int kWindow = 100;
  {
    auto warm = Saver::make(variant, "summarize_trim_warmup");
    const auto app = summarize_graph(warm.saver);
    sg::RunConfig config;
    config.thread_id = "warmup";
    config.callbacks = bench::trace_callbacks();
    config.durability = warm.durability();
    for (int t = 0; t < 50; ++t) (void)app.invoke(turn_input(t), config);
  }
  auto saver = Saver::make(variant, "summarize_trim");
  const auto app = summarize_graph(saver.saver);
  sg::RunConfig config;
  config.thread_id = "sum-1";
  config.callbacks = bench::trace_callbacks();
  config.durability = saver.durability();
  std::vector<double> turn_ms;
  const double l0 = bench::load1();
  const double c0 = bench::cpu_seconds();
  const auto t0 = bench::Clock::now();
  for (int t = 0; t < kTurns; ++t) {
    const auto a = bench::Clock::now();
    (void)app.invoke(turn_input(t), config);
    turn_ms.push_back(ms_between(a, bench::Clock::now()));
  }
  const double wall = bench::seconds_since(t0);
  const double cpu = bench::cpu_seconds() - c0;
  const auto state = app.get_state(config);
  const auto& messages = state->values.messages;
  const std::string& summary = state->values.summary;
  double first = 0;
  double last = 0;
  for (int i = 0; i < kWindow; ++i) {
    first += turn_ms[static_cast<std::size_t>(i)];
    last += turn_ms[static_cast<std::size_t>(kTurns - kWindow + i)];
  }
  Json ids = Json::array();
  for (const auto& m : messages) ids.push_back(m.id);
  Json r = run_fields(kTurns, "turns", wall, cpu, l0, variant, saver);
  r["turns_per_s"] = r["ops_per_s"];
  r["warmup_turns"] = 50;
  r["first_100_turns_ms"] = bench::round_to(first, 2);
  r["last_100_turns_ms"] = bench::round_to(last, 2);
  r["final_messages"] = messages.size();
  r["final_message_ids"] = ids;
  r["final_digest"] = bench::messages_digest(messages);
  r["summary_length"] = summary.size();
  r["summary_sha256"] = bench::sha256_hex(summary);
  r["summary_head"] = summary.substr(0, 60);
  r["storage"] = saver.storage();
  r["peak_rss_mb"] = bench::peak_rss_mb();
  return r;
}

const bench::Register summarize_memory("summarize_trim:memory",
                                       [] { return run_summarize("memory"); });
const bench::Register summarize_rocksdb("summarize_trim:rocksdb",
                                        [] { return run_summarize("rocksdb"); });
const bench::Register summarize_rocksdb_sync("summarize_trim:rocksdb_sync",
                                             [] { return run_summarize("rocksdb_sync"); });
const bench::Register summarize_postgres("summarize_trim:postgres",
                                         [] { return run_summarize("postgres"); });
const bench::Register summarize_postgres_exclusive("summarize_trim:postgres_exclusive", [] {
  return run_summarize("postgres_exclusive");
});

// -------------------------------------------------------------------------- checkpoint_io

std::string checkpoint_id_for(std::size_t i) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "1f000000-0000-6000-8000-%012zx", i);
  return buf;
}

std::string iso_for(std::size_t seconds_after_2025) {
  const std::time_t t =
      1735689600 + static_cast<std::time_t>(seconds_after_2025);  // 2025-01-01T00:00:00Z
  std::tm utc{};
  gmtime_r(&t, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S.000Z", &utc);
  return buf;
}

Json run_checkpoint_io(const std::string& variant) {
  constexpr std::size_t kThreads = 50;
  constexpr std::size_t kPuts = 5000;
  constexpr std::size_t kGets = 5000;
  struct Item {
    sg::CheckpointConfig config;
    sg::Checkpoint checkpoint;
    Json metadata;
    sg::ChannelVersions new_versions;
  };
  std::vector<Item> items;
  items.reserve(kPuts);
  for (std::size_t i = 0; i < kPuts; ++i) {
    const std::size_t thread = i % kThreads;
    const auto step = static_cast<std::int64_t>(i / kThreads);
    Item item;
    item.config.thread_id = "t-" + std::to_string(thread);
    if (i >= kThreads) item.config.checkpoint_id = checkpoint_id_for(i - kThreads);
    item.checkpoint.v = 4;
    item.checkpoint.id = checkpoint_id_for(i);
    item.checkpoint.ts = iso_for(i);
    item.checkpoint.channel_values = {
        {"payload", bench::text_for(kCheckpointSeed + static_cast<std::uint32_t>(i), 2048)},
        {"step", step}};
    item.checkpoint.channel_versions = {{"payload", step + 1}, {"step", step + 1}};
    item.metadata = {{"source", "loop"}, {"step", step}, {"parents", Json::object()}};
    item.new_versions = item.checkpoint.channel_versions;
    items.push_back(std::move(item));
  }
  auto saver = Saver::make(variant, "checkpoint_io");
  const double l0 = bench::load1();
  const double c0 = bench::cpu_seconds();
  const auto t0 = bench::Clock::now();
  for (const auto& item : items) {
    (void)saver.saver->put(item.config, item.checkpoint, nlohmann::json(item.metadata),
                           item.new_versions);
  }
  const auto t1 = bench::Clock::now();
  const double cpu_puts = bench::cpu_seconds() - c0;
  const double c1 = bench::cpu_seconds();
  std::size_t payload_chars = 0;
  for (std::size_t j = 0; j < kGets; ++j) {
    const std::size_t thread = j % kThreads;
    const auto t = saver.saver->get_tuple({"t-" + std::to_string(thread), "", ""});
    if (!t || t->checkpoint.id != checkpoint_id_for(kPuts - kThreads + thread)) {
      throw std::runtime_error("checkpoint_io: wrong latest checkpoint");
    }
    payload_chars += t->checkpoint.channel_values["payload"].get_ref<const std::string&>().size();
  }
  const auto t2 = bench::Clock::now();
  const double cpu_gets = bench::cpu_seconds() - c1;
  sg::ListOptions list;
  list.thread_id = "t-0";
  list.checkpoint_ns = "";
  const auto listed = saver.saver->list(list);
  const auto t3 = bench::Clock::now();
  if (listed.size() != kPuts / kThreads) throw std::runtime_error("checkpoint_io: list size");
  for (std::size_t k = 1; k < listed.size(); ++k) {
    if (!(listed[k - 1].checkpoint.id > listed[k].checkpoint.id))
      throw std::runtime_error("checkpoint_io: list order");
  }
  const double put_s = std::chrono::duration<double>(t1 - t0).count();
  const double get_s = std::chrono::duration<double>(t2 - t1).count();
  Json r;
  r["ops_label"] = "puts/gets";
  r["loadavg_1m_at_start"] = l0;
  Json puts = bench::rate(kPuts, put_s);
  puts["cpu_s"] = bench::round_to(cpu_puts, 3);
  Json gets = bench::rate(kGets, get_s);
  gets["cpu_s"] = bench::round_to(cpu_gets, 3);
  r["puts"] = puts;
  r["gets"] = gets;
  r["list"] = {{"checkpoints", listed.size()},
               {"wall_ms", bench::round_to(ms_between(t2, t3), 3)},
               {"first", listed.front().checkpoint.id},
               {"last", listed.back().checkpoint.id}};
  r["puts_per_s"] = bench::round_to(kPuts / put_s, 1);
  r["gets_per_s"] = bench::round_to(kGets / get_s, 1);
  r["get_payload_chars_total"] = payload_chars;
  r["saver"] = variant;
  r["storage"] = saver.storage();
  r["peak_rss_mb"] = bench::peak_rss_mb();
  return r;
}

const bench::Register io_memory("checkpoint_io:memory", [] { return run_checkpoint_io("memory"); });
const bench::Register io_rocksdb("checkpoint_io:rocksdb",
                                 [] { return run_checkpoint_io("rocksdb"); });

}  // namespace
