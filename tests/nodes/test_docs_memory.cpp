// SPDX-License-Identifier: MIT
// The memory examples of docs/memory.md and the README, compiled and run. Each block between
// "docs:begin NAME" and "docs:end" must appear in docs/memory.md (dedented, byte for byte), and
// every C++ block of docs/memory.md must be one of them: the docs cannot drift from the code.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/react_agent.hpp>
#include <stategraph/nodes/buffer_memory.hpp>
#include <stategraph/nodes/composable_memory.hpp>
#include <stategraph/nodes/long_term.hpp>
#include <stategraph/nodes/session_history.hpp>
#include <stategraph/nodes/short_term.hpp>
#include <stategraph/nodes/summarize.hpp>
#include <stategraph/nodes/trim.hpp>
#include <stategraph/stategraph.hpp>
#include <stategraph/store/memory_store.hpp>

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <thread>

namespace {

using namespace std::chrono_literals;

std::vector<std::string> texts_of(const std::vector<sg::Message>& messages) {
  std::vector<std::string> out;
  for (const auto& m : messages) out.push_back(m.text());
  return out;
}

// docs:begin summarize-state
struct SummaryChat : sg::MessagesState {
  std::vector<sg::Message> summarized_messages;       // what the model reads (last value)
  std::optional<sg::RunningSummary> running_summary;  // extended by every new summary
  static constexpr auto schema() {
    return std::tuple_cat(
        sg::MessagesState::schema(),
        std::tuple{sg::field<"summarized_messages">(&SummaryChat::summarized_messages),
                   sg::field<"running_summary">(&SummaryChat::running_summary)});
  }
};
// docs:end

// docs:begin chat-state
struct Chat : sg::MessagesState {
  std::string summary;
  static constexpr auto schema() {
    return std::tuple_cat(sg::MessagesState::schema(),
                          std::tuple{sg::field<"summary">(&Chat::summary)});
  }
};

// Answers with the running summary, when there is one, as a system message.
auto chat_node(std::shared_ptr<sg::ChatModel> model) {
  return [model](const Chat& s) {
    std::vector<sg::Message> input;
    if (!s.summary.empty()) input.push_back(sg::system("Summary: " + s.summary));
    input.insert(input.end(), s.messages.begin(), s.messages.end());
    return sg::Update<Chat>{}.set<&Chat::messages>(model->invoke(input));
  };
}
// docs:end

sg::Update<Chat> say(const std::string& text) {
  return sg::Update<Chat>{}.set<&Chat::messages>(sg::human(text));
}

sg::Update<SummaryChat> say_to(const std::string& text) {
  return sg::Update<SummaryChat>{}.set<&SummaryChat::messages>(sg::human(text));
}

sg::Update<sg::AgentState> ask(const std::string& text) {
  return sg::Update<sg::AgentState>{}.set<&sg::AgentState::messages>(
      std::vector<sg::Message>{sg::human(text)});
}

/// The dedented text of every docs:begin/docs:end block of this file.
std::map<std::string, std::string> docs_blocks() {
  std::ifstream in(SG_TEST_DATA_DIR "/../nodes/test_docs_memory.cpp");
  REQUIRE(in.good());
  std::map<std::string, std::string> blocks;
  std::string line;
  std::string name;
  std::vector<std::string> lines;
  const std::string begin =
      "// docs:"
      "begin ";
  const std::string end =
      "// docs:"
      "end";
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(' ');
    const std::string trimmed = first == std::string::npos ? "" : line.substr(first);
    if (trimmed.rfind(begin, 0) == 0) {
      name = trimmed.substr(begin.size());
      lines.clear();
    } else if (trimmed == end) {
      std::size_t indent = std::string::npos;
      for (const auto& l : lines)
        if (const auto f = l.find_first_not_of(' '); f != std::string::npos)
          indent = std::min(indent, f);
      std::string text;
      for (const auto& l : lines) text += (l.size() > indent ? l.substr(indent) : "") + "\n";
      blocks[name] = text;
      name.clear();
    } else if (!name.empty()) {
      lines.push_back(line);
    }
  }
  return blocks;
}

