// SPDX-License-Identifier: MIT
// LangGraph Server API conformance suite, driven by the official JS SDK
// (@langchain/langgraph-sdk). The specification is
// shared/reference/langgraph-server-api.md; the § numbers below refer to it.
//
// Environment:
//   LG_API_URL             the server under test (required), e.g. http://127.0.0.1:2024
//   LG_API_KEY             sent as the SDK's apiKey (x-api-key); also turns on the 401 test
//   LG_GRAPH_ID            the echo graph of §0 (default "agent")
//   LG_INTERRUPT_GRAPH_ID  the interrupt graph (default "interrupt_agent"): one node `ask`
//                          that interrupts with {question: "what next?"} and, resumed with v,
//                          answers "resumed: " + (typeof v === "string" ? v : JSON.stringify(v))
//   LG_REFERENCE=1         the server is the official JS dev server (langgraphjs dev): where
//                          §4 lists it as differing from the Platform, its behaviour is
//                          accepted too; where it contradicts the spec, the check is skipped.
//
// Every test makes its own threads (and store namespaces), so tests are independent and
// can run against a server that already holds data. Waiting is done by polling the run
// or thread status, never by sleeping for a guessed time.

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { Client } from "@langchain/langgraph-sdk";
import { expectHttpError, pause, poll as pollUntil } from "./helpers.mjs";

const API_URL = (process.env.LG_API_URL ?? "").replace(/\/+$/, "");
if (!API_URL) {
  throw new Error("LG_API_URL is required (the server under test, e.g. http://127.0.0.1:2024)");
}
const API_KEY = process.env.LG_API_KEY || undefined;
const GRAPH_ID = process.env.LG_GRAPH_ID || "agent";
const INTERRUPT_GRAPH_ID = process.env.LG_INTERRUPT_GRAPH_ID || "interrupt_agent";
const REFERENCE = process.env.LG_REFERENCE === "1";

