// SPDX-License-Identifier: MIT
#include <stategraph/core/error.hpp>
#include <stategraph/core/json.hpp>
#include <stategraph/reducers/add_messages.hpp>

#include <doctest/doctest.h>

#include <map>
#include <random>
#include <regex>
#include <set>

#include "support/golden.hpp"

using nlohmann::json;

namespace {

const std::regex kUuid4("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");

/// Checks `actual` against a golden list whose library-generated ids read "<generated:N>":
/// each placeholder must be a fresh UUID v4, the same N the same id, different N different ids.
void check_messages(const std::vector<sg::Message>& actual, const json& expected,
                    std::map<std::string, std::string>& generated) {
  REQUIRE(actual.size() == expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    json want = expected[i];
    const std::string id =
        want.value("id", json()).is_string() ? want["id"].get<std::string>() : "";
    if (id.rfind("<generated:", 0) == 0) {
      CHECK(std::regex_match(actual[i].id, kUuid4));
      auto [it, fresh] = generated.emplace(id, actual[i].id);
      CHECK(it->second == actual[i].id);
      if (fresh) {
        for (const auto& [other, value] : generated) {
          if (other != id) CHECK(value != actual[i].id);
        }
      }
      want["id"] = actual[i].id;
    }
    CHECK(actual[i] == sg::message_from_json(want));
  }
}

}  // namespace

TEST_CASE("add_messages matches every LangGraph.js golden case") {
  const json cases = sg::test::load_golden_cases("add_messages", 34);
  for (const json& c : cases) {
    const std::string name = c["name"];
    CAPTURE(name);
    std::vector<sg::Message> left = sg::messages_from_json(c["input"]["left"]);
    std::vector<sg::Message> right = sg::messages_from_json(c["input"]["right"]);
    std::map<std::string, std::string> generated;
    if (c.contains("error")) {
      const std::vector<sg::Message> before = left;
      try {
        sg::add_messages.apply(left, std::move(right));
        FAIL("expected an error");
      } catch (const sg::InvalidUpdateError& e) {
        CHECK(std::string(e.what()) == c["error"].get<std::string>());
        CHECK(e.code() == "message.unknown_id");
      }
      CHECK(left == before);  // a failing update changes nothing (all ids were present)
      continue;
    }
    sg::add_messages.apply(left, std::move(right));
    check_messages(left, c["expected"], generated);
    if (c.contains("left_after")) {
      // The library assigned ids to the caller's id-less left messages; ours are in the
      // result at the same positions when they survive.
      for (const json& m : c["left_after"]) CHECK(m["id"].is_string());
    }
  }
}

TEST_CASE("ids are assigned on both sides") {
  std::vector<sg::Message> left{sg::human("a"), sg::ai("b", "2")};
  sg::add_messages.apply(left, std::vector<sg::Message>{sg::human("c")});
  REQUIRE(left.size() == 3);
  CHECK(std::regex_match(left[0].id, kUuid4));
  CHECK(left[1].id == "2");
  CHECK(std::regex_match(left[2].id, kUuid4));
  CHECK(left[0].id != left[2].id);
}

TEST_CASE("functional form and helpers") {
  const auto merged = sg::add_messages({sg::human("a", "1"), sg::ai("b", "2")},
                                       {sg::ai("B", "2"), sg::human("c", "3")});
  REQUIRE(merged.size() == 3);
  CHECK(merged[1].content.str() == "B");

  auto removed = sg::add_messages(merged, sg::remove({"1", "3"}));
  REQUIRE(removed.size() == 1);
  CHECK(removed[0].id == "2");

  const std::vector<std::string> ids{"2"};
  CHECK(sg::add_messages(removed, sg::remove(ids)).empty());

  auto replaced = sg::add_messages(merged, [] {
    auto update = sg::remove_all();
    update.push_back(sg::human("fresh", "9"));
    return update;
  }());
  REQUIRE(replaced.size() == 1);
  CHECK(replaced[0].id == "9");
}

TEST_CASE("an unknown id fails the whole update and loses nothing") {
  std::vector<sg::Message> state{sg::human("a", "1"), sg::ai("b", "2"), sg::human("c", "3")};
  const auto before = state;
  std::vector<sg::Message> update{sg::ai("new", "4"), sg::ai("B", "2"), sg::remove_message("1"),
                                  sg::remove_message("nope")};
  CHECK_THROWS_WITH_AS(sg::add_messages.apply(state, std::move(update)),
                       "Attempting to delete a message with an ID that doesn't exist ('nope')",
                       sg::InvalidUpdateError);
  CHECK(state == before);
}

TEST_CASE("large updates use the hashed index with the same semantics") {
  std::vector<sg::Message> state;
  for (int i = 0; i < 50; ++i)
    state.push_back(sg::human("m" + std::to_string(i), std::to_string(i)));
  state.push_back(sg::ai("dup", "7"));  // duplicate id: replacement hits the last occurrence
  std::vector<sg::Message> update;
  for (int i = 0; i < 40; ++i) update.push_back(sg::remove_message(std::to_string(i)));
  update.push_back(sg::ai("seven", "7"));
  update.push_back(sg::human("new", "100"));
  update.push_back(sg::remove_message("100"));  // added earlier in the same update
  update.push_back(sg::human("again", "5"));    // removed above, re-added: kept in place
  sg::add_messages.apply(state, std::move(update));

  std::vector<std::string> ids;
  for (const auto& m : state) ids.push_back(m.id);
  // "7" was removed and re-added in the same update: the removal is cancelled for both copies
  // and the re-added message replaces the last one.
  std::vector<std::string> want{"5", "7"};
  for (int i = 40; i < 50; ++i) want.push_back(std::to_string(i));
  want.push_back("7");
  CHECK(ids == want);
  CHECK(state[0].content.str() == "again");
  CHECK(state[1].content.str() == "m7");
  CHECK(state.back().content.str() == "seven");

  std::vector<sg::Message> bad;
  for (int i = 0; i < 20; ++i) bad.push_back(sg::remove_message("x" + std::to_string(i)));
  const auto before = state;
  CHECK_THROWS_AS(sg::add_messages.apply(state, std::move(bad)), sg::InvalidUpdateError);
  CHECK(state == before);
}

