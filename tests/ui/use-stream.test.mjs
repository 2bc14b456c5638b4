// SPDX-License-Identifier: MIT
// useStream (@langchain/langgraph-sdk/react) in a real browser (Debian's chromium, playwright-core)
// on another origin than `stategraph serve`: page.jsx, bundled with esbuild into a temp dir and
// served from http://ui.test:UI_PAGE_PORT (chromium alone maps ui.test to 127.0.0.1; the
// server allows that origin by --cors-allow-origin, and every call sends x-api-key, so each is
// preflighted). One conversation, test by test: a streamed reply on a new thread, a second turn,
// an edit that branches the thread, stop() on a slow reply, and a reload that opens the thread
// again. Any console error or uncaught exception on the page fails the test.
// Environment (run-ui.sh sets it): UI_URL, UI_API_KEY, UI_MODEL_URL, UI_PAGE_PORT, and what the
// graph does: UI_ASSISTANT_ID, UI_REPLY_PREFIX, UI_SLOW_INPUT (lib.mjs).
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { build } from "esbuild";
import { chromium } from "playwright-core";
import { assistant, client, expectedReply, key, modelStats, poll, slowInput, url } from "./lib.mjs";

const pagePort = Number(process.env.UI_PAGE_PORT);
const origin = `http://ui.test:${pagePort}`;
const chromiumPath = process.env.UI_CHROMIUM ?? "/usr/bin/chromium";

let bundleDir;
let pages; // the page server
let browser;
let page;
const problems = []; // console errors and uncaught exceptions
const apiCalls = []; // the page's calls to the server: method, url, x-api-key, CORS answer
const preflights = []; // chromium's answers to its preflights (seen through the DevTools protocol)

before(async () => {
  assert.ok(pagePort > 0, "UI_PAGE_PORT is not set");
  bundleDir = mkdtempSync(join(tmpdir(), "sg-ui-page-"));
  await build({
    entryPoints: [new URL("./page.jsx", import.meta.url).pathname],
    outfile: join(bundleDir, "page.js"),
    bundle: true,
    format: "esm",
    jsx: "automatic",
    define: { "process.env.NODE_ENV": '"development"' }, // React's checks on
    logLevel: "error",
  });
  const script = readFileSync(join(bundleDir, "page.js"));
  pages = createServer((req, res) => {
    if (req.url === "/page.js") {
      res.writeHead(200, { "content-type": "text/javascript" }).end(script);
    } else if (req.url === "/favicon.ico") {
      res.writeHead(204).end();
    } else {
      res.writeHead(200, { "content-type": "text/html" });
      res.end('<!doctype html><meta charset="utf-8"><title>chat</title><div id="root"></div><script type="module" src="/page.js"></script>');
    }
  });
  await new Promise((resolve) => pages.listen(pagePort, "127.0.0.1", resolve));
  browser = await chromium.launch({
    executablePath: chromiumPath,
    args: ["--no-sandbox", "--host-resolver-rules=MAP ui.test 127.0.0.1"],
  });
  page = await browser.newPage();
  page.setDefaultTimeout(10_000);
  page.on("console", (m) => m.type() === "error" && problems.push(`console: ${m.text()}`));
  page.on("pageerror", (e) => problems.push(`page: ${e.message}`));
  page.on("response", async (response) => {
    const request = response.request();
    if (!request.url().startsWith(url)) return;
    apiCalls.push({
      call: `${request.method()} ${request.url().slice(url.length)}`,
      apiKey: (await request.allHeaders())["x-api-key"],
      allowOrigin: (await response.allHeaders())["access-control-allow-origin"],
    });
  });
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Network.enable");
  cdp.on("Network.responseReceived", (e) => {
    if (e.type === "Preflight" && e.response.url.startsWith(url)) preflights.push(e.response);
  });
});

after(async () => {
  await browser?.close();
  pages?.close();
  if (bundleDir) rmSync(bundleDir, { recursive: true, force: true });
});

/** The rendered messages: [type, text] pairs. */
const rendered = () =>
  page.$$eval("#messages li", (items) => items.map((li) => [li.classList[1], li.querySelector(".text").textContent]));

/** Waits until useStream is idle with `count` messages rendered; returns them. Fails at once
 * when the page shows an error, and says what the page shows when it times out. */
