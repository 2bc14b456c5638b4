#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// One client for both LangGraph Server API servers of bench/server (stategraph serve and the
// official langgraphjs dev server): the same requests, the same measurement. Prints one JSON
// line per scenario on stdout; progress goes to stderr. run.sh starts the servers and calls it.
//
//   node client.mjs URL[,URL...] [--pid PID[,PID...]]
//        [--scenarios wait,first_event,idle_threads,open_streams,model_streams]
//        [--client http|sdk] [--duration S] [--warmup S] [--concurrency 1,16,256]
//        [--turns-per-thread N] [--first-events N] [--idle-threads N] [--streams N]
//        [--stream-sleep-ms MS] [--stream-timeout S] [--assistant ID] [--input TEXT]
//        [--model-stats URL] [--label NAME]
//
// Several URLs: servers that share one database (docs/scale-out.md); virtual client i sends its
// runs to URL i mod n (threads are created on the first). Several PIDs: their memory and CPU are
// summed. --input: the text of every run (default "hi"); the answer must end with the AI message
// "echo: TEXT". --model-stats: the base URL of a loopback model (sg-loopback-openai) whose
// requests in flight each wait level and model_streams report (GET URL/stats, POST
// URL/stats/reset at the start of the window).
//
// Scenarios (all on the echo graph of shared/reference/langgraph-server-api.md §0):
//   wait          for each concurrency C: C virtual clients in this process, each with a thread
//                 of its own (created before the clock starts), loop runs.wait with the input
//                 "hi" for --duration s after --warmup s; runs/s, latency p50/p99/max, errors,
//                 and the CPU seconds of this client and of the server (--pid) in that window.
//                 Every --turns-per-thread runs (default 20; 0: never) a client moves to a fresh
//                 thread, so that the state (two messages more per run) stays a conversation's.
//   first_event   --first-events streams (runs.stream, stream_mode values), one after the
//                 other, each on a fresh thread: time from sending the request to the first
//                 whole SSE event (must be `metadata`), and to the end of the stream.
//   idle_threads  the server's RSS (VmRSS, VmHWM of --pid) before and after threads.create x
//                 --idle-threads (64 requests in flight).
//   open_streams  --streams threads, then that many runs.stream at once with input
//                 "sleep:<--stream-sleep-ms>" (on_disconnect cancel); waits until every stream
//                 has had its metadata event (or --stream-timeout), reads the server's RSS and
//                 threads, closes every stream (abort), and checks that the server still answers.
//   model_streams --streams runs.stream at once (stream_mode messages-tuple and values) on as
//                 many threads, with --input: time from sending each request to its first token
//                 (a messages event with text, or else the values event holding the answer) and
//                 to the end of the stream; every answer is checked as in wait. http client only.
//
// --client http (default): undici 6.24.1 request() on one keep-alive Agent (no connection limit),
//   the lightest Node client, so that as much of the 2 cores as possible is left to the server.
// --client sdk: @langchain/langgraph-sdk 1.15.0, one Client per virtual client (maxConcurrency
//   unlimited, maxRetries 0 so that an error is counted, not retried).
// Every wait response is checked: 200, JSON, last message "echo: hi"; anything else is an error.
import { Agent, request } from "undici";
import { Client } from "@langchain/langgraph-sdk";
import { performance } from "node:perf_hooks";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";