/// The ```cpp blocks of a markdown file, or of its section under the heading `section`.
std::vector<std::string> markdown_cpp_blocks(const std::string& path,
                                             const std::string& section = "") {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::vector<std::string> blocks;
  std::string line;
  std::string block;
  bool inside = false;
  bool in_section = section.empty();
  while (std::getline(in, line)) {
    if (!inside && !section.empty() && line.rfind("## ", 0) == 0) in_section = line == section;
    if (!in_section) continue;
    if (!inside && line == "```cpp") {
      inside = true;
      block.clear();
    } else if (inside && line == "```") {
      inside = false;
      blocks.push_back(block);
    } else if (inside) {
      block += line + "\n";
    }
  }
  return blocks;
}

}  // namespace

TEST_CASE("docs/memory.md: every C++ block is a compiled block of this test, and back") {
  const auto blocks = docs_blocks();
  CHECK(blocks.size() >= 12);
  const auto doc = markdown_cpp_blocks(SG_TEST_DATA_DIR "/../../docs/memory.md");
  auto readme = markdown_cpp_blocks(SG_TEST_DATA_DIR "/../../README.md", "## Memory nodes");
  CHECK(readme.size() >= 7);
  readme.insert(readme.end(), doc.begin(), doc.end());
  for (const auto& text : readme) {
    bool found = false;
    for (const auto& [name, block] : blocks) found = found || block == text;
    INFO("a C++ block of docs/memory.md or README.md is not in test_docs_memory.cpp:\n" << text);
    CHECK(found);
  }
  for (const auto& [name, block] : blocks) {
    INFO("block " << name << " is not in docs/memory.md");
    CHECK(std::find(doc.begin(), doc.end(), block) != doc.end());
  }
}

TEST_CASE("docs/memory.md: summarize with LangMem's SummarizationNode") {
  // docs:begin summarize
  auto model = std::make_shared<sg::LocalModel>();
  sg::StateGraph<SummaryChat> g;
  g.add_node(
      "summarize",
      sg::SummarizationNode<SummaryChat>(
          model, {.max_tokens = 256, .max_tokens_before_summary = 48, .max_summary_tokens = 128}));
  g.add_node("chat", [model](const SummaryChat& s) {
    return sg::Update<SummaryChat>{}.set<&SummaryChat::messages>(
        model->invoke(s.summarized_messages));
  });
  g.add_edge(sg::START, "summarize").add_edge("summarize", "chat");
  const auto app = g.compile({.checkpointer = std::make_shared<sg::InMemorySaver>()});
  // docs:end
  sg::RunConfig thread;
  thread.thread_id = "t";
  SummaryChat state;
  for (const char* text : {"My name is Ada.", "I live in Lisbon.", "I have a dog called Rex.",
                           "I work as a pilot.", "I like green tea.", "What is my name?"})
    state = app.invoke(say_to(text), thread).state;
  REQUIRE(state.running_summary.has_value());
  CHECK(state.messages.size() == 12);  // the thread keeps everything; the model saw less
  CHECK(texts_of(state.summarized_messages).back() == "What is my name?");
  CHECK(state.summarized_messages.size() == 2);  // the summary and the question
  CHECK(state.messages.back().text() == "You told me: my name is Ada.");
}

TEST_CASE("docs/memory.md: summarize_conversation, LangGraph's how-to") {
  auto model = std::make_shared<sg::LocalModel>();
  // docs:begin summarize-conversation
  sg::StateGraph<Chat> g;
  g.add_node("chat", chat_node(model));
  g.add_node("summarize_conversation", sg::summarize_conversation<Chat>(model, {.keep_last = 2}));
  g.add_edge(sg::START, "chat");
  g.add_conditional_edges("chat", sg::should_summarize<Chat>(6),
                          {"summarize_conversation", sg::END});
  // docs:end
  const auto app = g.compile({.checkpointer = std::make_shared<sg::InMemorySaver>()});
  sg::RunConfig thread;
  thread.thread_id = "t";
  Chat state;
  for (const char* text :
       {"My name is Ada.", "I live in Lisbon.", "I like green tea.", "What is my name?"})
    state = app.invoke(say(text), thread).state;
  CHECK(state.messages.size() == 2);
  CHECK(state.summary.find("My name is Ada") != std::string::npos);
  CHECK(state.messages.back().text() == "You told me: my name is Ada.");
}

