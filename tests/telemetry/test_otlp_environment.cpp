// SPDX-License-Identifier: MIT
// otlp_options_from_environment: OpenTelemetry's standard variables, and malformed values.
#include <stategraph/core/error.hpp>
#include <stategraph/telemetry/otlp.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "support/loopback_otlp.hpp"

namespace {

using Env = std::map<std::string, std::string>;

std::optional<sg::OtlpOptions> from(const Env& env) {
  return sg::otlp_options_from_environment(
      [&](std::string_view name) -> std::optional<std::string> {
        const auto it = env.find(std::string(name));
        if (it == env.end()) return std::nullopt;
        return it->second;
      });
}

/// The message of the sg::Error that reading `env` throws ("" when it does not throw).
std::string env_error(const Env& env) {
  try {
    (void)from(env);
  } catch (const sg::Error& e) {
    CHECK(e.code() == sg::errc::kInvalidArgument);
    return e.what();
  }
  return {};
}

const std::string kBase = "http://collector:4318";

}  // namespace

TEST_CASE("otlp environment: no endpoint or OTEL_SDK_DISABLED turns tracing off") {
  CHECK_FALSE(from({}));
  CHECK_FALSE(from({{"OTEL_SERVICE_NAME", "svc"}}));
  CHECK_FALSE(from({{"OTEL_EXPORTER_OTLP_ENDPOINT", ""}}));  // empty: unset
  CHECK_FALSE(from({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase}, {"OTEL_SDK_DISABLED", "true"}}));
  CHECK_FALSE(from({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase}, {"OTEL_SDK_DISABLED", "TRUE"}}));
  CHECK(from({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase}, {"OTEL_SDK_DISABLED", "false"}}));
  CHECK(env_error({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase}, {"OTEL_SDK_DISABLED", "yes please"}})
            .find("OTEL_SDK_DISABLED") != std::string::npos);
}

