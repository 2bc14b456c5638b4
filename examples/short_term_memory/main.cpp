// SPDX-License-Identifier: MIT
// Short-term memory for an agent (seeds/002 "How to Build Short-Term Memory"): first the seed's
// usage example, then each technique on its own: pruning that keeps the system prompt,
// attention windows, compression and switching between topics.
//
// Offline: LocalModel summarizes extractively and HashedNgramEmbeddings measures word overlap;
// pass a real chat model and embeddings (sg::OpenAIChatModel, sg::OpenAIEmbeddings) for meaning.
#include <stategraph/models/local_model.hpp>
#include <stategraph/nodes/short_term.hpp>

#include <iomanip>
#include <iostream>

namespace {

void print(const std::string& title, const std::vector<sg::Message>& messages) {
  std::cout << title << " (" << messages.size() << " messages):\n";
  for (const auto& m : messages)
    std::cout << "  " << sg::to_string(m.type) << ": " << m.text() << '\n';
}

}  // namespace

int main() {
  // ---- The seed's usage example ----
  sg::ShortTermMemorySystem memory({.max_tokens = 8000,
                                    .enable_attention = true,
                                    .embedder = std::make_shared<sg::HashedNgramEmbeddings>(),
                                    .llm = std::make_shared<sg::LocalModel>()});
  memory.add_interaction(sg::system("You are a helpful AI assistant."), 1.0);
  memory.add_interaction(sg::human("What is machine learning?"));
  memory.add_interaction(
      sg::ai("Machine learning is a subset of AI that enables systems to learn from data..."), 0.8);
  memory.add_interaction(sg::human("Can you give me an example?"));
  memory.add_interaction(sg::ai("A common example is email spam filtering..."), 0.7);

  // Context for the next model call: the attention window for the query (all of it fits here).
  const auto context = memory.context_for_llm("How does spam filtering work?");
  print("Context for the next call", context);

  const sg::MemoryStats stats = memory.stats();
  std::cout << "Memory stats: " << stats.total_entries << " entries, " << stats.total_tokens
            << " of " << stats.max_tokens << " tokens, " << stats.context_count << " contexts\n";
  std::cout << "Memory utilization: " << std::fixed << std::setprecision(1)
            << stats.utilization * 100 << "%\n\n";

  // ---- Pruning: over budget, which messages go? ----
  std::vector<sg::Message> conversation{
      sg::system("You are a helpful AI assistant.", "sys"),
      sg::with_importance(sg::human("My name is Ada and I am planning a trip.", "h1"), 0.9),
      sg::with_importance(sg::ai("Nice to meet you, Ada.", "a1"), 0.4),
      sg::with_importance(sg::human("I want to see Lisbon in May.", "h2"), 0.8),
      sg::with_importance(sg::ai("May is a great month for Lisbon.", "a2"), 0.3),
      sg::human("What should I pack?", "h3")};
  std::cout << "A conversation of " << sg::count_tokens_approximately(conversation)
            << " tokens, pruned to 61:\n";
  for (auto [name, strategy] : {std::pair{"fifo", sg::PruningStrategy::fifo},
                                std::pair{"importance", sg::PruningStrategy::importance},
                                std::pair{"hybrid", sg::PruningStrategy::hybrid}}) {
    const auto kept = sg::prune_messages(conversation, {.max_tokens = 61, .strategy = strategy});
    std::cout << "  " << name << " keeps:";
    for (const auto& m : kept) std::cout << ' ' << m.id;
    std::cout << '\n';
  }
  std::cout << '\n';

  // ---- Attention window: the entries most like the query, with their neighbours ----
  sg::ShortTermMemoryBuffer topics;
  for (const char* text :
       {"We talked about the weather in Paris today.", "Then the football results came up briefly.",
        "Spam filtering sorts junk email from real email.",
        "A classifier learns which email words mean spam.",
        "Finally we planned a dinner with friends on Friday.",
        "Dinner will be at the Italian place near the station."})
    topics.add(sg::human(text));
  sg::HashedNgramEmbeddings embedder;
  print("Attention window (60 tokens) for \"When is the dinner with friends?\"",
        sg::attention_window(topics.entries(), "When is the dinner with friends?", embedder, 60));
  std::cout << '\n';

  // ---- Compression: the oldest third becomes a summary when the buffer is 80% full ----
  sg::ShortTermMemoryBuffer buffer({.max_tokens = 100});
  for (const char* text :
       {"My name is Ada.", "I live in Lisbon.", "I work at a bakery.", "I like sourdough bread.",
        "My sister is called Eva.", "Eva lives in Porto.", "Eva is a teacher.",
        "She teaches history.", "We meet every summer."})
    buffer.add(sg::human(text));
  sg::CompressionPipeline pipeline(
      {std::make_shared<sg::SummarizationCompressor>(std::make_shared<sg::LocalModel>()),
       std::make_shared<sg::SelectiveCompressor>()});
  const std::int64_t before = buffer.current_tokens();
  const bool compressed = pipeline.compress_if_needed(buffer);
  std::cout << "Compression at " << before << " of " << buffer.max_tokens()
            << " tokens: " << (compressed ? "yes" : "no") << ", now " << buffer.entries().size()
            << " entries\n";
  print("Compressed buffer", buffer.context());
  std::cout << '\n';

  // ---- Context switching: one buffer per topic, a stack to come back ----
  sg::ContextManager contexts;
  contexts.switch_context("trip");
  contexts.active_buffer()->add(sg::human("Book the flight to Lisbon."), 0.6);
  contexts.switch_context("work");  // the trip's last entry is marked important (0.9)
  contexts.active_buffer()->add(sg::human("Send the invoice to the bakery."));
  std::cout << "Active context: " << *contexts.active_context()
            << ", stack: " << contexts.stack().front() << '\n';
  const auto previous = contexts.return_to_previous();
  std::cout << "Back to: " << previous.value_or("none") << ", last entry importance "
            << contexts.active_buffer()->entries().back().importance << '\n';
  contexts.merge_contexts("work", "trip");
  std::cout << "After merging work into trip: " << contexts.context_count() << " context, "
            << contexts.active_buffer()->entries().size() << " entries\n";
  return 0;
}
