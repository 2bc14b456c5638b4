// SPDX-License-Identifier: MIT
#include <stategraph/core/error.hpp>
#include <stategraph/core/uuid.hpp>
#include <stategraph/nodes/prompt_memory.hpp>

#include <fmt/args.h>
#include <fmt/format.h>

#include "model_edits.hpp"

namespace sg {
namespace {

std::string fill_reflection_prompt(const std::string& tmpl, const std::string& instructions,
                                   const std::string& conversation) {
  fmt::dynamic_format_arg_store<fmt::format_context> args;
  args.push_back(fmt::arg("instructions", instructions));
  args.push_back(fmt::arg("conversation", conversation));
  try {
    return fmt::vformat(tmpl, args);
  } catch (const fmt::format_error& e) {
    throw Error(errc::kInvalidArgument,
                "AgentInstructions: bad reflection prompt template: " + std::string(e.what()));
  }
}

}  // namespace

AgentInstructions::AgentInstructions(InstructionsOptions options)
    : options_(std::make_shared<const InstructionsOptions>(std::move(options))) {
  if (options_->agent.empty())
    throw Error(errc::kInvalidArgument, "AgentInstructions: empty agent name");
  if (options_->initial.empty())
    throw Error(errc::kInvalidArgument, "AgentInstructions: empty initial instructions");
  (void)fill_reflection_prompt(options_->reflection_prompt, "", "");  // fails now, not later
}

std::string AgentInstructions::get(Store& store, const nlohmann::json& configurable) const {
  const auto item = store.get(options_->ns.resolve(configurable), options_->agent);
  if (!item) return options_->initial;
  const auto it = item->value.find("instructions");
  if (it == item->value.end() || !it->is_string()) {
    throw StoreError(errc::kStoreCorrupt,
                     "the instructions of agent '" + options_->agent +
                         "' are not {\"instructions\": text}: " + item->value.dump());
  }
  return it->get<std::string>();
}

void AgentInstructions::set(Store& store, const std::string& instructions,
                            const nlohmann::json& configurable) const {
  if (instructions.empty())
    throw Error(errc::kInvalidArgument, "AgentInstructions: empty instructions");
  store.put(options_->ns.resolve(configurable), options_->agent, {{"instructions", instructions}});
}

std::vector<Message> AgentInstructions::reflection_prompt(
    const std::string& current, std::span<const Message> conversation) const {
  return {human(fill_reflection_prompt(options_->reflection_prompt, current,
                                       nodes_detail::conversation_text(conversation)))};
}

std::string AgentInstructions::adopt(Store& store, const Message& reply,
                                     const nlohmann::json& configurable) const {
  std::string next = nodes_detail::between_tags(reply.text(), "instructions");
  if (next.empty()) {
    throw ModelError(errc::kModelInvalidResponse,
                     "reflection: the model's reply holds no instructions; kept the current ones");
  }
  set(store, next, configurable);
  return next;
}

std::string AgentInstructions::reflect(const ChatModel& model, Store& store,
                                       std::span<const Message> conversation,
                                       const nlohmann::json& configurable,
                                       CancellationToken cancellation) const {
  ChatOptions options = options_->model_options;
  if (cancellation.can_cancel()) options.cancellation = cancellation;
  const Message reply =
      model.invoke(reflection_prompt(get(store, configurable), conversation), options);
  return adopt(store, reply, configurable);
}

FewShotExamples::FewShotExamples(NamespaceTemplate ns) : ns_(std::move(ns)) {}

std::string FewShotExamples::add(Store& store, const FewShotExample& example,
                                 const nlohmann::json& configurable) const {
  if (example.input.empty() || example.output.empty())
    throw Error(errc::kInvalidArgument, "a few-shot example needs an input and an output");
  nlohmann::json value = {{"input", example.input}, {"output", example.output}};
  if (!example.reasoning.empty()) value["reasoning"] = example.reasoning;
  std::string key = example.key.empty() ? new_uuid4() : example.key;
  store.put(ns_.resolve(configurable), key, std::move(value), std::nullopt,
            std::vector<std::string>{"input"});
  return key;
}

std::vector<FewShotExample> FewShotExamples::search(Store& store, const std::string& query,
                                                    std::size_t k,
                                                    const nlohmann::json& configurable) const {
  SearchOp op;
  op.prefix = ns_.resolve(configurable);
  op.query = query;
  op.limit = k;
  std::vector<FewShotExample> out;
  for (const auto& hit : store.search(std::move(op))) {
    const auto& v = hit.item.value;
    if (!v.contains("input") || !v.contains("output")) continue;  // not an example
    FewShotExample e;
    e.input = v.value("input", std::string());
    e.output = v.value("output", std::string());
    e.reasoning = v.value("reasoning", std::string());
    e.key = hit.item.key;
    e.score = hit.score;
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<FewShotExample> FewShotExamples::search(Store& store, std::span<const Message> messages,
                                                    std::size_t k,
                                                    const nlohmann::json& configurable) const {
  for (auto it = messages.rbegin(); it != messages.rend(); ++it) {
    if (it->type == MessageType::human) return search(store, it->text(), k, configurable);
  }
  return {};
}

std::string format_few_shot(const std::vector<FewShotExample>& examples) {
  if (examples.empty()) return {};
  std::string out = "Here are examples of how to respond:";
  for (const auto& e : examples) {
    out += "\n<example>\nInput: " + e.input + "\n";
    if (!e.reasoning.empty()) out += "Reasoning: " + e.reasoning + "\n";
    out += "Output: " + e.output + "\n</example>";
  }
  return out;
}

}  // namespace sg
