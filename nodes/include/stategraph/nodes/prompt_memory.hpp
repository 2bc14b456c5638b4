// SPDX-License-Identifier: MIT
#pragma once
// Memories presented in the prompt: the agent's own
// instructions, rewritten by reflection over a conversation and kept in a shared namespace, and
// few-shot examples retrieved from the store by similarity to what the user just said.
//
//   sg::AgentInstructions instructions({.agent = "agent_a"});  // ("agent_instructions",) agent_a
//   sg::FewShotExamples examples;                              // ("few_shot_examples",)
//   examples.add(*store, {.input = "Write a haiku about rain", .output = "..."});
//   auto agent = sg::create_react_agent(model, tools, {
//       .pre_model_hook = sg::system_prompt_hook<sg::AgentState>(
//           [=](const sg::AgentState& s, sg::Context& ctx) {
//             return instructions.get(*ctx.store()) + "\n\n" +
//                    sg::format_few_shot(examples.search(*ctx.store(), s.messages));
//           }),
//       .store = store});
//   instructions.reflect(*model, *store, conversation);  // after the conversation

#include <stategraph/core/async.hpp>  // reflect_instructions is a coroutine node
#include <stategraph/core/context.hpp>
#include <stategraph/core/update.hpp>
#include <stategraph/models/chat_model.hpp>
#include <stategraph/nodes/namespace_template.hpp>
#include <stategraph/store/store.hpp>

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace sg {

/// Options of AgentInstructions.
struct InstructionsOptions {
  /// The shared namespace of every agent's instructions (a template such as
  /// {"agent_instructions", "{user_id}"} keeps them per user).
  NamespaceTemplate ns{"agent_instructions"};
  /// The item key: the agent's name.
  std::string agent = "agent";
  /// The instructions before the first reflection.
  std::string initial = "You are a helpful assistant.";
  /// The reflection prompt (fmt syntax, a literal brace doubled): {instructions} is the current
  /// instructions, {conversation} the conversation ("Human: ..." / "AI: ..." lines). The model
  /// answers with the new instructions, between `<instructions>` and `</instructions>` (or alone).
  std::string reflection_prompt =
      "You are improving the instructions of an AI assistant from one of its conversations.\n\n"
      "<current_instructions>\n{instructions}\n</current_instructions>\n\n"
      "<conversation>\n{conversation}\n</conversation>\n\n"
      "Find what the user corrected, asked for or disliked, and the rules the assistant should "
      "follow from now on. Rewrite the instructions to include them, changing as little as "
      "possible; if nothing needs to change, return them unchanged. Answer with the complete new "
      "instructions between <instructions> and </instructions>.";
  ChatOptions model_options{};
};

/// An agent's instructions as a long-term memory: the item {"instructions": text} under
/// (ns, agent). Immutable; thread-safe.
class AgentInstructions {
 public:
  /// Throws sg::Error (errc::kInvalidArgument) for an empty agent name or initial instructions,
  /// or a reflection prompt fmt cannot format.
  explicit AgentInstructions(InstructionsOptions options = {});

  [[nodiscard]] const InstructionsOptions& options() const noexcept { return *options_; }

  /// The stored instructions, or the initial ones. Throws what NamespaceTemplate::resolve
  /// throws.
  [[nodiscard]] std::string get(Store& store, const nlohmann::json& configurable = {}) const;
  /// Stores `instructions`. Throws sg::Error (errc::kInvalidArgument) for empty instructions.
  void set(Store& store, const std::string& instructions,
           const nlohmann::json& configurable = {}) const;

  /// The reflection request: one human message, the reflection prompt filled in.
  [[nodiscard]] std::vector<Message> reflection_prompt(const std::string& current,
                                                       std::span<const Message> conversation) const;
  /// Stores the instructions of the model's `reply` to reflection_prompt and returns them.
  /// Throws ModelError (errc::kModelInvalidResponse), storing nothing, when the reply holds no
  /// instructions.
  std::string adopt(Store& store, const Message& reply,
                    const nlohmann::json& configurable = {}) const;
  /// Reflection (LangMem's metaprompt optimizer, one step): asks `model` to rewrite the current
  /// instructions given `conversation`, stores and returns them. Throws what adopt() throws;
  /// model errors propagate. Blocks for the model call.
  std::string reflect(const ChatModel& model, Store& store, std::span<const Message> conversation,
                      const nlohmann::json& configurable = {},
                      CancellationToken cancellation = {}) const;

 private:
  std::shared_ptr<const InstructionsOptions> options_;
};

/// A coroutine node reflecting over state.*Messages with `instructions` (the seed's
/// updateInstructions node): the model call is awaited, the new instructions go to the graph's
/// store under the run's configurable values; no state update. Throws sg::Error
/// (errc::kInvalidArgument) at construction for a null model, and in the node when the graph
/// has no store; otherwise what AgentInstructions::adopt throws. Thread-safe.
template <class S, auto Messages = &S::messages>
[[nodiscard]] auto reflect_instructions(std::shared_ptr<const ChatModel> model,
                                        AgentInstructions instructions) {
  if (!model) throw Error(errc::kInvalidArgument, "reflect_instructions: the model is null");
  return [model = std::move(model), instructions = std::move(instructions)](
             const S& state, Context& ctx) -> boost::asio::awaitable<Update<S>> {
    Store* store = ctx.store();
    if (!store) throw Error(errc::kInvalidArgument, "reflect_instructions: the graph has no store");
    const nlohmann::json configurable = ctx.config().configurable;
    std::vector<Message> prompt =
        instructions.reflection_prompt(instructions.get(*store, configurable), state.*Messages);
    ChatOptions options = instructions.options().model_options;
    const Message reply = co_await model->ainvoke(std::move(prompt), std::move(options));
    instructions.adopt(*store, reply, configurable);
    co_return Update<S>{};
  };
}

/// An input and the response it should get, with the reasoning that leads there (optional):
/// a few-shot example as a memory.
struct FewShotExample {
  std::string input{};
  std::string output{};
  std::string reasoning{};
  /// The item key (empty in add(): a uuid4 is made).
  std::string key{};
  /// The similarity to the query, in search results.
  std::optional<double> score{};
};

/// Few-shot examples in the store: items {"input", "output", "reasoning"?} whose input alone is
/// embedded, searched by similarity (the store needs an IndexConfig). Immutable; thread-safe.
class FewShotExamples {
 public:
  explicit FewShotExamples(NamespaceTemplate ns = NamespaceTemplate{"few_shot_examples"});

  [[nodiscard]] const NamespaceTemplate& ns() const noexcept { return ns_; }

  /// Stores `example` and returns its key. Throws sg::Error (errc::kInvalidArgument) for an
  /// empty input or output.
  std::string add(Store& store, const FewShotExample& example,
                  const nlohmann::json& configurable = {}) const;
  /// The `k` examples whose input is most similar to `query`, best first. Throws sg::Error
  /// (errc::kInvalidArgument) when the store has no IndexConfig.
  [[nodiscard]] std::vector<FewShotExample> search(Store& store, const std::string& query,
                                                   std::size_t k = 3,
                                                   const nlohmann::json& configurable = {}) const;
  /// search() by the text of the last human message of `messages` (none: no examples).
  [[nodiscard]] std::vector<FewShotExample> search(Store& store, std::span<const Message> messages,
                                                   std::size_t k = 3,
                                                   const nlohmann::json& configurable = {}) const;

 private:
  NamespaceTemplate ns_;
};

/// The examples as a prompt section: "Here are examples of how to respond:" then, per example,
/// "<example>\nInput: ...\n[Reasoning: ...\n]Output: ...\n</example>"; "" for none.
[[nodiscard]] std::string format_few_shot(const std::vector<FewShotExample>& examples);

/// A pre-model hook (ReactAgentOptions::pre_model_hook with S = AgentState) that gives the model
/// a system message made per call by `prompt(state, ctx)` (instructions, examples, memories read
/// from the store), followed by state.*Messages: it writes them to state.*LlmInput, so the
/// conversation itself is unchanged. An empty prompt adds no system message. The hook throws
/// what `prompt` throws. Thread-safe if `prompt` is.
template <class S, auto Messages = &S::messages, auto LlmInput = &S::llm_input_messages, class F>
[[nodiscard]] auto system_prompt_hook(F prompt) {
  return [prompt = std::move(prompt)](const S& state, Context& ctx) {
    std::string text = prompt(state, ctx);
    std::vector<Message> input;
    input.reserve((state.*Messages).size() + 1);
    if (!text.empty()) input.push_back(sg::system(std::move(text)));
    input.insert(input.end(), (state.*Messages).begin(), (state.*Messages).end());
    Update<S> update;
    update.template set<LlmInput>(std::move(input));
    return update;
  };
}

}  // namespace sg
