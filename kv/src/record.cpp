// SPDX-License-Identifier: MIT
#include <stategraph/kv/record.hpp>

#include <zlib.h>

#include <algorithm>

namespace sg::detail {
namespace {

std::uint32_t crc_of(std::string_view data) {
  return static_cast<std::uint32_t>(crc32(crc32(0L, Z_NULL, 0),
                                          reinterpret_cast<const Bytef*>(data.data()),
                                          static_cast<uInt>(data.size())));
}

}  // namespace

std::string record_header(std::uint8_t version, char kind, std::size_t capacity) {
  std::string out;
  out.reserve(std::max(capacity, kRecordHeaderSize));
  out.append({'S', 'G', static_cast<char>(version), kind, 0, 0, 0, 0});
  return out;
}

void seal_record(std::string& record) {
  const std::uint32_t crc = crc_of(std::string_view(record).substr(kRecordHeaderSize));
  for (std::size_t i = 0; i < 4; ++i) record[4 + i] = static_cast<char>((crc >> (i * 8)) & 0xFF);
}

std::optional<RecordView> open_record(std::string_view data) noexcept {
  if (data.size() < kRecordHeaderSize || data[0] != 'S' || data[1] != 'G') return std::nullopt;
  RecordView view;
  view.version = static_cast<std::uint8_t>(data[2]);
  view.kind = data[3];
  std::uint32_t stored = 0;
  for (std::size_t i = 0; i < 4; ++i)
    stored |= static_cast<std::uint32_t>(static_cast<unsigned char>(data[4 + i])) << (i * 8);
  view.payload = data.substr(kRecordHeaderSize);
  view.intact = crc_of(view.payload) == stored;
  return view;
}

}  // namespace sg::detail