// Unique per suite run: tags threads and store namespaces so repeated runs don't collide.
const SUITE = `sdkconf-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;

// Generous for a loaded 2-core machine.
const TEST_TIMEOUT = 120_000;
const POLL_TIMEOUT = 60_000;
const POLL_INTERVAL = 50;
const poll = (what, fn, pred, timeout = POLL_TIMEOUT) =>
  pollUntil(what, fn, pred, timeout, POLL_INTERVAL);
// A run that is always cancelled before it ends: the echo node waits this long.
const LONG_SLEEP = "sleep:60000";

// NAMESPACE_GRAPH of the LangGraph servers (§0).
const NAMESPACE_GRAPH = "6ba7b821-9dad-11d1-80b4-00c04fd430c8";

const RUN_STATUSES = ["pending", "running", "error", "success", "timeout", "interrupted"];
const THREAD_STATUSES = ["idle", "busy", "interrupted", "error"];
const STRATEGIES = ["reject", "interrupt", "rollback", "enqueue"];
const TERMINAL = new Set(["success", "error", "timeout", "interrupted"]);

function makeClient(apiKey = API_KEY) {
  // apiKey null keeps the SDK from reading LANGGRAPH_API_KEY & co. from the environment.
  return new Client({ apiUrl: API_URL, apiKey: apiKey ?? null });
}
const client = makeClient();

// ---------------------------------------------------------------------------------------
// helpers

const human = (content) => ({ messages: [{ role: "user", content }] });
const texts = (values) => (values?.messages ?? []).map((m) => `${m.type}:${m.content}`);
const isUuid = (s) =>
  typeof s === "string" &&
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s);
const isTime = (s) => typeof s === "string" && !Number.isNaN(Date.parse(s));
const isObject = (x) => x !== null && typeof x === "object" && !Array.isArray(x);
const uniqueLabel = (what) => `${what}-${Math.random().toString(36).slice(2, 10)}`;

function it(name, fn) {
  return test(name, { timeout: TEST_TIMEOUT }, fn);
}

async function uuid5(namespace, name) {
  const ns = namespace
    .replace(/-/g, "")
    .match(/../g)
    .map((h) => parseInt(h, 16));
  const data = new Uint8Array([...ns, ...new TextEncoder().encode(name)]);
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-1", data)).slice(0, 16);
  hash[6] = (hash[6] & 0x0f) | 0x50;
  hash[8] = (hash[8] & 0x3f) | 0x80;
  const hex = [...hash].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
const GRAPH_ASSISTANT_ID = await uuid5(NAMESPACE_GRAPH, GRAPH_ID);
const INTERRUPT_ASSISTANT_ID = await uuid5(NAMESPACE_GRAPH, INTERRUPT_GRAPH_ID);


const runStatus = async (threadId, runId) => (await client.runs.get(threadId, runId)).status;
const waitRun = (threadId, runId, pred, what = "run status") =>
  poll(what, () => runStatus(threadId, runId), pred);
const waitRunEnded = (threadId, runId) =>
  waitRun(threadId, runId, (s) => TERMINAL.has(s), "the run to end");
const waitThreadNotBusy = (threadId) =>
  poll(
    "the thread to stop being busy",
    () => client.threads.get(threadId),
    (t) => t.status !== "busy",
  );
// Waits until the thread's latest checkpoint holds the given human input (the run's
// step-0 checkpoint), so that a cancel or a second run lands while the node is sleeping.
const waitInputVisible = (threadId, content) =>
  poll(
    `"${content}" in the thread state`,
    async () => texts((await client.threads.getState(threadId)).values),
    (t) => t.includes(`human:${content}`),
  );

// Polls runs.get until it answers 404 (the run was deleted).
async function waitRunGone(threadId, runId) {
  return poll(
    "the run to be deleted (404)",
    async () => {
      try {
        return (await client.runs.get(threadId, runId)).status;
      } catch (err) {
        if (err?.status === 404) return 404;
        throw err;
      }
    },
    (v) => v === 404,
  );
}

// store.getItem of an item that does not exist: JSON null (the SDK returns null) or, as the
// Platform may answer, 404 (§2.6); both are accepted and come back as null.
async function getItemOrNull(namespace, key) {
  try {
    return await client.store.getItem(namespace, key);
  } catch (err) {
    if (err?.status === 404) return null;
    throw err;
  }
}

async function collect(stream) {
  const parts = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

function newThread(metadata = {}) {
  return client.threads.create({ metadata: { suite: SUITE, ...metadata } });
}

async function rawFetch(path, init = {}) {
  const headers = { ...(init.headers ?? {}) };
  if (API_KEY) headers["x-api-key"] = API_KEY;
  return fetch(`${API_URL}${path}`, { ...init, headers });
}

// The checks of one SSE stream common to every mode (§3): `metadata` comes first with the
// created run's id, no `error` event, an optional `end` only as the last event, and every
// other event is one of the allowed names.
function checkStream(parts, runId, allowed) {
  assert.ok(parts.length >= 1, "the stream yielded no event");
  assert.equal(parts[0].event, "metadata", "the first event is metadata");
  assert.ok(isObject(parts[0].data), "metadata data is an object");
  assert.equal(parts[0].data.run_id, runId, "metadata.run_id is the created run's id");
  const errors = parts.filter((p) => p.event === "error");
  assert.deepEqual(errors, [], "no error event");
  parts.forEach((p, i) => {
    if (p.event === "end") assert.equal(i, parts.length - 1, "`end` is the last event");
  });
  const body = parts.slice(1).filter((p) => p.event !== "end");
  for (const p of body) {
    assert.ok(
      allowed.includes(p.event),
      `unexpected event "${p.event}" (allowed: ${allowed.join(", ")})`,
    );
  }
  return body;
}

function checkAssistant(a) {
  assert.ok(isObject(a), "assistant is an object");
  assert.ok(isUuid(a.assistant_id), `assistant_id is a UUID: ${a.assistant_id}`);
  assert.equal(typeof a.graph_id, "string");
  assert.ok(isObject(a.config), "assistant.config is an object");
  assert.ok(isObject(a.metadata), "assistant.metadata is an object");
  assert.ok(isTime(a.created_at), "assistant.created_at is a timestamp");
  assert.ok(isTime(a.updated_at), "assistant.updated_at is a timestamp");
  assert.equal(typeof a.name, "string");
  assert.equal(typeof a.version, "number");
}

function checkThread(t) {
  assert.ok(isObject(t), "thread is an object");
  assert.ok(isUuid(t.thread_id), `thread_id is a UUID: ${t.thread_id}`);
  assert.ok(isTime(t.created_at), "thread.created_at is a timestamp");
  assert.ok(isTime(t.updated_at), "thread.updated_at is a timestamp");
  assert.ok(isObject(t.metadata), "thread.metadata is an object");
  assert.ok(THREAD_STATUSES.includes(t.status), `thread.status: ${t.status}`);
}

function checkRun(r) {
  assert.ok(isObject(r), "run is an object");
  assert.ok(isUuid(r.run_id), `run_id is a UUID: ${r.run_id}`);
  assert.ok(isUuid(r.thread_id), `run.thread_id is a UUID: ${r.thread_id}`);
  assert.ok(isUuid(r.assistant_id), `run.assistant_id is the resolved UUID: ${r.assistant_id}`);
  assert.ok(RUN_STATUSES.includes(r.status), `run.status: ${r.status}`);
  assert.ok(isTime(r.created_at), "run.created_at is a timestamp");
  assert.ok(isTime(r.updated_at), "run.updated_at is a timestamp");
  assert.ok(isObject(r.metadata), "run.metadata is an object");
  assert.ok(
    STRATEGIES.includes(r.multitask_strategy),
    `run.multitask_strategy: ${r.multitask_strategy}`,
  );
}

function checkCheckpointRef(c, threadId, what) {
  assert.ok(isObject(c), `${what} is an object`);
  assert.equal(c.thread_id, threadId, `${what}.thread_id`);
  assert.equal(c.checkpoint_ns, "", `${what}.checkpoint_ns`);
  assert.equal(typeof c.checkpoint_id, "string", `${what}.checkpoint_id`);
  assert.ok(c.checkpoint_id.length > 0, `${what}.checkpoint_id is not empty`);
}

function checkState(s, threadId) {
  assert.ok(isObject(s), "state is an object");
  assert.ok(isObject(s.values), "state.values is an object");
  assert.ok(Array.isArray(s.next), "state.next is an array");
  assert.ok(Array.isArray(s.tasks), "state.tasks is an array");
  assert.ok(isObject(s.metadata), "state.metadata is an object");
  assert.equal(typeof s.metadata.step, "number", "state.metadata.step is a number");
  assert.ok(
    ["input", "loop", "update", "fork"].includes(s.metadata.source),
    `state.metadata.source: ${s.metadata.source}`,
  );
  assert.ok(isTime(s.created_at), "state.created_at is a timestamp");
  checkCheckpointRef(s.checkpoint, threadId, "state.checkpoint");
  if (s.parent_checkpoint !== null) {
    checkCheckpointRef(s.parent_checkpoint, threadId, "state.parent_checkpoint");
  }
}

function checkMessages(values) {
  const messages = values?.messages ?? [];
  const ids = new Set();
  for (const m of messages) {
    assert.ok(["human", "ai", "system", "tool"].includes(m.type), `message.type: ${m.type}`);
    assert.ok("content" in m, "message has content");
    assert.equal(typeof m.id, "string", "message.id is a string");
    assert.ok(m.id.length > 0, "message.id is not empty");
    ids.add(m.id);
  }
  assert.equal(ids.size, messages.length, "message ids are unique within the thread");
}

function checkItem(item, namespace, key, value) {
  assert.ok(isObject(item), "item is an object");
  assert.deepEqual(item.namespace, namespace, "item.namespace");
  assert.equal(item.key, key, "item.key");
  assert.deepEqual(item.value, value, "item.value");
  assert.ok(isTime(item.created_at), "item.created_at is a timestamp");
  assert.ok(isTime(item.updated_at), "item.updated_at is a timestamp");
}

// ---------------------------------------------------------------------------------------

describe("health (§2.7)", () => {
  it("GET /ok answers {ok: true}", async () => {
    const res = await rawFetch("/ok");
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { ok: true });
  });

  it("GET /info answers a JSON object", async () => {
    const res = await rawFetch("/info");
    assert.equal(res.status, 200);
    const info = await res.json();
    assert.ok(isObject(info), "/info body is a JSON object");
  });
});

describe("assistants (§2.1)", () => {
  it("the system assistant id is uuid5(NAMESPACE_GRAPH, graph_id)", async () => {
    // Guards the local uuid5 against the value the spec gives.
    assert.equal(await uuid5(NAMESPACE_GRAPH, "agent"), "fe096781-5601-53d2-b2f6-0d3403f7e9ca");
    const a = await client.assistants.get(GRAPH_ASSISTANT_ID);
    checkAssistant(a);
    assert.equal(a.assistant_id, GRAPH_ASSISTANT_ID);
    assert.equal(a.graph_id, GRAPH_ID);
    assert.equal(a.metadata.created_by, "system");
  });

  it("get by graph id and by UUID return the same assistant", async () => {
    const byName = await client.assistants.get(GRAPH_ID);
    const byId = await client.assistants.get(GRAPH_ASSISTANT_ID);
    checkAssistant(byName);
    checkAssistant(byId);
    assert.equal(byName.assistant_id, GRAPH_ASSISTANT_ID);
    assert.deepEqual(byName, byId);
  });

  it("get of an unknown assistant is 404", async () => {
    await expectHttpError(
      client.assistants.get(uniqueLabel("no-such-graph")),
      [404],
      "unknown graph id",
    );
    await expectHttpError(
      client.assistants.get(crypto.randomUUID()),
      [404],
      "unknown assistant UUID",
    );
  });

  it("search by graph_id finds the system assistant", async () => {
    const found = await client.assistants.search({ graphId: GRAPH_ID, limit: 100 });
    assert.ok(Array.isArray(found));
    assert.ok(found.length >= 1);
    found.forEach(checkAssistant);
    for (const a of found) assert.equal(a.graph_id, GRAPH_ID, "search filters by graph_id");
    const system = found.find((a) => a.assistant_id === GRAPH_ASSISTANT_ID);
    assert.ok(system, "the system assistant is listed");
    assert.equal(system.metadata.created_by, "system");
  });

  it("getSchemas gives the graph's JSON Schemas", async () => {
    const schemas = await client.assistants.getSchemas(GRAPH_ASSISTANT_ID);
    assert.equal(schemas.graph_id, GRAPH_ID);
    assert.equal(schemas.state_schema.type, "object");
    assert.equal(schemas.state_schema.properties.messages.type, "array");
    assert.deepEqual(schemas.output_schema, schemas.state_schema);
    assert.equal(schemas.input_schema.required, undefined, "an input updates some fields");
    assert.deepEqual(schemas.input_schema.properties, schemas.state_schema.properties);
    await expectHttpError(
      client.assistants.getSchemas(uniqueLabel("no-such-graph")),
      [404],
      "schemas of an unknown graph",
    );
  });

  it("getSubgraphs of a graph without subgraphs is empty, recursively too", async () => {
    assert.deepEqual(await client.assistants.getSubgraphs(GRAPH_ASSISTANT_ID), {});
    assert.deepEqual(
      await client.assistants.getSubgraphs(GRAPH_ASSISTANT_ID, { recurse: true }),
      {},
    );
    assert.deepEqual(
      await client.assistants.getSubgraphs(GRAPH_ASSISTANT_ID, { namespace: "nope" }),
      {},
    );
  });

  it("search of an unknown graph_id is empty", async () => {
    assert.deepEqual(await client.assistants.search({ graphId: uniqueLabel("no-such-graph") }), []);
  });

  it("search by metadata filters by containment", async () => {
    const system = await client.assistants.search({
      metadata: { created_by: "system" },
      limit: 100,
    });
    const ids = system.map((a) => a.assistant_id);
    assert.ok(ids.includes(GRAPH_ASSISTANT_ID), "agent's system assistant matches");
    assert.ok(ids.includes(INTERRUPT_ASSISTANT_ID), "interrupt graph's system assistant matches");
    for (const a of system) assert.equal(a.metadata.created_by, "system");
    const none = await client.assistants.search({ metadata: { created_by: SUITE }, limit: 100 });
    assert.deepEqual(none, []);
  });

  it("search honours limit and offset", async () => {
    const all = await client.assistants.search({ limit: 100 });
    assert.ok(all.length >= 2, "at least the two system assistants");
    const first = await client.assistants.search({ limit: 1, offset: 0 });
    const second = await client.assistants.search({ limit: 1, offset: 1 });
    assert.equal(first.length, 1);
    assert.equal(second.length, 1);
    assert.notEqual(first[0].assistant_id, second[0].assistant_id, "offset moves the page");
    const allIds = all.map((a) => a.assistant_id);
    assert.ok(allIds.includes(first[0].assistant_id));
    assert.ok(allIds.includes(second[0].assistant_id));
    const past = await client.assistants.search({ limit: 10, offset: all.length });
    assert.deepEqual(past, []);
  });

  it("search with includePagination reads X-Pagination-Next", async () => {
    const all = await client.assistants.search({ limit: 1000 });
    const page = await client.assistants.search({ limit: 1000, includePagination: true });
    assert.ok(Array.isArray(page.assistants));
    assert.equal(page.assistants.length, all.length);
    // Nothing follows a page holding every assistant.
    assert.equal(page.next, null);
    const first = await client.assistants.search({ limit: 1, includePagination: true });
    assert.equal(first.assistants.length, 1);
    // The header is optional; when sent it names the next offset.
    if (first.next !== null) {
      assert.equal(typeof first.next, "string");
      assert.equal(Number(first.next), 1);
    }
  });

  it("getGraph lists __start__, echo and __end__ with their edges", async () => {
    for (const id of [GRAPH_ID, GRAPH_ASSISTANT_ID]) {
      const graph = await client.assistants.getGraph(id);
      assert.ok(Array.isArray(graph.nodes));
      assert.ok(Array.isArray(graph.edges));
      const nodeIds = graph.nodes.map((n) => n.id);
      for (const n of ["__start__", "echo", "__end__"]) {
        assert.ok(nodeIds.includes(n), `node ${n} in ${JSON.stringify(nodeIds)}`);
      }
      const edges = graph.edges.map((e) => `${e.source}->${e.target}`);
      assert.ok(edges.includes("__start__->echo"), JSON.stringify(edges));
      assert.ok(edges.includes("echo->__end__"), JSON.stringify(edges));
    }
  });
});

describe("created assistants (§2.1, not in the checked subset)", () => {
  it("create, get, run with its config, update into versions, set latest, count, delete", async () => {
    const team = uniqueLabel("team");
    const created = await client.assistants.create({
      graphId: GRAPH_ID,
      config: { configurable: { tone: "dry" } },
      metadata: { team },
      name: "Dry Agent",
    });
    checkAssistant(created);
    assert.equal(created.graph_id, GRAPH_ID);
    assert.equal(created.version, 1);
    assert.deepEqual(await client.assistants.get(created.assistant_id), created);
    assert.equal(await client.assistants.count({ metadata: { team } }), 1);
    const found = await client.assistants.search({ metadata: { team } });
    assert.deepEqual(
      found.map((a) => a.assistant_id),
      [created.assistant_id],
    );
    await expectHttpError(
      client.assistants.create({ graphId: GRAPH_ID, assistantId: created.assistant_id }),
      [409],
      "an existing assistant id",
    );

    // A run on the assistant runs its graph with its configurable.
    const thread = await newThread();
    const values = await client.runs.wait(thread.thread_id, created.assistant_id, {
      input: human("hi"),
    });
    assert.deepEqual(texts(values), ["human:hi", "ai:echo: hi"]);
    const [run] = await client.runs.list(thread.thread_id);
    assert.equal(run.assistant_id, created.assistant_id);
    assert.equal(run.kwargs.config.configurable.tone, "dry");

    const updated = await client.assistants.update(created.assistant_id, {
      config: { configurable: { tone: "warm" } },
      metadata: { stage: "b" },
    });
    assert.equal(updated.version, 2);
    assert.deepEqual(updated.metadata, { team, stage: "b" });
    const versions = await client.assistants.getVersions(created.assistant_id);
    assert.deepEqual(
      versions.map((v) => v.version),
      [2, 1],
    );
    assert.equal(versions[1].config.configurable.tone, "dry");
    const latest = await client.assistants.setLatest(created.assistant_id, 1);
    assert.equal(latest.version, 1);
    assert.equal(latest.config.configurable.tone, "dry");

    await client.assistants.delete(created.assistant_id, { deleteThreads: true });
    await expectHttpError(client.assistants.get(created.assistant_id), [404], "a deleted assistant");
    await expectHttpError(client.threads.get(thread.thread_id), [404], "its deleted thread");
  });
});

describe("threads (§2.2)", () => {
  it("create without an id makes an idle thread with the given metadata", async () => {
    const t = await client.threads.create({ metadata: { suite: SUITE, k: "v", n: 1 } });
    checkThread(t);
    assert.equal(t.status, "idle");
    assert.equal(t.metadata.k, "v");
    assert.equal(t.metadata.n, 1);
    const got = await client.threads.get(t.thread_id);
    checkThread(got);
    assert.equal(got.thread_id, t.thread_id);
    assert.equal(got.metadata.k, "v");
  });

  it("create with a threadId uses it", async () => {
    const id = crypto.randomUUID();
    const t = await client.threads.create({ threadId: id, metadata: { suite: SUITE } });
    checkThread(t);
    assert.equal(t.thread_id, id);
    assert.equal((await client.threads.get(id)).thread_id, id);
  });

  it("create with graphId records metadata.graph_id", async () => {
    const t = await client.threads.create({ graphId: GRAPH_ID, metadata: { suite: SUITE } });
    assert.equal(t.metadata.graph_id, GRAPH_ID);
    assert.equal(t.metadata.suite, SUITE);
  });

  it("create of an existing id: 409 by default and with raise, unchanged with do_nothing", async () => {
    const t = await newThread({ first: true });
    await expectHttpError(
      client.threads.create({ threadId: t.thread_id }),
      [409],
      "existing id, no ifExists",
    );
    await expectHttpError(
      client.threads.create({ threadId: t.thread_id, ifExists: "raise" }),
      [409],
      "existing id, ifExists raise",
    );
    const same = await client.threads.create({
      threadId: t.thread_id,
      ifExists: "do_nothing",
      metadata: { first: false, other: 1 },
    });
    checkThread(same);
    assert.equal(same.thread_id, t.thread_id);
    assert.equal(same.metadata.first, true, "do_nothing leaves the thread unchanged");
    assert.ok(!("other" in same.metadata), "do_nothing does not apply the new metadata");
    assert.equal(same.created_at, t.created_at);
  });

  it("get of an unknown thread is 404", async () => {
    await expectHttpError(client.threads.get(crypto.randomUUID()), [404], "unknown thread");
  });

  it("a thread id that is not a UUID is 422", async (t) => {
    const err = await expectHttpError(
      client.threads.get("not-a-uuid"),
      REFERENCE ? [400, 422] : [422],
      "non-UUID thread id",
    );
    if (REFERENCE && err.status === 400) {
      // Reference-server bug: §1.1 says the JS dev server answers 422, but
      // @langchain/langgraph-api 1.5.1 answers 400 (its zod validator's default).
      t.skip("reference server answers 400, not 422 (spec §1.1)");
    }
  });

  it("update merges metadata (shallow)", async () => {
    const t = await newThread({ a: 1, b: 1, nested: { x: 1 } });
    const updated = await client.threads.update(t.thread_id, {
      metadata: { b: 2, c: 3, nested: { y: 2 } },
    });
    checkThread(updated);
    assert.equal(updated.metadata.a, 1);
    assert.equal(updated.metadata.b, 2);
    assert.equal(updated.metadata.c, 3);
    assert.deepEqual(updated.metadata.nested, { y: 2 }, "the merge is shallow");
    assert.equal(updated.metadata.suite, SUITE);
    const got = await client.threads.get(t.thread_id);
    assert.deepEqual(got.metadata, updated.metadata);
  });

  it("update of an unknown thread is 404", async () => {
    await expectHttpError(
      client.threads.update(crypto.randomUUID(), { metadata: { a: 1 } }),
      [404],
      "update unknown thread",
    );
  });

  it("delete removes the thread: get is 404 and search no longer lists it", async () => {
    const group = uniqueLabel("del");
    const t = await newThread({ group });
    await client.threads.delete(t.thread_id);
    await expectHttpError(client.threads.get(t.thread_id), [404], "get after delete");
    assert.deepEqual(await client.threads.search({ ids: [t.thread_id] }), []);
    assert.deepEqual(await client.threads.search({ metadata: { group } }), []);
  });

  it("search filters by metadata containment", async () => {
    const group = uniqueLabel("grp");
    const made = [];
    for (const i of [1, 2, 3]) made.push(await newThread({ group, i }));
    await newThread({ group: `${group}-other`, i: 1 });
    const found = await client.threads.search({ metadata: { group }, limit: 100 });
    found.forEach(checkThread);
    assert.deepEqual(found.map((t) => t.thread_id).sort(), made.map((t) => t.thread_id).sort());
    const one = await client.threads.search({ metadata: { group, i: 2 } });
    assert.deepEqual(
      one.map((t) => t.thread_id),
      [made[1].thread_id],
    );
    assert.deepEqual(await client.threads.search({ metadata: { group, i: 4 } }), []);
  });

  it("search filters by ids", async () => {
    const a = await newThread();
    await newThread();
    const c = await newThread();
    const found = await client.threads.search({ ids: [a.thread_id, c.thread_id], limit: 100 });
    assert.deepEqual(found.map((t) => t.thread_id).sort(), [a.thread_id, c.thread_id].sort());
  });

  it("search filters by status", async () => {
    const group = uniqueLabel("status");
    const idle = await newThread({ group });
    const busy = await newThread({ group });
    const run = await client.runs.create(busy.thread_id, GRAPH_ID, { input: human(LONG_SLEEP) });
    try {
      const busyFound = await client.threads.search({ metadata: { group }, status: "busy" });
      assert.deepEqual(
        busyFound.map((t) => t.thread_id),
        [busy.thread_id],
      );
      const idleFound = await client.threads.search({ metadata: { group }, status: "idle" });
      assert.deepEqual(
        idleFound.map((t) => t.thread_id),
        [idle.thread_id],
      );
    } finally {
      await client.runs.cancel(busy.thread_id, run.run_id, true);
    }
  });

  it("search honours limit and offset", async () => {
    const group = uniqueLabel("page");
    const made = [];
    for (const i of [1, 2, 3]) made.push(await newThread({ group, i }));
    const p1 = await client.threads.search({ metadata: { group }, limit: 2, offset: 0 });
    const p2 = await client.threads.search({ metadata: { group }, limit: 2, offset: 2 });
    assert.equal(p1.length, 2);
    assert.equal(p2.length, 1);
    const ids = [...p1, ...p2].map((t) => t.thread_id);
    assert.equal(new Set(ids).size, 3, "the pages do not overlap");
    assert.deepEqual(ids.sort(), made.map((t) => t.thread_id).sort());
    assert.deepEqual(await client.threads.search({ metadata: { group }, limit: 2, offset: 3 }), []);
  });

  it("copy makes a new thread with the same state", async () => {
    const t = await newThread();
    await client.runs.wait(t.thread_id, GRAPH_ID, { input: human("to copy") });
    const copy = await client.threads.copy(t.thread_id);
    checkThread(copy);
    assert.notEqual(copy.thread_id, t.thread_id);
    const original = await client.threads.getState(t.thread_id);
    const copied = await client.threads.getState(copy.thread_id);
    assert.deepEqual(texts(copied.values), ["human:to copy", "ai:echo: to copy"]);
    assert.deepEqual(texts(original.values), ["human:to copy", "ai:echo: to copy"]);
    // The copy lives on its own.
    await client.runs.wait(copy.thread_id, GRAPH_ID, { input: human("only in copy") });
    assert.equal(texts((await client.threads.getState(t.thread_id)).values).length, 2);
    assert.equal(texts((await client.threads.getState(copy.thread_id)).values).length, 4);
  });
});

describe("thread state and history (§2.2)", () => {
  it("a thread without checkpoints: state has next [] and no messages, history is []", async () => {
    const t = await newThread();
    const state = await client.threads.getState(t.thread_id);
    assert.deepEqual(state.next, []);
    assert.deepEqual(state.values?.messages ?? [], []);
    assert.deepEqual(await client.threads.getHistory(t.thread_id), []);
  });

  it("state after a run holds the echoed messages", async () => {
    const t = await newThread();
    const values = await client.runs.wait(t.thread_id, GRAPH_ID, { input: human("hello") });
    const state = await client.threads.getState(t.thread_id);
    checkState(state, t.thread_id);
    checkMessages(state.values);
    assert.deepEqual(texts(state.values), ["human:hello", "ai:echo: hello"]);
    assert.deepEqual(state.next, []);
    assert.deepEqual(state.tasks, []);
    assert.equal(state.metadata.source, "loop");
    assert.equal(state.metadata.step, 1);
    assert.notEqual(state.parent_checkpoint, null);
    assert.deepEqual(values, state.values, "runs.wait returned the final state");
  });

  it("thread values and metadata.graph_id/assistant_id after a run", async () => {
    const t = await newThread({ mine: 1 });
    await client.runs.wait(t.thread_id, GRAPH_ID, { input: human("values") });
    const got = await client.threads.get(t.thread_id);
    checkThread(got);
    assert.equal(got.status, "idle");
    assert.deepEqual(texts(got.values), ["human:values", "ai:echo: values"]);
    assert.equal(got.metadata.graph_id, GRAPH_ID);
    assert.equal(got.metadata.assistant_id, GRAPH_ASSISTANT_ID);
    assert.equal(got.metadata.mine, 1);
  });

  it("history is newest first, chained by parent_checkpoint, with the 3-checkpoint shape", async () => {
    const t = await newThread();
    await client.runs.wait(t.thread_id, GRAPH_ID, { input: human("hello") });
    const state = await client.threads.getState(t.thread_id);
    const history = await client.threads.getHistory(t.thread_id);
    assert.equal(history.length, 3, "one run writes 3 checkpoints");
    history.forEach((h) => checkState(h, t.thread_id));
    assert.equal(
      history[0].checkpoint.checkpoint_id,
      state.checkpoint.checkpoint_id,
      "[0] is the current state",
    );
    for (let i = 0; i + 1 < history.length; i++) {
      assert.equal(
        history[i].parent_checkpoint?.checkpoint_id,
        history[i + 1].checkpoint.checkpoint_id,
        `history[${i}].parent_checkpoint is history[${i + 1}]`,
      );
    }
    assert.equal(history[2].parent_checkpoint, null, "only the oldest has no parent");
    const shape = history.map((h) => ({
      n: (h.values.messages ?? []).length,
      next: h.next,
      source: h.metadata.source,
      step: h.metadata.step,
    }));
    assert.deepEqual(shape, [
      { n: 2, next: [], source: "loop", step: 1 },
      { n: 1, next: ["echo"], source: "loop", step: 0 },
      { n: 0, next: ["__start__"], source: "input", step: -1 },
    ]);
    assert.deepEqual(
      history[1].tasks.map((task) => task.name),
      ["echo"],
    );

    const limited = await client.threads.getHistory(t.thread_id, { limit: 2 });
    assert.deepEqual(
      limited.map((h) => h.checkpoint.checkpoint_id),
      history.slice(0, 2).map((h) => h.checkpoint.checkpoint_id),
      "limit is honoured",
    );
  });

  it("getState at a checkpoint, by id string and by {checkpoint_id}", async () => {
    const t = await newThread();
    await client.runs.wait(t.thread_id, GRAPH_ID, { input: human("hello") });
    const history = await client.threads.getHistory(t.thread_id);
    const mid = history[1];
    const byString = await client.threads.getState(t.thread_id, mid.checkpoint.checkpoint_id);
    checkState(byString, t.thread_id);
    assert.equal(byString.checkpoint.checkpoint_id, mid.checkpoint.checkpoint_id);
    assert.deepEqual(byString.next, ["echo"]);
    assert.deepEqual(texts(byString.values), ["human:hello"]);
    const byObject = await client.threads.getState(t.thread_id, {
      checkpoint_id: mid.checkpoint.checkpoint_id,
    });
    checkState(byObject, t.thread_id);
    assert.equal(byObject.checkpoint.checkpoint_id, mid.checkpoint.checkpoint_id);
    assert.deepEqual(byObject.next, ["echo"]);
    assert.deepEqual(texts(byObject.values), ["human:hello"]);
  });

  it("getState and getHistory of an unknown thread are 404", async () => {
    await expectHttpError(
      client.threads.getState(crypto.randomUUID()),
      [404],
      "state of unknown thread",
    );
    await expectHttpError(
      client.threads.getHistory(crypto.randomUUID()),
      [404],
      "history of unknown thread",
    );
  });

  it("updateState as echo adds an update checkpoint that the next run continues from", async () => {
    const t = await newThread();
    await client.runs.wait(t.thread_id, GRAPH_ID, { input: human("hello") });
    const before = await client.threads.getState(t.thread_id);
    const res = await client.threads.updateState(t.thread_id, {
      values: { messages: [{ role: "assistant", content: "injected" }] },
      asNode: "echo",
    });
    assert.ok(isObject(res?.checkpoint), "updateState returns {checkpoint}");
    assert.equal(typeof res.checkpoint.checkpoint_id, "string");
    const after = await client.threads.getState(t.thread_id);
    checkState(after, t.thread_id);
    checkMessages(after.values);
    assert.equal(after.checkpoint.checkpoint_id, res.checkpoint.checkpoint_id);
    assert.deepEqual(after.next, [], "as_node echo: nothing left to run");
    assert.equal(after.metadata.source, "update");
    assert.equal(
      after.parent_checkpoint?.checkpoint_id,
      before.checkpoint.checkpoint_id,
      "parent is the old head",
    );
    assert.deepEqual(
      texts(after.values),
      ["human:hello", "ai:echo: hello", "ai:injected"],
      "reducer appended",
    );

    const values = await client.runs.wait(t.thread_id, GRAPH_ID, { input: human("again") });
    assert.deepEqual(texts(values), [
      "human:hello",
      "ai:echo: hello",
      "ai:injected",
      "human:again",
      "ai:echo: again",
    ]);
    const history = await client.threads.getHistory(t.thread_id, { limit: 100 });
    assert.ok(
      history.some((h) => h.checkpoint.checkpoint_id === res.checkpoint.checkpoint_id),
      "the update checkpoint is in the history",
    );
  });

  it("updateState on a busy thread is 409", async () => {
    const t = await newThread();
    await client.runs.wait(t.thread_id, GRAPH_ID, { input: human("first") });
    const run = await client.runs.create(t.thread_id, GRAPH_ID, { input: human(LONG_SLEEP) });
    try {
      await expectHttpError(
        client.threads.updateState(t.thread_id, {
          values: { messages: [{ role: "user", content: "x" }] },
          asNode: "echo",
        }),
        [409],
        "updateState while busy",
      );
    } finally {
      await client.runs.cancel(t.thread_id, run.run_id, true);
    }
  });

  it("thread is busy while a run is pending or running and idle after", async () => {
    const t = await newThread();
    const run = await client.runs.create(t.thread_id, GRAPH_ID, { input: human("sleep:2000") });
    assert.equal((await client.threads.get(t.thread_id)).status, "busy", "busy while pending");
    await waitRun(t.thread_id, run.run_id, (s) => s !== "pending", "the run to start");
    const during = await client.threads.get(t.thread_id);
    if ((await runStatus(t.thread_id, run.run_id)) === "running") {
      assert.equal(during.status, "busy", "busy while running");
    }
    await client.runs.join(t.thread_id, run.run_id);
    assert.equal(await runStatus(t.thread_id, run.run_id), "success");
    assert.equal((await client.threads.get(t.thread_id)).status, "idle");
  });

  it("a failed run leaves the run and the thread in error", async (t) => {
    const thread = await newThread();
    // An input the graph cannot read: no message can have this role.
    const bad = { messages: [{ role: "no-such-role", content: "x" }] };
    let run;
    try {
      run = await client.runs.create(thread.thread_id, GRAPH_ID, { input: bad });
    } catch (err) {
      if (err?.status === 400 || err?.status === 422) {
        t.skip(
          `the server rejects the invalid input up front (HTTP ${err.status}); no failed run to check`,
        );
        return;
      }
      throw err;
    }
    assert.equal(await waitRunEnded(thread.thread_id, run.run_id), "error");
    const after = await waitThreadNotBusy(thread.thread_id);
    assert.equal(after.status, "error");

    // runs.wait reports the failure as {__error__}, which the SDK throws.
    const other = await newThread();
    await assert.rejects(
      client.runs.wait(other.thread_id, GRAPH_ID, { input: bad }),
      (err) =>
        err?.status === undefined && typeof err.message === "string" && err.message.length > 0,
    );
    const raw = await client.runs.wait(other.thread_id, GRAPH_ID, {
      input: bad,
      raiseError: false,
    });
    assert.ok(isObject(raw.__error__), "wait body has __error__");
    assert.equal(typeof raw.__error__.error, "string");
    assert.equal(typeof raw.__error__.message, "string");

    // The stream ends with an `error` event.
    const third = await newThread();
    const parts = await collect(
      client.runs.stream(third.thread_id, GRAPH_ID, { input: bad, streamMode: ["values"] }),
    );
    assert.equal(parts[0].event, "metadata");
    const tail = parts.filter((p) => p.event !== "end");
    const last = tail[tail.length - 1];
    assert.equal(last.event, "error");
    assert.equal(typeof last.data.error, "string");
    assert.equal(typeof last.data.message, "string");
  });
});

describe("runs (§2.3)", () => {
  it("create returns a pending run and reports it through onRunCreated", async () => {
    const t = await newThread();
    let created;
    const run = await client.runs.create(t.thread_id, GRAPH_ID, {
      input: human("bg"),
      onRunCreated: (meta) => (created = meta),
    });
    checkRun(run);
    assert.equal(run.status, "pending");
    assert.equal(run.thread_id, t.thread_id);
    assert.equal(
      run.assistant_id,
      GRAPH_ASSISTANT_ID,
      "the graph id resolves to the assistant's UUID",
    );
    assert.equal(run.multitask_strategy, "reject", "the default strategy");
    assert.deepEqual(created, { run_id: run.run_id, thread_id: t.thread_id }, "Content-Location");
    const values = await client.runs.join(t.thread_id, run.run_id);
    assert.deepEqual(texts(values), ["human:bg", "ai:echo: bg"]);
  });

  it("wait returns the final values and reports the run through onRunCreated", async () => {
    const t = await newThread();
    let created;
    const values = await client.runs.wait(t.thread_id, GRAPH_ID, {
      input: human("w"),
      onRunCreated: (meta) => (created = meta),
    });
    assert.ok(isObject(values));
    checkMessages(values);
    assert.deepEqual(texts(values), ["human:w", "ai:echo: w"]);
    assert.deepEqual(values, (await client.threads.getState(t.thread_id)).values);
    assert.ok(created, "onRunCreated fired (Content-Location)");
    assert.equal(created.thread_id, t.thread_id);
    const run = await client.runs.get(t.thread_id, created.run_id);
    checkRun(run);
    assert.equal(run.status, "success");
  });

  it("wait with the assistant UUID works like the graph id", async () => {
    const t = await newThread();
    const values = await client.runs.wait(t.thread_id, GRAPH_ASSISTANT_ID, {
      input: human("uuid"),
    });
    assert.deepEqual(texts(values), ["human:uuid", "ai:echo: uuid"]);
  });

  it("ifNotExists create makes the thread", async () => {
    const id = crypto.randomUUID();
    const values = await client.runs.wait(id, GRAPH_ID, {
      input: human("new"),
      ifNotExists: "create",
    });
    assert.deepEqual(texts(values), ["human:new", "ai:echo: new"]);
    const t = await client.threads.get(id);
    checkThread(t);
    assert.equal(t.thread_id, id);
  });

  it("join blocks until the run is done and returns the final values", async () => {
    const t = await newThread();
    const run = await client.runs.create(t.thread_id, GRAPH_ID, { input: human("sleep:1000") });
    const values = await client.runs.join(t.thread_id, run.run_id);
    assert.deepEqual(texts(values), ["human:sleep:1000", "ai:echo: sleep:1000"]);
    assert.equal(await runStatus(t.thread_id, run.run_id), "success");
  });

  it("joinStream yields the events published after joining and ends with the run", async () => {
    const t = await newThread();
    const run = await client.runs.create(t.thread_id, GRAPH_ID, {
      input: human("sleep:3000"),
      streamMode: ["values", "updates"],
    });
    await waitRun(t.thread_id, run.run_id, (s) => s === "running", "the run to start");
    const parts = await collect(client.runs.joinStream(t.thread_id, run.run_id));
    // The stream ended: so did the run.
    assert.equal(await runStatus(t.thread_id, run.run_id), "success");
    assert.deepEqual(
      parts.filter((p) => p.event === "error"),
      [],
    );
    const updates = parts.filter((p) => p.event === "updates");
    assert.ok(
      updates.some((p) => JSON.stringify(p.data?.echo ?? null).includes("echo: sleep:3000")),
      `an updates event from echo (the run's own modes): ${JSON.stringify(parts.map((p) => p.event))}`,
    );
    const values = parts.filter((p) => p.event === "values");
    assert.ok(values.length >= 1, "a values event");
    assert.deepEqual(texts(values[values.length - 1].data), [
      "human:sleep:3000",
      "ai:echo: sleep:3000",
    ]);
  });

  it("joinStream with streamMode in the query carries only those modes", async (t) => {
    const thread = await newThread();
    const run = await client.runs.create(thread.thread_id, GRAPH_ID, {
      input: human("sleep:3000"),
      streamMode: ["values", "updates"],
    });
    await waitRun(thread.thread_id, run.run_id, (s) => s === "running", "the run to start");
    const parts = await collect(
      client.runs.joinStream(thread.thread_id, run.run_id, { streamMode: ["updates"] }),
    );
    assert.equal(await runStatus(thread.thread_id, run.run_id), "success");
    assert.deepEqual(
      parts.filter((p) => p.event === "error"),
      [],
    );
    assert.ok(
      parts.some(
        (p) => p.event === "updates" && texts(p.data?.echo).includes("ai:echo: sleep:3000"),
      ),
      `an updates event from echo: ${JSON.stringify(parts.map((p) => p.event))}`,
    );
    const values = parts.filter((p) => p.event === "values");
    if (REFERENCE && values.length > 0) {
      // Reference-server bug: @langchain/langgraph-api 1.5.1 ignores the join's stream_mode
      // query (§3) and sends every mode the run was created with.
      t.skip("reference server ignores stream_mode on GET .../runs/{run_id}/stream (spec §3)");
      return;
    }
    assert.deepEqual(values, [], "no values events: only updates were asked for");
  });

  it("joinStream does not replay events published before joining", async (t) => {
    if (REFERENCE) {
      // Reference-server bug: in @langchain/langgraph-api 1.5.1 a run's stream is one
      // consume-once queue (storage/ops.mjs Queue: log.shift()). Events nobody has read yet
      // are handed to the next reader, so a late join "replays" them, and two concurrent
      // readers (the creating stream and a join) split the events between them. §2.3: a
      // join yields the events published after joining.
      t.skip("reference server: a run's stream is a consume-once queue shared by all readers");
      return;
    }
    // The run's own stream tells when its first values event (the input) was published;
    // a join made after that must not yield it again (no Last-Event-ID, not resumable), and
    // must yield everything published after it (both readers see every later event).
    const thread = await newThread();
    let created;
    const own = client.runs
      .stream(thread.thread_id, GRAPH_ID, {
        input: human("sleep:3000"),
        streamMode: ["values", "updates"],
        onRunCreated: (m) => (created = m),
      })
      [Symbol.asyncIterator]();
    const seen = [];
    for (;;) {
      const { value, done } = await own.next();
      assert.ok(!done, "the run's stream ended before its first values event");
      seen.push(value);
      if (value.event === "values") break;
    }
    assert.deepEqual(texts(seen[seen.length - 1].data), ["human:sleep:3000"]);
    const joined = await collect(client.runs.joinStream(thread.thread_id, created.run_id));
    for (;;) {
      const { value, done } = await own.next();
      if (done) break;
      seen.push(value);
    }
    assert.equal(await runStatus(thread.thread_id, created.run_id), "success");
    const joinedValues = joined.filter((p) => p.event === "values").map((p) => texts(p.data));
    assert.ok(joinedValues.length >= 1, "the join yields the final values");
    assert.deepEqual(joinedValues[joinedValues.length - 1], [
      "human:sleep:3000",
      "ai:echo: sleep:3000",
    ]);
    assert.ok(
      !joinedValues.some((v) => v.length === 1),
      `the input values event was replayed: ${JSON.stringify(joinedValues)}`,
    );
    // The creating stream still got every event after its first values.
    const ownEvents = seen.map((p) => p.event).filter((e) => e !== "end");
    assert.deepEqual(ownEvents, ["metadata", "values", "updates", "values"]);
  });

  it("a resumable run's joinStream with lastEventId replays the events after that id", async () => {
    // §2.3: a run created with stream_resumable:true keeps its events; a join with
    // Last-Event-ID yields those after it (what the SDK's reconnection and useStream use).
    const thread = await newThread();
    let created;
    const parts = await collect(
      client.runs.stream(thread.thread_id, GRAPH_ID, {
        input: human("resume me"),
        streamMode: ["values", "updates"],
        streamResumable: true,
        onRunCreated: (m) => (created = m),
      }),
    );
    const events = parts.filter((p) => p.event !== "end");
    assert.deepEqual(
      events.map((p) => p.event),
      ["metadata", "values", "updates", "values"],
    );
    assert.ok(
      events.every((p) => p.id !== undefined),
      "events of a thread stream carry ids",
    );
    const run = await client.runs.get(thread.thread_id, created.run_id);
    assert.equal(run.kwargs?.resumable, true);
    const replayed = await collect(
      client.runs.joinStream(thread.thread_id, created.run_id, { lastEventId: events[1].id }),
    );
    const shape = (p) => [p.id, p.event, JSON.stringify(p.data)];
    assert.deepEqual(
      replayed.filter((p) => p.event !== "end").map(shape),
      events.slice(2).map(shape),
    );
  });

  it("get returns the run; an unknown run is 404", async () => {
    const t = await newThread();
    const run = await client.runs.create(t.thread_id, GRAPH_ID, { input: human("g") });
    await client.runs.join(t.thread_id, run.run_id);
    const got = await client.runs.get(t.thread_id, run.run_id);
    checkRun(got);
    assert.equal(got.run_id, run.run_id);
    assert.equal(got.thread_id, t.thread_id);
    assert.equal(got.assistant_id, GRAPH_ASSISTANT_ID);
    assert.equal(got.status, "success");
    await expectHttpError(client.runs.get(t.thread_id, crypto.randomUUID()), [404], "unknown run");
  });

  it("list returns the thread's runs and honours limit and offset", async (t) => {
    const thread = await newThread();
    const ids = [];
    for (const s of ["l1", "l2", "l3"]) {
      let created;
      await client.runs.wait(thread.thread_id, GRAPH_ID, {
        input: human(s),
        onRunCreated: (m) => (created = m),
      });
      ids.push(created.run_id);
    }
    const all = await client.runs.list(thread.thread_id);
    all.forEach(checkRun);
    // Order is not checked: the Platform lists newest first, the JS dev server oldest first.
    assert.deepEqual(all.map((r) => r.run_id).sort(), [...ids].sort());
    for (const r of all) assert.equal(r.thread_id, thread.thread_id);
    assert.equal((await client.runs.list(thread.thread_id, { limit: 2 })).length, 2);
    if (REFERENCE) {
      // §4: the JS dev server pages with slice(offset, limit), so offset is not checked.
      t.diagnostic("offset not checked against the reference server (spec §4)");
      return;
    }
    const p1 = await client.runs.list(thread.thread_id, { limit: 2, offset: 0 });
    const p2 = await client.runs.list(thread.thread_id, { limit: 2, offset: 2 });
    assert.equal(p1.length, 2);
    assert.equal(p2.length, 1);
    assert.deepEqual([...p1, ...p2].map((r) => r.run_id).sort(), [...ids].sort());
  });

  it("list of an unknown thread is 404", async () => {
    await expectHttpError(client.runs.list(crypto.randomUUID()), [404], "runs of unknown thread");
  });

  it("delete removes a finished run", async () => {
    const t = await newThread();
    const run = await client.runs.create(t.thread_id, GRAPH_ID, { input: human("d") });
    await client.runs.join(t.thread_id, run.run_id);
    await client.runs.delete(t.thread_id, run.run_id);
    await expectHttpError(client.runs.get(t.thread_id, run.run_id), [404], "get after delete");
    assert.ok(!(await client.runs.list(t.thread_id)).some((r) => r.run_id === run.run_id));
  });

  it("an unknown assistant is 404 on create, wait and stream", async () => {
    const t = await newThread();
    const missing = uniqueLabel("no-such-graph");
    await expectHttpError(
      client.runs.create(t.thread_id, missing, { input: human("x") }),
      [404],
      "create",
    );
    await expectHttpError(
      client.runs.wait(t.thread_id, missing, { input: human("x") }),
      [404],
      "wait",
    );
    await expectHttpError(
      () => collect(client.runs.stream(t.thread_id, missing, { input: human("x") })),
      [404],
      "stream",
    );
    await expectHttpError(
      client.runs.create(t.thread_id, crypto.randomUUID(), { input: human("x") }),
      [404],
      "create with an unknown assistant UUID",
    );
  });

  it("afterSeconds delays the start of a run (§2.3)", async () => {
    const t = await newThread();
    const started = Date.now();
    const run = await client.runs.create(t.thread_id, GRAPH_ID, {
      input: human("later"),
      afterSeconds: 1,
    });
    assert.equal(run.status, "pending");
    await pause(400);
    assert.equal((await client.runs.get(t.thread_id, run.run_id)).status, "pending");
    const values = await client.runs.join(t.thread_id, run.run_id);
    assert.ok(Date.now() - started >= 1000, "it started after its after_seconds");
    assert.deepEqual(texts(values), ["human:later", "ai:echo: later"]);
  });

  it("a webhook receives the Run, its status and final values once it ends (§2.3)", async () => {
    const received = [];
    const receiver = http.createServer((req, res) => {
      let body = "";
      req.on("data", (chunk) => (body += chunk));
      req.on("end", () => {
        received.push({ method: req.method, url: req.url, body: JSON.parse(body) });
        res.end("{}");
      });
    });
    await new Promise((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    try {
      const webhook = `http://127.0.0.1:${receiver.address().port}/hook`;
      const t = await newThread();
      await client.runs.wait(t.thread_id, GRAPH_ID, { input: human("hooked"), webhook });
      await poll("the webhook", async () => received.length, (n) => n === 1);
      const [{ method, url, body }] = received;
      assert.equal(method, "POST");
      assert.equal(url, "/hook");
      assert.equal(body.thread_id, t.thread_id);
      assert.equal(body.status, "success");
      assert.ok(isUuid(body.run_id));
      assert.ok(isTime(body.run_started_at) && isTime(body.run_ended_at));
      if (REFERENCE) {
        // The JS dev server posts its messages as LangChain constructor objects
        // ({lc, type: "constructor", id, kwargs}), not as the API's message dicts.
        const contents = body.values.messages.map((m) => m.kwargs?.content ?? m.content);
        assert.deepEqual(contents, ["hooked", "echo: hooked"]);
      } else {
        assert.deepEqual(texts(body.values), ["human:hooked", "ai:echo: hooked"]);
      }
    } finally {
      receiver.close();
    }
  });

  it("an unknown thread is 404 on create, wait and stream", async () => {
    // §4: the JS dev server answers 422 ("thread busy"); the Platform 404.
    const statuses = REFERENCE ? [404, 422] : [404];
    const id = crypto.randomUUID();
    await expectHttpError(
      client.runs.create(id, GRAPH_ID, { input: human("x") }),
      statuses,
      "create",
    );
    await expectHttpError(client.runs.wait(id, GRAPH_ID, { input: human("x") }), statuses, "wait");
    await expectHttpError(
      () => collect(client.runs.stream(id, GRAPH_ID, { input: human("x") })),
      statuses,
      "stream",
    );
  });
});

