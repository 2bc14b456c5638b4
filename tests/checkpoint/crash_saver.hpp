// SPDX-License-Identifier: MIT
#pragma once

// The saver of sg_crash_worker's <db> argument, for the worker and the test that drives it: a
// RocksDB directory, or "postgres:<table>:<libpq conninfo>" (when built with SG_TEST_POSTGRES).

#include <stategraph/checkpoint/rocksdb_saver.hpp>
#ifdef SG_TEST_POSTGRES
#include <stategraph/postgres/postgres_saver.hpp>
#endif

#include <memory>
#include <string>

namespace sg::test {

inline std::shared_ptr<KvCheckpointer> open_crash_saver(const std::string& db) {
#ifdef SG_TEST_POSTGRES
  if (db.rfind("postgres:", 0) == 0) {
    const auto colon = db.find(':', 9);
    return PostgresSaver::open(db.substr(colon + 1), {.table = db.substr(9, colon - 9)});
  }
#endif
  return RocksDbSaver::open(db);
}

}  // namespace sg::test
