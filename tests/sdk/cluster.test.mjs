// SPDX-License-Identifier: MIT
// Three `stategraph serve` processes on one PostgreSQL database (docs/scale-out.md), driven
// by the official JS SDK (@langchain/langgraph-sdk). tests/sdk/run-cluster.sh starts them.
//
// Environment:
//   LG_CLUSTER_URLS  the three processes' URLs, comma-separated (required)
//   LG_CLUSTER_PIDS  their pids, in the same order (sg_run.worker is host:pid:tag)
//   LG_SINGLE_URL    one process alone on a second database: the reference final states
//   LG_PG_PSQL       psql on the shared database, as a command prefix split on blanks
//   LG_GRAPH_ID      the echo graph (default "agent"): "echo: " + the last human text, after
//                    waiting <ms> when the text starts with "sleep:<ms>" (cancellable)
//   LG_CLUSTER_THREADS  how many threads (scripts) to run at once (default 50)
//
// 50 threads each run a deterministic script of two phases, one per multitask strategy
// (enqueue, reject, interrupt, rollback), its calls spread round-robin over the processes.
// Meanwhile sg_run is sampled (psql, every 50 ms) and the threads' run lists are read (the
// API) for a thread with two running runs. At the end every thread is idle, every run has
// the status its script expects, and every thread's messages equal those the same script
// gives on one process alone.

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { Client } from "@langchain/langgraph-sdk";
import { expectHttpError, pause, poll as pollUntil } from "./helpers.mjs";

const URLS = (process.env.LG_CLUSTER_URLS ?? "")
  .split(",")
  .filter(Boolean)
  .map((u) => u.replace(/\/+$/, ""));
if (URLS.length !== 3) {
  throw new Error("LG_CLUSTER_URLS: three server URLs, comma-separated");
}
const PIDS = (process.env.LG_CLUSTER_PIDS ?? "").split(",").filter(Boolean);
const SINGLE_URL = (process.env.LG_SINGLE_URL ?? "").replace(/\/+$/, "");
if (!SINGLE_URL) throw new Error("LG_SINGLE_URL is required (one server on its own database)");
const PSQL = (process.env.LG_PG_PSQL ?? "").split(/\s+/).filter(Boolean);
if (PSQL.length === 0) throw new Error("LG_PG_PSQL is required (psql on the shared database)");
const GRAPH_ID = process.env.LG_GRAPH_ID || "agent";

const THREADS = Number(process.env.LG_CLUSTER_THREADS || 50);
const TEST_TIMEOUT = 120_000;
const POLL_TIMEOUT = 30_000;
// All the scripts: a hung request shows as the step its script waits for.
const SCRIPTS_TIMEOUT = 60_000;
// A join (or stream join) that has not returned this long after it was sent fails, with the
// run's status at that time.
const JOIN_TIMEOUT = 20_000;
const POLL_INTERVAL = 25;
const poll = (what, fn, pred, timeout = POLL_TIMEOUT) =>
  pollUntil(what, fn, pred, timeout, POLL_INTERVAL);
const SAMPLE_INTERVAL = 50;
// The first run of a reject phase must still run when the second one is sent (under ASan, with
// the 50 scripts at once, the two refused creates once took 1.9 s after the run was seen running,
// which it was some time after it started: a 2 s run had ended).
const REJECT_SLEEP = 4000;
// The first run of an interrupt or rollback phase is always cancelled: a bound, not a wait.
const CANCELLED_SLEEP = 20000;
const TERMINAL = new Set(["success", "error", "timeout", "interrupted"]);

function makeClient(url) {
  // apiKey null keeps the SDK from reading LANGGRAPH_API_KEY & co. from the environment; no
  // retries, so that every failed request shows.
  return new Client({ apiUrl: url, apiKey: null, callerOptions: { maxRetries: 0 } });
}
const clusterClients = URLS.map(makeClient);
const singleClient = makeClient(SINGLE_URL);

// ---------------------------------------------------------------------------------------
// helpers

const human = (content) => ({ messages: [{ role: "user", content }] });
const texts = (values) =>
  (values?.messages ?? []).map(
    (m) => `${m.type}:${typeof m.content === "string" ? m.content : JSON.stringify(m.content)}`,
  );

