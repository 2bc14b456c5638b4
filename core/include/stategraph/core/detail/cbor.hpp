// SPDX-License-Identifier: MIT
#pragma once

// A CBOR (RFC 8949) writer for what JSON values become on disk: used directly for data whose
// shape is known (checkpoint records, messages), which skips building a JSON tree. Its output
// for a JSON value is byte for byte what json::to_cbor() writes.

#include <stategraph/core/json_optional.hpp>  // nlohmann/json.hpp with std::optional

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

namespace sg::detail {

/// Appends CBOR items to `Out` (std::string or std::vector<std::uint8_t>). Not synchronized.
template <class Out>
class CborWriter {
 public:
  explicit CborWriter(Out& out) : out_(out) {}
  void map(std::size_t entries) { head(5, entries); }
  void array(std::size_t items) { head(4, items); }
  void text(std::string_view s) {
    head(3, s.size());
    append(s.data(), s.size());
  }
  void integer(std::int64_t v) {
    if (v >= 0) {
      head(0, static_cast<std::uint64_t>(v));
    } else {
      head(1, static_cast<std::uint64_t>(-(v + 1)));
    }
  }
  /// A JSON value, as json::to_cbor() writes it.
  void value(const nlohmann::json& j) {
    using json = nlohmann::json;
    switch (j.type()) {
      case json::value_t::null:
      case json::value_t::discarded:
        byte(0xF6);
        break;
      case json::value_t::boolean:
        byte(j.get_ref<const json::boolean_t&>() ? 0xF5 : 0xF4);
        break;
      case json::value_t::number_integer:
        integer(j.get_ref<const json::number_integer_t&>());
        break;
      case json::value_t::number_unsigned:
        head(0, j.get_ref<const json::number_unsigned_t&>());
        break;
      case json::value_t::number_float:
        real(j.get_ref<const json::number_float_t&>());
        break;
      case json::value_t::string:
        text(j.get_ref<const json::string_t&>());
        break;
      case json::value_t::array:
        array(j.size());
        for (const json& item : j) value(item);
        break;
      case json::value_t::object:
        map(j.size());
        for (const auto& [key, item] : j.items()) {
          text(key);
          value(item);
        }
        break;
      case json::value_t::binary: {
        const auto& b = j.get_binary();
        if (b.has_subtype()) {  // a tag of at least one byte, as json::to_cbor() writes it
          if (b.subtype() < 24) {
            byte(0xD8);
            byte(static_cast<std::uint8_t>(b.subtype()));
          } else {
            head(6, b.subtype());
          }
        }
        head(2, b.size());
        append(reinterpret_cast<const char*>(b.data()), b.size());
        break;
      }
    }
  }
  /// An already encoded item.
  void raw(std::string_view item) { append(item.data(), item.size()); }
  void bytes(std::string_view b) {
    head(2, b.size());
    append(b.data(), b.size());
  }

 private:
  void byte(std::uint8_t b) { out_.push_back(static_cast<typename Out::value_type>(b)); }
  void append(const char* data, std::size_t n) {
    if constexpr (std::is_same_v<Out, std::string>) {
      out_.append(data, n);
    } else {
      const auto* p = reinterpret_cast<const typename Out::value_type*>(data);
      out_.insert(out_.end(), p, p + n);
    }
  }
  /// A float as a 32-bit float when that is exact, else 64-bit; NaN and infinities as 16-bit
  /// (as json::to_cbor()).
  void real(double d) {
    if (std::isnan(d) || std::isinf(d)) {
      byte(0xF9);
      byte(std::isnan(d) ? 0x7E : d > 0 ? 0x7C : 0xFC);
      byte(0x00);
      return;
    }
    const bool exact32 = d >= static_cast<double>(std::numeric_limits<float>::lowest()) &&
                         d <= static_cast<double>(std::numeric_limits<float>::max()) &&
                         static_cast<double>(static_cast<float>(d)) == d;
    if (exact32) {
      byte(0xFA);
      big_endian(std::bit_cast<std::uint32_t>(static_cast<float>(d)), 4);
    } else {
      byte(0xFB);
      big_endian(std::bit_cast<std::uint64_t>(d), 8);
    }
  }
  void big_endian(std::uint64_t n, int bytes) {
    char buf[8];
    for (int i = 0; i < bytes; ++i) buf[i] = static_cast<char>((n >> ((bytes - 1 - i) * 8)) & 0xFF);
    append(buf, static_cast<std::size_t>(bytes));
  }
  void head(std::uint8_t major, std::uint64_t n) {
    const auto m = static_cast<std::uint8_t>(major << 5);
    if (n < 24) {
      byte(static_cast<std::uint8_t>(m | n));
      return;
    }
    const int bytes = n <= 0xFF ? 1 : n <= 0xFFFF ? 2 : n <= 0xFFFFFFFF ? 4 : 8;
    const auto info = static_cast<std::uint8_t>(bytes == 1   ? 24
                                                : bytes == 2 ? 25
                                                : bytes == 4 ? 26
                                                             : 27);
    char buf[9];
    buf[0] = static_cast<char>(m | info);
    for (int i = 0; i < bytes; ++i)
      buf[1 + i] = static_cast<char>((n >> ((bytes - 1 - i) * 8)) & 0xFF);
    append(buf, static_cast<std::size_t>(bytes) + 1);
  }
  Out& out_;
};

}  // namespace sg::detail
