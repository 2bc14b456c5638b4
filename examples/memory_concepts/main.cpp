// SPDX-License-Identifier: MIT
// LangGraph's memory concepts (seeds/001), one section each, offline:
//   short-term: 1. a keep-slice update, 2. RemoveMessage, 3. a running summary;
//   long-term, on the store: 4. memory tools on the hot path, 5. a debounced background writer,
//   6. a profile updated by JSON Patch and checked by its schema, 7. a collection of memories,
//   8. instructions the agent rewrites by reflection, 9. few-shot examples found by similarity.
//
// The model is sg::LocalModel, the offline rule-based stand-in. Where a real model would decide
// what to remember (which tool to call, which patch to propose, how to rewrite its instructions),
// the decision is scripted with LocalModel::script(); everything around it (namespaces, patches,
// schema checks, retries, the store, the timers) runs for real.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/react_agent.hpp>
#include <stategraph/nodes/long_term.hpp>
#include <stategraph/nodes/summarize.hpp>
#include <stategraph/nodes/trim.hpp>
#include <stategraph/stategraph.hpp>
#include <stategraph/store/memory_store.hpp>

#include <iostream>
#include <thread>

namespace {

using nlohmann::json;
using namespace std::chrono_literals;

/// The conversation state of sections 1-3 and 5: messages plus a running summary.
struct Chat : sg::MessagesState {
  std::string summary;
  static constexpr auto schema() {
    return std::tuple_cat(sg::MessagesState::schema(),
                          std::tuple{sg::field<"summary">(&Chat::summary)});
  }
};

sg::Update<Chat> say(const std::string& text) {
  return sg::Update<Chat>{}.set<&Chat::messages>(sg::human(text));
}

sg::Update<sg::AgentState> ask(const std::string& text) {
  return sg::Update<sg::AgentState>{}.set<&sg::AgentState::messages>(
      std::vector<sg::Message>{sg::human(text)});
}

/// A node answering with the model, the running summary (if any) given as a system message.
auto chat_node(std::shared_ptr<sg::LocalModel> model) {
  return [model](const Chat& s) {
    std::vector<sg::Message> input;
    if (!s.summary.empty())
      input.push_back(sg::system("Summary of the conversation: " + s.summary));
    input.insert(input.end(), s.messages.begin(), s.messages.end());
    return sg::Update<Chat>{}.set<&Chat::messages>(model->invoke(input));
  };
}

std::string texts(const std::vector<sg::Message>& messages) {
  std::string out;
  for (const auto& m : messages) out += (out.empty() ? "" : " | ") + m.text();
  return out;
}

sg::Message calls(std::vector<sg::ToolCall> tool_calls) {
  return sg::ai("", std::move(tool_calls));
}

void section(const std::string& title) {
  std::cout << "\n== " << title << " ==\n";
}

/// 1 and 2: the thread forgets all but the last two messages after every turn.
void forget_old_messages(sg::DeleteMode mode, const std::shared_ptr<sg::LocalModel>& model) {
  sg::StateGraph<Chat> g;
  g.add_node("chat", chat_node(model));
  g.add_node("forget", sg::delete_old_messages<Chat>(2, mode));
  g.add_edge(sg::START, "chat").add_edge("chat", "forget");
  const auto app = g.compile({.checkpointer = std::make_shared<sg::InMemorySaver>()});
  sg::RunConfig thread;
  thread.thread_id = "forgetful";
  for (const char* text : {"My name is Ada.", "I live in Lisbon.", "What is my name?"}) {
    const auto state = app.invoke(say(text), thread).state;
    std::cout << "kept after \"" << text << "\": " << texts(state.messages) << '\n';
  }
}

}  // namespace

