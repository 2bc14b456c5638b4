// SPDX-License-Identifier: MIT
// seeds/004's composable memory (LlamaIndex's ChatMemoryBuffer, VectorMemory and
// SimpleComposableMemory) on sg::Store, with the seed's Bob/Alice strings, and the graph pieces
// (composable_memory_hook, remember_turn) on checkpointed threads. Models and embedders:
// LocalModel, HashedNgramEmbeddings and the loopback OpenAI server.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/core/state_graph.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/openai.hpp>
#include <stategraph/models/react_agent.hpp>
#include <stategraph/nodes/composable_memory.hpp>
#include <stategraph/reducers/messages_state.hpp>
#include <stategraph/store/memory_store.hpp>
#include <stategraph/store/rocksdb_store.hpp>

#include <doctest/doctest.h>

#include <atomic>

#include "../support/loopback_openai.hpp"
#include "../support/temp_dir.hpp"

namespace {

using sg::Message;

sg::TokenCounter cm_words() {
  return [](std::span<const Message> m) { return sg::count_words(m, 0); };
}

std::vector<std::string> cm_texts(const std::vector<Message>& messages) {
  std::vector<std::string> out;
  for (const auto& m : messages) out.push_back(m.text());
  return out;
}

std::shared_ptr<sg::InMemoryStore> cm_store(
    std::shared_ptr<sg::Embeddings> embeddings = std::make_shared<sg::HashedNgramEmbeddings>()) {
  sg::IndexConfig index;
  index.embeddings = std::move(embeddings);
  return std::make_shared<sg::InMemoryStore>(sg::TtlConfig{}, index);
}

/// The seed's first cell: a vector memory (top 1) holding four messages, a default buffer.
struct CmSeed {
  std::shared_ptr<sg::VectorMemory> vectors;
  std::shared_ptr<sg::ChatMemoryBuffer> buffer = std::make_shared<sg::ChatMemoryBuffer>();
  std::unique_ptr<sg::SimpleComposableMemory> memory;

  explicit CmSeed(std::shared_ptr<sg::Store> store) {
    vectors = std::make_shared<sg::VectorMemory>(std::move(store), sg::Namespace{"vector_memory"},
                                                 sg::VectorMemoryOptions{.similarity_top_k = 1});
    vectors->set({sg::system("You are a SOMEWHAT helpful assistant."),
                  sg::human("Bob likes burgers."), sg::ai("Indeed, Bob likes apples."),
                  sg::human("Alice likes apples.")});
    memory = std::make_unique<sg::SimpleComposableMemory>(
        buffer, std::vector<std::shared_ptr<sg::ChatMemory>>{vectors});
    for (const auto& m :
         {sg::system("You are a REALLY helpful assistant."), sg::human("Jerry likes juice.")})
      memory->put(m);
  }
};

// The notebook's outputs (docs/docs/examples/agent/memory/composable_memory.ipynb); the seed's
// web page shows the same strings without the two "=====" lines, which its rendering dropped.
constexpr std::string_view kCmBob =
    "You are a REALLY helpful assistant.\n\nBelow are a set of relevant dialogues retrieved from "
    "potentially several memory sources:\n\n=====Relevant messages from memory source "
    "1=====\n\n\tUSER: Bob likes burgers.\n\tASSISTANT: Indeed, Bob likes apples.\n\n=====End of "
    "relevant messages from memory source 1======\n\nThis is the end of the retrieved message "
    "dialogues.";
constexpr std::string_view kCmAlice =
    "You are a REALLY helpful assistant.\n\nBelow are a set of relevant dialogues retrieved from "
    "potentially several memory sources:\n\n=====Relevant messages from memory source "
    "1=====\n\n\tUSER: Alice likes apples.\n\n=====End of relevant messages from memory source "
    "1======\n\nThis is the end of the retrieved message dialogues.";

void cm_check_seed(CmSeed& seed) {
  auto msgs = seed.memory->get("What does Bob like?");
  REQUIRE(msgs.size() == 2);
  CHECK(msgs[0].type == sg::MessageType::system);
  CHECK(msgs[0].text() == kCmBob);
  CHECK(msgs[1].text() == "Jerry likes juice.");
  // Successive gets replace the injected block.
  msgs = seed.memory->get("What does Alice like?");
  REQUIRE(msgs.size() == 2);
  CHECK(msgs[0].text() == kCmAlice);
  // What the primary already holds is not injected again.
  msgs = seed.memory->get("What does Jerry like?");
  CHECK(cm_texts(msgs) ==
        std::vector<std::string>{"You are a REALLY helpful assistant.", "Jerry likes juice."});
}

}  // namespace

