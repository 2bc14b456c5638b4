// SPDX-License-Identifier: MIT
// OtlpOptions from OpenTelemetry's environment variables (the SDK configuration specification).

#include <stategraph/core/error.hpp>
#include <stategraph/telemetry/otlp.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>

namespace sg {
namespace {

[[noreturn]] void malformed(std::string_view variable, std::string_view value,
                            std::string_view expected) {
  throw Error(errc::kInvalidArgument, std::string(variable) + "='" + std::string(value) +
                                          "' is malformed: " + std::string(expected));
}

/// The same without the value: the headers variables hold API keys.
[[noreturn]] void malformed_secret(std::string_view variable, std::string_view expected) {
  throw Error(errc::kInvalidArgument,
              std::string(variable) + " is malformed: " + std::string(expected));
}

std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// Percent-decodes `text` (W3C Baggage's encoding of OTEL_RESOURCE_ATTRIBUTES and the headers
/// variables); false for a '%' not followed by two hex digits.
bool percent_decode(std::string_view text, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    const int hi = i + 1 < text.size() ? hex_value(text[i + 1]) : -1;
    const int lo = i + 2 < text.size() ? hex_value(text[i + 2]) : -1;
    if (hi < 0 || lo < 0) return false;
    out += static_cast<char>(hi << 4 | lo);
    i += 2;
  }
  return true;
}

[[noreturn]] void malformed_key_values(std::string_view variable, std::string_view value,
                                       bool secret, const std::string& why) {
  if (secret) malformed_secret(variable, why);
  malformed(variable, value, why);
}

/// Parses "k=v,k2=v2" into `out` (later keys win): keys and values trimmed and
/// percent-decoded. Throws naming `variable` for a pair without '=', an empty key or a bad
/// escape; the message quotes the value unless it is `secret`.
void parse_key_values(std::string_view variable, std::string_view value, bool secret,
                      std::map<std::string, std::string>& out) {
  const auto fail = [&](const std::string& why) {
    malformed_key_values(variable, value, secret, why);
  };
  std::size_t pos = 0;
  while (pos <= value.size()) {
    const std::size_t comma = std::min(value.find(',', pos), value.size());
    const std::string_view item = trim_blanks(value.substr(pos, comma - pos));
    pos = comma + 1;
    if (item.empty()) continue;  // "a=1,,b=2" or a trailing comma
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      fail(secret ? "an item is not key=value" : "'" + std::string(item) + "' is not key=value");
    }
    const std::string_view key = trim_blanks(item.substr(0, eq));
    if (key.empty()) fail("a key is empty");
    std::string decoded_key;
    std::string decoded;
    if (!percent_decode(key, decoded_key) ||
        !percent_decode(trim_blanks(item.substr(eq + 1)), decoded)) {
      fail("a '%' is not followed by two hex digits");
    }
    out[decoded_key] = trim_blanks(decoded);
  }
}

std::uint64_t parse_unsigned(std::string_view variable, std::string_view raw, bool positive) {
  const std::string_view text = trim_blanks(raw);
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) {
    malformed(variable, raw, positive ? "expected a positive integer" : "expected an integer >= 0");
  }
  if (positive && n == 0) malformed(variable, raw, "expected a positive integer");
  return n;
}

std::chrono::milliseconds parse_millis(std::string_view variable, std::string_view raw,
                                       bool positive) {
  const std::uint64_t n = parse_unsigned(variable, raw, positive);
  constexpr std::uint64_t kMaxMillis = 24ULL * 3600 * 1000;  // a day: beyond is a mistake
  if (n > kMaxMillis) malformed(variable, raw, "expected milliseconds, at most a day");
  return std::chrono::milliseconds(n);
}

std::string lower_case(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool is_http_url(std::string_view url) {
  const std::string lower = lower_case(url.substr(0, 8));
  const std::size_t scheme = lower.starts_with("http://")    ? 7
                             : lower.starts_with("https://") ? 8
                                                             : 0;
  return scheme != 0 && url.size() > scheme && url[scheme] != '/';
}

}  // namespace

