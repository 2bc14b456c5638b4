// SPDX-License-Identifier: MIT
// The studio in a real browser (Debian's chromium, driven by playwright-core) against a real
// `stategraph serve` with an API key: STUDIO_URL, STUDIO_API_KEY; screenshots go to STUDIO_SHOTS.
// A console error or an uncaught exception on the page fails the test.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { after, before, test } from "node:test";
import { chromium } from "playwright-core";

const url = process.env.STUDIO_URL;
const key = process.env.STUDIO_API_KEY;
const shots = process.env.STUDIO_SHOTS;
const chromiumPath = process.env.STUDIO_CHROMIUM ?? "/usr/bin/chromium";

let browser;
let page;
let chatThread; // the thread of the multiply conversation
const problems = [];

async function shot(name) {
  if (shots) await page.screenshot({ path: `${shots}/${name}.png` });
}

before(async () => {
  if (shots) mkdirSync(shots, { recursive: true });
  browser = await chromium.launch({ executablePath: chromiumPath, args: ["--no-sandbox"] });
  const context = await browser.newContext({ viewport: { width: 1360, height: 820 } });
  page = await context.newPage();
  page.on("console", (message) => {
    // The first API call is refused until the key is given: the browser logs that 401.
    const expected401 = message.text().includes("401");
    if (message.type() === "error" && !expected401) problems.push(`console: ${message.text()}`);
  });
  page.on("pageerror", (error) => problems.push(`page: ${error.message}`));
  page.on("dialog", (dialog) => dialog.accept()); // confirm() of Delete
});

after(async () => {
  await browser?.close();
});

test("the page asks for the API key once, then shows the assistants and the graph", async () => {
  await page.goto(`${url}/studio?assistant=react_agent`);
  const dialog = page.locator("#key-dialog");
  await dialog.waitFor({ state: "visible" });
  await page.fill("#key-input", key);
  await page.click("#key-ok");
  await page.locator("#picture svg g.node").first().waitFor();
  const nodes = await page.locator("#picture svg g.node title").allTextContents();
  assert.deepEqual(nodes.sort(), ["__end__", "__start__", "agent", "tools"]);
  const options = await page.locator("#assistant option").allTextContents();
  assert.ok(options.includes("react_agent") && options.includes("interrupt_agent"), options.join());
  assert.equal(await page.locator("#assistant").inputValue(), await assistantId("react_agent"));
  assert.deepEqual(problems, []);
});

async function assistantId(graphId) {
  return page.evaluate(async ([graph, apiKey]) => {
    const response = await fetch("/assistants/search", {
      method: "POST",
      headers: { "Content-Type": "application/json", "x-api-key": apiKey },
      body: JSON.stringify({ graph_id: graph }),
    });
    return (await response.json())[0].assistant_id;
  }, [graphId, key]);
}

/** Watches the page for streamed text and highlighted nodes until the returned stop(). */
async function watchRun() {
  await page.evaluate(() => {
    const seen = { lengths: new Set(), running: new Set() };
    window.__watch = seen;
    window.__observer = new MutationObserver((records) => {
      for (const text of document.querySelectorAll(".msg.streaming .text")) {
        seen.lengths.add(text.textContent.length);
      }
      // A node lit and put out in one task shows only in the record's old value.
      for (const record of records) {
        const g = record.target;
        if (record.type !== "attributes" || !g.matches?.("#picture g.node")) continue;
        if (g.classList.contains("running") || (record.oldValue ?? "").includes("running")) {
          seen.running.add(g.querySelector("title").textContent);
        }
      }
    });
    window.__observer.observe(document.body, {
      subtree: true,
      childList: true,
      characterData: true,
      attributes: true,
      attributeOldValue: true,
      attributeFilter: ["class"],
    });
  });
  return async () =>
    page.evaluate(() => {
      window.__observer.disconnect();
      return { lengths: [...window.__watch.lengths], running: [...window.__watch.running] };
    });
}

async function send(text) {
  await page.fill("#message", text);
  await page.press("#message", "Enter");
}

