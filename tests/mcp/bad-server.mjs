// SPDX-License-Identifier: MIT
// An MCP server over stdio written by hand (raw JSON-RPC lines, no SDK), so that it can misbehave
// on purpose for the client's tests. Its mode is the first argument:
//   good             a well-behaved server with tools that exercise the client (below)
//   paged            good, and tools/list returns two tools per page
//   wrong-version    answers initialize with protocol version 1999-01-01
//   hang-initialize  never answers initialize
//   exit-at-start    writes a line to stderr and exits with status 7 at once
//   stubborn         good, but ignores SIGTERM and the end of its stdin (only SIGKILL ends it)
// Tools of the good modes:
//   echo {text}          -> "echo: <text>"
//   crash                -> writes "about to crash" to stderr and exits with status 3
//   malformed {answer}   -> writes a line that is not JSON; then the answer if `answer` is true
//   no-result            -> answers {"jsonrpc": "2.0", "id": <id>}: neither result nor error
//   hang                 -> never answers
//   slow {ms}            -> answers "slept <ms>" after ms, with a progress notification every
//                           100 ms when the request has a progressToken
//   cancellations        -> the notifications/cancelled received so far, as JSON text
//   ping-client          -> sends the client a ping, answers with the client's answer as JSON
//   ask-client {method}  -> sends the client a request `method`, answers with its answer as JSON
//   add-tool {name}      -> adds a tool `name` (answering "<name> works") and sends
//                           notifications/tools/list_changed
//   pid                  -> this process's pid
//   initializations      -> how many initialize requests this process got
import process from "node:process";

const mode = process.argv[2] ?? "good";
if (mode === "exit-at-start") {
  process.stderr.write("exit-at-start: giving up\n");
  process.exit(7);
}
if (mode === "stubborn") process.on("SIGTERM", () => {});

const text = (t) => ({ type: "text", text: t });
const schema = (properties = {}) => ({ type: "object", properties });
const tools = [
  { name: "echo", description: "Echoes text.", inputSchema: schema({ text: { type: "string" } }) },
  { name: "crash", description: "Exits with status 3.", inputSchema: schema() },
  { name: "malformed", description: "Writes a line that is not JSON.", inputSchema: schema({ answer: { type: "boolean" } }) },
  { name: "no-result", description: "Answers without result or error.", inputSchema: schema() },
  { name: "hang", description: "Never answers.", inputSchema: schema() },
  { name: "slow", description: "Answers after ms milliseconds.", inputSchema: schema({ ms: { type: "number" } }) },
  { name: "cancellations", description: "The cancellations received.", inputSchema: schema() },
  { name: "ping-client", description: "Pings the client.", inputSchema: schema() },
  { name: "ask-client", description: "Sends the client a request.", inputSchema: schema({ method: { type: "string" } }) },
  { name: "add-tool", description: "Adds a tool.", inputSchema: schema({ name: { type: "string" } }) },
  { name: "pid", description: "This process's pid.", inputSchema: schema() },
  { name: "initializations", description: "Initialize requests so far.", inputSchema: schema() },
];
const added = new Set();
const cancellations = [];
const waiting = new Map(); // id of a request to the client -> the tools/call id to answer
let initializations = 0;
let nextId = 1;

const send = (message) => process.stdout.write(JSON.stringify(message) + "\n");
const result = (id, r) => send({ jsonrpc: "2.0", id, result: r });

function call(id, name, args, meta) {
  switch (name) {
    case "echo":
      return result(id, { content: [text(`echo: ${args.text ?? ""}`)] });
    case "crash":
      process.stderr.write("about to crash\n");
      return process.exit(3);
    case "malformed":
      process.stdout.write("this is not JSON\n");
      if (args.answer) result(id, { content: [text("answered after a bad line")] });
      return;
    case "no-result":
      return send({ jsonrpc: "2.0", id });
    case "hang":
      return;
    case "slow": {
      const ms = args.ms ?? 500;
      const token = meta?.progressToken;
      let step = 0;
      const timer = token === undefined ? null : setInterval(() => {
        step += 1;
        send({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: token, progress: step, message: `step ${step}` } });
      }, 100);
      setTimeout(() => {
        if (timer) clearInterval(timer);
        result(id, { content: [text(`slept ${ms}`)] });
      }, ms);
      return;
    }
    case "cancellations":
      return result(id, { content: [text(JSON.stringify(cancellations))] });
    case "ping-client":
    case "ask-client": {
      const ask = nextId++;
      waiting.set(`s${ask}`, id);
      return send({ jsonrpc: "2.0", id: `s${ask}`, method: name === "ping-client" ? "ping" : args.method, params: {} });
    }
    case "add-tool":
      added.add(args.name);
      result(id, { content: [text(`added ${args.name}`)] });
      return send({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
    case "pid":
      return result(id, { content: [text(String(process.pid))] });
    case "initializations":
      return result(id, { content: [text(String(initializations))] });
    default:
      if (added.has(name)) return result(id, { content: [text(`${name} works`)] });
      return send({ jsonrpc: "2.0", id, error: { code: -32602, message: `Unknown tool: ${name}` } });
  }
}

function handle(message) {
  const { id, method, params } = message;
  if (method === undefined) { // an answer to one of our requests
    const callId = waiting.get(id);
    if (callId !== undefined) {
      waiting.delete(id);
      result(callId, { content: [text(JSON.stringify(message))] });
    }
    return;
  }
  if (id === undefined) { // a notification
    if (method === "notifications/cancelled") cancellations.push(params);
    return;
  }
  switch (method) {
    case "initialize":
      initializations += 1;
      if (mode === "hang-initialize") return;
      return result(id, {
        protocolVersion: mode === "wrong-version" ? "1999-01-01" : params.protocolVersion,
        capabilities: { tools: { listChanged: true } },
        serverInfo: { name: "bad-server", version: "1.0.0" },
      });
    case "ping":
      return result(id, {});
    case "tools/list": {
      const all = [...tools, ...[...added].map((name) => ({ name, description: "An added tool.", inputSchema: schema() }))];
      if (mode !== "paged") return result(id, { tools: all });
      const start = params?.cursor ? Number(params.cursor) : 0;
      const page = all.slice(start, start + 2);
      return result(id, start + 2 < all.length ? { tools: page, nextCursor: String(start + 2) } : { tools: page });
    }
    case "tools/call":
      return call(id, params.name, params.arguments ?? {}, params._meta);
    default:
      return send({ jsonrpc: "2.0", id, error: { code: -32601, message: `Method not found: ${method}` } });
  }
}

let buffer = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffer += chunk;
  let nl;
  while ((nl = buffer.indexOf("\n")) >= 0) {
    const line = buffer.slice(0, nl);
    buffer = buffer.slice(nl + 1);
    if (line.trim() !== "") handle(JSON.parse(line));
  }
});
process.stdin.on("end", () => {
  if (mode === "stubborn") setInterval(() => {}, 1000); // stays
  else process.exit(0);
});
