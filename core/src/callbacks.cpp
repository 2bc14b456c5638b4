// SPDX-License-Identifier: MIT
#include <stategraph/core/callbacks.hpp>
#include <stategraph/core/error.hpp>
#include <stategraph/core/log.hpp>

#include <random>

namespace sg {
namespace {

constexpr char kHex[] = "0123456789abcdef";

template <std::size_t N>
std::string to_hex(const std::array<std::uint8_t, N>& bytes) {
  std::string out(2 * N, '0');
  for (std::size_t i = 0; i < N; ++i) {
    out[2 * i] = kHex[bytes[i] >> 4];
    out[2 * i + 1] = kHex[bytes[i] & 0xF];
  }
  return out;
}

int hex_digit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // W3C: lowercase only
}

template <std::size_t N>
bool from_hex(std::string_view text, std::array<std::uint8_t, N>& out) noexcept {
  if (text.size() != 2 * N) return false;
  bool any = false;
  for (std::size_t i = 0; i < N; ++i) {
    const int hi = hex_digit(text[2 * i]);
    const int lo = hex_digit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
    any = any || out[i] != 0;
  }
  return any;
}

/// Random ids: a per-thread generator, seeded once from the system's entropy.
template <std::size_t N>
void fill_random(std::array<std::uint8_t, N>& out) {
  thread_local std::mt19937_64 rng{[] {
    std::random_device device;
    return (static_cast<std::uint64_t>(device()) << 32) ^ device();
  }()};
  for (std::size_t i = 0; i < N; i += 8) {
    std::uint64_t word = rng();
    for (std::size_t k = i; k < N && k < i + 8; ++k, word >>= 8)
      out[k] = static_cast<std::uint8_t>(word);
  }
  if (out == std::array<std::uint8_t, N>{}) out[N - 1] = 1;
}

thread_local std::uint64_t checkpoint_bytes = 0;

}  // namespace

std::string_view to_string(SpanKind kind) noexcept {
  switch (kind) {
    case SpanKind::run:
      return "run";
    case SpanKind::node:
      return "node";
    case SpanKind::model:
      return "model";
    case SpanKind::tool:
      return "tool";
    case SpanKind::checkpoint:
      return "checkpoint";
  }
  return "run";
}

std::string_view to_string(SpanStatus status) noexcept {
  switch (status) {
    case SpanStatus::ok:
      return "ok";
    case SpanStatus::error:
      return "error";
    case SpanStatus::interrupted:
      return "interrupted";
    case SpanStatus::cancelled:
      return "cancelled";
  }
  return "error";
}

bool TraceContext::valid() const noexcept {
  return trace_id != std::array<std::uint8_t, 16>{} && span_id != std::array<std::uint8_t, 8>{};
}

std::string TraceContext::trace_id_hex() const {
  return to_hex(trace_id);
}

std::string TraceContext::span_id_hex() const {
  return to_hex(span_id);
}

std::string TraceContext::traceparent() const {
  return "00-" + trace_id_hex() + "-" + span_id_hex() + (sampled ? "-01" : "-00");
}

std::optional<TraceContext> TraceContext::parse(std::string_view header) noexcept {
  // version "-" trace-id "-" parent-id "-" flags; a later version may append "-" fields.
  while (!header.empty() && (header.front() == ' ' || header.front() == '\t'))
    header.remove_prefix(1);
  while (!header.empty() && (header.back() == ' ' || header.back() == '\t'))
    header.remove_suffix(1);
  if (header.size() < 55) return std::nullopt;
  const std::string_view version = header.substr(0, 2);
  if (version == "ff" || hex_digit(version[0]) < 0 || hex_digit(version[1]) < 0) {
    return std::nullopt;
  }
  if (version == "00" && header.size() != 55) return std::nullopt;
  if (header.size() > 55 && header[55] != '-') return std::nullopt;
  if (header[2] != '-' || header[35] != '-' || header[52] != '-') return std::nullopt;
  TraceContext out;
  if (!from_hex(header.substr(3, 32), out.trace_id)) return std::nullopt;
  if (!from_hex(header.substr(36, 16), out.span_id)) return std::nullopt;
  const int hi = hex_digit(header[53]);
  const int lo = hex_digit(header[54]);
  if (hi < 0 || lo < 0) return std::nullopt;
  out.sampled = (lo & 1) != 0;
  out.remote = true;
  return out;
}

TraceContext TraceContext::root() {
  TraceContext out;
  fill_random(out.trace_id);
  fill_random(out.span_id);
  return out;
}

TraceContext TraceContext::child() const {
  TraceContext out = *this;
  fill_random(out.span_id);
  return out;
}

void note_checkpoint_bytes(std::uint64_t bytes) noexcept {
  checkpoint_bytes += bytes;
}

namespace detail {

std::uint64_t checkpoint_bytes_noted() noexcept {
  return checkpoint_bytes;
}

void log_callback_error() noexcept {
  if (!log_enabled(LogLevel::warn)) return;
  std::string what = "unknown exception";
  try {
    throw;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  log(LogLevel::warn, "a callback threw; the run goes on", {{"error", what}});
}

void set_span_error(Span& span, const std::exception_ptr& error) {
  if (!error) return;
  span.status = SpanStatus::error;
  try {
    std::rethrow_exception(error);
  } catch (const CancelledError& e) {
    span.status = SpanStatus::cancelled;
    span.error = e.what();
    span.error_type = e.code();
  } catch (const Error& e) {
    span.error = e.what();
    span.error_type = e.code();
  } catch (const std::exception& e) {
    span.error = e.what();
    span.error_type = "exception";
  } catch (...) {
    span.error = "unknown exception";
    span.error_type = "exception";
  }
}

}  // namespace detail

}  // namespace sg
