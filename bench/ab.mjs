#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// A/B of stategraph-bench builds (or of one build in several modes), interleaved on this
// machine, medians per side: what a change to the executor costs.
//
//   node bench/ab.mjs [--rounds N] SCENARIO... -- NAME=BINARY[:ENV=VALUE,...] ...
//
//   node bench/ab.mjs --rounds 5 chain seq3 loop -- \
//     before=/tmp/sg-base/build-bench/bench/stategraph-bench \
//     after=build-bench/bench/stategraph-bench \
//     noop=build-bench/bench/stategraph-bench:SG_BENCH_TRACE=noop
//
// Each round runs every scenario once on every side, in turn. The table shows each side's
// median and its ratio to the first side.
import { execFileSync } from "node:child_process";

const args = process.argv.slice(2);
const split = args.indexOf("--");
if (split < 0) {
  console.error("usage: node bench/ab.mjs [--rounds N] SCENARIO... -- NAME=BINARY[:ENV=V,...] ...");
  process.exit(2);
}
let rounds = 3;
const scenarios = [];
for (let i = 0; i < split; ++i) {
  if (args[i] === "--rounds") rounds = Number(args[++i]);
  else scenarios.push(args[i]);
}
const sides = args.slice(split + 1).map((spec) => {
  const [name, rest] = [spec.slice(0, spec.indexOf("=")), spec.slice(spec.indexOf("=") + 1)];
  const colon = rest.indexOf(":");
  const binary = colon < 0 ? rest : rest.slice(0, colon);
  const envList = colon < 0 ? "" : rest.slice(colon + 1);
  const env = { ...process.env };
  for (const pair of envList ? envList.split(",") : []) {
    const at = pair.indexOf("=");
    env[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return { name, binary, env };
});

// The figures compared per scenario: [label, path in the JSON line].
const FIGURES = {
  chain: [["invocations/s", "invocations_per_s"]],
  seq3: [["invocations/s", "invocations_per_s"]],
  fanout: [["invocations/s", "invocations_per_s"]],
  loop: [
    ["supersteps/s (memory)", "variants.memory.supersteps_per_s"],
    ["supersteps/s (rocksdb)", "variants.rocksdb.supersteps_per_s"],
  ],
  summarize_trim: [
    ["turns/s (memory)", "variants.memory.turns_per_s"],
    ["turns/s (rocksdb)", "variants.rocksdb.turns_per_s"],
  ],
};
const at = (object, path) => path.split(".").reduce((o, k) => (o == null ? undefined : o[k]), object);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const samples = {}; // scenario -> label -> side -> [values]
for (let r = 0; r < rounds; ++r) {
  for (const scenario of scenarios) {
    for (const side of sides) {
      const out = execFileSync(side.binary, [scenario, "--json"], { env: side.env, encoding: "utf8" });
      const line = out.trim().split("\n").pop();
      const report = JSON.parse(line);
      for (const [label, path] of FIGURES[scenario] ?? [["ops/s", "ops_per_s"]]) {
        const value = at(report, path);
        if (typeof value !== "number") continue;
        ((samples[scenario] ??= {})[label] ??= {})[side.name] ??= [];
        samples[scenario][label][side.name].push(value);
      }
    }
  }
}

const header = ["scenario", "figure", ...sides.map((s) => s.name), ...sides.slice(1).map((s) => `${s.name}/${sides[0].name}`)];
console.log(`| ${header.join(" | ")} |`);
console.log(`|${header.map(() => "---").join("|")}|`);
for (const scenario of scenarios) {
  for (const [label, bySide] of Object.entries(samples[scenario] ?? {})) {
    const medians = sides.map((s) => median(bySide[s.name] ?? [NaN]));
    const ratios = medians.slice(1).map((m) => (m / medians[0]).toFixed(3));
    console.log(`| ${scenario} | ${label} | ${medians.map((m) => Math.round(m).toLocaleString("en-US")).join(" | ")} | ${ratios.join(" | ")} |`);
  }
}
console.log(`\n${rounds} interleaved rounds; medians.`);
