// SPDX-License-Identifier: MIT
// A graph library built for another stategraph (9.0.0): `stategraph serve` must refuse it.
#include <cstdint>

extern "C" __attribute__((visibility("default"))) std::uint32_t stategraph_register_graphs(
    std::uint32_t /*server_abi*/, void* /*registry*/) {
  return (9U << 24U) | (12U << 1U) | 1U;
}
