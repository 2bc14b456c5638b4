#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// LangGraph.js side of stategraph-bench's memory_conversation: LangGraph's "add summary of
// conversation history" how-to with trimMessages in call_model, 10,000 turns on SqliteSaver
// (durability "async", the library default), with a fake chat model answering instantly (a
// SimpleChatModel: "Noted: <statement>." and, asked to summarize, the newest statements within
// 1,000 characters, as stategraph's LocalModel does within 256 tokens). Bytes per turn are the
// serialized bytes the saver added to its tables (SqliteSaver never deletes). Prints one JSON line.
//
//   node bench/js/memory_conversation.mjs --anchor ../shared/anchors/langgraphjs [--turns N]
import { createRequire } from "node:module";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const anchor = path.resolve(opt("--anchor", "../shared/anchors/langgraphjs"));
const turns = Number(opt("--turns", "10000"));
const windowTurns = Math.min(1000, turns);
const require = createRequire(path.join(anchor, "package.json"));
const load = (name) => import(require.resolve(name));
const { StateGraph, Annotation, MessagesAnnotation, START, END } = await load("@langchain/langgraph");
const { SqliteSaver } = await load("@langchain/langgraph-checkpoint-sqlite");
const { HumanMessage, SystemMessage, RemoveMessage, trimMessages } = await load("@langchain/core/messages");
const { SimpleChatModel } = await load("@langchain/core/language_models/chat_models");
const { textFor } = await import(path.join(anchor, "workload.mjs"));

const HUMAN_SEED = 0x20000000;
const textOf = (m) => (typeof m.content === "string" ? m.content : "");
const sentences = (text) =>
  text
    .split(/(?<=[.!?])\s+/)
    .map((s) => s.trim().replace(/[.!?]$/, ""))
    .filter(Boolean);

class InstantModel extends SimpleChatModel {
  _llmType() {
    return "instant";
  }
  async _call(messages) {
    const last = textOf(messages.at(-1));
    if (/summar/i.test(last)) {
      const facts = [];
      const colon = last.indexOf(":");
      if (last.startsWith("This is summary")) facts.push(...sentences(last.slice(colon + 1).split("\n\n")[0]));
      for (const m of messages.slice(0, -1)) if (m._getType() === "human") facts.push(...sentences(textOf(m)));
      const kept = [];
      let used = 0;
      for (const f of [...new Set(facts)].reverse()) {
        if (used + f.length + 2 > 1000) break;
        used += f.length + 2;
        kept.unshift(f);
      }
      return kept.map((f) => f + ".").join(" ");
    }
    return `Noted: ${last.replace(/[.!?]$/, "")}.`;
  }
}

// count_tokens_approximately: ceil(chars / 4) + 3 per message (content plus the role name).
const approxTokens = (msgs) =>
  msgs.reduce((n, m) => n + Math.ceil((textOf(m).length + m._getType().length) / 4) + 3, 0);

const State = Annotation.Root({ ...MessagesAnnotation.spec, summary: Annotation() });

function graph(saver) {
  const model = new InstantModel({});
  return new StateGraph(State)
    .addNode("call_model", async (state) => {
      const context = state.summary
        ? [new SystemMessage(`Summary of conversation earlier: ${state.summary}`), ...state.messages]
        : state.messages;
      const trimmed = await trimMessages(context, {
        maxTokens: 512,
        strategy: "last",
        tokenCounter: approxTokens,
        includeSystem: true,
        startOn: "human",
        endOn: "human",
      });
      // trimMessages (@langchain/core 1.4.0) returns [undefined] when, with includeSystem, the
      // system message fits and no other message does; the 512-token budget avoids that here.
      return { messages: [await model.invoke(trimmed.filter(Boolean))] };
    })
    .addNode("summarize_conversation", async (state) => {
      const prompt = state.summary
        ? `This is summary of the conversation to date: ${state.summary}\n\nExtend the summary by taking into account the new messages above:`
        : "Create a summary of the conversation above:";
      const response = await model.invoke([...state.messages, new HumanMessage({ content: prompt })]);
      const deleteMessages = state.messages.slice(0, -2).map((m) => new RemoveMessage({ id: m.id }));
      return { summary: response.content, messages: deleteMessages };
    })
    .addEdge(START, "call_model")
    .addConditionalEdges("call_model", (s) => (s.messages.length > 6 ? "summarize_conversation" : END), [
      "summarize_conversation",
      END,
    ])
    .addEdge("summarize_conversation", END)
    .compile({ checkpointer: saver });
}

