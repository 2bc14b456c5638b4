#pragma once

// Timestamps as checkpoints and store items show them.

#include <cstdint>
#include <string>

namespace sg {

/// `micros` since the Unix epoch as ISO-8601 UTC with microseconds
/// ("2026-11-22T03:04:05.123456+00:00"). Thread-safe.
[[nodiscard]] std::string iso_timestamp(std::int64_t micros);

/// The current time, formatted as iso_timestamp(). Thread-safe.
[[nodiscard]] std::string iso_timestamp_now();

}  // namespace sg
