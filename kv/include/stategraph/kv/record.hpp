// SPDX-License-Identifier: MIT
#pragma once

// The frame of every stored record (checkpoints and store items): "SG", a format version, a
// kind byte, the CRC-32 (zlib) of the payload, little-endian, then the payload.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sg::detail {

inline constexpr std::size_t kRecordHeaderSize = 8;

/// A buffer holding a record header, with room for `capacity` bytes in all; append the payload,
/// then call seal_record().
[[nodiscard]] std::string record_header(std::uint8_t version, char kind, std::size_t capacity = 0);

/// Fills in the CRC of everything after the header.
void seal_record(std::string& record);

/// The parts of a stored record; `intact` is false when the payload does not match its CRC.
struct RecordView {
  std::uint8_t version = 0;
  char kind = 0;
  std::string_view payload{};
  bool intact = false;
};

/// The parts of `data`, or nullopt when it is not a record (too short, no "SG").
[[nodiscard]] std::optional<RecordView> open_record(std::string_view data) noexcept;

}  // namespace sg::detail
