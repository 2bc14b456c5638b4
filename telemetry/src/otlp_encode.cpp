// SPDX-License-Identifier: MIT
// The OTLP/JSON encoding of spans (the protobuf JSON mapping of opentelemetry/proto/trace/v1),
// with the GenAI semantic conventions' names and attributes, and the trace samplers. A callback
// copies its span into a record (otlp_span_record); the exporter thread writes the records'
// JSON straight into a request body (append_otlp_span), with no JSON document in between.

#include <stategraph/core/version.hpp>

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "telemetry_detail.hpp"

namespace sg {
namespace {

using Record = detail::OtlpSpanRecord;
using Text = Record::Text;
using namespace std::string_view_literals;

constexpr char kHexDigits[] = "0123456789abcdef";
/// U+FFFD, in UTF-8: what replaces invalid UTF-8.
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

/// Appends `bytes` as lowercase hex digits.
template <std::size_t N>
void append_hex(std::string& out, const std::array<std::uint8_t, N>& bytes) {
  char digits[2 * N];
  for (std::size_t i = 0; i < N; ++i) {
    digits[2 * i] = kHexDigits[bytes[i] >> 4];
    digits[2 * i + 1] = kHexDigits[bytes[i] & 0xF];
  }
  out.append(digits, 2 * N);
}

/// Appends `value` in decimal.
void append_decimal(std::string& out, std::int64_t value) {
  const fmt::format_int digits(value);
  out.append(digits.data(), digits.size());
}

/// Appends `t` in nanoseconds since the Unix epoch (0 before it), in decimal.
void append_unix_nanos(std::string& out, std::chrono::system_clock::time_point t) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch());
  append_decimal(out, ns.count() < 0 ? 0 : ns.count());
}

/// The length of the well-formed UTF-8 sequence `p` starts with (2 to 4 bytes, p[0] >= 0x80),
/// or 0 when it is not one; then `bad` is the length of its maximal subpart that could start
/// a well-formed sequence (1 to 3 bytes), which one U+FFFD replaces (Unicode's table 3-7).
std::size_t utf8_sequence(const unsigned char* p, const unsigned char* end, std::size_t& bad) {
  const unsigned char lead = *p;
  std::size_t continuations = 0;
  unsigned char low = 0x80;  // the second byte's range
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    continuations = 1;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    continuations = 2;
    if (lead == 0xE0) low = 0xA0;   // no overlong form
    if (lead == 0xED) high = 0x9F;  // no surrogate
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    continuations = 3;
    if (lead == 0xF0) low = 0x90;   // no overlong form
    if (lead == 0xF4) high = 0x8F;  // nothing above U+10FFFF
  } else {
    bad = 1;  // a continuation byte, or a lead byte no sequence starts with
    return 0;
  }
  for (std::size_t i = 1; i <= continuations; ++i) {
    if (p + i == end || p[i] < low || p[i] > high) {
      bad = i;
      return 0;
    }
    low = 0x80;
    high = 0xBF;
  }
  return continuations + 1;
}

/// Whether a byte needs more than a copy into a JSON string: a control character, a quote or a
/// backslash (escaped), or a byte of a multi-byte UTF-8 sequence (checked).
constexpr bool needs_care(unsigned char c) noexcept {
  return c < 0x20 || c == '"' || c == '\\' || c >= 0x80;
}

/// Whether one of the 8 bytes of `w` needs care; exact (the haszero and hasless tricks of Bit
/// Twiddling Hacks: a byte's high bit is set after the subtraction only when it was below).
constexpr bool any_needs_care(std::uint64_t w) noexcept {
  constexpr std::uint64_t kOnes = 0x0101010101010101;
  constexpr std::uint64_t kHighs = 0x8080808080808080;
  const auto zero_byte = [](std::uint64_t v) { return (v - kOnes) & ~v; };
  return (((w - kOnes * 0x20) | w | zero_byte(w ^ (kOnes * '"')) | zero_byte(w ^ (kOnes * '\\'))) &
          kHighs) != 0;
}

