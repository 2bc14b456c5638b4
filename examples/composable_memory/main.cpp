// SPDX-License-Identifier: MIT
// LlamaIndex's "Simple Composable Memory" notebook (seeds/004) in C++: a primary chat buffer plus
// a vector memory in the store; what the vector memory retrieves for an input is injected into
// the system message, leaving out what the primary buffer already holds. Then the notebook's
// agent with two tools, whose past dialogues a new session recalls from the vector memory.
//
// Offline: HashedNgramEmbeddings (word overlap) and LocalModel (rules, see local_model.hpp). The
// Bob and Alice system messages are the notebook's, byte for byte.
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/tool.hpp>
#include <stategraph/nodes/composable_memory.hpp>
#include <stategraph/store/memory_store.hpp>

#include <iostream>

namespace {

/// Python's str(ChatMessage): "role: content".
std::string str(const sg::Message& m) {
  return std::string(sg::chat_role(m.type)) + ": " + m.text();
}

void show(const std::string& call, const std::vector<sg::Message>& messages) {
  std::cout << ">>> " << call << '\n';
  if (messages.empty()) std::cout << "[]\n";
  for (std::size_t i = 0; i < messages.size(); ++i)
    std::cout << '[' << i << "] " << str(messages[i]) << '\n';
}

/// print(msgs[0]), between markers the test reads.
void print_first(const std::string& label, const std::vector<sg::Message>& messages) {
  std::cout << "--- print(msgs[0]) " << label << " ---\n"
            << str(messages.at(0)) << "\n--- end ---\n";
}

/// json.dumps of a flat object: {"a": 5, "b": 6}.
std::string dumps(const nlohmann::json& args) {
  std::string out = "{";
  for (const auto& [key, value] : args.items())
    out += (out.size() > 1 ? ", " : "") + nlohmann::json(key).dump() + ": " + value.dump();
  return out + "}";
}

struct Pair {
  int a = 0;
  int b = 0;
  static constexpr auto schema() {
    return std::tuple{sg::field<"a">(&Pair::a), sg::field<"b">(&Pair::b)};
  }
};

/// LlamaIndex's agent.chat(input) with verbose=True: the user message is put into the memory,
/// the model gets memory.get(input), its replies and the tool results are put back.
std::string chat(sg::ChatMemory& memory, const sg::ChatModel& model,
                 const std::vector<sg::Tool>& tools, const std::string& input,
                 const sg::ChatOptions& options) {
  memory.put(sg::human(input));
  std::cout << "Added user message to memory: " << input << '\n';
  for (int step = 0; step < 5; ++step) {
    const sg::Message reply = model.invoke(memory.get(input), options);
    memory.put(reply);
    if (reply.tool_calls.empty()) {
      std::cout << "=== LLM Response ===\n" << reply.text() << '\n';
      return reply.text();
    }
    for (const auto& call : reply.tool_calls) {
      const auto tool = std::find_if(tools.begin(), tools.end(),
                                     [&](const sg::Tool& t) { return t.name() == call.name; });
      std::cout << "=== Calling Function ===\nCalling function: " << call.name
                << " with args: " << dumps(call.args) << '\n';
      const sg::ToolResult result = tool->call(call.args, {});
      const std::string output = result.content.dump();
      std::cout << "=== Function Output ===\n" << output << '\n';
      sg::Message result_message = sg::tool(output, call.id);
      result_message.name = call.name;
      memory.put(result_message);
    }
  }
  return {};
}

}  // namespace

