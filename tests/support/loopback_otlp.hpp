// SPDX-License-Identifier: MIT
#pragma once
// A loopback OpenTelemetry collector for tests: it accepts OTLP/HTTP JSON trace exports
// (POST .../v1/traces) on 127.0.0.1 and keeps the spans they carry, parsed. It runs on the
// loopback OpenAI server's machinery (LoopbackOpenAI with a handler), so failures are queued
// with server().push(LoopbackReply::error(500, "...")).
//
//   sg::testing::LoopbackOtlp collector;
//   sg::OtlpOptions options{.endpoint = collector.traces_url()};
//   ... export ...
//   REQUIRE(collector.wait_for_spans(3));
//   CHECK(collector.span("chat gpt-4o").attribute("gen_ai.request.model") == "gpt-4o");
//
// All member functions are thread-safe.

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "support/loopback_openai.hpp"

namespace sg::testing {

/// One received span. Attribute values are plain JSON: an OTLP stringValue as a string,
/// intValue (a decimal string on the wire) as an integer, doubleValue, boolValue, arrayValue as
/// an array of such values.
struct OtlpSpan {
  std::string trace_id{};
  std::string span_id{};
  /// "" for a root span.
  std::string parent_span_id{};
  std::string name{};
  int kind = 0;
  std::uint64_t start_unix_nano = 0;
  std::uint64_t end_unix_nano = 0;
  /// key -> value.
  nlohmann::json attributes = nlohmann::json::object();
  /// Status code (0 unset, 1 ok, 2 error) and message.
  int status_code = 0;
  std::string status_message{};
  /// Events: [{"name", "attributes": {key: value}}].
  nlohmann::json events = nlohmann::json::array();
  /// The resource's attributes (key -> value) and the scope ({"name", "version"}).
  nlohmann::json resource = nlohmann::json::object();
  nlohmann::json scope = nlohmann::json::object();
  /// The span as it was sent.
  nlohmann::json raw{};

  /// The attribute `key`, or null.
  [[nodiscard]] nlohmann::json attribute(std::string_view key) const;
  [[nodiscard]] bool has(std::string_view key) const;
};

/// The collector. Answers trace exports with 200 and `{}` unless a reply was pushed to
/// server(); anything else gets 404.
class LoopbackOtlp {
 public:
  LoopbackOtlp();
  ~LoopbackOtlp();
  LoopbackOtlp(const LoopbackOtlp&) = delete;
  LoopbackOtlp& operator=(const LoopbackOtlp&) = delete;

  /// "http://127.0.0.1:PORT": OTEL_EXPORTER_OTLP_ENDPOINT's form.
  [[nodiscard]] std::string endpoint() const;
  /// "http://127.0.0.1:PORT/v1/traces": OtlpOptions::endpoint's form.
  [[nodiscard]] std::string traces_url() const;

  /// Waits until at least `n` spans were received; false when `timeout` passed first.
  bool wait_for_spans(std::size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  /// Every span received so far, in arrival order.
  [[nodiscard]] std::vector<OtlpSpan> spans() const;
  /// The first span named `name`; throws std::out_of_range when there is none.
  [[nodiscard]] OtlpSpan span(std::string_view name) const;
  /// The trace export requests that were accepted (200), with their bodies.
  [[nodiscard]] std::vector<LoopbackRequest> exports() const;
  /// Every request, whatever its answer (the underlying server's record).
  [[nodiscard]] std::vector<LoopbackRequest> requests() const;

  /// The server underneath: push() failures, stats().
  [[nodiscard]] LoopbackOpenAI& server();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The spans of one OTLP/JSON ExportTraceServiceRequest body; throws std::invalid_argument when
/// it is not one.
[[nodiscard]] std::vector<OtlpSpan> parse_otlp_traces(const nlohmann::json& body);

}  // namespace sg::testing
