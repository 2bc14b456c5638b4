// SPDX-License-Identifier: MIT
#include <stategraph/checkpoint/memory_saver.hpp>

#include "kv_saver_impl.hpp"

namespace sg {

InMemorySaver::InMemorySaver()
    : KvCheckpointer(
          std::make_unique<Impl>(std::make_unique<detail::MemoryKv>(detail::Column::count))) {}

std::size_t InMemorySaver::stored_bytes() const {
  return static_cast<const detail::MemoryKv&>(impl_->kv()).bytes();
}

}  // namespace sg
