// SPDX-License-Identifier: MIT
// seeds/002's short-term memory techniques: pruning (FIFO, importance, hybrid; system messages
// kept), recency weighting, compression, context switching, attention windows, statistics, the
// seed's usage example; the pruning as graph pieces on checkpointed threads. Models: LocalModel
// and the loopback OpenAI server.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/core/state_graph.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/openai.hpp>
#include <stategraph/models/react_agent.hpp>
#include <stategraph/nodes/short_term.hpp>
#include <stategraph/reducers/messages_state.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <limits>

#include "../support/loopback_openai.hpp"

namespace {

using sg::Message;
using namespace std::chrono_literals;

/// One token per word (no per-message overhead): easy budgets to reason about.
sg::TokenCounter stm_words() {
  return [](std::span<const Message> m) { return sg::count_words(m, 0); };
}

std::vector<std::string> stm_texts(const std::vector<Message>& messages) {
  std::vector<std::string> out;
  for (const auto& m : messages) out.push_back(m.text());
  return out;
}

/// sys(3 words), then five two-word messages with importances.
std::vector<Message> stm_conversation() {
  return {sg::system("be very brief", "s"),
          sg::with_importance(sg::human("one one", "h1"), 0.9),
          sg::with_importance(sg::ai("two two", "a1"), 0.2),
          sg::with_importance(sg::human("three three", "h2"), 0.4),
          sg::with_importance(sg::ai("four four", "a2"), 0.3),
          sg::human("five five", "h3")};  // importance 1.0 by default
}

sg::PruneOptions stm_prune(std::int64_t max_tokens, sg::PruningStrategy strategy) {
  sg::PruneOptions o;
  o.max_tokens = max_tokens;
  o.strategy = strategy;
  o.token_counter = stm_words();
  return o;
}

/// A clock the test moves by hand.
struct StmClock {
  std::shared_ptr<sg::MemoryClock::time_point> now =
      std::make_shared<sg::MemoryClock::time_point>(sg::MemoryClock::time_point{} + 1000h);
  std::function<sg::MemoryClock::time_point()> fn() const {
    return [now = now] { return *now; };
  }
};

/// A model that always fails.
class StmBrokenModel final : public sg::ChatModel {
 public:
  [[nodiscard]] std::string model_name() const override { return "broken"; }
  [[nodiscard]] std::string provider() const override { return "test"; }

 protected:
  [[nodiscard]] boost::asio::awaitable<Message> agenerate(Request request) const override {
    co_return generate(request);
  }
  [[nodiscard]] Message generate(const Request&) const override {
    throw sg::ModelError(sg::errc::kModelConnection, "no model here");
  }
};

sg::OpenAIConfig stm_loopback_config(const sg::testing::LoopbackOpenAI& server) {
  sg::OpenAIConfig config;
  config.base_url = server.base_url();
  config.api_key = "test";
  config.max_retries = 0;
  return config;
}

}  // namespace

TEST_CASE("importance lives in additional_kwargs and defaults to 1") {
  CHECK(sg::importance_of(sg::human("x")) == 1.0);
  const Message m = sg::with_importance(sg::human("x"), 0.25);
  CHECK(sg::importance_of(m) == 0.25);
  CHECK(m.additional_kwargs["importance"] == 0.25);
  Message bad = sg::human("x");
  bad.additional_kwargs = {{"importance", "high"}};
  CHECK_THROWS_WITH_AS((void)sg::importance_of(bad), doctest::Contains("must be a number"),
                       sg::Error);
  CHECK_THROWS_AS((void)sg::with_importance(sg::human("x"), std::nan("")), sg::Error);
}

