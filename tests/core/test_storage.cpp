// SPDX-License-Identifier: MIT
// The storage pieces under the checkpoint savers and stores: the CBOR writer (against
// json::to_cbor on random JSON), record framing, MemoryKv and prefix_end.
#include <stategraph/core/detail/cbor.hpp>
#include <stategraph/kv/kv.hpp>
#include <stategraph/kv/record.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

using nlohmann::json;

namespace {

/// Random JSON up to `depth` levels: every value type, integers at every width and sign,
/// floats exact and inexact in 32 bits, NaN and infinities, strings of every length class,
/// binaries with and without subtypes.
json random_json(std::mt19937_64& rng, int depth) {
  auto pick = [&](std::uint64_t n) { return rng() % n; };
  static const std::uint64_t kWidths[] = {0,
                                          23,
                                          24,
                                          255,
                                          256,
                                          65535,
                                          65536,
                                          4294967295ULL,
                                          4294967296ULL,
                                          std::numeric_limits<std::uint64_t>::max()};
  switch (pick(depth > 0 ? 10 : 8)) {
    case 0:
      return nullptr;
    case 1:
      return pick(2) == 0;
    case 2: {  // unsigned at a width boundary, or near one
      const std::uint64_t base = kWidths[pick(std::size(kWidths))];
      return base - std::min<std::uint64_t>(base, pick(3));
    }
    case 3: {  // negative at a width boundary, or near one
      const std::uint64_t base = kWidths[pick(std::size(kWidths) - 1)];
      return -static_cast<std::int64_t>(base) - static_cast<std::int64_t>(pick(3)) - 1;
    }
    case 4: {
      static const double kSpecial[] = {0.0,
                                        -0.0,
                                        1.5,
                                        0.1,
                                        1e300,
                                        -3.25e-5,
                                        std::numeric_limits<double>::quiet_NaN(),
                                        std::numeric_limits<double>::infinity(),
                                        -std::numeric_limits<double>::infinity(),
                                        static_cast<double>(std::numeric_limits<float>::max()),
                                        std::numeric_limits<double>::denorm_min()};
      if (pick(2)) return kSpecial[pick(std::size(kSpecial))];
      return std::ldexp(static_cast<double>(pick(1ULL << 53)), static_cast<int>(pick(200)) - 100);
    }
    case 5:
    case 6: {
      static const std::size_t kLengths[] = {0, 1, 23, 24, 255, 256, 70000};
      std::string s(kLengths[pick(std::size(kLengths))], 'x');
      for (auto& c : s) c = static_cast<char>('a' + pick(26));
      if (!s.empty() && pick(3) == 0) s += "\xC3\xA9\xE2\x82\xAC";  // é€
      return s;
    }
    case 7: {
      std::vector<std::uint8_t> bytes(pick(300));
      for (auto& b : bytes) b = static_cast<std::uint8_t>(pick(256));
      switch (pick(3)) {
        case 0:
          return json::binary(std::move(bytes));
        case 1:
          return json::binary(std::move(bytes), static_cast<std::uint8_t>(pick(256)));
        default:
          return json::binary(std::move(bytes), static_cast<std::uint64_t>(pick(70000)));
      }
    }
    case 8: {
      json a = json::array();
      const auto n = pick(pick(5) == 0 ? 30 : 4);
      for (std::uint64_t i = 0; i < n; ++i) a.push_back(random_json(rng, depth - 1));
      return a;
    }
    default: {
      json o = json::object();
      const auto n = pick(pick(5) == 0 ? 30 : 4);
      for (std::uint64_t i = 0; i < n; ++i)
        o["k" + std::to_string(pick(1000))] = random_json(rng, depth - 1);
      return o;
    }
  }
}

std::string cbor_of(const json& j) {
  std::string out;
  sg::detail::CborWriter<std::string>(out).value(j);
  return out;
}

}  // namespace

TEST_CASE("the CBOR writer writes what json::to_cbor writes, byte for byte") {
  std::mt19937_64 rng(20261123);
  int cases = 0;
  int floats = 0;
  for (; cases < 2000; ++cases) {
    const json j = random_json(rng, 4);
    const auto expected = json::to_cbor(j);
    const std::string got = cbor_of(j);
    CAPTURE(j.dump(-1, ' ', false, json::error_handler_t::replace));
    REQUIRE(got == std::string(expected.begin(), expected.end()));
    std::vector<std::uint8_t> into_vector;
    sg::detail::CborWriter<std::vector<std::uint8_t>>(into_vector).value(j);
    REQUIRE(into_vector == expected);
    floats += j.is_number_float();
  }
  CHECK(cases == 2000);
  CHECK(floats > 50);
  // The special floats, one by one.
  for (double d :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
        -std::numeric_limits<double>::infinity(), 0.5, 0.1}) {
    const auto expected = json::to_cbor(json(d));
    CHECK(cbor_of(json(d)) == std::string(expected.begin(), expected.end()));
  }
}