describe("streaming (§3)", () => {
  it("values+updates: metadata first, then the input, echo's update and the final state", async () => {
    const t = await newThread();
    let created;
    const parts = await collect(
      client.runs.stream(t.thread_id, GRAPH_ID, {
        input: human("s2"),
        streamMode: ["values", "updates"],
        onRunCreated: (m) => (created = m),
      }),
    );
    assert.ok(created, "onRunCreated fired (Content-Location)");
    assert.equal(created.thread_id, t.thread_id);
    const body = checkStream(parts, created.run_id, ["values", "updates"]);
    const events = body.map((p) => p.event);
    assert.deepEqual(events, ["values", "updates", "values"], "event order");
    assert.deepEqual(texts(body[0].data), ["human:s2"], "the first values is the input checkpoint");
    assert.deepEqual(Object.keys(body[1].data), ["echo"]);
    assert.deepEqual(texts(body[1].data.echo), ["ai:echo: s2"]);
    const state = await client.threads.getState(t.thread_id);
    assert.deepEqual(body[2].data, state.values, "the last values is the final state");
    assert.deepEqual(texts(body[2].data), ["human:s2", "ai:echo: s2"]);
    const run = await client.runs.get(t.thread_id, created.run_id);
    assert.equal(run.status, "success");
  });

  it("updates only (stream_mode as a string): no values events", async () => {
    const t = await newThread();
    let created;
    const parts = await collect(
      client.runs.stream(t.thread_id, GRAPH_ID, {
        input: human("u"),
        streamMode: "updates",
        onRunCreated: (m) => (created = m),
      }),
    );
    const body = checkStream(parts, created.run_id, ["updates"]);
    assert.ok(body.length >= 1);
    assert.ok(body.some((p) => texts(p.data?.echo).includes("ai:echo: u")));
  });

  it("messages-tuple: `messages` events of [message, metadata] from echo", async () => {
    const t = await newThread();
    let created;
    const parts = await collect(
      client.runs.stream(t.thread_id, GRAPH_ID, {
        input: human("hi"),
        streamMode: "messages-tuple",
        onRunCreated: (m) => (created = m),
      }),
    );
    const body = checkStream(parts, created.run_id, ["messages"]);
    assert.ok(body.length >= 1, "at least one messages event");
    for (const p of body) {
      assert.ok(
        Array.isArray(p.data) && p.data.length === 2,
        `[message, metadata]: ${JSON.stringify(p.data)}`,
      );
      assert.ok(isObject(p.data[0]));
      assert.ok(isObject(p.data[1]));
    }
    const fromEcho = body.filter((p) => p.data[1].langgraph_node === "echo");
    assert.ok(fromEcho.length >= 1, "an event with metadata.langgraph_node == echo");
    // One complete message for a node that returns messages without streaming an LLM.
    const content = fromEcho.map((p) => p.data[0].content).join("");
    assert.equal(content, "echo: hi");
  });

  it("messages (legacy): messages/* events", async () => {
    const t = await newThread();
    let created;
    const parts = await collect(
      client.runs.stream(t.thread_id, GRAPH_ID, {
        input: human("hi"),
        streamMode: "messages",
        onRunCreated: (m) => (created = m),
      }),
    );
    const body = checkStream(parts, created.run_id, [
      "messages/metadata",
      "messages/partial",
      "messages/complete",
    ]);
    assert.ok(body.length >= 1, "at least one messages/* event");
    for (const p of body) assert.ok(p.data !== undefined, `${p.event} has data`);
    assert.equal(await runStatus(t.thread_id, created.run_id), "success");
  });

  for (const mode of ["debug", "events", "tasks", "checkpoints"]) {
    it(`${mode}: events named "${mode}"`, async () => {
      const t = await newThread();
      let created;
      const parts = await collect(
        client.runs.stream(t.thread_id, GRAPH_ID, {
          input: human("hi"),
          streamMode: mode,
          onRunCreated: (m) => (created = m),
        }),
      );
      const body = checkStream(parts, created.run_id, [mode]);
      assert.ok(body.length >= 1, `at least one ${mode} event`);
      for (const p of body) assert.ok(isObject(p.data), `${mode} data is an object`);
      assert.equal(await runStatus(t.thread_id, created.run_id), "success");
      assert.deepEqual(texts((await client.threads.getState(t.thread_id)).values), [
        "human:hi",
        "ai:echo: hi",
      ]);
    });
  }

  it("custom: no error (the echo graph writes no custom data)", async () => {
    const t = await newThread();
    let created;
    const parts = await collect(
      client.runs.stream(t.thread_id, GRAPH_ID, {
        input: human("hi"),
        streamMode: "custom",
        onRunCreated: (m) => (created = m),
      }),
    );
    checkStream(parts, created.run_id, ["custom"]);
    assert.equal(await runStatus(t.thread_id, created.run_id), "success");
  });
});

