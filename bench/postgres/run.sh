#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# stategraph's PostgresSaver against LangGraph.js's PostgresSaver
# (@langchain/langgraph-checkpoint-postgres) on the same throwaway PostgreSQL 15 cluster, one
# after the other: WORKLOADS.md's loop (1,000 supersteps) and summarize_trim (500 turns), with
# durability async as LangGraph's default (stategraph's loop also with sync), then the bytes
# each saver's tables hold. Prints the JSON lines, then a table (report.mjs).
#   bench/postgres/run.sh [--bench PATH/TO/stategraph-bench] [--out FILE]
# Needs node and npm (npm ci installs the JS side from the lockfile) and postgresql-15.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bench="$root/build-bench/bench/stategraph-bench"
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bench) bench="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -x "$bench" ]] || { echo "run.sh: no $bench (make bench builds it)" >&2; exit 1; }
source "$root/scripts/lib/npm-ci.sh"
npm_ci_once "$here"

source "$root/scripts/lib/throwaway-postgres.sh"
work="$(mktemp -d /tmp/sg-bench-pg-XXXXXX)"
cleanup() {
  pg_throwaway_stop
  rm -rf "$work"
}
trap cleanup EXIT
# A durable server this time (fsync on, as in production), on a unix socket of its own.
pg_throwaway_start "$work" 54330
"${pg_as[@]}" "$pg_bin/createdb" -h "$work" -p 54330 -U postgres bench

results="$work/results.jsonl"
echo "run.sh: LangGraph.js loop on its PostgresSaver" >&2
node "$here/loop.mjs" "$work" 54330 bench >>"$results"
echo "run.sh: LangGraph.js summarize_trim on its PostgresSaver" >&2
node "$here/summarize.mjs" "$work" 54330 bench >>"$results"
for unit in loop:postgres loop:postgres_exclusive loop:postgres_sync summarize_trim:postgres \
  summarize_trim:postgres_exclusive; do
  echo "run.sh: stategraph $unit" >&2
  SG_BENCH_POSTGRES="host=$work port=54330 user=postgres dbname=bench" "$bench" "$unit" --json \
    | tail -1 >>"$results"
done
[[ -n "$out" ]] && cp "$results" "$out"
cat "$results"
node "$here/report.mjs" "$results"
