// SPDX-License-Identifier: MIT
#pragma once
// The log of `stategraph serve` and the CLI: the libraries' messages (sg::log: requests, runs,
// retries, model and saver errors) written by spdlog to stderr, as text or as one JSON object
// per line.
//
//   text: 2026-11-28T21:40:00.123Z info run ended run_id=1ef... status=success duration_ms=12.5
//   json: {"ts":"2026-11-28T21:40:00.123Z","level":"info","msg":"run ended","run_id":"1ef...",...}
//
// JSON lines have the keys ts (UTC, milliseconds), level (trace, debug, info, warning, error),
// msg, then the message's fields. No message carries a secret: API keys, Authorization headers
// and database URLs are never logged.

#include <stategraph/core/log.hpp>

#include <string_view>

namespace sg {

enum class LogFormat : std::uint8_t { text, json };

/// Parses "text" or "json" (any case). Throws sg::Error (errc::kInvalidArgument) otherwise.
/// Thread-safe.
[[nodiscard]] LogFormat parse_log_format(std::string_view name);

struct LogOptions {
  LogLevel level = LogLevel::info;
  LogFormat format = LogFormat::text;
};

/// Routes sg::log to spdlog on stderr with `options` (replacing an earlier call's). A message
/// costs its caller the formatting and a copy into a buffer; the buffer reaches stderr in
/// blocks: at once for a warning or an error, else within a second (spdlog's flusher thread)
/// or when 64 KiB are waiting. Not thread-safe with itself or stop_logging (call both from
/// main).
void start_logging(const LogOptions& options);

/// Writes the lines still queued and makes sg::log silent again. No-op when not started.
void stop_logging() noexcept;

/// One line of `record` in `format`, without the timestamp and level (spdlog adds them): for
/// text, "msg key=value ..." (values with spaces or quotes quoted as JSON strings); for json,
/// the members after "ts" and "level": `"msg":"...","key":value,...`. Thread-safe.
[[nodiscard]] std::string format_log_payload(const LogRecord& record, LogFormat format);

}  // namespace sg
