// SPDX-License-Identifier: MIT
// PIIMiddleware: LangChain's test_pii.py expectations (detectors, strategies, the hooks'
// apply_to_* switches, custom detectors, create_agent runs).
#include <stategraph/core/state_graph.hpp>
#include <stategraph/models/agent.hpp>
#include <stategraph/models/pii_middleware.hpp>

#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/fake_tool_calling_model.hpp"

namespace {

using sg::CreateAgentState;
using sg::test::FakeToolCallingModel;

/// An input of the agent's state: these messages.
sg::Update<CreateAgentState> pii_ask(std::vector<sg::Message> messages) {
  sg::Update<CreateAgentState> u;
  u.set<&CreateAgentState::messages>(std::move(messages));
  return u;
}

/// What a hook did to a conversation: whether it returned an update, and the messages after it.
struct PiiHookOutcome {
  bool returned = false;
  std::vector<sg::Message> messages;
};

/// Runs `hook` as the one node of a graph over `messages` (their ids assigned by add_messages,
/// as in an agent).
PiiHookOutcome pii_run_hook(const sg::AgentHook& hook, std::vector<sg::Message> messages) {
  REQUIRE(hook);
  PiiHookOutcome outcome;
  sg::StateGraph<CreateAgentState> g;
  g.add_node("hook", [&](const CreateAgentState& state, sg::Context& ctx) {
    std::optional<sg::HookResult> result = hook(state, ctx);
    outcome.returned = result.has_value();
    return result ? std::move(result->update) : sg::Update<CreateAgentState>{};
  });
  g.add_edge(sg::START, "hook");
  g.add_edge("hook", sg::END);
  outcome.messages = g.compile().invoke(pii_ask(std::move(messages))).state.messages;
  return outcome;
}

/// The PiiDetectionError that `run` fails with, directly or as the cause of a NodeError.
template <class F>
std::optional<sg::PiiDetectionError> pii_blocked(F run) {
  try {
    run();
  } catch (const sg::PiiDetectionError& e) {
    return e;
  } catch (const sg::NodeError& e) {
    try {
      std::rethrow_exception(e.cause());
    } catch (const sg::PiiDetectionError& cause) {
      return cause;
    } catch (...) {
    }
  }
  return std::nullopt;
}

std::vector<std::string> pii_values(const std::vector<sg::PiiMatch>& matches) {
  std::vector<std::string> out;
  for (const auto& m : matches) out.push_back(m.value);
  return out;
}

std::size_t pii_count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

/// The text of the first message after running before_model of `options` over one human message.
std::string pii_input(sg::PiiOptions options, const std::string& text) {
  const auto m = sg::pii_middleware(std::move(options));
  const auto outcome = pii_run_hook(m.before_model, {sg::human(text)});
  CHECK(outcome.returned);
  return outcome.messages.at(0).text();
}

struct PiiEchoArgs {
  std::string text{};
  static constexpr auto schema() { return std::tuple{sg::field<"text">(&PiiEchoArgs::text)}; }
};

sg::ToolCall pii_call(std::string name, nlohmann::json args, std::string id) {
  return sg::ToolCall{std::move(id), std::move(name), std::move(args)};
}

}  // namespace

TEST_CASE("PII middleware: detect_email (TestEmailDetection)") {
  const auto one = sg::detect_email("Contact me at john.doe@example.com for more info.");
  REQUIRE(one.size() == 1);
  CHECK(one[0] == sg::PiiMatch{"email", "john.doe@example.com", 14, 34});
  CHECK(pii_values(sg::detect_email("Email alice@test.com or bob@company.org")) ==
        std::vector<std::string>{"alice@test.com", "bob@company.org"});
  CHECK(sg::detect_email("This text has no email addresses.").empty());
  CHECK(sg::detect_email("Invalid emails: @test.com, user@, user@domain").empty());
  // The domain is greedy up to its last ".tld" that ends on a word boundary.
  CHECK(pii_values(sg::detect_email("a@b.c.example.org, x@y.com2 z@w.io_")) ==
        std::vector<std::string>{"a@b.c.example.org"});
  // Next to non-ASCII text.
  CHECK(pii_values(sg::detect_email("联系alice@example.com谢谢")) ==
        std::vector<std::string>{"alice@example.com"});
}