const input = (t) => ({
  messages: [new HumanMessage({ id: `h-${t}`, content: textFor(HUMAN_SEED + t, 150) + "." })],
});

function freshDb(name) {
  const dir = path.join(os.tmpdir(), "stategraph-bench-js");
  fs.mkdirSync(dir, { recursive: true });
  const p = path.join(dir, `${name}.sqlite`);
  for (const f of [p, `${p}-wal`, `${p}-shm`]) fs.rmSync(f, { force: true });
  return p;
}

function storedBytes(saver) {
  const tables = saver.db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'checkpoints'").get();
  if (!tables.n) return 0; // the saver creates its tables on first use
  const cp = saver.db
    .prepare("SELECT coalesce(sum(length(checkpoint)),0) + coalesce(sum(length(metadata)),0) AS b FROM checkpoints")
    .get();
  const wr = saver.db.prepare("SELECT coalesce(sum(length(value)),0) AS b FROM writes").get();
  return cp.b + wr.b;
}

{
  const warm = graph(SqliteSaver.fromConnString(freshDb("memory_conversation_warmup")));
  for (let t = 0; t < 50; t++) await warm.invoke(input(t), { configurable: { thread_id: "warmup" } });
}
const dbPath = freshDb("memory_conversation");
const saver = SqliteSaver.fromConnString(dbPath);
const app = graph(saver);
const config = { configurable: { thread_id: "memory-1" } };
const samples = new Map(); // turn -> stored bytes before it
let measuring = 0; // time spent sampling, taken out of the timed region
const sample = (t) => {
  const a = performance.now();
  samples.set(t, storedBytes(saver));
  measuring += performance.now() - a;
};
const cpu0 = process.cpuUsage();
const t0 = performance.now();
let firstWindowS = 0;
let lastWindowStart = 0;
for (let t = 0; t < turns; t++) {
  if (t === 0 || t === windowTurns || t === turns - windowTurns) sample(t);
  if (t === turns - windowTurns) lastWindowStart = (performance.now() - t0 - measuring) / 1000;
  await app.invoke(input(t), config);
  if (t === windowTurns - 1) firstWindowS = (performance.now() - t0 - measuring) / 1000;
}
sample(turns);
const wall = (performance.now() - t0 - measuring) / 1000;
const cpu = process.cpuUsage(cpu0);
const perTurn = (from) => (samples.get(from + windowTurns) - samples.get(from)) / windowTurns;
const state = await app.getState(config);
const r3 = (x) => Math.round(x * 1000) / 1000;
console.log(
  JSON.stringify({
    scenario: "memory_conversation",
    turns,
    wall_s: r3(wall),
    turns_per_s: Math.round((turns / wall) * 10) / 10,
    cpu_s: r3((cpu.user + cpu.system) / 1e6),
    saver: "sqlite",
    durability: "async (library default)",
    model: "InstantModel (SimpleChatModel)",
    bytes_per_turn_first_1000: Math.round(perTurn(0) * 10) / 10,
    bytes_per_turn_last_1000: Math.round(perTurn(turns - windowTurns) * 10) / 10,
    bytes_last_over_first: r3(perTurn(turns - windowTurns) / perTurn(0)),
    first_1000_turns_s: r3(firstWindowS),
    last_1000_turns_s: r3(wall - lastWindowStart),
    stored_bytes: samples.get(turns),
    final_messages: state.values.messages.length,
    summary_length: state.values.summary.length,
    db_file_bytes: fs.statSync(dbPath).size + (fs.existsSync(`${dbPath}-wal`) ? fs.statSync(`${dbPath}-wal`).size : 0),
    peak_rss_mb: Math.round((process.resourceUsage().maxRSS / 1024) * 10) / 10,
    node: process.version,
  }),
);