describe("cancel (§2.3)", () => {
  it("interrupt (wait): the run is interrupted, the thread idle, the input kept, no echo", async () => {
    const t = await newThread();
    const run = await client.runs.create(t.thread_id, GRAPH_ID, { input: human(LONG_SLEEP) });
    await waitInputVisible(t.thread_id, LONG_SLEEP);
    await client.runs.cancel(t.thread_id, run.run_id, true, "interrupt");
    // Ending well before the sleep would: the wait stopped when the run was cancelled.
    assert.equal(await waitRunEnded(t.thread_id, run.run_id), "interrupted");
    assert.equal((await waitThreadNotBusy(t.thread_id)).status, "idle");
    assert.deepEqual(texts((await client.threads.getState(t.thread_id)).values), [
      `human:${LONG_SLEEP}`,
    ]);
  });

  it("interrupt (no wait): the run ends interrupted", async () => {
    const t = await newThread();
    const run = await client.runs.create(t.thread_id, GRAPH_ID, { input: human(LONG_SLEEP) });
    await waitInputVisible(t.thread_id, LONG_SLEEP);
    await client.runs.cancel(t.thread_id, run.run_id, false, "interrupt");
    assert.equal(await waitRunEnded(t.thread_id, run.run_id), "interrupted");
    assert.equal((await waitThreadNotBusy(t.thread_id)).status, "idle");
    assert.deepEqual(texts((await client.threads.getState(t.thread_id)).values), [
      `human:${LONG_SLEEP}`,
    ]);
    // The thread takes new runs.
    const values = await client.runs.wait(t.thread_id, GRAPH_ID, { input: human("next") });
    assert.deepEqual(texts(values), [`human:${LONG_SLEEP}`, "human:next", "ai:echo: next"]);
  });

  it("rollback: the run and its checkpoints are deleted", async () => {
    const t = await newThread();
    const run = await client.runs.create(t.thread_id, GRAPH_ID, { input: human(LONG_SLEEP) });
    await waitInputVisible(t.thread_id, LONG_SLEEP);
    await client.runs.cancel(t.thread_id, run.run_id, true, "rollback");
    if (REFERENCE) {
      // §4: the JS dev server keeps the run (status error) and its checkpoints.
      assert.equal(await waitRunEnded(t.thread_id, run.run_id), "error");
      assert.notEqual((await waitThreadNotBusy(t.thread_id)).status, "busy");
      assert.deepEqual(texts((await client.threads.getState(t.thread_id)).values), [
        `human:${LONG_SLEEP}`,
      ]);
      return;
    }
    await waitRunGone(t.thread_id, run.run_id);
    assert.notEqual((await waitThreadNotBusy(t.thread_id)).status, "busy");
    assert.deepEqual(
      texts((await client.threads.getState(t.thread_id)).values),
      [],
      "its input is gone",
    );
  });

  it("cancel of an unknown run is 404", async () => {
    const t = await newThread();
    await expectHttpError(
      client.runs.cancel(t.thread_id, crypto.randomUUID()),
      [404],
      "cancel unknown run",
    );
  });
});

