// SPDX-License-Identifier: MIT
// The soak client (issue 18): THREADS conversation threads driven through the server API by
// CLIENTS concurrent clients for SECONDS (runs.wait of the echo graph `agent`), each thread by one
// client at a time; then every thread's final state is checked against the same inputs replayed
// one by one on a fresh server (REFERENCE_URL): any lost, repeated or foreign message fails it.
// Samples the servers' RSS and open file descriptors (PIDS) every 2 s. With TURNS > 0 a thread
// that reaches TURNS runs is checked then, deleted, and replaced by a fresh one (conversations of
// bounded length: what a server holds stays the same, so its memory must stay flat).
//   node soak.mjs URL[,URL...] REFERENCE_URL PIDS THREADS CLIENTS SECONDS [TURNS]
// URLs: the servers (several processes on one database share the threads; client c uses URL
// c mod n). Prints a JSON report; exits 1 when a thread differs or a request failed.
import { readFileSync, readdirSync } from "node:fs";

const [urlList, referenceUrl, pidList, threadCount, clientCount, seconds, turns = "0"] =
  process.argv.slice(2);
const TURNS = Number(turns);
const urls = urlList.split(",");
const pids = pidList.split(",").map(Number);
const THREADS = Number(threadCount);
const CLIENTS = Number(clientCount);
const DURATION_MS = Number(seconds) * 1000;

async function call(base, method, path, body) {
  const response = await fetch(base + path, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text.trim() ? JSON.parse(text) : null;
}

const errors = [];
const human = (content) => ({ messages: [{ role: "user", content }] });
const contents = (values) => (values?.messages ?? []).map((m) => `${m.type}:${m.content}`);

function sample() {
  let rss = 0;
  let fds = 0;
  for (const pid of pids) {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    rss += Number(/VmRSS:\s+(\d+)/.exec(status)[1]) / 1024;
    fds += readdirSync(`/proc/${pid}/fd`).length;
  }
  return { t: Math.round(performance.now() - started), rss_mb: Math.round(rss * 10) / 10, fds };
}

// Threads, and what each was sent, in order.
async function newThread(base) {
  const thread = await call(base, "POST", "/threads", { metadata: { soak: true } });
  return { id: thread.thread_id, sent: [], busy: false };
}
const threads = [];
for (let i = 0; i < THREADS; ++i) threads.push(await newThread(urls[i % urls.length]));

// Whether a thread's state equals the same inputs replayed one by one on a fresh server.
let differing = 0;
let checked = 0;
async function check(thread) {
  const reference = await call(referenceUrl, "POST", "/threads", {});
  for (const text of thread.sent) {
    await call(referenceUrl, "POST", `/threads/${reference.thread_id}/runs/wait`, {
      assistant_id: "agent",
      input: human(text),
    });
  }
  const [ours, theirs] = await Promise.all([
    call(urls[0], "GET", `/threads/${thread.id}/state`),
    call(referenceUrl, "GET", `/threads/${reference.thread_id}/state`),
  ]);
  await call(referenceUrl, "DELETE", `/threads/${reference.thread_id}`);
  ++checked;
  if (JSON.stringify(contents(ours.values)) !== JSON.stringify(contents(theirs.values))) {
    ++differing;
    if (differing <= 3) errors.push(`thread ${thread.id} differs from its sequential run`);
  }
}

const started = performance.now();
const samples = [sample()];
const sampler = setInterval(() => samples.push(sample()), 2000);
let runs = 0;
const deadline = started + DURATION_MS;
await Promise.all(
  Array.from({ length: CLIENTS }, async (_, c) => {
    const base = urls[c % urls.length];
    while (performance.now() < deadline) {
      // A thread nobody drives now (one run per thread at a time, as a user would).
      const free = threads.filter((t) => !t.busy);
      if (free.length === 0) {
        await new Promise((r) => setTimeout(r, 1));
        continue;
      }
      const thread = free[Math.floor(Math.random() * free.length)];
      thread.busy = true;
      const text = `c${c}-m${thread.sent.length}`;
      try {
        const values = await call(base, "POST", `/threads/${thread.id}/runs/wait`, {
          assistant_id: "agent",
          input: human(text),
        });
        thread.sent.push(text);
        const got = contents(values);
        if (got.at(-1) !== `ai:echo: ${text}`) {
          errors.push(`thread ${thread.id}: wait answered ${JSON.stringify(got.slice(-2))}`);
        }
        ++runs;
        if (TURNS > 0 && thread.sent.length >= TURNS) {
          // Checked now, then replaced by a fresh thread (it stays busy meanwhile).
          await check(thread);
          await call(base, "DELETE", `/threads/${thread.id}`);
          Object.assign(thread, await newThread(base), { busy: true });
        }
      } catch (e) {
        errors.push(String(e.message ?? e));
      }
      thread.busy = false;
    }
  }),
);
clearInterval(sampler);
samples.push(sample());
const elapsed = (performance.now() - started) / 1000;

// The threads still open: their final states against their sequential runs.
for (const thread of threads) {
  if (thread.sent.length > 0) await check(thread);
}

const third = Math.max(1, Math.floor(samples.length / 3));
const mean = (xs, key) => xs.reduce((s, x) => s + x[key], 0) / xs.length;
const report = {
  threads: THREADS,
  clients: CLIENTS,
  servers: urls.length,
  seconds: Math.round(elapsed * 10) / 10,
  runs,
  runs_per_s: Math.round(runs / elapsed),
  turns_per_thread: TURNS || "unbounded",
  threads_checked: checked,
  threads_differing: differing,
  errors: errors.length,
  first_errors: errors.slice(0, 5),
  rss_mb: { first_third: mean(samples.slice(0, third), "rss_mb"), last_third: mean(samples.slice(-third), "rss_mb"), max: Math.max(...samples.map((s) => s.rss_mb)) },
  fds: { first: samples[1]?.fds ?? samples[0].fds, last: samples.at(-1).fds, max: Math.max(...samples.map((s) => s.fds)) },
  samples,
};
console.log(JSON.stringify(report));
process.exit(differing === 0 && errors.length === 0 ? 0 : 1);
