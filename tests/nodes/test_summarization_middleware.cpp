// SPDX-License-Identifier: MIT
// summarization_middleware: LangChain's tests of SummarizationMiddleware
// (tests/unit_tests/agents/middleware/implementations/test_summarization.py, the 1.0 API: OR'ed
// trigger tuples, keep, trim_tokens_to_summarize) ported with their expected values, then the
// middleware in a create_agent run.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/models/agent.hpp>
#include <stategraph/nodes/summarization_middleware.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fake_model.hpp"
#include "support/fake_tool_calling_model.hpp"

namespace {

using sg::ContextSize;
using sg::Message;
using sg::SummarizationMiddlewareOptions;
using sg_test::FakeChatModel;

// LangChain's MockChatModel: every call answers "Generated summary".
FakeChatModel summ_mock_model() {
  return FakeChatModel({sg::ai("Generated summary")});
}

// A model whose calls throw `what`, as a std::runtime_error or a CancelledError.
class SummMwThrowingModel final : public sg::ChatModel {
 public:
  explicit SummMwThrowingModel(std::string what, bool cancelled = false)
      : what_(std::move(what)), cancelled_(cancelled) {}
  [[nodiscard]] std::string model_name() const override { return "throwing"; }
  [[nodiscard]] std::string provider() const override { return "fake"; }

 protected:
  [[nodiscard]] boost::asio::awaitable<Message> agenerate(Request request) const override {
    co_return generate(request);
  }
  [[nodiscard]] Message generate(const Request&) const override {
    if (cancelled_) throw sg::CancelledError(what_);
    throw std::runtime_error(what_);
  }

 private:
  std::string what_;
  bool cancelled_;
};

// A counter returning `n` for any list (LangChain's mock_token_counter).
sg::TokenCounter summ_fixed_tokens(std::int64_t n) {
  return sg::TokenCounter{[n](std::span<const Message>) { return n; }};
}

// `n` tokens per message (`len(messages) * n`).
sg::TokenCounter summ_tokens_per_message(std::int64_t n) {
  return sg::TokenCounter{[n](const Message&) { return n; }};
}

// The length of each message's content (`sum(len(m.content) for m in messages)`).
sg::TokenCounter summ_content_length() {
  return sg::TokenCounter{
      [](const Message& m) { return static_cast<std::int64_t>(m.text().size()); }};
}

// Human messages "0".."n-1" (`[HumanMessage(content=str(i)) for i in range(n)]`).
std::vector<Message> summ_numbered(int n) {
  std::vector<Message> out;
  for (int i = 0; i < n; ++i) out.push_back(sg::human(std::to_string(i)));
  return out;
}

std::vector<Message> summ_humans(const std::vector<std::string>& texts) {
  std::vector<Message> out;
  for (const auto& t : texts) out.push_back(sg::human(t));
  return out;
}

std::vector<std::string> summ_types(const std::vector<Message>& messages) {
  std::vector<std::string> out;
  for (const auto& m : messages) out.emplace_back(sg::to_string(m.type));
  return out;
}

// The texts of the preserved messages (`result["messages"][2:]`).
std::vector<std::string> summ_preserved(const std::vector<Message>& update) {
  std::vector<std::string> out;
  for (std::size_t i = 2; i < update.size(); ++i) out.push_back(update[i].text());
  return out;
}

sg::ToolCall summ_call(std::string name, std::string id) {
  return sg::ToolCall{std::move(id), std::move(name), nlohmann::json::object()};
}

SummarizationMiddlewareOptions summ_opts(std::vector<ContextSize> trigger, ContextSize keep,
                                         sg::TokenCounter counter = {}) {
  SummarizationMiddlewareOptions o;
  o.trigger = std::move(trigger);
  o.keep = keep;
  o.token_counter = std::move(counter);
  return o;
}

// The options of ProfileChatModel (a profile with max_input_tokens=1000).
SummarizationMiddlewareOptions summ_profile_opts(std::vector<ContextSize> trigger, ContextSize keep,
                                                 sg::TokenCounter counter = {}) {
  SummarizationMiddlewareOptions o = summ_opts(std::move(trigger), keep, std::move(counter));
  o.max_input_tokens = 1000;
  return o;
}

}  // namespace

// --- Construction and validation
// ------------------------------------------------------------------