function it(name, fn) {
  return test(name, { timeout: TEST_TIMEOUT }, fn);
}


async function collect(stream) {
  const parts = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

// A join, stream join or wait, failing with the run's status (read on statusClient; runId
// may be a function, for a run not created yet) when it has not returned after JOIN_TIMEOUT.
async function bounded(what, call, statusClient, threadId, runId) {
  const abort = new AbortController();
  let timer;
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve(bounded.LATE), JOIN_TIMEOUT);
  });
  try {
    const result = await Promise.race([call(abort.signal), late]);
    if (result === bounded.LATE) {
      abort.abort();
      const id = typeof runId === "function" ? runId() : runId;
      const status = id ? await statusOrGone(statusClient, threadId, id) : "not created";
      assert.fail(`${what}: no answer after ${JOIN_TIMEOUT} ms; run ${id} is ${status} (runs.get)`);
    }
    return result;
  } finally {
    clearTimeout(timer);
  }
}
bounded.LATE = Symbol("late");

const joinWithin = (what, client, statusClient, threadId, runId) =>
  bounded(
    `${what}: runs.join`,
    (signal) => client.runs.join(threadId, runId, { signal }),
    statusClient,
    threadId,
    runId,
  );

const joinStreamWithin = (what, client, statusClient, threadId, runId) =>
  bounded(
    `${what}: runs.joinStream`,
    (signal) => collect(client.runs.joinStream(threadId, runId, { signal })),
    statusClient,
    threadId,
    runId,
  );

async function statusOrGone(client, threadId, runId) {
  try {
    return (await client.runs.get(threadId, runId)).status;
  } catch (err) {
    if (err?.status === 404) return 404;
    throw err;
  }
}

// One psql session on the shared database: each query is followed by an \echo of a marker,
// which ends its output (unaligned, tuples only: one line per row, columns split by |).
class Psql {
  static MARK = "@@sg-cluster-test@@";

  constructor(argv) {
    this.proc = spawn(argv[0], [...argv.slice(1), "-A", "-t"], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.out = "";
    this.err = "";
    this.waiting = [];
    this.exit = null;
    this.proc.stdout.setEncoding("utf8").on("data", (d) => {
      this.out += d;
      this.drain();
    });
    this.proc.stderr.setEncoding("utf8").on("data", (d) => (this.err += d));
    this.proc.on("error", (err) => this.fail(`psql: ${err.message}`));
    this.proc.on("exit", (code, signal) => this.fail(`psql exited (${code ?? signal})`));
  }

  fail(why) {
    this.exit = `${why}: ${this.err}`;
    for (const w of this.waiting.splice(0)) w.reject(new Error(this.exit));
  }

  drain() {
    for (;;) {
      const end = this.out.indexOf(`${Psql.MARK}\n`);
      if (end < 0 || this.waiting.length === 0) return;
      const text = this.out.slice(0, end);
      this.out = this.out.slice(end + Psql.MARK.length + 1);
      this.waiting.shift().resolve(text);
    }
  }

  // The rows of one statement, each an array of column texts.
  async rows(sql) {
    if (this.exit) throw new Error(this.exit);
    const text = await new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.proc.stdin.write(`${sql};\n\\echo ${Psql.MARK}\n`);
    });
    return text
      .split("\n")
      .filter((line) => line.length > 0)
      .map((line) => line.split("|"));
  }

  close() {
    this.proc.removeAllListeners("exit");
    this.proc.stdin.end();
  }
}

// The process (index in URLS) that executes a run now, from sg_run.worker (host:pid:tag).
async function executorOf(psql, runId) {
  const rows = await psql.rows(`SELECT worker, status FROM sg_run WHERE run_id = '${runId}'`);
  assert.equal(rows.length, 1, `sg_run has run ${runId}`);
  const [worker, status] = rows[0];
  assert.equal(status, "running", `run ${runId} runs (sg_run.status)`);
  const pid = worker.split(":")[1];
  const index = PIDS.indexOf(pid);
  assert.ok(index >= 0, `sg_run.worker ${worker} is one of the processes ${PIDS.join(",")}`);
  return index;
}

// ---------------------------------------------------------------------------------------
// the invariant: never two running runs on one thread

