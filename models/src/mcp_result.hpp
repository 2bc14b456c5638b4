// SPDX-License-Identifier: MIT
#pragma once
// MCP tools as LangChain sees them, following @langchain/mcp-adapters: a tool's input schema for
// the model, and a tools/call result as a ToolMessage (content blocks, artifact). Pure functions.

#include <stategraph/core/message.hpp>
#include <stategraph/models/mcp.hpp>

#include <nlohmann/json.hpp>

#include <string>

namespace sg::detail {

/// The ToolMessage of a tools/call result: its content blocks in LangChain's shapes (a lone text
/// block as a plain string), the artifact (embedded resources by default, structuredContent as
/// `{type: mcp_structured_content, data}`, `_meta` as `{type: mcp_meta, data}`) in
/// additional_kwargs["artifact"] when there is one; status "success". Throws McpError
/// (errc::kMcpToolError) for an isError result, (errc::kMcpProtocol) for a result of the wrong
/// shape or a content block of an unknown type.
[[nodiscard]] Message mcp_tool_message(const nlohmann::json& result, const std::string& server,
                                       const std::string& tool, const McpClientOptions& options);

/// A tool's inputSchema as the model gets it: local `$ref`s to `$defs`/`definitions` inlined
/// (a circular one becomes `{type: object}`), `$schema` dropped, `type: object` and
/// `properties` present.
[[nodiscard]] nlohmann::json mcp_tool_schema(const nlohmann::json& input_schema);

}  // namespace sg::detail
