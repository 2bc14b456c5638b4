// SPDX-License-Identifier: MIT
// `stategraph serve`'s /mcp driven by the official MCP clients from npm: the TypeScript SDK's
// Client over StreamableHTTPClientTransport, and the inspector's CLI mode
// (`mcp-inspector --cli URL --transport http --method tools/list | tools/call`). The server
// serves the built-in graphs with an API key (run-server.sh starts it).
//
// Environment:
//   SG_MCP_URL   the server's /mcp (required), e.g. http://127.0.0.1:2024/mcp
//   SG_API_KEY   its x-api-key (required)

import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, LATEST_PROTOCOL_VERSION, McpError } from "@modelcontextprotocol/sdk/types.js";

const MCP_URL = process.env.SG_MCP_URL;
const API_KEY = process.env.SG_API_KEY;
if (!MCP_URL || !API_KEY) throw new Error("SG_MCP_URL and SG_API_KEY are required");
const API_URL = MCP_URL.replace(/\/mcp$/, "");
const TEST_TIMEOUT = 120_000;

/// A connected SDK client; `headers` go with every request.
async function connect(headers = { "x-api-key": API_KEY }) {
  const client = new Client({ name: "stategraph-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(MCP_URL), {
    requestInit: { headers },
  });
  await client.connect(transport);
  return { client, transport };
}

/// `{messages: [{role: "user", content: text}]}`, and a thread_id when given.
function humanInput(text, threadId) {
  const input = { messages: [{ role: "user", content: text }] };
  if (threadId) input.thread_id = threadId;
  return input;
}

/// The output of a successful tools/call: its one text content, parsed.
function outputOf(result) {
  assert.equal(result.isError ?? false, false, JSON.stringify(result));
  assert.equal(result.content.length, 1);
  assert.equal(result.content[0].type, "text");
  return JSON.parse(result.content[0].text);
}

const contents = (values) => values.messages.map((m) => m.content);

/// GET `path` of the server's LangGraph API.
async function apiGet(path) {
  const response = await fetch(API_URL + path, { headers: { "x-api-key": API_KEY } });
  assert.equal(response.status, 200, `${path}: ${response.status}`);
  return response.json();
}

describe("the TypeScript SDK's Client", { timeout: TEST_TIMEOUT }, () => {
  let client;
  let transport;
  before(async () => {
    ({ client, transport } = await connect());
  });
  after(async () => {
    await client?.close();
  });

  test("connects statelessly on the newest revision of the SDK", async () => {
    assert.equal(transport.protocolVersion, LATEST_PROTOCOL_VERSION);
    assert.equal(transport.sessionId, undefined);
    assert.equal(client.getServerVersion().name, "stategraph");
    assert.ok(client.getServerCapabilities().tools);
    assert.deepEqual(await client.ping(), {});
  });

  test("lists a tool per built-in graph, with its input schema and a thread_id", async () => {
    const { tools, nextCursor } = await client.listTools();
    assert.equal(nextCursor, undefined);
    const names = tools.map((t) => t.name).sort();
    assert.deepEqual(names, ["agent", "approval_agent", "interrupt_agent", "react_agent", "summarize_and_trim"]);
    const agent = tools.find((t) => t.name === "agent");
    assert.equal(agent.inputSchema.type, "object");
    assert.equal(agent.inputSchema.properties.messages.type, "array");
    assert.equal(agent.inputSchema.properties.thread_id.type, "string");
    // The same schema as the assistant's, through the LangGraph API.
    const schemas = await apiGet("/assistants/agent/schemas");
    const { thread_id: _, ...properties } = agent.inputSchema.properties;
    assert.deepEqual(properties, schemas.input_schema.properties);
  });

  test("calls a graph statelessly and gets its output as JSON", async () => {
    const result = await client.callTool({ name: "agent", arguments: humanInput("hello") });
    assert.deepEqual(contents(outputOf(result)), ["hello", "echo: hello"]);
    assert.equal(result.structuredContent, undefined);
  });

  test("calls on a thread, which the LangGraph API then reads", async () => {
    const threadId = randomUUID();
    await client.callTool({ name: "agent", arguments: humanInput("one", threadId) });
    const second = await client.callTool({ name: "agent", arguments: humanInput("two", threadId) });
    assert.deepEqual(contents(outputOf(second)), ["one", "echo: one", "two", "echo: two"]);
    const state = await apiGet(`/threads/${threadId}/state`);
    assert.deepEqual(contents(state.values), ["one", "echo: one", "two", "echo: two"]);
  });

  test("an interrupt is a tool error with the question, the thread left waiting", async () => {
    const threadId = randomUUID();
    const result = await client.callTool({
      name: "interrupt_agent",
      arguments: humanInput("plan", threadId),
    });
    assert.equal(result.isError, true);
    assert.match(result.content[0].text, /what next\?/);
    assert.equal((await apiGet(`/threads/${threadId}`)).status, "interrupted");
  });

  test("bad arguments are a tool error, an unknown tool a JSON-RPC error", async () => {
    const bad = await client.callTool({ name: "agent", arguments: { messages: 5 } });
    assert.equal(bad.isError, true);
    assert.match(bad.content[0].text, /messages/);
    await assert.rejects(
      client.callTool({ name: "no_such_tool", arguments: {} }),
      (e) => e instanceof McpError && e.code === ErrorCode.InvalidParams &&
        /Unknown tool: no_such_tool/.test(e.message),
    );
  });

  test("1,000 calls wait on their graphs at once", async () => {
    // Each run's node waits 2 s on a timer ("sleep:2000"); the server has 2 threads.
    const calls = 1000;
    const began = performance.now();
    const results = await Promise.all(
      Array.from({ length: calls }, (_, i) =>
        client.callTool({ name: "agent", arguments: humanInput(`sleep:2000 #${i}`) }, undefined, {
          timeout: TEST_TIMEOUT,
        })),
    );
    const seconds = (performance.now() - began) / 1000;
    results.forEach((result, i) => {
      assert.equal(contents(outputOf(result)).at(-1), `echo: sleep:2000 #${i}`);
    });
    console.log(`# ${calls} concurrent tools/call of 2 s each answered in ${seconds.toFixed(2)} s`);
    // One after another they would take 2,000 s; a tenth of that still means they overlapped.
    assert.ok(seconds < 200, `${seconds} s`);
  });
});

