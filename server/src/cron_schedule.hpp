// SPDX-License-Identifier: MIT
#pragma once

// Cron schedules of the crons API (internal): when a cron's run is due.

#include <bitset>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace date {
class time_zone;
}

namespace sg::server {

/// A parsed cron expression: "MIN HOUR DAY MONTH WEEKDAY", and croniter's optional sixth field
/// of seconds ("*/5 * * * * 30"); lists, ranges, steps, month and weekday names (JAN, MON), 7 as
/// Sunday, and the macros @yearly, @annually, @monthly, @weekly, @daily, @midnight and @hourly.
/// When both the day and the weekday are restricted, a day matching either is due (as cron and
/// croniter). Immutable; thread-safe.
///
/// Hand-written: Debian packages no cron parser for C++, and croniter's syntax is small.
class CronSchedule {
 public:
  /// Throws sg::Error (kInvalidArgument) saying which field is wrong.
  explicit CronSchedule(std::string_view expression);

  /// The first due time strictly after `after`, read on the wall clock of `zone` (UTC when
  /// null): a local time that a daylight-saving change skips is not due, one it repeats is due
  /// once (the earlier). nullopt when none comes within 10 years ("0 0 30 2 *").
  [[nodiscard]] std::optional<std::chrono::sys_seconds> next(std::chrono::sys_seconds after,
                                                             const date::time_zone* zone) const;

 private:
  std::bitset<60> seconds_;
  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_;     // 1-31
  std::bitset<13> months_;   // 1-12
  std::bitset<7> weekdays_;  // 0 Sunday - 6
  bool any_day_ = true;      // the day field is "*"
  bool any_weekday_ = true;  // the weekday field is "*"
};

/// The IANA time zone `name` ("America/New_York"; "UTC"). Throws sg::Error (kInvalidArgument)
/// for an unknown one. Thread-safe.
[[nodiscard]] const date::time_zone* find_time_zone(const std::string& name);

/// parse_iso_timestamp() (core/time.hpp) in whole seconds (fractions dropped). Thread-safe.
[[nodiscard]] std::optional<std::chrono::sys_seconds> parse_iso_time(std::string_view text);

}  // namespace sg::server