TEST_CASE("duplicate ids: replace hits the last, remove drops all") {
  std::vector<sg::Message> state{sg::human("a", "x"), sg::ai("b", "x")};
  sg::add_messages.apply(state, sg::ListUpdate<sg::Message>(sg::human("z", "x")));
  CHECK(state[0].content.str() == "a");
  CHECK(state[1].content.str() == "z");
  sg::add_messages.apply(state, sg::ListUpdate<sg::Message>(sg::remove_message("x")));
  CHECK(state.empty());
}

TEST_CASE("keep-slice updates on a message list") {
  std::vector<sg::Message> state;
  for (int i = 0; i < 6; ++i) state.push_back(sg::human(std::to_string(i), std::to_string(i)));
  sg::add_messages.apply(state, sg::keep_last(2));
  REQUIRE(state.size() == 2);
  CHECK(state[0].id == "4");
  sg::add_messages.apply(state, sg::keep_last(0));
  CHECK(state.empty());
}

TEST_CASE("message list updates from JSON") {
  auto update =
      sg::list_update_from_json<sg::Message>(json::parse(R"({"type": "keep", "from": -1})"));
  CHECK(update.is_keep());
  CHECK(update.keep() == sg::keep_last(1));
  auto single =
      sg::list_update_from_json<sg::Message>(json::parse(R"({"type": "ai", "content": "x"})"));
  REQUIRE_FALSE(single.is_keep());
  CHECK(single.items().size() == 1);
  CHECK_THROWS_AS((void)sg::list_update_from_json<sg::Message>(json::parse(R"({"type": "other"})")),
                  sg::Error);
}

TEST_CASE(
    "the cached form gives the same lists and tracks what changed since the last checkpoint") {
  // Random operation sequences, applied with one persistent cache and without: same lists.
  std::mt19937 rng(7);
  sg::AddMessages::Cache cache;
  cache.track = true;
  std::vector<sg::Message> cached;
  std::vector<sg::Message> plain;
  int next_id = 0;
  for (int round = 0; round < 400; ++round) {
    std::vector<sg::Message> update;
    const int kind = static_cast<int>(rng() % 10);
    if (kind == 0 && !plain.empty()) {
      const auto keep = sg::keep_last(rng() % (plain.size() + 1));
      sg::add_messages.apply(cached, sg::ListUpdate<sg::Message>(keep), cache);
      sg::add_messages.apply(plain, sg::ListUpdate<sg::Message>(keep));
      CHECK(cached == plain);
      continue;
    }
    const int count = 1 + static_cast<int>(rng() % 12);
    for (int k = 0; k < count; ++k) {
      const int op = static_cast<int>(rng() % 6);
      if (op == 0 && !plain.empty()) {
        update.push_back(sg::remove_message(plain[rng() % plain.size()].id));
      } else if (op == 1 && !plain.empty()) {
        update.push_back(
            sg::ai("replaced " + std::to_string(round), plain[rng() % plain.size()].id));
      } else {
        update.push_back(sg::human("m" + std::to_string(next_id), "id" + std::to_string(next_id)));
        ++next_id;
      }
    }
    if (rng() % 25 == 0)
      update.insert(update.begin() + static_cast<std::ptrdiff_t>(rng() % update.size()),
                    sg::remove_message(std::string(sg::kRemoveAllMessages)));
    auto copy = update;
    std::vector<sg::Message> before_plain = plain;
    bool plain_failed = false;
    try {
      sg::add_messages.apply(plain, std::move(copy));
    } catch (const sg::InvalidUpdateError&) {
      plain_failed = true;
    }
    bool cached_failed = false;
    try {
      sg::add_messages.apply(cached, std::move(update), cache);
    } catch (const sg::InvalidUpdateError&) {
      cached_failed = true;
    }
    CHECK(plain_failed == cached_failed);
    CHECK(cached == plain);
    REQUIRE(cache.origin.size() == cached.size());
    if (round % 7 == 0) cache.rebase(cached);
  }

  // origin after a rebase: appends and replacements are new, the rest keep their positions.
  std::vector<sg::Message> list{sg::human("a", "1"), sg::human("b", "2"), sg::human("c", "3")};
  sg::AddMessages::Cache tracker;
  tracker.track = true;
  tracker.rebase(list);
  sg::add_messages.apply(list, std::vector<sg::Message>{sg::ai("B", "2"), sg::human("d", "4")},
                         tracker);
  CHECK(tracker.origin.positions() == std::vector<std::int64_t>{0, -1, 2, -1});
  sg::add_messages.apply(list, sg::remove({"1"}), tracker);
  CHECK(tracker.origin.positions() == std::vector<std::int64_t>{-1, 2, -1});
  tracker.overwritten(list);
  CHECK(tracker.origin.positions() == std::vector<std::int64_t>{-1, -1, -1});
}
