// SPDX-License-Identifier: MIT
// A ReAct agent whose tools come from MCP servers, listed in the `mcpServers` file that MCP
// clients share (Claude Desktop, Cursor, LangChain's MultiServerMCPClient). The model comes from
// sg::default_chat_model(): the offline LocalModel, or a server when OPENAI_BASE_URL (or
// ANTHROPIC_API_KEY) is set.
//
//   ./mcp_tools servers.json "get-sum 19 and 23"
//
// with servers.json:
//
//   {"mcpServers": {
//     "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]},
//     "files": {"command": "npx",
//               "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}}}

#include <stategraph/models/local_model.hpp>
#include <stategraph/models/mcp.hpp>
#include <stategraph/models/react_agent.hpp>

#include <fstream>
#include <iostream>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: mcp_tools SERVERS.json [QUESTION]\n";
    return 2;
  }
  const std::string question = argc > 2 ? argv[2] : "get-sum 19 and 23";
  try {
    std::ifstream file(argv[1]);
    if (!file) throw std::runtime_error(std::string("cannot read ") + argv[1]);
    const nlohmann::json config = nlohmann::json::parse(file);

    // The servers start (stdio) or connect (HTTP) when their tools are first asked for; the
    // client ends their sessions when it goes out of scope.
    sg::McpClient client(config);
    std::vector<sg::Tool> tools = client.get_tools();
    std::cout << tools.size() << " tools from " << client.servers().size() << " MCP servers\n";

    auto agent = sg::create_react_agent(sg::default_chat_model(), std::move(tools));
    sg::Update<sg::AgentState> input;
    input.set<&sg::AgentState::messages>(std::vector<sg::Message>{sg::human(question)});
    std::cout << "user: " << question << '\n';
    const auto result = agent.invoke(std::move(input));
    for (const sg::Message& m : result.state.messages) {
      for (const sg::ToolCall& call : m.tool_calls)
        std::cout << "calls " << call.name << ' ' << call.args.dump() << '\n';
      if (m.type == sg::MessageType::tool)
        std::cout << "tool " << m.name << " (" << m.status << "): " << m.text() << '\n';
    }
    std::cout << "assistant: " << result.state.messages.back().text() << '\n';
  } catch (const std::exception& e) {
    std::cerr << "mcp_tools: " << e.what() << '\n';
    return 1;
  }
}
