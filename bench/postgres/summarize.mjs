// SPDX-License-Identifier: MIT
// WORKLOADS.md's summarize_trim (c) on LangGraph.js's own PostgresSaver: 500 turns; each turn
// appends a 150-character human message, a fake model answers with it reversed, and past 6
// messages a summarize node folds all but the last 2 into a capped summary and removes them.
// Durability "async" (LangGraph's default). The graph and the data are the anchor's
// (shared/anchors/langgraphjs/bench.mjs). Prints one JSON line.
//   node summarize.mjs SOCKET_DIR PORT DATABASE
import { AIMessage, HumanMessage, RemoveMessage } from "@langchain/core/messages";
import { Annotation, END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";

import { SAVER, SEEDS, bytesOf, saverOn, settle, textFor } from "./common.mjs";

const SUM = { turns: 500, humanChars: 150, threshold: 6, keep: 2, takeChars: 40, cap: 500, window: 100, warmupTurns: 50 };

const msgType = (m) => (typeof m._getType === "function" ? m._getType() : m.type);
const reverseString = (s) => s.split("").reverse().join("");

function buildSummarizeGraph(saver) {
  const S = Annotation.Root({ ...MessagesAnnotation.spec, summary: Annotation() });
  const callModel = (state) => {
    let human;
    for (let i = state.messages.length - 1; i >= 0; i--) {
      if (msgType(state.messages[i]) === "human") {
        human = state.messages[i];
        break;
      }
    }
    const id = "a-" + human.id.slice(2);
    return { messages: [new AIMessage({ id, content: reverseString(human.content) })] };
  };
  const shouldContinue = (state) =>
    state.messages.length > SUM.threshold ? "summarize_conversation" : END;
  const summarize = (state) => {
    const prev = state.summary ?? "";
    const parts = state.messages.map((m) => m.content.slice(0, SUM.takeChars)).join("\n");
    let summary = prev ? `${prev}\n${parts}` : parts;
    if (summary.length > SUM.cap) summary = summary.slice(summary.length - SUM.cap);
    const remove = state.messages.slice(0, -SUM.keep).map((m) => new RemoveMessage({ id: m.id }));
    return { summary, messages: remove };
  };
  return new StateGraph(S)
    .addNode("call_model", callModel)
    .addNode("summarize_conversation", summarize)
    .addEdge(START, "call_model")
    .addConditionalEdges("call_model", shouldContinue, ["summarize_conversation", END])
    .addEdge("summarize_conversation", END)
    .compile({ checkpointer: saver });
}

const turnInput = (t) => ({
  messages: [new HumanMessage({ id: `h-${t}`, content: textFor(SEEDS.summarize + t, SUM.humanChars) })],
});

{
  const w = await saverOn("summarize_warmup");
  const app = buildSummarizeGraph(w.saver);
  for (let t = 0; t < SUM.warmupTurns; t++) {
    await app.invoke(turnInput(t), { configurable: { thread_id: "warmup" } });
  }
  await w.pool.end();
}
const { pool, saver } = await saverOn("summarize");
const app = buildSummarizeGraph(saver);
const config = { configurable: { thread_id: "sum-1" } };
const turnMs = [];
const t0 = performance.now();
for (let t = 0; t < SUM.turns; t++) {
  const a = performance.now();
  await app.invoke(turnInput(t), config);
  turnMs.push(performance.now() - a);
}
const wall = (performance.now() - t0) / 1000;
const state = await app.getState(config);
const sum = (a) => a.reduce((x, y) => x + y, 0);
await settle();
console.log(
  JSON.stringify({
    unit: "summarize_trim:postgres",
    implementation: "langgraphjs",
    saver: SAVER,
    durability: "async (library default)",
    turns: SUM.turns,
    seconds: +wall.toFixed(3),
    turns_per_s: +(SUM.turns / wall).toFixed(1),
    first_100_turns_ms: +sum(turnMs.slice(0, SUM.window)).toFixed(1),
    last_100_turns_ms: +sum(turnMs.slice(-SUM.window)).toFixed(1),
    final_messages: state.values.messages.length,
    final_message_ids: state.values.messages.map((m) => m.id),
    summary_length: (state.values.summary ?? "").length,
    storage: await bytesOf(pool, "summarize"),
  }),
);
await pool.end();