describe("multitask strategies (§2.5)", () => {
  it("reject: a second run is refused and the first is not affected", async () => {
    // §4: the JS dev server answers 422, the Platform 409.
    const statuses = REFERENCE ? [409, 422] : [409];
    const t = await newThread();
    const a = await client.runs.create(t.thread_id, GRAPH_ID, { input: human(LONG_SLEEP) });
    try {
      await expectHttpError(
        client.runs.create(t.thread_id, GRAPH_ID, {
          input: human("B"),
          multitaskStrategy: "reject",
        }),
        statuses,
        "create with reject",
      );
      await expectHttpError(
        client.runs.create(t.thread_id, GRAPH_ID, { input: human("B") }),
        statuses,
        "create with the default strategy",
      );
      await expectHttpError(
        client.runs.wait(t.thread_id, GRAPH_ID, { input: human("B"), multitaskStrategy: "reject" }),
        statuses,
        "wait with reject",
      );
      await expectHttpError(
        () => collect(client.runs.stream(t.thread_id, GRAPH_ID, { input: human("B") })),
        statuses,
        "stream with the default strategy",
      );
      assert.ok(
        ["pending", "running"].includes(await runStatus(t.thread_id, a.run_id)),
        "A still runs",
      );
      const runs = await client.runs.list(t.thread_id);
      assert.deepEqual(
        runs.map((r) => r.run_id),
        [a.run_id],
        "no run was created for B",
      );
    } finally {
      await client.runs.cancel(t.thread_id, a.run_id, true);
    }
    await waitRunEnded(t.thread_id, a.run_id);
    assert.ok(!texts((await client.threads.getState(t.thread_id)).values).includes("human:B"));
  });

  it("interrupt: the running run is interrupted, its input kept, the new run applied on top", async () => {
    const t = await newThread();
    const a = await client.runs.create(t.thread_id, GRAPH_ID, { input: human(LONG_SLEEP) });
    await waitInputVisible(t.thread_id, LONG_SLEEP);
    const b = await client.runs.create(t.thread_id, GRAPH_ID, {
      input: human("B"),
      multitaskStrategy: "interrupt",
    });
    checkRun(b);
    assert.equal(b.multitask_strategy, "interrupt");
    const values = await client.runs.join(t.thread_id, b.run_id);
    assert.equal(await runStatus(t.thread_id, a.run_id), "interrupted");
    assert.equal(await runStatus(t.thread_id, b.run_id), "success");
    assert.deepEqual(texts(values), [`human:${LONG_SLEEP}`, "human:B", "ai:echo: B"]);
    assert.deepEqual(texts((await client.threads.getState(t.thread_id)).values), texts(values));
    assert.equal((await waitThreadNotBusy(t.thread_id)).status, "idle");
  });

  it("rollback: the running run is cancelled and rolled back, the new run applied last", async () => {
    const t = await newThread();
    const a = await client.runs.create(t.thread_id, GRAPH_ID, { input: human(LONG_SLEEP) });
    await waitInputVisible(t.thread_id, LONG_SLEEP);
    const b = await client.runs.create(t.thread_id, GRAPH_ID, {
      input: human("B"),
      multitaskStrategy: "rollback",
    });
    checkRun(b);
    assert.equal(b.multitask_strategy, "rollback");
    const values = await client.runs.join(t.thread_id, b.run_id);
    assert.equal(await runStatus(t.thread_id, b.run_id), "success");
    const final = texts((await client.threads.getState(t.thread_id)).values);
    assert.deepEqual(final, texts(values));
    assert.ok(!final.includes(`ai:echo: ${LONG_SLEEP}`), "no echo of A");
    assert.deepEqual(final.slice(-2), ["human:B", "ai:echo: B"], "B is applied last");
    if (REFERENCE) {
      // §4: the JS dev server keeps A (status error) and its checkpoints.
      assert.equal(await runStatus(t.thread_id, a.run_id), "error");
      assert.deepEqual(final, [`human:${LONG_SLEEP}`, "human:B", "ai:echo: B"]);
    } else {
      // Platform: A and its checkpoints are deleted.
      await expectHttpError(client.runs.get(t.thread_id, a.run_id), [404], "A after rollback");
      assert.deepEqual(final, ["human:B", "ai:echo: B"], "A's input is gone");
    }
    assert.equal((await waitThreadNotBusy(t.thread_id)).status, "idle");
  });

  it("enqueue: the new run waits and runs after the first", async () => {
    const t = await newThread();
    const a = await client.runs.create(t.thread_id, GRAPH_ID, { input: human("sleep:1000") });
    const b = await client.runs.create(t.thread_id, GRAPH_ID, {
      input: human("B"),
      multitaskStrategy: "enqueue",
    });
    checkRun(b);
    assert.equal(b.status, "pending");
    assert.equal(b.multitask_strategy, "enqueue");
    const values = await client.runs.join(t.thread_id, b.run_id);
    assert.equal(await runStatus(t.thread_id, a.run_id), "success");
    assert.equal(await runStatus(t.thread_id, b.run_id), "success");
    assert.deepEqual(texts(values), [
      "human:sleep:1000",
      "ai:echo: sleep:1000",
      "human:B",
      "ai:echo: B",
    ]);
    assert.equal((await waitThreadNotBusy(t.thread_id)).status, "idle");
  });
});