class Monitor {
  constructor(psql) {
    this.psql = psql;
    this.threadIds = [];
    this.sqlSamples = 0;
    this.apiSamples = 0;
    this.violations = [];
    this.errors = [];
    this.stopped = false;
  }

  // Checks one runs.list answer; returns it.
  check(threadId, runs, where) {
    const running = runs.filter((r) => r.status === "running").map((r) => r.run_id);
    if (running.length > 1) {
      this.violations.push(`${where}: thread ${threadId} lists running runs ${running.join(", ")}`);
    }
    return runs;
  }

  start(clients) {
    const sql = (async () => {
      while (!this.stopped) {
        try {
          const rows = await this.psql.rows(
            "SELECT thread_id, count(*) FROM sg_run WHERE status = 'running' " +
              "GROUP BY thread_id HAVING count(*) > 1",
          );
          this.sqlSamples++;
          for (const [thread, n] of rows) {
            this.violations.push(`sg_run: thread ${thread} has ${n} running runs`);
          }
        } catch (err) {
          this.errors.push(`psql sample: ${err.message}`);
          return;
        }
        await pause(SAMPLE_INTERVAL);
      }
    })();
    const api = (async () => {
      let turn = 0;
      while (!this.stopped) {
        if (this.threadIds.length > 0) {
          const threadId = this.threadIds[turn % this.threadIds.length];
          const client = clients[turn % clients.length];
          turn++;
          try {
            this.check(threadId, await client.runs.list(threadId, { limit: 100 }), "runs.list");
            this.apiSamples++;
          } catch (err) {
            this.errors.push(`runs.list sample: ${err?.status ?? ""} ${err?.message ?? err}`);
          }
        }
        await pause(10);
      }
    })();
    this.done = Promise.all([sql, api]);
  }

  async stop() {
    this.stopped = true;
    await this.done;
  }
}

// ---------------------------------------------------------------------------------------
// the scripts

const KINDS = ["enqueue", "reject", "interrupt", "rollback"];
// Thread i's phases: the first 16 threads have every pair, the others repeat them.
const phasesOf = (i) => [KINDS[i % 4], KINDS[Math.floor(i / 4) % 4]];

// One thread's script against some processes: each call goes to the next one in turn.
class Script {
  constructor(index, clients, monitor) {
    this.index = index;
    this.clients = clients;
    this.monitor = monitor;
    this.turn = index;
    this.threadId = null;
    this.expected = new Map(); // run_id -> expected final status, or 404 (deleted)
    this.messages = []; // the thread's expected final messages (texts())
    this.step = "not started"; // what it waits for now (reported when it hangs)
    this.done = false;
  }

  client() {
    return this.clients[this.turn++ % this.clients.length];
  }

  // The process the next client() call goes to.
  next() {
    return this.turn % this.clients.length;
  }

  at(step) {
    this.step = `${step} (since ${new Date().toISOString()})`;
  }

  async create(content, strategy) {
    const payload = { input: human(content) };
    if (strategy) payload.multitaskStrategy = strategy;
    this.at(
      `runs.create "${content}" ${strategy ?? "(default strategy)"} on process ${this.next()}`,
    );
    const run = await this.client().runs.create(this.threadId, GRAPH_ID, payload);
    assert.equal(run.thread_id, this.threadId);
    return run;
  }

  async join(run, content) {
    const where = this.next();
    this.at(`runs.join ${run.run_id} ("${content}") on process ${where}`);
    return joinWithin(
      `thread ${this.index}: "${content}" joined on process ${where}`,
      this.client(),
      this.clients[(where + 1) % this.clients.length],
      this.threadId,
      run.run_id,
    );
  }

  // Waits until the run is running (its thread's run list, from each process in turn), and
  // then, with content, until its input is in the thread's state.
  async waitRunning(run, content) {
    this.at(`waiting for ${run.run_id} to run`);
    await poll(
      `run ${run.run_id} to run`,
      async () => {
        const where = this.next();
        const runs = await this.client().runs.list(this.threadId, { limit: 100 });
        this.monitor?.check(this.threadId, runs, `runs.list on process ${where}`);
        const status = runs.find((r) => r.run_id === run.run_id)?.status ?? "missing";
        assert.ok(!TERMINAL.has(status), `run ${run.run_id} ended (${status}) before running`);
        return status;
      },
      (status) => status === "running",
    );
    if (content !== undefined) {
      this.at(`waiting for "${content}" in the state`);
      await poll(
        `"${content}" in the thread state`,
        async () => texts((await this.client().threads.getState(this.threadId)).values),
        (t) => t.includes(`human:${content}`),
      );
    }
  }