async function settled(count) {
  const outcome = await page
    .waitForFunction(
      (n) =>
        (document.querySelector("#error") && "the page shows an error") ||
        (document.querySelector("main")?.dataset.loading === "false" && document.querySelectorAll("#messages li").length === n && "ok"),
      count,
      { timeout: 15_000 },
    )
    .then((handle) => handle.jsonValue(), () => `timed out waiting for ${count} messages`);
  if (outcome !== "ok") {
    const error = await page.locator("#error").allTextContents();
    assert.fail(`${outcome}: ${JSON.stringify({ rendered: await rendered(), error, problems })}`);
  }
  return rendered();
}

const text = (selector) => page.locator(selector).textContent();
const runIds = async () => (await text("#runs")).split(" ").filter(Boolean);

/** The thread's messages on the server, as [type, text] pairs. */
async function serverMessages(threadId) {
  const state = await client.threads.getState(threadId);
  return state.values.messages.map((m) => [m.type, m.content]);
}

/** Records every distinct text of the AI messages on the page, to see replies arrive in pieces. */
const watchReplies = () =>
  page.evaluate(() => {
    window.__texts = new Set();
    new MutationObserver(() => {
      for (const t of document.querySelectorAll("#messages li.ai .text")) window.__texts.add(t.textContent);
    }).observe(document.getElementById("messages"), { subtree: true, childList: true, characterData: true });
  });
const seenReplyTexts = () => page.evaluate(() => [...window.__texts]);

async function send(message) {
  await page.fill("#text", message);
  await page.click("#send");
}

/** Checks that the page saw no error and that every call it made went across origins with the key. */
function assertCleanCrossOriginCalls() {
  assert.deepEqual(problems, []);
  assert.ok(apiCalls.length > 0, "the page called the server");
  for (const call of apiCalls) {
    assert.equal(call.apiKey, key, `${call.call} without the API key`);
    assert.ok([origin, "*"].includes(call.allowOrigin), `${call.call}: Access-Control-Allow-Origin ${call.allowOrigin}`);
  }
  assert.ok(preflights.length > 0, "chromium preflighted the calls");
  for (const p of preflights) {
    const headers = Object.fromEntries(Object.entries(p.headers).map(([k, v]) => [k.toLowerCase(), v]));
    assert.equal(p.status, 204, `preflight of ${p.url}`);
    assert.ok([origin, "*"].includes(headers["access-control-allow-origin"]), `preflight of ${p.url}`);
    assert.match(headers["access-control-allow-headers"] ?? "", /x-api-key/i, `preflight of ${p.url}`);
  }
}

let threadId;
const first = "hello from the page";
const second = "and a second message";