TEST_CASE("chat_memory_window drops the oldest and never starts on a tool or assistant message") {
  const std::vector<Message> history{
      sg::human("a b", "h1"),      sg::ai("c d", "a1"),
      sg::human("e f", "h2"),      sg::ai("", {sg::ToolCall{"c1", "t", {}}}, "a2"),
      sg::tool("g h", "c1", "t1"), sg::ai("i j", "a3")};
  const auto words = cm_words();  // 2 + 2 + 2 + 0 + 2 + 2 = 10
  CHECK(sg::chat_memory_window(history, 10, words).size() == 6);
  // Dropping h1 leaves a1 at the front: it goes too.
  CHECK(cm_texts(sg::chat_memory_window(history, 9, words)) ==
        std::vector<std::string>{"e f", "", "g h", "i j"});
  // Dropping h2 leaves the tool call, its result and the answer at the front: all go.
  CHECK(sg::chat_memory_window(history, 5, words).empty());
  // initial_token_count comes off the limit.
  CHECK(sg::chat_memory_window(history, 10, words, 1).size() == 4);
  // Parallel tool results: LlamaIndex would keep the second result at the front.
  const std::vector<Message> parallel{
      sg::human("go", "h"),
      sg::ai("", {sg::ToolCall{"c1", "t", {}}, sg::ToolCall{"c2", "t", {}}}, "a"),
      sg::tool("r1", "c1", "t1"), sg::tool("r2", "c2", "t2"), sg::human("next one", "h2")};
  CHECK(cm_texts(sg::chat_memory_window(parallel, 4, words)) ==
        std::vector<std::string>{"next one"});
  // One message over the limit: nothing.
  CHECK(sg::chat_memory_window(std::vector{sg::human("a b c")}, 2, words).empty());
  CHECK(sg::chat_memory_window({}, 2, words).empty());
  CHECK_THROWS_WITH_AS((void)sg::chat_memory_window(history, 0, words),
                       doctest::Contains("token_limit must be >= 1"), sg::Error);
  CHECK_THROWS_WITH_AS((void)sg::chat_memory_window(history, 5, words, 6),
                       doctest::Contains("exceeds the token limit"), sg::Error);
}

TEST_CASE("ChatMemoryBuffer windows its history but never truncates it") {
  sg::ChatMemoryBuffer buffer({.token_limit = 4, .token_counter = cm_words()});
  CHECK(buffer.token_limit() == 4);
  for (const auto& m :
       {sg::human("one two"), sg::ai("three four"), sg::human("five six"), sg::ai("seven eight")})
    buffer.put(m);
  CHECK(cm_texts(buffer.get()) == std::vector<std::string>{"five six", "seven eight"});
  CHECK(cm_texts(buffer.get("ignored", 2)).empty());  // only "seven eight" fits: an ai message
  CHECK(buffer.get_all().size() == 4);
  CHECK_THROWS_AS(buffer.put(sg::remove_message("x")), sg::Error);
  CHECK_THROWS_AS(buffer.set({sg::human("a"), sg::remove_message("x")}), sg::Error);
  CHECK(buffer.get_all().size() == 4);
  buffer.set({sg::human("fresh")});
  CHECK(cm_texts(buffer.get_all()) == std::vector<std::string>{"fresh"});
  buffer.reset();
  CHECK(buffer.get().empty());
  CHECK(sg::ChatMemoryBuffer().token_limit() == 3000);  // LlamaIndex's default
  CHECK_THROWS_AS(sg::ChatMemoryBuffer({.token_limit = 0}), sg::Error);
}

