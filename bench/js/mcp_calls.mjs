#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// LangGraph.js side of stategraph-bench mcp_calls: MCP tool calls through LangChain's MCP adapters
// (@langchain/mcp-adapters' MultiServerMCPClient, what LangGraph.js agents load MCP tools with),
// against the reference server @modelcontextprotocol/server-everything's `echo` tool:
//   - stdio: the client spawns the server; `--calls` calls one after another;
//   - http: Streamable HTTP to a server started by the caller (--url); `--calls` calls one after
//     another, then `--concurrent` calls all at once.
// Prints one JSON line with the fields the C++ side reports (both transports, as "variants",
// when --transport is not given). The packages are those of tests/mcp (`npm ci` there).
//
//   node bench/js/mcp_calls.mjs --url http://127.0.0.1:PORT/mcp [--calls N] [--concurrent M]
//   node bench/js/mcp_calls.mjs --transport stdio|http [--url ...] ...
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const mcpDir = path.join(ROOT, "tests/mcp");
const require = createRequire(path.join(mcpDir, "package.json"));
const { MultiServerMCPClient } = await import(
  pathToFileURL(require.resolve("@langchain/mcp-adapters")).href
);

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const only = opt("--transport", "");
const url = opt("--url", "");
const calls = Number(opt("--calls", "2000"));
const concurrentCalls = Number(opt("--concurrent", "1000"));
if (only !== "stdio" && !url) throw new Error("--url is required for the http transport");

const everything = path.join(mcpDir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const threads = () => fs.readdirSync("/proc/self/task").length;
const cpuSeconds = (since) => {
  const c = process.cpuUsage(since);
  return (c.user + c.system) / 1e6;
};
const check = (reply, i) => {
  const text = typeof reply === "string" ? reply : JSON.stringify(reply);
  if (!text.includes(`Echo: m${i}`)) throw new Error(`call ${i}: unexpected reply ${text.slice(0, 200)}`);
};

async function measure(transport) {
  const server =
    transport === "stdio"
      ? { transport: "stdio", command: process.execPath, args: [everything, "stdio"], stderr: "ignore" }
      : { transport: "http", url };
  const client = new MultiServerMCPClient({ mcpServers: { everything: server }, useStandardContentBlocks: true });
  const tools = await client.getTools();
  const echo = tools.find((t) => t.name.endsWith("echo"));
  if (!echo) throw new Error("server-everything has no echo tool");
  for (let i = 0; i < 50; i++) check(await echo.invoke({ message: `m${i}` }), i); // warm up

  const out = { transport, calls };
  let cpu0 = process.cpuUsage();
  let t0 = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) check(await echo.invoke({ message: `m${i}` }), i);
  let wall = Number(process.hrtime.bigint() - t0) / 1e9;
  out.us_per_call = +((wall * 1e6) / calls).toFixed(1);
  out.client_cpu_us_per_call = +((cpuSeconds(cpu0) * 1e6) / calls).toFixed(1);
  if (transport === "http") {
    let threadsInFlight = threads();
    setTimeout(() => {
      threadsInFlight = threads();
    }, 50);
    cpu0 = process.cpuUsage();
    t0 = process.hrtime.bigint();
    const replies = await Promise.allSettled(
      Array.from({ length: concurrentCalls }, (_, i) => echo.invoke({ message: `m${i}` })),
    );
    wall = Number(process.hrtime.bigint() - t0) / 1e9;
    out.concurrent = concurrentCalls;
    out.concurrent_finished = replies.filter((r) => r.status === "fulfilled").length;
    out.concurrent_wall_s = +wall.toFixed(3);
    out.concurrent_client_cpu_s = +cpuSeconds(cpu0).toFixed(3);
    out.threads_in_flight = threadsInFlight;
  }
  await client.close();
  return out;
}

const result = { scenario: "mcp_calls" };
if (only) {
  Object.assign(result, await measure(only));
} else {
  result.variants = { stdio: await measure("stdio"), http: await measure("http") };
}
result.peak_rss_mb = +(process.resourceUsage().maxRSS / 1024).toFixed(1);
console.log(JSON.stringify(result));