// ------------------------------------------------------------------------------- options
const argv = process.argv.slice(2);
function opt(name, fallback) {
  const i = argv.indexOf(name);
  if (i < 0) return fallback;
  const v = argv[i + 1];
  if (v === undefined || v.startsWith("--")) throw new Error(`${name} needs a value`);
  return v;
}
const valued = new Set([
  "--pid", "--pgid", "--scenarios", "--client", "--duration", "--warmup", "--concurrency",
  "--turns-per-thread", "--first-events", "--idle-threads", "--streams", "--stream-sleep-ms",
  "--stream-timeout", "--assistant", "--input", "--model-stats", "--label",
]);
const positional = argv.filter((a, i) => !a.startsWith("--") && !valued.has(argv[i - 1]));
for (const a of argv) {
  if (a.startsWith("--") && !valued.has(a)) throw new Error(`unknown option ${a}`);
}
if (positional.length !== 1) {
  console.error("usage: node client.mjs URL [--pid PID] [--scenarios a,b] [options] (see the header)");
  process.exit(2);
}
const BASES = positional[0].split(",").map((u) => u.replace(/\/+$/, ""));
const BASE = BASES[0];
const PIDS = opt("--pid", "") ? opt("--pid").split(",").map(Number) : [];
const PGID = opt("--pgid", "") ? Number(opt("--pgid")) : null;
const SCENARIOS = opt("--scenarios", "wait,first_event,idle_threads,open_streams").split(",");
const CLIENT = opt("--client", "http");
const DURATION_S = Number(opt("--duration", "10"));
const WARMUP_S = Number(opt("--warmup", "2"));
const CONCURRENCY = opt("--concurrency", "1,16,256").split(",").map(Number);
const TURNS_PER_THREAD = Number(opt("--turns-per-thread", "20"));
const FIRST_EVENTS = Number(opt("--first-events", "200"));
const IDLE_THREADS = Number(opt("--idle-threads", "10000"));
const STREAMS = Number(opt("--streams", "1000"));
const STREAM_SLEEP_MS = Number(opt("--stream-sleep-ms", "30000"));
const STREAM_TIMEOUT_S = Number(opt("--stream-timeout", "60"));
const ASSISTANT = opt("--assistant", "agent");
const INPUT = opt("--input", "hi");
const MODEL_STATS = opt("--model-stats", null)?.replace(/\/+$/, "") ?? null;
const LABEL = opt("--label", null);
if (!["http", "sdk"].includes(CLIENT)) throw new Error("--client is http or sdk");
for (const s of SCENARIOS) {
  if (!["wait", "first_event", "idle_threads", "open_streams", "model_streams"].includes(s)) {
    throw new Error(`unknown scenario ${s}`);
  }
}

// ------------------------------------------------------------------------------- helpers
const log = (...a) => console.error(`[client${LABEL ? " " + LABEL : ""}]`, ...a);
const r1 = (x) => (x == null ? null : +x.toFixed(1));
const r2 = (x) => (x == null ? null : +x.toFixed(2));
const r3 = (x) => (x == null ? null : +x.toFixed(3));
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const human = (content) => ({ messages: [{ role: "user", content }] });

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}
function latencyStats(values) {
  const s = Float64Array.from(values).sort();
  return {
    n: s.length,
    p50_ms: r2(percentile(s, 50)),
    p90_ms: r2(percentile(s, 90)),
    p99_ms: r2(percentile(s, 99)),
    max_ms: r2(s.length ? s[s.length - 1] : null),
    mean_ms: r2(s.length ? s.reduce((a, b) => a + b, 0) / s.length : null),
  };
}

