// SPDX-License-Identifier: MIT
#include <stategraph/core/error.hpp>
#include <stategraph/server/logging.hpp>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <string>

namespace sg {
namespace {

/// stderr through a buffer: lines are written in blocks of up to 64 KiB, when the buffer fills
/// and when the logger flushes (every second, at a warning or worse, and at the end), instead of
/// one write(2) per line as spdlog's stderr sink does: on a busy server the system calls of a
/// line per request cost more than the rest of its logging.
class BufferedStderrSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    buffer_.append(line.data(), line.size());
    if (buffer_.size() >= kBlock) flush_();
  }
  void flush_() override {
    std::size_t done = 0;
    while (done < buffer_.size()) {
      const ssize_t n = ::write(STDERR_FILENO, buffer_.data() + done, buffer_.size() - done);
      if (n <= 0) break;  // stderr is gone: drop the rest
      done += static_cast<std::size_t>(n);
    }
    buffer_.clear();
  }

 private:
  static constexpr std::size_t kBlock = 64 * 1024;
  std::string buffer_;
};

std::shared_ptr<spdlog::logger>& active_logger() {
  static std::shared_ptr<spdlog::logger> logger;
  return logger;
}

spdlog::level::level_enum spdlog_level(LogLevel level) {
  switch (level) {
    case LogLevel::trace:
      return spdlog::level::trace;
    case LogLevel::debug:
      return spdlog::level::debug;
    case LogLevel::info:
      return spdlog::level::info;
    case LogLevel::warn:
      return spdlog::level::warn;
    case LogLevel::error:
      return spdlog::level::err;
    case LogLevel::off:
      return spdlog::level::off;
  }
  return spdlog::level::off;
}

/// A text value: bare when it has no space, quote or '=', else a JSON string.
void append_text_value(std::string& out, const nlohmann::json& value) {
  if (!value.is_string()) {
    out += value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return;
  }
  const auto& s = value.get_ref<const std::string&>();
  const bool bare = !s.empty() && std::none_of(s.begin(), s.end(), [](unsigned char c) {
    return c <= ' ' || c == '"' || c == '=' || c == 0x7F;
  });
  out += bare ? s : value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

LogFormat parse_log_format(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "text") return LogFormat::text;
  if (lower == "json") return LogFormat::json;
  throw Error(errc::kInvalidArgument,
              "unknown log format '" + std::string(name) + "' (text or json)");
}

std::string format_log_payload(const LogRecord& record, LogFormat format) {
  std::string out;
  if (format == LogFormat::json) {
    out = "\"msg\":";
    out += nlohmann::json(record.message)
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (record.fields.is_object()) {
      for (const auto& [key, value] : record.fields.items()) {
        out += ',';
        out += nlohmann::json(key).dump();
        out += ':';
        out += value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      }
    }
    return out;
  }
  out.assign(record.message);
  if (record.fields.is_object()) {
    for (const auto& [key, value] : record.fields.items()) {
      out += ' ';
      out += key;
      out += '=';
      append_text_value(out, value);
    }
  }
  return out;
}

void start_logging(const LogOptions& options) {
  stop_logging();
  if (options.level == LogLevel::off) return;
  // Synchronous: a line is formatted and appended to the sink's buffer on the caller's thread
  // (a hand-off to spdlog's async thread cost more, a wake-up per line, than the formatting).
  auto sink = std::make_shared<BufferedStderrSink>();
  auto logger = std::make_shared<spdlog::logger>("stategraph", std::move(sink));
  logger->set_pattern(options.format == LogFormat::json
                          ? R"({"ts":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l",%v})"
                          : "%Y-%m-%dT%H:%M:%S.%eZ %l %v",
                      spdlog::pattern_time_type::utc);
  logger->set_level(spdlog_level(options.level));
  logger->flush_on(spdlog::level::warn);
  spdlog::register_logger(logger);  // flush_every flushes the registered loggers
  spdlog::flush_every(std::chrono::seconds(1));
  active_logger() = logger;
  const LogFormat format = options.format;
  set_log_sink(
      [logger, format](const LogRecord& record) {
        logger->log(spdlog_level(record.level), format_log_payload(record, format));
      },
      options.level);
}

void stop_logging() noexcept {
  auto& logger = active_logger();
  if (!logger) return;
  set_log_sink(nullptr);
  try {
    logger->flush();
  } catch (...) {  // NOLINT(bugprone-empty-catch): stderr is gone; nothing to report it on
  }
  logger.reset();
  spdlog::shutdown();
}

}  // namespace sg
