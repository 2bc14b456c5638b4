// SPDX-License-Identifier: MIT
#pragma once
// What the exporter and the metrics share: reading a span's outcome and token usage, and the
// OTLP encoding of spans (otlp_encode.cpp): a span's record, copied on the callback's thread,
// and the JSON written from records on the exporter's.

#include <stategraph/core/callbacks.hpp>
#include <stategraph/telemetry/otlp.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sg::detail {

/// A token count of a model span: the span's own when reported (>= 0), else the reply's
/// usage_metadata[`key`] ("input_tokens" or "output_tokens"); -1 when neither has it.
[[nodiscard]] inline std::int64_t span_tokens(const Span& span, std::int64_t own, const char* key) {
  if (own >= 0) return own;
  if (span.reply == nullptr || !span.reply->usage_metadata.is_object()) return -1;
  const auto it = span.reply->usage_metadata.find(key);
  if (it == span.reply->usage_metadata.end() || !it->is_number_integer()) return -1;
  return it->get<std::int64_t>();
}

/// What the OTLP encoding of an ended span needs, copied out of the Span (whose pointers are
/// valid during the callback only): the ids, times, status and counts, the fields read from a
/// model's reply, and the texts, stored back to back in one string (a record allocates once at
/// most, and a model span's finish reasons their own).
struct OtlpSpanRecord {
  /// The texts, in the order they are stored.
  enum class Text : std::uint8_t {
    name,
    error,       // an error span's only
    error_type,  // an error span's only
    thread_id,
    run_id,
    checkpoint_ns,
    checkpoint_id,
    task_id,
    node,
    provider,
    tool_call_id,
    response_model,  // the reply's response_metadata.model_name
    response_id,     // the reply's id, else its response_metadata.id
  };
  static constexpr std::size_t kTextCount = static_cast<std::size_t>(Text::response_id) + 1;

  SpanKind kind = SpanKind::run;
  SpanStatus status = SpanStatus::ok;
  std::array<std::uint8_t, 16> trace_id{};
  std::array<std::uint8_t, 8> span_id{};
  std::array<std::uint8_t, 8> parent_span_id{};
  std::chrono::system_clock::time_point start{};
  std::chrono::system_clock::time_point end{};
  int step = -1;
  int checkpoints = 0;
  std::uint64_t bytes = 0;
  /// The token counts, the reply's usage_metadata's when the span has none; -1: not reported.
  std::int64_t input_tokens = -1;
  std::int64_t output_tokens = -1;
  /// The reply's response_metadata.finish_reason: a string, or a list of them.
  std::vector<std::string> finish_reasons{};
  std::string texts{};
  /// Where each text ends in `texts` (it starts where the one before ends).
  std::array<std::size_t, kTextCount> text_ends{};

  /// One of the texts (empty when the span has none).
  [[nodiscard]] std::string_view text(Text t) const noexcept {
    const auto i = static_cast<std::size_t>(t);
    const std::size_t begin = i == 0 ? 0 : text_ends[i - 1];
    return std::string_view(texts).substr(begin, text_ends[i] - begin);
  }
};

/// The record of an ended span. Reads span.reply (a model span's) and nothing else the span
/// points to. Throws std::bad_alloc only.
[[nodiscard]] OtlpSpanRecord otlp_span_record(const Span& span);

/// Appends the OTLP/JSON encoding of a span (one element of scopeSpans[].spans) to `out`.
/// Invalid UTF-8 in names and attributes is replaced by U+FFFD. Throws std::bad_alloc only.
void append_otlp_span(std::string& out, const OtlpSpanRecord& span);

/// Appends `text` to `out` as a JSON string: quoted; quote, backslash and control characters
/// escaped (\b \t \n \f \r, else \u00XX); valid UTF-8 copied as it is and each maximal invalid
/// subsequence replaced by U+FFFD (what nlohmann's dump does with error_handler_t::replace).
/// Throws std::bad_alloc only.
void append_json_string(std::string& out, std::string_view text);

/// The start of a request body up to the spans array (resource and scope), and its end.
[[nodiscard]] std::string otlp_body_prefix(const OtlpOptions& options);
inline constexpr std::string_view kOtlpBodySuffix = "]}]}]}";

/// Whether `sampler` keeps the trace of `context`.
[[nodiscard]] bool otlp_sampled(OtlpSampler sampler, double ratio,
                                const TraceContext& context) noexcept;

}  // namespace sg::detail
