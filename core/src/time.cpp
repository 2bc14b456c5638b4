// SPDX-License-Identifier: MIT
#include <stategraph/core/time.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <chrono>
#include <ctime>
#include <string_view>

namespace sg {

namespace {

/// "YYYY-MM-DDT" of a day since the epoch; it changes once a day, so it is formatted once per
/// thread and day.
const std::string& date_of(std::int64_t day) {
  thread_local std::int64_t cached_day = -1;
  thread_local bool cached = false;
  thread_local std::string date;
  if (!cached || day != cached_day) {
    const auto t = static_cast<std::time_t>(day * 86400);
    std::tm utc{};
    gmtime_r(&t, &utc);
    date = fmt::format("{:04}-{:02}-{:02}T", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday);
    cached_day = day;
    cached = true;
  }
  return date;
}

/// "HH:MM:SS.ffffff+00:00" (21 characters) into `out`; `day` gets the day since the epoch.
void write_time_of_day(std::int64_t micros, char* out, std::int64_t& day) {
  // Floor division, so that times before the epoch format correctly.
  std::int64_t seconds = micros / 1000000;
  if (micros % 1000000 < 0) --seconds;
  day = seconds / 86400;
  if (seconds % 86400 < 0) --day;
  auto put = [&](std::size_t pos, std::int64_t value, int digits) {
    for (int i = digits - 1; i >= 0; --i) {
      out[pos + static_cast<std::size_t>(i)] = static_cast<char>('0' + value % 10);
      value /= 10;
    }
  };
  const std::int64_t of_day = seconds - day * 86400;
  put(0, of_day / 3600, 2);
  out[2] = ':';
  put(3, (of_day / 60) % 60, 2);
  out[5] = ':';
  put(6, of_day % 60, 2);
  out[8] = '.';
  put(9, micros - seconds * 1000000, 6);
  constexpr std::string_view kUtc = "+00:00";
  std::copy(kUtc.begin(), kUtc.end(), out + 15);
}

constexpr std::size_t kDateSize = 11;

}  // namespace

bool iso_timestamp_to(std::int64_t micros, std::span<char, kIsoTimestampSize> out) {
  std::int64_t day = 0;
  write_time_of_day(micros, out.data() + kDateSize, day);
  const std::string& date = date_of(day);
  if (date.size() != kDateSize) return false;
  std::copy(date.begin(), date.end(), out.begin());
  return true;
}

std::string iso_timestamp(std::int64_t micros) {
  std::array<char, kIsoTimestampSize> out;
  if (iso_timestamp_to(micros, out)) return std::string(out.data(), out.size());
  std::int64_t day = 0;  // a year outside 0000-9999: a longer date
  write_time_of_day(micros, out.data() + kDateSize, day);
  return date_of(day) + std::string(out.data() + kDateSize, out.size() - kDateSize);
}

std::string iso_timestamp_now(std::chrono::microseconds from_now) {
  return iso_timestamp((std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch()) +
                        from_now)
                           .count());
}

std::optional<std::int64_t> parse_iso_timestamp(std::string_view text) {
  // YYYY-MM-DD[(T| )HH:MM:SS[.fraction][Z|(+|-)HH:MM]]
  std::size_t at = 0;
  const auto number = [&](std::size_t digits, int& out) {
    if (at + digits > text.size()) return false;
    const char* first = text.data() + at;
    const auto [end, ec] = std::from_chars(first, first + digits, out);
    at += digits;
    return ec == std::errc() && end == first + digits;
  };
  const auto literal = [&](char c) {
    if (at >= text.size() || text[at] != c) return false;
    ++at;
    return true;
  };
  int y = 0;
  int mo = 0;
  int d = 0;
  if (!number(4, y) || !literal('-') || !number(2, mo) || !literal('-') || !number(2, d)) {
    return std::nullopt;
  }
  const std::chrono::year_month_day ymd{std::chrono::year{y},
                                        std::chrono::month(static_cast<unsigned>(mo)),
                                        std::chrono::day(static_cast<unsigned>(d))};
  if (!ymd.ok()) return std::nullopt;
  std::int64_t micros = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::sys_days(ymd).time_since_epoch())
                            .count();
  if (at == text.size()) return micros;
  int h = 0;
  int mi = 0;
  int sec = 0;
  if (!(literal('T') || literal(' ')) || !number(2, h) || !literal(':') || !number(2, mi) ||
      !literal(':') || !number(2, sec) || h > 23 || mi > 59 || sec > 60) {
    return std::nullopt;
  }
  micros += ((static_cast<std::int64_t>(h) * 60 + mi) * 60 + sec) * 1000000;
  if (literal('.')) {
    const std::size_t first = at;
    std::int64_t scale = 100000;
    while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])) != 0) {
      micros += (text[at] - '0') * scale;  // digits past microseconds add 0
      scale /= 10;
      ++at;
    }
    if (at == first) return std::nullopt;
  }
  if (at == text.size()) return micros;
  if (literal('Z') || literal('z')) return at == text.size() ? std::optional(micros) : std::nullopt;
  const char sign = text[at++];
  int oh = 0;
  int om = 0;
  if ((sign != '+' && sign != '-') || !number(2, oh) || !literal(':') || !number(2, om) ||
      at != text.size() || oh > 23 || om > 59) {
    return std::nullopt;
  }
  const std::int64_t offset = (static_cast<std::int64_t>(oh) * 60 + om) * 60 * 1000000;
  return sign == '+' ? micros - offset : micros + offset;
}

}  // namespace sg
