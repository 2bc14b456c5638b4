// SPDX-License-Identifier: MIT
#include "support/loopback_otlp.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace sg::testing {
namespace {

using nlohmann::json;

[[noreturn]] void not_otlp(const std::string& what) {
  throw std::invalid_argument("not an OTLP traces request: " + what);
}

/// An OTLP AnyValue as plain JSON.
json any_value(const json& v) {
  if (!v.is_object()) not_otlp("a value is not an object");
  if (const auto s = v.find("stringValue"); s != v.end()) return *s;
  if (const auto i = v.find("intValue"); i != v.end()) {
    // int64 is a decimal string in the JSON mapping; a number is accepted as well.
    if (i->is_string()) return std::stoll(i->get<std::string>());
    return *i;
  }
  if (const auto d = v.find("doubleValue"); d != v.end()) return *d;
  if (const auto b = v.find("boolValue"); b != v.end()) return *b;
  if (const auto a = v.find("arrayValue"); a != v.end()) {
    json out = json::array();
    for (const auto& e : a->value("values", json::array())) out.push_back(any_value(e));
    return out;
  }
  not_otlp("an unknown value type: " + v.dump());
}

/// [{"key", "value"}] as {key: value}.
json key_values(const json& list) {
  json out = json::object();
  if (list.is_null()) return out;
  if (!list.is_array()) not_otlp("attributes are not a list");
  for (const auto& kv : list) {
    if (!kv.is_object() || !kv.contains("key") || !kv["key"].is_string()) {
      not_otlp("an attribute has no key");
    }
    out[kv["key"].get<std::string>()] = any_value(kv.value("value", json::object()));
  }
  return out;
}

std::uint64_t nanos(const json& span, const char* key) {
  const auto it = span.find(key);
  if (it == span.end()) return 0;
  if (!it->is_string()) not_otlp(std::string(key) + " is not a decimal string");
  return std::stoull(it->get<std::string>());
}

bool is_hex(const std::string& s, std::size_t size) {
  return s.size() == size && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

json OtlpSpan::attribute(std::string_view key) const {
  const auto it = attributes.find(key);
  return it == attributes.end() ? json() : *it;
}

bool OtlpSpan::has(std::string_view key) const {
  return attributes.contains(key);
}

std::vector<OtlpSpan> parse_otlp_traces(const json& body) {
  if (!body.is_object() || !body.contains("resourceSpans") || !body["resourceSpans"].is_array()) {
    not_otlp("no resourceSpans list");
  }
  std::vector<OtlpSpan> out;
  for (const auto& rs : body["resourceSpans"]) {
    const json resource =
        key_values(rs.value("resource", json::object()).value("attributes", json()));
    for (const auto& ss : rs.value("scopeSpans", json::array())) {
      const json scope = ss.value("scope", json::object());
      for (const auto& s : ss.value("spans", json::array())) {
        OtlpSpan span;
        span.trace_id = s.value("traceId", "");
        span.span_id = s.value("spanId", "");
        span.parent_span_id = s.value("parentSpanId", "");
        if (!is_hex(span.trace_id, 32) || !is_hex(span.span_id, 16) ||
            (!span.parent_span_id.empty() && !is_hex(span.parent_span_id, 16))) {
          not_otlp("ids are not lowercase hex of the right size: " + s.dump());
        }
        span.name = s.value("name", "");
        span.kind = s.value("kind", 0);
        span.start_unix_nano = nanos(s, "startTimeUnixNano");
        span.end_unix_nano = nanos(s, "endTimeUnixNano");
        span.attributes = key_values(s.value("attributes", json()));
        const json status = s.value("status", json::object());
        span.status_code = status.value("code", 0);
        span.status_message = status.value("message", "");
        for (const auto& e : s.value("events", json::array())) {
          span.events.push_back({{"name", e.value("name", "")},
                                 {"attributes", key_values(e.value("attributes", json()))}});
        }
        span.resource = resource;
        span.scope = scope;
        span.raw = s;
        out.push_back(std::move(span));
      }
    }
  }
  return out;
}

struct LoopbackOtlp::Impl {
  mutable std::mutex mu;
  std::condition_variable received;
  std::vector<OtlpSpan> spans;
  std::vector<LoopbackRequest> exports;
  // Last: destroyed first, so that no request reaches handle() once the rest is gone.
  LoopbackOpenAI server;

  std::optional<LoopbackReply> handle(const LoopbackRequest& request) {
    if (request.method != "POST" || !request.target.ends_with("/v1/traces")) {
      return LoopbackReply::json({{"error", "not found"}}, 404);
    }
    if (request.header("content-type").rfind("application/json", 0) != 0) {
      return LoopbackReply::json({{"error", "expected application/json"}}, 415);
    }
    std::vector<OtlpSpan> parsed;
    try {
      parsed = parse_otlp_traces(json::parse(request.body));
    } catch (const std::exception& e) {
      return LoopbackReply::json({{"error", e.what()}}, 400);
    }
    {
      std::lock_guard lock(mu);
      for (auto& s : parsed) spans.push_back(std::move(s));
      exports.push_back(request);
    }
    received.notify_all();
    return LoopbackReply::json(json::object());
  }
};

LoopbackOtlp::LoopbackOtlp() : impl_(std::make_unique<Impl>()) {
  impl_->server.set_handler(
      [impl = impl_.get()](const LoopbackRequest& r) { return impl->handle(r); });
}

LoopbackOtlp::~LoopbackOtlp() = default;

std::string LoopbackOtlp::endpoint() const {
  return "http://127.0.0.1:" + std::to_string(impl_->server.port());
}

std::string LoopbackOtlp::traces_url() const {
  return endpoint() + "/v1/traces";
}

bool LoopbackOtlp::wait_for_spans(std::size_t n, std::chrono::milliseconds timeout) {
  std::unique_lock lock(impl_->mu);
  return impl_->received.wait_for(lock, timeout, [&] { return impl_->spans.size() >= n; });
}

std::vector<OtlpSpan> LoopbackOtlp::spans() const {
  std::lock_guard lock(impl_->mu);
  return impl_->spans;
}

OtlpSpan LoopbackOtlp::span(std::string_view name) const {
  std::lock_guard lock(impl_->mu);
  for (const auto& s : impl_->spans) {
    if (s.name == name) return s;
  }
  throw std::out_of_range("no span named '" + std::string(name) + "' was received");
}

std::vector<LoopbackRequest> LoopbackOtlp::exports() const {
  std::lock_guard lock(impl_->mu);
  return impl_->exports;
}

std::vector<LoopbackRequest> LoopbackOtlp::requests() const {
  return impl_->server.requests();
}

LoopbackOpenAI& LoopbackOtlp::server() {
  return impl_->server;
}

}  // namespace sg::testing