/// Appends `text` escaped for a JSON string, without the quotes.
void append_json_chars(std::string& out, std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* const end = p + text.size();
  const auto* copied = p;  // the bytes from here to p are appended as they are
  const auto flush = [&] {
    out.append(reinterpret_cast<const char*>(copied), static_cast<std::size_t>(p - copied));
  };
  for (;;) {
    // To the next byte that needs care: 8 bytes at a time, then one by one.
    for (std::uint64_t w = 0; end - p >= 8; p += 8) {
      std::memcpy(&w, p, sizeof w);
      if (any_needs_care(w)) break;
    }
    while (p != end && !needs_care(*p)) ++p;
    if (p == end) break;
    const unsigned char c = *p;
    if (c >= 0x80) {
      std::size_t bad = 0;
      if (const std::size_t n = utf8_sequence(p, end, bad); n > 0) {
        p += n;
        continue;
      }
      flush();
      out += kReplacement;
      p += bad;
      copied = p;
      continue;
    }
    flush();
    switch (c) {
      case '"':
        out += "\\\""sv;
        break;
      case '\\':
        out += "\\\\"sv;
        break;
      case '\b':
        out += "\\b"sv;
        break;
      case '\t':
        out += "\\t"sv;
        break;
      case '\n':
        out += "\\n"sv;
        break;
      case '\f':
        out += "\\f"sv;
        break;
      case '\r':
        out += "\\r"sv;
        break;
      default: {
        const char escape[] = {'\\', 'u', '0', '0', kHexDigits[c >> 4], kHexDigits[c & 0xF]};
        out.append(escape, sizeof escape);
      }
    }
    copied = ++p;
  }
  flush();
}

/// Writes the entries of an attributes list, [{"key","value":{"<type>Value"}}], to a string
/// (the brackets are the caller's). The keys are written as they are (the names in this file,
/// which need no escaping) unless `escape_keys` (the resource's, which users choose).
class AttributeWriter {
 public:
  explicit AttributeWriter(std::string& out, bool escape_keys = false)
      : out_(out), escape_keys_(escape_keys) {}

  /// A string attribute; none when `value` is empty.
  void str(std::string_view key, std::string_view value) {
    if (value.empty()) return;
    begin(key);
    out_ += R"(","value":{"stringValue":")"sv;
    append_json_chars(out_, value);
    out_ += R"("}})"sv;
  }
  void integer(std::string_view key, std::int64_t value) {
    // int64 is a decimal string in the protobuf JSON mapping.
    begin(key);
    out_ += R"(","value":{"intValue":")"sv;
    append_decimal(out_, value);
    out_ += R"("}})"sv;
  }
  /// A list of strings; none when `values` is empty.
  void strings(std::string_view key, const std::vector<std::string>& values) {
    if (values.empty()) return;
    begin(key);
    out_ += R"(","value":{"arrayValue":{"values":[)"sv;
    for (std::size_t i = 0; i < values.size(); ++i) {
      out_ += i == 0 ? R"({"stringValue":")"sv : R"(,{"stringValue":")"sv;
      append_json_chars(out_, values[i]);
      out_ += R"("})"sv;
    }
    out_ += "]}}}"sv;
  }

 private:
  /// The entry up to its key's closing quote.
  void begin(std::string_view key) {
    out_ += first_ ? R"({"key":")"sv : R"(,{"key":")"sv;
    first_ = false;
    if (escape_keys_) {
      append_json_chars(out_, key);
    } else {
      out_ += key;
    }
  }

  std::string& out_;
  bool escape_keys_;
  bool first_ = true;
};

/// A string of a reply's response_metadata, empty when it has none.
std::string_view metadata_string(const Message& reply, const char* key) {
  if (!reply.response_metadata.is_object()) return {};
  const auto it = reply.response_metadata.find(key);
  return it != reply.response_metadata.end() && it->is_string()
             ? std::string_view(it->get_ref<const std::string&>())
             : std::string_view{};
}

/// response_metadata.finish_reason: a string, or a list of them (one per choice).
std::vector<std::string> finish_reasons(const Message& reply) {
  std::vector<std::string> out;
  if (!reply.response_metadata.is_object()) return out;
  const auto it = reply.response_metadata.find("finish_reason");
  if (it == reply.response_metadata.end()) return out;
  if (it->is_string() && !it->get_ref<const std::string&>().empty()) {
    out.push_back(it->get<std::string>());
  } else if (it->is_array()) {
    for (const auto& r : *it)
      if (r.is_string()) out.push_back(r.get<std::string>());
  }
  return out;
}

/// The GenAI attributes of the span's kind.
void add_kind_attributes(AttributeWriter& a, const Record& span) {
  const std::string_view name = span.text(Text::name);
  switch (span.kind) {
    case SpanKind::run:
      a.str("gen_ai.operation.name", "invoke_agent");
      a.str("gen_ai.agent.name", name);
      return;
    case SpanKind::node:
      return;
    case SpanKind::model:
      a.str("gen_ai.operation.name", "chat");
      a.str("gen_ai.provider.name", span.text(Text::provider));
      // the conventions' name before provider.name
      a.str("gen_ai.system", span.text(Text::provider));
      a.str("gen_ai.request.model", name);
      a.str("gen_ai.response.model", span.text(Text::response_model));
      a.str("gen_ai.response.id", span.text(Text::response_id));
      a.strings("gen_ai.response.finish_reasons", span.finish_reasons);
      if (span.input_tokens >= 0) a.integer("gen_ai.usage.input_tokens", span.input_tokens);
      if (span.output_tokens >= 0) a.integer("gen_ai.usage.output_tokens", span.output_tokens);
      return;
    case SpanKind::tool:
      a.str("gen_ai.operation.name", "execute_tool");
      a.str("gen_ai.tool.name", name);
      a.str("gen_ai.tool.call.id", span.text(Text::tool_call_id));
      a.str("gen_ai.tool.type", "function");
      return;
    case SpanKind::checkpoint:
      a.integer("stategraph.checkpoint.count", span.checkpoints);
      // uint64 bytes: a count that large is not a real write; clamp rather than wrap.
      a.integer("stategraph.checkpoint.bytes", span.bytes > static_cast<std::uint64_t>(INT64_MAX)
                                                   ? INT64_MAX
                                                   : static_cast<std::int64_t>(span.bytes));
      return;
  }
}

/// Where in the run: on every span.
void add_run_position(AttributeWriter& a, const Record& span) {
  a.str("gen_ai.conversation.id", span.text(Text::thread_id));
  a.str("stategraph.thread_id", span.text(Text::thread_id));
  a.str("stategraph.run_id", span.text(Text::run_id));
  a.str("stategraph.checkpoint_ns", span.text(Text::checkpoint_ns));
  a.str("stategraph.checkpoint_id", span.text(Text::checkpoint_id));
  if (span.step >= 0) a.integer("stategraph.step", span.step);
  a.str("stategraph.task_id", span.text(Text::task_id));
  // A node span is its node; model and tool spans name the node they ran in.
  const std::string_view node = span.text(Text::node);
  a.str("stategraph.node",
        !node.empty() || span.kind != SpanKind::node ? node : span.text(Text::name));
}

/// Appends the span's name, escaped for a JSON string: the GenAI conventions' "chat <model>",
/// "execute_tool <tool>", the graph's or the node's name.
void append_span_name(std::string& out, const Record& span) {
  const std::string_view name = span.text(Text::name);
  std::string_view operation;
  switch (span.kind) {
    case SpanKind::run:
      operation = "invoke_agent";
      break;
    case SpanKind::node:
      operation = "node";
      break;
    case SpanKind::model:
      operation = "chat";
      break;
    case SpanKind::tool:
      operation = "execute_tool";
      break;
    case SpanKind::checkpoint:
      out += "checkpoint write"sv;
      return;
  }
  if (name.empty()) {
    out += operation;
    return;
  }
  if (span.kind == SpanKind::model || span.kind == SpanKind::tool) {
    out += operation;
    out += ' ';
  }
  append_json_chars(out, name);
}

}  // namespace