TEST_CASE("summarization middleware: initialization and defaults") {
  SummarizationMiddlewareOptions defaults;
  CHECK(defaults.trigger.empty());
  CHECK(defaults.keep == ContextSize::messages(20));
  CHECK(defaults.trim_tokens_to_summarize == 4000);
  CHECK(defaults.summary_prompt == sg::kSummarizationMiddlewarePrompt);
  CHECK(defaults.summary_prompt.ends_with(
      "<messages>\nMessages to summarize:\n{messages}\n</messages>"));

  auto model = std::make_shared<FakeChatModel>();
  SummarizationMiddlewareOptions o =
      summ_opts({ContextSize::tokens(1000)}, ContextSize::messages(10));
  o.summary_prompt = "Custom prompt: {messages}";
  const sg::AgentMiddleware m = sg::summarization_middleware(model, o);
  CHECK(m.name == "SummarizationMiddleware");
  CHECK(static_cast<bool>(m.before_model));
  CHECK_FALSE(static_cast<bool>(m.before_agent));
  CHECK_FALSE(static_cast<bool>(m.after_model));
  CHECK_FALSE(static_cast<bool>(m.after_agent));
  CHECK_FALSE(static_cast<bool>(m.wrap_model_call));
  CHECK(m.can_jump_to.empty());

  // A fraction needs the model's maximum input tokens (LangChain: the model's profile).
  CHECK_THROWS_WITH_AS(
      (void)sg::summarization_middleware(model, summ_opts({}, ContextSize::fraction(0.5))),
      doctest::Contains("Model profile information is required to use fractional token limits, "
                        "and is unavailable for the specified model"),
      sg::Error);
  CHECK_THROWS_WITH_AS((void)sg::summarization_middleware(nullptr, {}),
                       "SummarizationMiddleware: the model is null", sg::Error);
}

TEST_CASE("summarization middleware: a fractional trigger without max_input_tokens is rejected") {
  auto model = std::make_shared<FakeChatModel>();
  CHECK_THROWS_WITH_AS(
      (void)sg::summarization_middleware(
          model, summ_opts({ContextSize::fraction(0.5)}, ContextSize::messages(1))),
      doctest::Contains("Model profile information is required to use fractional token limits"),
      sg::Error);
  // With it, the same options are accepted.
  CHECK_NOTHROW((void)sg::summarization_middleware(
      model, summ_profile_opts({ContextSize::fraction(0.5)}, ContextSize::messages(1))));
}

TEST_CASE("summarization middleware: validation edge cases") {
  struct Case {
    bool trigger;  // the value is a trigger (else keep)
    ContextSize size;
    std::string error;
  };
  const auto bad_kind = static_cast<ContextSize::Kind>(7);
  const std::vector<Case> cases{
      {true, ContextSize::fraction(0.0), "Fractional trigger values must be between 0 and 1"},
      {true, ContextSize::fraction(1.5), "Fractional trigger values must be between 0 and 1"},
      {false, ContextSize::fraction(-0.1), "Fractional keep values must be between 0 and 1"},
      {true, ContextSize::tokens(0), "trigger thresholds must be greater than 0"},
      {true, ContextSize::messages(-5), "trigger thresholds must be greater than 0"},
      {false, ContextSize::tokens(0), "keep thresholds must be greater than 0"},
      {true, ContextSize{bad_kind, 100}, "Unsupported context size type"},
      {false, ContextSize{bad_kind, 100}, "Unsupported context size type"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.error);
    SummarizationMiddlewareOptions o;
    o.max_input_tokens = 1000;  // so that only the value itself is wrong
    if (c.trigger) {
      o.trigger = {c.size};
    } else {
      o.keep = c.size;
    }
    CHECK_THROWS_WITH_AS(sg::check_summarization_middleware_options(o),
                         doctest::Contains(c.error.c_str()), sg::Error);
  }
  // The whole texts, with the value as Python prints it.
  SummarizationMiddlewareOptions o;
  o.trigger = {ContextSize::fraction(0.0)};
  CHECK_THROWS_WITH_AS(sg::check_summarization_middleware_options(o),
                       "Fractional trigger values must be between 0 and 1, got 0.0.", sg::Error);
  o.trigger = {ContextSize::messages(-5)};
  CHECK_THROWS_WITH_AS(sg::check_summarization_middleware_options(o),
                       "trigger thresholds must be greater than 0, got -5.", sg::Error);
  o.trigger = {ContextSize{bad_kind, 100}};
  CHECK_THROWS_WITH_AS(sg::check_summarization_middleware_options(o),
                       "Unsupported context size type 7 for trigger.", sg::Error);
  // Counts are whole numbers (LangChain's later "tokens trigger values must be integers").
  o.trigger = {ContextSize{ContextSize::Kind::tokens, 1000.5}};
  CHECK_THROWS_WITH_AS(sg::check_summarization_middleware_options(o),
                       "tokens trigger values must be integers, got 1000.5.", sg::Error);
  // Options LangChain has no equivalent check for.
  o.trigger = {ContextSize::tokens(10)};
  o.max_input_tokens = 0;
  CHECK_THROWS_WITH_AS(sg::check_summarization_middleware_options(o),
                       "max_input_tokens must be greater than 0, got 0.", sg::Error);
  o.max_input_tokens.reset();
  o.trim_tokens_to_summarize = 0;
  CHECK_THROWS_AS(sg::check_summarization_middleware_options(o), sg::Error);
  o.trim_tokens_to_summarize = 4000;
  o.summary_prompt = "Summarize {conversation}";
  CHECK_THROWS_WITH_AS(sg::check_summarization_middleware_options(o),
                       doctest::Contains("summary_prompt does not format"), sg::Error);
  try {
    o.summary_prompt = "{";
    sg::check_summarization_middleware_options(o);
    FAIL("no error");
  } catch (const sg::Error& e) {
    CHECK(e.code() == sg::errc::kInvalidArgument);
  }
}