TEST_CASE("VectorMemory batches by user message and stores each batch in the store") {
  auto store = cm_store();
  sg::VectorMemory memory(store, {"vm", "batches"});
  memory.put(sg::system("Be nice.", "s"));
  memory.put(sg::human("Bob likes burgers.", "h1"));
  memory.put(sg::ai("", {sg::ToolCall{"c1", "lookup", {}}}, "a1"));
  memory.put(sg::tool("burgers confirmed", "c1", "t1"));
  memory.put(sg::human("Alice likes apples.", "h2"));
  const auto items = store->search({.prefix = {"vm", "batches"}, .limit = 10});
  REQUIRE(items.size() == 3);
  const auto bob = store->get({"vm", "batches"}, "batch-h1");
  REQUIRE(bob);
  // An empty text still adds its separator, as LlamaIndex's node text does.
  CHECK(bob->value["text"] == "Bob likes burgers.  burgers confirmed");
  CHECK(bob->value["messages"].size() == 3);
  CHECK(store->get({"vm", "batches"}, "batch-s"));
  // get returns every message of the best batches; no input: nothing.
  const auto got = memory.get("What does Bob like?");
  REQUIRE(got.size() >= 3);
  CHECK(got[0].text() == "Bob likes burgers.");
  CHECK(got[1].tool_calls.size() == 1);
  CHECK(got[2].tool_call_id == "c1");
  CHECK(memory.get().empty());
  CHECK_THROWS_WITH_AS((void)memory.get_all(), doctest::Contains("cannot list"), sg::Error);
  // Re-putting a turn replaces its batch (the key comes from the first message's id).
  memory.put_messages(std::vector{sg::human("Bob likes burgers.", "h1"), sg::ai("Yes!", "a9")});
  CHECK(store->get({"vm", "batches"}, "batch-h1")->value["text"] == "Bob likes burgers. Yes!");
  CHECK(store->search({.prefix = {"vm", "batches"}, .limit = 10}).size() == 3);
  // A RemoveMessage is refused before anything is stored.
  CHECK_THROWS_AS(memory.put_messages(std::vector{sg::human("new", "h7"), sg::remove_message("x")}),
                  sg::Error);
  CHECK_FALSE(store->get({"vm", "batches"}, "batch-h7"));
  memory.reset();
  CHECK(store->search({.prefix = {"vm", "batches"}, .limit = 10}).empty());
  CHECK(memory.get("Bob").empty());
  // After a reset an assistant message starts a batch of its own; an empty one is not stored.
  memory.put(sg::ai("", {sg::ToolCall{"c2", "lookup", {}}}, "a2"));
  CHECK(store->search({.prefix = {"vm", "batches"}, .limit = 10}).empty());
  memory.put(sg::tool("found", "c2", "t2"));
  CHECK(store->get({"vm", "batches"}, "batch-a2")->value["text"] == "found");
}

TEST_CASE("VectorMemory without batching and with put_messages writes once per batch") {
  std::atomic<int> calls{0};
  auto counting = std::make_shared<sg::FunctionEmbeddings>(
      384, [&calls, inner = std::make_shared<sg::HashedNgramEmbeddings>()](
               const std::vector<std::string>& texts) {
        ++calls;
        return inner->embed(texts);
      });
  auto store = cm_store(counting);
  sg::VectorMemory batched(store, {"vm", "one"});
  batched.put_messages(std::vector{sg::human("a", "1"), sg::ai("b", "2"), sg::ai("c", "3"),
                                   sg::human("d", "4"), sg::ai("e", "5")});
  CHECK(calls == 2);  // two batches, one embedding each
  CHECK(store->get({"vm", "one"}, "batch-1")->value["text"] == "a b c");
  calls = 0;
  sg::VectorMemory single(store, {"vm", "two"}, {.batch_by_user_message = false});
  single.put_messages(std::vector{sg::human("a", "1"), sg::ai("b", "2"), sg::ai("c", "3")});
  CHECK(calls == 3);
  CHECK(store->search({.prefix = {"vm", "two"}, .limit = 10}).size() == 3);
  CHECK_THROWS_AS(sg::VectorMemory(nullptr, {"x"}), sg::Error);
  CHECK_THROWS_AS(sg::VectorMemory(store, {"x"}, {.similarity_top_k = 0}), sg::Error);
  CHECK_THROWS_AS(sg::VectorMemory(store, {}), sg::InvalidNamespaceError);
}