describe("stateless runs (§2.4)", () => {
  it("wait returns the final values; Content-Location is /runs/{id}", async () => {
    let created;
    const values = await client.runs.wait(null, GRAPH_ID, {
      input: human("sl"),
      onRunCreated: (m) => (created = m),
    });
    assert.deepEqual(texts(values), ["human:sl", "ai:echo: sl"]);
    assert.ok(created, "onRunCreated fired");
    assert.ok(isUuid(created.run_id));
    assert.equal(created.thread_id, undefined, "no thread in the Content-Location");
  });

  it("stream: metadata first with the run id, then the values", async () => {
    let created;
    const parts = await collect(
      client.runs.stream(null, GRAPH_ID, {
        input: human("sl"),
        streamMode: ["values"],
        onRunCreated: (m) => (created = m),
      }),
    );
    assert.ok(created, "onRunCreated fired");
    assert.equal(created.thread_id, undefined, "no thread in the Content-Location");
    const body = checkStream(parts, created.run_id, ["values"]);
    assert.ok(body.length >= 1);
    assert.deepEqual(texts(body[body.length - 1].data), ["human:sl", "ai:echo: sl"]);
  });
});

describe("crons (client.crons)", { skip: REFERENCE && "the JS dev server serves no crons" }, () => {
  it("createForThread runs on its schedule; search, count, update and delete", async () => {
    const thread = await client.threads.create({ metadata: { suite: SUITE } });
    const cron = await client.crons.createForThread(thread.thread_id, GRAPH_ID, {
      schedule: "* * * * * *", // every second (croniter's sixth field)
      input: human("cron"),
      multitaskStrategy: "enqueue",
      metadata: { suite: SUITE, kind: "thread" },
    });
    assert.ok(isUuid(cron.cron_id));
    assert.equal(cron.thread_id, thread.thread_id);
    assert.equal(cron.assistant_id, await uuid5(NAMESPACE_GRAPH, GRAPH_ID));
    assert.equal(cron.schedule, "* * * * * *");
    assert.equal(cron.enabled, true);
    assert.ok(Date.parse(cron.next_run_date) > Date.parse(cron.created_at) - 1000);
    await poll(
      "two runs made by the cron",
      () => client.runs.list(thread.thread_id),
      (runs) => runs.filter((r) => r.status === "success").length >= 2,
    );
    const state = await client.threads.getState(thread.thread_id);
    assert.deepEqual(texts(state.values).slice(0, 2), ["human:cron", "ai:echo: cron"]);

    const found = await client.crons.search({ threadId: thread.thread_id });
    assert.deepEqual(
      found.map((c) => c.cron_id),
      [cron.cron_id],
    );
    assert.equal(await client.crons.count({ threadId: thread.thread_id }), 1);
    assert.equal(await client.crons.count({ metadata: { suite: SUITE, kind: "thread" } }), 1);
    const selected = await client.crons.search({
      threadId: thread.thread_id,
      select: ["cron_id", "schedule"],
    });
    assert.deepEqual(selected, [{ cron_id: cron.cron_id, schedule: "* * * * * *" }]);

    const updated = await client.crons.update(cron.cron_id, {
      schedule: "0 9 * * *",
      timezone: "Europe/Paris",
      enabled: false,
    });
    assert.equal(updated.schedule, "0 9 * * *");
    assert.equal(updated.timezone, "Europe/Paris");
    assert.equal(updated.enabled, false);
    assert.equal(updated.next_run_date, null);
    assert.equal((await client.crons.search({ threadId: thread.thread_id, enabled: true })).length, 0);

    await client.crons.delete(cron.cron_id);
    assert.equal(await client.crons.count({ threadId: thread.thread_id }), 0);
    await expectHttpError(client.crons.delete(cron.cron_id), [404], "a deleted cron");
  });

  it("create: a stateless cron keeps its schedule, time zone and end time", async () => {
    const end = new Date(Date.now() + 8 * 86_400_000).toISOString(); // a weekday comes first
    const cron = await client.crons.create(GRAPH_ID, {
      schedule: "30 8 * * MON-FRI",
      timezone: "America/New_York",
      endTime: end,
      input: human("weekday"),
      onRunCompleted: "keep",
      metadata: { suite: SUITE, kind: "stateless" },
    });
    assert.equal(cron.thread_id, null);
    assert.equal(cron.on_run_completed, "keep");
    assert.equal(Date.parse(cron.end_time), Math.floor(Date.parse(end) / 1000) * 1000);
    // 08:30 in New York is 12:30 or 13:30 UTC.
    const next = new Date(cron.next_run_date);
    assert.equal(next.getUTCMinutes(), 30, `next at ${cron.next_run_date}`);
    assert.ok([12, 13].includes(next.getUTCHours()), `next at ${cron.next_run_date}`);
    assert.ok(![0, 6].includes(next.getUTCDay()), `next at ${cron.next_run_date}`);
    assert.ok(next.getTime() > Date.now() && next.getTime() <= Date.parse(end));
    assert.equal(await client.crons.count({ metadata: { suite: SUITE, kind: "stateless" } }), 1);
    await client.crons.delete(cron.cron_id);
  });

  it("a bad schedule, time zone or assistant is refused", async () => {
    await expectHttpError(
      client.crons.create(GRAPH_ID, { schedule: "every day" }),
      [422],
      "a schedule that is not cron syntax",
    );
    await expectHttpError(
      client.crons.create(GRAPH_ID, { schedule: "0 9 * * *", timezone: "Mars/Olympus" }),
      [422],
      "an unknown time zone",
    );
    await expectHttpError(
      client.crons.create(uniqueLabel("no-such-graph"), { schedule: "0 9 * * *" }),
      [404],
      "an unknown assistant",
    );
    await expectHttpError(
      client.crons.createForThread(crypto.randomUUID(), GRAPH_ID, { schedule: "0 9 * * *" }),
      [404],
      "an unknown thread",
    );
  });
});

