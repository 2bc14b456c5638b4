// SPDX-License-Identifier: MIT
#pragma once
// The Model Context Protocol as POST /mcp speaks it (mcp.cpp): the revisions, the JSON-RPC error
// codes and the size of a tools/list page.
#include <array>
#include <cstddef>
#include <string_view>

namespace sg::server::mcp {

/// The protocol revisions the server speaks, newest first: those the official TypeScript SDK of
/// tests/mcp supports. `initialize` answers with the client's revision when it is one of them,
/// else with the newest; an MCP-Protocol-Version header naming another is a 400.
inline constexpr std::array<std::string_view, 5> kProtocolVersions = {
    "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"};

/// Whether `version` is one of kProtocolVersions.
[[nodiscard]] constexpr bool supported_version(std::string_view version) noexcept {
  for (const std::string_view v : kProtocolVersions) {
    if (v == version) return true;
  }
  return false;
}

/// JSON-RPC 2.0's error codes.
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;

/// Tools of one tools/list page; a `nextCursor` follows when there are more.
inline constexpr std::size_t kToolsPerPage = 100;

}  // namespace sg::server::mcp