// --- When to summarize
// ----------------------------------------------------------------------------

TEST_CASE("summarization middleware: no summarization cases") {
  FakeChatModel model = summ_mock_model();
  const std::vector<Message> messages{sg::human("Hello"), sg::ai("Hi")};
  // Disabled (trigger=None).
  CHECK_FALSE(sg::summarization_update(model, messages, summ_opts({}, ContextSize::messages(20)))
                  .has_value());
  // Below the token threshold.
  CHECK_FALSE(sg::summarization_update(model, messages,
                                       summ_opts({ContextSize::tokens(1000)},
                                                 ContextSize::messages(20), summ_fixed_tokens(500)))
                  .has_value());
  CHECK(model.invoke_calls().empty());
}

TEST_CASE("summarization middleware: keep messages with a message trigger") {
  FakeChatModel model = summ_mock_model();
  const auto o = summ_opts({ContextSize::messages(5)}, ContextSize::messages(2));
  // Below the threshold: nothing.
  CHECK_FALSE(sg::summarization_update(model, summ_humans({"1", "2", "3", "4"}), o).has_value());
  // At the threshold.
  const auto at = sg::summarization_update(model, summ_humans({"1", "2", "3", "4", "5"}), o);
  REQUIRE(at.has_value());
  CHECK(summ_types(*at) == std::vector<std::string>{"remove", "human", "human", "human"});
  CHECK(summ_preserved(*at) == std::vector<std::string>{"4", "5"});
  // Above it.
  const auto above =
      sg::summarization_update(model, summ_humans({"1", "2", "3", "4", "5", "6"}), o);
  REQUIRE(above.has_value());
  CHECK(summ_types(*above) == std::vector<std::string>{"remove", "human", "human", "human"});
  CHECK(summ_preserved(*above) == std::vector<std::string>{"5", "6"});
  // Disabled.
  CHECK_FALSE(sg::summarization_update(model, summ_humans({"1", "2", "3", "4", "5", "6"}),
                                       summ_opts({}, ContextSize::messages(2)))
                  .has_value());
}

TEST_CASE("summarization middleware: full workflow with a token trigger") {
  FakeChatModel model = summ_mock_model();
  const auto o =
      summ_opts({ContextSize::tokens(1000)}, ContextSize::messages(2), summ_fixed_tokens(1500));
  const auto result = sg::summarization_update(model, summ_humans({"1", "2", "3", "4", "5"}), o);
  REQUIRE(result.has_value());
  REQUIRE(result->size() == 4);
  CHECK((*result)[0].type == sg::MessageType::remove);
  CHECK((*result)[0].id == sg::kRemoveAllMessages);
  CHECK((*result)[0].is_remove_all());
  CHECK(summ_types(*result) == std::vector<std::string>{"remove", "human", "human", "human"});
  const Message& summary = (*result)[1];
  CHECK(summary.text().find("summary of the conversation") != std::string::npos);
  CHECK(summary.text() == "Here is a summary of the conversation to date:\n\nGenerated summary");
  CHECK(summary.additional_kwargs == nlohmann::json{{"lc_source", "summarization"}});
  CHECK(summ_preserved(*result) == std::vector<std::string>{"4", "5"});
}