TEST_CASE("VectorMemory needs a store with an index, and survives a reopened RocksDbStore") {
  auto plain = std::make_shared<sg::InMemoryStore>();
  sg::VectorMemory unindexed(plain, {"vm"});
  unindexed.put(sg::human("Bob likes burgers."));
  CHECK_THROWS_WITH_AS((void)unindexed.get("Bob"), doctest::Contains("IndexConfig"), sg::Error);

  sg::test::TempDir dir;
  auto open = [&] {
    sg::RocksDbStoreOptions options;
    options.index = sg::IndexConfig{.embeddings = std::make_shared<sg::HashedNgramEmbeddings>()};
    return sg::RocksDbStore::open(dir.sub("store"), options);
  };
  {
    sg::VectorMemory memory(open(), {"vm"}, {.similarity_top_k = 1});
    memory.put_messages(std::vector{sg::human("Bob likes burgers."), sg::ai("Noted."),
                                    sg::human("Alice likes apples.")});
  }
  sg::VectorMemory reopened(open(), {"vm"}, {.similarity_top_k = 1});
  CHECK(cm_texts(reopened.get("What does Alice like?")) ==
        std::vector<std::string>{"Alice likes apples."});
}

TEST_CASE("VectorMemory::copy_to makes an independent copy") {
  auto store = cm_store();
  auto original = std::make_shared<sg::VectorMemory>(
      store, sg::Namespace{"vm", "original"}, sg::VectorMemoryOptions{.similarity_top_k = 1});
  original->put_messages(std::vector{sg::human("Bob likes burgers."), sg::ai("Indeed.")});
  auto copy = original->copy_to({"vm", "copy"});
  // The copy continues the batch being filled, and changes stay on its side.
  copy->put(sg::ai("And fries."));
  CHECK(cm_texts(copy->get("Bob")) ==
        std::vector<std::string>{"Bob likes burgers.", "Indeed.", "And fries."});
  CHECK(cm_texts(original->get("Bob")) ==
        std::vector<std::string>{"Bob likes burgers.", "Indeed."});
  copy->reset();
  CHECK(original->get("Bob").size() == 2);
  CHECK_THROWS_AS((void)original->copy_to({"vm", "original", "x"}), sg::Error);
  CHECK_THROWS_AS((void)original->copy_to({"vm"}), sg::Error);
}

TEST_CASE("format_secondary_messages and compose_memory follow LlamaIndex's format") {
  const std::vector<std::vector<Message>> two{
      {sg::human("q"), sg::ai("", {sg::ToolCall{"c", "f", {}}}), sg::tool("-11", "c")},
      {sg::ai("a")}};
  CHECK(sg::format_secondary_messages(two) ==
        "\n\nBelow are a set of relevant dialogues retrieved from potentially several memory "
        "sources:\n\n=====Relevant messages from memory source 1=====\n\n\tUSER: q\n\tASSISTANT: "
        "None\n\tTOOL: -11\n\n=====End of relevant messages from memory source 1======\n\n\n"
        "=====Relevant messages from memory source 2=====\n\n\tASSISTANT: a\n\n=====End of "
        "relevant messages from memory source 2======\n\nThis is the end of the retrieved "
        "message dialogues.");
  CHECK_THROWS_AS((void)sg::format_secondary_messages({{sg::remove_message("x")}}), sg::Error);

  // No system message: the default one is inserted.
  auto composed = sg::compose_memory({sg::human("hi")}, {{sg::ai("a")}});
  REQUIRE(composed.size() == 2);
  CHECK(composed[0].text().rfind("You are a helpful assistant.\n\nBelow are", 0) == 0);
  // An earlier injection is cut off and the prompt stripped; the message keeps its id.
  const Message injected =
      sg::system("  Be brief.  " + sg::format_secondary_messages({{sg::ai("old")}}), "sys");
  composed = sg::compose_memory({injected, sg::human("hi")}, {{sg::ai("new")}});
  CHECK(composed[0].id == "sys");
  CHECK(composed[0].text() == "Be brief." + sg::format_secondary_messages({{sg::ai("new")}}));
  // What the primary holds is dropped (ids do not matter); nothing left: unchanged.
  const std::vector<Message> primary{sg::system("S"), sg::human("Jerry likes juice.", "x")};
  CHECK(sg::compose_memory(primary, {{sg::human("Jerry likes juice.", "y")}, {}}) == primary);
  CHECK(sg::same_memory_message(sg::human("a", "1"), sg::human("a", "2")));
  CHECK_FALSE(sg::same_memory_message(sg::human("a"), sg::ai("a")));
  CHECK(sg::chat_role(sg::MessageType::human) == "user");
  CHECK_THROWS_AS((void)sg::chat_role(sg::MessageType::remove), sg::Error);
}

