#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// run.sh's bookkeeping for bench/server:
//   node report.mjs combine FILE.jsonl --server NAME [--command C] [--binary B] [--quick 0|1]
//        [--client K] [--turns N]      one JSON object (one line) from client.mjs's lines
//   node report.mjs table RESULTS.jsonl  a markdown table: each server, and stategraph /
//                                        reference with the targets of the issue
//   node report.mjs models RESULTS.jsonl models.sh's lines as markdown tables: runs.wait per
//                                        storage, graph and concurrency; the concurrent streams
import fs from "node:fs";
import os from "node:os";

const [mode, file, ...rest] = process.argv.slice(2);
const opt = (name, fallback = null) => {
  const i = rest.indexOf(name);
  return i >= 0 ? rest[i + 1] : fallback;
};
const lines = (f) =>
  fs
    .readFileSync(f, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => {
      try {
        return JSON.parse(l);
      } catch {
        return { scenario: "unparsed", text: l.slice(0, 500) };
      }
    });

if (mode === "combine") {
  const out = {
    server: opt("--server"),
    command: opt("--command"),
    binary: opt("--binary") ?? undefined,
    quick: opt("--quick") === "1",
    client: opt("--client"),
    turns_per_thread: Number(opt("--turns", "0")) || null,
    date: new Date().toISOString(),
    machine: { cpus: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version },
    problems: [],
  };
  for (const r of lines(file)) {
    if (["wait", "first_event", "idle_threads", "open_streams"].includes(r.scenario)) {
      out[r.scenario] = r;
    } else {
      out.problems.push(r);
    }
  }
  // Anything that went wrong, in one place.
  for (const l of out.wait?.levels ?? []) {
    if (l.errors?.total) out.problems.push({ scenario: "wait", concurrency: l.concurrency, errors: l.errors });
  }
  for (const s of ["first_event", "idle_threads", "open_streams"]) {
    if (out[s]?.errors?.total) out.problems.push({ scenario: s, errors: out[s].errors });
  }
  const os_ = out.open_streams;
  if (os_ && os_.metadata_received !== os_.streams) {
    out.problems.push({
      scenario: "open_streams",
      note: `${os_.metadata_received} of ${os_.streams} streams got their metadata event`,
    });
  }
  if (os_?.healthy_after && !os_.healthy_after.ok) {
    out.problems.push({ scenario: "open_streams", note: "no working runs.wait after the streams closed", detail: os_.healthy_after });
  }
  console.log(JSON.stringify(out));
  process.exit(0);
}

if (mode === "models") {
  const all = lines(file);
  const s1 = (ms) => (ms == null ? "—" : (ms / 1000).toFixed(2));
  const where = (r) => `${r.server} | ${r.storage} | ${r.graph}`;
  console.log("| server | storage | graph | clients | runs/s | p50 s | p99 s | errors | model in flight (max) | RSS MB |");
  console.log("|---|---|---|---:|---:|---:|---:|---:|---:|---:|");
  for (const r of all.filter((x) => x.scenario === "wait")) {
    for (const l of r.levels ?? []) {
      console.log(
        `| ${where(r)} | ${l.concurrency} | ${l.runs_per_s ?? "—"} | ${s1(l.latency?.p50_ms)} | ` +
          `${s1(l.latency?.p99_ms)} | ${l.errors?.total ?? "—"} | ${l.model?.max_in_flight ?? "—"} | ` +
          `${l.server_in_window?.rss_mb ?? "—"} |`,
      );
    }
  }
  console.log("");
  console.log("| server | storage | graph | streams | first token p50 / p99 s | end p50 / p99 s | all ended s | errors | model in flight (max) | RSS peak MB |");
  console.log("|---|---|---|---:|---:|---:|---:|---:|---:|---:|");
  for (const r of all.filter((x) => x.scenario === "model_streams")) {
    console.log(
      `| ${where(r)} | ${r.streams} | ${s1(r.first_token?.p50_ms)} / ${s1(r.first_token?.p99_ms)} | ` +
        `${s1(r.whole_stream?.p50_ms)} / ${s1(r.whole_stream?.p99_ms)} | ${r.all_ended_s} | ` +
        `${r.errors?.total ?? "—"} | ${r.model?.max_in_flight ?? "—"} | ${r.rss_mb ?? "—"} |`,
    );
  }
  const problems = all.filter((x) => !["wait", "model_streams"].includes(x.scenario));
  for (const p of problems) console.log(`\nproblem: ${JSON.stringify(p).slice(0, 500)}`);
  process.exit(0);
}

if (mode !== "table") {
  console.error("usage: report.mjs combine FILE --server NAME ... | report.mjs table FILE");
  process.exit(2);
}

const results = Object.fromEntries(lines(file).filter((r) => r.server).map((r) => [r.server, r]));
const sg = results.stategraph;
const ref = results.reference;
const fmt = (x, digits = 1) =>
  x == null || Number.isNaN(x)
    ? "—"
    : Math.abs(x) >= 1000
      ? Math.round(x).toLocaleString("en-US")
      : x.toFixed(digits).replace(/\.0+$/, "");
const level = (r, c) => r?.wait?.levels?.find((l) => l.concurrency === c);
const concurrencies = [
  ...new Set([...(sg?.wait?.levels ?? []), ...(ref?.wait?.levels ?? [])].map((l) => l.concurrency)),
];