TEST_CASE("summarization middleware: multiple triggers are OR'ed") {
  FakeChatModel model = summ_mock_model();
  auto o = summ_opts({ContextSize::messages(10), ContextSize::tokens(500)},
                     ContextSize::messages(2), summ_fixed_tokens(100));
  // Neither condition.
  CHECK_FALSE(sg::summarization_update(model, summ_numbered(5), o).has_value());
  // The message count.
  CHECK(sg::summarization_update(model, summ_numbered(10), o).has_value());
  // The token count.
  o.token_counter = summ_fixed_tokens(600);
  CHECK(sg::summarization_update(model, summ_numbered(5), o).has_value());
}

TEST_CASE("summarization middleware: fractions of max_input_tokens trigger and keep") {
  // ProfileChatModel: max_input_tokens=1000; 200 tokens per message, 4 messages = 800 tokens.
  FakeChatModel model = summ_mock_model();
  const std::vector<Message> messages{sg::human("Message 1"), sg::ai("Message 2"),
                                      sg::human("Message 3"), sg::ai("Message 4")};
  const sg::TokenCounter counter = summ_tokens_per_message(200);
  // 0.81 * 1000 = 810 > 800: not triggered.
  CHECK_FALSE(sg::summarization_update(model, messages,
                                       summ_profile_opts({ContextSize::fraction(0.81)},
                                                         ContextSize::fraction(0.5), counter))
                  .has_value());
  // 0.80 * 1000 = 800 <= 800: triggered; keep 0.5 -> 500 tokens -> the last two.
  const auto half = sg::summarization_update(
      model, messages,
      summ_profile_opts({ContextSize::fraction(0.80)}, ContextSize::fraction(0.5), counter));
  REQUIRE(half.has_value());
  CHECK((*half)[0].type == sg::MessageType::remove);
  CHECK((*half)[1].type == sg::MessageType::human);
  CHECK((*half)[1].text().starts_with("Here is a summary of the conversation"));
  CHECK(summ_preserved(*half) == std::vector<std::string>{"Message 3", "Message 4"});
  // keep 0.6 -> 600 tokens -> the last three.
  const auto more = sg::summarization_update(
      model, messages,
      summ_profile_opts({ContextSize::fraction(0.80)}, ContextSize::fraction(0.6), counter));
  REQUIRE(more.has_value());
  CHECK(summ_preserved(*more) == std::vector<std::string>{"Message 2", "Message 3", "Message 4"});
  // keep 0.8 -> 800 tokens: everything fits, no summary.
  CHECK_FALSE(sg::summarization_update(model, messages,
                                       summ_profile_opts({ContextSize::fraction(0.80)},
                                                         ContextSize::fraction(0.8), counter))
                  .has_value());
  // keep 400 tokens -> the last two; 600 tokens -> the last three.
  const auto t400 = sg::summarization_update(
      model, messages,
      summ_profile_opts({ContextSize::fraction(0.80)}, ContextSize::tokens(400), counter));
  REQUIRE(t400.has_value());
  CHECK(summ_preserved(*t400) == std::vector<std::string>{"Message 3", "Message 4"});
  const auto t600 = sg::summarization_update(
      model, messages,
      summ_profile_opts({ContextSize::fraction(0.80)}, ContextSize::tokens(600), counter));
  REQUIRE(t600.has_value());
  CHECK(summ_preserved(*t600) == std::vector<std::string>{"Message 2", "Message 3", "Message 4"});
}

TEST_CASE("summarization middleware: a tiny fraction sets the threshold to 1 token") {
  // int(1000 * 0.0001) == 0, raised to 1.
  const auto o = summ_profile_opts({ContextSize::fraction(0.0001)}, ContextSize::fraction(0.0001),
                                   summ_fixed_tokens(2));
  CHECK_NOTHROW(sg::check_summarization_middleware_options(o));
  const std::vector<Message> messages{sg::human("test")};
  CHECK(sg::should_summarize(messages, 2, o));
  CHECK(sg::should_summarize(messages, 1, o));
  CHECK_FALSE(sg::should_summarize(messages, 0, o));
}

