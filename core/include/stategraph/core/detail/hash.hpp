// SPDX-License-Identifier: MIT
#pragma once

// FNV-1a (64 bits): the hash behind task ids, interrupt ids and the offline embedder's buckets.
// Internal to stategraph.

#include <cstdint>
#include <string_view>

namespace sg::detail {

/// The FNV-1a offset basis.
inline constexpr std::uint64_t kFnvOffset = 14695981039346656037ULL;

/// FNV-1a over `bytes`, continuing from state `h`. Thread-safe.
[[nodiscard]] constexpr std::uint64_t fnv1a(std::string_view bytes, std::uint64_t h) noexcept {
  for (const char c : bytes) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

/// Writes the 16 lower-case hex digits of `h` to out[0..16). Thread-safe.
constexpr void hex16(std::uint64_t h, char* out) noexcept {
  constexpr char kHex[] = "0123456789abcdef";
  for (int i = 15; i >= 0; --i, h >>= 4) out[i] = kHex[h & 0xF];
}

}  // namespace sg::detail