namespace detail {

OtlpSpanRecord otlp_span_record(const Span& span) {
  OtlpSpanRecord r;
  r.kind = span.kind;
  r.status = span.status;
  r.trace_id = span.context.trace_id;
  r.span_id = span.context.span_id;
  r.parent_span_id = span.parent_span_id;
  r.start = span.start;
  r.end = span.end;
  r.step = span.step;
  r.checkpoints = span.checkpoints;
  r.bytes = span.bytes;
  std::string_view response_model;
  std::string_view response_id;
  if (span.kind == SpanKind::model) {
    if (span.reply != nullptr) {
      response_model = metadata_string(*span.reply, "model_name");
      response_id = !span.reply->id.empty() ? span.reply->id : metadata_string(*span.reply, "id");
      r.finish_reasons = finish_reasons(*span.reply);
    }
    r.input_tokens = span_tokens(span, span.input_tokens, "input_tokens");
    r.output_tokens = span_tokens(span, span.output_tokens, "output_tokens");
  }
  // In the order of OtlpSpanRecord::Text.
  const std::array<std::string_view, OtlpSpanRecord::kTextCount> texts = {
      span.name,
      span.status == SpanStatus::error ? std::string_view(span.error) : std::string_view{},
      span.status == SpanStatus::error ? std::string_view(span.error_type) : std::string_view{},
      span.thread_id,
      span.run_id,
      span.checkpoint_ns,
      span.checkpoint_id,
      span.task_id,
      span.node,
      span.provider,
      span.tool_call_id,
      response_model,
      response_id,
  };
  std::size_t size = 0;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    size += texts[i].size();
    r.text_ends[i] = size;
  }
  r.texts.reserve(size);
  for (const std::string_view t : texts) {
    if (!t.empty()) r.texts += t;
  }
  return r;
}

void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  append_json_chars(out, text);
  out += '"';
}

