// SPDX-License-Identifier: MIT
// MCP tools in the command-line tool: `stategraph chat --mcp FILE` chats with the ReAct agent and
// the tools of the reference server-everything (npm, tests/mcp, over stdio, on LocalModel), and
// bad MCP configurations of `chat` and `serve` are refused with errors naming the file and field.
// (`serve --mcp` serving react_agent with those tools: tests/mcp/server.test.mjs.)
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "support/mcp_peers.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace {

std::string write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

/// An mcpServers file naming server-everything over stdio.
std::string everything_config(const sg::test::TempDir& dir) {
  const std::string everything = sg::test::everything_js();
  return write_file(dir.sub("mcp.json"), R"({"mcpServers": {"everything": {"command": ")" +
                                             sg::test::mcp_node() + R"(", "args": [")" +
                                             everything + R"(", "stdio"], "stderr": "ignore"}}})");
}

}  // namespace

TEST_CASE("chat --mcp: the ReAct agent answers with an MCP server's tools, on a thread it keeps") {
  sg::test::TempDir dir;
  const std::string db = dir.sub("data");
  const std::string config = everything_config(dir);
  const auto first = sg::test::run_process(SG_CLI_PATH, {"chat", "--db", db, "--mcp", config},
                                           "get-sum 3 and 4\n/tools\n");
  INFO(first.out, first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(first.out.find("thread 'agent'") != std::string::npos);
  CHECK(first.out.find("13 tools from " + config) != std::string::npos);
  CHECK(first.out.find("ai> [get-sum: The sum of 3 and 4 is 7.]\n"
                       "ai> The get-sum tool says: The sum of 3 and 4 is 7.\n") !=
        std::string::npos);
  CHECK(first.out.find("  echo: Echoes back the input string\n") != std::string::npos);

  const auto second =
      sg::test::run_process(SG_CLI_PATH, {"chat", "--db", db, "--mcp", config}, "/state\n");
  INFO(second.out, second.err);
  CHECK(second.out.find("(continuing: 4 messages)") != std::string::npos);
  CHECK(second.out.find("  [2] tool: The sum of 3 and 4 is 7.\n") != std::string::npos);
}

TEST_CASE("bad MCP configurations are refused, naming the file and the field") {
  sg::test::TempDir dir;
  const std::string not_json = write_file(dir.sub("broken.json"), "{\"mcpServers\": ");
  const std::string bad_field = write_file(
      dir.sub("bad.json"), R"({"mcpServers": {"fs": {"command": "x", "args": ["a", 5]}}})");
  const std::string no_server =
      write_file(dir.sub("missing.json"),
                 R"({"mcpServers": {"gone": {"command": "/nonexistent/mcp-server"}}})");

  SUBCASE("chat") {
    const auto broken =
        sg::test::run_process(SG_CLI_PATH, {"chat", "--db", dir.sub("a"), "--mcp", not_json});
    CHECK(broken.exit_code != 0);
    CHECK(broken.err.find(not_json + ": not valid JSON") != std::string::npos);
    const auto bad =
        sg::test::run_process(SG_CLI_PATH, {"chat", "--db", dir.sub("b"), "--mcp", bad_field});
    CHECK(bad.exit_code != 0);
    CHECK(bad.err.find("mcpServers.fs.args[1]") != std::string::npos);
    const auto gone =
        sg::test::run_process(SG_CLI_PATH, {"chat", "--db", dir.sub("c"), "--mcp", no_server});
    CHECK(gone.exit_code != 0);
    CHECK(gone.err.find("gone") != std::string::npos);
  }
  SUBCASE("serve --mcp and stategraph.json's mcpServers") {
    const auto bad = sg::test::run_process(
        SG_CLI_PATH, {"serve", "--in-memory", "--port", "0", "--mcp", bad_field});
    CHECK(bad.exit_code == 1);
    CHECK(bad.err.find("mcpServers.fs.args[1]") != std::string::npos);
    const std::string config = write_file(dir.sub("stategraph.json"),
                                          R"({"graphs": {"react": "builtin:react_agent"},
            "mcpServers": {"fs": {"command": "x", "args": ["a", 5]}}})");
    const auto in_file = sg::test::run_process(
        SG_CLI_PATH, {"serve", "--in-memory", "--port", "0", "--config", config});
    CHECK(in_file.exit_code == 1);
    CHECK(in_file.err.find(config + ": mcpServers.fs.args[1]") != std::string::npos);
    const auto gone = sg::test::run_process(
        SG_CLI_PATH, {"serve", "--in-memory", "--port", "0", "--mcp", no_server});
    CHECK(gone.exit_code == 1);
    CHECK(gone.err.find("gone") != std::string::npos);
  }
}
