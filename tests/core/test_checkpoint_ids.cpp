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