  async expectStatus(runId, status) {
    this.expected.set(runId, status);
    this.at(`runs.get ${runId} on process ${this.next()}`);
    assert.equal(
      await statusOrGone(this.client(), this.threadId, runId),
      status,
      `thread ${this.index}: run ${runId}`,
    );
  }

  checkValues(values, what) {
    assert.deepEqual(texts(values), this.messages, `thread ${this.index}: ${what}`);
  }

  // A slow run, then three runs enqueued behind it (each from the next process), the third
  // with runs.wait while the second is joined on another process: they run in order and all
  // succeed.
  async enqueue(tag) {
    const slow = `sleep:300 ${tag}.slow`;
    const first = await this.create(slow);
    const queued = [];
    for (const j of [1, 2]) {
      const run = await this.create(`${tag}.q${j}`, "enqueue");
      assert.equal(run.status, "pending", `thread ${this.index}: an enqueued run is pending`);
      queued.push(run);
    }
    const last = `${tag}.q3`;
    const waiter = this.next();
    const waitClient = this.client();
    this.at(`runs.wait "${last}" enqueue on process ${waiter}, and the join of "${tag}.q2"`);
    let created = null;
    const [values, joined] = await Promise.all([
      bounded(
        `thread ${this.index}: runs.wait "${last}" on process ${waiter}`,
        (signal) =>
          waitClient.runs.wait(this.threadId, GRAPH_ID, {
            input: human(last),
            multitaskStrategy: "enqueue",
            onRunCreated: (m) => (created = m),
            signal,
          }),
        this.clients[(waiter + 1) % this.clients.length],
        this.threadId,
        () => created?.run_id,
      ),
      this.join(queued[1], `${tag}.q2`),
    ]);
    assert.ok(created?.run_id, `thread ${this.index}: runs.wait told the run it created`);
    this.messages.push(`human:${slow}`, `ai:echo: ${slow}`);
    for (const j of [1, 2, 3]) this.messages.push(`human:${tag}.q${j}`, `ai:echo: ${tag}.q${j}`);
    this.checkValues(values, `enqueue: runs.wait of "${last}"`);
    // The join may answer after q3 ran too (the thread's values then): q2's values come first.
    assert.deepEqual(
      texts(joined).slice(0, this.messages.length - 2),
      this.messages.slice(0, -2),
      `thread ${this.index}: enqueue: join of "${tag}.q2"`,
    );
    for (const run of [first, ...queued, created]) await this.expectStatus(run.run_id, "success");
  }

  // A slow run, then the same thread refused a second run (reject, then the default
  // strategy, from two other processes): 409, and the first succeeds.
  async reject(tag) {
    const slow = `sleep:${REJECT_SLEEP} ${tag}.slow`;
    const first = await this.create(slow);
    await this.waitRunning(first);
    const running = Date.now();
    try {
      await expectHttpError(
        this.create(`${tag}.rejected`, "reject"),
        [409],
        `thread ${this.index}: a reject run while ${first.run_id} runs`,
      );
      await expectHttpError(
        this.create(`${tag}.default`),
        [409],
        `thread ${this.index}: a run with the default strategy while ${first.run_id} runs`,
      );
    } catch (err) {
      // (Did the first run end too soon for the test, REJECT_SLEEP ms after it started?)
      const status = await statusOrGone(this.client(), this.threadId, first.run_id);
      const since = Date.now() - running;
      err.message += ` (the first run is ${status} now, ${since} ms after it was seen running)`;
      throw err;
    }
    const values = await this.join(first, slow);
    this.messages.push(`human:${slow}`, `ai:echo: ${slow}`);
    this.checkValues(values, "reject: join of the first run");
    await this.expectStatus(first.run_id, "success");
  }