TEST_CASE("prune_messages: FIFO, importance and hybrid always keep the system message") {
  const auto conv = stm_conversation();  // 3 + 5 * 2 = 13 tokens
  using S = sg::PruningStrategy;
  // Within the budget: nothing changes.
  CHECK(sg::prune_messages(conv, stm_prune(13, S::fifo)).size() == 6);
  // FIFO drops the oldest non-system messages.
  CHECK(stm_texts(sg::prune_messages(conv, stm_prune(9, S::fifo))) ==
        std::vector<std::string>{"be very brief", "three three", "four four", "five five"});
  // The basic buffer's rule drops the system message first.
  CHECK(stm_texts(sg::prune_messages(conv, stm_prune(9, S::oldest))) ==
        std::vector<std::string>{"two two", "three three", "four four", "five five"});
  // Importance drops the least important: 0.2, then 0.3.
  CHECK(stm_texts(sg::prune_messages(conv, stm_prune(9, S::importance))) ==
        std::vector<std::string>{"be very brief", "one one", "three three", "five five"});
  // Hybrid drops the oldest below 0.5 (0.2 then 0.4), then the 0.3 one, then falls back to FIFO.
  CHECK(stm_texts(sg::prune_messages(conv, stm_prune(9, S::hybrid))) ==
        std::vector<std::string>{"be very brief", "one one", "four four", "five five"});
  CHECK(stm_texts(sg::prune_messages(conv, stm_prune(5, S::hybrid))) ==
        std::vector<std::string>{"be very brief", "five five"});
  // Even an impossible budget keeps the system message (and stops instead of spinning).
  for (auto s : {S::fifo, S::importance, S::hybrid}) {
    CHECK(stm_texts(sg::prune_messages(conv, stm_prune(1, s))) ==
          std::vector<std::string>{"be very brief"});
  }
  const std::vector only_system{sg::system("a b c"), sg::system("d e f")};
  CHECK(sg::prune_messages(only_system, stm_prune(1, S::fifo)).size() == 2);
  // The oldest rule keeps at least one message.
  CHECK(stm_texts(sg::prune_messages(conv, stm_prune(1, S::oldest))) ==
        std::vector<std::string>{"five five"});
  // A count limit prunes too.
  auto by_count = stm_prune(1000, S::fifo);
  by_count.max_messages = 3;
  CHECK(stm_texts(sg::prune_messages(conv, by_count)) ==
        std::vector<std::string>{"be very brief", "four four", "five five"});
}

TEST_CASE("prune options and inputs are checked") {
  const auto conv = stm_conversation();
  CHECK_THROWS_WITH_AS((void)sg::prune_messages(conv, stm_prune(0, sg::PruningStrategy::fifo)),
                       doctest::Contains("max_tokens must be > 0"), sg::Error);
  auto zero = stm_prune(10, sg::PruningStrategy::fifo);
  zero.max_messages = 0;
  CHECK_THROWS_AS((void)sg::prune_messages(conv, zero), sg::Error);
  auto nan = stm_prune(10, sg::PruningStrategy::hybrid);
  nan.importance_threshold = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_AS((void)sg::prune_messages(conv, nan), sg::Error);
  const std::vector with_removal{sg::human("a"), sg::remove_message("x")};
  CHECK_THROWS_AS((void)sg::prune_messages(with_removal, stm_prune(10, sg::PruningStrategy::fifo)),
                  sg::Error);
  CHECK_THROWS_AS((void)sg::prune_hook<sg::AgentState>(stm_prune(-1, sg::PruningStrategy::fifo)),
                  sg::Error);
}

TEST_CASE("pruned_removals names the dropped messages by id") {
  const auto conv = stm_conversation();
  const auto removals = sg::pruned_removals(conv, stm_prune(9, sg::PruningStrategy::importance));
  REQUIRE(removals.size() == 2);
  CHECK(removals[0].type == sg::MessageType::remove);
  CHECK(removals[0].id == "a1");
  CHECK(removals[1].id == "a2");
  std::vector no_id{sg::human("one two three"), sg::human("four", "k")};
  CHECK_THROWS_WITH_AS((void)sg::pruned_removals(no_id, stm_prune(1, sg::PruningStrategy::fifo)),
                       doctest::Contains("has no id"), sg::Error);
}