test("a new thread: send a message, see the reply streamed and the running node lit", async () => {
  await page.click("#new-thread");
  await page.waitForFunction(() => !document.querySelector("#message").disabled);
  const threadId = await page.locator("#thread-title").textContent();
  assert.match(threadId, /^[0-9a-f-]{36}$/);
  chatThread = threadId;
  const stop = await watchRun();
  await send("Please multiply 6 and 7.");
  await page.locator(".msg-ai .text", { hasText: "The multiply tool says: 42" }).waitFor();
  await page.waitForFunction(() => !document.querySelector("#message").disabled);
  const seen = await stop();
  // Streamed word by word: the reply's text grew through several lengths before the final state.
  assert.ok(seen.lengths.length >= 3, `streamed lengths ${seen.lengths}`);
  assert.ok(seen.running.includes("agent") && seen.running.includes("tools"), seen.running.join());
  // The tool call and its result are folded.
  assert.equal(await page.locator(".msg-ai details summary", { hasText: "Calls multiply" }).count(), 1);
  assert.equal(await page.locator(".msg-tool details summary").textContent(), "Result of multiply");
  assert.equal(await page.locator(".msg-tool details[open]").count(), 0);
  assert.deepEqual(
    await page.locator("#chat .who").allTextContents(),
    ["You", "Assistant", "Tool", "Assistant"],
  );
  assert.equal(await page.locator("#interrupt").isVisible(), false);
  assert.equal(await page.locator("#cancel").isVisible(), false);
  // The thread list has it, idle.
  const item = page.locator(`.thread-item[data-thread-id="${threadId}"]`);
  await item.locator(".badge", { hasText: "idle" }).waitFor();
  // The run's timeline: the run, its three node tasks, two model calls, the tool call and the
  // checkpoint writes, nested under their parents, each with its duration.
  await page.locator("#run-timeline").waitFor();
  const rows = await page.locator("#spans .span").evaluateAll((items) =>
    items.map((li) => ({
      kind: li.dataset.kind,
      label: li.querySelector(".span-label").textContent,
      depth: Number(li.style.getPropertyValue("--depth")),
      ms: li.querySelector(".span-time").textContent,
    })),
  );
  const of = (kind) => rows.filter((r) => r.kind === kind);
  assert.deepEqual(of("run").map((r) => [r.label, r.depth]), [["react_agent", 0]]);
  assert.deepEqual(of("node").map((r) => r.label), ["agent", "tools", "agent"]);
  assert.ok(of("node").every((r) => r.depth === 1), JSON.stringify(rows));
  assert.equal(of("model").length, 2);
  assert.ok(of("model").every((r) => r.depth === 2), JSON.stringify(rows));
  assert.deepEqual(of("tool").map((r) => [r.label, r.depth]), [["multiply", 2]]);
  assert.ok(of("checkpoint").length >= 1);
  assert.ok(rows.every((r) => / ms$/.test(r.ms)), JSON.stringify(rows));
  await shot("studio-chat");
  assert.deepEqual(problems, []);
});

test("threads are searchable and reopen with their conversation", async () => {
  const first = await page.locator("#thread-title").textContent();
  await page.click("#new-thread");
  await page.waitForFunction((id) => document.querySelector("#thread-title").textContent !== id, first);
  assert.equal(await page.locator("#chat .msg").count(), 0);
  await page.keyboard.press("Escape");
  await page.locator("body").click({ position: { x: 5, y: 5 } });
  await page.keyboard.press("/");
  assert.equal(await page.evaluate(() => document.activeElement.id), "thread-search");
  await page.keyboard.type(first.slice(0, 8));
  await page.waitForFunction(() => document.querySelectorAll(".thread-item").length === 1);
  await page.keyboard.press("Tab"); // to the status filter
  await page.keyboard.press("Tab"); // to New thread
  await page.keyboard.press("Tab"); // to the one thread left
  assert.equal(await page.evaluate(() => document.activeElement.className), "thread-item");
  await page.keyboard.press("Enter");
  await page.waitForFunction((id) => document.querySelector("#thread-title").textContent === id, first);
  await page.locator(".msg-ai .text", { hasText: "42" }).waitFor();
  await page.fill("#thread-search", "");
  assert.deepEqual(problems, []);
});

