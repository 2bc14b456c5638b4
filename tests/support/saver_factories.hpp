#pragma once
// The two savers, made fresh per call, for suites that run every case on both
// (TEST_CASE_TEMPLATE(..., F, MemoryFactory, RocksFactory)).
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/checkpoint/rocksdb_saver.hpp>

#include <memory>
#include <string>

#include "support/temp_dir.hpp"

namespace sg::test {

struct MemoryFactory {
  static constexpr const char* kName = "InMemorySaver";
  std::shared_ptr<KvCheckpointer> make() { return std::make_shared<InMemorySaver>(); }
};

/// Each make() opens a new database under one temporary directory.
struct RocksFactory {
  static constexpr const char* kName = "RocksDbSaver";
  TempDir dir;
  int opened = 0;
  std::shared_ptr<KvCheckpointer> make() {
    return RocksDbSaver::open(dir.sub("db" + std::to_string(opened++)));
  }
};

}  // namespace sg::test