TEST_CASE("prune_hook on a checkpointed ReAct thread: LocalModel forgets the unimportant fact") {
  auto model = std::make_shared<sg::LocalModel>();
  sg::PruneOptions prune;
  prune.max_tokens = 65;  // count_tokens_approximately
  prune.strategy = sg::PruningStrategy::hybrid;
  const auto agent =
      sg::create_react_agent(model, {},
                             {.pre_model_hook = sg::prune_hook<sg::AgentState>(prune),
                              .checkpointer = std::make_shared<sg::InMemorySaver>()});
  sg::RunConfig config;
  config.thread_id = "stm-hook";
  auto say = [&](Message m) {
    return agent
        .invoke(sg::Update<sg::AgentState>{}.set<&sg::AgentState::messages>(std::move(m)), config)
        .state.messages.back()
        .text();
  };
  CHECK(say(sg::with_importance(sg::human("My name is Ada."), 0.9)) == "Noted: my name is Ada.");
  CHECK(say(sg::with_importance(sg::human("My cat is called Tom."), 0.1)) ==
        "Noted: my cat is called Tom.");
  CHECK(say(sg::human("I live in Lisbon.")) == "Noted: I live in Lisbon.");
  // Over the budget (71 tokens): the unimportant fact goes first, which is enough (61).
  CHECK(say(sg::human("What is my name?")) == "You told me: my name is Ada.");
  // Later, FIFO takes the oldest too; the cat was forgotten first.
  CHECK(say(sg::human("What is my cat called?")) == "I don't know that yet.");
  // The thread itself keeps everything.
  CHECK(agent.get_state(config)->values.messages.size() == 10);
}

TEST_CASE("prune_node removes the pruned messages from the checkpointed thread") {
  sg::StateGraph<sg::MessagesState> g;
  g.add_node("chat", [](const sg::MessagesState& s) {
    return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(
        sg::with_importance(sg::ai("ok " + s.messages.back().text()), 0.1));
  });
  g.add_node("prune", sg::prune_node<sg::MessagesState>(stm_prune(8, sg::PruningStrategy::hybrid)));
  g.add_edge(sg::START, "chat");
  g.add_edge("chat", "prune");
  const auto app = g.compile({.checkpointer = std::make_shared<sg::InMemorySaver>()});
  sg::RunConfig config;
  config.thread_id = "stm-node";
  app.invoke(sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(
                 std::vector<Message>{sg::system("be brief"), sg::human("alpha")}),
             config);
  for (const char* text : {"beta", "gamma", "delta"}) {
    app.invoke(sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(sg::human(text)),
               config);
  }
  // 2 + (1 + 2) * 4 = 14 words; the unimportant replies (0.1) go first, oldest first.
  const auto kept = app.get_state(config)->values.messages;
  CHECK(stm_texts(kept) ==
        std::vector<std::string>{"be brief", "alpha", "beta", "gamma", "delta", "ok delta"});
}

TEST_CASE("ShortTermMemoryBuffer keeps a running token total and prunes after each add") {
  sg::ShortTermMemoryOptions o;
  o.max_tokens = 9;
  o.token_counter = stm_words();
  o.strategy = sg::PruningStrategy::hybrid;
  sg::ShortTermMemoryBuffer buffer(o);
  for (const auto& m : stm_conversation()) buffer.add(m);
  CHECK(buffer.current_tokens() == 9);
  CHECK(stm_texts(buffer.context()) ==
        std::vector<std::string>{"be very brief", "one one", "four four", "five five"});
  // The explicit importance wins over the message's; the oldest unimportant entry goes.
  buffer.add(sg::with_importance(sg::human("six six"), 0.9), 0.1);
  CHECK(buffer.entries().back().importance == 0.1);
  CHECK(stm_texts(buffer.context()) ==
        std::vector<std::string>{"be very brief", "one one", "five five", "six six"});
  // Bad input leaves the buffer as it was.
  const auto before = buffer.context();
  CHECK_THROWS_AS(buffer.add(sg::remove_message("x")), sg::Error);
  CHECK_THROWS_AS(buffer.add(sg::human("x"), std::numeric_limits<double>::infinity()), sg::Error);
  CHECK_THROWS_AS(buffer.set_importance(99, 1.0), sg::Error);
  CHECK(buffer.context() == before);
  buffer.clear();
  CHECK(buffer.current_tokens() == 0);
  CHECK(buffer.entries().empty());
  sg::ShortTermMemoryOptions bad;
  bad.recency.half_life_minutes = 0;
  CHECK_THROWS_AS(sg::ShortTermMemoryBuffer{bad}, sg::Error);
}

