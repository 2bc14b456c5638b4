#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// LangGraph.js side of stategraph-bench's concurrent_waits: 10,000 runs started at once
// (Promise.all of invoke), each a graph whose one node awaits setTimeout(100 ms). Prints one
// JSON line with the fields the C++ unit reports.
//
//   node bench/js/concurrent_waits.mjs --anchor ../shared/anchors/langgraphjs [--runs N]
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const anchor = path.resolve(opt("--anchor", "../shared/anchors/langgraphjs"));
const runs = Number(opt("--runs", "10000"));
const require = createRequire(path.join(anchor, "package.json"));
const { StateGraph, Annotation, START, END } = await import(require.resolve("@langchain/langgraph"));

const State = Annotation.Root({ done: Annotation({ reducer: (_a, b) => b, default: () => 0 }) });
const app = new StateGraph(State)
  .addNode("wait", async (s) => {
    await new Promise((resolve) => setTimeout(resolve, 100));
    return { done: s.done + 1 };
  })
  .addEdge(START, "wait")
  .addEdge("wait", END)
  .compile();

const rssKb = () => {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync("/proc/self/status", "utf8"));
  return m ? Number(m[1]) : NaN;
};
const threads = () => fs.readdirSync("/proc/self/task").length;

await app.invoke({ done: 0 });  // warm up: modules loaded, code compiled
global.gc?.();
const before = rssKb();
let inFlight = { rss: before, threads: threads() };
setTimeout(() => {
  inFlight = { rss: rssKb(), threads: threads() };
}, 50);
const t0 = process.hrtime.bigint();
const results = await Promise.all(Array.from({ length: runs }, () => app.invoke({ done: 0 })));
const wall = Number(process.hrtime.bigint() - t0) / 1e9;
const finished = results.filter((r) => r.done === 1).length;
console.log(
  JSON.stringify({
    scenario: "concurrent_waits",
    graph_runs: runs,
    finished,
    wall_s: +wall.toFixed(3),
    threads_in_flight: inFlight.threads,
    rss_in_flight_kb_per_run: +((inFlight.rss - before) / runs).toFixed(2),
    peak_rss_mb: +(process.resourceUsage().maxRSS / 1024).toFixed(1),
  }),
);