TEST_CASE("otlp environment: OTEL_TRACES_EXPORTER and the protocol") {
  CHECK_FALSE(from({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase}, {"OTEL_TRACES_EXPORTER", "none"}}));
  CHECK(from({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase}, {"OTEL_TRACES_EXPORTER", "otlp"}}));
  CHECK(from({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase}, {"OTEL_TRACES_EXPORTER", " OTLP , none"}}));
  CHECK(env_error({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase}, {"OTEL_TRACES_EXPORTER", "zipkin"}})
            .find("OTEL_TRACES_EXPORTER") != std::string::npos);
  for (const char* protocol : {"http/json", "http/protobuf"}) {
    CHECK(
        from({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase}, {"OTEL_EXPORTER_OTLP_PROTOCOL", protocol}}));
  }
  CHECK(env_error({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase}, {"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}})
            .find("OTEL_EXPORTER_OTLP_PROTOCOL") != std::string::npos);
  // The traces variable wins.
  CHECK(from({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase},
              {"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
              {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"}}));
  CHECK(env_error({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase},
                   {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"}})
            .find("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") != std::string::npos);
}

TEST_CASE("otlp environment: the endpoint variables") {
  CHECK(from({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase}})->endpoint == kBase + "/v1/traces");
  CHECK(from({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase + "/"}})->endpoint == kBase + "/v1/traces");
  CHECK(from({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase + "/prefix/"}})->endpoint ==
        kBase + "/prefix/v1/traces");
  // The traces endpoint is used as it is, and wins.
  CHECK(from({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase},
              {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://other:443/custom/path"}})
            ->endpoint == "https://other:443/custom/path");
  CHECK(env_error({{"OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"}})
            .find("OTEL_EXPORTER_OTLP_ENDPOINT") != std::string::npos);
  CHECK(env_error({{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "grpc://collector:4317"}})
            .find("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != std::string::npos);
}

TEST_CASE("otlp environment: defaults") {
  const auto o = from({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase}});
  REQUIRE(o);
  CHECK(o->service_name == "stategraph");
  CHECK(o->headers.empty());
  CHECK(o->sampler == sg::OtlpSampler::parentbased_always_on);
  CHECK(o->sampler_ratio == 1.0);
  CHECK(o->max_queue_size == 2048);
  CHECK(o->max_batch_size == 512);
  CHECK(o->schedule_delay == std::chrono::milliseconds(5000));
  CHECK(o->export_timeout == std::chrono::milliseconds(10000));
  const auto resource = sg::otlp_resource_attributes(*o);
  CHECK(resource.at("service.name") == "stategraph");
  CHECK(resource.at("telemetry.sdk.name") == "stategraph");
  CHECK(resource.at("telemetry.sdk.language") == "cpp");
  CHECK(resource.count("service.version") == 1);
}

TEST_CASE("otlp environment: headers are percent-decoded and trimmed, the traces ones win") {
  const auto o = from(
      {{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase},
       {"OTEL_EXPORTER_OTLP_HEADERS", " api-key = secret%20value , x-shared=general,x-empty=,"},
       {"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-shared=traces"}});
  REQUIRE(o);
  CHECK(o->headers == std::map<std::string, std::string>{
                          {"api-key", "secret value"}, {"x-shared", "traces"}, {"x-empty", ""}});
  // A malformed header names the variable, and does not repeat the value (an API key).
  const std::string no_equals = env_error(
      {{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase}, {"OTEL_EXPORTER_OTLP_HEADERS", "api-key:hunter2"}});
  CHECK(no_equals.find("OTEL_EXPORTER_OTLP_HEADERS") != std::string::npos);
  CHECK(no_equals.find("hunter2") == std::string::npos);
  const std::string bad_escape = env_error({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase},
                                            {"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "k=hunter%2"}});
  CHECK(bad_escape.find("OTEL_EXPORTER_OTLP_TRACES_HEADERS") != std::string::npos);
  CHECK(bad_escape.find("hunter") == std::string::npos);
  CHECK(
      env_error({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase}, {"OTEL_EXPORTER_OTLP_HEADERS", "=value"}})
          .find("OTEL_EXPORTER_OTLP_HEADERS") != std::string::npos);
  CHECK(env_error(
            {{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase}, {"OTEL_EXPORTER_OTLP_HEADERS", "bad name=1"}})
            .find("not a valid HTTP header name") != std::string::npos);
  CHECK(env_error({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase},
                   {"OTEL_EXPORTER_OTLP_HEADERS", "k=a%0D%0AInjected: 1"}})
            .find("line break") != std::string::npos);
}

TEST_CASE("otlp environment: service name and resource attributes") {
  auto o = from({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase},
                 {"OTEL_RESOURCE_ATTRIBUTES",
                  "service.name=from-resource,service.version=2.0,region=eu%2Dwest"}});
  REQUIRE(o);
  CHECK(o->service_name == "from-resource");
  CHECK(o->resource_attributes.at("region") == "eu-west");
  auto resource = sg::otlp_resource_attributes(*o);
  CHECK(resource.at("service.name") == "from-resource");
  CHECK(resource.at("service.version") == "2.0");

  o = from({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase},
            {"OTEL_SERVICE_NAME", "named"},
            {"OTEL_RESOURCE_ATTRIBUTES", "service.name=from-resource"}});
  REQUIRE(o);
  CHECK(o->service_name == "named");
  CHECK(sg::otlp_resource_attributes(*o).at("service.name") == "named");

  CHECK(env_error({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase},
                   {"OTEL_RESOURCE_ATTRIBUTES", "region=eu,broken"}})
            .find("OTEL_RESOURCE_ATTRIBUTES") != std::string::npos);
}

TEST_CASE("otlp environment: the sampler and its argument") {
  auto o = from({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase},
                 {"OTEL_TRACES_SAMPLER", "parentbased_traceidratio"},
                 {"OTEL_TRACES_SAMPLER_ARG", "0.25"}});
  REQUIRE(o);
  CHECK(o->sampler == sg::OtlpSampler::parentbased_traceidratio);
  CHECK(o->sampler_ratio == 0.25);
  for (const char* name : {"always_on", "always_off", "traceidratio", "parentbased_always_on",
                           "parentbased_always_off", "parentbased_traceidratio"}) {
    o = from({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase}, {"OTEL_TRACES_SAMPLER", name}});
    REQUIRE(o);
    CHECK(sg::to_string(o->sampler) == name);
  }
  CHECK(
      env_error({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase}, {"OTEL_TRACES_SAMPLER", "jaeger_remote"}})
          .find("OTEL_TRACES_SAMPLER") != std::string::npos);
  for (const char* arg : {"abc", "1.5", "-0.1", "0.5x", "nan"}) {
    CAPTURE(arg);
    CHECK(env_error({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase}, {"OTEL_TRACES_SAMPLER_ARG", arg}})
              .find("OTEL_TRACES_SAMPLER_ARG") != std::string::npos);
  }
  CHECK_THROWS_AS((void)sg::parse_otlp_sampler("sometimes"), sg::Error);
}

