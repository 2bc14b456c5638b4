// WORKLOADS.md's loop (b) on LangGraph.js's own PostgresSaver
// (@langchain/langgraph-checkpoint-postgres): 1,000 supersteps alternating two nodes that each
// append a 200-character message, durability "async" (LangGraph's default), then the bytes its
// tables hold. The graph and the data are the anchor's (shared/anchors/langgraphjs/bench.mjs,
// workload.mjs). Prints one JSON line.
//   node loop.mjs SOCKET_DIR PORT DATABASE
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import pg from "pg";

// The anchor's deterministic text (WORKLOADS.md: xorshift32 over a 32-word vocabulary), so that
// both sides append the same bytes.
const VOCAB = [
  "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
  "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa",
  "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey", "xray",
  "yankee", "zulu", "graph", "node", "edge", "state", "reducer", "channel",
];
const SEEDS = { loop: 0x10000000 };
function textFor(seed, n) {
  let x = seed >>> 0 || 0x9e3779b9;
  let s = "";
  while (s.length < n) {
    x = (x ^ (x << 13)) >>> 0;
    x = (x ^ (x >>> 17)) >>> 0;
    x = (x ^ (x << 5)) >>> 0;
    const w = VOCAB[x % VOCAB.length];
    s = s.length === 0 ? w : s + " " + w;
  }
  return s.slice(0, n);
}

const [host, port, database] = process.argv.slice(2);
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

async function saverOn(schema) {
  const pool = new pg.Pool({ host, port: Number(port), user: "postgres", database, max: 4 });
  const saver = new PostgresSaver(pool, undefined, { schema });
  await saver.setup();
  return { pool, saver };
}

async function bytesOf(pool, schema) {
  const r = await pool.query(
    `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS bytes,
            coalesce(sum(pg_relation_size(c.oid)), 0)::bigint AS heap
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind = 'r'`,
    [schema],
  );
  const rows = {};
  for (const t of ["checkpoints", "checkpoint_blobs", "checkpoint_writes"]) {
    rows[t] = Number((await pool.query(`SELECT count(*) FROM "${schema}".${t}`)).rows[0].count);
  }
  return { total_bytes: Number(r.rows[0].bytes), heap_bytes: Number(r.rows[0].heap), rows };
}

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
// "async" durability: the last checkpoints may still be in flight; storage is read after them.
await new Promise((r) => setTimeout(r, 500));
console.log(
  JSON.stringify({
    unit: "loop:postgres",
    implementation: "langgraphjs",
    saver: "@langchain/langgraph-checkpoint-postgres 1.0.5",
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
