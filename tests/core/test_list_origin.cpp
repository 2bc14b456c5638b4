// SPDX-License-Identifier: MIT
// ListOrigin: where each message of a list was in the last checkpointed list.
#include <stategraph/core/list_origin.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

namespace {

using Positions = std::vector<std::int64_t>;

/// The same operations on a plain vector of positions, as the reference.
struct Reference {
  Positions p;
  void rebase(std::size_t n) {
    p.clear();
    for (std::size_t i = 0; i < n; ++i) p.push_back(static_cast<std::int64_t>(i));
  }
};

}  // namespace

TEST_CASE("ListOrigin keeps an untouched run and explicit positions") {
  sg::ListOrigin o;
  o.rebase(5);
  CHECK(o.positions() == Positions{0, 1, 2, 3, 4});
  CHECK(o.tail().empty());
  o.push_new();
  o.push_new();
  CHECK(o.head_length() == 5);
  CHECK(o.positions() == Positions{0, 1, 2, 3, 4, -1, -1});

  SUBCASE("replacing an old element splits the run there") {
    o.mark_new(3);
    CHECK(o.head_length() == 3);
    CHECK(o.positions() == Positions{0, 1, 2, -1, 4, -1, -1});
  }
  SUBCASE("keeping the last elements moves the run's start") {
    o.keep(sg::KeepSlice{-4, std::nullopt});
    CHECK(o.head_from() == 3);
    CHECK(o.head_length() == 2);
    CHECK(o.positions() == Positions{3, 4, -1, -1});
  }
  SUBCASE("keeping a slice inside the run leaves no explicit positions") {
    o.keep(sg::KeepSlice{1, 3});
    CHECK(o.tail().empty());
    CHECK(o.positions() == Positions{1, 2});
  }
  SUBCASE("keeping a slice of the explicit positions") {
    o.keep(sg::KeepSlice{6, 7});
    CHECK(o.head_length() == 0);
    CHECK(o.positions() == Positions{-1});
  }
  SUBCASE("an empty slice empties it") {
    o.keep(sg::KeepSlice{4, 2});
    CHECK(o.size() == 0);
  }
  SUBCASE("erasing") {
    o.erase_if(1, [](std::size_t i) { return i == 1 || i == 5; });
    CHECK(o.positions() == Positions{0, 2, 3, 4, -1});
  }
  SUBCASE("all new") {
    o.all_new(2);
    CHECK(o.positions() == Positions{-1, -1});
  }
}

TEST_CASE("ListOrigin matches a plain vector under random operations") {
  std::uint32_t seed = 12345;
  auto next = [&] {
    seed ^= seed << 13;
    seed ^= seed >> 17;
    seed ^= seed << 5;
    return seed;
  };
  sg::ListOrigin o;
  Reference ref;
  for (int round = 0; round < 3000; ++round) {
    const std::size_t n = ref.p.size();
    switch (next() % 6) {
      case 0:
        o.rebase(n);
        ref.rebase(n);
        break;
      case 1:
      case 2:
        o.push_new();
        ref.p.push_back(-1);
        break;
      case 3:
        if (n) {
          const std::size_t i = next() % n;
          o.mark_new(i);
          ref.p[i] = -1;
        }
        break;
      case 4: {
        const std::uint32_t mod = next() % 4 + 2;
        std::size_t first = n;
        for (std::size_t i = 0; i < n; ++i) {
          if (i % mod == 0) {
            first = i;
            break;
          }
        }
        o.erase_if(first, [&](std::size_t i) { return i % mod == 0; });
        Positions kept;
        for (std::size_t i = 0; i < n; ++i) {
          if (i % mod != 0) kept.push_back(ref.p[i]);
        }
        ref.p = kept;
        break;
      }
      case 5: {
        const auto from = static_cast<std::int64_t>(next() % 7) - 3;
        const auto to = static_cast<std::int64_t>(next() % 9) - 2;
        const sg::KeepSlice keep{from, next() % 2 ? std::optional<std::int64_t>(to) : std::nullopt};
        o.keep(keep);
        sg::apply_keep(ref.p, keep);
        break;
      }
    }
    REQUIRE(o.positions() == ref.p);
  }
}
