// SPDX-License-Identifier: MIT
// A Streamable HTTP MCP server on the official SDK (its low-level Server and its
// StreamableHTTPServerTransport), for the client's HTTP tests. Listens on 127.0.0.1 and prints
// "listening on <port>". Environment:
//   PORT                 the port (default: any free one)
//   MCP_TOKEN            requests need "Authorization: Bearer <token>" (401 otherwise)
//   MCP_JSON_RESPONSE=1  replies are JSON bodies instead of SSE streams
// Paths: /mcp (stateful sessions: a POST with an unknown session id gets 404), /broken (always
// HTTP 500 with a JSON-RPC error body). Tools:
//   echo {text}       -> "echo: <text>"
//   slow {ms}         -> "slept <ms>", with a progress notification every 100 ms when asked
//   expire-session    -> answers, then forgets the session (its next request gets 404)
//   initializations   -> how many sessions were initialized
import http from "node:http";
import { randomUUID } from "node:crypto";
import process from "node:process";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const token = process.env.MCP_TOKEN;
const json = process.env.MCP_JSON_RESPONSE === "1";
const transports = new Map();
let initializations = 0;

const text = (t) => ({ content: [{ type: "text", text: t }] });
const tools = [
  { name: "echo", description: "Echoes text.", inputSchema: { type: "object", properties: { text: { type: "string" } } } },
  { name: "slow", description: "Answers after ms milliseconds.", inputSchema: { type: "object", properties: { ms: { type: "number" } } } },
  { name: "expire-session", description: "Forgets this session.", inputSchema: { type: "object", properties: {} } },
  { name: "initializations", description: "Sessions initialized so far.", inputSchema: { type: "object", properties: {} } },
];

function makeServer(sessionOf) {
  const server = new Server({ name: "http-test-server", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const args = request.params.arguments ?? {};
    switch (request.params.name) {
      case "echo":
        return text(`echo: ${args.text ?? ""}`);
      case "slow": {
        const ms = args.ms ?? 300;
        const progressToken = request.params._meta?.progressToken;
        for (let done = 0, step = 0; done < ms; done += 100) {
          await new Promise((r) => setTimeout(r, Math.min(100, ms - done)));
          if (progressToken !== undefined) {
            step += 1;
            await extra.sendNotification({ method: "notifications/progress", params: { progressToken, progress: step } });
          }
        }
        return text(`slept ${ms}`);
      }
      case "expire-session": {
        const id = sessionOf();
        setTimeout(() => transports.delete(id), 50);
        return text(`expiring ${id}`);
      }
      case "initializations":
        return text(String(initializations));
      default:
        throw new Error(`Unknown tool: ${request.params.name}`);
    }
  });
  return server;
}

async function body(req) {
  let data = "";
  for await (const chunk of req) data += chunk;
  return data === "" ? undefined : JSON.parse(data);
}

const httpServer = http.createServer(async (req, res) => {
  const reject = (status, message) => {
    res.writeHead(status, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }));
  };
  if (token !== undefined && req.headers.authorization !== `Bearer ${token}`) return reject(401, "Unauthorized");
  const path = new URL(req.url, "http://localhost").pathname;
  if (path === "/broken") {
    res.writeHead(500, { "Content-Type": "application/json" });
    return res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32603, message: "the server is broken" }, id: null }));
  }
  if (path !== "/mcp") return reject(404, "Not found");
  const sessionId = req.headers["mcp-session-id"];
  const parsed = req.method === "POST" ? await body(req) : undefined;
  if (sessionId !== undefined) {
    const transport = transports.get(sessionId);
    if (transport === undefined) return reject(404, "Session not found");
    return transport.handleRequest(req, res, parsed);
  }
  if (req.method !== "POST" || parsed?.method !== "initialize") return reject(400, "Bad Request: No valid session ID provided");
  initializations += 1;
  let transport;
  transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    enableJsonResponse: json,
    onsessioninitialized: (id) => transports.set(id, transport),
  });
  const server = makeServer(() => transport.sessionId);
  await server.connect(transport);
  await transport.handleRequest(req, res, parsed);
});

httpServer.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  console.log(`listening on ${httpServer.address().port}`);
});