int main() {
  auto model = std::make_shared<sg::LocalModel>();
  // One store for every long-term section; semantic search on "content" and few-shot inputs.
  auto store = std::make_shared<sg::InMemoryStore>(
      sg::TtlConfig{},
      sg::IndexConfig{std::make_shared<sg::HashedNgramEmbeddings>(), {"content", "input"}});
  const json ada = {{"user_id", "ada"}};
  sg::RunConfig ada_run;
  ada_run.configurable = ada;

  section("1. keep-slice: an update that keeps only messages[-2:]");
  forget_old_messages(sg::DeleteMode::keep_slice, model);

  section("2. RemoveMessage: delete all but the last 2 messages by id");
  forget_old_messages(sg::DeleteMode::remove_messages, model);

  section("3. summary: summarize past the 4th message, keep the last 2");
  {
    sg::StateGraph<Chat> g;
    g.add_node("chat", chat_node(model));
    g.add_node("summarize_conversation", sg::summarize_conversation<Chat>(model));
    g.add_edge(sg::START, "chat");
    g.add_conditional_edges("chat", sg::should_summarize<Chat>(4),
                            {"summarize_conversation", sg::END});
    const auto app = g.compile({.checkpointer = std::make_shared<sg::InMemorySaver>()});
    sg::RunConfig thread;
    thread.thread_id = "summarized";
    Chat state;
    for (const char* text :
         {"My name is Ada.", "I live in Lisbon.", "I like green tea.", "What is my name?"})
      state = app.invoke(say(text), thread).state;
    std::cout << "summary: " << state.summary << '\n' << "kept: " << texts(state.messages) << '\n';
  }

  section("4. hot path: the agent calls memory tools while it answers");
  {
    auto agent = sg::create_react_agent(
        model, {sg::make_manage_memory_tool(), sg::make_search_memory_tool()}, {.store = store});
    model->script({calls({{"c1", "manage_memory", {{"content", "Ada prefers green tea"}}}}),
                   sg::ai("I'll remember that you prefer green tea.")});
    std::cout << "ai: "
              << agent.invoke(ask("I prefer green tea."), ada_run).state.messages.back().text()
              << '\n';
    // A new conversation (another thread) finds it again.
    model->script({calls({{"c2", "search_memory", {{"query", "What does Ada like to drink?"}}}}),
                   sg::ai("You prefer green tea.")});
    const auto found = agent.invoke(ask("What do I like to drink?"), ada_run).state;
    const json hits = json::parse(found.messages[2].text());
    std::cout << "search_memory found: " << hits[0]["value"]["content"].get<std::string>()
              << " in (" << sg::join_namespace(hits[0]["namespace"].get<sg::Namespace>()) << ")\n";
    // Without a user id, the namespace ("memories", "{user_id}") cannot be filled.
    model->script({calls({{"c3", "manage_memory", {{"content", "orphan"}}}}), sg::ai("Sorry.")});
    const auto refused = agent.invoke(ask("Remember this."), sg::RunConfig{}).state;
    const std::string error = refused.messages[2].text();
    std::cout << "without user_id, the tool answered: " << error.substr(0, error.find(" in the"))
              << '\n';
  }

  section("5. background: a debounced memory writer");
  {
    // The memory model is not the chat model; what it will decide once the thread is quiet is
    // scripted.
    auto memory_model = std::make_shared<sg::LocalModel>();
    memory_model->script(
        {calls({{"c4", "insert_memory", {{"content", "Ada plans a trip to Japan in April"}}}})});
    const sg::MemoryCollection memories({.ns = {"memories", "{user_id}"}});
    auto writer = std::make_shared<sg::MemoryWriter>(
        [&](const sg::MemoryWriteJob& job) {
          std::cout << "writer: one write for thread " << job.thread_id << ", "
                    << job.messages.size() << " messages, " << job.submissions << " submissions\n";
          memories.update(*memory_model, *store, job.configurable, job.messages, job.cancellation);
        },
        sg::MemoryWriterOptions{.delay = 500ms});
    sg::StateGraph<Chat> g;
    g.add_node("chat", chat_node(model));
    g.add_node("remember", sg::schedule_memory_write<Chat>(writer));
    g.add_edge(sg::START, "chat").add_edge("chat", "remember");
    const auto app = g.compile({.checkpointer = std::make_shared<sg::InMemorySaver>()});
    sg::RunConfig thread = ada_run;
    thread.thread_id = "trip";
    const auto start = std::chrono::steady_clock::now();
    for (const char* text : {"I am planning a trip to Japan.", "I will go in April."})
      std::cout << "ai: " << app.invoke(say(text), thread).state.messages.back().text() << '\n';
    const auto took = std::chrono::steady_clock::now() - start;
    std::cout << "replies waited for a write: " << (took < 500ms ? "no" : "yes")
              << "; writes so far: " << writer->stats().written << '\n';
    for (int i = 0; i < 500 && writer->stats().written == 0; ++i) std::this_thread::sleep_for(10ms);
    const auto stats = writer->stats();
    std::cout << "after 500 ms of quiet: written " << stats.written << ", superseded "
              << stats.superseded << '\n';
    for (const auto& m : memories.list(*store, ada, std::string("trip"), 1))
      std::cout << "memory: " << m.content.get<std::string>() << '\n';
  }

  section("6. profile: one JSON document per user, patched, checked by its schema");
  {
    const sg::ProfileMemory profile(
        {.schema = {{"type", "object"},
                    {"properties",
                     {{"name", {{"type", "string"}}},
                      {"age", {{"type", "integer"}, {"minimum", 0}}},
                      {"likes", {{"type", "array"}, {"items", {{"type", "string"}}}}}}},
                    {"additionalProperties", false}},
         .initial = {{"likes", json::array()}}});
    auto patch = [](json ops) {
      return calls({{"p" + std::to_string(ops.size()), "patch_profile", {{"patch", ops}}}});
    };
    // The memory model proposes a patch with a wrong type, reads the error, and fixes it.
    model->script({patch(R"([{"op": "add", "path": "/age", "value": "36"}])"_json),
                   patch(R"([{"op": "add", "path": "/name", "value": "Ada"},
                             {"op": "add", "path": "/age", "value": 36},
                             {"op": "add", "path": "/likes/-", "value": "green tea"}])"_json)});
    const std::vector conversation{sg::human("I'm Ada, 36, and I love green tea.")};
    const auto update = profile.update(*model, *store, ada, conversation);
    std::cout << "profile after " << update.attempts
              << " model calls: " << profile.get(*store, ada).dump() << '\n';
    try {
      (void)profile.patch(*store, ada, R"([{"op": "replace", "path": "/age", "value": -1}])"_json);
    } catch (const sg::Error& e) {
      std::cout << "rejected: " << e.what() << '\n';
    }
    try {
      (void)profile.patch(*store, ada, R"([{"op": "remove", "path": "/email"}])"_json);
    } catch (const sg::Error& e) {
      std::cout << "rejected: " << e.what() << '\n';
    }
    std::cout << "profile unchanged: " << profile.get(*store, ada).dump() << '\n';
  }

  section("7. collection: the model inserts, updates and deletes memories");
  {
    const sg::MemoryCollection memories({.ns = {"notes", "{user_id}"}});
    memories.apply(*store, ada,
                   {{sg::MemoryChange::Action::insert, "city", "Ada lives in Lisbon"},
                    {sg::MemoryChange::Action::insert, "pet", "Ada has a dog"}});
    model->script(
        {calls({{"c5", "update_memory", {{"id", "city"}, {"content", "Ada lives in Porto"}}},
                {"c6", "delete_memory", {{"id", "pet"}}},
                {"c7", "insert_memory", {{"content", "Ada is learning Japanese"}}}})});
    const std::vector conversation{
        sg::human("I moved to Porto. The dog was my neighbour's. I'm learning Japanese.")};
    for (const auto& c : memories.update(*model, *store, ada, conversation))
      std::cout << sg::to_string(c.action) << ": "
                << (c.content.is_null() ? c.key : c.content.dump()) << '\n';
    std::cout << "memories now:";
    for (const auto& m : memories.list(*store, ada))
      std::cout << " [" << m.content.get<std::string>() << "]";
    std::cout << '\n';
  }

  section("8. instructions: reflection rewrites them, a shared namespace keeps them");
  {
    const sg::AgentInstructions instructions(
        {.agent = "tweet_writer", .initial = "Summarize papers for Twitter."});
    const std::vector conversation{sg::human("Summarize this paper."),
                                   sg::ai("A long thread of 12 tweets ..."),
                                   sg::human("Too long! One tweet, and no hashtags.")};
    std::cout << "before: " << instructions.get(*store) << '\n';
    model->script(
        {sg::ai("<instructions>Summarize papers for Twitter in a single tweet, "
                "without hashtags.</instructions>")});
    instructions.reflect(*model, *store, conversation);
    std::cout << "after:  " << instructions.get(*store) << '\n'
              << "stored: " << store->get({"agent_instructions"}, "tweet_writer")->value.dump()
              << '\n';
  }

  section("9. few-shot: examples retrieved by similarity to the user's message");
  {
    const sg::FewShotExamples examples;
    examples.add(*store, {.input = "Write a haiku about the rain",
                          .output = "Rain on the tin roof / ...",
                          .reasoning = "Three lines of 5, 7 and 5 syllables."});
    examples.add(*store, {.input = "Translate 'thank you' into Japanese", .output = "Arigatou."});
    examples.add(*store, {.input = "What is 12 times 12?", .output = "144."});
    const sg::AgentInstructions instructions({.agent = "tweet_writer"});
    std::string prompt_seen;
    auto agent = sg::create_react_agent(
        model, {},
        {.pre_model_hook = sg::system_prompt_hook<sg::AgentState>(
             [&](const sg::AgentState& state, sg::Context& ctx) {
               prompt_seen = instructions.get(*ctx.store()) + "\n" +
                             sg::format_few_shot(examples.search(*ctx.store(), state.messages, 1));
               return prompt_seen;
             }),
         .store = store});
    (void)agent.invoke(ask("Translate 'good night' into Japanese"), ada_run);
    std::cout << "system prompt:\n" << prompt_seen << '\n';
  }
  return 0;
}