TEST_CASE("summarization middleware: a fraction trigger without max_input_tokens is skipped") {
  // LangChain: the profile becomes unavailable; the other triggers still work.
  FakeChatModel model = summ_mock_model();
  const auto o =
      summ_opts({ContextSize::fraction(0.5), ContextSize::messages(100)}, ContextSize::messages(5));
  CHECK(sg::summarization_update(model, summ_numbered(100), o).has_value());
  CHECK_FALSE(sg::should_summarize(summ_numbered(99), 1'000'000, o));
}

// --- Where to cut
// ---------------------------------------------------------------------------------

TEST_CASE("summarization middleware: token retention preserves AI/Tool pairs") {
  FakeChatModel model = summ_mock_model();
  // 300 + 200 + 50 + 180 + 160 = 890 tokens; keep 500 (0.5 of 1000): the binary search lands on
  // the tool message (index 2), and the cut moves back to its AI message (index 1).
  const std::vector<Message> messages{
      sg::human(std::string(300, 'H')),
      sg::ai(std::string(200, 'A'), {summ_call("test", "call-1")}),
      sg::tool(std::string(50, 'T'), "call-1"),
      sg::human(std::string(180, 'H')),
      sg::human(std::string(160, 'H')),
  };
  const auto o = summ_profile_opts({ContextSize::fraction(0.1)}, ContextSize::fraction(0.5),
                                   summ_content_length());
  const auto result = sg::summarization_update(model, messages, o);
  REQUIRE(result.has_value());
  const std::vector<Message> preserved(result->begin() + 2, result->end());
  CHECK(preserved == std::vector<Message>(messages.begin() + 1, messages.end()));
  REQUIRE(preserved.size() == 4);
  CHECK(preserved[0].type == sg::MessageType::ai);
  REQUIRE_FALSE(preserved[0].tool_calls.empty());
  CHECK(preserved[1].type == sg::MessageType::tool);
  CHECK(preserved[1].tool_call_id == preserved[0].tool_calls[0].id);
}

TEST_CASE("summarization middleware: the safe cutoff point") {
  const std::vector<Message> messages{
      sg::human("msg1"),
      sg::ai("ai", {summ_call("tool", "call1")}),
      sg::tool("result1", "call1"),
      sg::tool("result2", "call2"),  // an orphan: no AI message made call2
      sg::human("msg2"),
  };
  // A message that is not a tool message: unchanged.
  CHECK(sg::safe_summarization_cutoff(messages, 0) == 0);
  CHECK(sg::safe_summarization_cutoff(messages, 1) == 1);
  // A tool message whose AI message is earlier: back to it.
  CHECK(sg::safe_summarization_cutoff(messages, 2) == 1);
  // The orphan (only call2 is collected from index 3 on): past the tool messages.
  CHECK(sg::safe_summarization_cutoff(messages, 3) == 4);
  CHECK(sg::safe_summarization_cutoff(messages, 4) == 4);
  // At or past the end: unchanged.
  CHECK(sg::safe_summarization_cutoff(messages, 5) == 5);
  CHECK(sg::safe_summarization_cutoff(messages, messages.size()) == messages.size());
  CHECK(sg::safe_summarization_cutoff(messages, messages.size() + 5) == messages.size() + 5);
}

TEST_CASE("summarization middleware: an orphan tool message moves the cutoff forward") {
  const std::vector<Message> messages{
      sg::human("msg1"),
      sg::ai("ai_no_tools"),
      sg::tool("orphan_result", "orphan_call"),
      sg::human("msg2"),
  };
  CHECK(sg::safe_summarization_cutoff(messages, 2) == 3);
}

TEST_CASE("summarization middleware: the cutoff moves backward to include the AI message") {
  const std::vector<Message> messages{
      sg::human("initial question"),
      sg::ai("I'll use a tool", {sg::ToolCall{"call_abc", "search", {{"q", "test"}}}}),
      sg::tool("search result", "call_abc"),
      sg::human("followup"),
  };
  const std::size_t cutoff = sg::safe_summarization_cutoff(messages, 2);
  REQUIRE(cutoff == 1);
  CHECK(messages[cutoff].type == sg::MessageType::ai);
  REQUIRE_FALSE(messages[cutoff].tool_calls.empty());
  CHECK(messages[cutoff].tool_calls[0].id == "call_abc");
}

