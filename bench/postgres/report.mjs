// SPDX-License-Identifier: MIT
// The table of bench/postgres/run.sh: per workload, LangGraph.js's PostgresSaver first, then
// stategraph's, with speed and bytes as ratios to LangGraph.js.
//   node report.mjs RESULTS.jsonl
import { readFileSync } from "node:fs";

const rows = readFileSync(process.argv[2], "utf8").trim().split("\n").map((l) => JSON.parse(l));
const fmt = (n) => Number(n).toLocaleString("en");
for (const [workload, rate, label, first, last] of [
  ["loop", "supersteps_per_s", "supersteps/s", "first_100_steps_ms", "last_100_steps_ms"],
  ["summarize_trim", "turns_per_s", "turns/s", "first_100_turns_ms", "last_100_turns_ms"],
]) {
  const mine = rows.filter((r) => (r.unit ?? r.scenario).startsWith(workload + ":"));
  const js = mine.find((r) => r.implementation === "langgraphjs");
  if (!js) continue;
  console.log(`\n${workload}`);
  console.log(`| saver | durability | ${label} | first / last 100 (ms) | bytes stored | speed | fewer bytes |`);
  console.log("|---|---|---:|---:|---:|---:|---:|");
  for (const r of [js, ...mine.filter((x) => x !== js)]) {
    const name =
      r === js
        ? "LangGraph.js PostgresSaver"
        : `stategraph PostgresSaver${(r.saver ?? "").endsWith("exclusive") ? " (exclusive)" : ""}`;
    const bytes = r.storage.total_bytes;
    console.log(
      `| ${name} | ${r.durability} | ${fmt(r[rate])} | ${r[first]} / ${r[last]} | ${fmt(bytes)} | ` +
        `${(r[rate] / js[rate]).toFixed(1)}x | ${(js.storage.total_bytes / bytes).toFixed(1)}x |`,
    );
  }
}