TEST_CASE("recency weighting: exp(-decay * age / half-life) orders the weighted context") {
  StmClock clock;
  sg::ShortTermMemoryOptions o;
  o.clock = clock.fn();
  sg::ShortTermMemoryBuffer buffer(o);
  buffer.add(sg::human("old but vital"), 1.0);
  *clock.now += 50min;
  buffer.add(sg::human("recent, minor"), 0.5);
  *clock.now += 5min;
  buffer.add(sg::human("fresh"), 0.6);
  const auto& e = buffer.entries();
  // 55 minutes old: exp(-0.1 * 55 / 5) = exp(-1.1).
  CHECK(buffer.effective_importance(e[0]) == doctest::Approx(std::exp(-1.1)));
  CHECK(buffer.effective_importance(e[1]) == doctest::Approx(0.5 * std::exp(-0.1)));
  CHECK(buffer.effective_importance(e[2]) == doctest::Approx(0.6));
  CHECK(stm_texts(buffer.weighted_context()) ==
        std::vector<std::string>{"fresh", "recent, minor", "old but vital"});
  CHECK(stm_texts(buffer.context()) ==
        std::vector<std::string>{"old but vital", "recent, minor", "fresh"});
  // A future timestamp counts as new.
  const auto now = *clock.now;
  CHECK(sg::recency_weight(now + 10min, now, {}) == 1.0);
}

TEST_CASE("SummarizationCompressor with LocalModel turns a segment into a summary entry") {
  auto model = std::make_shared<sg::LocalModel>();
  sg::SummarizationCompressor compressor(model);
  std::vector<sg::MemoryEntry> two{{sg::human("My name is Ada."), 1.0, {}, 0},
                                   {sg::ai("Hello Ada."), 1.0, {}, 0}};
  CHECK(compressor.compress(two).size() == 2);  // fewer than 3: unchanged
  std::vector<sg::MemoryEntry> three = two;
  three.push_back({sg::human("I live in Lisbon."), 0.4, {}, 0});
  const auto out = compressor.compress(three);
  REQUIRE(out.size() == 1);
  CHECK(out[0].message.type == sg::MessageType::system);
  CHECK(out[0].importance == 0.8);
  const std::string text = out[0].message.text();
  CHECK(text.rfind("[Previous conversation summary]: ", 0) == 0);
  CHECK(text.find("My name is Ada") != std::string::npos);
  CHECK(text.find("I live in Lisbon") != std::string::npos);
  CHECK_THROWS_AS(sg::SummarizationCompressor(nullptr), sg::Error);
}

TEST_CASE("SummarizationCompressor through the loopback server sends the segment and the prompt") {
  sg::testing::LoopbackOpenAI server;
  server.push(sg::testing::LoopbackReply::text("Ada asked about ML."));
  auto model = std::make_shared<sg::OpenAIChatModel>(stm_loopback_config(server));
  sg::SummarizationCompressor compressor(model);
  const auto out = compressor.compress({{sg::human("I am Ada."), 1.0, {}, 0},
                                        {sg::human("What is machine learning?"), 1.0, {}, 0},
                                        {sg::ai("Learning from data."), 0.8, {}, 0}});
  REQUIRE(out.size() == 1);
  CHECK(out[0].message.text() == "[Previous conversation summary]: Ada asked about ML.");
  const auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  const auto body = requests[0].json();
  REQUIRE(body["messages"].size() == 2);
  CHECK(body["messages"][0]["content"] ==
        "Human: I am Ada.\nHuman: What is machine learning?\nAI: Learning from data.");
  CHECK(body["messages"][1]["content"] == std::string(sg::kSegmentSummaryPrompt));
}