int main() {
  sg::IndexConfig index;
  index.embeddings = std::make_shared<sg::HashedNgramEmbeddings>();
  auto store = std::make_shared<sg::InMemoryStore>(sg::TtlConfig{}, index);

  // ---- How SimpleComposableMemory works ----
  auto vector_memory = std::make_shared<sg::VectorMemory>(
      store, sg::Namespace{"vector_memory"}, sg::VectorMemoryOptions{.similarity_top_k = 1});
  vector_memory->set({sg::system("You are a SOMEWHAT helpful assistant."),
                      sg::human("Bob likes burgers."), sg::ai("Indeed, Bob likes apples."),
                      sg::human("Alice likes apples.")});
  auto chat_memory_buffer = std::make_shared<sg::ChatMemoryBuffer>();
  sg::SimpleComposableMemory composable_memory(chat_memory_buffer, {vector_memory});
  std::cout << "primary: ChatMemoryBuffer(token_limit=" << chat_memory_buffer->token_limit()
            << "), secondary: VectorMemory(similarity_top_k="
            << vector_memory->options().similarity_top_k << ", batch_by_user_message="
            << (vector_memory->options().batch_by_user_message ? "True" : "False") << ")\n";

  // put() goes to every source.
  for (const auto& m :
       {sg::system("You are a REALLY helpful assistant."), sg::human("Jerry likes juice.")})
    composable_memory.put(m);

  auto msgs = composable_memory.get("What does Bob like?");
  show("composable_memory.get(\"What does Bob like?\")", msgs);
  print_first("Bob", msgs);
  // Successive gets replace the injected messages.
  msgs = composable_memory.get("What does Alice like?");
  show("composable_memory.get(\"What does Alice like?\")", msgs);
  print_first("Alice", msgs);
  // "Jerry likes juice." is retrieved, but the primary memory has it: nothing is injected.
  msgs = composable_memory.get("What does Jerry like?");
  show("composable_memory.get(\"What does Jerry like?\")", msgs);

  // reset() of the primary only, then of every source.
  composable_memory.primary().reset();
  show("composable_memory.primary_memory.get()", composable_memory.primary().get());
  show("secondary_memory_sources[0].get(\"What does Alice like?\")",
       vector_memory->get("What does Alice like?"));
  composable_memory.reset();
  show("composable_memory.primary_memory.get()", composable_memory.primary().get());
  show("secondary_memory_sources[0].get(\"What does Alice like?\")",
       vector_memory->get("What does Alice like?"));

  // ---- With an agent ----
  const std::vector<sg::Tool> tools{
      sg::make_tool<Pair>("multiply", "Multiply two integers and returns the result integer",
                          [](const Pair& p) { return p.a * p.b; }),
      sg::make_tool<Pair>("mystery", "Mystery function on two numbers",
                          [](const Pair& p) { return p.a * p.a - p.b * p.b; })};
  sg::ChatOptions with_tools;
  for (const auto& t : tools) with_tools.tools.push_back(t.spec());
  // LocalModel does not read instructions such as "Don't recompute.": the recalling sessions
  // call it with tool_choice "none", so that it answers from what it was given.
  sg::ChatOptions dont_recompute = with_tools;
  dont_recompute.tool_choice = "none";
  const sg::LocalModel llm;

  auto agent_vectors = std::make_shared<sg::VectorMemory>(
      store, sg::Namespace{"agent_memory"}, sg::VectorMemoryOptions{.similarity_top_k = 2});
  sg::SimpleComposableMemory agent_memory(std::make_shared<sg::ChatMemoryBuffer>(),
                                          {agent_vectors});
  std::cout << "\n>>> agent.chat(\"What is the mystery function on 5 and 6?\")\n";
  chat(agent_memory, llm, tools, "What is the mystery function on 5 and 6?", with_tools);
  std::cout << "\n>>> agent.chat(\"What happens if you multiply 2 and 3?\")\n";
  chat(agent_memory, llm, tools, "What happens if you multiply 2 and 3?", with_tools);

  const std::string q_mystery =
      "What was the output of the mystery function on 5 and 6 again? Don't recompute.";
  const std::string q_multiply =
      "What was the output of the multiply function on 2 and 3 again? Don't recompute.";

  // A new session without the past memory.
  sg::SimpleComposableMemory no_memory;
  std::cout << "\n>>> agent_without_memory.chat(...)\n";
  chat(no_memory, llm, tools, q_mystery, dont_recompute);

  // A new session with a fresh buffer and a copy of the vector memory.
  sg::SimpleComposableMemory with_memory(std::make_shared<sg::ChatMemoryBuffer>(),
                                         {agent_vectors->copy_to({"agent_memory_copy"})});
  show("agent_with_memory.chat_history", with_memory.get_all());
  std::cout << "\n>>> agent_with_memory.chat(...)\n";
  chat(with_memory, llm, tools, q_mystery, dont_recompute);
  // The second recall shows a limit of LlamaIndex's design with word-overlap embeddings: the two
  // batches nearest to this question are the question itself and the previous one (same
  // wording), both already in the primary buffer, so nothing is injected and LocalModel does not
  // know. Semantic embeddings (sg::OpenAIEmbeddings) rank the multiply dialogue higher.
  std::cout << "\n>>> agent_with_memory.chat(...)\n";
  chat(with_memory, llm, tools, q_multiply, dont_recompute);
  show("agent_with_memory.chat_history", with_memory.get_all());

  // Under the hood: what memory.get(input) gives the model of a fresh session.
  sg::SimpleComposableMemory under_the_hood(std::make_shared<sg::ChatMemoryBuffer>(),
                                            {agent_vectors->copy_to({"agent_memory_hood"})});
  msgs = under_the_hood.get(q_mystery);
  print_first("under the hood", msgs);
  return 0;
}
