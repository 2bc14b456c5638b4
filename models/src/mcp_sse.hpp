// SPDX-License-Identifier: MIT
#pragma once
// Server-sent events with every field (event, data, id, retry), as the MCP transports need them:
// the event type tells the legacy transport's `endpoint` from its messages, the id and retry
// fields let a Streamable HTTP client resume a stream. (http_call.hpp's SseParser keeps only
// `data`, which is all the model providers' streams need.)

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sg::detail {

/// One dispatched event: its type (empty: "message") and data (the data lines joined by "\n").
struct SseEvent {
  std::string type{};
  std::string data{};
};

/// The WHATWG event-stream format: feed bytes as they arrive, split anywhere. Lines end with LF,
/// CRLF or CR; comments (":...") are skipped; an event is dispatched at an empty line when it
/// had a data field. The last event id and the retry time persist across events. Not
/// synchronized.
class McpSseParser {
 public:
  /// Appends the events completed by `bytes` to `events`.
  void feed(std::string_view bytes, std::vector<SseEvent>& events) {
    for (const char c : bytes) {
      if (skip_lf_) {
        skip_lf_ = false;
        if (c == '\n') continue;
      }
      if (c == '\r' || c == '\n') {
        skip_lf_ = c == '\r';
        line(events);
        line_.clear();
      } else {
        line_.push_back(c);
      }
    }
  }

  /// The id of the last event that gave one (empty: none yet).
  [[nodiscard]] const std::string& last_event_id() const noexcept { return last_id_; }
  /// The last `retry` field, in milliseconds.
  [[nodiscard]] std::optional<long> retry_ms() const noexcept { return retry_; }

 private:
  void line(std::vector<SseEvent>& events) {
    if (line_.empty()) {
      if (has_data_) {
        if (!data_.empty() && data_.back() == '\n') data_.pop_back();
        events.push_back(SseEvent{std::move(type_), std::move(data_)});
      }
      type_.clear();
      data_.clear();
      has_data_ = false;
      return;
    }
    if (line_.front() == ':') return;
    const std::size_t colon = line_.find(':');
    const std::string_view field =
        std::string_view(line_).substr(0, colon == std::string::npos ? line_.size() : colon);
    std::string_view value;
    if (colon != std::string::npos) {
      value = std::string_view(line_).substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    }
    if (field == "data") {
      data_.append(value);
      data_.push_back('\n');
      has_data_ = true;
    } else if (field == "event") {
      type_ = std::string(value);
    } else if (field == "id") {
      if (value.find('\0') == std::string_view::npos) last_id_ = std::string(value);
    } else if (field == "retry") {
      long ms = 0;
      bool digits = !value.empty();
      for (const char d : value) {
        if (d < '0' || d > '9' || ms > 100'000'000) {
          digits = false;
          break;
        }
        ms = ms * 10 + (d - '0');
      }
      if (digits) retry_ = ms;
    }
  }

  std::string line_{};
  std::string type_{};
  std::string data_{};
  bool has_data_ = false;
  bool skip_lf_ = false;
  std::string last_id_{};
  std::optional<long> retry_{};
};

}  // namespace sg::detail