TEST_CASE("SelectiveCompressor keeps the important entries behind an omission note") {
  sg::SelectiveCompressor selective;  // 0.7
  auto out = selective.compress({{sg::human("a"), 0.9, {}, 0},
                                 {sg::human("b"), 0.2, {}, 0},
                                 {sg::human("c"), 0.7, {}, 0},
                                 {sg::human("d"), 0.5, {}, 0}});
  REQUIRE(out.size() == 3);
  CHECK(out[0].message.text() == "[2 messages omitted for brevity]");
  CHECK(out[0].message.type == sg::MessageType::system);
  CHECK(out[0].importance == 0.3);
  CHECK(out[1].message.text() == "a");
  CHECK(out[2].message.text() == "c");
  CHECK(selective.compress({{sg::human("a"), 0.9, {}, 0}}).size() == 1);  // nothing omitted
  CHECK_THROWS_AS(sg::SelectiveCompressor(std::nan("")), sg::Error);
}

TEST_CASE("CompressionPipeline compresses the oldest third above the threshold") {
  sg::ShortTermMemoryOptions o;
  o.max_tokens = 100;
  o.token_counter = stm_words();
  sg::ShortTermMemoryBuffer buffer(o);
  for (int i = 0; i < 9; ++i)
    buffer.add(sg::human("fact number " + std::to_string(i) + " is here now ok"),
               i == 1 ? 0.9 : 0.4);  // 7 words each: 63 tokens
  sg::CompressionPipeline pipeline({std::make_shared<sg::SelectiveCompressor>()});
  CHECK_FALSE(pipeline.should_compress(buffer));  // 63 <= 80
  CHECK_FALSE(pipeline.compress_if_needed(buffer));
  buffer.add(sg::human("one more fact that is quite long now"), 0.4);  // 71
  buffer.add(sg::human("and another fact that pushes it over"), 0.4);  // 78
  buffer.add(sg::human("yes over the threshold by now"), 0.4);         // 84
  REQUIRE(pipeline.should_compress(buffer));
  REQUIRE(pipeline.compress_if_needed(buffer));
  // 12 entries: the first 4 became the note plus the one important entry.
  REQUIRE(buffer.entries().size() == 10);
  CHECK(buffer.entries()[0].message.text() == "[3 messages omitted for brevity]");
  CHECK(buffer.entries()[1].message.text() == "fact number 1 is here now ok");
  CHECK(buffer.current_tokens() == 84 - 28 + 5 + 7);
  // A failing model leaves the buffer as it was.
  sg::CompressionPipeline broken(
      {std::make_shared<sg::SummarizationCompressor>(std::make_shared<StmBrokenModel>())}, 0.5);
  const auto before = buffer.context();
  CHECK_THROWS_AS(broken.compress_if_needed(buffer), sg::ModelError);
  CHECK(buffer.context() == before);
  CHECK_THROWS_AS(sg::CompressionPipeline({nullptr}), sg::Error);
  CHECK_THROWS_AS(sg::CompressionPipeline({}, 0.0), sg::Error);
  CHECK_THROWS_AS(sg::CompressionPipeline({}, 1.5), sg::Error);
}

TEST_CASE("ContextManager switches topics, keeps a stack and merges contexts") {
  sg::ContextManager manager({.max_tokens = 100, .token_counter = stm_words()});
  CHECK(manager.active_buffer() == nullptr);
  manager.switch_context("travel");
  manager.active_buffer()->add(sg::human("Lisbon in May"), 0.5);
  manager.switch_context("travel");  // already active: no stack entry
  CHECK(manager.stack().empty());
  manager.switch_context("cooking");
  // Switching away preserved the last travel entry's importance.
  CHECK(manager.find("travel")->entries().back().importance == 0.9);
  CHECK(manager.stack() == std::vector<std::string>{"travel"});
  manager.active_buffer()->add(sg::human("bake bread"), 1.0);
  manager.switch_context("work", false);
  manager.active_buffer()->add(sg::human("ship it"), 0.4);
  CHECK(manager.stack() == std::vector<std::string>{"travel", "cooking"});
  CHECK(manager.find("cooking")->entries().back().importance == 1.0);  // not lowered
  CHECK(manager.return_to_previous() == "cooking");
  CHECK(manager.active_context() == "cooking");
  CHECK(manager.context_count() == 3);

  manager.merge_contexts("cooking", "travel");  // the active one hands over to the target
  CHECK(manager.context_count() == 2);
  CHECK(manager.active_context() == "travel");
  CHECK(manager.stack() == std::vector<std::string>{"travel"});
  const auto& travel = manager.find("travel")->entries();
  REQUIRE(travel.size() == 2);
  CHECK(travel[1].message.text() == "bake bread");
  CHECK(travel[1].importance == doctest::Approx(0.7));
  CHECK(manager.find("travel")->current_tokens() == 5);

  // Bad merges change nothing.
  CHECK_THROWS_AS(manager.merge_contexts("nope", "travel"), sg::Error);
  CHECK_THROWS_AS(manager.merge_contexts("work", "nope"), sg::Error);
  CHECK_THROWS_AS(manager.merge_contexts("work", "work"), sg::Error);
  CHECK_THROWS_AS(manager.create_context("work"), sg::Error);
  CHECK_THROWS_AS(manager.switch_context(""), sg::Error);
  CHECK(manager.context_count() == 2);
  CHECK(manager.find("work")->entries().size() == 1);
  CHECK(manager.return_to_previous() == "travel");
  CHECK(manager.return_to_previous() == std::nullopt);
}