TEST_CASE("docs/memory.md: trim what the model sees, delete what the thread keeps") {
  auto model = std::make_shared<sg::LocalModel>();
  // docs:begin trim-hook
  auto agent = sg::create_react_agent(
      model, {},
      {.pre_model_hook = sg::trim_hook<sg::AgentState>(
           {.max_tokens = 24, .start_on = {sg::MessageType::human}, .include_system = true}),
       .checkpointer = std::make_shared<sg::InMemorySaver>()});
  // docs:end
  sg::RunConfig thread;
  thread.thread_id = "t";
  for (const char* text : {"My name is Ada.", "I live in Lisbon.", "I like green tea."})
    (void)agent.invoke(ask(text), thread);
  const auto state = agent.invoke(ask("What is my name?"), thread).state;
  CHECK(state.messages.size() == 8);  // all kept; the trimmed model forgot the name
  CHECK(state.messages.back().text() == "I don't know that yet.");

  for (const auto mode : {sg::DeleteMode::remove_messages, sg::DeleteMode::keep_slice}) {
    // docs:begin delete-old-messages
    sg::StateGraph<Chat> g;
    g.add_node("chat", chat_node(model));
    g.add_node("forget", sg::delete_old_messages<Chat>(2, mode));  // keep the last two
    g.add_edge(sg::START, "chat").add_edge("chat", "forget");
    // docs:end
    const auto app = g.compile({.checkpointer = std::make_shared<sg::InMemorySaver>()});
    Chat kept;
    for (const char* text : {"My name is Ada.", "I live in Lisbon.", "What is my name?"})
      kept = app.invoke(say(text), thread).state;
    CHECK(texts_of(kept.messages) ==
          std::vector<std::string>{"What is my name?", "I don't know that yet."});
  }
}

TEST_CASE("docs/memory.md: buffer memories of seeds/000") {
  // docs:begin buffers
  sg::ConversationBufferWindowMemory window(1);  // the last exchange, as a string
  window.save_context({{"input", "hi"}}, {{"output", "hello"}});
  window.save_context({{"input", "how are you?"}}, {{"output", "fine"}});
  nlohmann::json vars = window.load_memory_variables();
  // {"history": "Human: how are you?\nAI: fine"}

  sg::ConversationTokenBufferMemory tokens(8, {}, {.return_messages = true});
  // docs:end
  CHECK(vars == nlohmann::json{{"history", "Human: how are you?\nAI: fine"}});
  tokens.save_context({{"input", "one two three four five"}}, {{"output", "six seven eight"}});
  tokens.save_context({{"input", "nine"}}, {{"output", "ten"}});
  const auto history = tokens.load_memory_variables().at("history");
  CHECK(history.is_array());
  CHECK(history.size() < 4);
}

TEST_CASE("docs/memory.md: session histories of seeds/003") {
  // docs:begin session-history
  auto saver = std::make_shared<sg::InMemorySaver>();  // or sg::RocksDbSaver::open(path)
  sg::RunnableWithMessageHistory chat(std::make_shared<sg::LocalModel>(),
                                      sg::checkpointed_histories(saver),
                                      {.history_factory_config = {"user_id", "conversation_id"}});
  sg::RunConfig config;
  config.configurable = {{"user_id", "ada"}, {"conversation_id", "1"}};
  chat.invoke_message(sg::human("My name is Ada."), config);
  sg::Message reply = chat.invoke_message(sg::human("What is my name?"), config);
  // "You told me: my name is Ada."
  // docs:end
  CHECK(reply.text() == "You told me: my name is Ada.");
  config.configurable["conversation_id"] = "2";
  CHECK(chat.invoke_message(sg::human("What is my name?"), config).text() ==
        "I don't know that yet.");
}

