// SPDX-License-Identifier: MIT
#pragma once

#include <stategraph/postgres/postgres_saver.hpp>
#include <stategraph/store/kv_store.hpp>

#include <memory>
#include <optional>
#include <string>

namespace sg {

/// A long-term memory store in PostgreSQL: KvStore's semantics (namespaces, typed filters, TTL,
/// semantic search with an in-process index) over one table of (space, key, value) rows; each
/// put is one transaction in one round trip. Processes may share a store: the vectors of a store
/// with an IndexConfig live in each process, and a search reloads them when another process
/// changed them (a generation row each change of the vectors replaces). Opened
/// PostgresOptions::exclusive, a store holds a Postgres session lock on its table instead.
/// Thread-safe.
class PostgresStore final : public KvStore {
 public:
  /// Connects to `conninfo` and creates the table when missing (default "sg_store"). Throws
  /// StoreError ("store.locked" when an exclusive store keeps the table open for 3 s,
  /// "store.io" otherwise) naming the failure, or Error ("argument.invalid") for a bad TTL or index
  /// configuration.
  [[nodiscard]] static std::shared_ptr<PostgresStore> open(
      const std::string& conninfo, PostgresOptions options = {}, TtlConfig ttl = {},
      std::optional<IndexConfig> index = std::nullopt);

 private:
  PostgresStore(std::unique_ptr<detail::KvBackend> kv, TtlConfig ttl,
                std::optional<IndexConfig> index);
};

}  // namespace sg
