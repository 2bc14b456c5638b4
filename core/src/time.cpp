#include <stategraph/core/time.hpp>

#include <fmt/format.h>

#include <chrono>
#include <ctime>

namespace sg {

std::string iso_timestamp(std::int64_t micros) {
  // Floor division, so that times before the epoch format correctly.
  std::int64_t seconds = micros / 1000000;
  if (micros % 1000000 < 0) --seconds;
  std::int64_t day = seconds / 86400;
  if (seconds % 86400 < 0) --day;
  // The date part changes once a day: format it once per thread and day.
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
  std::string out = date;  // "YYYY-MM-DDT"
  const std::size_t at = out.size();
  out.resize(at + 21);
  auto put = [&](std::size_t pos, std::int64_t value, int digits) {
    for (int i = digits - 1; i >= 0; --i) {
      out[pos + static_cast<std::size_t>(i)] = static_cast<char>('0' + value % 10);
      value /= 10;
    }
  };
  const std::int64_t of_day = seconds - day * 86400;
  put(at, of_day / 3600, 2);
  out[at + 2] = ':';
  put(at + 3, (of_day / 60) % 60, 2);
  out[at + 5] = ':';
  put(at + 6, of_day % 60, 2);
  out[at + 8] = '.';
  put(at + 9, micros - seconds * 1000000, 6);
  out.replace(at + 15, 6, "+00:00");
  return out;
}

std::string iso_timestamp_now() {
  return iso_timestamp(std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count());
}

}  // namespace sg