TEST_CASE("docs/memory.md: short-term techniques of seeds/002") {
  // docs:begin pruning
  std::vector<sg::Message> messages{sg::system("You are terse."), sg::human("First question"),
                                    sg::ai("First answer"), sg::human("Second question")};
  auto word_count = [](std::span<const sg::Message> m) { return sg::count_words(m, 0); };
  std::vector<sg::Message> kept = sg::prune_messages(
      messages,
      {.max_tokens = 5, .strategy = sg::PruningStrategy::fifo, .token_counter = word_count});
  // the system message stays, the oldest others go first: "You are terse.", "Second question"
  // docs:end
  CHECK(texts_of(kept) == std::vector<std::string>{"You are terse.", "Second question"});
  kept = sg::prune_messages(messages, {.max_tokens = 40, .token_counter = word_count});
  CHECK(kept.size() == 4);

  // docs:begin short-term-system
  sg::ShortTermMemorySystem memory({.max_tokens = 400,
                                    .embedder = std::make_shared<sg::HashedNgramEmbeddings>(),
                                    .llm = std::make_shared<sg::LocalModel>()});
  memory.add_interaction(sg::system("You are a helpful AI assistant."));
  memory.add_interaction(sg::human("Tell me about spam filters."), 0.9);
  memory.add_interaction(sg::ai("Spam filters learn from labelled email."), 0.7);
  std::vector<sg::Message> context = memory.context_for_llm("How does spam filtering work?");
  sg::MemoryStats stats = memory.stats();  // entries, tokens, utilization, contexts
  // docs:end
  CHECK(context.size() == 3);
  CHECK(stats.total_entries == 3);
  CHECK(stats.utilization > 0);
}

TEST_CASE("docs/memory.md: composable memory of seeds/004") {
  // docs:begin composable
  auto store = std::make_shared<sg::InMemoryStore>(
      sg::TtlConfig{},
      sg::IndexConfig{.embeddings = std::make_shared<sg::HashedNgramEmbeddings>()});
  auto vectors = std::make_shared<sg::VectorMemory>(store, sg::Namespace{"memories"},
                                                    sg::VectorMemoryOptions{.similarity_top_k = 1});
  vectors->put(sg::human("Bob likes burgers."));
  sg::SimpleComposableMemory memory(std::make_shared<sg::ChatMemoryBuffer>(), {vectors});
  memory.put(sg::system("You are a helpful assistant."));
  memory.put(sg::human("Jerry likes juice."));
  std::vector<sg::Message> messages = memory.get("What does Bob like?");
  // messages[0]: the system message, then "Below are a set of relevant dialogues retrieved
  // from potentially several memory sources: ... USER: Bob likes burgers. ..."
  // docs:end
  REQUIRE(messages.size() == 2);
  CHECK(messages[0].type == sg::MessageType::system);
  CHECK(messages[0].text().find("You are a helpful assistant.") == 0);
  CHECK(messages[0].text().find("USER: Bob likes burgers.") != std::string::npos);
  CHECK(messages[1].text() == "Jerry likes juice.");
}

