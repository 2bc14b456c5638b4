#pragma once

// Timestamps as checkpoints and store items show them.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace sg {

/// `micros` since the Unix epoch as ISO-8601 UTC with microseconds
/// ("2026-11-22T03:04:05.123456+00:00"). Thread-safe.
[[nodiscard]] std::string iso_timestamp(std::int64_t micros);

/// The length of iso_timestamp() for years 0000-9999.
inline constexpr std::size_t kIsoTimestampSize = 32;

/// Writes iso_timestamp(micros) into `out` without allocating; false (and `out` unspecified)
/// when the year is outside 0000-9999 and does not fit. Thread-safe.
[[nodiscard]] bool iso_timestamp_to(std::int64_t micros, std::span<char, kIsoTimestampSize> out);

/// The current time plus `from_now` (negative: earlier), formatted as iso_timestamp().
/// Thread-safe.
[[nodiscard]] std::string iso_timestamp_now(std::chrono::microseconds from_now = {});

}  // namespace sg