// The server processes as /proc shows them: memory (MB), threads, CPU seconds; summed over
// several (with `processes`).
const CLK_TCK = 100;
function serverProc() {
  if (PIDS.length === 0) return null;
  if (PIDS.length === 1) return oneProc(PIDS[0]);
  const each = PIDS.map(oneProc);
  const failed = each.find((p) => p.error);
  if (failed) return failed;
  const sum = (key) => r2(each.reduce((a, p) => a + (p[key] ?? 0), 0));
  return {
    processes: each.length,
    rss_mb: sum("rss_mb"),
    hwm_mb: sum("hwm_mb"),
    anon_mb: sum("anon_mb"),
    threads: sum("threads"),
    cpu_s: sum("cpu_s"),
  };
}
function oneProc(PID) {
  try {
    const status = fs.readFileSync(`/proc/${PID}/status`, "utf8");
    const kb = (key) => {
      const m = new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status);
      return m ? Number(m[1]) : null;
    };
    const threads = /^Threads:\s+(\d+)/m.exec(status);
    const stat = fs.readFileSync(`/proc/${PID}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const cpu = (Number(fields[11]) + Number(fields[12])) / CLK_TCK; // utime + stime
    const out = {
      rss_mb: r1(kb("VmRSS") / 1024),
      hwm_mb: r1(kb("VmHWM") / 1024),
      anon_mb: r1(kb("RssAnon") / 1024), // the private part of RSS (heap, stacks), no mapped files
      threads: threads ? Number(threads[1]) : null,
      cpu_s: r2(cpu),
    };
    if (PGID) out.group = groupRss(PGID);
    return out;
  } catch (err) {
    return { error: `cannot read /proc/${PID}: ${err.message}` };
  }
}
// Every process of a process group (the reference's CLI, tsx and server processes).
function groupRss(pgid) {
  let rssKb = 0;
  let anonKb = 0;
  let cpu = 0;
  const pids = [];
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(f[2]) !== pgid) continue; // field 5: pgrp
      const status = fs.readFileSync(`/proc/${name}/status`, "utf8");
      const m = /^VmRSS:\s+(\d+) kB/m.exec(status);
      const a = /^RssAnon:\s+(\d+) kB/m.exec(status);
      rssKb += m ? Number(m[1]) : 0;
      anonKb += a ? Number(a[1]) : 0;
      cpu += (Number(f[11]) + Number(f[12])) / CLK_TCK;
      pids.push(Number(name));
    } catch {}
  }
  return { processes: pids.length, rss_mb: r1(rssKb / 1024), anon_mb: r1(anonKb / 1024), cpu_s: r2(cpu) };
}
const clientCpuS = (since) => {
  const d = process.cpuUsage(since);
  return (d.user + d.system) / 1e6;
};

// The loopback model's request counters (--model-stats): reset at a window's start, read at its
// end.
async function modelStats(reset) {
  if (!MODEL_STATS) return null;
  try {
    const res = await request(MODEL_STATS + (reset ? "/stats/reset" : "/stats"), {
      method: reset ? "POST" : "GET",
      dispatcher: agent,
    });
    return await res.body.json();
  } catch (err) {
    return { error: String(err?.message ?? err) };
  }
}
function modelWindow(before, after) {
  if (!before || !after || before.error || after.error) return after ?? null;
  return { requests: after.requests - before.requests, max_in_flight: after.max_in_flight };
}

// Counts errors by kind, keeping the first message of each kind.
class Errors {
  constructor() {
    this.total = 0;
    this.kinds = {};
  }
  add(kind, message) {
    this.total += 1;
    const k = (this.kinds[kind] ??= { count: 0, first: String(message).slice(0, 300) });
    k.count += 1;
  }
  toJSON() {
    return { total: this.total, kinds: this.kinds };
  }
}
function errorKind(err) {
  if (err?.status) return `http_${err.status}`;
  if (err?.name === "AbortError" || err?.code === "UND_ERR_ABORTED") return "aborted";
  return err?.code || err?.cause?.code || err?.name || "error";
}

// Runs fn(i) for i in [0, n) with at most `width` in flight; returns the results.
async function pool(n, width, fn) {
  const out = new Array(n);
  let next = 0;
  const lanes = Array.from({ length: Math.min(width, n) }, async () => {
    while (next < n) {
      const i = next++;
      out[i] = await fn(i);
    }
  });
  await Promise.all(lanes);
  return out;
}

// ------------------------------------------------------------------------------- HTTP
const agent = new Agent({
  connections: null, // no limit per origin: one connection per request in flight
  pipelining: 1,
  keepAliveTimeout: 60_000,
  keepAliveMaxTimeout: 60_000,
  headersTimeout: 180_000,
  bodyTimeout: 180_000,
  connect: { timeout: 30_000 },
});

class HttpError extends Error {
  constructor(status, text, path) {
    super(`HTTP ${status} ${path}: ${String(text).slice(0, 200)}`);
    this.status = status;
  }
}

async function httpJson(method, path, body, base = BASE) {
  const res = await request(base + path, {
    method,
    dispatcher: agent,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.body.text();
  if (res.statusCode < 200 || res.statusCode > 299) throw new HttpError(res.statusCode, text, path);
  if (res.statusCode === 202 || res.statusCode === 204) return undefined;
  return JSON.parse(text); // leading "\n" keep-alives (both servers send them on waits) are fine
}

// A minimal SSE reader over a response body: events are blocks ended by a blank line; ":" lines
// are comments (heartbeats). Yields {event, data: [lines]}.
async function* sseEvents(body) {
  let buf = "";
  body.setEncoding("utf8");
  for await (const chunk of body) {
    buf += chunk;
    for (;;) {
      const m = /\r\n\r\n|\n\n|\r\r/.exec(buf);
      if (!m) break;
      const block = buf.slice(0, m.index);
      buf = buf.slice(m.index + m[0].length);
      let event = null;
      const data = [];
      for (const line of block.split(/\r\n|\n|\r/)) {
        if (line.startsWith(":")) continue;
        const c = line.indexOf(":");
        const field = c < 0 ? line : line.slice(0, c);
        const value = c < 0 ? "" : line.slice(c + 1).replace(/^ /, "");
        if (field === "event") event = value;
        else if (field === "data") data.push(value);
      }
      if (event === null && data.length === 0) continue;
      yield { event, data };
    }
  }
}

// The operations the scenarios use, over raw HTTP or over the SDK. runs.wait and runs.stream
// send the bodies the SDK sends.
function makeApi(kind, base = BASE) {
  if (kind === "sdk") {
    const client = new Client({
      apiUrl: base,
      apiKey: null,
      callerOptions: { maxRetries: 0, maxConcurrency: Infinity },
    });
    return {
      createThread: async () => (await client.threads.create()).thread_id,
      wait: (tid, content) => client.runs.wait(tid, ASSISTANT, { input: human(content) }),
      // Resolves at the first event with {event}; `done` resolves at the end of the stream.
      stream(tid, content, { signal, onDisconnect } = {}) {
        let first;
        const firstP = new Promise((resolve, reject) => (first = { resolve, reject }));
        const done = (async () => {
          let n = 0;
          try {
            for await (const part of client.runs.stream(tid, ASSISTANT, {
              input: human(content),
              streamMode: "values",
              signal,
              onDisconnect,
            })) {
              if (n++ === 0) first.resolve({ event: part.event, data: part.data });
            }
            if (n === 0) first.reject(new Error("the stream ended without an event"));
          } catch (err) {
            first.reject(err);
            throw err;
          }
          return n;
        })();
        done.catch(() => {});
        return { first: firstP, done };
      },
    };
  }
  return {
    createThread: async () => (await httpJson("POST", "/threads", { metadata: {} }, base)).thread_id,
    wait: (tid, content) =>
      httpJson(
        "POST",
        `/threads/${tid}/runs/wait`,
        { assistant_id: ASSISTANT, input: human(content) },
        base,
      ),
    stream(tid, content, { signal, onDisconnect } = {}) {
      let first;
      let gotHeaders;
      const firstP = new Promise((resolve, reject) => (first = { resolve, reject }));
      const headersP = new Promise((resolve) => (gotHeaders = resolve));
      const done = (async () => {
        let n = 0;
        try {
          const res = await request(`${base}/threads/${tid}/runs/stream`, {
            method: "POST",
            dispatcher: agent,
            signal,
            headers: { "content-type": "application/json", accept: "text/event-stream" },
            body: JSON.stringify({
              assistant_id: ASSISTANT,
              input: human(content),
              stream_mode: ["values"],
              ...(onDisconnect ? { on_disconnect: onDisconnect } : {}),
            }),
          });
          gotHeaders(res.statusCode);
          if (res.statusCode !== 200) {
            throw new HttpError(res.statusCode, await res.body.text(), `/threads/${tid}/runs/stream`);
          }
          const ctype = res.headers["content-type"] ?? "";
          if (!String(ctype).startsWith("text/event-stream")) {
            throw new Error(`stream: content-type ${ctype}`);
          }
          for await (const ev of sseEvents(res.body)) {
            if (n++ === 0) {
              let parsed = null;
              try {
                parsed = ev.data.length ? JSON.parse(ev.data.join("\n")) : null;
              } catch {}
              first.resolve({ event: ev.event, data: parsed });
            }
          }
          if (n === 0) throw new Error("the stream ended without an event");
        } catch (err) {
          first.reject(err);
          gotHeaders(null);
          throw err;
        }
        return n;
      })();
      done.catch(() => {});
      return { first: firstP, done, headers: headersP };
    },
  };
}

const api = makeApi(CLIENT);

function checkEcho(values, content) {
  const msgs = values?.messages;
  if (!Array.isArray(msgs) || msgs.length < 2) {
    throw Object.assign(new Error(`unexpected values: ${JSON.stringify(values).slice(0, 200)}`), {
      code: "bad_values",
    });
  }
  const last = msgs[msgs.length - 1];
  if (last?.type !== "ai" || last?.content !== "echo: " + content) {
    throw Object.assign(new Error(`last message ${JSON.stringify(last).slice(0, 200)}`), {
      code: "bad_echo",
    });
  }
  return msgs.length;
}

async function createThreads(n, width = 64) {
  const errors = new Errors();
  const t0 = performance.now();
  const ids = await pool(n, width, async () => {
    try {
      return await api.createThread();
    } catch (err) {
      errors.add(errorKind(err), err?.message ?? err);
      return null;
    }
  });
  return { ids, errors, seconds: (performance.now() - t0) / 1000 };
}

// ------------------------------------------------------------------------------- wait
async function waitAt(c) {
  const created = await createThreads(c);
  if (created.errors.total) {
    return { concurrency: c, failed: "threads.create failed", errors: created.errors };
  }
  const byBase = BASES.map((b) => makeApi("http", b));
  const apis =
    CLIENT === "sdk"
      ? Array.from({ length: c }, (_, i) => makeApi("sdk", BASES[i % BASES.length]))
      : Array.from({ length: c }, (_, i) => byBase[i % BASES.length]);
  const errors = new Errors();
  const lat = [];
  let completed = 0;
  let extraThreads = 0;
  let maxMessages = 0;
  let measuring = false;
  let stop = false;
  const tStart = performance.now();
  const tMeasure = tStart + WARMUP_S * 1000;
  const tEnd = tMeasure + DURATION_S * 1000;

  const clientLoop = async (i) => {
    const a = apis[i];
    let tid = created.ids[i];
    let turns = 0;
    while (!stop) {
      if (TURNS_PER_THREAD > 0 && turns >= TURNS_PER_THREAD) {
        try {
          tid = await a.createThread();
          turns = 0;
          if (measuring) extraThreads += 1;
        } catch (err) {
          if (measuring) errors.add("create_" + errorKind(err), err?.message ?? err);
          await pause(10);
          continue;
        }
      }
      const t0 = performance.now();
      try {
        const values = await a.wait(tid, INPUT);
        const nmsg = checkEcho(values, INPUT);
        const t1 = performance.now();
        turns += 1;
        if (t1 >= tMeasure && t1 < tEnd) {
          lat.push(t1 - t0);
          completed += 1;
          if (nmsg > maxMessages) maxMessages = nmsg;
        }
      } catch (err) {
        const t1 = performance.now();
        if (t1 >= tMeasure && t1 < tEnd) errors.add(errorKind(err), err?.message ?? err);
        turns += 1;
        await pause(10); // no hot loop on a failing server
      }
      if (performance.now() >= tEnd) break;
    }
  };

  // Window bookkeeping: CPU and server state at the start and the end of the measured window.
  let cpu0, srv0, cpu1, srv1, wall0, wall1, model0, model1;
  const marks = (async () => {
    await pause(Math.max(0, tMeasure - performance.now()));
    measuring = true;
    cpu0 = process.cpuUsage();
    srv0 = serverProc();
    wall0 = performance.now();
    model0 = await modelStats(true);
    await pause(Math.max(0, tEnd - performance.now()));
    wall1 = performance.now();
    cpu1 = clientCpuS(cpu0);
    srv1 = serverProc();
    model1 = await modelStats(false);
    stop = true;
  })();
  await Promise.all([marks, ...Array.from({ length: c }, (_, i) => clientLoop(i))]);
  // Counted: the runs that finished inside the window (whenever they started). The runs still
  // in flight at its end finish uncounted before the next level starts.
  const drainS = (performance.now() - tEnd) / 1000;
  const wallS = (wall1 - wall0) / 1000;
  const serverCpu = srv0?.cpu_s != null && srv1?.cpu_s != null ? srv1.cpu_s - srv0.cpu_s : null;
  return {
    concurrency: c,
    runs: completed,
    runs_per_s: r1(completed / wallS),
    window_s: r2(wallS),
    drain_s: r2(drainS),
    latency: latencyStats(lat),
    errors: errors.toJSON(),
    error_rate: r3(errors.total / Math.max(1, completed + errors.total)),
    messages_on_thread_at_end: maxMessages,
    extra_threads_created: extraThreads,
    cpu: {
      client_s: r2(cpu1),
      client_of_one_core: r2(cpu1 / wallS),
      server_s: r2(serverCpu),
      server_of_cores: serverCpu == null ? null : r2(serverCpu / wallS),
      client_ms_per_run: completed ? r3((cpu1 * 1000) / completed) : null,
      server_ms_per_run: completed && serverCpu != null ? r3((serverCpu * 1000) / completed) : null,
    },
    server_after: serverProc(),
    server_in_window: srv1,
    model: modelWindow(model0, model1),
    load1: r2(os.loadavg()[0]),
  };
}

async function scenarioWait() {
  const levels = [];
  for (const c of CONCURRENCY) {
    log(`wait: ${c} clients, ${WARMUP_S} s warm-up + ${DURATION_S} s`);
    const r = await waitAt(c);
    log(
      `wait c=${c}: ${r.runs_per_s} runs/s, p50 ${r.latency?.p50_ms} ms, p99 ${r.latency?.p99_ms} ms, ` +
        `errors ${r.errors?.total}, client CPU ${r.cpu?.client_of_one_core} of a core, ` +
        `server ${r.cpu?.server_of_cores} cores` +
        (r.model ? `, model requests in flight at most ${r.model.max_in_flight}` : ""),
    );
    levels.push(r);
  }
  return {
    scenario: "wait",
    client: CLIENT,
    duration_s: DURATION_S,
    warmup_s: WARMUP_S,
    turns_per_thread: TURNS_PER_THREAD || null,
    levels,
  };
}

// ------------------------------------------------------------------------------- first_event
async function scenarioFirstEvent() {
  log(`first_event: ${FIRST_EVENTS} streams, one after the other`);
  const errors = new Errors();
  const first = [];
  const total = [];
  const firstEvents = {};
  let eventsPerStream = null;
  for (let i = 0; i < FIRST_EVENTS; i++) {
    let tid;
    try {
      tid = await api.createThread();
    } catch (err) {
      errors.add("create_" + errorKind(err), err?.message ?? err);
      continue;
    }
    const t0 = performance.now();
    const s = api.stream(tid, "hi");
    try {
      const ev = await s.first;
      first.push(performance.now() - t0);
      firstEvents[ev.event] = (firstEvents[ev.event] ?? 0) + 1;
      if (ev.event !== "metadata" || !ev.data?.run_id) {
        errors.add("first_event_not_metadata", JSON.stringify(ev).slice(0, 200));
      }
      const n = await s.done;
      total.push(performance.now() - t0);
      eventsPerStream ??= n;
      if (n !== eventsPerStream) errors.add("event_count", `${n} events, first stream had ${eventsPerStream}`);
    } catch (err) {
      errors.add(errorKind(err), err?.message ?? err);
    }
  }
  return {
    scenario: "first_event",
    client: CLIENT,
    streams: FIRST_EVENTS,
    first_event: latencyStats(first),
    whole_stream: latencyStats(total),
    first_event_names: firstEvents,
    events_per_stream: eventsPerStream,
    errors: errors.toJSON(),
    server_after: serverProc(),
  };
}

// ------------------------------------------------------------------------------- idle_threads
async function threadCount() {
  try {
    return await httpJson("POST", "/threads/count", {});
  } catch (err) {
    return `threads.count failed: ${err.message}`;
  }
}

async function scenarioIdleThreads() {
  log(`idle_threads: creating ${IDLE_THREADS} threads`);
  await pause(1000);
  const before = serverProc();
  const created = await createThreads(IDLE_THREADS);
  const afterCreate = serverProc();
  await pause(2000); // let a garbage-collected server settle
  const after = serverProc();
  const count = await threadCount();
  const ok = created.ids.filter(Boolean).length;
  const growMb = after?.rss_mb != null ? after.rss_mb - before.rss_mb : null;
  return {
    scenario: "idle_threads",
    threads_requested: IDLE_THREADS,
    threads_created: ok,
    threads_count_endpoint: count,
    create_s: r2(created.seconds),
    creates_per_s: r1(ok / created.seconds),
    errors: created.errors.toJSON(),
    server_before: before,
    server_after_create: afterCreate,
    server_after_2s: after,
    rss_mb: after?.rss_mb ?? null,
    hwm_mb: after?.hwm_mb ?? null,
    rss_growth_kb_per_thread: growMb == null || !ok ? null : r2((growMb * 1024) / ok),
  };
}

// ------------------------------------------------------------------------------- open_streams
async function scenarioOpenStreams() {
  log(`open_streams: ${STREAMS} threads, then ${STREAMS} streams of sleep:${STREAM_SLEEP_MS}`);
  const created = await createThreads(STREAMS);
  if (created.errors.total) {
    return { scenario: "open_streams", failed: "threads.create failed", errors: created.errors.toJSON() };
  }
  await pause(1000);
  const before = serverProc();
  const errors = new Errors();
  const controllers = created.ids.map(() => new AbortController());
  const firstMs = [];
  const firstNames = {};
  let gotFirst = 0;
  let gotHeaders = 0;
  let ended = 0;
  const t0 = performance.now();
  const streams = created.ids.map((tid, i) =>
    api.stream(tid, `sleep:${STREAM_SLEEP_MS}`, {
      signal: controllers[i].signal,
      onDisconnect: "cancel",
    }),
  );
  for (const s of streams) s.headers?.then((status) => status === 200 && (gotHeaders += 1));
  let closing = false;
  const settled = streams.map((s) =>
    Promise.allSettled([
      s.first.then((ev) => {
        gotFirst += 1;
        firstMs.push(performance.now() - t0);
        firstNames[ev.event] = (firstNames[ev.event] ?? 0) + 1;
      }),
      s.done.then(() => (ended += 1)),
    ]).then(([f, d]) => {
      if (closing) return;
      const err = f.status === "rejected" ? f.reason : d.status === "rejected" ? d.reason : null;
      if (err) errors.add(errorKind(err), err?.message ?? err);
    }),
  );
  const deadline = t0 + STREAM_TIMEOUT_S * 1000;
  while (gotFirst + errors.total < STREAMS && performance.now() < deadline) await pause(50);
  const allFirstS = (performance.now() - t0) / 1000;
  await pause(1000);
  const open = serverProc();
  const stillOpen = STREAMS - ended - errors.total;
  log(
    `open_streams: ${CLIENT === "http" ? gotHeaders : "?"} responses (200), ${gotFirst} metadata events in ${r2(allFirstS)} s, ` +
      `${stillOpen} open, ${errors.total} errors, RSS ${open?.rss_mb} MB`,
  );

  // Close every stream; with on_disconnect "cancel" the runs stop too.
  closing = true;
  const tClose = performance.now();
  for (const c of controllers) c.abort();
  await Promise.all(settled);
  await pause(3000);
  const afterClose = serverProc();
  // Does the server still work? One runs.wait on a fresh thread, and /ok.
  let healthy;
  const tHealth = performance.now();
  try {
    const tid = await api.createThread();
    checkEcho(await api.wait(tid, INPUT), INPUT);
    healthy = { ok: true, wait_ms: r1(performance.now() - tHealth) };
  } catch (err) {
    healthy = { ok: false, error: String(err?.message ?? err).slice(0, 300) };
  }
  // How many of the threads are still busy (runs not yet cancelled)?
  let busy = null;
  try {
    busy = await httpJson("POST", "/threads/count", { status: "busy" });
  } catch (err) {
    busy = `threads.count failed: ${err.message}`;
  }
  return {
    scenario: "open_streams",
    client: CLIENT,
    streams: STREAMS,
    sleep_ms: STREAM_SLEEP_MS,
    headers_200_received: CLIENT === "http" ? gotHeaders : null,
    metadata_received: gotFirst,
    first_event_names: firstNames,
    ended_before_close: ended,
    open_at_reading: stillOpen,
    all_metadata_s: r2(allFirstS),
    time_to_metadata: latencyStats(firstMs),
    errors: errors.toJSON(),
    server_before: before,
    server_open: open,
    server_after_close_3s: afterClose,
    close_s: r2((performance.now() - tClose) / 1000),
    busy_threads_after_close: busy,
    healthy_after: healthy,
    rss_mb: open?.rss_mb ?? null,
    hwm_mb: open?.hwm_mb ?? null,
    rss_growth_kb_per_stream:
      open?.rss_mb != null && before?.rss_mb != null ? r1(((open.rss_mb - before.rss_mb) * 1024) / STREAMS) : null,
  };
}

// ------------------------------------------------------------------------------- model_streams
// One runs.stream (messages-tuple and values) with --input, read to its end: the time to its first
// token and to its end, and the final values.
async function modelStream(base, tid, t0) {
  const res = await request(`${base}/threads/${tid}/runs/stream`, {
    method: "POST",
    dispatcher: agent,
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify({
      assistant_id: ASSISTANT,
      input: human(INPUT),
      stream_mode: ["messages-tuple", "values"],
    }),
  });
  if (res.statusCode !== 200) {
    throw new HttpError(res.statusCode, await res.body.text(), `/threads/${tid}/runs/stream`);
  }
  let firstToken = null;
  let values = null;
  for await (const ev of sseEvents(res.body)) {
    if (ev.event === "error") throw new Error(`error event: ${ev.data.join("\n").slice(0, 200)}`);
    if (ev.event !== "messages" && ev.event !== "values") continue;
    const data = JSON.parse(ev.data.join("\n"));
    if (ev.event === "values") values = data;
    if (firstToken !== null) continue;
    const text = ev.event === "messages" ? data?.[0]?.content : null;
    const last = ev.event === "values" ? data?.messages?.at(-1) : null;
    if ((typeof text === "string" && text.length > 0) || last?.type === "ai") {
      firstToken = performance.now() - t0;
    }
  }
  checkEcho(values, INPUT);
  return { firstToken, end: performance.now() - t0 };
}

async function scenarioModelStreams() {
  log(`model_streams: ${STREAMS} threads, then ${STREAMS} streams at once`);
  const created = await createThreads(STREAMS);
  if (created.errors.total) {
    return { scenario: "model_streams", failed: "threads.create failed", errors: created.errors.toJSON() };
  }
  await pause(1000);
  const before = serverProc();
  const model0 = await modelStats(true);
  const errors = new Errors();
  const first = [];
  const end = [];
  const t0 = performance.now();
  let peak = before;
  const sampler = setInterval(() => {
    const now = serverProc();
    if (now?.rss_mb != null && (peak?.rss_mb == null || now.rss_mb > peak.rss_mb)) peak = now;
  }, 200);
  await Promise.all(
    created.ids.map(async (tid, i) => {
      try {
        const r = await modelStream(BASES[i % BASES.length], tid, t0);
        if (r.firstToken !== null) first.push(r.firstToken);
        end.push(r.end);
      } catch (err) {
        errors.add(errorKind(err), err?.message ?? err);
      }
    }),
  );
  clearInterval(sampler);
  const allS = (performance.now() - t0) / 1000;
  const model1 = await modelStats(false);
  log(
    `model_streams: ${end.length} ended in ${r2(allS)} s, first token p50 ${latencyStats(first).p50_ms} ms, ` +
      `end p99 ${latencyStats(end).p99_ms} ms, ${errors.total} errors`,
  );
  return {
    scenario: "model_streams",
    streams: STREAMS,
    input: INPUT,
    all_ended_s: r2(allS),
    first_token: latencyStats(first),
    whole_stream: latencyStats(end),
    errors: errors.toJSON(),
    model: modelWindow(model0, model1),
    server_before: before,
    server_peak: peak,
    rss_mb: peak?.rss_mb ?? null,
  };
}

// ------------------------------------------------------------------------------- main
const RUNNERS = {
  wait: scenarioWait,
  first_event: scenarioFirstEvent,
  idle_threads: scenarioIdleThreads,
  open_streams: scenarioOpenStreams,
  model_streams: scenarioModelStreams,
};
try {
  const ok = await httpJson("GET", "/ok");
  if (!ok?.ok) throw new Error(`/ok answered ${JSON.stringify(ok)}`);
} catch (err) {
  log(`${BASE} does not answer: ${err.message}`);
  process.exit(1);
}
for (const name of SCENARIOS) {
  const t0 = performance.now();
  const result = await RUNNERS[name]();
  result.url = BASE;
  result.seconds = r1((performance.now() - t0) / 1000);
  result.node = process.version;
  console.log(JSON.stringify(result));
}
await agent.close().catch(() => {});
process.exit(0);