TEST_CASE("docs/memory.md: long-term memory on the store, seeds/001") {
  auto model = std::make_shared<sg::LocalModel>();
  auto store = std::make_shared<sg::InMemoryStore>(
      sg::TtlConfig{},
      sg::IndexConfig{std::make_shared<sg::HashedNgramEmbeddings>(), {"content", "input"}});
  {
    // docs:begin memory-tools
    auto agent = sg::create_react_agent(
        model, {sg::make_manage_memory_tool(), sg::make_search_memory_tool()}, {.store = store});
    sg::RunConfig config;
    config.configurable = {{"user_id", "ada"}};  // memories go to ("memories", "ada")
    // docs:end
    model->script({sg::ai("", {{"c1", "manage_memory", {{"content", "Ada prefers green tea"}}}}),
                   sg::ai("Noted.")});
    (void)agent.invoke(ask("I prefer green tea."), config);
    const auto items = store->search({.prefix = {"memories", "ada"}});
    REQUIRE(items.size() == 1);
    CHECK(items[0].item.value["content"] == "Ada prefers green tea");
  }
  {
    std::atomic<int> writes = 0;
    // docs:begin memory-writer
    const sg::MemoryCollection memories({.ns = {"memories", "{user_id}"}});
    auto writer = std::make_shared<sg::MemoryWriter>(
        [&](const sg::MemoryWriteJob& job) {  // runs once the thread is quiet for 200 ms
          memories.update(*model, *store, job.configurable, job.messages, job.cancellation);
          ++writes;
        },
        sg::MemoryWriterOptions{.delay = 200ms});
    sg::StateGraph<Chat> g;
    g.add_node("chat", chat_node(model));
    g.add_node("remember", sg::schedule_memory_write<Chat>(writer));  // returns at once
    g.add_edge(sg::START, "chat").add_edge("chat", "remember");
    // docs:end
    const auto app = g.compile({.checkpointer = std::make_shared<sg::InMemorySaver>()});
    sg::RunConfig thread;
    thread.thread_id = "trip";
    thread.configurable = {{"user_id", "ada"}};
    (void)app.invoke(say("I am planning a trip to Japan."), thread);
    model->script({sg::ai("", {{"c2", "insert_memory", {{"content", "Ada goes to Japan"}}}})});
    for (int i = 0; i < 500 && writes == 0; ++i) std::this_thread::sleep_for(10ms);
    CHECK(writes == 1);
    CHECK(memories.list(*store, {{"user_id", "ada"}}, std::string("Japan"), 1).size() == 1);
  }
  {
    // docs:begin profile
    const sg::ProfileMemory profile({.schema = {{"type", "object"},
                                                {"properties",
                                                 {{"name", {{"type", "string"}}},
                                                  {"age", {{"type", "integer"}, {"minimum", 0}}}}},
                                                {"additionalProperties", false}}});
    const nlohmann::json ada = {{"user_id", "ada"}};
    (void)profile.patch(*store, ada, R"([{"op": "add", "path": "/name", "value": "Ada"}])"_json);
    // A patch that breaks the schema throws sg::Error and changes nothing:
    // profile.patch(*store, ada, R"([{"op": "add", "path": "/age", "value": -1}])"_json);
    nlohmann::json doc = profile.get(*store, ada);  // {"name": "Ada"}
    // docs:end
    CHECK(doc == nlohmann::json{{"name", "Ada"}});
    CHECK_THROWS_AS(
        (void)profile.patch(*store, ada, R"([{"op": "add", "path": "/age", "value": -1}])"_json),
        sg::Error);
    CHECK(profile.get(*store, ada) == doc);
  }
  {
    // docs:begin instructions
    const sg::AgentInstructions instructions(
        {.agent = "tweet_writer", .initial = "Summarize papers for Twitter."});
    const sg::FewShotExamples examples;
    examples.add(*store, {.input = "Translate 'thank you' into Japanese", .output = "Arigatou."});
    auto agent = sg::create_react_agent(
        model, {},
        {.pre_model_hook = sg::system_prompt_hook<sg::AgentState>(
             [=](const sg::AgentState& state, sg::Context& ctx) {
               return instructions.get(*ctx.store()) + "\n" +
                      sg::format_few_shot(examples.search(*ctx.store(), state.messages, 1));
             }),
         .store = store});
    // After a conversation, reflection rewrites the instructions in ("agent_instructions",):
    // instructions.reflect(*model, *store, conversation);
    // docs:end
    const auto state = agent.invoke(ask("Translate 'good night' into Japanese"), {}).state;
    CHECK(state.messages.size() == 2);
    CHECK(instructions.get(*store) == "Summarize papers for Twitter.");
    const auto found = examples.search(*store, state.messages, 1);
    REQUIRE(found.size() == 1);
    CHECK(found[0].output == "Arigatou.");
  }
}
