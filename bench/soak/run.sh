#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The soak (issue 18, not CI): THREADS conversation threads driven through `stategraph serve` by
# CLIENTS concurrent clients for SECONDS, on RocksDB (one process) or on a throwaway PostgreSQL 15
# (PROCESSES server processes sharing the database); every thread's final state is checked
# against the same inputs replayed one by one on a fresh in-memory server; the servers' RSS and
# open file descriptors are sampled every 2 s (soak.mjs). Prints soak.mjs's JSON report.
#   bench/soak/run.sh [--db rocksdb|postgres] [--processes N] [--threads 200] [--clients 16]
#                     [--seconds 60] [--turns N] [--cli PATH]
# --turns N: a thread is checked, deleted and replaced by a fresh one after N runs (0: never),
# so that what the server holds stays the same size and its memory must stay flat.
#   e.g. bench/soak/run.sh; bench/soak/run.sh --db postgres --processes 3
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cli="$root/build/cli/stategraph"
db=rocksdb
processes=1
threads=200
clients=16
seconds=60
turns=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --db) db="$2"; shift 2 ;;
    --processes) processes="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --turns) turns="$2"; shift 2 ;;
    --cli) cli="$2"; shift 2 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -x "$cli" ]] || { echo "run.sh: no $cli (build first, or give --cli PATH)" >&2; exit 1; }
command -v node >/dev/null || { echo "run.sh: node is missing (scripts/install-deps)" >&2; exit 1; }

source "$root/scripts/lib/throwaway-postgres.sh"
source "$root/scripts/lib/serve-url.sh"
work="$(mktemp -d /tmp/sg-soak-XXXXXX)"
servers=()
cleanup() {
  for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${servers[@]}"; do wait "$pid" 2>/dev/null || true; done
  pg_throwaway_stop
  rm -rf "$work"
}
trap cleanup EXIT

if [[ "$db" == postgres ]]; then
  pg_throwaway_start "$work" 54342 -c max_connections=200
  "${pg_as[@]}" "$pg_bin/createdb" -h "$work" -p 54342 -U postgres soak
  store="postgresql:///soak?host=$work&port=54342&user=postgres"
else
  store="$work/db"
  processes=1  # a RocksDB directory belongs to one process
fi
urls=()
for i in $(seq 1 "$processes"); do
  "$cli" serve --port 0 --db "$store" >"$work/out$i" 2>"$work/err$i" &
  servers+=($!)
done
for i in $(seq 1 "$processes"); do
  urls+=("$(serve_url "$work/out$i" "${servers[$((i - 1))]}")")
done
"$cli" serve --port 0 --in-memory >"$work/out-ref" 2>"$work/err-ref" &
reference_pid=$!
servers+=("$reference_pid")
reference="$(serve_url "$work/out-ref" "$reference_pid")"
pids="$(IFS=,; echo "${servers[*]:0:$processes}")"
echo "run.sh: $threads threads, $clients clients, ${seconds}s, $db, $processes process(es)" >&2
node "$root/bench/soak/soak.mjs" "$(IFS=,; echo "${urls[*]}")" "$reference" "$pids" \
  "$threads" "$clients" "$seconds" "$turns"
