// SPDX-License-Identifier: MIT
// The soak's short version (bench/soak/run.sh is the long one, issue 18), here so that it runs
// under ThreadSanitizer in CI: conversation threads on a RocksDB-backed server driven by
// concurrent clients, one run per thread at a time, then every thread's final state compared
// with the same inputs replayed one by one on a fresh in-memory server.
#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/store/rocksdb_store.hpp>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "server_fixture.hpp"
#include "support/temp_dir.hpp"

namespace {

using nlohmann::json;
using sg::test::contents;
using sg::test::human_input;
using sg::test::Served;

}  // namespace

TEST_CASE("server soak (short): concurrent clients on many threads, each thread as if alone") {
  constexpr int kThreads = 24;
  constexpr int kClients = 6;
  constexpr auto kDuration = std::chrono::seconds(3);
  sg::test::TempDir dir;
  sg::ServerOptions options;
  options.checkpointer = sg::RocksDbSaver::open(dir.sub("checkpoints"));
  options.records = sg::RocksDbStore::open(dir.sub("records"));
  options.sync_node_workers = 4;
  Served s(options);
  std::vector<std::string> threads;
  for (int i = 0; i < kThreads; ++i) threads.push_back(s.new_thread());
  std::mutex mu;
  std::vector<bool> busy(kThreads, false);
  std::vector<std::vector<std::string>> sent(kThreads);
  std::atomic<int> failures{0};
  std::atomic<int> runs{0};
  const auto deadline = std::chrono::steady_clock::now() + kDuration;
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      std::mt19937 random(static_cast<unsigned>(c));
      while (std::chrono::steady_clock::now() < deadline) {
        int t = -1;
        std::string text;
        {
          std::lock_guard lock(mu);
          for (int tries = 0; tries < kThreads && t < 0; ++tries) {
            const int pick = static_cast<int>(random() % kThreads);
            if (!busy[static_cast<std::size_t>(pick)]) t = pick;
          }
          if (t < 0) continue;
          busy[static_cast<std::size_t>(t)] = true;
          text = "c" + std::to_string(c) + "-m" +
                 std::to_string(sent[static_cast<std::size_t>(t)].size());
        }
        const auto r = s.post("/threads/" + threads[static_cast<std::size_t>(t)] + "/runs/wait",
                              json{{"assistant_id", "agent"}, {"input", human_input(text)}});
        const bool ok = r.status == 200 && contents(json::parse(r.body)).back() == "echo: " + text;
        if (!ok) ++failures;
        ++runs;
        std::lock_guard lock(mu);
        if (ok) sent[static_cast<std::size_t>(t)].push_back(text);
        busy[static_cast<std::size_t>(t)] = false;
      }
    });
  }
  for (auto& client : clients) client.join();
  CHECK(failures == 0);
  CHECK(runs > kThreads);
  Served reference;
  for (int i = 0; i < kThreads; ++i) {
    if (sent[static_cast<std::size_t>(i)].empty()) continue;  // never picked
    const std::string replay = reference.new_thread();
    for (const auto& text : sent[static_cast<std::size_t>(i)]) {
      (void)reference.post_json("/threads/" + replay + "/runs/wait",
                                {{"assistant_id", "agent"}, {"input", human_input(text)}});
    }
    CHECK(contents(s.get_json("/threads/" + threads[static_cast<std::size_t>(i)] +
                              "/state")["values"]) ==
          contents(reference.get_json("/threads/" + replay + "/state")["values"]));
  }
  MESSAGE(runs.load() << " runs on " << kThreads << " threads by " << kClients << " clients");
}