  // A slow run, then an interrupt run: the first ends interrupted with its input kept, the
  // second succeeds on top.
  async interrupt(tag) {
    const slow = `sleep:${CANCELLED_SLEEP} ${tag}.slow`;
    const first = await this.create(slow);
    await this.waitRunning(first, slow);
    const second = await this.create(`${tag}.next`, "interrupt");
    const values = await this.join(second, `${tag}.next`);
    this.messages.push(`human:${slow}`, `human:${tag}.next`, `ai:echo: ${tag}.next`);
    this.checkValues(values, "interrupt: join of the second run");
    await this.expectStatus(first.run_id, "interrupted");
    await this.expectStatus(second.run_id, "success");
  }

  // A slow run, then a rollback run: the first is deleted with its checkpoints (its input is
  // gone), the second succeeds.
  async rollback(tag) {
    const slow = `sleep:${CANCELLED_SLEEP} ${tag}.slow`;
    const first = await this.create(slow);
    await this.waitRunning(first, slow);
    const second = await this.create(`${tag}.next`, "rollback");
    const values = await this.join(second, `${tag}.next`);
    this.messages.push(`human:${tag}.next`, `ai:echo: ${tag}.next`);
    this.checkValues(values, "rollback: join of the second run");
    await this.expectStatus(first.run_id, 404);
    await this.expectStatus(second.run_id, "success");
  }

  async run() {
    this.at(`threads.create on process ${this.next()}`);
    const thread = await this.client().threads.create({
      metadata: { suite: "cluster", script: this.index },
    });
    this.threadId = thread.thread_id;
    this.monitor?.threadIds.push(this.threadId);
    for (const [k, kind] of phasesOf(this.index).entries()) {
      await this[kind](`t${this.index}.${k}.${kind}`);
    }
    this.at("done");
    this.done = true;
    return this;
  }
}

// Runs the scripts at once; fails with every script's failure, or, past SCRIPTS_TIMEOUT,
// with what the unfinished ones wait for.
async function runScripts(clients, monitor) {
  const scripts = Array.from({ length: THREADS }, (_, i) => new Script(i, clients, monitor));
  let timer;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(() => resolve("timeout"), SCRIPTS_TIMEOUT);
  });
  const results = await Promise.race([
    Promise.allSettled(scripts.map((s) => s.run())),
    timeout,
  ]);
  clearTimeout(timer);
  const name = (s) => `script ${s.index} (${phasesOf(s.index)}, thread ${s.threadId})`;
  if (results === "timeout") {
    const stuck = scripts.filter((s) => !s.done).map((s) => `${name(s)}: ${s.step}`);
    assert.fail(
      `after ${SCRIPTS_TIMEOUT} ms, ${stuck.length} of ${THREADS} scripts are not done:\n` +
        stuck.join("\n"),
    );
  }
  const failed = results
    .map((r, i) =>
      r.status === "rejected"
        ? `${name(scripts[i])} at ${scripts[i].step}: ${r.reason?.message ?? r.reason}`
        : null,
    )
    .filter(Boolean);
  if (failed.length > 0) {
    assert.fail(`${failed.length} of ${THREADS} scripts failed:\n${failed.join("\n")}`);
  }
  return scripts;
}

// Every thread idle on every process, its runs those expected with their statuses, its
// messages those expected; returns the messages per script.
async function checkFinal(scripts, clients) {
  const finals = [];
  for (const s of scripts) {
    for (const [p, client] of clients.entries()) {
      const thread = await client.threads.get(s.threadId);
      assert.equal(thread.status, "idle", `thread ${s.index} on process ${p}`);
    }
    const client = clients[s.index % clients.length];
    const runs = await client.runs.list(s.threadId, { limit: 100 });
    const listed = Object.fromEntries(runs.map((r) => [r.run_id, r.status]));
    const expected = Object.fromEntries(
      [...s.expected].filter(([, status]) => status !== 404),
    );
    assert.deepEqual(listed, expected, `thread ${s.index}: its runs and their statuses`);
    for (const [runId, status] of s.expected) {
      if (status === 404) {
        assert.equal(await statusOrGone(client, s.threadId, runId), 404, `run ${runId} deleted`);
      }
    }
    const state = await client.threads.getState(s.threadId);
    assert.deepEqual(texts(state.values), s.messages, `thread ${s.index}: final messages`);
    finals.push(texts(state.values));
  }
  return finals;
}

