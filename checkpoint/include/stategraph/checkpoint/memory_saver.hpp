// SPDX-License-Identifier: MIT
#pragma once

#include <stategraph/checkpoint/kv_checkpointer.hpp>

namespace sg {

/// A checkpointer that keeps everything in memory (LangGraph's InMemorySaver / MemorySaver):
/// for tests, short-lived processes and benchmarks. Same semantics and storage layout as
/// RocksDbSaver; nothing survives the process, so its default durability is "sync": a write
/// costs less than handing it to another thread. Thread-safe.
class InMemorySaver final : public KvCheckpointer {
 public:
  /// An empty saver. Throws only std::bad_alloc.
  InMemorySaver();
  /// Durability::sync (see the class comment). noexcept.
  [[nodiscard]] Durability default_durability() const noexcept override { return Durability::sync; }
  /// Bytes of keys and values held (the serialized size of everything stored). Thread-safe.
  [[nodiscard]] std::size_t stored_bytes() const;
};

}  // namespace sg
