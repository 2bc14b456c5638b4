// SPDX-License-Identifier: MIT
// What loop.mjs and summarize.mjs share: the anchor's deterministic text (WORKLOADS.md:
// xorshift32 over a 32-word vocabulary, so both implementations append the same bytes), a
// LangGraph.js PostgresSaver on its own schema, and the bytes its tables hold.
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import pg from "pg";

const VOCAB = [
  "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
  "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa",
  "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey", "xray",
  "yankee", "zulu", "graph", "node", "edge", "state", "reducer", "channel",
];
export const SEEDS = { loop: 0x10000000, summarize: 0x20000000 };

export function textFor(seed, n) {
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

export const SAVER = "@langchain/langgraph-checkpoint-postgres 1.0.5";

/// argv: SOCKET_DIR PORT DATABASE.
export function target() {
  const [host, port, database] = process.argv.slice(2);
  return { host, port: Number(port), user: "postgres", database };
}

export async function saverOn(schema) {
  const pool = new pg.Pool({ ...target(), max: 4 });
  const saver = new PostgresSaver(pool, undefined, { schema });
  await saver.setup();
  return { pool, saver };
}

export async function bytesOf(pool, schema) {
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

/// Lets "async" durability's last checkpoints land before the storage is read.
export const settle = () => new Promise((r) => setTimeout(r, 500));