// ---------------------------------------------------------------------------------------

describe("three processes on one database", () => {
  let clusterScripts = null;

  it(`${THREADS} threads of mixed multitask strategies: never two running runs on a thread`, async () => {
    const psql = new Psql(PSQL);
    try {
      // The schema is there (the servers made it) and psql works.
      assert.deepEqual(await psql.rows("SELECT count(*) FROM sg_run WHERE status = 'running'"), [
        ["0"],
      ]);
      const monitor = new Monitor(psql);
      monitor.start(clusterClients);
      const started = Date.now();
      let scripts;
      try {
        scripts = await runScripts(clusterClients, monitor);
      } finally {
        await monitor.stop();
      }
      const took = Date.now() - started;
      assert.deepEqual(monitor.errors, [], "the samplers' requests");
      assert.equal(psql.err, "", "psql's errors");
      assert.deepEqual(monitor.violations, [], "a thread had two running runs");
      assert.ok(
        monitor.sqlSamples >= Math.floor(took / 1000),
        `sg_run sampled ${monitor.sqlSamples} times in ${took} ms`,
      );
      assert.ok(monitor.apiSamples > 0, "the run lists were sampled");
      console.log(
        `# cluster scripts: ${took} ms, ${monitor.sqlSamples} sg_run samples, ` +
          `${monitor.apiSamples} run-list samples`,
      );

      await checkFinal(scripts, clusterClients);
      // sg_run agrees: the scripts' runs and nothing else, none left running or pending, the
      // rolled-back runs deleted.
      const ids = scripts.map((s) => `'${s.threadId}'`).join(",");
      const rows = await psql.rows(
        `SELECT run_id, status FROM sg_run WHERE thread_id IN (${ids}) ORDER BY run_id`,
      );
      const expected = scripts
        .flatMap((s) => [...s.expected])
        .filter(([, status]) => status !== 404)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      assert.deepEqual(rows, expected, "sg_run's rows of the scripts' threads");
      clusterScripts = scripts;
    } finally {
      psql.close();
    }
  });

  it("each thread's final state equals the same script's on one process alone", async () => {
    const started = Date.now();
    const scripts = await runScripts([singleClient], null);
    const singleFinals = await checkFinal(scripts, [singleClient]);
    console.log(`# single-process scripts: ${Date.now() - started} ms`);
    assert.ok(clusterScripts, "the cluster scripts ran to the end (the test above)");
    const clusterFinals = [];
    for (const s of clusterScripts) {
      const state = await clusterClients[(s.index + 1) % 3].threads.getState(s.threadId);
      clusterFinals.push(texts(state.values));
    }
    for (let i = 0; i < THREADS; i++) {
      assert.deepEqual(clusterFinals[i], singleFinals[i], `thread ${i} (${phasesOf(i)})`);
    }
  });

  // join and joinStream of one run at once on process `joiner`: the join returns the run's
  // final values, the stream the events after it joined (an update of echo, the final values)
  // and ends.
  async function joinOn(joiner, threadId, run, content, what) {
    const client = clusterClients[joiner];
    const other = clusterClients[(joiner + 1) % 3];
    const [values, parts] = await Promise.all([
      joinWithin(what, client, other, threadId, run.run_id),
      joinStreamWithin(what, client, other, threadId, run.run_id),
    ]);
    const finalTexts = [`human:${content}`, `ai:echo: ${content}`];
    assert.deepEqual(texts(values).slice(-2), finalTexts, `${what}: join's values`);
    assert.equal(await statusOrGone(client, threadId, run.run_id), "success", what);
    assert.deepEqual(
      parts.filter((p) => p.event === "error"),
      [],
      `${what}: no error event`,
    );
    parts.forEach((p, i) => {
      if (p.event === "end") assert.equal(i, parts.length - 1, `${what}: end is the last event`);
    });
    assert.ok(
      parts.some(
        (p) => p.event === "updates" && texts(p.data?.echo).includes(`ai:echo: ${content}`),
      ),
      `${what}: an updates event from echo: ${JSON.stringify(parts.map((p) => p.event))}`,
    );
    const valueEvents = parts.filter((p) => p.event === "values");
    assert.ok(valueEvents.length >= 1, `${what}: a values event`);
    assert.deepEqual(
      texts(valueEvents[valueEvents.length - 1].data).slice(-2),
      finalTexts,
      `${what}: the last values event`,
    );
  }

  async function waitRunningOn(client, threadId, runId) {
    await poll(
      `run ${runId} to run`,
      async () => (await client.runs.get(threadId, runId)).status,
      (s) => s === "running",
    );
  }

  const newThread = (p) => clusterClients[p].threads.create({ metadata: { suite: "cluster" } });
  const streamMode = ["values", "updates"];

  it("join and joinStream on a process that neither created nor executes the run", async () => {
    assert.equal(PIDS.length, 3, "LG_CLUSTER_PIDS: the three processes' pids");
    const psql = new Psql(PSQL);
    try {
      // Created and executed by one process (its creator claims it).
      {
        const t = await newThread(0);
        const content = "sleep:2500 joined";
        const run = await clusterClients[0].runs.create(t.thread_id, GRAPH_ID, {
          input: human(content),
          streamMode,
        });
        await waitRunningOn(clusterClients[1], t.thread_id, run.run_id);
        const executor = await executorOf(psql, run.run_id);
        const joiner = [0, 1, 2].find((p) => p !== 0 && p !== executor);
        const what = `run created on process 0, executed by ${executor}, joined on ${joiner}`;
        await joinOn(joiner, t.thread_id, run, content, what);
      }
      // Created on process 1 behind a run of process 0: the process that ends a run claims
      // the thread's next one, so creator, executor and joiner usually all differ.
      {
        const t = await newThread(0);
        const first = await clusterClients[0].runs.create(t.thread_id, GRAPH_ID, {
          input: human("sleep:300 first"),
        });
        const content = "sleep:2500 queued";
        const run = await clusterClients[1].runs.create(t.thread_id, GRAPH_ID, {
          input: human(content),
          streamMode,
          multitaskStrategy: "enqueue",
        });
        await waitRunningOn(clusterClients[2], t.thread_id, run.run_id);
        const executor = await executorOf(psql, run.run_id);
        const joiner = [0, 1, 2].find((p) => p !== 1 && p !== executor);
        const what = `run created on process 1, executed by ${executor}, joined on ${joiner}`;
        await joinOn(joiner, t.thread_id, run, content, what);
        assert.equal(await statusOrGone(clusterClients[2], t.thread_id, first.run_id), "success");
      }
    } finally {
      psql.close();
    }
  });

  it("join and joinStream of a pending run on the process that then claims it", async () => {
    // A runs on process e (its creator); B is created on another process behind it and
    // joined on e while pending. The process that ends a run claims the thread's next one:
    // e executes B, and its join and stream join must still see B end.
    assert.equal(PIDS.length, 3, "LG_CLUSTER_PIDS: the three processes' pids");
    const psql = new Psql(PSQL);
    try {
      const e = 1;
      const t = await newThread(0);
      const first = await clusterClients[e].runs.create(t.thread_id, GRAPH_ID, {
        input: human("sleep:1500 first"),
      });
      await waitRunningOn(clusterClients[2], t.thread_id, first.run_id);
      const executorOfFirst = await executorOf(psql, first.run_id);
      const creator = [0, 1, 2].find((p) => p !== executorOfFirst && p !== e);
      const content = "sleep:1000 queued";
      const run = await clusterClients[creator].runs.create(t.thread_id, GRAPH_ID, {
        input: human(content),
        streamMode,
        multitaskStrategy: "enqueue",
      });
      assert.equal(run.status, "pending");
      const joiner = executorOfFirst;
      const what =
        `run created on process ${creator} behind a run of process ${executorOfFirst}, ` +
        `joined while pending on process ${joiner}`;
      // Which process executes it (sg_run.worker while it runs), for the failure message.
      const executor = (async () => {
        await waitRunningOn(clusterClients[creator], t.thread_id, run.run_id);
        return executorOf(psql, run.run_id);
      })().catch((err) => `unknown (${err.message})`);
      try {
        await joinOn(joiner, t.thread_id, run, content, what);
      } catch (err) {
        err.message += ` (executed by process ${await executor})`;
        throw err;
      }
      console.log(`# pending run: ${what}, executed by process ${await executor}`);
    } finally {
      psql.close();
    }
  });
});
