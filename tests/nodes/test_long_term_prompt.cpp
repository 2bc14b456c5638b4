// SPDX-License-Identifier: MIT
// Representing memories: the agent's own instructions updated by reflection (AgentInstructions,
// reflect_instructions), few-shot examples retrieved by similarity (FewShotExamples), and both
// given to the model through system_prompt_hook.
#include <stategraph/core/state_graph.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/react_agent.hpp>
#include <stategraph/nodes/prompt_memory.hpp>
#include <stategraph/reducers/messages_state.hpp>
#include <stategraph/store/memory_store.hpp>

#include <doctest/doctest.h>

namespace {

using nlohmann::json;

std::shared_ptr<sg::InMemoryStore> indexed_store() {
  return std::make_shared<sg::InMemoryStore>(
      sg::TtlConfig{}, sg::IndexConfig{std::make_shared<sg::HashedNgramEmbeddings>(), {"$"}});
}

std::vector<sg::Message> feedback_chat() {
  return {sg::human("Summarize this paper for Twitter."), sg::ai("Here is a long thread ..."),
          sg::human("Too long. Always keep it under 280 characters.")};
}

}  // namespace

TEST_CASE("AgentInstructions are rewritten by reflection and kept in a shared namespace") {
  sg::InMemoryStore store;
  const sg::AgentInstructions instructions({.agent = "agent_a", .initial = "Summarize papers."});
  CHECK(instructions.get(store) == "Summarize papers.");

  const auto prompt = instructions.reflection_prompt("Summarize papers.", feedback_chat());
  REQUIRE(prompt.size() == 1);
  CHECK(prompt[0].type == sg::MessageType::human);
  CHECK(prompt[0].text().find("<current_instructions>\nSummarize papers.\n") != std::string::npos);
  CHECK(prompt[0].text().find("Human: Too long. Always keep it under 280 characters.") !=
        std::string::npos);

  sg::LocalModel model;
  model.script(
      {sg::ai("I saw the user wants brevity.\n<instructions>\nSummarize papers in one "
              "tweet of at most 280 characters.\n</instructions>")});
  const std::string next = instructions.reflect(model, store, feedback_chat());
  CHECK(next == "Summarize papers in one tweet of at most 280 characters.");
  CHECK(store.get({"agent_instructions"}, "agent_a")->value ==
        json{{"instructions", "Summarize papers in one tweet of at most 280 characters."}});
  CHECK(instructions.get(store) == next);
  // Another agent keeps its own.
  CHECK(sg::AgentInstructions({.agent = "agent_b"}).get(store) == "You are a helpful assistant.");

  // A reply without instructions changes nothing.
  model.script({sg::ai("<instructions>  </instructions>")});
  CHECK_THROWS_AS((void)instructions.reflect(model, store, feedback_chat()), sg::ModelError);
  CHECK(instructions.get(store) == next);
  // A reply without tags is the instructions as they are.
  model.script({sg::ai("Be brief.")});
  CHECK(instructions.reflect(model, store, feedback_chat()) == "Be brief.");

  CHECK_THROWS_AS(sg::AgentInstructions({.agent = ""}), sg::Error);
  CHECK_THROWS_WITH_AS(sg::AgentInstructions({.reflection_prompt = "{instructions} {oops}"}),
                       doctest::Contains("bad reflection prompt template"), sg::Error);
  CHECK_THROWS_AS(instructions.set(store, ""), sg::Error);
  store.put({"agent_instructions"}, "broken", {{"text", "x"}});
  CHECK_THROWS_AS((void)sg::AgentInstructions({.agent = "broken"}).get(store), sg::StoreError);
}

TEST_CASE("AgentInstructions can be kept per user with a namespace template") {
  sg::InMemoryStore store;
  const sg::AgentInstructions instructions(
      {.ns = {"agent_instructions", "{user_id}"}, .agent = "writer"});
  instructions.set(store, "Use British spelling.", {{"user_id", "u1"}});
  CHECK(instructions.get(store, {{"user_id", "u1"}}) == "Use British spelling.");
  CHECK(instructions.get(store, {{"user_id", "u2"}}) == "You are a helpful assistant.");
  CHECK_THROWS_WITH_AS((void)instructions.get(store), doctest::Contains("missing key 'user_id'"),
                       sg::Error);
}

