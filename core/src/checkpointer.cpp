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
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", time_high, time_mid, time_low,
                     clock_seq, node);
}

std::string iso_timestamp_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1000000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}+00:00", utc.tm_year + 1900,
                     utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, micros);
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