TEST_CASE("summarization middleware: many parallel tool calls stay with their AI message") {
  std::vector<sg::ToolCall> calls;
  for (int i = 0; i < 10; ++i)
    calls.push_back(summ_call("tool_" + std::to_string(i), "call_" + std::to_string(i)));
  std::vector<Message> messages{sg::human("calling 10 tools"), sg::ai("calling 10 tools", calls)};
  for (int i = 0; i < 10; ++i)
    messages.push_back(sg::tool("result_" + std::to_string(i), "call_" + std::to_string(i)));
  CHECK(sg::safe_summarization_cutoff(messages, 7) == 1);
  for (std::size_t i = 2; i < 12; ++i) {
    CAPTURE(i);
    CHECK(sg::safe_summarization_cutoff(messages, i) == 1);
  }
  CHECK(sg::safe_summarization_cutoff(messages, 0) == 0);
  CHECK(sg::safe_summarization_cutoff(messages, 1) == 1);
}

TEST_CASE("summarization middleware: keeping messages never splits an AI/Tool pair") {
  const std::vector<Message> messages{
      sg::human("msg1"),
      sg::ai("ai", {summ_call("tool1", "call1"), summ_call("tool2", "call2"),
                    summ_call("tool3", "call3")}),
      sg::tool("result1", "call1"),
      sg::tool("result2", "call2"),
      sg::tool("result3", "call3"),
      sg::human("msg2"),
  };
  // 6 - 3 = 3, a tool message: back to the AI message.
  CHECK(sg::summarization_cutoff(messages, summ_opts({}, ContextSize::messages(3))) == 1);
  // 6 - 2 = 4, a tool message: back to the AI message too.
  CHECK(sg::summarization_cutoff(messages, summ_opts({}, ContextSize::messages(2))) == 1);
}

TEST_CASE("summarization middleware: a cutoff at the start of a tool sequence") {
  const std::vector<Message> messages{
      sg::human("msg1"),           sg::human("msg2"), sg::ai("ai", {summ_call("tool", "call1")}),
      sg::tool("result", "call1"), sg::human("msg3"), sg::human("msg4"),
  };
  // 6 - 4 = 2, the AI message: a safe point already.
  CHECK(sg::summarization_cutoff(messages, summ_opts({}, ContextSize::messages(4))) == 2);
}

TEST_CASE("summarization middleware: cutoff at the message boundaries") {
  const std::vector<Message> messages = summ_numbered(5);
  CHECK(sg::summarization_cutoff(messages, summ_opts({}, ContextSize::messages(5))) == 0);
  CHECK(sg::summarization_cutoff(messages, summ_opts({}, ContextSize::messages(10))) == 0);
  CHECK(sg::summarization_cutoff(
            messages, summ_opts({}, ContextSize{ContextSize::Kind::messages, 1e30})) == 0);
  CHECK(sg::summarization_cutoff(messages, summ_opts({}, ContextSize::messages(1))) == 4);
}

TEST_CASE("summarization middleware: binary search edge cases") {
  // keep 100 tokens; a single message of 200 tokens: nothing to cut.
  const std::vector<Message> single{sg::human(std::string(200, 'x'))};
  CHECK(sg::summarization_cutoff(single,
                                 summ_opts({ContextSize::messages(5)}, ContextSize::tokens(100),
                                           summ_tokens_per_message(200))) == 0);
  // No messages.
  CHECK(sg::summarization_cutoff({}, summ_opts({ContextSize::messages(5)}, ContextSize::tokens(100),
                                               summ_tokens_per_message(200))) == 0);
  // Everything fits.
  CHECK(sg::summarization_cutoff(summ_numbered(5),
                                 summ_opts({ContextSize::messages(5)}, ContextSize::tokens(100),
                                           summ_tokens_per_message(10))) == 0);
  // Nothing fits but the list has several messages: all but the last are summarized.
  CHECK(sg::summarization_cutoff(summ_numbered(3), summ_opts({}, ContextSize::tokens(100),
                                                             summ_tokens_per_message(200))) == 2);
}