TEST_CASE("otlp environment: the batch processor and the timeouts") {
  const auto o = from({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase},
                       {"OTEL_BSP_SCHEDULE_DELAY", "250"},
                       {"OTEL_BSP_MAX_QUEUE_SIZE", "100"},
                       {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "10"},
                       {"OTEL_EXPORTER_OTLP_TIMEOUT", "3000"}});
  REQUIRE(o);
  CHECK(o->schedule_delay == std::chrono::milliseconds(250));
  CHECK(o->max_queue_size == 100);
  CHECK(o->max_batch_size == 10);
  CHECK(o->export_timeout == std::chrono::milliseconds(3000));
  // The traces timeout wins; a queue smaller than the default batch shrinks the batch.
  const auto p = from({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase},
                       {"OTEL_EXPORTER_OTLP_TIMEOUT", "3000"},
                       {"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "1500"},
                       {"OTEL_BSP_MAX_QUEUE_SIZE", "64"}});
  REQUIRE(p);
  CHECK(p->export_timeout == std::chrono::milliseconds(1500));
  CHECK(p->max_batch_size == 64);

  for (const auto& variable : std::vector<std::pair<std::string, std::string>>{
           {"OTEL_BSP_SCHEDULE_DELAY", "-5"},
           {"OTEL_BSP_SCHEDULE_DELAY", "5s"},
           {"OTEL_BSP_MAX_QUEUE_SIZE", "0"},
           {"OTEL_BSP_MAX_QUEUE_SIZE", "lots"},
           {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4096"},  // larger than the queue
           {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1.5"},
           {"OTEL_EXPORTER_OTLP_TIMEOUT", "0"},
           {"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "ten"},
       }) {
    const std::string& name = variable.first;
    const std::string& value = variable.second;
    CAPTURE(name);
    CAPTURE(value);
    const std::string error = env_error({{"OTEL_EXPORTER_OTLP_ENDPOINT", kBase}, {name, value}});
    CHECK(error.find(name) != std::string::npos);
  }
}

TEST_CASE("otlp environment: the process environment and OtlpTracer::from_environment") {
  const char* names[] = {"OTEL_SDK_DISABLED",
                         "OTEL_EXPORTER_OTLP_ENDPOINT",
                         "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                         "OTEL_EXPORTER_OTLP_HEADERS",
                         "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
                         "OTEL_SERVICE_NAME",
                         "OTEL_RESOURCE_ATTRIBUTES",
                         "OTEL_TRACES_SAMPLER",
                         "OTEL_TRACES_SAMPLER_ARG",
                         "OTEL_BSP_SCHEDULE_DELAY",
                         "OTEL_BSP_MAX_QUEUE_SIZE",
                         "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
                         "OTEL_EXPORTER_OTLP_TIMEOUT",
                         "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"};
  for (const char* n : names) ::unsetenv(n);
  CHECK_FALSE(sg::otlp_options_from_environment());
  CHECK(sg::OtlpTracer::from_environment() == nullptr);

  sg::testing::LoopbackOtlp collector;
  ::setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint().c_str(), 1);
  ::setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "authorization=Bearer%20t0ken", 1);
  ::setenv("OTEL_SERVICE_NAME", "from-env", 1);
  {
    const auto tracer = sg::OtlpTracer::from_environment();
    REQUIRE(tracer != nullptr);
    CHECK(tracer->options().endpoint == collector.traces_url());
    const sg::TraceContext ctx = sg::TraceContext::root();
    sg::Span run;
    run.context = ctx;
    run.name = "env_graph";
    run.start = std::chrono::system_clock::now();
    run.end = run.start + std::chrono::milliseconds(1);
    tracer->on_run_end(run);
    CHECK(tracer->flush(std::chrono::seconds(5)));
  }
  ::setenv("OTEL_BSP_MAX_QUEUE_SIZE", "many", 1);
  CHECK_THROWS_WITH_AS(sg::OtlpTracer::from_environment(),
                       doctest::Contains("OTEL_BSP_MAX_QUEUE_SIZE"), sg::Error);
  for (const char* n : names) ::unsetenv(n);

  REQUIRE(collector.wait_for_spans(1));
  const auto span = collector.span("env_graph");
  CHECK(span.resource["service.name"] == "from-env");
  REQUIRE(collector.exports().size() == 1);
  CHECK(collector.exports()[0].header("authorization") == "Bearer t0ken");
}