TEST_CASE("attention_window picks the relevant entries and their neighbours within the window") {
  sg::ShortTermMemoryOptions o;
  o.token_counter = stm_words();
  sg::ShortTermMemoryBuffer buffer(o);
  for (const char* text : {"We talked about the weather in Paris today",       // 8
                           "Then the football results came up briefly",        // 7
                           "Spam filtering sorts junk email from real email",  // 8
                           "A classifier learns which email words mean spam",  // 8
                           "Finally we planned a dinner with friends"}) {      // 7
    buffer.add(sg::human(text));
  }
  sg::HashedNgramEmbeddings embedder;
  // Everything fits a large window.
  CHECK(sg::attention_window(buffer.entries(), "spam email", embedder, 2000).size() == 5);
  // A 24-token window: the best entry (spam filtering) brings its two neighbours.
  CHECK(stm_texts(sg::attention_window(buffer.entries(), "How does spam filtering work?", embedder,
                                       24)) ==
        std::vector<std::string>{"Then the football results came up briefly",
                                 "Spam filtering sorts junk email from real email",
                                 "A classifier learns which email words mean spam"});
  CHECK(sg::attention_window({}, "q", embedder).empty());
  CHECK_THROWS_AS((void)sg::attention_window(buffer.entries(), "q", embedder, 0), sg::Error);
  sg::FunctionEmbeddings short_answer(2, [](const std::vector<std::string>&) {
    return std::vector<std::vector<float>>{{1.0f, 0.0f}};
  });
  CHECK_THROWS_WITH_AS((void)sg::attention_window(buffer.entries(), "q", short_answer),
                       doctest::Contains("returned 1 vectors for 6 texts"), sg::Error);
  CHECK(sg::cosine_similarity(std::vector<float>{1, 0}, std::vector<float>{0, 2}) == 0.0);
  CHECK(sg::cosine_similarity(std::vector<float>{1, 1}, std::vector<float>{2, 2}) ==
        doctest::Approx(1.0));
  CHECK(sg::cosine_similarity(std::vector<float>{0, 0}, std::vector<float>{1, 1}) == 0.0);
  CHECK_THROWS_AS((void)sg::cosine_similarity(std::vector<float>{1}, std::vector<float>{1, 2}),
                  sg::Error);
}

TEST_CASE("attention_window with OpenAIEmbeddings on the loopback server embeds in one request") {
  sg::testing::LoopbackOpenAI server;
  sg::OpenAIEmbeddings embedder(stm_loopback_config(server), "text-embedding-3-small", 64);
  sg::ShortTermMemoryOptions o;
  o.token_counter = stm_words();
  sg::ShortTermMemoryBuffer buffer(o);
  for (const char* text : {"alpha beta", "gamma delta", "epsilon zeta", "eta theta", "iota kappa"})
    buffer.add(sg::human(text));
  // The loopback vectors are pseudo-random per text: the query equal to an entry finds it.
  const auto window = sg::attention_window(buffer.entries(), "eta theta", embedder, 6);
  CHECK(stm_texts(window) == std::vector<std::string>{"epsilon zeta", "eta theta", "iota kappa"});
  const auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].target.find("/embeddings") != std::string::npos);
  CHECK(requests[0].json()["input"].size() == 6);
}