describe("thread TTL and prune", { skip: REFERENCE && "the JS dev server has no /threads/prune" }, () => {
  it("create and update take a ttl; prune keeps the newest checkpoint or deletes", async () => {
    const a = await client.threads.create({ metadata: { suite: SUITE }, ttl: 60 });
    const b = await client.threads.create({
      metadata: { suite: SUITE },
      ttl: { ttl: 120, strategy: "keep_latest" },
    });
    await client.threads.update(b.thread_id, { ttl: 30 });
    for (const t of [a, b]) {
      for (const text of ["one", "two"]) {
        await client.runs.wait(t.thread_id, GRAPH_ID, { input: human(text) });
      }
    }
    assert.ok((await client.threads.getHistory(a.thread_id, { limit: 100 })).length > 1);
    assert.deepEqual(await client.threads.prune([a.thread_id], { strategy: "keep_latest" }), {
      pruned_count: 1,
    });
    const history = await client.threads.getHistory(a.thread_id, { limit: 100 });
    assert.equal(history.length, 1);
    assert.deepEqual(texts(history[0].values), [
      "human:one",
      "ai:echo: one",
      "human:two",
      "ai:echo: two",
    ]);
    assert.deepEqual(await client.threads.prune([a.thread_id, b.thread_id, crypto.randomUUID()]), {
      pruned_count: 2,
    });
    await expectHttpError(client.threads.get(a.thread_id), [404], "a pruned thread");
    await expectHttpError(client.threads.get(b.thread_id), [404], "a pruned thread");
  });

  it("a bad ttl is refused", async () => {
    await expectHttpError(
      client.threads.create({ ttl: { ttl: 5, strategy: "archive" } }),
      [422],
      "an unknown ttl strategy",
    );
    await expectHttpError(client.threads.create({ ttl: -1 }), [422], "a negative ttl");
  });
});

describe("interrupts", () => {
  it("interrupt_before echo stops before the node; input null continues", async () => {
    const t = await newThread();
    const result = await client.runs.wait(t.thread_id, GRAPH_ID, {
      input: human("x"),
      interruptBefore: ["echo"],
    });
    assert.ok(isObject(result));
    const thread = await client.threads.get(t.thread_id);
    assert.equal(thread.status, "interrupted");
    const state = await client.threads.getState(t.thread_id);
    assert.deepEqual(state.next, ["echo"]);
    assert.deepEqual(texts(state.values), ["human:x"]);
    assert.deepEqual(
      state.tasks.map((task) => task.name),
      ["echo"],
    );

    const values = await client.runs.wait(t.thread_id, GRAPH_ID, { input: null });
    assert.deepEqual(texts(values), ["human:x", "ai:echo: x"]);
    assert.equal((await client.threads.get(t.thread_id)).status, "idle");
    assert.deepEqual((await client.threads.getState(t.thread_id)).next, []);
  });

  it("interrupt(): wait shows __interrupt__, the thread is interrupted, resume finishes", async () => {
    const t = await newThread();
    const result = await client.runs.wait(t.thread_id, INTERRUPT_GRAPH_ID, { input: human("go") });
    // The reference server answers the last values chunk: {"__interrupt__": [{id, value}]}.
    assert.ok(Array.isArray(result.__interrupt__), `__interrupt__ in ${JSON.stringify(result)}`);
    assert.equal(result.__interrupt__.length, 1);
    assert.deepEqual(result.__interrupt__[0].value, { question: "what next?" });
    assert.equal(typeof result.__interrupt__[0].id, "string");

    const thread = await client.threads.get(t.thread_id);
    assert.equal(thread.status, "interrupted");
    assert.ok(isObject(thread.interrupts), "thread.interrupts is an object");
    const listed = Object.values(thread.interrupts).flat();
    assert.deepEqual(
      listed.map((i) => i.value),
      [{ question: "what next?" }],
    );

    const state = await client.threads.getState(t.thread_id);
    assert.deepEqual(state.next, ["ask"]);
    assert.equal(state.tasks.length, 1);
    assert.equal(state.tasks[0].name, "ask");
    assert.deepEqual(
      state.tasks[0].interrupts.map((i) => i.value),
      [{ question: "what next?" }],
    );

    const values = await client.runs.wait(t.thread_id, INTERRUPT_GRAPH_ID, {
      command: { resume: "yes" },
    });
    assert.deepEqual(texts(values), ["human:go", "ai:resumed: yes"]);
    const after = await client.threads.get(t.thread_id);
    assert.equal(after.status, "idle");
    assert.deepEqual(Object.values(after.interrupts ?? {}).flat(), []);
    assert.deepEqual((await client.threads.getState(t.thread_id)).next, []);
  });

  it("interrupt(): the stream shows __interrupt__; a streamed resume finishes", async () => {
    const t = await newThread();
    let created;
    const parts = await collect(
      client.runs.stream(t.thread_id, INTERRUPT_GRAPH_ID, {
        input: human("go"),
        streamMode: ["values", "updates"],
        onRunCreated: (m) => (created = m),
      }),
    );
    const body = checkStream(parts, created.run_id, ["values", "updates"]);
    const interruptUpdate = body.find(
      (p) => p.event === "updates" && p.data && "__interrupt__" in p.data,
    );
    assert.ok(interruptUpdate, `an updates event with __interrupt__: ${JSON.stringify(body)}`);
    assert.deepEqual(
      interruptUpdate.data.__interrupt__.map((i) => i.value),
      [{ question: "what next?" }],
    );
    const lastValues = body.filter((p) => p.event === "values").pop();
    assert.ok(
      lastValues && "__interrupt__" in lastValues.data,
      "the last values event carries __interrupt__",
    );
    assert.deepEqual(
      lastValues.data.__interrupt__.map((i) => i.value),
      [{ question: "what next?" }],
    );
    assert.equal((await client.threads.get(t.thread_id)).status, "interrupted");

    let resumedRun;
    const resumed = await collect(
      client.runs.stream(t.thread_id, INTERRUPT_GRAPH_ID, {
        command: { resume: { choice: 2 } },
        streamMode: ["values", "updates"],
        onRunCreated: (m) => (resumedRun = m),
      }),
    );
    const rbody = checkStream(resumed, resumedRun.run_id, ["values", "updates"]);
    assert.ok(
      rbody.some(
        (p) => p.event === "updates" && texts(p.data?.ask).includes('ai:resumed: {"choice":2}'),
      ),
    );
    assert.deepEqual(texts(rbody.filter((p) => p.event === "values").pop().data), [
      "human:go",
      'ai:resumed: {"choice":2}',
    ]);
    assert.equal((await client.threads.get(t.thread_id)).status, "idle");
  });
});