TEST_CASE("SimpleComposableMemory reproduces the seed's Bob and Alice messages") {
  CmSeed seed(cm_store());
  cm_check_seed(seed);
  // reset() of the primary only.
  seed.buffer->reset();
  CHECK(seed.buffer->get().empty());
  CHECK(cm_texts(seed.vectors->get("What does Alice like?")) ==
        std::vector<std::string>{"Alice likes apples."});
  // reset() of everything.
  seed.memory->reset();
  CHECK(seed.buffer->get().empty());
  CHECK(seed.vectors->get("What does Alice like?").empty());
}

TEST_CASE("SimpleComposableMemory on loopback OpenAIEmbeddings gives the same messages") {
  // The server answers /embeddings with the offline embedder's vectors: the HTTP path is real.
  sg::testing::LoopbackOpenAI server;
  sg::HashedNgramEmbeddings offline(256);
  server.set_handler([&offline](const sg::testing::LoopbackRequest& request)
                         -> std::optional<sg::testing::LoopbackReply> {
    if (request.target.find("/embeddings") == std::string::npos) return std::nullopt;
    const auto input = request.json()["input"].get<std::vector<std::string>>();
    const auto vectors = offline.embed(input);
    nlohmann::json data = nlohmann::json::array();
    for (std::size_t i = 0; i < vectors.size(); ++i)
      data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", vectors[i]}});
    return sg::testing::LoopbackReply::json({{"object", "list"}, {"data", data}, {"model", "m"}});
  });
  sg::OpenAIConfig config;
  config.base_url = server.base_url();
  config.api_key = "test";
  CmSeed seed(
      cm_store(std::make_shared<sg::OpenAIEmbeddings>(config, "text-embedding-3-small", 256)));
  cm_check_seed(seed);
  CHECK(server.request_count() >= 7);  // one per put (6 puts), one per get
}

TEST_CASE("SimpleComposableMemory puts to every source and sets the primary") {
  auto store = cm_store();
  auto primary = std::make_shared<sg::ChatMemoryBuffer>();
  auto vectors = std::make_shared<sg::VectorMemory>(store, sg::Namespace{"vm"});
  sg::SimpleComposableMemory memory(primary, {vectors});
  memory.put(sg::human("Tom plays chess."));
  CHECK(primary->get_all().size() == 1);
  CHECK(vectors->get("chess").size() == 1);
  memory.set({sg::human("Ann sings."), sg::ai("Nice.")});
  CHECK(cm_texts(memory.get_all()) == std::vector<std::string>{"Ann sings.", "Nice."});
  // The long-term source got them put and kept the old batch.
  CHECK(cm_texts(vectors->get("chess")) ==
        std::vector<std::string>{"Tom plays chess.", "Ann sings.", "Nice."});
  CHECK_THROWS_AS(memory.put(sg::remove_message("x")), sg::Error);
  CHECK(primary->get_all().size() == 2);
  CHECK_THROWS_AS(sg::SimpleComposableMemory(nullptr), sg::Error);
  CHECK_THROWS_AS(sg::SimpleComposableMemory(primary, {nullptr}), sg::Error);
  // Defaults: a ChatMemoryBuffer and no secondary source.
  sg::SimpleComposableMemory plain;
  plain.put(sg::human("x"));
  CHECK(cm_texts(plain.get("x")) == std::vector<std::string>{"x"});
}

