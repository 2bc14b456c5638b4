// SPDX-License-Identifier: MIT
#include <stategraph/core/error.hpp>
#include <stategraph/core/log.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <memory>
#include <mutex>
#include <string>

namespace sg {
namespace {

/// The sink and its level. Logging is rare (errors, retries), so a mutex guards the sink; the
/// level check before it is one relaxed load.
struct SinkSlot {
  std::atomic<std::uint8_t> level{static_cast<std::uint8_t>(LogLevel::off)};
  std::mutex mu;
  std::shared_ptr<const LogSink> sink;
};

SinkSlot& slot() {
  static SinkSlot s;
  return s;
}

}  // namespace

std::string_view to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::trace:
      return "trace";
    case LogLevel::debug:
      return "debug";
    case LogLevel::info:
      return "info";
    case LogLevel::warn:
      return "warn";
    case LogLevel::error:
      return "error";
    case LogLevel::off:
      return "off";
  }
  return "off";
}

LogLevel parse_log_level(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "trace") return LogLevel::trace;
  if (lower == "debug") return LogLevel::debug;
  if (lower == "info") return LogLevel::info;
  if (lower == "warn" || lower == "warning") return LogLevel::warn;
  if (lower == "error" || lower == "critical") return LogLevel::error;
  if (lower == "off") return LogLevel::off;
  throw Error(errc::kInvalidArgument, "unknown log level '" + std::string(name) +
                                          "' (trace, debug, info, warn, error or off)");
}

void set_log_sink(LogSink sink, LogLevel level) {
  SinkSlot& s = slot();
  std::lock_guard lock(s.mu);
  s.sink = sink ? std::make_shared<const LogSink>(std::move(sink)) : nullptr;
  s.level.store(static_cast<std::uint8_t>(s.sink ? level : LogLevel::off),
                std::memory_order_relaxed);
}

bool log_enabled(LogLevel level) noexcept {
  return level != LogLevel::off &&
         static_cast<std::uint8_t>(level) >= slot().level.load(std::memory_order_relaxed);
}

void log(LogLevel level, std::string_view message, const nlohmann::json& fields) noexcept {
  if (!log_enabled(level)) return;
  SinkSlot& s = slot();
  std::shared_ptr<const LogSink> sink;
  {
    std::lock_guard lock(s.mu);
    sink = s.sink;
  }
  if (!sink) return;
  try {
    (*sink)(LogRecord{level, message, fields});
  } catch (...) {  // NOLINT(bugprone-empty-catch): a failing sink must not fail the caller
  }
}

}  // namespace sg
