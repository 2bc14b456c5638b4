// SPDX-License-Identifier: MIT
// A Streamable HTTP MCP server written by hand (raw JSON-RPC over node:http, no SDK) that keeps
// every POST's SSE stream open after answering its request (the specification says a server
// SHOULD close it), for the client's HTTP tests. Listens on 127.0.0.1 ($PORT, default: any free
// port) and prints "listening on <port>". POST /mcp: a request gets an SSE reply whose one event
// answers it, and the stream is never ended; a notification or response gets 202. GET: 405.
// DELETE: 200. Tools:
//   echo {text}    -> "echo: <text>"
//   open-streams   -> how many answered POST streams the client still holds open (this
//                     request's own stream not counted)
import http from "node:http";
import { randomUUID } from "node:crypto";
import process from "node:process";

const sessionId = randomUUID();
const held = new Set(); // the answered streams not yet closed by the client

const text = (t) => ({ content: [{ type: "text", text: t }] });
const tools = [
  { name: "echo", description: "Echoes text.", inputSchema: { type: "object", properties: { text: { type: "string" } } } },
  { name: "open-streams", description: "Answered streams still open.", inputSchema: { type: "object", properties: {} } },
];

function answer(message) {
  const { method, params } = message;
  if (method === "initialize") {
    return {
      protocolVersion: params?.protocolVersion ?? "2025-06-18",
      capabilities: { tools: {} },
      serverInfo: { name: "held-stream-server", version: "1.0.0" },
    };
  }
  if (method === "ping") return {};
  if (method === "tools/list") return { tools };
  if (method === "tools/call") {
    const args = params?.arguments ?? {};
    if (params?.name === "echo") return text(`echo: ${args.text ?? ""}`);
    if (params?.name === "open-streams") return text(String(held.size));
  }
  return undefined;
}

async function body(req) {
  let data = "";
  for await (const chunk of req) data += chunk;
  return data;
}

const server = http.createServer(async (req, res) => {
  if (new URL(req.url, "http://localhost").pathname !== "/mcp") {
    res.writeHead(404).end();
    return;
  }
  if (req.method === "GET") {
    res.writeHead(405, { Allow: "POST, DELETE" }).end();
    return;
  }
  if (req.method === "DELETE") {
    res.writeHead(200).end();
    return;
  }
  let message;
  try {
    message = JSON.parse(await body(req));
  } catch {
    res.writeHead(400, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32700, message: "Parse error" }, id: null }));
    return;
  }
  if (message.method === undefined || message.id === undefined) {
    res.writeHead(202).end(); // a notification or a response
    return;
  }
  const result = answer(message);
  const reply =
    result === undefined
      ? { jsonrpc: "2.0", id: message.id, error: { code: -32601, message: `Method not found: ${message.method}` } }
      : { jsonrpc: "2.0", id: message.id, result };
  res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache", "Mcp-Session-Id": sessionId });
  res.write(`event: message\ndata: ${JSON.stringify(reply)}\n\n`);
  // Never ended: only the client closing the connection ends this stream.
  held.add(res);
  res.on("close", () => held.delete(res));
});

server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  console.log(`listening on ${server.address().port}`);
});
