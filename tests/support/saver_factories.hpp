// SPDX-License-Identifier: MIT
#pragma once
// The savers, made fresh per call, for suites that run every case on each
// (TEST_CASE_TEMPLATE(..., F, SG_SAVER_FACTORIES)): in memory, RocksDB, and PostgreSQL when the
// build found a PostgreSQL 15 server to start (SG_TEST_POSTGRES).
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/checkpoint/rocksdb_saver.hpp>

#include <atomic>
#include <memory>
#include <string>

#include "support/temp_dir.hpp"
#ifdef SG_TEST_POSTGRES
#include <stategraph/postgres/postgres_saver.hpp>
#include <stategraph/postgres/postgres_store.hpp>

#include "support/postgres_cluster.hpp"
#endif

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

#ifdef SG_TEST_POSTGRES
/// One throwaway cluster for the whole test process (made on first use, stopped at exit).
inline PostgresCluster& shared_postgres() {
  static PostgresCluster cluster;
  return cluster;
}

/// A fresh table name per saver or store of this process.
inline std::string fresh_postgres_table(const char* kind) {
  static std::atomic<int> n{0};
  return std::string("sg_test_") + kind + std::to_string(n++);
}

/// Each make() is a saver on a table of its own in the shared cluster.
struct PostgresFactory {
  static constexpr const char* kName = "PostgresSaver";
  std::shared_ptr<KvCheckpointer> make() {
    return PostgresSaver::open(shared_postgres().conninfo(),
                               {.table = fresh_postgres_table("checkpoints")});
  }
};
#define SG_SAVER_FACTORIES \
  sg::test::MemoryFactory, sg::test::RocksFactory, sg::test::PostgresFactory
#else
#define SG_SAVER_FACTORIES sg::test::MemoryFactory, sg::test::RocksFactory
#endif

}  // namespace sg::test
