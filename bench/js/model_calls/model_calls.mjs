#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// LangGraph.js side of stategraph-bench model_calls: N concurrent streaming chat calls through
// LangChain's ChatOpenAI (@langchain/openai, the client LangGraph.js agents use) to a loopback
// OpenAI-wire server (sg-loopback-openai), all started at once. Prints one JSON line with the
// fields the C++ side reports.
//
//   (cd bench/js/model_calls && npm ci)
//   node bench/js/model_calls/model_calls.mjs --base-url http://127.0.0.1:PORT/v1 [--calls N]
import { ChatOpenAI } from "@langchain/openai";
import fs from "node:fs";

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const baseURL = opt("--base-url", "");
const calls = Number(opt("--calls", "1000"));
if (!baseURL) throw new Error("--base-url is required");

const model = new ChatOpenAI({
  model: "loopback",
  apiKey: "unused",
  streaming: true,
  maxRetries: 0,
  timeout: 60000,
  streamUsage: true,
  configuration: { baseURL },
});
const threads = () => fs.readdirSync("/proc/self/task").length;

async function one(i) {
  let chunks = 0;
  let text = "";
  for await (const chunk of await model.stream([["user", `call ${i}`]])) {
    chunks += 1;
    text += chunk.content;
  }
  return { chunks, text };
}

await one(-1);  // warm up: modules loaded, the connection pool made
let threadsInFlight = threads();
setTimeout(() => {
  threadsInFlight = threads();
}, 500);
const cpu0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
const results = await Promise.all(Array.from({ length: calls }, (_, i) => one(i)));
const wall = Number(process.hrtime.bigint() - t0) / 1e9;
const cpu = process.cpuUsage(cpu0);
const cpuS = (cpu.user + cpu.system) / 1e6;
const chunks = results.reduce((n, r) => n + r.chunks, 0);
console.log(
  JSON.stringify({
    scenario: "model_calls",
    calls,
    finished: results.filter((r) => r.text.length > 0).length,
    chunks,
    wall_s: +wall.toFixed(3),
    cpu_s: +cpuS.toFixed(3),
    cpu_us_per_chunk: +((cpuS * 1e6) / chunks).toFixed(2),
    threads_in_flight: threadsInFlight,
    peak_rss_mb: +(process.resourceUsage().maxRSS / 1024).toFixed(1),
  }),
);