TEST_CASE("summarization middleware: skips when no safe cutoff") {
  FakeChatModel model = summ_mock_model();
  const auto o =
      summ_opts({ContextSize::tokens(1000)}, ContextSize::messages(1), summ_fixed_tokens(1500));
  CHECK_FALSE(sg::summarization_update(model, std::vector<Message>{sg::human("Current request")}, o)
                  .has_value());
  CHECK(model.invoke_calls().empty());
}

// --- The summary
// ----------------------------------------------------------------------------------

TEST_CASE("summarization middleware: the summary message") {
  const Message m = sg::summarization_message("This is a test summary");
  CHECK(m.type == sg::MessageType::human);
  CHECK(m.text().find("Here is a summary of the conversation to date:") != std::string::npos);
  CHECK(m.text().find("This is a test summary") != std::string::npos);
  CHECK(m.additional_kwargs.at("lc_source") == "summarization");
}

TEST_CASE("summarization middleware: summary creation and its special strings") {
  const SummarizationMiddlewareOptions o =
      summ_opts({ContextSize::tokens(1000)}, ContextSize::messages(20));
  const std::vector<Message> messages{sg::human("Hello"), sg::ai("Hi")};
  // Normal creation (the reply is stripped).
  FakeChatModel model({sg::ai("  Generated summary\n")});
  CHECK(sg::summarize_conversation_history(model, messages, o) == "Generated summary");
  // No messages.
  CHECK(sg::summarize_conversation_history(model, {}, o) == "No previous conversation history.");
  // A model error.
  SummMwThrowingModel failing("Model error");
  const std::string error = sg::summarize_conversation_history(failing, messages, o);
  CHECK(error.find("Error generating summary: Model error") != std::string::npos);
  CHECK(error == "Error generating summary: Model error");
  // Nothing left after trimming (it starts on a human message).
  CHECK(sg::summarize_conversation_history(model, std::vector<Message>{sg::ai("only an answer")},
                                           o) ==
        "Previous conversation was too long to summarize.");
  // A cancelled run is not turned into a summary.
  SummMwThrowingModel cancelled("stop", true);
  CHECK_THROWS_AS((void)sg::summarize_conversation_history(cancelled, messages, o),
                  sg::CancelledError);
}

TEST_CASE("summarization middleware: the prompt lists the messages as get_buffer_string") {
  FakeChatModel model({sg::ai("Summary")});
  const SummarizationMiddlewareOptions o =
      summ_opts({ContextSize::tokens(1000)}, ContextSize::messages(20));
  const std::vector<Message> messages{
      sg::human("What is the weather in NYC?"),
      sg::ai("Let me check the weather for you.",
             {sg::ToolCall{"call_123", "get_weather", {{"city", "NYC"}}}}),
      sg::tool("72F and sunny", "call_123"),
      sg::ai("It is 72F and sunny in NYC!"),
  };
  REQUIRE(sg::summarize_conversation_history(model, messages, o) == "Summary");
  const auto calls = model.invoke_calls();
  REQUIRE(calls.size() == 1);
  REQUIRE(calls[0].size() == 1);
  CHECK(calls[0][0].type == sg::MessageType::human);
  const std::string prompt = calls[0][0].text();
  const std::string formatted = sg::get_buffer_string(messages);
  CHECK(prompt.find("<messages>\nMessages to summarize:\n" + formatted + "\n</messages>") !=
        std::string::npos);
  CHECK(prompt.starts_with("<role>\nContext Extraction Assistant\n</role>"));
  // A custom prompt.
  SummarizationMiddlewareOptions custom = o;
  custom.summary_prompt = "Custom prompt: {messages}  \n";
  (void)sg::summarize_conversation_history(model, messages, custom);
  CHECK(model.invoke_calls().back()[0].text() == "Custom prompt: " + formatted);
}

TEST_CASE("summarization middleware: trim limit none keeps all messages") {
  SummarizationMiddlewareOptions o;
  o.trim_tokens_to_summarize.reset();
  o.token_counter =
      sg::TokenCounter{[](std::span<const Message> m) { return sg::count_messages(m); }};
  const std::vector<Message> messages = summ_numbered(10);
  CHECK(sg::messages_to_summarize(messages, o) == messages);
}