TEST_CASE("ShortTermMemorySystem reproduces the seed's usage example") {
  auto embedder = std::make_shared<sg::HashedNgramEmbeddings>();
  sg::ShortTermMemorySystem memory({.max_tokens = 8000,
                                    .enable_attention = true,
                                    .embedder = embedder,
                                    .llm = std::make_shared<sg::LocalModel>()});
  memory.add_interaction(sg::system("You are a helpful AI assistant."), 1.0);
  memory.add_interaction(sg::human("What is machine learning?"));
  memory.add_interaction(
      sg::ai("Machine learning is a subset of AI that enables systems to learn from data..."), 0.8);
  memory.add_interaction(sg::human("Can you give me an example?"));
  memory.add_interaction(sg::ai("A common example is email spam filtering..."), 0.7);
  const auto context = memory.context_for_llm("How does spam filtering work?");
  CHECK(context.size() == 5);  // everything fits the 2000-token window
  const auto stats = memory.stats();
  CHECK(stats.total_entries == 5);
  const std::vector<Message> all = memory.buffer().context();
  std::int64_t tokens = 0;
  for (const auto& m : all) tokens += sg::count_tokens_approximately(std::span(&m, 1));
  CHECK(stats.total_tokens == tokens);
  CHECK(stats.max_tokens == 8000);
  CHECK(stats.utilization == doctest::Approx(static_cast<double>(tokens) / 8000.0));
  CHECK(stats.active_context == std::nullopt);
  CHECK(stats.context_count == 0);
  // Adding in a context switches to it; the main buffer is unchanged.
  memory.add_interaction(sg::human("Let's talk about cooking."), 1.0, "cooking");
  CHECK(memory.stats().active_context == "cooking");
  CHECK(memory.stats().context_count == 1);
  CHECK(memory.stats().total_entries == 5);
  CHECK(memory.contexts().find("cooking")->max_tokens() == 4000);
}

TEST_CASE("ShortTermMemorySystem compresses with the model when the buffer fills up") {
  sg::ShortTermMemorySystem memory({.max_tokens = 60,
                                    .compression_threshold = 0.8,
                                    .llm = std::make_shared<sg::LocalModel>(),
                                    .token_counter = stm_words()});
  memory.add_interaction(sg::system("You are a helpful AI assistant."), 1.0);  // 6 words
  memory.add_interaction(sg::human("My name is Ada."));                        // 10
  memory.add_interaction(sg::ai("Hello Ada."), 0.6);                           // 12
  memory.add_interaction(sg::human("I live in Lisbon."));                      // 16
  memory.add_interaction(sg::ai("Lisbon is lovely."), 0.6);                    // 19
  memory.add_interaction(sg::human("I work at a bakery."));                    // 24
  memory.add_interaction(sg::ai("A bakery, nice."), 0.6);                      // 27
  memory.add_interaction(sg::human("My favourite bread is sourdough."));       // 32
  memory.add_interaction(sg::ai("Sourdough is a classic with a long fermentation."), 0.6);  // 40
  CHECK(memory.buffer().entries().size() == 9);
  memory.add_interaction(sg::human("I also like rye bread with butter and honey."));  // 49 > 48
  // The oldest third (3 of 10) became one summary, which the selective pass keeps (0.8). As in
  // the seed, the system prompt is part of the summarized segment.
  const auto& entries = memory.buffer().entries();
  REQUIRE(entries.size() == 8);
  CHECK(entries[0].message.type == sg::MessageType::system);
  CHECK(entries[0].importance == 0.8);
  const std::string summary = entries[0].message.text();
  CHECK(summary.rfind("[Previous conversation summary]: ", 0) == 0);
  CHECK(summary.find("My name is Ada") != std::string::npos);
  CHECK(entries[1].message.text() == "I live in Lisbon.");
  std::int64_t total = 0;
  for (const auto& e : entries) total += e.tokens;
  CHECK(memory.stats().total_tokens == total);
}