test("a message on a new thread: the reply streams in from the model, the thread and its history show", async () => {
  const query = new URLSearchParams({ api: url, key, assistant });
  await page.goto(`${origin}/?${query}`);
  await page.locator("main[data-loading=false]").waitFor();
  assert.equal(await text("#thread"), "");
  await watchReplies();
  const asked = (await modelStats()).requests;
  await send(first);
  const reply = expectedReply(first);
  assert.deepEqual(await settled(2), [["human", first], ["ai", reply]]);
  // The thread useStream created, in the page and in its address.
  threadId = await text("#thread");
  assert.match(threadId, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  assert.equal(new URL(page.url()).searchParams.get("thread"), threadId);
  assert.deepEqual(await serverMessages(threadId), await rendered());
  const [runId] = await runIds();
  assert.equal((await client.runs.get(threadId, runId)).status, "success");
  // A model-backed graph streams the reply token by token: the page showed parts of it.
  if ((await modelStats()).requests > asked) {
    const parts = (await seenReplyTexts()).filter((t) => t.length > 0 && t.length < reply.length);
    assert.ok(parts.length >= 2 && parts.every((t) => reply.startsWith(t)), `pieces seen: ${JSON.stringify(parts)}`);
  }
  // fetchStateHistory: the branch shown is every checkpoint of the thread.
  const history = await client.threads.getHistory(threadId, { limit: 100 });
  assert.ok(history.length >= 2, `history of ${history.length}`);
  assert.equal(Number(await text("#history")), history.length);
  assertCleanCrossOriginCalls();
});

test("a second message on the same thread: both turns show, and the graph saw the first", async () => {
  assert.ok(threadId, "the first test made no thread");
  const asked = (await modelStats()).requests;
  await send(second);
  assert.deepEqual(await settled(4), [
    ["human", first],
    ["ai", expectedReply(first)],
    ["human", second],
    ["ai", expectedReply(second)],
  ]);
  assert.equal(await text("#thread"), threadId);
  assert.deepEqual(await serverMessages(threadId), await rendered());
  assert.equal((await runIds()).length, 2);
  const stats = await modelStats();
  if (stats.requests > asked) {
    // The model was asked with the whole thread, not only the new message.
    const asked = stats.lastMessages.filter((m) => m.role !== "system").map((m) => m.content);
    assert.deepEqual(asked, [first, expectedReply(first), second]);
  }
  const history = await client.threads.getHistory(threadId, { limit: 100 });
  assert.equal(Number(await text("#history")), history.length);
  assertCleanCrossOriginCalls();
});

test("editing the second message branches the thread; the page switches between the branches", async () => {
  assert.ok(threadId, "the first test made no thread");
  const edited = "an edited second message";
  const original = await rendered();
  await page.fill("#text", edited);
  await page.locator("#messages li.human .edit").nth(1).click();
  const branched = [...original.slice(0, 2), ["human", edited], ["ai", expectedReply(edited)]];
  assert.deepEqual(await settled(4), branched);
  assert.deepEqual(await serverMessages(threadId), branched); // the thread's head is the new branch
  const switcher = page.locator("#messages li.human").nth(1).locator(".branches");
  assert.equal(await switcher.locator(".at").textContent(), "2/2");
  await switcher.locator(".prev").click();
  assert.deepEqual(await settled(4), original);
  assert.equal(await switcher.locator(".at").textContent(), "1/2");
  await switcher.locator(".next").click();
  assert.deepEqual(await settled(4), branched);
  assertCleanCrossOriginCalls();
});

test("stop() cuts a slow reply off: its run is cancelled, and the thread takes the next message", { skip: slowInput === "" && "UI_SLOW_INPUT is empty" }, async () => {
  assert.ok(threadId, "the first test made no thread");
  const before = await rendered();
  const stats = await modelStats();
  const runsBefore = (await runIds()).length;
  await send(slowInput);
  await page.waitForFunction((n) => document.querySelector("#runs").textContent.split(" ").length === n, runsBefore + 1);
  const runId = (await runIds()).at(-1);
  // Wait for a part of the reply when the graph streams one from the model, else a second.
  const started = Date.now();
  while (Date.now() - started < 1500 && !(await page.locator(`#messages li.ai:nth-child(${before.length + 2})`).count())) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const modelAsked = (await modelStats()).requests > stats.requests;
  if (modelAsked) {
    const partial = await page.locator(`#messages li.ai:nth-child(${before.length + 2}) .text`).textContent();
    // model-server.mjs answers "and so on and so on ..." a word at a time.
    assert.ok(partial && "and so on ".repeat(34).startsWith(partial), `a part of the slow reply showed: ${partial}`);
  }
  assert.equal(await page.locator("main").getAttribute("data-loading"), "true");
  await page.click("#stop");
  await page.locator("main[data-loading=false]").waitFor({ timeout: 3000 });
  // The server cancelled the run: interrupted, the model's reply abandoned, no reply kept.
  await poll("the stopped run to be interrupted", () => client.runs.get(threadId, runId), (run) => run.status === "interrupted", 5000);
  if (modelAsked) {
    await poll("the model call to be dropped", modelStats, (s) => s.abandoned > stats.abandoned, 5000);
  }
  const kept = await serverMessages(threadId);
  assert.deepEqual(kept, [...before, ["human", slowInput]]);
  assert.deepEqual(await settled(kept.length), kept); // the page shows what the server kept, no error
  // The thread is free again: the next message gets its reply.
  const next = "after the stop";
  await send(next);
  assert.deepEqual(await settled(kept.length + 2), [...kept, ["human", next], ["ai", expectedReply(next)]]);
  assertCleanCrossOriginCalls();
});

test("a reload with the thread in the address shows its messages and history again", async () => {
  assert.ok(threadId, "the first test made no thread");
  const shown = await rendered();
  const checkpoints = await text("#history");
  await page.reload();
  assert.deepEqual(await settled(shown.length), shown);
  assert.equal(await text("#thread"), threadId);
  assert.equal(await text("#history"), checkpoints);
  assert.deepEqual(await serverMessages(threadId), shown);
  assertCleanCrossOriginCalls();
});
