#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Scale-out: runs/s of the echo graph (runs/wait, one thread per virtual client) with 1, 2 and 3
# `stategraph serve` processes on one PostgreSQL 15 database (a throwaway, durable cluster);
# clients are spread over the processes. Each process count gets a fresh database. Prints one
# JSON line per count (load.mjs), with the CPU seconds of the servers and of Postgres in the
# measured window.
#   bench/scaleout/run.sh [--cli PATH/TO/stategraph] [--concurrency 64] [--duration 10]
#                         [--processes "1 2 3"] [--max-runs N] [--out FILE]
# Needs node (18+) and postgresql-15.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cli="$root/build/cli/stategraph"  # RelWithDebInfo (-O2), as bench/server/run.sh
concurrency=64
duration=10
processes="1 2 3"
max_runs=10000
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --cli) cli="$2"; shift 2 ;;
    --concurrency) concurrency="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --processes) processes="$2"; shift 2 ;;
    --max-runs) max_runs="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -x "$cli" ]] || { echo "run.sh: no $cli (give --cli PATH)" >&2; exit 1; }

source "$root/scripts/lib/throwaway-postgres.sh"
source "$root/scripts/lib/serve-url.sh"
work="$(mktemp -d /tmp/sg-scaleout-XXXXXX)"
servers=()
stop_servers() {  # SIGTERM, then SIGKILL after 10 s
  for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${servers[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  servers=()
}
cleanup() {
  stop_servers
  pg_throwaway_stop
  rm -rf "$work"
}
trap cleanup EXIT
# Durable (fsync on, as in production).
pg_throwaway_start "$work" 54332 -c max_connections=200
# CPU seconds (user + system) of a process and its threads.
cpu_of() { awk -v t="$(getconf CLK_TCK)" '{print ($14 + $15) / t}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# CPU seconds of every postgres process (the cluster's server backends included).
pg_cpu() {
  local total=0
  for pid in $(pgrep -x postgres); do total=$(awk -v a="$total" -v b="$(cpu_of "$pid")" 'BEGIN{print a + b}'); done
  echo "$total"
}

results="$work/results.jsonl"
for n in $processes; do
  db="scale$n"
  "${pg_as[@]}" "$pg_bin/createdb" -h "$work" -p 54332 -U postgres "$db"
  url="postgresql:///$db?host=$work&port=54332&user=postgres"
  urls=()
  for i in $(seq 1 "$n"); do
    "$cli" serve --port 0 --db "$url" --max-runs "$max_runs" >"$work/out$i" 2>"$work/err$i" &
    servers+=($!)
  done
  for i in $(seq 1 "$n"); do
    urls+=("$(serve_url "$work/out$i" "${servers[$((i - 1))]}")")
  done
  joined="$(IFS=,; echo "${urls[*]}")"
  echo "run.sh: $n server process(es), $concurrency clients, ${duration}s" >&2
  node "$here/load.mjs" "$joined" --concurrency "$concurrency" --duration "$duration" --warmup 2 \
    >"$work/load.json" &
  load=$!
  sleep 2  # the warmup
  s0=0; for pid in "${servers[@]}"; do s0=$(awk -v a="$s0" -v b="$(cpu_of "$pid")" 'BEGIN{print a + b}'); done
  p0="$(pg_cpu)"
  sleep "$duration"
  s1=0; for pid in "${servers[@]}"; do s1=$(awk -v a="$s1" -v b="$(cpu_of "$pid")" 'BEGIN{print a + b}'); done
  p1="$(pg_cpu)"
  wait "$load"
  node -e '
    const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const [s, p] = [Number(process.argv[2]), Number(process.argv[3])];
    r.server_cpu_s = Math.round(s * 100) / 100;
    r.postgres_cpu_s = Math.round(p * 100) / 100;
    r.server_cpu_ms_per_run = r.runs ? Math.round((s / r.runs) * 1e5) / 100 : null;
    r.postgres_cpu_ms_per_run = r.runs ? Math.round((p / r.runs) * 1e5) / 100 : null;
    r.max_runs_per_process = Number(process.argv[4]);
    console.log(JSON.stringify(r));
  ' "$work/load.json" "$(awk -v a="$s1" -v b="$s0" 'BEGIN{print a - b}')" \
    "$(awk -v a="$p1" -v b="$p0" 'BEGIN{print a - b}')" "$max_runs" | tee -a "$results"
  stop_servers
done
[[ -n "$out" ]] && cp "$results" "$out"
true