std::string_view to_string(OtlpSampler sampler) noexcept {
  switch (sampler) {
    case OtlpSampler::always_on:
      return "always_on";
    case OtlpSampler::always_off:
      return "always_off";
    case OtlpSampler::traceidratio:
      return "traceidratio";
    case OtlpSampler::parentbased_always_on:
      return "parentbased_always_on";
    case OtlpSampler::parentbased_always_off:
      return "parentbased_always_off";
    case OtlpSampler::parentbased_traceidratio:
      return "parentbased_traceidratio";
  }
  return "parentbased_always_on";
}

OtlpSampler parse_otlp_sampler(std::string_view name) {
  for (const OtlpSampler s :
       {OtlpSampler::always_on, OtlpSampler::always_off, OtlpSampler::traceidratio,
        OtlpSampler::parentbased_always_on, OtlpSampler::parentbased_always_off,
        OtlpSampler::parentbased_traceidratio}) {
    if (name == to_string(s)) return s;
  }
  throw Error(errc::kInvalidArgument,
              "unknown sampler '" + std::string(name) +
                  "' (always_on, always_off, traceidratio, parentbased_always_on, "
                  "parentbased_always_off or parentbased_traceidratio)");
}

std::optional<OtlpOptions> otlp_options_from_environment(const EnvLookup& getenv) {
  const auto get = [&](std::string_view name) -> std::optional<std::string> {
    std::optional<std::string> v = getenv(name);
    if (v && trim_blanks(*v).empty()) return std::nullopt;  // empty: unset
    return v;
  };

  if (const auto disabled = get("OTEL_SDK_DISABLED")) {
    const std::string v = lower_case(trim_blanks(*disabled));
    if (v == "true") return std::nullopt;
    if (v != "false") malformed("OTEL_SDK_DISABLED", *disabled, "expected true or false");
  }

  if (const auto exporters = get("OTEL_TRACES_EXPORTER")) {
    // A list: "otlp" sends here, "none" alone turns tracing off; no other exporter is built in.
    bool otlp = false;
    bool none = false;
    std::string_view rest = *exporters;
    while (!rest.empty()) {
      const std::size_t comma = std::min(rest.find(','), rest.size());
      const std::string name = lower_case(trim_blanks(rest.substr(0, comma)));
      rest.remove_prefix(std::min(comma + 1, rest.size()));
      if (name == "otlp") {
        otlp = true;
      } else if (name == "none") {
        none = true;
      } else if (!name.empty()) {
        malformed("OTEL_TRACES_EXPORTER", *exporters,
                  "'" + name + "' is not supported (otlp or none)");
      }
    }
    if (!otlp && none) return std::nullopt;
  }
  for (const char* variable :
       {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"}) {
    const auto protocol = get(variable);
    if (!protocol) continue;
    // OTLP/HTTP takes JSON and protobuf bodies on the same endpoint: both are served by
    // sending JSON. gRPC is another transport on another port.
    const std::string p = lower_case(trim_blanks(*protocol));
    if (p != "http/json" && p != "http/protobuf") {
      malformed(variable, *protocol,
                "only OTLP/HTTP is supported (http/json or http/protobuf, port 4318)");
    }
    break;  // the traces variable wins
  }

  OtlpOptions options;
  if (const auto traces = get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) {
    options.endpoint = trim_blanks(*traces);
    if (!is_http_url(options.endpoint)) {
      malformed("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", *traces, "expected an http(s) URL");
    }
  } else if (const auto base = get("OTEL_EXPORTER_OTLP_ENDPOINT")) {
    std::string url(trim_blanks(*base));
    if (!is_http_url(url))
      malformed("OTEL_EXPORTER_OTLP_ENDPOINT", *base, "expected an http(s) URL");
    while (url.ends_with('/')) url.pop_back();
    options.endpoint = url + "/v1/traces";
  } else {
    return std::nullopt;  // no collector: tracing off
  }

  if (const auto h = get("OTEL_EXPORTER_OTLP_HEADERS")) {
    parse_key_values("OTEL_EXPORTER_OTLP_HEADERS", *h, true, options.headers);
  }
  if (const auto h = get("OTEL_EXPORTER_OTLP_TRACES_HEADERS")) {
    parse_key_values("OTEL_EXPORTER_OTLP_TRACES_HEADERS", *h, true, options.headers);
  }
  for (const auto& [key, value] : options.headers) {
    const bool bad_key = std::any_of(
        key.begin(), key.end(), [](unsigned char c) { return c <= ' ' || c >= 127 || c == ':'; });
    const bool bad_value = value.find_first_of("\r\n") != std::string::npos;
    if (bad_key || bad_value) {
      malformed_secret(get("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
                           ? "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
                           : "OTEL_EXPORTER_OTLP_HEADERS",
                       bad_key ? "'" + key + "' is not a valid HTTP header name"
                               : "the value of header '" + key + "' holds a line break");
    }
  }

  if (const auto attrs = get("OTEL_RESOURCE_ATTRIBUTES")) {
    parse_key_values("OTEL_RESOURCE_ATTRIBUTES", *attrs, false, options.resource_attributes);
  }
  if (const auto service = get("OTEL_SERVICE_NAME")) {
    options.service_name = trim_blanks(*service);
  } else if (const auto it = options.resource_attributes.find("service.name");
             it != options.resource_attributes.end() && !it->second.empty()) {
    options.service_name = it->second;
  }
  options.resource_attributes.erase("service.name");

  if (const auto sampler = get("OTEL_TRACES_SAMPLER")) {
    try {
      options.sampler = parse_otlp_sampler(trim_blanks(*sampler));
    } catch (const Error&) {
      malformed("OTEL_TRACES_SAMPLER", *sampler,
                "expected always_on, always_off, traceidratio, parentbased_always_on, "
                "parentbased_always_off or parentbased_traceidratio");
    }
  }
  if (const auto arg = get("OTEL_TRACES_SAMPLER_ARG")) {
    const std::string text(trim_blanks(*arg));
    char* end = nullptr;
    const double ratio = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size() || !(ratio >= 0.0 && ratio <= 1.0)) {
      malformed("OTEL_TRACES_SAMPLER_ARG", *arg, "expected a number in [0, 1]");
    }
    options.sampler_ratio = ratio;
  }

  if (const auto v = get("OTEL_BSP_SCHEDULE_DELAY")) {
    options.schedule_delay = parse_millis("OTEL_BSP_SCHEDULE_DELAY", *v, false);
  }
  constexpr std::uint64_t kMaxSpans = 1U << 24;
  if (const auto v = get("OTEL_BSP_MAX_QUEUE_SIZE")) {
    const std::uint64_t n = parse_unsigned("OTEL_BSP_MAX_QUEUE_SIZE", *v, true);
    if (n > kMaxSpans) malformed("OTEL_BSP_MAX_QUEUE_SIZE", *v, "at most 16777216");
    options.max_queue_size = n;
  }
  if (const auto v = get("OTEL_BSP_MAX_EXPORT_BATCH_SIZE")) {
    const std::uint64_t n = parse_unsigned("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", *v, true);
    if (n > options.max_queue_size) {
      malformed("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", *v,
                "larger than the queue (OTEL_BSP_MAX_QUEUE_SIZE, " +
                    std::to_string(options.max_queue_size) + ")");
    }
    options.max_batch_size = n;
  } else {
    options.max_batch_size = std::min(options.max_batch_size, options.max_queue_size);
  }
  if (const auto v = get("OTEL_EXPORTER_OTLP_TIMEOUT")) {
    options.export_timeout = parse_millis("OTEL_EXPORTER_OTLP_TIMEOUT", *v, true);
  }
  if (const auto v = get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")) {
    options.export_timeout = parse_millis("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", *v, true);
  }
  return options;
}

std::optional<OtlpOptions> otlp_options_from_environment() {
  return otlp_options_from_environment([](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  });
}

}  // namespace sg
