// SPDX-License-Identifier: MIT
#include <stategraph/core/error.hpp>
#include <stategraph/core/json.hpp>
#include <stategraph/core/reducer.hpp>
#include <stategraph/reducers/add_messages.hpp>

#include <doctest/doctest.h>

#include <algorithm>

#include "support/golden.hpp"

using nlohmann::json;

namespace {

template <class R>
using Writes = std::vector<sg::FieldWrite<R>>;

template <class R>
void apply(const R& reducer, typename R::value_type& value, Writes<R> writes,
           std::string_view field = "f") {
  sg::apply_writes(reducer, value, std::span<sg::FieldWrite<R>>(writes), field);
}

}  // namespace

static_assert(sg::Reducer<sg::LastValue<int>>);
static_assert(sg::Reducer<sg::Concat<std::string>>);
static_assert(sg::Reducer<sg::AddMessages>);
static_assert(sg::kSingleWriter<sg::LastValue<std::string>>);
static_assert(sg::ListEditsReducer<sg::Concat<int>>);
static_assert(sg::ListEditsReducer<sg::AddMessages>);
static_assert(!sg::ListEditsReducer<sg::LastValue<std::vector<int>>>);
static_assert(!sg::kSingleWriter<sg::AddMessages>);

TEST_CASE("keep-slice matches every LangGraph.js golden case") {
  const json cases = sg::test::load_golden_cases("keep_slice", 16);
  const sg::Concat<json> reducer;
  for (const json& c : cases) {
    const std::string name = c["name"];
    CAPTURE(name);
    auto value = c["input"]["existing"].get<std::vector<json>>();
    if (c["input"].contains("parallel_updates")) {
      // Writes of one superstep are applied in task order (node name), one reducer call each.
      Writes<sg::Concat<json>> writes;
      std::vector<std::string> nodes;
      for (const auto& [node, update] : c["input"]["parallel_updates"].items())
        nodes.push_back(node);
      std::sort(nodes.begin(), nodes.end());
      for (const auto& node : nodes) {
        writes.push_back(
            {sg::list_update_from_json<json>(c["input"]["parallel_updates"][node]), node});
      }
      apply(reducer, value, std::move(writes), "my_list");
    } else {
      reducer.apply(value, sg::list_update_from_json<json>(c["input"]["update"]));
    }
    CHECK(json(value) == c["expected"]);
  }
}

TEST_CASE("slice bounds follow JavaScript") {
  CHECK(sg::slice_bounds(sg::keep_slice(-5), 7) == std::pair<std::size_t, std::size_t>{2, 7});
  CHECK(sg::slice_bounds(sg::keep_slice(3, 1), 7) == std::pair<std::size_t, std::size_t>{0, 0});
  CHECK(sg::slice_bounds(sg::keep_slice(-100, 2), 7) == std::pair<std::size_t, std::size_t>{0, 2});
  CHECK(sg::slice_bounds(sg::keep_slice(2, -1), 7) == std::pair<std::size_t, std::size_t>{2, 6});
  CHECK(sg::slice_bounds(sg::keep_last(3), 2) == std::pair<std::size_t, std::size_t>{0, 2});
  CHECK(sg::slice_bounds(sg::keep_first(3), 10) == std::pair<std::size_t, std::size_t>{0, 3});
  CHECK(sg::keep_slice_from_json(json::parse(R"({"type": "keep", "from": 1.9, "to": -0.5})")) ==
        sg::keep_slice(1, 0));
  CHECK_THROWS_WITH_AS(
      (void)sg::keep_slice_from_json(json::parse(R"({"type": "keep", "from": "x"})")),
      "keep update: 'from' must be a number, got \"x\"", sg::Error);
  CHECK(sg::keep_slice_to_json(sg::keep_slice(-2)) == json{{"type", "keep"}, {"from", -2}});
}

TEST_CASE("last value: one writer per step") {
  std::string summary = "old";
  apply(sg::LastValue<std::string>{}, summary, {{std::string("new"), "summarize"}}, "summary");
  CHECK(summary == "new");
  CHECK_THROWS_WITH_AS(apply(sg::LastValue<std::string>{}, summary,
                             {{std::string("a"), "left"}, {std::string("b"), "right"}}, "summary"),
                       "At key 'summary': Can receive only one value per step. Use an Annotated "
                       "key to handle multiple values. (Written by 'left', 'right'; give the "
                       "field a reducer.)",
                       sg::InvalidUpdateError);
  CHECK(summary == "new");  // nothing applied
  apply(sg::LastValue<std::string>{}, summary, {}, "summary");
  CHECK(summary == "new");
}

