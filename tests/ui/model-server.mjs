// SPDX-License-Identifier: MIT
// A loopback OpenAI-compatible chat model for the UI tests (POST /v1/chat/completions). It
// answers "You said: TEXT" to the last message, a word every 40 ms; a message with "slowly"
// gets "and so on" 34 times, a word every 250 ms (a reply to stop). Asked to stream, it sends
// the words as they come; else the whole reply once it is done. GET /v1/stats tells the tests
// what it saw: the requests, the messages of the last one, and the replies it gave up because
// the caller hung up (a cancelled run). Prints its base URL on stdout; stops with the process.
import { createServer } from "node:http";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const stats = { requests: 0, lastMessages: [], abandoned: 0 };

function reply(messages) {
  const last = messages.at(-1) ?? {};
  const text = typeof last.content === "string" ? last.content : JSON.stringify(last.content);
  if (/slowly/i.test(text)) return { words: "and so on ".repeat(34).trim().split(" "), wordMs: 250 };
  return { words: `You said: ${text}`.split(" "), wordMs: 40 };
}

const server = createServer(async (req, res) => {
  let body = "";
  for await (const piece of req) body += piece;
  if (req.method === "GET" && req.url.endsWith("/stats")) {
    res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(stats));
    return;
  }
  if (req.method !== "POST" || !req.url.endsWith("/chat/completions")) {
    res.writeHead(404, { "Content-Type": "application/json" }).end('{"error":{"message":"not found"}}');
    return;
  }
  const request = JSON.parse(body);
  stats.requests += 1;
  stats.lastMessages = request.messages ?? [];
  const { words, wordMs } = reply(stats.lastMessages);
  let gone = false; // the caller hung up before the reply was done
  res.on("close", () => (gone = true));
  const head = { id: `chatcmpl-${stats.requests}`, created: 1700000000, model: request.model ?? "loopback" };
  const chunk = (delta, finish = null) =>
    `data: ${JSON.stringify({ ...head, object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  if (request.stream) {
    res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
    res.write(chunk({ role: "assistant", content: "" }));
  }
  for (const [i, word] of words.entries()) {
    await sleep(wordMs);
    if (gone) {
      stats.abandoned += 1;
      return;
    }
    if (request.stream) res.write(chunk({ content: i === 0 ? word : ` ${word}` }));
  }
  if (request.stream) {
    res.end(chunk({}, "stop") + "data: [DONE]\n\n");
  } else {
    const message = { role: "assistant", content: words.join(" ") };
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ ...head, object: "chat.completion", choices: [{ index: 0, message, finish_reason: "stop" }] }));
  }
});

server.listen(0, "127.0.0.1", () => {
  console.log(`http://127.0.0.1:${server.address().port}/v1`);
});
