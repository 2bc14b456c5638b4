// SPDX-License-Identifier: MIT
// What LangChain's @langchain/mcp-adapters makes of MCP tool results: calls tools of
// server-everything (over stdio) through MultiServerMCPClient's tools and prints the ToolMessages
// (content, artifact, status) as a JSON array, one entry per call, for the client's tests to
// compare with.
//   usage: node adapters-results.mjs SERVER_EVERYTHING_JS '[["tool", {args}], ...]' [standard]
import process from "node:process";
import { MultiServerMCPClient } from "@langchain/mcp-adapters";

const [serverJs, callsJson, standard] = process.argv.slice(2);
const client = new MultiServerMCPClient({
  mcpServers: { everything: { command: process.execPath, args: [serverJs], stderr: "ignore" } },
  useStandardContentBlocks: standard === "standard",
});
const tools = await client.getTools();
const out = [];
for (const [name, args] of JSON.parse(callsJson)) {
  const tool = tools.find((t) => t.name === name);
  const message = await tool.invoke({ type: "tool_call", id: "call-1", name, args });
  out.push({ name, content: message.content, artifact: message.artifact ?? null, status: message.status });
}
await client.close();
process.stdout.write(JSON.stringify(out));
