// SPDX-License-Identifier: MIT
#pragma once

// Timestamps as checkpoints and store items show them.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

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

/// Microseconds since the Unix epoch of an ISO-8601 time: a date ("2026-11-28"), or a date and
/// time ('T' or a space between) with optional fractions of a second and an offset
/// ("2026-11-28T12:00:00.5Z", "2026-11-28 12:00:00+02:00"; none: UTC), as iso_timestamp() and
/// JavaScript's toISOString() write them. nullopt when `text` is not one. Thread-safe.
[[nodiscard]] std::optional<std::int64_t> parse_iso_timestamp(std::string_view text);

}  // namespace sg
