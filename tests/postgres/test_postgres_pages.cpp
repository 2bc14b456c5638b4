// SPDX-License-Identifier: MIT
// PostgresKv's paged key spaces (postgres/src/postgres_kv_pages.cpp) against MemoryKv as the
// model: batches of appends (pages), lone puts, overwrites, keys before a group's first page,
// batches that overlap pages, erases and ranges across page bounds; every get and every scan
// (both directions, any bounds, stopped early) must answer as the model does. Also: a table
// written before pages existed reads and grows on.
#include <stategraph/core/error.hpp>
#include <stategraph/kv/kv.hpp>

#include <doctest/doctest.h>

#include <array>
#include <cstdlib>
#include <map>
#include <random>

#include "postgres_kv.hpp"
#include "support/postgres_cluster.hpp"

namespace {

using sg::detail::KvOp;

std::unique_ptr<sg::detail::PostgresKv> open_kv(const std::string& conninfo, bool paged) {
  std::vector<sg::detail::PagedSpace> spaces;
  if (paged) spaces.push_back({0, 2});
  return std::make_unique<sg::detail::PostgresKv>(
      conninfo, 2, "pages_test", /*exclusive=*/false, /*prepare=*/true,
      [](const sg::PostgresError& e) { throw e; }, std::move(spaces));
}

std::string key_of(const std::string& group, std::uint64_t seq) {
  std::string key = group;
  for (int i = 7; i >= 0; --i) key.push_back(static_cast<char>((seq >> (i * 8)) & 0xFF));
  return key;
}

using Rows = std::vector<std::pair<std::string, std::string>>;

Rows scan_all(sg::detail::KvBackend& kv, const std::string& lower, const std::string& upper,
              bool reverse, std::size_t stop_after) {
  Rows out;
  kv.scan(0, lower, upper, reverse, [&](std::string_view k, std::string_view v) {
    out.emplace_back(k, v);
    return out.size() < stop_after;
  });
  return out;
}

/// Random keys, values and operations; the same seed, the same run.
struct Workload {
  std::mt19937_64 rng;
  std::vector<std::string> groups{std::string("a\0x\0", 4), std::string("a\0y\0", 4),
                                  std::string("b\0\0", 3)};
  std::map<std::string, std::uint64_t> next;  // per group: the next sequence number appended
  std::map<std::string, std::uint64_t> first;

  explicit Workload(std::uint64_t seed) : rng(seed) {
    for (const auto& g : groups) next[g] = first[g] = 1000;
  }
  std::size_t pick(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  }
  std::string value() {  // words, as messages and records hold
    static const std::array<const char*, 12> kWords = {"alpha",   "bravo",  "state",      "graph",
                                                       "node",    "edge",   "channel",    "reducer",
                                                       "message", "thread", "checkpoint", "store"};
    std::string v;
    const std::size_t size = 50 + pick(650);
    while (v.size() < size) v.append(kWords[pick(kWords.size())]).push_back(' ');
    return v;
  }
  std::string any_key() {
    const std::string& g = groups[pick(groups.size())];
    return key_of(g, first[g] - 2 + pick(next[g] - first[g] + 4));
  }
  std::vector<KvOp> ops() {
    std::vector<KvOp> batch;
    if (pick(10) < 4) {  // a run's appends to one group, or two, in one batch
      for (int g = 0; g < 1 + static_cast<int>(pick(2)); ++g) {
        const std::string& group = groups[pick(groups.size())];
        for (std::size_t i = 2 + pick(15); i > 0; --i) {
          next[group] += 1 + (pick(5) == 0 ? pick(3) : 0);
          batch.push_back({KvOp::Kind::put, 0, key_of(group, next[group]), value()});
        }
      }
      if (pick(4) == 0) batch.push_back({KvOp::Kind::put, 0, any_key(), value()});  // overlaps
      return batch;
    }
    const std::size_t count = pick(10) == 0 ? 2 + pick(4) : 1;
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t what = pick(100);
      const std::string& g = groups[pick(groups.size())];
      if (what < 70) {  // append, sometimes past a gap
        next[g] += 1 + (pick(5) == 0 ? pick(3) : 0);
        batch.push_back({KvOp::Kind::put, 0, key_of(g, next[g]), value()});
      } else if (what < 80) {  // overwrite (or fill a gap)
        batch.push_back({KvOp::Kind::put, 0, any_key(), value()});
      } else if (what < 85) {  // before the group's first key
        batch.push_back({KvOp::Kind::put, 0, key_of(g, --first[g]), value()});
      } else if (what < 93) {
        batch.push_back({KvOp::Kind::erase, 0, any_key(), {}});
      } else {
        std::string a = any_key();
        std::string b = pick(4) == 0 ? sg::detail::prefix_end(std::string(1, 'a')) : any_key();
        if (b < a) std::swap(a, b);
        batch.push_back({KvOp::Kind::erase_range, 0, a, b});
      }
    }
    return batch;
  }
};

