// SPDX-License-Identifier: MIT
// The executor's storage machinery under stress: the background writer of durability "async"
// when the saver fails, and a compiled graph's recent threads when there are more threads
// than it keeps.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/stategraph.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <string>

#include "support/forwarding_saver.hpp"

namespace {

struct StorageCount {
  int n = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"n">(&StorageCount::n, [](int a, int b) { return a + b; })};
  }
};

/// An InMemorySaver that stores at most `capacity` checkpoints (a write that would go past it
/// fails whole; -1: no limit) and counts the reads that load a checkpoint.
class FlakySaver final : public sg::test::ForwardingSaver {
 public:
  sg::CheckpointConfig put(const sg::CheckpointConfig& config, const sg::Checkpoint& checkpoint,
                           const nlohmann::json& metadata,
                           const sg::ChannelVersions& new_versions) override {
    reserve(1);
    return inner_.put(config, checkpoint, metadata, new_versions);
  }
  std::vector<sg::CheckpointConfig> put_all(const std::vector<sg::CheckpointPut>& puts) override {
    reserve(static_cast<int>(puts.size()));
    return inner_.put_all(puts);
  }
  std::optional<sg::CheckpointTuple> get_tuple(const sg::CheckpointConfig& config) override {
    ++loads;
    return inner_.get_tuple(config);
  }

  std::atomic<int> capacity{-1};
  std::atomic<int> stored{0};
  std::atomic<int> loads{0};

 private:
  void reserve(int count) {
    if (capacity >= 0 && stored + count > capacity)
      throw sg::CheckpointError(sg::errc::kCheckpointIo, "disk full (test)");
    stored += count;
  }
};

sg::CompiledGraph<StorageCount> counting_chain(std::shared_ptr<sg::Checkpointer> saver,
                                               std::size_t recent_threads = 64) {
  sg::StateGraph<StorageCount> g;
  for (const char* name : {"a", "b", "c", "d"})
    g.add_node(name, [](const StorageCount&) { return sg::set<&StorageCount::n>(1); });
  g.add_edge(sg::START, "a").add_edge("a", "b").add_edge("b", "c").add_edge("c", "d");
  sg::CompileOptions options;
  options.checkpointer = std::move(saver);
  options.recent_threads = recent_threads;
  return g.compile(options);
}

sg::RunConfig on_thread(std::string thread, sg::Durability durability) {
  sg::RunConfig config;
  config.thread_id = std::move(thread);
  config.durability = durability;
  return config;
}

}  // namespace

TEST_CASE("a failing saver: the run's error with every durability, and the thread continues") {
  for (auto durability : {sg::Durability::sync, sg::Durability::async, sg::Durability::exit}) {
    CAPTURE(static_cast<int>(durability));
    auto saver = std::make_shared<FlakySaver>();
    const auto app = counting_chain(saver, 0);
    const auto config = on_thread("t", durability);
    // Six checkpoints to store (input, START, a, b, c, d): the write with the third fails; with
    // durability "exit" the only write (of the last one).
    saver->capacity = durability == sg::Durability::exit ? 0 : 2;
    try {
      (void)app.invoke(sg::set<&StorageCount::n>(100), config);
      FAIL("expected the saver's error");
    } catch (const sg::CheckpointError& e) {
      CHECK(e.code() == "checkpoint.io");
      CHECK(std::string(e.what()).find("disk full") != std::string::npos);
    }
    // What was stored is a prefix of the run (the async writer stores nothing after its first
    // failure), and continuing the thread reaches the same end.
    saver->capacity = -1;
    const auto history = app.get_state_history(config);
    CHECK(history.size() <= 2);
    for (std::size_t i = 0; i + 1 < history.size(); ++i)
      CHECK(history[i].parent_config == history[i + 1].config);
    const auto finished =
        history.empty() ? app.invoke(sg::set<&StorageCount::n>(100), config) : app.resume(config);
    CHECK(finished.state.n == 104);
    CHECK(app.get_state(config)->next.empty());
    CHECK(app.get_state_history(config).size() == (durability == sg::Durability::exit ? 1U : 6U));
  }
}

TEST_CASE("recent threads: the least recently finished thread is forgotten first") {
  auto saver = std::make_shared<FlakySaver>();
  const auto app = counting_chain(saver, 2);
  auto run = [&](const char* thread) {
    saver->loads = 0;
    const int n =
        app.invoke(sg::set<&StorageCount::n>(1), on_thread(thread, sg::Durability::sync)).state.n;
    return std::pair{n, saver->loads.load()};
  };
  CHECK(run("a") == std::pair{5, 1});  // new threads: one load each, which finds nothing
  CHECK(run("b") == std::pair{5, 1});
  CHECK(run("c") == std::pair{5, 1});   // keeps c and b; a is forgotten
  CHECK(run("c") == std::pair{10, 0});  // from memory
  CHECK(run("b") == std::pair{10, 0});
  CHECK(run("a") == std::pair{10, 1});  // loaded from its checkpoint; now keeps a and b
  CHECK(run("c") == std::pair{15, 1});
  CHECK(run("a") == std::pair{15, 0});
}