void append_otlp_span(std::string& out, const OtlpSpanRecord& span) {
  // The keys in alphabetical order, as a JSON library that sorts them writes them.
  const std::string_view error_type =
      span.text(Text::error_type).empty() ? "exception" : span.text(Text::error_type);
  out += R"({"attributes":[)"sv;
  {
    AttributeWriter a(out);
    add_kind_attributes(a, span);
    add_run_position(a, span);
    if (span.status == SpanStatus::error) {
      a.str("error.type", error_type);
    } else if (span.status != SpanStatus::ok) {
      // Interrupted or cancelled: neither a success nor an error; the status stays unset, the
      // attribute says why.
      a.str("stategraph.status", to_string(span.status));
    }
  }
  out += R"(],"endTimeUnixNano":")"sv;
  append_unix_nanos(out, span.end);
  out += '"';
  if (span.status == SpanStatus::error) {
    out += R"(,"events":[{"attributes":[)"sv;
    AttributeWriter event(out);
    event.str("exception.type", error_type);
    event.str("exception.message", span.text(Text::error));
    out += R"(],"name":"exception","timeUnixNano":")"sv;
    append_unix_nanos(out, span.end);
    out += R"("}])"sv;
  }
  // kind: the protobuf enum SpanKind (1 internal, 3 client).
  out += span.kind == SpanKind::model ? R"(,"kind":3,"name":")"sv : R"(,"kind":1,"name":")"sv;
  append_span_name(out, span);
  if (span.parent_span_id != std::array<std::uint8_t, 8>{}) {
    out += R"(","parentSpanId":")"sv;
    append_hex(out, span.parent_span_id);
  }
  out += R"(","spanId":")"sv;
  append_hex(out, span.span_id);
  out += R"(","startTimeUnixNano":")"sv;
  append_unix_nanos(out, span.start);
  // code: the protobuf enum Status.StatusCode (0 unset, 1 ok, 2 error).
  switch (span.status) {
    case SpanStatus::ok:
      out += R"(","status":{"code":1},"traceId":")"sv;
      break;
    case SpanStatus::error:
      out += R"(","status":{"code":2,"message":")"sv;
      append_json_chars(out, span.text(Text::error));
      out += R"("},"traceId":")"sv;
      break;
    case SpanStatus::interrupted:
    case SpanStatus::cancelled:
      // Neither a success nor an error: unset.
      out += R"(","status":{"code":0},"traceId":")"sv;
      break;
  }
  append_hex(out, span.trace_id);
  out += R"("})"sv;
}

std::string otlp_body_prefix(const OtlpOptions& options) {
  // {"resourceSpans":[{"resource":{...},"scopeSpans":[{"scope":{...},"spans":[ ... ]}]}]}
  std::string body = R"({"resourceSpans":[{"resource":{"attributes":[)";
  {
    AttributeWriter resource(body, /*escape_keys=*/true);
    for (const auto& [key, value] : otlp_resource_attributes(options)) resource.str(key, value);
  }
  body += R"(]},"scopeSpans":[{"scope":{"name":"stategraph","version":)"sv;
  append_json_string(body, kVersion);
  body += R"(},"spans":[)"sv;
  return body;
}

bool otlp_sampled(OtlpSampler sampler, double ratio, const TraceContext& context) noexcept {
  const auto by_ratio = [&] {
    if (ratio >= 1.0) return true;
    if (!(ratio > 0.0)) return false;
    // OpenTelemetry's TraceIdRatioBased: the trace id's low 8 bytes (big-endian), less their top
    // bit, against ratio * 2^63.
    std::uint64_t low = 0;
    for (std::size_t i = 8; i < 16; ++i) low = low << 8 | context.trace_id[i];
    const auto bound = static_cast<std::uint64_t>(std::ldexp(ratio, 63));
    return (low >> 1) < bound;
  };
  switch (sampler) {
    case OtlpSampler::always_on:
      return true;
    case OtlpSampler::always_off:
      return false;
    case OtlpSampler::traceidratio:
      return by_ratio();
    case OtlpSampler::parentbased_always_on:
      return context.remote ? context.sampled : true;
    case OtlpSampler::parentbased_always_off:
      return context.remote ? context.sampled : false;
    case OtlpSampler::parentbased_traceidratio:
      return context.remote ? context.sampled : by_ratio();
  }
  return true;
}

}  // namespace detail

std::map<std::string, std::string> otlp_resource_attributes(const OtlpOptions& options) {
  std::map<std::string, std::string> out = {
      {"service.version", std::string(kVersion)},
      {"telemetry.sdk.name", "stategraph"},
      {"telemetry.sdk.language", "cpp"},
      {"telemetry.sdk.version", std::string(kVersion)},
  };
  for (const auto& [key, value] : options.resource_attributes) out[key] = value;
  out["service.name"] = options.service_name.empty() ? "stategraph" : options.service_name;
  return out;
}

}  // namespace sg