TEST_CASE("PII middleware: detect_credit_card with the Luhn check (TestCreditCardDetection)") {
  const auto plain = sg::detect_credit_card("Card: 4532015112830366");
  REQUIRE(plain.size() == 1);
  CHECK(plain[0] == sg::PiiMatch{"credit_card", "4532015112830366", 6, 22});
  CHECK(pii_values(sg::detect_credit_card("Card: 5425 2334 3010 9903")) ==
        std::vector<std::string>{"5425 2334 3010 9903"});
  CHECK(pii_values(sg::detect_credit_card("Card: 4532-0151-1283-0366")) ==
        std::vector<std::string>{"4532-0151-1283-0366"});
  CHECK(sg::detect_credit_card("Card: 1234567890123456").empty());
  CHECK(sg::detect_credit_card("No cards here.").empty());
  CHECK(sg::detect_credit_card("45320151128303661").empty());  // 17 digits: no boundary
}

TEST_CASE("PII middleware: detect_ip validates the address (TestIPDetection)") {
  CHECK(sg::detect_ip("Server IP: 192.168.1.1") ==
        std::vector<sg::PiiMatch>{{"ip", "192.168.1.1", 11, 22}});
  CHECK(pii_values(sg::detect_ip("Connect to 10.0.0.1 or 8.8.8.8")) ==
        std::vector<std::string>{"10.0.0.1", "8.8.8.8"});
  CHECK(sg::detect_ip("Not an IP: 999.999.999.999").empty());
  CHECK(sg::detect_ip("No IP addresses here.").empty());
  CHECK(pii_values(sg::detect_ip("Version 1.2.3.4 released")) ==
        std::vector<std::string>{"1.2.3.4"});
  CHECK(sg::detect_ip("01.2.3.4 and 1.2.3.1234").empty());  // leading zero; a 4-digit part
}

TEST_CASE("PII middleware: detect_mac_address (TestMACAddressDetection)") {
  CHECK(sg::detect_mac_address("MAC: 00:1A:2B:3C:4D:5E") ==
        std::vector<sg::PiiMatch>{{"mac_address", "00:1A:2B:3C:4D:5E", 5, 22}});
  CHECK(pii_values(sg::detect_mac_address("MAC: 00-1A-2B-3C-4D-5E")) ==
        std::vector<std::string>{"00-1A-2B-3C-4D-5E"});
  CHECK(pii_values(sg::detect_mac_address("MAC: aa:bb:cc:dd:ee:ff")) ==
        std::vector<std::string>{"aa:bb:cc:dd:ee:ff"});
  CHECK(sg::detect_mac_address("No MAC address here.").empty());
  CHECK(sg::detect_mac_address("Partial: 00:1A:2B:3C").empty());
}

TEST_CASE("PII middleware: detect_url, with and without a scheme (TestURLDetection)") {
  CHECK(sg::detect_url("Visit http://example.com for details.") ==
        std::vector<sg::PiiMatch>{{"url", "http://example.com", 6, 24}});
  CHECK(pii_values(sg::detect_url("Visit https://secure.example.com/path")) ==
        std::vector<std::string>{"https://secure.example.com/path"});
  CHECK(pii_values(sg::detect_url("Check www.example.com")) ==
        std::vector<std::string>{"www.example.com"});
  CHECK(pii_values(sg::detect_url("Go to example.com/page")) ==
        std::vector<std::string>{"example.com/page"});
  CHECK(sg::detect_url("Visit http://test.com and https://example.org").size() == 2);
  CHECK(sg::detect_url("No URLs here.").empty());
  CHECK(sg::detect_url("The word example.com in prose").empty());
  CHECK(sg::detect_url("http:///nohost").empty());
}

