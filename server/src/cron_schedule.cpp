// SPDX-License-Identifier: MIT
// Cron expressions and times of the crons API (cron_schedule.hpp).
#include "cron_schedule.hpp"

#include <stategraph/core/error.hpp>
#include <stategraph/core/time.hpp>

#include <date/date.h>
#include <date/tz.h>
#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <sstream>
#include <vector>

namespace sg::server {
namespace {

struct Field {
  const char* name;
  int low;
  int high;
  std::array<std::string_view, 12> names{};  // names[i] is the value low + i (month and weekday)
};

constexpr Field kSecond{"second", 0, 59};
constexpr Field kMinute{"minute", 0, 59};
constexpr Field kHour{"hour", 0, 23};
constexpr Field kDay{"day of the month", 1, 31};
constexpr Field kMonth{
    "month",
    1,
    12,
    {"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}};
// 0-7: 0 and 7 are Sunday.
constexpr Field kWeekday{
    "day of the week", 0, 7, {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}};

[[noreturn]] void bad(const Field& field, std::string_view text, std::string_view why) {
  throw Error(errc::kInvalidArgument,
              fmt::format("cron schedule: the {} field '{}' {}", field.name, text, why));
}

int value_of(const Field& field, std::string_view whole, std::string_view text) {
  std::string upper(text);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (std::size_t i = 0; i < field.names.size(); ++i) {
    if (!field.names[i].empty() && upper == field.names[i]) return field.low + static_cast<int>(i);
  }
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    bad(field, whole, fmt::format("has '{}', not a number", text));
  }
  if (value < field.low || value > field.high) {
    bad(field, whole, fmt::format("has {}, outside {}-{}", value, field.low, field.high));
  }
  return value;
}

/// The values `text` allows (as bits from 0), and whether it is "*" (or "?").
std::pair<std::vector<bool>, bool> parse_field(const Field& field, std::string_view text) {
  std::vector<bool> allowed(static_cast<std::size_t>(field.high) + 1, false);
  bool any = text == "*" || text == "?";
  std::string_view rest = text;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    if (item.empty()) bad(field, text, "has an empty item");
    std::string_view range = item;
    int step = 1;
    if (const std::size_t slash = item.find('/'); slash != std::string_view::npos) {
      range = item.substr(0, slash);
      const std::string_view step_text = item.substr(slash + 1);
      const auto [end, ec] =
          std::from_chars(step_text.data(), step_text.data() + step_text.size(), step);
      if (ec != std::errc() || end != step_text.data() + step_text.size() || step < 1) {
        bad(field, text, fmt::format("has step '{}', not a whole number from 1", step_text));
      }
    }
    int first = field.low;
    int last = field.high;
    if (range != "*" && range != "?") {
      const std::size_t dash = range.find('-', 1);
      first = value_of(field, text, range.substr(0, dash));
      if (dash != std::string_view::npos) {
        last = value_of(field, text, range.substr(dash + 1));
        if (last < first) bad(field, text, fmt::format("has range {}-{} backwards", first, last));
      } else if (range.size() == item.size()) {
        last = first;  // a single value; "5/15" runs from 5 to the end
      }
    }
    for (int v = first; v <= last; v += step) allowed[static_cast<std::size_t>(v)] = true;
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return {allowed, any};
}

template <std::size_t N>
std::bitset<N> bits(const std::vector<bool>& allowed) {
  std::bitset<N> out;
  for (std::size_t i = 0; i < N && i < allowed.size(); ++i) out[i] = allowed[i];
  return out;
}

std::string_view macro(std::string_view expression) {
  if (expression == "@yearly" || expression == "@annually") return "0 0 1 1 *";
  if (expression == "@monthly") return "0 0 1 * *";
  if (expression == "@weekly") return "0 0 * * 0";
  if (expression == "@daily" || expression == "@midnight") return "0 0 * * *";
  if (expression == "@hourly") return "0 * * * *";
  return expression;
}

}  // namespace

CronSchedule::CronSchedule(std::string_view expression) {
  std::vector<std::string> fields;
  {
    std::istringstream in{std::string(macro(expression))};
    for (std::string field; in >> field;) fields.push_back(field);
  }
  if (fields.size() != 5 && fields.size() != 6) {
    throw Error(errc::kInvalidArgument,
                fmt::format("cron schedule '{}': expected 5 fields (minute hour day month "
                            "weekday) or 6 (and seconds), got {}",
                            expression, fields.size()));
  }
  minutes_ = bits<60>(parse_field(kMinute, fields[0]).first);
  hours_ = bits<24>(parse_field(kHour, fields[1]).first);
  const auto [days, any_day] = parse_field(kDay, fields[2]);
  days_ = bits<32>(days);
  any_day_ = any_day;
  months_ = bits<13>(parse_field(kMonth, fields[3]).first);
  const auto [weekdays, any_weekday] = parse_field(kWeekday, fields[4]);
  weekdays_ = bits<7>(weekdays);
  if (weekdays[7]) weekdays_[0] = true;  // 7 is Sunday
  any_weekday_ = any_weekday;
  seconds_ = fields.size() == 6 ? bits<60>(parse_field(kSecond, fields[5]).first) : 1U;
}

std::optional<std::chrono::sys_seconds> CronSchedule::next(std::chrono::sys_seconds after,
                                                           const date::time_zone* zone) const {
  using std::chrono::hours;
  using std::chrono::minutes;
  using std::chrono::seconds;
  const date::local_seconds start =
      zone != nullptr ? zone->to_local(after) : date::local_seconds(after.time_since_epoch());
  const date::local_seconds limit = start + date::days(3653);
  for (date::local_seconds t = start + seconds(1); t < limit;) {
    const date::local_days day = date::floor<date::days>(t);
    const date::year_month_day ymd(day);
    if (!months_[static_cast<unsigned>(ymd.month())]) {
      const date::year_month next_month = ymd.year() / ymd.month() + date::months(1);
      t = date::local_days(next_month / 1);
      continue;
    }
    const bool day_matches = days_[static_cast<unsigned>(ymd.day())];
    const bool weekday_matches = weekdays_[date::weekday(day).c_encoding()];
    // Both restricted: either will do; else the restricted one (both "*": any day).
    const bool due_day = !any_day_ && !any_weekday_ ? day_matches || weekday_matches
                                                    : day_matches && weekday_matches;
    if (!due_day) {
      t = day + date::days(1);
      continue;
    }
    const date::hh_mm_ss<seconds> time(t - day);
    if (!hours_[static_cast<std::size_t>(time.hours().count())]) {
      t = date::floor<hours>(t) + hours(1);
      continue;
    }
    if (!minutes_[static_cast<std::size_t>(time.minutes().count())]) {
      t = date::floor<minutes>(t) + minutes(1);
      continue;
    }
    if (!seconds_[static_cast<std::size_t>(time.seconds().count())]) {
      t += seconds(1);
      continue;
    }
    if (zone == nullptr) return std::chrono::sys_seconds(t.time_since_epoch());
    const date::local_info info = zone->get_info(t);
    if (info.result == date::local_info::nonexistent) {
      t += seconds(1);
      continue;
    }
    const std::chrono::sys_seconds due = zone->to_sys(t, date::choose::earliest);
    if (due > after) return due;
    t += seconds(1);  // the earlier of a repeated hour, already past
  }
  return std::nullopt;
}

const date::time_zone* find_time_zone(const std::string& name) {
  try {
    return date::locate_zone(name);
  } catch (const std::exception&) {
    throw Error(
        errc::kInvalidArgument,
        fmt::format("'{}' is not a time zone (an IANA name such as America/New_York)", name));
  }
}

std::optional<std::chrono::sys_seconds> parse_iso_time(std::string_view text) {
  const std::optional<std::int64_t> micros = parse_iso_timestamp(text);
  if (!micros) return std::nullopt;
  return std::chrono::floor<std::chrono::seconds>(
      std::chrono::sys_time<std::chrono::microseconds>(std::chrono::microseconds(*micros)));
}

}  // namespace sg::server