TEST_CASE("overwrite bypasses the reducer, once per step") {
  std::vector<int> items{1, 2};
  const sg::Concat<int> concat;
  apply(concat, items,
        {{sg::ListUpdate<int>{3}, "a"},
         {sg::overwrite(std::vector<int>{9}), "b"},
         {sg::ListUpdate<int>{4}, "c"}});
  CHECK(items == std::vector<int>{9});  // writes after the overwrite are ignored

  CHECK_THROWS_WITH_AS(
      apply(concat, items,
            {{sg::overwrite(std::vector<int>{1}), "a"}, {sg::overwrite(std::vector<int>{2}), "b"}},
            "items"),
      "At key 'items': Can receive only one Overwrite value per super-step. (Written by "
      "'a', 'b'.)",
      sg::InvalidUpdateError);
  CHECK(items == std::vector<int>{9});

  std::vector<sg::Message> messages{sg::human("a", "1")};
  apply(sg::add_messages, messages,
        {{sg::overwrite(std::vector<sg::Message>{sg::ai("only", "2")}), "reset"}});
  REQUIRE(messages.size() == 1);
  CHECK(messages[0].id == "2");
}

TEST_CASE("concat appends and keeps slices, several writers fold in order") {
  std::vector<std::string> items;
  const sg::Concat<std::string> concat;
  apply(concat, items,
        {{sg::ListUpdate<std::string>(sg::append(std::string("p0"))), "p0"},
         {sg::ListUpdate<std::string>{"p1", "p2"}, "p1"}});
  CHECK(items == std::vector<std::string>{"p0", "p1", "p2"});
  concat.apply(items, sg::keep_last(1));
  CHECK(items == std::vector<std::string>{"p2"});
}

TEST_CASE("concat's list-edits cache follows appends, slices and overwrites") {
  const sg::Concat<int> concat;
  std::vector<int> list{1, 2, 3, 4};
  sg::Concat<int>::Cache cache;
  concat.apply(list, sg::ListUpdate<int>{5}, cache);  // not tracking: no bookkeeping
  CHECK(cache.origin.size() == 0);
  cache.track = true;
  cache.rebase(list);
  concat.apply(list, sg::ListUpdate<int>{6, 7}, cache);
  CHECK(cache.origin.positions() == std::vector<std::int64_t>{0, 1, 2, 3, 4, -1, -1});
  concat.apply(list, sg::keep_last(4), cache);
  CHECK(list == std::vector<int>{4, 5, 6, 7});
  CHECK(cache.origin.positions() == std::vector<std::int64_t>{3, 4, -1, -1});
  concat.apply(list, sg::keep_slice(1, -1), cache);
  CHECK(cache.origin.positions() == std::vector<std::int64_t>{4, -1});
  std::vector<int> replaced{9, 9, 9};
  cache.overwritten(replaced);
  CHECK(cache.origin.positions() == std::vector<std::int64_t>{-1, -1, -1});
  // A cache out of step with the list (size differs) starts over: everything is new.
  std::vector<int> other{1};
  concat.apply(other, sg::ListUpdate<int>{2}, cache);
  CHECK(cache.origin.positions() == std::vector<std::int64_t>{-1, -1});
}

TEST_CASE("user-defined binary reducers") {
  auto add = [](int a, int b) { return a + b; };
  const sg::BinaryOperator<int, decltype(add)> sum{add};
  int total = 1;
  apply(sum, total, {{2, "a"}, {3, "b"}});
  CHECK(total == 6);

  auto longest = [](std::string a, std::string b) { return a.size() >= b.size() ? a : b; };
  const sg::BinaryOperator<std::string, decltype(longest)> keep_longest{longest};
  std::string s = "abc";
  keep_longest.apply(s, "z");
  CHECK(s == "abc");
  keep_longest.apply(s, "wxyz");
  CHECK(s == "wxyz");
}

TEST_CASE("list updates from JSON reject bad input") {
  CHECK_THROWS_AS((void)sg::list_update_from_json<int>(json::parse(R"(["x"])")), sg::Error);
  CHECK_THROWS_AS((void)sg::list_update_from_json<int>(json(3)), sg::Error);
  CHECK(sg::list_update_from_json<int>(json::parse("[1, 2]")).items() == std::vector<int>{1, 2});
  CHECK(sg::list_update_to_json(sg::ListUpdate<int>{1, 2}) == json::parse("[1, 2]"));
}
