// SPDX-License-Identifier: MIT
// summarize_and_trim_graph: the graph of the demo and the chat, over 40 turns on a checkpointed
// thread with LocalModel: what the model reads stays within its budget, the thread is summarized
// and cut, facts stated early are answered late from the summary, and a reopened database
// continues the thread.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/nodes/summarize_trim.hpp>

#include <doctest/doctest.h>

#include "support/temp_dir.hpp"

namespace {

using State = sg::SummaryTrimState;

sg::Update<State> user_says(const std::string& text) {
  return sg::Update<State>{}.set<&State::messages>(sg::human(text));
}

/// Facts first, chat in the middle, the questions about the facts last.
std::vector<std::string> st_script() {
  std::vector<std::string> turns{"My name is Ada.", "I live in Lisbon.", "My dog is called Rex."};
  for (int i = 0; i < 34; ++i) turns.push_back("Today I read chapter " + std::to_string(i) + ".");
  for (const char* q : {"What is my name?", "Where do I live?", "What is my dog called?"})
    turns.emplace_back(q);
  return turns;
}

}  // namespace

TEST_CASE("summarize_and_trim_graph: 40 turns keep the context bounded and the facts") {
  auto model = std::make_shared<sg::LocalModel>();
  sg::SummaryTrimOptions options;
  options.summary_options.model_options.max_tokens = 1024;  // the summary keeps every fact
  const auto app = sg::summarize_and_trim_graph(model, options)
                       .compile({.checkpointer = std::make_shared<sg::InMemorySaver>()});
  sg::RunConfig thread;
  thread.thread_id = "demo";
  const auto turns = st_script();
  State state;
  std::size_t most_kept = 0;
  for (const auto& text : turns) {
    state = app.invoke(user_says(text), thread).state;
    most_kept = std::max(most_kept, state.messages.size());
    const auto context = sg::summary_trim_context(state, options);
    std::vector<sg::Message> conversation(context.begin() + 1, context.end());
    CHECK(sg::count_tokens_approximately(conversation) <= options.context_tokens);
  }
  CHECK(state.turns == static_cast<std::int64_t>(turns.size()));
  CHECK(!state.summary.empty());
  CHECK(most_kept < 40);  // summarized and cut along the way
  const auto& m = state.messages;
  REQUIRE(m.size() >= 6);
  CHECK(m[m.size() - 5].text() == "You told me: my name is Ada.");
  CHECK(m[m.size() - 3].text() == "You told me: I live in Lisbon.");
  CHECK(m[m.size() - 1].text() == "You told me: my dog is called Rex.");
}

TEST_CASE("summarize_and_trim_graph: a reopened database continues the thread") {
  sg::test::TempDir dir;
  auto model = std::make_shared<sg::LocalModel>();
  sg::RunConfig thread;
  thread.thread_id = "demo";
  {
    const auto app = sg::summarize_and_trim_graph(model).compile(
        {.checkpointer = sg::RocksDbSaver::open(dir.sub("db"))});
    (void)app.invoke(user_says("My name is Ada."), thread);
  }
  const auto app = sg::summarize_and_trim_graph(model).compile(
      {.checkpointer = sg::RocksDbSaver::open(dir.sub("db"))});
  const auto state = app.invoke(user_says("What is my name?"), thread).state;
  CHECK(state.turns == 2);
  CHECK(state.messages.back().text() == "You told me: my name is Ada.");
}

TEST_CASE("summarize_and_trim_graph: bad options are refused") {
  auto model = std::make_shared<sg::LocalModel>();
  CHECK_THROWS_AS((void)sg::summarize_and_trim_graph(nullptr), sg::Error);
  CHECK_THROWS_AS((void)sg::summarize_and_trim_graph(model, {.summarize_after_tokens = 0}),
                  sg::Error);
  CHECK_THROWS_AS((void)sg::summarize_and_trim_graph(
                      model, {.summarize_after_tokens = 100, .context_tokens = 200}),
                  sg::Error);
}