TEST_CASE("PII middleware: the detectors stay linear and shallow on long runs") {
  // std::regex would overflow the stack on such runs (it recurses per repeated character).
  std::string blob(400'000, 'A');
  for (std::size_t i = 7; i < blob.size(); i += 13) blob[i] = (i % 2 == 0) ? '+' : '.';
  const std::string text = blob + " mail bob@example.org or 10.1.2.3 at www.example.com/x " + blob;
  CHECK(pii_values(sg::detect_email(text)) == std::vector<std::string>{"bob@example.org"});
  CHECK(pii_values(sg::detect_ip(text)) == std::vector<std::string>{"10.1.2.3"});
  CHECK(pii_values(sg::detect_url(text)) == std::vector<std::string>{"www.example.com/x"});
  CHECK(sg::detect_credit_card(std::string(300'000, '4')).empty());
  CHECK(sg::detect_mac_address(std::string(300'000, 'a')).empty());
}

TEST_CASE(
    "PII middleware: redact, mask and hash (TestRedactStrategy, TestMaskStrategy, "
    "TestHashStrategy)") {
  const auto redacted = pii_input({.pii_type = "email"}, "Email me at test@example.com");
  CHECK(redacted == "Email me at [REDACTED_EMAIL]");
  const auto two = pii_input({.pii_type = "email"}, "Contact alice@test.com or bob@test.com");
  CHECK(pii_count(two, "[REDACTED_EMAIL]") == 2);
  CHECK(two.find("alice@test.com") == std::string::npos);

  const auto mask = [](std::string type, const std::string& text) {
    return pii_input({.pii_type = std::move(type), .strategy = sg::PiiStrategy::mask}, text);
  };
  CHECK(mask("email", "Email: user@example.com") == "Email: user@****.com");
  CHECK(mask("credit_card", "Card: 4532015112830366") == "Card: ************0366");
  CHECK(mask("credit_card", "Card: 4532-0151-1283-0366") == "Card: ****-****-****-0366");
  CHECK(mask("credit_card", "Card: 5425 2334 3010 9903") == "Card: **** **** **** 9903");
  CHECK(mask("ip", "IP: 192.168.1.100") == "IP: *.*.*.100");
  CHECK(mask("mac_address", "MAC: 00-1A-2B-3C-4D-5E") == "MAC: **-**-**-**-**-5E");
  CHECK(mask("url", "See https://example.com/a, thanks") == "See [MASKED_URL] thanks");

  const sg::PiiOptions hash{.pii_type = "email", .strategy = sg::PiiStrategy::hash};
  const auto hashed = pii_input(hash, "Email: test@example.com");
  CHECK(hashed == "Email: <email_hash:973dfe46>");  // sha256("test@example.com")[:8]
  CHECK(pii_input(hash, "Email: test@example.com") == hashed);

  // apply_pii_strategy directly: matches are replaced from the end.
  const std::string text = "a@b.io and c@d.io";
  CHECK(sg::apply_pii_strategy(text, sg::detect_email(text), sg::PiiStrategy::redact) ==
        "[REDACTED_EMAIL] and [REDACTED_EMAIL]");
  CHECK(sg::apply_pii_strategy(text, {}, sg::PiiStrategy::block) == text);
  CHECK_THROWS_AS((void)sg::apply_pii_strategy("ab", {{"x", "ab", 1, 5}}, sg::PiiStrategy::redact),
                  sg::Error);
}

TEST_CASE("PII middleware: block throws PIIDetectionError (TestBlockStrategy)") {
  const auto m = sg::pii_middleware({.pii_type = "email", .strategy = sg::PiiStrategy::block});
  auto error = pii_blocked(
      [&] { (void)pii_run_hook(m.before_model, {sg::human("Email: test@example.com")}); });
  REQUIRE(error);
  CHECK(error->pii_type() == "email");
  REQUIRE(error->matches().size() == 1);
  CHECK(error->matches()[0].value == "test@example.com");
  CHECK(std::string(error->what()) == "Detected 1 instance(s) of email in text content");
  CHECK(error->code() == sg::errc::kPiiDetected);

  error = pii_blocked([&] {
    (void)pii_run_hook(m.before_model, {sg::human("Emails: alice@test.com and bob@test.com")});
  });
  REQUIRE(error);
  CHECK(error->matches().size() == 2);
  CHECK(std::string(error->what()) == "Detected 2 instance(s) of email in text content");
}

TEST_CASE(
    "PII middleware: apply_to_input, apply_to_output and both (TestPIIMiddlewareIntegration)") {
  const std::vector<sg::Message> user{sg::human("Email: test@example.com")};
  const std::vector<sg::Message> reply{sg::ai("My email is ai@example.com")};

  const auto input_only = sg::pii_middleware({.pii_type = "email"});
  CHECK(input_only.name == "PIIMiddleware[email]");
  auto outcome = pii_run_hook(input_only.before_model, user);
  CHECK(outcome.returned);
  CHECK(outcome.messages.at(0).text() == "Email: [REDACTED_EMAIL]");
  CHECK_FALSE(input_only.after_model);  // LangChain's after_model returns None

  const auto output_only =
      sg::pii_middleware({.pii_type = "email", .apply_to_input = false, .apply_to_output = true});
  CHECK_FALSE(output_only.before_model);  // LangChain's before_model returns None
  outcome = pii_run_hook(output_only.after_model, reply);
  CHECK(outcome.returned);
  CHECK(outcome.messages.at(0).text() == "My email is [REDACTED_EMAIL]");

  const auto both = sg::pii_middleware({.pii_type = "email", .apply_to_output = true});
  CHECK(pii_run_hook(both.before_model, user).returned);
  CHECK(pii_run_hook(both.after_model, reply).returned);

  // No PII, no messages: nothing.
  CHECK_FALSE(pii_run_hook(input_only.before_model, {sg::human("No PII here")}).returned);
  CHECK_FALSE(pii_run_hook(input_only.before_model, {}).returned);
  CHECK_FALSE(pii_run_hook(output_only.after_model, {}).returned);

  // Only the last user message is checked; the update replaces it by id, in place, and keeps
  // its other fields.
  sg::Message named = sg::human("again: b@c.de");
  named.name = "bob";
  outcome = pii_run_hook(input_only.before_model,
                         {sg::human("first: a@b.cd"), sg::ai("ok"), std::move(named)});
  REQUIRE(outcome.messages.size() == 3);
  CHECK(outcome.messages[0].text() == "first: a@b.cd");
  CHECK(outcome.messages[2].text() == "again: [REDACTED_EMAIL]");
  CHECK(outcome.messages[2].name == "bob");
  CHECK(outcome.messages[2].type == sg::MessageType::human);
}

TEST_CASE(
    "PII middleware: apply_to_tool_results checks the tool messages after the last AI "
    "message") {
  const auto run = [](sg::PiiOptions options, std::string result) {
    const auto m = sg::pii_middleware(std::move(options));
    sg::Message answer = sg::tool(std::move(result), "call_123");
    answer.name = "search";
    answer.status = "success";
    return pii_run_hook(m.before_model,
                        {sg::human("Search for John"),
                         sg::ai("", {pii_call("search", nlohmann::json::object(), "call_123")}),
                         std::move(answer)});
  };
  auto outcome = run({.pii_type = "email", .apply_to_input = false, .apply_to_tool_results = true},
                     "Found: john@example.com");
  CHECK(outcome.returned);
  REQUIRE(outcome.messages.size() == 3);
  CHECK(outcome.messages[2].type == sg::MessageType::tool);
  CHECK(outcome.messages[2].text() == "Found: [REDACTED_EMAIL]");
  CHECK(outcome.messages[2].tool_call_id == "call_123");
  CHECK(outcome.messages[2].name == "search");
  CHECK(outcome.messages[2].status == "success");  // kept (LangChain's copy drops it)

  outcome = run({.pii_type = "ip",
                 .strategy = sg::PiiStrategy::mask,
                 .apply_to_input = false,
                 .apply_to_tool_results = true},
                "Server IP: 192.168.1.100");
  CHECK(outcome.messages.at(2).text() == "Server IP: *.*.*.100");

  const auto error = pii_blocked([&] {
    (void)run({.pii_type = "email",
               .strategy = sg::PiiStrategy::block,
               .apply_to_input = false,
               .apply_to_tool_results = true},
              "User email: sensitive@example.com");
  });
  REQUIRE(error);
  CHECK(error->pii_type() == "email");
  CHECK(error->matches().size() == 1);

  // Tool messages before the last AI message are left alone.
  const auto m = sg::pii_middleware(
      {.pii_type = "email", .apply_to_input = false, .apply_to_tool_results = true});
  CHECK_FALSE(pii_run_hook(m.before_model,
                           {sg::ai("", {pii_call("search", nlohmann::json::object(), "c1")}),
                            sg::tool("old@example.com", "c1"), sg::ai("done")})
                  .returned);
}

TEST_CASE(
    "PII middleware: content blocks stay blocks; after_model rewrites tool call "
    "arguments") {
  const auto input = sg::pii_middleware({.pii_type = "email"});
  const sg::Content::Blocks blocks{{{"type", "text"}, {"text", "Reach me at alice@example.com"}},
                                   {{"type", "image_url"}, {"image_url", "x"}}};
  auto outcome = pii_run_hook(input.before_model, {sg::human(blocks)});
  REQUIRE(outcome.messages.at(0).content.is_blocks());
  CHECK(outcome.messages[0].content.blocks()[0]["text"] == "Reach me at [REDACTED_EMAIL]");
  CHECK(outcome.messages[0].content.blocks()[1] == blocks[1]);

  const auto output =
      sg::pii_middleware({.pii_type = "email", .apply_to_input = false, .apply_to_output = true});
  outcome = pii_run_hook(
      output.after_model,
      {sg::human("hi"),
       sg::ai("",
              {pii_call("send_email", {{"to", "alice@example.com"}, {"cc", {"bob@example.com", 3}}},
                        "c1")})});
  CHECK(outcome.returned);
  CHECK(outcome.messages.at(1).tool_calls.at(0).args ==
        nlohmann::json{{"to", "[REDACTED_EMAIL]"}, {"cc", {"[REDACTED_EMAIL]", 3}}});
  CHECK(outcome.messages[1].tool_calls[0].id == "c1");
}

TEST_CASE("PII middleware: custom detectors (TestCustomDetector)") {
  CHECK(pii_input({.pii_type = "api_key", .detector = std::string(R"(sk-[a-zA-Z0-9]{32})")},
                  "Key: sk-abcdefghijklmnopqrstuvwxyz123456") == "Key: [REDACTED_API_KEY]");

  sg::PiiDetector confidential = [](std::string_view text) {
    std::vector<sg::PiiMatch> out;
    if (const auto at = text.find("CONFIDENTIAL"); at != std::string_view::npos)
      out.push_back({"confidential", "CONFIDENTIAL", at, at + 12});
    return out;
  };
  CHECK(pii_input({.pii_type = "confidential", .detector = confidential},
                  "This is CONFIDENTIAL information") ==
        "This is [REDACTED_CONFIDENTIAL] information");

  // A match without a type or a value (LangChain's {"text", "start", "end"} detectors).
  sg::PiiDetector phone = [](std::string_view text) {
    std::vector<sg::PiiMatch> out;
    if (const auto at = text.find("+91 "); at != std::string_view::npos)
      out.push_back({"", "", at, at + 14});
    return out;
  };
  CHECK(
      pii_input({.pii_type = "indian_phone", .strategy = sg::PiiStrategy::hash, .detector = phone},
                "Call +91 9876543210") == "Call <indian_phone_hash:ff9ee1e0>");
  CHECK(
      pii_input({.pii_type = "indian_phone", .strategy = sg::PiiStrategy::mask, .detector = phone},
                "Call +91 9876543210") == "Call ****3210");

  // One middleware for two types.
  sg::PiiDetector email_or_ip = [](std::string_view text) {
    auto out = sg::detect_email(text);
    for (auto& m : sg::detect_ip(text)) out.push_back(std::move(m));
    return out;
  };
  CHECK(pii_input({.pii_type = "email_or_ip", .detector = email_or_ip},
                  "Email: test@example.com, IP: 10.0.0.1") ==
        "Email: [REDACTED_EMAIL], IP: [REDACTED_IP]");

  CHECK_THROWS_WITH_AS((void)sg::pii_middleware({.pii_type = "unknown_type"}),
                       "Unknown PII type: unknown_type. Must be one of ['email', 'credit_card', "
                       "'ip', 'mac_address', 'url'] or provide a custom detector.",
                       sg::Error);
  CHECK_THROWS_WITH_AS((void)sg::pii_middleware({.pii_type = "x", .detector = std::string("(")}),
                       doctest::Contains("not a valid regular expression"), sg::Error);
  CHECK_THROWS_AS((void)sg::pii_middleware({.pii_type = "x", .detector = sg::PiiDetector{}}),
                  sg::Error);
}

TEST_CASE("PII middleware: in create_agent (test_with_agent, TestMultipleMiddleware)") {
  SUBCASE("the model gets the redacted input, which the state keeps") {
    auto model = std::make_shared<FakeToolCallingModel>();
    auto agent =
        sg::create_agent(model, {}, {.middleware = {sg::pii_middleware({.pii_type = "email"})}});
    auto result = agent.invoke(pii_ask(std::vector{sg::human("Email: test@example.com")}));
    REQUIRE(model->inputs().size() == 1);
    CHECK(model->inputs()[0].at(0).text() == "Email: [REDACTED_EMAIL]");
    REQUIRE(result.state.messages.size() == 2);
    CHECK(result.state.messages[0].text() == "Email: [REDACTED_EMAIL]");
    CHECK(result.state.messages[1].text() == "Email: [REDACTED_EMAIL]");
  }
  SUBCASE("three middleware: email redacted, IP masked, no URL to block") {
    auto model = std::make_shared<FakeToolCallingModel>();
    auto agent = sg::create_agent(
        model, {},
        {.middleware = {
             sg::pii_middleware({.pii_type = "email"}),
             sg::pii_middleware({.pii_type = "ip", .strategy = sg::PiiStrategy::mask}),
             sg::pii_middleware({.pii_type = "url", .strategy = sg::PiiStrategy::block})}});
    auto result = agent.invoke(
        pii_ask(std::vector{sg::human("Contact: test@example.com, IP: 192.168.1.100")}));
    REQUIRE(model->inputs().size() == 1);
    CHECK(model->inputs()[0].at(0).text() == "Contact: [REDACTED_EMAIL], IP: *.*.*.100");
    for (const auto& m : result.state.messages) {
      CHECK(m.text().find("test@example.com") == std::string::npos);
      CHECK(m.text().find("192.168.1.100") == std::string::npos);
    }
  }
  SUBCASE("apply_to_output rewrites the reply and the arguments the tool gets") {
    auto model = std::make_shared<FakeToolCallingModel>(std::vector<std::vector<sg::ToolCall>>{
        {pii_call("echo", {{"text", "ping alice@example.com"}}, "c1")}, {}});
    auto echo = sg::make_tool<PiiEchoArgs>("echo", "Echoes.",
                                           [](const PiiEchoArgs& a) { return "echo: " + a.text; });
    auto agent = sg::create_agent(
        model, {echo},
        {.middleware = {sg::pii_middleware(
             {.pii_type = "email", .apply_to_input = false, .apply_to_output = true})}});
    auto result = agent.invoke(pii_ask(std::vector{sg::human("hi alice@example.com")}));
    const auto& m = result.state.messages;
    REQUIRE(m.size() == 4);
    CHECK(m[0].text() == "hi alice@example.com");  // apply_to_input is off
    CHECK(m[1].text() == "hi [REDACTED_EMAIL]");   // the model echoed it
    CHECK(m[1].tool_calls.at(0).args == nlohmann::json{{"text", "ping [REDACTED_EMAIL]"}});
    CHECK(m[2].text() == "echo: ping [REDACTED_EMAIL]");
    CHECK(m[3].text().find("[REDACTED_EMAIL]") != std::string::npos);
  }
  SUBCASE("block fails the run before the model is called") {
    auto model = std::make_shared<FakeToolCallingModel>();
    auto agent = sg::create_agent(
        model, {},
        {.middleware = {
             sg::pii_middleware({.pii_type = "email", .strategy = sg::PiiStrategy::block})}});
    const auto error = pii_blocked(
        [&] { (void)agent.invoke(pii_ask(std::vector{sg::human("Email: test@example.com")})); });
    REQUIRE(error);
    CHECK(error->pii_type() == "email");
    CHECK(model->inputs().empty());
  }
}