TEST_CASE("composable_memory_hook and remember_turn let another thread recall with LocalModel") {
  auto store = cm_store();
  auto vectors = std::make_shared<sg::VectorMemory>(store, sg::Namespace{"threads"});
  auto model = std::make_shared<sg::LocalModel>();
  // A graph whose turn ends by remembering it; the model sees what the hook composed.
  auto build = [&](std::vector<std::shared_ptr<sg::ChatMemory>> sources) {
    sg::StateGraph<sg::AgentState> g;
    g.add_node("recall", sg::composable_memory_hook<sg::AgentState>(
                             std::move(sources), {.system_prompt = "You are a helpful bot."}));
    g.add_node("agent", [model](const sg::AgentState& s) {
      return sg::Update<sg::AgentState>{}.set<&sg::AgentState::messages>(
          model->invoke(s.llm_input_messages));
    });
    g.add_node("remember", sg::remember_turn<sg::AgentState>(vectors));
    g.add_edge(sg::START, "recall");
    g.add_edge("recall", "agent");
    g.add_edge("agent", "remember");
    return g.compile({.checkpointer = std::make_shared<sg::InMemorySaver>()});
  };
  const auto with_memory = build({vectors});
  const auto without = build({});
  auto say = [](const auto& app, const std::string& thread, const std::string& text) {
    sg::RunConfig config;
    config.thread_id = thread;
    return app
        .invoke(sg::Update<sg::AgentState>{}.set<&sg::AgentState::messages>(sg::human(text)),
                config)
        .state;
  };
  CHECK(say(with_memory, "a", "Bob likes burgers.").messages.back().text() ==
        "Noted: bob likes burgers.");
  say(with_memory, "a", "Alice likes apples.");
  // A new thread: its primary memory is empty, the store remembers thread a.
  const auto recalled = say(with_memory, "b", "What does Bob like?");
  // LocalModel answers from the injected lines (the newest of the best-matching statements).
  CHECK(recalled.messages.back().text() == "You told me: ASSISTANT: Noted: bob likes burgers.");
  REQUIRE_FALSE(recalled.llm_input_messages.empty());
  const std::string system = recalled.llm_input_messages.front().text();
  CHECK(system.rfind("You are a helpful bot.\n\nBelow are a set of relevant dialogues", 0) == 0);
  CHECK(system.find("\tUSER: Bob likes burgers.\n\tASSISTANT: Noted: bob likes burgers.\n") !=
        std::string::npos);
  CHECK(recalled.messages.size() == 2);  // the thread holds only its own turn
  CHECK(say(without, "c", "What does Bob like?").messages.back().text() ==
        "I don't know that yet.");
  // Every turn was remembered once (re-running remember_turn replaces a turn's batch).
  CHECK(store->search({.prefix = {"threads"}, .limit = 20}).size() == 4);
  CHECK_THROWS_AS((void)sg::composable_memory_hook<sg::AgentState>({nullptr}), sg::Error);
  CHECK_THROWS_AS((void)sg::composable_memory_hook<sg::AgentState>({}, {.token_limit = 0}),
                  sg::Error);
  CHECK_THROWS_AS((void)sg::remember_turn<sg::AgentState>(nullptr), sg::Error);
}

TEST_CASE("composable_memory_hook as the ReAct agent's pre-model hook with tools") {
  struct Pair {
    int a = 0;
    int b = 0;
    static constexpr auto schema() {
      return std::tuple{sg::field<"a">(&Pair::a), sg::field<"b">(&Pair::b)};
    }
  };
  auto mystery = sg::make_tool<Pair>("mystery", "Mystery function on two numbers",
                                     [](const Pair& p) { return p.a * p.a - p.b * p.b; });
  auto store = cm_store();
  auto vectors = std::make_shared<sg::VectorMemory>(store, sg::Namespace{"agent"});
  sg::ReactAgentOptions options;
  options.pre_model_hook = sg::composable_memory_hook<sg::AgentState>({vectors});
  options.checkpointer = std::make_shared<sg::InMemorySaver>();
  const auto agent = sg::create_react_agent(std::make_shared<sg::LocalModel>(), {mystery}, options);
  sg::RunConfig config;
  config.thread_id = "one";
  const auto first = agent.invoke(sg::Update<sg::AgentState>{}.set<&sg::AgentState::messages>(
                                      sg::human("What is the mystery function on 5 and 6?")),
                                  config);
  CHECK(first.state.messages.back().text() == "The mystery tool says: -11");
  vectors->put_messages(first.state.messages);
  config.thread_id = "two";
  const auto second = agent.invoke(
      sg::Update<sg::AgentState>{}.set<&sg::AgentState::messages>(sg::human("Tell me a joke.")),
      config);
  // The second thread's model saw the first thread's exchange in its system message.
  const std::string system = second.state.llm_input_messages.front().text();
  CHECK(system.find("\tUSER: What is the mystery function on 5 and 6?\n\tASSISTANT: None\n"
                    "\tTOOL: -11\n\tASSISTANT: The mystery tool says: -11\n") != std::string::npos);
}