test("a run is cancelled from the page; the key is kept across a reload", async () => {
  // While the new thread is being created (held here for half a second) the composer is off:
  // nothing typed goes to the thread open until then.
  const before = await page.locator("#thread-title").textContent();
  let release;
  const held = new Promise((resolve) => (release = resolve));
  await page.route(`${url}/threads`, async (route) => {
    if (route.request().method() === "POST") await held;
    await route.continue();
  });
  await page.click("#new-thread");
  assert.equal(await page.locator("#message").isDisabled(), true);
  setTimeout(release, 500);
  await page.waitForFunction(() => !document.querySelector("#message").disabled);
  await page.unroute(`${url}/threads`);
  assert.notEqual(await page.locator("#thread-title").textContent(), before);
  await send("Tell me everything, slowly.");
  await page.locator(".msg.streaming .text", { hasText: "and so on" }).waitFor();
  assert.equal(await page.locator("#cancel").isVisible(), true);
  assert.match(await page.locator("#run-status").textContent(), /Running agent|Run /);
  const started = Date.now();
  await page.click("#cancel");
  // The model would take 30 s more; the cancelled run ends now and the composer is back.
  await page.waitForFunction(() => !document.querySelector("#message").disabled, null, { timeout: 10000 });
  assert.ok(Date.now() - started < 10000);
  assert.equal(await page.locator("#cancel").isVisible(), false);
  assert.equal(await page.locator("#run-status").textContent(), "No run");
  // Reloaded, the page has the key still (this tab's session): no dialog, the assistants load.
  await page.reload();
  await page.locator("#picture svg g.node").first().waitFor();
  assert.equal(await page.locator("#key-dialog").isVisible(), false);
  await page.click(`.thread-item[data-thread-id="${chatThread}"]`);
  await page.locator(".msg-ai .text", { hasText: "42" }).waitFor();
  assert.deepEqual(problems, []);
});

test("time travel: the timeline, the state at a checkpoint, fork with an edit, replay", async () => {
  await page.click("#tab-history");
  await page.waitForFunction(() => document.querySelectorAll(".checkpoint-item").length === 5);
  const sources = await page.locator(".checkpoint-item .badge").allTextContents();
  assert.deepEqual(sources, ["loop", "loop", "loop", "loop", "input"]);
  // Newest first: the answer (agent), the tool (tools), the tool call (agent), the input applied.
  const nodes = await page.locator(".checkpoint-item .nodes").allTextContents();
  assert.deepEqual(nodes, ["agent", "tools", "agent", "__start__", "input"]);
  // The checkpoint before the model's first call: the human message just arrived.
  await page.locator(".checkpoint-item").nth(3).click();
  assert.equal(await page.locator("#checkpoint-next").textContent(), "next: agent");
  assert.equal(await page.locator("#checkpoint-changes").textContent(), "messages changed since its parent");
  await page.locator("#checkpoint-state .json-string", { hasText: "Please multiply 6 and 7." }).waitFor();
  assert.ok((await page.locator("#checkpoint-state .changed").count()) > 0);
  await shot("studio-history");
  // Fork: the question edited, then the run continues from the new checkpoint.
  await page.click("#fork");
  const edited = (await page.inputValue("#fork-values")).replace("multiply 6 and 7", "multiply 3 and 5");
  await page.fill("#fork-values", edited);
  await page.click("#fork-run");
  await page.locator(".msg-ai .text", { hasText: "The multiply tool says: 15" }).waitFor();
  await page.waitForFunction(() => !document.querySelector("#message").disabled);
  assert.equal(await page.locator(".msg-human .text").textContent(), "Please multiply 3 and 5.");
  // The new branch: an update checkpoint and three steps on top of the old ones.
  await page.click("#tab-history");
  await page.waitForFunction(() => document.querySelectorAll(".checkpoint-item").length === 9);
  assert.deepEqual(
    (await page.locator(".checkpoint-item .badge").allTextContents()).slice(0, 4),
    ["loop", "loop", "loop", "update"],
  );
  // Replay from the checkpoint after the tool ran: the model answers again.
  await page.locator(".checkpoint-item").nth(1).click();
  assert.equal(await page.locator("#checkpoint-next").textContent(), "next: agent");
  await page.click("#replay");
  await page.waitForFunction(() => !document.querySelector("#message").disabled);
  await page.locator(".msg-ai .text", { hasText: "The multiply tool says: 15" }).waitFor();
  await page.click("#tab-history");
  // LangGraph's replay: a "fork" checkpoint copies the one chosen, then the step runs on it.
  await page.waitForFunction(() => document.querySelectorAll(".checkpoint-item").length === 11);
  assert.deepEqual(
    (await page.locator(".checkpoint-item .badge").allTextContents()).slice(0, 3),
    ["loop", "fork", "loop"],
  );
  await page.click("#tab-chat");
  assert.deepEqual(problems, []);
});

