// SPDX-License-Identifier: MIT
#pragma once

#include <stategraph/store/kv_store.hpp>

#include <optional>

namespace sg {

/// A store in memory (lost with the process): for tests, short-lived processes and benchmarks.
/// Same semantics and storage layout as RocksDbStore; TTL works the same. Thread-safe.
class InMemoryStore final : public KvStore {
 public:
  /// An empty store. With `index`, semantic search (SearchOp::query) works. Throws Error
  /// ("argument.invalid") for an IndexConfig without embeddings or whose dims differ from the
  /// embeddings'.
  explicit InMemoryStore(TtlConfig ttl = {}, std::optional<IndexConfig> index = std::nullopt);
};

}  // namespace sg
