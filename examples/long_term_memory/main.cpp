// SPDX-License-Identifier: MIT
// Long-term memory shared by the conversation threads of one user (seeds/001): a profile
// document updated in place and a collection of memories that grows, in a RocksDbStore, so
// they outlive the process. Every run of this program is one conversation thread:
//
//   long_term_memory DB t1 "Hi, my name is Bob" "I like green tea"
//   long_term_memory DB t2 "I enjoy hiking" "What do you know about me?"   # a new process
//
// The "model" is an offline stand-in (rules, no network): it extracts "my name is X" into the
// profile and "I like / I enjoy / I love X" into memories, and answers from what it recalls.
#include <stategraph/stategraph.hpp>
#include <stategraph/store/rocksdb_store.hpp>

#include <iostream>

namespace {

const sg::Namespace kProfile{"users", "bob"};
const sg::Namespace kMemories{"users", "bob", "memories"};

/// The text after `marker` (case as written) up to the end of the sentence, or "".
std::string after(const std::string& text, const std::string& marker) {
  const auto at = text.find(marker);
  if (at == std::string::npos) return {};
  std::string rest = text.substr(at + marker.size());
  const auto end = rest.find_first_of(".!?");
  return end == std::string::npos ? rest : rest.substr(0, end);
}

/// Writes what the human said about themselves into the store.
sg::Update<sg::MessagesState> remember(const sg::MessagesState& state, sg::Context& ctx) {
  sg::Store& store = *ctx.store();
  const std::string text = state.messages.back().text();
  if (auto name = after(text, "my name is "); !name.empty()) {
    // The profile is one document, updated in place.
    auto profile = store.get(kProfile, "profile");
    nlohmann::json value = profile ? profile->value : nlohmann::json::object();
    value["name"] = name;
    store.put(kProfile, "profile", value);
  }
  for (const char* verb : {"I like ", "I enjoy ", "I love "}) {
    if (auto what = after(text, verb); !what.empty()) {
      // Memories are a growing collection, one item each.
      store.put(kMemories, std::string(verb) + what, {{"text", std::string(verb) + what}});
    }
  }
  return {};
}

/// Answers from the profile and the memories most related to the message.
sg::Update<sg::MessagesState> reply(const sg::MessagesState& state, sg::Context& ctx) {
  sg::Store& store = *ctx.store();
  const std::string text = state.messages.back().text();
  std::string answer;
  if (text.find('?') == std::string::npos) {
    answer = "Noted.";
  } else {
    const auto profile = store.get(kProfile, "profile");
    answer = profile ? "You are " + profile->value.value("name", std::string("?")) + "."
                     : "I don't know your name yet.";
    const auto memories = store.search({.prefix = kMemories, .query = text, .limit = 5});
    if (!memories.empty()) answer += " I remember:";
    for (const auto& m : memories) answer += " " + m.item.value["text"].get<std::string>() + ";";
  }
  return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(sg::ai(answer));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: long_term_memory DB THREAD MESSAGE...\n";
    return 2;
  }
  sg::RocksDbStoreOptions options;
  options.index = sg::IndexConfig{std::make_shared<sg::HashedNgramEmbeddings>(), {"text"}};
  auto store = sg::RocksDbStore::open(argv[1], options);

  sg::StateGraph<sg::MessagesState> graph;
  graph.add_node("remember", remember);
  graph.add_node("reply", reply);
  graph.add_edge(sg::START, "remember").add_edge("remember", "reply");
  const auto app = graph.compile({.store = store});

  sg::MessagesState state;
  for (int i = 3; i < argc; ++i) {
    state.messages.push_back(sg::human(argv[i]));
    state = app.invoke(state).state;
    std::cout << argv[2] << " human: " << argv[i] << "\n"
              << argv[2] << " ai: " << state.messages.back().text() << '\n';
  }
  return 0;
}
