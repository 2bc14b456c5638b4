// SPDX-License-Identifier: MIT
// `stategraph new NAME`: a ready project in directory NAME, as `langgraph new` writes one: a
// graph in C++ built as a graph library against the installed package, its stategraph.json, a
// test, a README (docs/deploy.md).
#include <stategraph/core/error.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <string_view>
#include <utility>

#include "cli.hpp"

namespace sg::cli {
namespace {

constexpr std::string_view kCMakeLists = R"(cmake_minimum_required(VERSION 3.25)
project(@NAME@ LANGUAGES CXX)

find_package(stategraph REQUIRED)

# The graph library `stategraph serve --config stategraph.json` loads: build/graphs.so.
stategraph_add_graph_library(graphs src/graphs.cpp src/agent.cpp)

# The graph's test: the graph compiled and run in-process, on stategraph's archives.
enable_testing()
add_executable(agent_test tests/agent_test.cpp src/agent.cpp)
target_link_libraries(agent_test PRIVATE sg::reducers)
target_include_directories(agent_test PRIVATE src)
add_test(NAME agent COMMAND agent_test)
)";

constexpr std::string_view kAgentHpp = R"(#pragma once

// The project's graph: edit it, rebuild, and `stategraph serve --config stategraph.json` serves it.

#include <stategraph/stategraph.hpp>

/// The graph "agent" serves: it answers each message.
sg::StateGraph<sg::MessagesState> build_agent();
)";

constexpr std::string_view kAgentCpp = R"(#include "agent.hpp"

sg::StateGraph<sg::MessagesState> build_agent() {
  sg::StateGraph<sg::MessagesState> graph;
  graph.add_node("reply", [](const sg::MessagesState& s) {
    // A real agent asks a model here (sg::OpenAIChatModel, or a coroutine node that awaits
    // model->ainvoke: docs/server.md).
    return sg::Update<sg::MessagesState>{}.set<&sg::MessagesState::messages>(
        sg::ai("you said: " + s.messages.back().text()));
  });
  graph.add_edge(sg::START, "reply").add_edge("reply", sg::END);
  return graph;
}
)";

constexpr std::string_view kGraphsCpp =
    R"(// The graphs this library gives `stategraph serve` (stategraph.json names them).
#include <stategraph/server/graph_library.hpp>

#include "agent.hpp"

SG_GRAPH_LIBRARY(registry) {
  // Compiled by the server, on its checkpointer and store: threads persist.
  registry.add("agent", sg::served_graph(build_agent()));
}
)";

constexpr std::string_view kTestCpp = R"(// Runs the graph once and checks its answer.
#include <iostream>

#include "agent.hpp"

int main() {
  auto app = build_agent().compile();
  const auto out = app.invoke(sg::MessagesState{{sg::human("hello")}}).state;
  const std::string answer = out.messages.back().text();
  if (answer != "you said: hello") {
    std::cerr << "unexpected answer: " << answer << "\n";
    return 1;
  }
  std::cout << "agent answered: " << answer << "\n";
  return 0;
}
)";

constexpr std::string_view kConfig = R"({
  "graphs": {
    "agent": "./build/graphs.so:agent"
  },
  "http": {
    "cors": { "allow_origins": ["http://localhost:3000"] }
  }
}
)";

constexpr std::string_view kReadme = R"(# @NAME@

A graph for `stategraph serve`, written in C++.

    cmake -S . -B build && cmake --build build   # build/graphs.so and the test
    ctest --test-dir build                       # runs the graph once
    stategraph serve --config stategraph.json    # serves it on http://127.0.0.1:2024

Then, from JavaScript (`npm install @langchain/langgraph-sdk`):

```js
import { Client } from "@langchain/langgraph-sdk";
const client = new Client({ apiUrl: "http://127.0.0.1:2024" });
const thread = await client.threads.create();
console.log(await client.runs.wait(thread.thread_id, "agent", {
  input: { messages: [{ role: "user", content: "hello" }] },
}));
```

A chat UI on http://localhost:3000 (stategraph.json's `http.cors`) reaches it from the browser.
The graph is in src/agent.cpp; src/graphs.cpp registers it; stategraph.json says what the
server serves (graphs, env, http).
)";

constexpr std::string_view kGitignore = "build/\n";

struct NewArgs {
  std::string name;
};

void write_file(const std::filesystem::path& path, std::string_view text, const std::string& name) {
  std::filesystem::create_directories(path.parent_path());
  std::string body(text);
  for (std::size_t at = body.find("@NAME@"); at != std::string::npos;
       at = body.find("@NAME@", at + name.size())) {
    body.replace(at, 6, name);
  }
  std::ofstream out(path);
  out << body;
  if (!out) throw Error(errc::kInvalidArgument, fmt::format("cannot write '{}'", path.string()));
}

void create_project(const NewArgs& args) {
  const std::filesystem::path dir(args.name);
  const std::string name = dir.filename().string();
  if (!std::regex_match(name, std::regex("[A-Za-z][A-Za-z0-9_-]*"))) {
    throw Error(errc::kInvalidArgument,
                fmt::format("'{}' cannot name a project: use letters, digits, '-' and '_', "
                            "starting with a letter",
                            name));
  }
  if (std::filesystem::exists(dir) &&
      (!std::filesystem::is_directory(dir) || !std::filesystem::is_empty(dir))) {
    throw Error(errc::kInvalidArgument,
                fmt::format("'{}' exists and is not an empty directory", dir.string()));
  }
  const std::pair<const char*, std::string_view> files[] = {{"CMakeLists.txt", kCMakeLists},
                                                            {"src/agent.hpp", kAgentHpp},
                                                            {"src/agent.cpp", kAgentCpp},
                                                            {"src/graphs.cpp", kGraphsCpp},
                                                            {"tests/agent_test.cpp", kTestCpp},
                                                            {"stategraph.json", kConfig},
                                                            {"README.md", kReadme},
                                                            {".gitignore", kGitignore}};
  for (const auto& [path, text] : files) write_file(dir / path, text, name);
  std::cout << fmt::format(
      "stategraph new: wrote {}/\n  cd {} && cmake -S . -B build && cmake --build build\n"
      "  stategraph serve --config stategraph.json\n",
      dir.string(), dir.string());
}

}  // namespace

void add_new_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<NewArgs>();
  auto* cmd = app.add_subcommand(
      "new",
      "Write a new project: a graph in C++ built as a graph library, its stategraph.json, a "
      "test and a README (docs/deploy.md)");
  cmd->add_option("NAME", args->name, "The project's directory (new, or empty)")->required();
  cmd->callback([&action, args] { action = [args] { create_project(*args); }; });
}

}  // namespace sg::cli
