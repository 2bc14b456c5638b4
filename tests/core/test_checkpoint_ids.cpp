// SPDX-License-Identifier: MIT
// Checkpoint ids (time-ordered UUID v6) and timestamps.
#include <stategraph/core/checkpointer.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <ctime>
#include <regex>
#include <string>

TEST_CASE("checkpoint ids are UUID v6 strings that increase and carry the step") {
  const std::regex shape("[0-9a-f]{8}-[0-9a-f]{4}-6[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  std::string previous;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = sg::new_checkpoint_id(i % 5 - 1);
    REQUIRE(std::regex_match(id, shape));
    CHECK(id > previous);
    previous = id;
  }
  // The clock sequence holds the step (14 bits, -1 as 0x3fff).
  CHECK(sg::new_checkpoint_id(-1).substr(19, 4) == "bfff");
  CHECK(sg::new_checkpoint_id(2).substr(19, 4) == "8002");
}

TEST_CASE("timestamps are ISO-8601 UTC with microseconds") {
  const std::regex shape(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}\+00:00)");
  const auto before = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  const std::string ts = sg::iso_timestamp_now();
  const auto after = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  REQUIRE(std::regex_match(ts, shape));
  // Equal to the C library's formatting of a second within the call.
  bool matches = false;
  for (std::time_t t = before; t <= after; ++t) {
    std::tm utc{};
    gmtime_r(&t, &utc);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &utc);
    matches = matches || ts.substr(0, 19) == buf;
  }
  CHECK(matches);
}

TEST_CASE("ISO-8601 times parse back, with fractions, offsets, Z or a date alone") {
  constexpr std::int64_t kDay = 86'400'000'000;  // 2026-11-28 is day 20,785 since the epoch
  const std::int64_t noon = 20'785 * kDay + 12LL * 3'600'000'000;
  CHECK(sg::parse_iso_timestamp("2026-11-28T12:00:00Z") == noon);
  CHECK(sg::parse_iso_timestamp("2026-11-28T12:00:00.250Z") == noon + 250'000);
  CHECK(sg::parse_iso_timestamp("2026-11-28T12:00:00.123456789Z") == noon + 123'456);
  CHECK(sg::parse_iso_timestamp("2026-11-28T14:00:00+02:00") == noon);
  CHECK(sg::parse_iso_timestamp("2026-11-28T07:30:00-04:30") == noon);
  CHECK(sg::parse_iso_timestamp("2026-11-28 12:00:00") == noon);
  CHECK(sg::parse_iso_timestamp("2026-11-28") == 20'785 * kDay);
  CHECK(sg::parse_iso_timestamp("1969-12-31T23:59:59Z") == -1'000'000);
  // What iso_timestamp writes reads back exactly.
  for (const std::int64_t micros :
       std::vector<std::int64_t>{noon + 1, 0, -1'500'000, 253'402'300'799'999'999}) {
    CHECK(sg::parse_iso_timestamp(sg::iso_timestamp(micros)) == micros);
  }
  for (const char* bad : {"", "tomorrow", "2026-13-01", "2026-02-30", "2026-11-28T25:00:00",
                          "2026-11-28T12:00", "2026-11-28T12:00:00Zjunk", "2026-11-28T12:00:00.",
                          "2026-11-28T12:00:00+2", "2026-11-28X12:00:00"}) {
    CAPTURE(bad);
    CHECK_FALSE(sg::parse_iso_timestamp(bad).has_value());
  }
}
