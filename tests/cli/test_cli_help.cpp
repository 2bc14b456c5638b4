// SPDX-License-Identifier: MIT
// The command-line tool's surface: --help for every command, the exit code of bad usage, and the
// bash completion generated from the command definitions, run in a real bash.
#include <doctest/doctest.h>

#include <fstream>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace {

const std::vector<std::string> kCommands{"messages", "threads", "store", "demo", "chat",
                                         "graph",    "serve",   "new",   "dev",  "completion"};

/// What bash completes for the words of `line` (the last word is the one being completed).
std::string complete(const std::string& script, const std::string& line) {
  const std::string program = "source " + script +
                              "\nread -ra COMP_WORDS <<< \"$LINE\"\n"
                              "[[ \"$LINE\" == *' ' ]] && COMP_WORDS+=('')\n"
                              "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
                              "_stategraph\necho \"${COMPREPLY[*]}\"\n";
  setenv("LINE", line.c_str(), 1);
  const auto result = sg::test::run_process("/bin/bash", {"-c", program});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  return result.out.substr(0, result.out.find('\n'));
}

}  // namespace

TEST_CASE("stategraph --help lists every command, each command has --help") {
  const auto top = sg::test::run_process(SG_CLI_PATH, {"--help"});
  CHECK(top.exit_code == 0);
  for (const auto& command : kCommands) {
    INFO(command);
    CHECK(top.out.find("\n  " + command) != std::string::npos);
    const auto help = sg::test::run_process(SG_CLI_PATH, {command, "--help"});
    CHECK(help.exit_code == 0);
    CHECK(help.out.find("stategraph " + command) != std::string::npos);
  }
  CHECK(top.out.find("Exit codes: 0 ok, 1 failure") != std::string::npos);
  CHECK(top.out.find("NO_COLOR") != std::string::npos);

  const auto unknown = sg::test::run_process(SG_CLI_PATH, {"nope"});
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.find("stategraph: ") == 0);
  CHECK(unknown.err.find('\n') == unknown.err.size() - 1);  // one line
}

TEST_CASE("stategraph completion bash completes commands, subcommands and options") {
  sg::test::TempDir dir;
  const auto script = sg::test::run_process(SG_CLI_PATH, {"completion", "bash"});
  REQUIRE(script.exit_code == 0);
  const std::string path = dir.sub("stategraph.bash");
  std::ofstream(path) << script.out;

  CHECK(complete(path, "stategraph thr") == "threads");
  CHECK(complete(path, "stategraph c") == "chat completion");
  CHECK(complete(path, "stategraph threads ") ==
        "list show history delete fork --help -h");  // CLI11 lists --help with each command
  CHECK(complete(path, "stategraph threads list --") ==
        "--help --db --json");  // flags, then options with a value
  CHECK(complete(path, "stategraph demo --t") == "--thread --turns");
  CHECK(complete(path, "stategraph demo --db ").empty());  // a directory: the shell's files
  CHECK(complete(path, "stategraph store search --").find("--query") != std::string::npos);

  const auto zsh = sg::test::run_process(SG_CLI_PATH, {"completion", "zsh"});
  CHECK(zsh.exit_code == 2);
}

TEST_CASE("the README's message commands on its sample files (examples/data)") {
  const std::string data = SG_TEST_DATA_DIR "/../../examples/data/";
  std::ifstream in(data + "history.json");
  const std::string history{std::istreambuf_iterator<char>(in), {}};
  REQUIRE(!history.empty());
  const auto run = [&](const std::vector<std::string>& args, const std::string& input) {
    auto result = sg::test::run_process(SG_CLI_PATH, args, input);
    INFO(result.err);
    CHECK(result.exit_code == 0);
    return result.out;
  };
  CHECK(run({"messages", "trim", "--max-tokens", "20", "--start-on", "human", "--end-on",
             "human,tool", "--include-system", "--token-counter", "words"},
            history)
            .find(R"("content":"And the weather in Paris?")") != std::string::npos);
  CHECK(run({"messages", "keep", "--from", "-5"}, R"(["a","b","c","d","e","f","g"])") ==
        "[\"c\",\"d\",\"e\",\"f\",\"g\"]\n");
  // LangChain's get_buffer_string: a message that only calls tools is an empty "AI: " line...
  CHECK(run({"messages", "buffer-string", "--human-prefix", "User"}, history)
            .find(R"(User: What is 6 times 7?\nAI: \nTool: 42\n)") != std::string::npos);
  // ... unless the calls are asked for.
  CHECK(run({"messages", "buffer-string", "--with-tool-calls"}, history)
            .find(R"(AI: [calls multiply({\"a\":6,\"b\":7})]\nTool: 42\n)") != std::string::npos);
}