test("the store: namespaces as a tree, items under one, search with a filter", async () => {
  await page.evaluate(async (apiKey) => {
    const put = (namespace, itemKey, value) =>
      fetch("/store/items", {
        method: "PUT",
        headers: { "Content-Type": "application/json", "x-api-key": apiKey },
        body: JSON.stringify({ namespace, key: itemKey, value }),
      });
    await put(["users", "alice", "notes"], "n1", { kind: "note", text: "likes tea" });
    await put(["users", "alice", "prefs"], "theme", { dark: true });
    await put(["users", "bob", "notes"], "n2", { kind: "todo", text: "buy milk" });
  }, key);
  await page.click("#view-store");
  await page.locator("#namespaces .namespace", { hasText: "alice" }).waitFor();
  assert.deepEqual(await page.locator("#namespaces .namespace").allTextContents(), [
    "users", "alice", "notes", "prefs", "bob", "notes",
  ]);
  await page.locator("#namespaces .namespace", { hasText: "alice" }).click();
  await page.waitForFunction(() => document.querySelector("#store-prefix").textContent === "users / alice");
  await page.waitForFunction(() => document.querySelectorAll("#items .item").length === 2);
  assert.deepEqual((await page.locator("#items .item-key").allTextContents()).sort(), [
    "users / alice / notes / n1",
    "users / alice / prefs / theme",
  ]);
  await page.locator("#namespaces .namespace", { hasText: "users" }).click();
  await page.waitForFunction(() => document.querySelectorAll("#items .item").length === 3);
  await page.fill("#store-filter", '{"kind": "todo"}');
  await page.press("#store-filter", "Enter");
  await page.waitForFunction(() => document.querySelectorAll("#items .item").length === 1);
  assert.equal(await page.locator("#items .item-key").textContent(), "users / bob / notes / n2");
  await page.locator("#items .json-string", { hasText: "buy milk" }).waitFor();
  await shot("studio-store");
  // A filter that is not JSON is an error on the page, not a request.
  await page.fill("#store-filter", "{kind:");
  await page.press("#store-filter", "Enter");
  await page.locator("#error:not([hidden])").waitFor();
  await page.click("#view-threads");
  assert.deepEqual(problems, []);
});

test("an interrupt shows its value and resumes with what the form sends", async () => {
  await page.selectOption("#assistant", await assistantId("interrupt_agent"));
  await page.waitForFunction(() =>
    [...document.querySelectorAll("#picture svg g.node title")].some((t) => t.textContent === "ask"),
  );
  await page.click("#new-thread");
  await page.waitForFunction(() => !document.querySelector("#message").disabled);
  await send("hello");
  await page.locator("#interrupt:not([hidden])").waitFor();
  assert.match(await page.locator("#interrupt-value").textContent(), /what next\?/);
  assert.equal(await page.locator("#approvals").isVisible(), false); // not a HumanInterrupt list
  await page.locator(".thread-item[aria-current] .badge", { hasText: "interrupted" }).waitFor();
  await shot("studio-interrupt");
  await page.fill("#resume-value", "go on");
  await page.click("#resume");
  await page.locator(".msg-ai .text", { hasText: "resumed: go on" }).waitFor();
  await page.locator("#interrupt").waitFor({ state: "hidden" });
  assert.deepEqual(problems, []);
});

/** A new thread of the open assistant, stopped for the approval of get_weather(Paris). */
async function pausedForApproval() {
  await page.click("#new-thread");
  await page.waitForFunction(() => !document.querySelector("#message").disabled);
  await send("get_weather Paris");
  const card = page.locator("#approvals .approval");
  await card.waitFor();
  await page.locator(".thread-item[aria-current] .badge", { hasText: "interrupted" }).waitFor();
  return card;
}

