// SPDX-License-Identifier: MIT
// WORKLOADS.md's loop (b) on LangGraph.js's own PostgresSaver
// (@langchain/langgraph-checkpoint-postgres): 1,000 supersteps alternating two nodes that each
// append a 200-character message, durability "async" (LangGraph's default), then the bytes its
// tables hold. The graph and the data are the anchor's (shared/anchors/langgraphjs/bench.mjs,
// workload.mjs). Prints one JSON line.
//   node loop.mjs SOCKET_DIR PORT DATABASE
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";

import { SAVER, SEEDS, bytesOf, saverOn, settle, textFor } from "./common.mjs";

const LOOP = { steps: 1000, chars: 200, window: 100, warmupSteps: 100 };

function buildLoopGraph(saver, steps, entry) {
  const mk = (Cls) => (state) => {
    const i = state.messages.length;
    entry.push(performance.now());
    const id = `m-${String(i).padStart(5, "0")}`;
    return { messages: [new Cls({ id, content: textFor(SEEDS.loop + i, LOOP.chars) })] };
  };
  const route = (next) => (state) => (state.messages.length >= steps + 1 ? END : next);
  return new StateGraph(MessagesAnnotation)
    .addNode("agent", mk(AIMessage))
    .addNode("tool", mk(HumanMessage))
    .addEdge(START, "agent")
    .addConditionalEdges("agent", route("tool"), ["tool", END])
    .addConditionalEdges("tool", route("agent"), ["agent", END])
    .compile({ checkpointer: saver });
}

const loopInput = () => ({
  messages: [new HumanMessage({ id: "m-00000", content: textFor(SEEDS.loop + 0, LOOP.chars) })],
});

{
  const w = await saverOn("loop_warmup");
  await buildLoopGraph(w.saver, LOOP.warmupSteps, []).invoke(loopInput(), {
    configurable: { thread_id: "warmup" },
    recursionLimit: 100000,
  });
  await w.pool.end();
}
const { pool, saver } = await saverOn("loop");
const entry = [];
const app = buildLoopGraph(saver, LOOP.steps, entry);
const t0 = performance.now();
const out = await app.invoke(loopInput(), {
  configurable: { thread_id: "loop-1" },
  recursionLimit: 100000,
});
const wall = (performance.now() - t0) / 1000;
if (out.messages.length !== LOOP.steps + 1) throw new Error("loop: wrong message count");
const W = LOOP.window;
const first = entry[W] - entry[0];
const last = entry[LOOP.steps - 1] - entry[LOOP.steps - 1 - W];
await settle();
console.log(
  JSON.stringify({
    unit: "loop:postgres",
    implementation: "langgraphjs",
    saver: SAVER,
    durability: "async (library default)",
    supersteps: LOOP.steps,
    seconds: +wall.toFixed(3),
    supersteps_per_s: +(LOOP.steps / wall).toFixed(1),
    first_100_steps_ms: +first.toFixed(1),
    last_100_steps_ms: +last.toFixed(1),
    last_over_first: +(last / first).toFixed(2),
    storage: await bytesOf(pool, "loop"),
  }),
);
await pool.end();