TEST_CASE("reflect_instructions runs as a graph node over the conversation") {
  auto store = std::make_shared<sg::InMemoryStore>();
  auto model = std::make_shared<sg::LocalModel>();
  const sg::AgentInstructions instructions({.agent = "agent_a", .initial = "Summarize papers."});
  sg::StateGraph<sg::MessagesState> g;
  g.add_node("reflect", sg::reflect_instructions<sg::MessagesState>(model, instructions));
  g.add_edge(sg::START, "reflect");
  const auto app = g.compile({.store = store});
  model->script({sg::ai("<instructions>Keep summaries under 280 characters.</instructions>")});
  sg::MessagesState input;
  input.messages = feedback_chat();
  const auto result = app.invoke(input);
  CHECK(result.state.messages.size() == 3);  // the conversation is not touched
  CHECK(instructions.get(*store) == "Keep summaries under 280 characters.");

  // Without a store the node fails clearly.
  sg::StateGraph<sg::MessagesState> g2;
  g2.add_node("reflect", sg::reflect_instructions<sg::MessagesState>(model, instructions));
  g2.add_edge(sg::START, "reflect");
  CHECK_THROWS_WITH(g2.compile().invoke(input), doctest::Contains("the graph has no store"));
  CHECK_THROWS_AS((void)sg::reflect_instructions<sg::MessagesState>(nullptr, instructions),
                  sg::Error);
}

TEST_CASE("FewShotExamples are found by similarity to the last human message") {
  auto store = indexed_store();
  const sg::FewShotExamples examples;
  examples.add(*store, {.input = "Write a haiku about the rain",
                        .output = "Soft rain on the roof / ...",
                        .reasoning = "Three lines, 5-7-5 syllables."});
  examples.add(*store, {.input = "Translate 'good morning' into French", .output = "Bonjour"});
  const std::string key =
      examples.add(*store, {.input = "What is 12 times 12?", .output = "144", .key = "math-1"});
  CHECK(key == "math-1");
  CHECK(store->get({"few_shot_examples"}, "math-1")->value ==
        json{{"input", "What is 12 times 12?"}, {"output", "144"}});

  const auto found = examples.search(*store, "write a haiku about snow", 2);
  REQUIRE(found.size() == 2);
  CHECK(found[0].input == "Write a haiku about the rain");
  CHECK(found[0].reasoning == "Three lines, 5-7-5 syllables.");
  CHECK(*found[0].score > *found[1].score);

  const std::vector<sg::Message> chat = {sg::human("Write a haiku about snow"), sg::ai("..."),
                                         sg::human("Now translate 'good night' into French")};
  const auto by_last = examples.search(*store, chat, 1);
  REQUIRE(by_last.size() == 1);
  CHECK(by_last[0].output == "Bonjour");
  CHECK(examples.search(*store, std::vector<sg::Message>{sg::ai("hi")}).empty());

  CHECK(sg::format_few_shot(found) ==
        "Here are examples of how to respond:\n<example>\nInput: Write a haiku about the rain\n"
        "Reasoning: Three lines, 5-7-5 syllables.\nOutput: Soft rain on the roof / ...\n"
        "</example>\n<example>\nInput: " +
            found[1].input + "\nOutput: " + found[1].output + "\n</example>");
  CHECK(sg::format_few_shot({}).empty());

  CHECK_THROWS_AS(examples.add(*store, {.input = "no output"}), sg::Error);
  sg::InMemoryStore plain;  // no index: similarity search is impossible
  examples.add(plain, {.input = "a", .output = "b"});
  CHECK_THROWS_WITH_AS((void)examples.search(plain, "a"), doctest::Contains("IndexConfig"),
                       sg::Error);
}

TEST_CASE("system_prompt_hook gives the model instructions and examples from the store") {
  auto store = indexed_store();
  const sg::AgentInstructions instructions(
      {.agent = "agent_a", .initial = "The user's name is Ada."});
  const sg::FewShotExamples examples;
  examples.add(*store, {.input = "What is my favourite colour?", .output = "Green."});
  auto model = std::make_shared<sg::LocalModel>();
  std::vector<std::string> prompts;  // what the hook built, per model call
  sg::ReactAgentOptions options;
  options.store = store;
  options.pre_model_hook =
      sg::system_prompt_hook<sg::AgentState>([&](const sg::AgentState& state, sg::Context& ctx) {
        std::string prompt = instructions.get(*ctx.store());
        const std::string shots =
            sg::format_few_shot(examples.search(*ctx.store(), state.messages, 1));
        if (!shots.empty()) prompt += "\n\n" + shots;
        prompts.push_back(prompt);
        return prompt;
      });
  auto agent = sg::create_react_agent(model, {}, std::move(options));
  const auto result = agent.invoke(sg::Update<sg::AgentState>{}.set<&sg::AgentState::messages>(
      std::vector<sg::Message>{sg::human("What is my name?")}));
  // The offline model answers from the system prompt the hook built.
  CHECK(result.state.messages.back().text() == "You told me: the user's name is Ada.");
  REQUIRE(prompts.size() == 1);
  CHECK(prompts[0] ==
        "The user's name is Ada.\n\nHere are examples of how to respond:\n<example>\nInput: What "
        "is my favourite colour?\nOutput: Green.\n</example>");
  // The conversation itself holds no system message.
  CHECK(result.state.messages.size() == 2);
  CHECK(result.state.messages.front().type == sg::MessageType::human);
  REQUIRE(result.state.llm_input_messages.size() == 2);
  CHECK(result.state.llm_input_messages.front().type == sg::MessageType::system);
}
