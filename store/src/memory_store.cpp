// SPDX-License-Identifier: MIT
#include <stategraph/store/memory_store.hpp>

#include "kv_store_impl.hpp"

namespace sg {

InMemoryStore::InMemoryStore(TtlConfig ttl, std::optional<IndexConfig> index)
    : KvStore(std::make_unique<Impl>(std::make_unique<detail::MemoryKv>(detail::Space::count),
                                     std::move(ttl), std::move(index))) {}

}  // namespace sg