describe("store (§2.6)", () => {
  const root = () => uniqueLabel(SUITE);

  it("putItem then getItem returns the item", async () => {
    const ns = [root(), "items"];
    assert.equal(await client.store.putItem(ns, "k1", { x: 1, nested: { y: [1, 2] } }), undefined);
    const item = await client.store.getItem(ns, "k1");
    checkItem(item, ns, "k1", { x: 1, nested: { y: [1, 2] } });
  });

  it("overwriting replaces the value and bumps updated_at", async () => {
    const ns = [root()];
    await client.store.putItem(ns, "k", { v: 1 });
    const first = await client.store.getItem(ns, "k");
    // Let the clock move past the first write, so the timestamps can differ.
    await poll(
      "the clock to advance",
      () => Date.now(),
      (now) => now > Date.parse(first.updated_at) + 5,
    );
    await client.store.putItem(ns, "k", { v: 2 });
    const second = await client.store.getItem(ns, "k");
    checkItem(second, ns, "k", { v: 2 });
    assert.ok(
      Date.parse(second.updated_at) > Date.parse(first.updated_at),
      `updated_at ${first.updated_at} -> ${second.updated_at}`,
    );
  });

  it("getItem of a missing item is null (or 404)", async () => {
    const ns = [root()];
    assert.equal(await getItemOrNull(ns, "missing"), null);
  });

  it("deleteItem removes the item from get and search", async () => {
    const ns = [root()];
    await client.store.putItem(ns, "gone", { v: 1 });
    await client.store.putItem(ns, "kept", { v: 2 });
    assert.equal(await client.store.deleteItem(ns, "gone"), undefined);
    assert.equal(await getItemOrNull(ns, "gone"), null);
    const { items } = await client.store.searchItems(ns, { limit: 100 });
    assert.deepEqual(
      items.map((i) => i.key),
      ["kept"],
    );
  });

  // Items under a fresh root: [r,a] k1, [r,a,b] k2, [r,c] k3, and a sibling root k4.
  async function seed() {
    const r = root();
    const leaf = uniqueLabel("leaf");
    const put = [
      [[r, "a"], "k1", { kind: "x", n: 1 }],
      [[r, "a", leaf], "k2", { kind: "y", n: 2 }],
      [[r, "c"], "k3", { kind: "x", n: 3 }],
      [[`${r}-sibling`], "k4", { kind: "x", n: 4 }],
    ];
    for (const [ns, key, value] of put) await client.store.putItem(ns, key, value);
    return { r, leaf };
  }
  const keysOf = (result) => result.items.map((i) => i.key).sort();

  it("searchItems matches namespaces by prefix", async () => {
    const { r } = await seed();
    const all = await client.store.searchItems([r], { limit: 100 });
    assert.deepEqual(keysOf(all), ["k1", "k2", "k3"], "labels match whole, not as a string prefix");
    for (const item of all.items) {
      assert.deepEqual(item.namespace.slice(0, 1), [r]);
      assert.ok(isTime(item.created_at) && isTime(item.updated_at));
    }
    const a = await client.store.searchItems([r, "a"], { limit: 100 });
    assert.deepEqual(keysOf(a), ["k1", "k2"]);
    for (const item of a.items) assert.deepEqual(item.namespace.slice(0, 2), [r, "a"]);
    assert.deepEqual((await client.store.searchItems([r, "zzz"])).items, []);
  });

  it("searchItems filter is an exact match on top-level value keys", async () => {
    const { r } = await seed();
    assert.deepEqual(
      keysOf(await client.store.searchItems([r], { filter: { kind: "x" }, limit: 100 })),
      ["k1", "k3"],
    );
    assert.deepEqual(
      keysOf(await client.store.searchItems([r], { filter: { kind: "x", n: 3 }, limit: 100 })),
      ["k3"],
    );
    assert.deepEqual((await client.store.searchItems([r], { filter: { kind: "z" } })).items, []);
  });

  it("searchItems honours limit and offset", async () => {
    const { r } = await seed();
    const p1 = await client.store.searchItems([r], { limit: 2, offset: 0 });
    const p2 = await client.store.searchItems([r], { limit: 2, offset: 2 });
    assert.equal(p1.items.length, 2);
    assert.equal(p2.items.length, 1);
    assert.deepEqual([...keysOf(p1), ...keysOf(p2)].sort(), ["k1", "k2", "k3"]);
    assert.deepEqual((await client.store.searchItems([r], { limit: 2, offset: 3 })).items, []);
  });

  it("searchItems with a query and no index leaves prefix and filter as they are", async () => {
    const { r } = await seed();
    const plain = await client.store.searchItems([r], { limit: 100 });
    const queried = await client.store.searchItems([r], { query: "anything at all", limit: 100 });
    assert.deepEqual(keysOf(queried), keysOf(plain));
    for (const item of queried.items) {
      if ("score" in item) assert.ok(item.score === null || typeof item.score === "number");
    }
    const filtered = await client.store.searchItems([r], {
      query: "x",
      filter: { kind: "y" },
      limit: 100,
    });
    assert.deepEqual(keysOf(filtered), ["k2"]);
  });

  const nsKeys = (result) => result.namespaces.map((ns) => JSON.stringify(ns)).sort();

  it("listNamespaces by prefix and suffix", async () => {
    const { r, leaf } = await seed();
    assert.deepEqual(
      nsKeys(await client.store.listNamespaces({ prefix: [r] })),
      [
        [r, "a"],
        [r, "a", leaf],
        [r, "c"],
      ]
        .map((ns) => JSON.stringify(ns))
        .sort(),
    );
    assert.deepEqual(nsKeys(await client.store.listNamespaces({ suffix: [leaf] })), [
      JSON.stringify([r, "a", leaf]),
    ]);
    assert.deepEqual(nsKeys(await client.store.listNamespaces({ prefix: [r], suffix: ["c"] })), [
      JSON.stringify([r, "c"]),
    ]);
    assert.deepEqual((await client.store.listNamespaces({ prefix: [r, "zzz"] })).namespaces, []);
  });

  it("listNamespaces maxDepth cuts and de-duplicates", async () => {
    const { r } = await seed();
    const cut = await client.store.listNamespaces({ prefix: [r], maxDepth: 2 });
    assert.deepEqual(
      nsKeys(cut),
      [
        [r, "a"],
        [r, "c"],
      ]
        .map((ns) => JSON.stringify(ns))
        .sort(),
    );
    assert.equal(cut.namespaces.length, 2, "no duplicates");
    const one = await client.store.listNamespaces({ prefix: [r], maxDepth: 1 });
    assert.deepEqual(one.namespaces, [[r]]);
  });

  it("listNamespaces honours limit and offset", async () => {
    const { r } = await seed();
    const pages = [];
    for (const offset of [0, 1, 2]) {
      const page = await client.store.listNamespaces({ prefix: [r], limit: 1, offset });
      assert.equal(page.namespaces.length, 1, `page at offset ${offset}`);
      pages.push(JSON.stringify(page.namespaces[0]));
    }
    assert.equal(new Set(pages).size, 3, "the pages do not overlap");
    assert.deepEqual(
      (await client.store.listNamespaces({ prefix: [r], limit: 1, offset: 3 })).namespaces,
      [],
    );
    assert.equal(
      (await client.store.listNamespaces({ prefix: [r], limit: 2 })).namespaces.length,
      2,
    );
  });

  it('a namespace label with "." is refused: by the SDK locally, by the server with 422', async () => {
    await assert.rejects(client.store.putItem(["a.b"], "k", { v: 1 }), (err) => {
      assert.equal(err?.status, undefined, "refused before any request");
      assert.match(err.message, /period/i);
      return true;
    });
    await assert.rejects(client.store.getItem(["a.b"], "k"), /period/i);
    await assert.rejects(client.store.deleteItem(["a.b"], "k"), /period/i);
    // searchItems does not check locally: the server answers 422.
    await expectHttpError(
      client.store.searchItems([root(), "a.b"]),
      [422],
      "search with a dotted label",
    );
    const res = await rawFetch("/store/items", {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ namespace: [root(), "x.y"], key: "k", value: { v: 1 } }),
    });
    assert.equal(res.status, 422, "PUT /store/items with a dotted label");
  });
});

describe("raw HTTP (what the SDK cannot send)", () => {
  it("a malformed JSON body is a 4xx, not a server error", async () => {
    // The spec does not pin the status: 400 or 422.
    const res = await rawFetch("/threads", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{not json",
    });
    assert.ok([400, 422].includes(res.status), `status ${res.status}`);
  });

  it("a run's Content-Location is /threads/{thread_id}/runs/{run_id}", async () => {
    const t = await newThread();
    const res = await rawFetch(`/threads/${t.thread_id}/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ assistant_id: GRAPH_ID, input: human("raw") }),
    });
    assert.equal(res.status, 200);
    const run = await res.json();
    assert.equal(res.headers.get("content-location"), `/threads/${t.thread_id}/runs/${run.run_id}`);
    await client.runs.join(t.thread_id, run.run_id);
  });

  it("a stream answers text/event-stream", async () => {
    const t = await newThread();
    const res = await rawFetch(`/threads/${t.thread_id}/runs/stream`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        assistant_id: GRAPH_ID,
        input: human("raw"),
        stream_mode: ["values"],
      }),
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /text\/event-stream/);
    const body = await res.text();
    assert.match(body, /event: ?metadata/);
  });
});

describe("API key", () => {
  const skip = API_KEY ? false : "LG_API_KEY is not set";
  test("a client without the key gets 401", { skip, timeout: TEST_TIMEOUT }, async () => {
    const anonymous = makeClient(null);
    await expectHttpError(anonymous.assistants.search(), [401], "assistants.search without a key");
    await expectHttpError(anonymous.threads.create(), [401], "threads.create without a key");
    await expectHttpError(
      anonymous.threads.get(crypto.randomUUID()),
      [401],
      "threads.get without a key",
    );
    // And the key lets the same call through.
    assert.ok(Array.isArray(await client.assistants.search()));
  });
});