void check_same(sg::detail::KvBackend& pg, sg::detail::KvBackend& model, Workload& w) {
  for (int i = 0; i < 20; ++i) {
    const std::string key = w.any_key();
    INFO("get " << i);
    CHECK(pg.get(0, key) == model.get(0, key));
  }
  for (int i = 0; i < 12; ++i) {
    std::string lower = i % 3 == 0 ? std::string() : w.any_key();
    std::string upper = i % 4 == 0 ? std::string() : w.any_key();
    if (!upper.empty() && upper < lower) std::swap(lower, upper);
    const bool reverse = i % 2 == 1;
    const std::size_t stop_after = i % 5 == 0 ? 1 + w.pick(5) : 1'000'000;
    INFO("scan " << i << " reverse " << reverse << " stop after " << stop_after);
    CHECK(scan_all(pg, lower, upper, reverse, stop_after) ==
          scan_all(model, lower, upper, reverse, stop_after));
  }
}

}  // namespace

TEST_CASE("PostgresKv pages: random writes read back as an ordered map does") {
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  auto kv = open_kv(cluster.conninfo(), true);
  sg::detail::MemoryKv model(1);
  // SG_PAGES_SEED=N runs another random workload (to try many by hand).
  const char* seed = std::getenv("SG_PAGES_SEED");
  Workload w(seed ? std::stoull(seed) : 20261124);
  for (int round = 0; round < 40; ++round) {
    for (int i = 0; i < 15; ++i) {
      const auto batch = w.ops();
      kv->write(batch);
      model.write(batch);
    }
    INFO("round " << round);
    check_same(*kv, model, w);
  }
  // Reopened (another process, the schema made again): the same answers.
  auto again = open_kv(cluster.conninfo(), true);
  check_same(*again, model, w);
}

TEST_CASE("PostgresKv pages: a batch's puts to a group are one row, compressed when large") {
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  auto kv = open_kv(cluster.conninfo(), true);
  sg::detail::MemoryKv model(1);
  Workload w(1);
  const std::string group("t\0ns\0", 6);
  const auto write = [&](const std::vector<KvOp>& batch) {
    kv->write(batch);
    model.write(batch);
  };
  for (std::uint64_t first = 1; first <= 60; first += 12) {  // five batches of twelve
    std::vector<KvOp> batch;
    for (std::uint64_t seq = first; seq < first + 12; ++seq) {
      batch.push_back({KvOp::Kind::put, 0, key_of(group, seq), w.value()});
    }
    write(batch);
  }
  write({{KvOp::Kind::put, 0, key_of(group, 61), "alone"}});  // a lone put: a loose row
  write({{KvOp::Kind::put, 0, key_of(group, 5), "new"}});     // an overwrite: a loose row
  write({{KvOp::Kind::put, 0, key_of(group, 0), "first"}});   // before the first page
  // A batch across a page: loose rows, which reads prefer.
  write(
      {{KvOp::Kind::put, 0, key_of(group, 30), "x"}, {KvOp::Kind::put, 0, key_of(group, 70), "y"}});
  CHECK(kv->get(0, key_of(group, 5)) == "new");
  CHECK(kv->get(0, key_of(group, 30)) == "x");
  sg::pg::Connection db(cluster.conninfo());
  const auto rows = db.exec(
      "SELECT count(*) FILTER (WHERE space = 64), count(*) FILTER (WHERE space = 0), "
      "sum(pg_column_size(value)) FILTER (WHERE space = 64), "
      "sum(length(value)) FILTER (WHERE space = 64) FROM pages_test");
  CHECK(rows.get_int(0, 0) == 5);  // pages
  CHECK(rows.get_int(0, 1) == 5);  // loose rows
  INFO("pages: " << rows.get_int(0, 2) << " bytes stored of " << rows.get_int(0, 3));
  CHECK(rows.get_int(0, 2) * 2 < rows.get_int(0, 3));  // compressed
  check_same(*kv, model, w);
  // An erase across page bounds rewrites the pages it cuts.
  write({{KvOp::Kind::erase_range, 0, key_of(group, 13), key_of(group, 47)}});
  check_same(*kv, model, w);
  CHECK(scan_all(*kv, group, sg::detail::prefix_end(group), false, 1000).size() == 63 - 34);
  write({{KvOp::Kind::erase, 0, key_of(group, 50), {}},
         {KvOp::Kind::erase, 0, key_of(group, 5), {}}});
  check_same(*kv, model, w);
  CHECK(kv->get(0, key_of(group, 5)) == std::nullopt);
}

TEST_CASE("PostgresKv pages: a table written before pages existed reads and grows on") {
  SG_REQUIRE_POSTGRES();
  sg::test::PostgresCluster cluster;
  sg::detail::MemoryKv model(1);
  Workload w(7);
  {
    auto old = open_kv(cluster.conninfo(), false);  // the layout of row per key
    for (int i = 0; i < 40; ++i) {
      const auto batch = w.ops();
      old->write(batch);
      model.write(batch);
    }
  }
  auto kv = open_kv(cluster.conninfo(), true);
  check_same(*kv, model, w);
  for (int i = 0; i < 200; ++i) {
    const auto batch = w.ops();
    kv->write(batch);
    model.write(batch);
  }
  check_same(*kv, model, w);
}