TEST_CASE("records: a header, a payload and its CRC, and damage is detected") {
  std::string record = sg::detail::record_header(3, 'x', 64);
  CHECK(record.size() == sg::detail::kRecordHeaderSize);
  record += "payload bytes";
  sg::detail::seal_record(record);
  auto view = sg::detail::open_record(record);
  REQUIRE(view);
  CHECK(view->version == 3);
  CHECK(view->kind == 'x');
  CHECK(view->payload == "payload bytes");
  CHECK(view->intact);

  for (std::size_t at = sg::detail::kRecordHeaderSize; at < record.size(); ++at) {
    std::string damaged = record;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x01);
    auto v = sg::detail::open_record(damaged);
    REQUIRE(v);
    CHECK_FALSE(v->intact);
  }
  std::string cut = record.substr(0, record.size() - 1);
  CHECK_FALSE(sg::detail::open_record(cut)->intact);
  // An empty payload is a record too.
  std::string empty = sg::detail::record_header(1, 'e');
  sg::detail::seal_record(empty);
  CHECK(sg::detail::open_record(empty)->intact);
  CHECK(sg::detail::open_record(empty)->payload.empty());
  // Not records: too short, or without the magic.
  CHECK_FALSE(sg::detail::open_record(""));
  CHECK_FALSE(sg::detail::open_record(record.substr(0, sg::detail::kRecordHeaderSize - 1)));
  std::string foreign = record;
  foreign[0] = 'X';
  CHECK_FALSE(sg::detail::open_record(foreign));
}

TEST_CASE("prefix_end bounds every key with the prefix, 0xFF bytes included") {
  using sg::detail::prefix_end;
  CHECK(prefix_end("ab") == "ac");
  CHECK(prefix_end(std::string("a\xFF", 2)) == "b");
  CHECK(prefix_end(std::string("a\xFF\xFF", 3)) == "b");
  CHECK(prefix_end(std::string("\xFF\xFF", 2)).empty());  // no bound
  CHECK(prefix_end("").empty());
  CHECK(prefix_end(std::string("a\xFE", 2)) == std::string("a\xFF", 2));

  // A scan of [prefix, prefix_end(prefix)) finds exactly the keys with the prefix.
  sg::detail::MemoryKv kv(1);
  const std::vector<std::string> keys{std::string("a\xFF", 2),
                                      std::string("a\xFF\x00", 3),
                                      std::string("a\xFF\xFF", 3),
                                      std::string("a\xFF\xFFz", 4),
                                      "b",
                                      std::string("a\xFE\xFF", 3),
                                      std::string("\xFF\xFF", 2),
                                      std::string("\xFF\xFF\x01", 3)};
  std::vector<sg::detail::KvOp> batch;
  for (const auto& k : keys) batch.push_back({sg::detail::KvOp::Kind::put, 0, k, "v"});
  kv.write(batch);
  auto count_with = [&](const std::string& prefix) {
    std::size_t n = 0;
    kv.scan(0, prefix, prefix_end(prefix), false, [&](std::string_view key, std::string_view) {
      CHECK(key.substr(0, prefix.size()) == prefix);
      ++n;
      return true;
    });
    return n;
  };
  CHECK(count_with(std::string("a\xFF", 2)) == 4);
  CHECK(count_with(std::string("a\xFF\xFF", 3)) == 2);
  CHECK(count_with(std::string("\xFF\xFF", 2)) == 2);
  CHECK(count_with("a") == 5);
}

TEST_CASE("MemoryKv: spaces, ordered scans both ways, early stop, batches, byte count") {
  using Kind = sg::detail::KvOp::Kind;
  sg::detail::MemoryKv kv(2);
  kv.write({{Kind::put, 0, "k1", "one"},
            {Kind::put, 0, "k2", "two"},
            {Kind::put, 0, "k3", "three"},
            {Kind::put, 1, "k2", "other space"}});
  CHECK(kv.get(0, "k2") == "two");
  CHECK(kv.get(1, "k2") == "other space");
  CHECK_FALSE(kv.get(1, "k1"));
  CHECK(kv.bytes() == 2 + 3 + 2 + 3 + 2 + 5 + 2 + 11);

  auto keys = [&](std::string_view lower, std::string_view upper, bool reverse, int limit = 100) {
    std::vector<std::string> out;
    kv.scan(0, lower, upper, reverse, [&](std::string_view key, std::string_view) {
      out.emplace_back(key);
      return static_cast<int>(out.size()) < limit;
    });
    return out;
  };
  CHECK(keys("", "", false) == std::vector<std::string>{"k1", "k2", "k3"});
  CHECK(keys("", "", true) == std::vector<std::string>{"k3", "k2", "k1"});
  CHECK(keys("k2", "", false) == std::vector<std::string>{"k2", "k3"});
  CHECK(keys("k1", "k3", false) == std::vector<std::string>{"k1", "k2"});  // upper excluded
  CHECK(keys("k1", "k3", true) == std::vector<std::string>{"k2", "k1"});
  CHECK(keys("", "", true, 1) == std::vector<std::string>{"k3"});
  CHECK(keys("k4", "", false).empty());

  // A scan may write back into the store (the savers do).
  kv.scan(0, "", "", false, [&](std::string_view key, std::string_view) {
    if (key == "k1") kv.write({{Kind::put, 0, "k0", "zero"}});
    return true;
  });
  CHECK(kv.get(0, "k0") == "zero");

  // Overwrites, erases and range erases keep the byte count.
  kv.write({{Kind::put, 0, "k1", "uno"}, {Kind::erase, 0, "k2", {}}, {Kind::erase, 0, "nope", {}}});
  CHECK(kv.get(0, "k1") == "uno");
  CHECK_FALSE(kv.get(0, "k2"));
  kv.write({{Kind::erase_range, 0, "k0", "k3"}});
  CHECK(keys("", "", false) == std::vector<std::string>{"k3"});
  CHECK(kv.bytes() == 2 + 5 + 2 + 11);
}