TEST_CASE("summarization middleware: trimming for the summary") {
  // Counted one per message, a limit of 3 keeps the last three (starting on a human message).
  SummarizationMiddlewareOptions o;
  o.trim_tokens_to_summarize = 3;
  o.token_counter =
      sg::TokenCounter{[](std::span<const Message> m) { return sg::count_messages(m); }};
  const std::vector<Message> messages{sg::human("1"), sg::ai("2"), sg::human("3"), sg::ai("4"),
                                      sg::human("5")};
  const std::vector<Message> trimmed = sg::messages_to_summarize(messages, o);
  CHECK(trimmed == std::vector<Message>(messages.begin() + 2, messages.end()));
}

TEST_CASE("summarization middleware: trim messages error fallback") {
  SummarizationMiddlewareOptions o;
  o.trigger = {ContextSize::messages(5)};
  o.token_counter = sg::TokenCounter{[](std::span<const Message>) -> std::int64_t {
    throw std::runtime_error("Token counting failed");
  }};
  const std::vector<Message> messages = summ_numbered(20);
  const std::vector<Message> trimmed = sg::messages_to_summarize(messages, o);
  CHECK(trimmed.size() == 15);
  CHECK(trimmed == std::vector<Message>(messages.end() - 15, messages.end()));
}

// --- In an agent
// ----------------------------------------------------------------------------------

TEST_CASE("summarization middleware: create_agent summarizes the thread before the model call") {
  // The agent's model answers with the texts it got joined by "-" (ids "0", "1", ...); the
  // summarizer answers a fixed summary.
  auto model = std::make_shared<sg::test::FakeToolCallingModel>();
  auto summarizer =
      std::make_shared<FakeChatModel>(std::vector<Message>{sg::ai("  The user said a, then c.  ")});
  auto agent = sg::create_agent(
      model, {},
      {.middleware = {sg::summarization_middleware(
           summarizer, summ_opts({ContextSize::messages(4)}, ContextSize::messages(2)))},
       .checkpointer = std::make_shared<sg::InMemorySaver>()});
  sg::RunConfig thread;
  thread.thread_id = "t";
  const auto say = [](std::string text) {
    sg::Update<sg::CreateAgentState> u;
    u.set<&sg::CreateAgentState::messages>(std::vector<Message>{sg::human(std::move(text))});
    return u;
  };

  (void)agent.invoke(say("a"), thread);                // [a, "a"]
  const auto second = agent.invoke(say("c"), thread);  // [a, "a", c, "a-a-c"]
  REQUIRE(second.state.messages.size() == 4);
  CHECK(summarizer->invoke_calls().empty());

  // Five messages reach the trigger: a, "a" and c are summarized, the last two are kept.
  const auto third = agent.invoke(say("e"), thread);
  const std::vector<Message>& m = third.state.messages;
  REQUIRE(m.size() == 4);
  CHECK(m[0].type == sg::MessageType::human);
  CHECK(m[0].text() ==
        "Here is a summary of the conversation to date:\n\nThe user said a, then c.");
  CHECK(m[0].additional_kwargs == nlohmann::json{{"lc_source", "summarization"}});
  CHECK_FALSE(m[0].id.empty());
  CHECK(m[1].text() == "a-a-c");
  CHECK(m[1].id == "1");  // the kept messages keep their ids
  CHECK(m[2].text() == "e");
  CHECK(m[3].type == sg::MessageType::ai);
  CHECK(m[3].text() ==
        "Here is a summary of the conversation to date:\n\nThe user said a, then c.-a-a-c-e");

  // What the summarizer got: one human message, the prompt with the three summarized messages.
  const auto calls = summarizer->invoke_calls();
  REQUIRE(calls.size() == 1);
  REQUIRE(calls[0].size() == 1);
  CHECK(calls[0][0].text().find("Messages to summarize:\nHuman: a\nAI: a\nHuman: c\n</messages>") !=
        std::string::npos);
  // What the agent's model saw on that turn: the summary and the kept messages.
  const auto inputs = model->inputs();
  REQUIRE(inputs.size() == 3);
  REQUIRE(inputs[2].size() == 3);
  CHECK(inputs[2][0].text() == m[0].text());
  CHECK(inputs[2][1].text() == "a-a-c");
  CHECK(inputs[2][2].text() == "e");

  // The checkpoint holds the summarized conversation.
  const auto saved = agent.get_state(thread);
  REQUIRE(saved.has_value());
  CHECK(saved->values.messages == m);
}
