// SPDX-License-Identifier: MIT
#pragma once
// The libraries' log messages (retries, model errors, saver errors, callbacks that threw) go to
// one hook, silent by default. A program routes them to its own logger:
//
//   sg::set_log_sink([](const sg::LogRecord& r) { std::clog << r.message << "\n"; },
//                    sg::LogLevel::info);
//
// `stategraph serve` and the CLI route them to spdlog.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string_view>

namespace sg {

enum class LogLevel : std::uint8_t { trace, debug, info, warn, error, off };

/// "trace", "debug", "info", "warn", "error" or "off".
[[nodiscard]] std::string_view to_string(LogLevel level) noexcept;
/// Parses a level name (also "warning", "critical" as error, any case). Throws sg::Error
/// (errc::kInvalidArgument) for another name. Thread-safe.
[[nodiscard]] LogLevel parse_log_level(std::string_view name);

/// One message: its level, a short text and structured fields (an object: ids, durations,
/// causes). Valid during the sink call only.
struct LogRecord {
  LogLevel level = LogLevel::info;
  std::string_view message{};
  const nlohmann::json& fields;
};

using LogSink = std::function<void(const LogRecord&)>;

/// Sends the messages at `level` and above to `sink`; a null sink (the default) makes the
/// libraries silent. The sink is called from any thread, several at once: it must be
/// thread-safe. Thread-safe; a message being logged may still reach the previous sink.
void set_log_sink(LogSink sink, LogLevel level = LogLevel::info);

/// True when a message at `level` reaches a sink (one relaxed atomic load). Thread-safe.
[[nodiscard]] bool log_enabled(LogLevel level) noexcept;

/// Sends a message to the sink when log_enabled(level). `fields` is an object or null. A sink
/// that throws is ignored. Thread-safe.
void log(LogLevel level, std::string_view message, const nlohmann::json& fields = nullptr) noexcept;

}  // namespace sg
