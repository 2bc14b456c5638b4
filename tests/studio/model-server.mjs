// SPDX-License-Identifier: MIT
// A loopback OpenAI-compatible model for the studio test (POST /v1/chat/completions, streamed):
// it streams its reply a word every 60 ms so that the page's token-by-token rendering can be
// seen. Rules: a user message naming `multiply` with two numbers calls the multiply tool (when
// offered); "get_weather CITY" calls get_weather (when offered); after a tool result it says
// "The TOOL tool says: RESULT"; a message with
// "slowly" gets 100 words, one every 300 ms (a run to cancel); otherwise it answers
// "You said: TEXT". Prints its base URL on stdout; stops with the process.
import { createServer } from "node:http";

const WORD_MS = 60;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function reply(request) {
  const messages = request.messages ?? [];
  const last = messages[messages.length - 1] ?? {};
  const content = typeof last.content === "string" ? last.content : JSON.stringify(last.content);
  if (last.role === "tool") {
    const call = messages.flatMap((m) => m.tool_calls ?? []).find((c) => c.id === last.tool_call_id);
    return { text: `The ${call?.function?.name ?? "multiply"} tool says: ${content}` };
  }
  const offers = (name) => (request.tools ?? []).some((t) => t.function?.name === name);
  const city = content.match(/get_weather\s+(\S+)/);
  if (city && offers("get_weather")) {
    return { call: { name: "get_weather", arguments: JSON.stringify({ city: city[1] }) } };
  }
  const numbers = content.match(/-?\d+(\.\d+)?/g) ?? [];
  if (offers("multiply") && /multiply/i.test(content) && numbers.length >= 2) {
    return { call: { name: "multiply", arguments: JSON.stringify({ a: Number(numbers[0]), b: Number(numbers[1]) }) } };
  }
  if (/slowly/i.test(content)) return { text: "and so on ".repeat(50), wordMs: 300 };
  return { text: `You said: ${content}` };
}

const server = createServer(async (req, res) => {
  let body = "";
  for await (const piece of req) body += piece;
  if (req.method !== "POST" || !req.url.endsWith("/chat/completions")) {
    res.writeHead(404, { "Content-Type": "application/json" }).end('{"error":{"message":"not found"}}');
    return;
  }
  const request = JSON.parse(body);
  const answer = reply(request);
  const base = { id: `chatcmpl-${Date.now()}`, object: "chat.completion.chunk", created: 1700000000, model: request.model ?? "loopback" };
  res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
  const send = (delta, finish) =>
    res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
  send({ role: "assistant", content: "" }, null);
  if (answer.call) {
    send({ tool_calls: [{ index: 0, id: `call_${Date.now()}`, type: "function", function: answer.call }] }, null);
    send({}, "tool_calls");
  } else {
    for (const word of answer.text.split(/(?<= )/)) {
      await sleep(answer.wordMs ?? WORD_MS);
      if (res.destroyed) return; // the client went away (a cancelled run)
      send({ content: word }, null);
    }
    send({}, "stop");
  }
  res.end("data: [DONE]\n\n");
});

server.listen(0, "127.0.0.1", () => {
  console.log(`http://127.0.0.1:${server.address().port}/v1`);
});