test("without the API key the SDK's client cannot connect: a 401", { timeout: TEST_TIMEOUT },
  async () => {
    await assert.rejects(connect({}), (e) => /401/.test(String(e?.code ?? "") + e.message));
  });

describe("the inspector's CLI mode", { timeout: TEST_TIMEOUT }, () => {
  const inspectorBin = join(import.meta.dirname, "node_modules", ".bin", "mcp-inspector");
  // Its catalog and stored logins go to a home of its own.
  let home;
  before(() => {
    home = mkdtempSync(join(tmpdir(), "sg-mcp-inspector-"));
  });
  after(() => rmSync(home, { recursive: true, force: true }));
  const inspect = (args, { key = API_KEY } = {}) =>
    promisify(execFile)(
      inspectorBin,
      ["--cli", MCP_URL, "--transport", "http", "--format", "json", "--stored-auth-only",
        ...(key ? ["--header", `x-api-key: ${key}`] : []), ...args],
      { env: { ...process.env, HOME: home }, timeout: 60_000 },
    );

  test("--method tools/list lists the graphs", async () => {
    const { stdout } = await inspect(["--method", "tools/list"]);
    const { result } = JSON.parse(stdout);
    assert.deepEqual(result.tools.map((t) => t.name).sort(),
      ["agent", "approval_agent", "interrupt_agent", "react_agent", "summarize_and_trim"]);
  });

  test("--method tools/call runs one, with --tool-arg arguments", async () => {
    const threadId = randomUUID();
    const { stdout } = await inspect([
      "--method", "tools/call", "--tool-name", "agent",
      "--tool-arg", `messages=${JSON.stringify([{ role: "user", content: "from the inspector" }])}`,
      "--tool-arg", `thread_id=${threadId}`,
    ]);
    const { result } = JSON.parse(stdout);
    assert.deepEqual(contents(outputOf(result)), ["from the inspector", "echo: from the inspector"]);
    const state = await apiGet(`/threads/${threadId}/state`);
    assert.deepEqual(contents(state.values), ["from the inspector", "echo: from the inspector"]);
  });

  test("without the API key it fails, and says so", async () => {
    await assert.rejects(inspect(["--method", "tools/list"], { key: null }),
      (e) => e.code !== 0 && /auth|401/i.test(e.stdout + e.stderr));
  });
});

describe("react_agent with the tools of server-everything (serve --mcp)", { timeout: TEST_TIMEOUT }, () => {
  /// The messages of a react_agent run as [type, name, content, tool call names].
  const summary = (messages) =>
    messages.map((m) => [m.type, m.name ?? "", m.content, (m.tool_calls ?? []).map((c) => c.name)]);

  test("answers through the LangGraph API with server-everything's echo tool", async () => {
    const response = await fetch(`${API_URL}/runs/wait`, {
      method: "POST",
      headers: { "x-api-key": API_KEY, "content-type": "application/json" },
      body: JSON.stringify({
        assistant_id: "react_agent",
        input: { messages: [{ type: "human", content: "echo hello from MCP" }] },
      }),
    });
    assert.equal(response.status, 200);
    const { messages } = await response.json();
    assert.deepEqual(summary(messages), [
      ["human", "", "echo hello from MCP", []],
      ["ai", "", "", ["echo"]],
      ["tool", "echo", "Echo: hello from MCP", []],
      ["ai", "", "The echo tool says: Echo: hello from MCP", []],
    ]);
    assert.deepEqual(messages[1].tool_calls[0].args, { message: "hello from MCP" });
    assert.equal(messages[2].status, "success");
  });

  test("answers through /mcp, with server-everything's get-sum tool", async () => {
    const { client } = await connect();
    try {
      const result = await client.callTool({ name: "react_agent", arguments: humanInput("get-sum 2 and 40") });
      const { messages } = outputOf(result);
      assert.deepEqual(summary(messages).slice(1), [
        ["ai", "", "", ["get-sum"]],
        ["tool", "get-sum", "The sum of 2 and 40 is 42.", []],
        ["ai", "", "The get-sum tool says: The sum of 2 and 40 is 42.", []],
      ]);
    } finally {
      await client.close();
    }
  });
});
