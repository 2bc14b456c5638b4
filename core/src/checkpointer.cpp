#include <stategraph/core/checkpointer.hpp>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <mutex>
#include <random>

namespace sg {

std::optional<int> special_write_index(std::string_view channel) noexcept {
  if (channel == kErrorChannel) return -1;
  if (channel == kScheduledChannel) return -2;
  if (channel == kInterruptChannel) return -3;
  if (channel == kResumeChannel) return -4;
  return std::nullopt;
}

std::string new_checkpoint_id(int step) {
  // UUID version 6: 60 bits of 100 ns ticks since 1582-10-15, most significant first, so ids
  // sort by time; strictly increasing within the process.
  static std::mutex mu;
  static std::uint64_t last = 0;
  static const std::uint64_t node = [] {
    std::random_device rd;
    return ((static_cast<std::uint64_t>(rd()) << 32) | rd()) & 0xFFFFFFFFFFFFULL;
  }();
  constexpr std::uint64_t kGregorianOffset = 0x01B21DD213814000ULL;
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  std::uint64_t ticks =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count() /
                                 100) +
      kGregorianOffset;
  {
    std::lock_guard lock(mu);
    if (ticks <= last) ticks = last + 1;
    last = ticks;
  }
  const auto time_high = static_cast<std::uint32_t>(ticks >> 28);
  const auto time_mid = static_cast<std::uint16_t>((ticks >> 12) & 0xFFFF);
  const auto time_low = static_cast<std::uint16_t>(0x6000 | (ticks & 0x0FFF));
  const auto clock_seq =
      static_cast<std::uint16_t>(0x8000 | (static_cast<std::uint32_t>(step) & 0x3FFF));
  // "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", lower-case hex.
  std::string id(36, '-');
  auto hex = [&](std::size_t at, std::uint64_t value, int digits) {
    static constexpr char kDigits[] = "0123456789abcdef";
    for (int i = digits - 1; i >= 0; --i) {
      id[at + static_cast<std::size_t>(i)] = kDigits[value & 0xF];
      value >>= 4;
    }
  };
  hex(0, time_high, 8);
  hex(9, time_mid, 4);
  hex(14, time_low, 4);
  hex(19, clock_seq, 4);
  hex(24, node, 12);
  return id;
}

std::string iso_timestamp_now() {
  const auto now = std::chrono::system_clock::now();
  const auto micros_total =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  const std::int64_t seconds = micros_total / 1000000;
  const std::int64_t day = seconds / 86400;
  // The date part changes once a day: format it once per thread and day.
  thread_local std::int64_t cached_day = -1;
  thread_local std::string date;
  if (day != cached_day) {
    const std::time_t t = static_cast<std::time_t>(day * 86400);
    std::tm utc{};
    gmtime_r(&t, &utc);
    date = fmt::format("{:04}-{:02}-{:02}T", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday);
    cached_day = day;
  }
  std::string out = date;  // "YYYY-MM-DDT"
  out.resize(date.size() + 21);
  auto put = [&](std::size_t at, std::int64_t value, int digits) {
    for (int i = digits - 1; i >= 0; --i) {
      out[at + static_cast<std::size_t>(i)] = static_cast<char>('0' + value % 10);
      value /= 10;
    }
  };
  const std::size_t at = date.size();
  const std::int64_t of_day = seconds % 86400;
  put(at, of_day / 3600, 2);
  out[at + 2] = ':';
  put(at + 3, (of_day / 60) % 60, 2);
  out[at + 5] = ':';
  put(at + 6, of_day % 60, 2);
  out[at + 8] = '.';
  put(at + 9, micros_total % 1000000, 6);
  out.replace(at + 15, 6, "+00:00");
  return out;
}

std::vector<CheckpointConfig> Checkpointer::put_all(const std::vector<CheckpointPut>& puts) {
  std::vector<CheckpointConfig> out;
  out.reserve(puts.size());
  for (const auto& p : puts) out.push_back(put(p.config, p.checkpoint, p.metadata, p.new_versions));
  return out;
}

std::optional<std::string> Checkpointer::latest_checkpoint_id(const std::string& thread_id,
                                                              const std::string& checkpoint_ns) {
  auto latest = get_tuple(CheckpointConfig{thread_id, checkpoint_ns, {}});
  if (!latest) return std::nullopt;
  return latest->config.checkpoint_id;
}

}  // namespace sg