/** Waits for the run to end with `text` in a tool message (folded: its text is not shown). */
async function toolMessage(text) {
  await page.locator(".msg-tool", { hasText: text }).waitFor();
  await page.waitForFunction(() => !document.querySelector("#message").disabled);
  await page.locator("#approvals").waitFor({ state: "hidden" });
  return page.locator(".msg-tool pre").last().textContent();
}

test("HumanInterrupt requests show as approval cards: edit, respond, ignore", async () => {
  await page.selectOption("#assistant", await assistantId("approval_agent"));
  await page.waitForFunction(() =>
    [...document.querySelectorAll("#picture svg g.node title")].some((t) => t.textContent === "tools"),
  );
  // Edit: the card shows the description, the action, its arguments as JSON and what the config
  // allows; the free-form field is not shown.
  let card = await pausedForApproval();
  assert.equal(await page.locator("#approvals .approval").count(), 1);
  assert.equal(await page.locator("#interrupt").isVisible(), false);
  assert.equal(await card.locator(".approval-action").textContent(), "get_weather");
  assert.match(await card.locator(".approval-description").textContent(), /^Tool execution requires approval\n\nTool: get_weather/);
  const args = card.getByLabel("Arguments (JSON, editable)");
  assert.deepEqual(JSON.parse(await args.inputValue()), { city: "Paris" });
  assert.deepEqual(await card.locator(".approval-actions button").allTextContents(), ["Accept", "Edit", "Respond", "Ignore"]);
  assert.equal(await card.getByRole("button", { name: "Respond" }).isDisabled(), true); // no text yet
  await shot("studio-approval");
  // Arguments that are not a JSON object are refused on the page.
  await args.fill("[1, 2]");
  await card.getByRole("button", { name: "Edit" }).click();
  await page.locator("#error", { hasText: "must be a JSON object" }).waitFor();
  await args.fill('{"city": "Lyon"}');
  await card.getByRole("button", { name: "Edit" }).click();
  assert.equal(await toolMessage("Sunny, 21 C in Lyon"), "Sunny, 21 C in Lyon");
  assert.equal(await page.locator("#error").isVisible(), false);
  await page.locator(".msg-ai .text", { hasText: "The get_weather tool says: Sunny, 21 C in Lyon" }).waitFor();
  assert.equal(await page.locator(".msg-ai details pre").first().textContent(), JSON.stringify({ city: "Lyon" }, null, 2));
  await page.locator(".thread-item[aria-current] .badge", { hasText: "idle" }).waitFor();
  // Respond: the text is the tool's answer; the call does not run.
  card = await pausedForApproval();
  await card.getByLabel("Response (sent instead of running the call)").fill("Not now, thanks");
  await card.getByRole("button", { name: "Respond" }).click();
  assert.equal(await toolMessage("Not now, thanks"), "Not now, thanks");
  assert.equal(await page.locator(".msg-tool", { hasText: "Sunny" }).count(), 0);
  // Ignore: the call is answered as ignored and the run ends.
  card = await pausedForApproval();
  await card.getByRole("button", { name: "Ignore" }).click();
  assert.match(await toolMessage("User ignored the tool call"), /^User ignored the tool call for `get_weather`/);
  assert.deepEqual(await page.locator("#chat .who").allTextContents(), ["You", "Assistant", "Tool"]);
  assert.deepEqual(problems, []);
});

