// SPDX-License-Identifier: MIT
// The load of bench/scaleout/run.sh: --concurrency virtual clients, client i on server
// i mod N (the URLs given), each on a thread of its own, calling runs/wait (the echo graph,
// input "hi") back to back for --duration s after --warmup s. Prints one JSON line: runs/s,
// latency p50/p99, errors. Node's built-in fetch (keep-alive).
//   node load.mjs URL1[,URL2,...] [--concurrency 64] [--duration 10] [--warmup 2]
const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const urls = args[0].split(",").map((u) => u.replace(/\/+$/, ""));
const concurrency = Number(opt("--concurrency", "64"));
const duration = Number(opt("--duration", "10")) * 1000;
const warmup = Number(opt("--warmup", "2")) * 1000;

async function call(url, path, body) {
  const res = await fetch(url + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`HTTP ${res.status} ${path}: ${text.slice(0, 200)}`);
  return JSON.parse(text);
}

const latencies = [];
let errors = 0;
let firstError = "";
const start = Date.now();
const measureFrom = start + warmup;
const end = measureFrom + duration;

async function client(i) {
  const url = urls[i % urls.length];
  const { thread_id: tid } = await call(url, "/threads", { metadata: {} });
  while (Date.now() < end) {
    const t0 = performance.now();
    try {
      await call(url, `/threads/${tid}/runs/wait`, {
        assistant_id: "agent",
        input: { messages: [{ role: "user", content: "hi" }] },
      });
      if (Date.now() >= measureFrom && Date.now() < end) latencies.push(performance.now() - t0);
    } catch (err) {
      errors++;
      firstError ||= err.message;
    }
  }
}

await Promise.all(Array.from({ length: concurrency }, (_, i) => client(i)));
latencies.sort((a, b) => a - b);
const pick = (q) => (latencies.length ? latencies[Math.floor(q * (latencies.length - 1))] : null);
const r2 = (x) => (x === null ? null : Math.round(x * 100) / 100);
console.log(
  JSON.stringify({
    servers: urls.length,
    concurrency,
    duration_s: duration / 1000,
    runs: latencies.length,
    runs_per_s: r2(latencies.length / (duration / 1000)),
    p50_ms: r2(pick(0.5)),
    p99_ms: r2(pick(0.99)),
    errors,
    first_error: firstError || undefined,
  }),
);
