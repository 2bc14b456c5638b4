// SPDX-License-Identifier: MIT
// Store benchmarks (issue 5): put throughput for 1M items, filtered search by namespace prefix
// over 1M items (p50 / p99), semantic top-10 over 100k items of 384 dimensions (p50, with
// recall@10 of the approximate index against exact search), and the first query after reopening
// 100k indexed items. RocksDbStore in a fresh directory; the `:memory` units use InMemoryStore.
#include <stategraph/store/memory_store.hpp>
#include <stategraph/store/rocksdb_store.hpp>

#include <algorithm>
#include <random>

#include "bench_common.hpp"

namespace {

using Json = nlohmann::json;

constexpr int kUsers = 1000;  // namespaces ("users", "u<k>", "notes") of 1000 items each

std::shared_ptr<sg::KvStore> open_store(const std::string& variant, const std::string& name,
                                        std::optional<sg::IndexConfig> index = std::nullopt) {
  if (variant == "memory") return std::make_shared<sg::InMemoryStore>(sg::TtlConfig{}, index);
  return sg::RocksDbStore::open(bench::fresh_dir(name), {.index = std::move(index)});
}

/// prefix + n (written out: GCC 12 warns falsely about `label("u", n)` at -O3).
std::string label(const char* prefix, long n) {
  std::string out(prefix);
  out += std::to_string(n);
  return out;
}

double percentile(std::vector<double> xs, double p) {
  std::sort(xs.begin(), xs.end());
  return xs[static_cast<std::size_t>(p * static_cast<double>(xs.size() - 1))];
}

/// 1M puts, then 200 filtered searches by namespace prefix.
Json run_put_search(const std::string& variant, int items) {
  auto store = open_store(variant, "store-put");
  const double l0 = bench::load1();
  const auto t0 = bench::Clock::now();
  for (int i = 0; i < items; ++i) {
    const int user = i % kUsers;
    store->put(
        {"users", label("u", user), "notes"}, label("n", i),
        {{"i", i}, {"kind", i % 10 == 0 ? "todo" : "note"}, {"text", label("note number ", i)}});
  }
  const double put_s = bench::seconds_since(t0);
  std::vector<double> ms;
  std::mt19937 rng(7);
  std::size_t hits = 0;
  for (int q = 0; q < 200; ++q) {
    const int user = static_cast<int>(rng() % kUsers);
    const auto s0 = bench::Clock::now();
    const auto found = store->search(
        {.prefix = {"users", label("u", user)}, .filter = {{"kind", "todo"}}, .limit = 10});
    ms.push_back(bench::seconds_since(s0) * 1000);
    hits += found.size();
  }
  Json r = bench::rate(items, put_s);
  r["ops_label"] = "puts";
  r["store"] = variant;
  r["loadavg_1m_at_start"] = l0;
  r["items"] = items;
  r["puts_per_s"] = r["ops_per_s"];
  r["search_prefix_items"] = items / kUsers;
  r["search_filter"] = {{"kind", "todo"}};
  r["search_p50_ms"] = bench::round_to(percentile(ms, 0.5), 3);
  r["search_p99_ms"] = bench::round_to(percentile(ms, 0.99), 3);
  r["search_hits_per_query"] = static_cast<double>(hits) / 200.0;
  r["peak_rss_mb"] = bench::peak_rss_mb();
  return r;
}

/// `n` words drawn by `rng` from a fixed vocabulary: the texts of the semantic benchmarks.
std::string random_sentence(std::mt19937& rng, int n) {
  static const std::vector<std::string> words{
      "tea",    "coffee", "mountain", "river",  "music",   "chess",   "garden", "python",
      "rust",   "cinema", "bread",    "violin", "soccer",  "ocean",   "winter", "summer",
      "travel", "paris",  "tokyo",    "novel",  "poetry",  "running", "yoga",   "pizza",
      "sushi",  "jazz",   "guitar",   "forest", "desert",  "history", "math",   "physics",
      "dog",    "cat",    "horse",    "bird",   "cooking", "baking",  "wine",   "cheese"};
  std::string s;
  for (int w = 0; w < n; ++w) {
    if (w) s += ' ';
    s += words[rng() % words.size()];
  }
  return s;
}

/// 100k items embedded in 384 dimensions; 100 queries, approximate (HNSW) and exact.
Json run_semantic(const std::string& variant, int items) {
  std::mt19937 rng(11);
  auto embeddings = std::make_shared<sg::HashedNgramEmbeddings>(384);
  auto approx = open_store(variant, "store-semantic", sg::IndexConfig{embeddings, {"text"}, 20000});
  auto exact = std::make_shared<sg::InMemoryStore>(
      sg::TtlConfig{}, sg::IndexConfig{embeddings, {"text"}, static_cast<std::size_t>(items) + 1});
  const double l0 = bench::load1();
  const auto t0 = bench::Clock::now();
  for (int i = 0; i < items; ++i) {
    const Json value = {{"text", random_sentence(rng, 6)}};
    approx->put({"memories", label("u", i % 100)}, label("m", i), value);
    exact->put({"memories", label("u", i % 100)}, label("m", i), value);
  }
  const double load_s = bench::seconds_since(t0);
  // The first query starts the index build in the background (answering exactly meanwhile);
  // the queries below are timed once the index is in.
  const auto b0 = bench::Clock::now();
  (void)approx->search({.prefix = {"memories"}, .query = "tea garden"});
  const double first_query_ms = bench::seconds_since(b0) * 1000;
  approx->wait_for_index();
  const double build_s = bench::seconds_since(b0);
  std::vector<double> ms;
  std::vector<double> exact_ms;
  std::size_t agree = 0;
  const int queries = 100;
  for (int q = 0; q < queries; ++q) {
    const std::string text = random_sentence(rng, 3);
    const auto s0 = bench::Clock::now();
    const auto a = approx->search({.prefix = {"memories"}, .query = text, .limit = 10});
    ms.push_back(bench::seconds_since(s0) * 1000);
    const auto e0 = bench::Clock::now();
    const auto e = exact->search({.prefix = {"memories"}, .query = text, .limit = 10});
    exact_ms.push_back(bench::seconds_since(e0) * 1000);
    // Recall by score: ties in exact scores make keys ambiguous, so count an approximate hit
    // when its score reaches the exact 10th score.
    const double tenth = e.back().score.value_or(0);
    for (const auto& hit : a) agree += hit.score && *hit.score >= tenth - 1e-6 ? 1 : 0;
  }
  Json r;
  r["store"] = variant;
  r["ops_label"] = "queries";
  r["loadavg_1m_at_start"] = l0;
  r["items"] = items;
  r["dims"] = 384;
  r["embedder"] = "HashedNgramEmbeddings (lexical)";
  r["load_s"] = bench::round_to(load_s, 2);
  r["first_query_ms"] = bench::round_to(first_query_ms, 1);
  r["index_build_s"] = bench::round_to(build_s, 2);
  r["top10_p50_ms"] = bench::round_to(percentile(ms, 0.5), 3);
  r["top10_p99_ms"] = bench::round_to(percentile(ms, 0.99), 3);
  r["exact_top10_p50_ms"] = bench::round_to(percentile(exact_ms, 0.5), 3);
  r["recall_at_10"] = bench::round_to(static_cast<double>(agree) / (queries * 10.0), 4);
  r["peak_rss_mb"] = bench::peak_rss_mb();
  return r;
}

/// 100k indexed items in a RocksDbStore, closed and reopened: how long the reopening and the
/// first semantic query take (the index is built in the background meanwhile; searches are
/// exact until it is in), and when the index is in.
Json run_reopen(int items) {
  std::mt19937 rng(11);
  auto embeddings = std::make_shared<sg::HashedNgramEmbeddings>(384);
  const sg::IndexConfig index{embeddings, {"text"}, 20000};
  const std::string dir = bench::fresh_dir("store-reopen");
  {
    auto store = sg::RocksDbStore::open(dir, {.index = index});
    for (int i = 0; i < items; ++i) {
      store->put({"memories", label("u", i % 100)}, label("m", i),
                 {{"text", random_sentence(rng, 6)}});
    }
    store->wait_for_index();
  }
  const double l0 = bench::load1();
  const auto t0 = bench::Clock::now();
  auto store = sg::RocksDbStore::open(dir, {.index = index});
  const double reopen_s = bench::seconds_since(t0);
  const auto q0 = bench::Clock::now();
  const auto first = store->search({.prefix = {"memories"}, .query = "tea garden", .limit = 10});
  const double first_ms = bench::seconds_since(q0) * 1000;
  std::vector<double> during;
  for (int q = 0; q < 5; ++q) {
    const auto s0 = bench::Clock::now();
    (void)store->search({.prefix = {"memories"}, .query = random_sentence(rng, 3), .limit = 10});
    during.push_back(bench::seconds_since(s0) * 1000);
  }
  store->wait_for_index();
  const double ready_s = bench::seconds_since(t0);
  std::vector<double> after;
  for (int q = 0; q < 100; ++q) {
    const auto s0 = bench::Clock::now();
    (void)store->search({.prefix = {"memories"}, .query = random_sentence(rng, 3), .limit = 10});
    after.push_back(bench::seconds_since(s0) * 1000);
  }
  Json r;
  r["store"] = "rocksdb";
  r["ops_label"] = "queries";
  r["loadavg_1m_at_start"] = l0;
  r["items"] = items;
  r["dims"] = 384;
  r["reopen_s"] = bench::round_to(reopen_s, 3);
  r["first_query_ms"] = bench::round_to(first_ms, 1);
  r["first_query_hits"] = first.size();
  r["queries_while_building_p50_ms"] = bench::round_to(percentile(during, 0.5), 1);
  r["index_ready_after_reopen_s"] = bench::round_to(ready_s, 2);
  r["top10_p50_ms_after"] = bench::round_to(percentile(after, 0.5), 3);
  r["peak_rss_mb"] = bench::peak_rss_mb();
  return r;
}

const bench::Register reopen_rocks("store_reopen:rocksdb", [] { return run_reopen(100'000); });
const bench::Register put_rocks("store_put_search:rocksdb",
                                [] { return run_put_search("rocksdb", 1'000'000); });
const bench::Register put_memory("store_put_search:memory",
                                 [] { return run_put_search("memory", 1'000'000); });
const bench::Register semantic_rocks("store_semantic:rocksdb",
                                     [] { return run_semantic("rocksdb", 100'000); });

}  // namespace
