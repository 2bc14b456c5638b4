// SPDX-License-Identifier: MIT
// The MCP client under the official conformance checks (@modelcontextprotocol/conformance,
// `conformance client --command ...`): it is started with the scenario's server URL as its last
// argument (and the scenario in MCP_CONFORMANCE_SCENARIO), connects over Streamable HTTP, lists
// the tools, calls each once with arguments made from its schema, and closes the session. Exit
// status 0 when everything succeeded; the checks themselves are the runner's.
#include <stategraph/core/log.hpp>
#include <stategraph/models/mcp.hpp>

#include <cstdlib>
#include <iostream>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " SERVER_URL\n";
    return 2;
  }
  const char* scenario = std::getenv("MCP_CONFORMANCE_SCENARIO");
  sg::set_log_sink(
      [](const sg::LogRecord& r) {
        std::cerr << sg::to_string(r.level) << " " << r.message << " " << r.fields.dump() << "\n";
      },
      sg::LogLevel::debug);
  try {
    sg::McpServerConfig server;
    server.transport = sg::McpTransport::streamable_http;
    server.url = argv[argc - 1];
    server.request_timeout = std::chrono::milliseconds(20'000);
    sg::McpClient client({{"conformance", server}});
    const sg::McpServerInfo info = client.server_info("conformance");
    std::cout << "scenario " << (scenario ? scenario : "(none)") << ": protocol "
              << info.protocol_version << ", server " << info.server_info.dump() << "\n";
    for (const nlohmann::json& tool : client.list_tools("conformance")) {
      nlohmann::json args = nlohmann::json::object();
      const nlohmann::json properties = tool.value("inputSchema", nlohmann::json::object())
                                            .value("properties", nlohmann::json::object());
      int n = 0;
      for (const auto& [name, schema] : properties.items()) {
        const std::string type = schema.value("type", "string");
        if (type == "number" || type == "integer") {
          args[name] = ++n;
        } else if (type == "boolean") {
          args[name] = true;
        } else if (type == "string") {
          args[name] = "conformance";
        }
      }
      const std::string name = tool["name"];
      const nlohmann::json result = client.call_tool("conformance", name, args);
      std::cout << "called " << name << " " << args.dump() << ": " << result.dump() << "\n";
    }
    client.close();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
