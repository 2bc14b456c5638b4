// SPDX-License-Identifier: MIT
#pragma once
// Checks of an MCP server configuration shared by parse_mcp_config and McpClient.

#include <stategraph/models/mcp.hpp>

#include <string>

namespace sg::detail {

/// Throws sg::Error (errc::kInvalidArgument) naming `mcpServers.<name>.<field>` when `server`
/// cannot be used: an empty name, a stdio server without command, an HTTP server whose URL is
/// not http(s), a negative timeout.
void check_mcp_server(const std::string& name, const McpServerConfig& server);

}  // namespace sg::detail