// [label, get(result), "higher" | "lower" | null (no target), target text, target test(ratio)]
const rows = [];
for (const c of concurrencies) {
  rows.push([`runs.wait, ${c} clients: runs/s`, (r) => level(r, c)?.runs_per_s, "higher", "≥ 20x", (q) => q >= 20]);
  rows.push([`runs.wait, ${c} clients: p50 latency (ms)`, (r) => level(r, c)?.latency?.p50_ms, "lower"]);
  rows.push([`runs.wait, ${c} clients: p99 latency (ms)`, (r) => level(r, c)?.latency?.p99_ms, "lower", "lower", (q) => q < 1]);
  rows.push([`runs.wait, ${c} clients: errors`, (r) => level(r, c)?.errors?.total, null]);
  rows.push([`runs.wait, ${c} clients: client CPU (share of one core)`, (r) => level(r, c)?.cpu?.client_of_one_core, null]);
  rows.push([`runs.wait, ${c} clients: server CPU (cores)`, (r) => level(r, c)?.cpu?.server_of_cores, null]);
}
rows.push(["first SSE event, p50 (ms)", (r) => r?.first_event?.first_event?.p50_ms, "lower"]);
rows.push(["first SSE event, p99 (ms)", (r) => r?.first_event?.first_event?.p99_ms, "lower"]);
rows.push(["whole stream (3 events), p50 (ms)", (r) => r?.first_event?.whole_stream?.p50_ms, "lower"]);
const idleN = sg?.idle_threads?.threads_requested ?? ref?.idle_threads?.threads_requested;
rows.push([`RSS before, fresh server (MB)`, (r) => r?.idle_threads?.server_before?.rss_mb, "lower"]);
rows.push([`RSS with ${fmt(idleN)} idle threads (MB)`, (r) => r?.idle_threads?.rss_mb, "lower", "≤ 0.1x", (q) => q <= 0.1]);
rows.push([`peak RSS (VmHWM) with ${fmt(idleN)} idle threads (MB)`, (r) => r?.idle_threads?.hwm_mb, "lower", "≤ 0.1x", (q) => q <= 0.1]);
rows.push([`RssAnon (private memory, no mapped files) with ${fmt(idleN)} idle threads (MB)`, (r) => r?.idle_threads?.server_after_2s?.anon_mb, "lower"]);
rows.push([`threads.create/s`, (r) => r?.idle_threads?.creates_per_s, "higher"]);
const streamsN = sg?.open_streams?.streams ?? ref?.open_streams?.streams;
rows.push([`open streams: 200 responses (headers) received (of ${fmt(streamsN)})`, (r) => r?.open_streams?.headers_200_received, null]);
rows.push([`open streams: metadata events received (of ${fmt(streamsN)})`, (r) => r?.open_streams?.metadata_received, null]);
rows.push([`open streams: all metadata events after (s)`, (r) => r?.open_streams?.all_metadata_s, "lower"]);
rows.push([`RSS with ${fmt(streamsN)} open streams (MB)`, (r) => r?.open_streams?.rss_mb, "lower", "≤ 0.1x", (q) => q <= 0.1]);
rows.push([`peak RSS (VmHWM) with ${fmt(streamsN)} open streams (MB)`, (r) => r?.open_streams?.hwm_mb, "lower", "≤ 0.1x", (q) => q <= 0.1]);
rows.push([`RssAnon with ${fmt(streamsN)} open streams (MB)`, (r) => r?.open_streams?.server_open?.anon_mb, "lower"]);
rows.push([`server threads with ${fmt(streamsN)} open streams`, (r) => r?.open_streams?.server_open?.threads, null]);
rows.push([`RSS 3 s after closing them (MB)`, (r) => r?.open_streams?.server_after_close_3s?.rss_mb, "lower"]);
if (ref?.idle_threads?.server_after_2s?.group) {
  // `langgraphjs dev` is three processes (CLI, tsx, server); stategraph is one.
  rows.push([`RSS with ${fmt(idleN)} idle threads, every process of the server (MB)`, (r) => r?.idle_threads?.server_after_2s?.group?.rss_mb ?? r?.idle_threads?.rss_mb, "lower", "≤ 0.1x", (q) => q <= 0.1]);
  rows.push([`RSS with ${fmt(streamsN)} open streams, every process of the server (MB)`, (r) => r?.open_streams?.server_open?.group?.rss_mb ?? r?.open_streams?.rss_mb, "lower", "≤ 0.1x", (q) => q <= 0.1]);
}

const both = sg && ref;
const header = both
  ? "| metric | stategraph | reference | stategraph / reference | target |\n|---|---:|---:|---:|---|"
  : `| metric | ${sg ? "stategraph" : "reference"} |\n|---|---:|`;
console.log(header);
for (const [label, get, better, targetText, targetOk] of rows) {
  const a = get(sg);
  const b = get(ref);
  if (!both) {
    console.log(`| ${label} | ${fmt(sg ? a : b, 2)} |`);
    continue;
  }
  const ratio = a != null && b != null && b !== 0 ? a / b : null;
  let target = "";
  if (targetText) target = ratio == null ? `${targetText}: —` : `${targetText}: ${targetOk(ratio) ? "met" : "NOT met"}`;
  console.log(`| ${label} | ${fmt(a, 2)} | ${fmt(b, 2)} | ${ratio == null ? "—" : fmt(ratio, ratio < 0.1 ? 4 : 3)} | ${target} |`);
}
for (const r of [sg, ref].filter(Boolean)) {
  if (r.problems?.length) {
    console.log(`\n${r.server}: ${r.problems.length} problem(s):`);
    for (const p of r.problems) console.log("- " + JSON.stringify(p).slice(0, 600));
  }
}