test("several requests: each answered (and changed) on its card, then one resume with the list", async () => {
  // The open thread's state as if it waited for two reviews (the state read is stubbed), and the
  // run that resumes it captured instead of sent.
  const threadId = await page.locator("#thread-title").textContent();
  const requests = [
    {
      action_request: { action: "get_weather", args: { city: "Oslo" } },
      config: { allow_ignore: true, allow_respond: false, allow_edit: true, allow_accept: true },
      description: "Check the city",
    },
    {
      action_request: { action: "multiply", args: { a: 2, b: 3 } },
      config: { allow_ignore: true, allow_respond: false, allow_edit: false, allow_accept: true },
    },
  ];
  const statePath = /\/threads\/[^/]+\/state$/;
  await page.route(statePath, async (route) => {
    if (route.request().method() !== "GET") return route.continue();
    const snapshot = await (await route.fetch()).json();
    snapshot.tasks = [{ id: "t", name: "review", interrupts: [{ id: "i", value: requests }] }];
    await route.fulfill({ json: snapshot });
  });
  let sent = null;
  await page.route(/\/runs\/stream$/, async (route) => {
    sent = route.request().postDataJSON();
    await page.unroute(statePath);
    await route.fulfill({ status: 200, contentType: "text/event-stream", body: "" });
  });
  await page.click(`.thread-item[data-thread-id="${threadId}"]`);
  await page.waitForFunction(() => document.querySelectorAll("#approvals .approval").length === 2);
  const [oslo, product] = [page.locator("#approvals .approval").nth(0), page.locator("#approvals .approval").nth(1)];
  assert.equal(await page.locator("#approvals h3").textContent(), "Approval needed: 2 requests, answer each");
  assert.equal(await product.locator(".approval-kind").textContent(), "Tool call 2 of 2");
  assert.deepEqual(await product.locator(".approval-actions button").allTextContents(), ["Accept", "Ignore"]);
  assert.equal(await product.locator("textarea").count(), 0); // no edit, no response: shown only
  assert.deepEqual(JSON.parse(await product.locator("pre.approval-args").textContent()), { a: 2, b: 3 });
  await product.getByRole("button", { name: "Ignore" }).click();
  assert.equal(await product.locator(".approval-answer span").textContent(), "Ignored");
  await product.getByRole("button", { name: "Change" }).click();
  await product.getByRole("button", { name: "Accept" }).click();
  assert.equal(await product.locator(".approval-answer span").textContent(), "Accepted");
  assert.equal(sent, null); // one request still waits for its answer
  await oslo.getByLabel("Arguments (JSON, editable)").fill('{"city": "Bergen"}');
  await oslo.getByRole("button", { name: "Edit" }).click();
  await page.waitForFunction(() => !document.querySelector("#message").disabled);
  assert.deepEqual(sent.command, {
    resume: [
      { type: "edit", args: { action: "get_weather", args: { city: "Bergen" } } },
      { type: "accept", args: null },
    ],
  });
  await page.unroute(/\/runs\/stream$/);
  await page.locator("#approvals").waitFor({ state: "hidden" });
  assert.deepEqual(problems, []);
});

test("a thread is deleted from the page", async () => {
  const threadId = await page.locator("#thread-title").textContent();
  await page.click("#delete-thread");
  await page.waitForFunction(
    (id) => !document.querySelector(`.thread-item[data-thread-id="${id}"]`),
    threadId,
  );
  assert.equal(await page.locator("#thread-title").textContent(), "No thread selected");
  assert.deepEqual(problems, []);
});

test("with no thread open, a first message starts one", async () => {
  await page.selectOption("#assistant", await assistantId("react_agent"));
  await page.waitForFunction(() =>
    [...document.querySelectorAll("#picture svg g.node title")].some((t) => t.textContent === "tools"),
  );
  assert.equal(await page.locator("#thread-title").textContent(), "No thread selected");
  assert.equal(await page.locator("#message").isDisabled(), false);
  await send("Please multiply 2 and 3.");
  await page.locator(".msg-ai .text", { hasText: "The multiply tool says: 6" }).waitFor();
  const threadId = await page.locator("#thread-title").textContent();
  assert.match(threadId, /^[0-9a-f-]{36}$/);
  // The new thread is in the list, open (the assistant's threads load while the page works on).
  await page.locator(`.thread-item[data-thread-id="${threadId}"][aria-current]`).waitFor();
  assert.deepEqual(await page.locator("#chat .who").allTextContents(), [
    "You",
    "Assistant",
    "Tool",
    "Assistant",
  ]);
  assert.deepEqual(problems, []);
});

test("dark theme and a phone-sized screen", async () => {
  await page.click("#theme");
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), "dark");
  await page.selectOption("#assistant", await assistantId("react_agent"));
  await page.click(`.thread-item[data-thread-id="${chatThread}"]`);
  await page.locator(".msg-ai .text", { hasText: "The multiply tool says: 15" }).waitFor();
  await shot("studio-dark");
  await page.setViewportSize({ width: 390, height: 844 });
  // Nothing wider than the screen: the columns stack.
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - innerWidth);
  assert.ok(overflow <= 0, `page is ${overflow}px wider than the phone`);
  await shot("studio-phone");
  assert.deepEqual(problems, []);
});
