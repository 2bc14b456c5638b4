// SPDX-License-Identifier: MIT
// A page on another origin calls `stategraph serve` from a real browser (Debian's chromium,
// playwright-core), as the browser UIs do (agent-chat-ui, pages built on useStream): every route
// they use, with the API key, so that each call is preflighted. The server's default CORS allows
// pages of this machine; a page elsewhere (ui.test, resolved to 127.0.0.1 by chromium alone) is
// refused. STUDIO_URL, STUDIO_API_KEY as for studio.test.mjs.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";
import { chromium } from "playwright-core";

const url = process.env.STUDIO_URL;
const key = process.env.STUDIO_API_KEY;
const chromiumPath = process.env.STUDIO_CHROMIUM ?? "/usr/bin/chromium";

let browser;
let pages; // the page server
let pagePort;

before(async () => {
  pages = createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end("<!doctype html><title>ui</title><p>a UI on another origin</p>");
  });
  await new Promise((resolve) => pages.listen(0, "127.0.0.1", resolve));
  pagePort = pages.address().port;
  browser = await chromium.launch({
    executablePath: chromiumPath,
    args: ["--no-sandbox", "--host-resolver-rules=MAP ui.test 127.0.0.1"],
  });
});

after(async () => {
  await browser?.close();
  pages?.close();
});

/** A fresh page at `origin`, with console errors collected. */
async function pageAt(origin) {
  const page = await browser.newPage();
  const errors = [];
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${origin}/`);
  return { page, errors };
}

// Runs in the page: the calls of a chat UI, in order. Returns what it saw.
async function chatSession([base, apiKey]) {
  const call = async (method, path, body) => {
    const response = await fetch(base + path, {
      method,
      headers: { "content-type": "application/json", "x-api-key": apiKey },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return { response, text, json: () => JSON.parse(text) };
  };
  const seen = {};
  seen.info = (await call("GET", "/info")).json().flags;
  const [assistant] = (await call("POST", "/assistants/search", { graph_id: "agent" })).json();
  seen.assistant = assistant.graph_id;
  await call("GET", `/assistants/${assistant.assistant_id}`);
  await call("GET", `/assistants/${assistant.assistant_id}/graph`);
  const thread = (await call("POST", "/threads", { metadata: { ui: "cross-origin" } })).json();
  const search = await call("POST", "/threads/search", { metadata: { ui: "cross-origin" } });
  seen.total = search.response.headers.get("x-pagination-total");
  const input = { messages: [{ type: "human", content: "hi from the page" }] };
  const stream = await call("POST", `/threads/${thread.thread_id}/runs/stream`, {
    assistant_id: assistant.assistant_id,
    input,
    stream_mode: ["values", "messages-tuple"],
  });
  seen.streamType = stream.response.headers.get("content-type");
  seen.events = [...stream.text.matchAll(/^event: (.*)$/gm)].map((m) => m[1]);
  const state = (await call("GET", `/threads/${thread.thread_id}/state`)).json();
  seen.last = state.values.messages.at(-1).content;
  const history = (await call("POST", `/threads/${thread.thread_id}/history`, { limit: 10 })).json();
  seen.history = history.length;
  const run = (
    await call("POST", `/threads/${thread.thread_id}/runs`, {
      assistant_id: assistant.assistant_id,
      input: { messages: [{ type: "human", content: "again" }] },
    })
  ).json();
  await call("GET", `/threads/${thread.thread_id}/runs/${run.run_id}/join`);
  seen.runs = (await call("GET", `/threads/${thread.thread_id}/runs`)).json().length;
  await call("GET", `/threads/${thread.thread_id}/runs/${run.run_id}`);
  const waited = (
    await call("POST", `/threads/${thread.thread_id}/runs/wait`, {
      assistant_id: assistant.assistant_id,
      input: { messages: [{ type: "human", content: "third" }] },
    })
  ).json();
  seen.waited = waited.messages.at(-1).content;
  await call("PATCH", `/threads/${thread.thread_id}`, { metadata: { title: "renamed" } });
  const copy = (await call("POST", `/threads/${thread.thread_id}/copy`)).json();
  await call("DELETE", `/threads/${copy.thread_id}`);
  await call("PUT", "/store/items", { namespace: ["ui"], key: "k", value: { v: 1 } });
  seen.item = (await call("GET", "/store/items?namespace=ui&key=k")).json().value;
  await call("POST", "/store/items/search", { namespace_prefix: ["ui"] });
  await call("DELETE", "/store/items", { namespace: ["ui"], key: "k" });
  await call("DELETE", `/threads/${thread.thread_id}`);
  return seen;
}

test("a page of this machine on another origin calls every route a chat UI uses", async () => {
  const { page, errors } = await pageAt(`http://127.0.0.1:${pagePort}`);
  const seen = await page.evaluate(chatSession, [url, key]);
  assert.equal(seen.assistant, "agent");
  assert.equal(typeof seen.info, "object");
  assert.equal(seen.total, "1"); // an exposed header the page can read
  assert.match(seen.streamType, /^text\/event-stream/);
  assert.ok(seen.events.includes("values"), seen.events.join());
  assert.ok(seen.events.includes("messages"), seen.events.join());
  assert.equal(seen.last, "echo: hi from the page");
  assert.ok(seen.history >= 2, `history ${seen.history}`);
  assert.equal(seen.runs, 2); // the streamed run and the background one
  assert.equal(seen.waited, "echo: third");
  assert.deepEqual(seen.item, { v: 1 });
  assert.deepEqual(errors, []);
  await page.close();
});

test("a page elsewhere is refused: the browser blocks its calls", async () => {
  const { page, errors } = await pageAt(`http://ui.test:${pagePort}`);
  const outcome = await page.evaluate(async ([base, apiKey]) => {
    try {
      await fetch(`${base}/threads/search`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": apiKey },
        body: "{}",
      });
      return "answered";
    } catch (e) {
      return `${e.name}: ${e.message}`;
    }
  }, [url, key]);
  assert.match(outcome, /^TypeError/);
  assert.ok(errors.some((e) => /CORS/.test(e)), errors.join("\n"));
  await page.close();
});
