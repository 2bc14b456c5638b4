// SPDX-License-Identifier: MIT
#pragma once
// Server-sent events (the WHATWG event-stream format), the one parser of the models module: the
// model providers' streams (openai.cpp, anthropic.cpp) read each event's data; the MCP transports
// (mcp_http.cpp) also read its type (the legacy transport's `endpoint` event), its id and the
// `retry` field (a Streamable HTTP client resumes a stream with them). Private to the module.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sg::detail {

/// One dispatched event.
struct SseEvent {
  /// The `event` field; empty: none was given (the format's default type, "message").
  std::string type{};
  /// The `data` lines, joined with "\n".
  std::string data{};
  /// The last event id when it was dispatched (it persists across events; empty: none).
  std::string id{};

  friend bool operator==(const SseEvent&, const SseEvent&) = default;
};

/// Feed it bytes as they arrive, split anywhere; it returns every complete event. Lines end with
/// LF, CRLF or CR; comments (":...") and unknown fields are ignored; one space after a field's
/// colon is dropped; an event is dispatched at an empty line when it had a `data` field (even
/// an empty one: "data\n\n" is an event whose data is ""). An `id` field without NUL sets the
/// last event id; a `retry` field of ASCII digits sets the reconnection time (values above
/// 100,000,000 ms are ignored). Not synchronized.
class SseParser {
 public:
  /// Appends the events completed by `bytes` to `events`.
  void feed(std::string_view bytes, std::vector<SseEvent>& events) {
    std::size_t i = 0;
    if (skip_lf_ && !bytes.empty()) {
      if (bytes[0] == '\n') i = 1;
      skip_lf_ = false;
    }
    while (i < bytes.size()) {
      const std::size_t end = bytes.find_first_of("\r\n", i);
      if (end == std::string_view::npos) {
        line_.append(bytes.substr(i));
        return;
      }
      line_.append(bytes.substr(i, end - i));
      i = end + 1;
      if (bytes[end] == '\r') {
        if (i < bytes.size()) {
          if (bytes[i] == '\n') ++i;
        } else {
          skip_lf_ = true;  // a LF at the start of the next bytes belongs to this CR
        }
      }
      line(events);
      line_.clear();
    }
  }

  /// The id of the last event that gave one (empty: none yet).
  [[nodiscard]] const std::string& last_event_id() const noexcept { return last_id_; }
  /// The last valid `retry` field, in milliseconds (none yet: nullopt).
  [[nodiscard]] std::optional<long> retry_ms() const noexcept { return retry_; }

 private:
  static constexpr long kMaxRetryMs = 100'000'000;

  void line(std::vector<SseEvent>& events) {
    if (line_.empty()) {  // the end of an event
      if (has_data_) {
        if (!data_.empty() && data_.back() == '\n') data_.pop_back();
        events.push_back(SseEvent{std::move(type_), std::move(data_), last_id_});
      }
      type_.clear();
      data_.clear();
      has_data_ = false;
      return;
    }
    if (line_.front() == ':') return;  // a comment
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
      bool valid = !value.empty();
      for (const char d : value) {
        if (d < '0' || d > '9') {
          valid = false;
          break;
        }
        ms = ms * 10 + (d - '0');
        if (ms > kMaxRetryMs) {
          valid = false;
          break;
        }
      }
      if (valid) retry_ = ms;
    }
  }

  std::string line_{};
  std::string type_{};
  std::string data_{};
  bool has_data_ = false;
  bool skip_lf_ = false;  // the last byte fed was a CR: a following LF belongs to it
  std::string last_id_{};
  std::optional<long> retry_{};
};

}  // namespace sg::detail
