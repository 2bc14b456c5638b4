#!/usr/bin/env bash
# Scale-out: runs/s of the echo graph (runs/wait, one thread per virtual client) with 1, 2 and 3
# `stategraph serve` processes on one PostgreSQL 15 database (a throwaway, durable cluster);
# clients are spread over the processes. Each process count gets a fresh database. Prints one
# JSON line per count (load.mjs), with the CPU seconds of the servers and of Postgres in the
# measured window.
#   bench/scaleout/run.sh [--cli PATH/TO/stategraph] [--concurrency 64] [--duration 10]
#                         [--processes "1 2 3"] [--workers 8] [--out FILE]
# Needs node (18+) and postgresql-15.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cli="$root/build/cli/stategraph"  # RelWithDebInfo (-O2), as bench/server/run.sh
concurrency=64
duration=10
processes="1 2 3"
workers=8
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --cli) cli="$2"; shift 2 ;;
    --concurrency) concurrency="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --processes) processes="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -x "$cli" ]] || { echo "run.sh: no $cli (give --cli PATH)" >&2; exit 1; }

pgbin=/usr/lib/postgresql/15/bin
work="$(mktemp -d /tmp/sg-scaleout-XXXXXX)"
pg_pid=""
servers=()
stop_servers() {
  for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${servers[@]}"; do wait "$pid" 2>/dev/null || true; done
  servers=()
}
cleanup() {
  stop_servers
  if [[ -n "$pg_pid" ]]; then
    kill -INT "$pg_pid" 2>/dev/null || true
    # (a zombie counts as gone: whatever reaps orphans here may take its time)
    while kill -0 "$pg_pid" 2>/dev/null && [[ "$(ps -o stat= -p "$pg_pid")" != Z* ]]; do sleep 0.1; done
  fi
  rm -rf "$work"
}
trap cleanup EXIT
as_pg=()
if [[ $(id -u) -eq 0 ]]; then
  chown postgres:postgres "$work"
  as_pg=(runuser -u postgres --)
fi
"${as_pg[@]}" "$pgbin/initdb" -D "$work/pg" -U postgres -A trust -E UTF8 --locale=C.UTF-8 \
  >"$work/initdb.log" 2>&1 || { cat "$work/initdb.log" >&2; exit 1; }
"${as_pg[@]}" "$pgbin/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w -t 30 -s \
  -o "-c listen_addresses='' -p 54332 -k $work -c max_connections=200" start
pg_pid="$(head -1 "$work/pg/postmaster.pid")"

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
  "${as_pg[@]}" "$pgbin/createdb" -h "$work" -p 54332 -U postgres "$db"
  url="postgresql:///$db?host=$work&port=54332&user=postgres"
  urls=()
  for i in $(seq 1 "$n"); do
    "$cli" serve --port 0 --db "$url" --workers "$workers" >"$work/out$i" 2>"$work/err$i" &
    servers+=($!)
  done
  for i in $(seq 1 "$n"); do
    u=""
    for _ in $(seq 1 300); do
      u="$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$work/out$i" || true)"
      [[ -n "$u" ]] && break
      sleep 0.1
    done
    [[ -n "$u" ]] || { echo "run.sh: server $i did not start:" >&2; cat "$work/err$i" >&2; exit 1; }
    urls+=("$u")
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
    r.workers_per_process = Number(process.argv[4]);
    console.log(JSON.stringify(r));
  ' "$work/load.json" "$(awk -v a="$s1" -v b="$s0" 'BEGIN{print a - b}')" \
    "$(awk -v a="$p1" -v b="$p0" 'BEGIN{print a - b}')" "$workers" | tee -a "$results"
  stop_servers
done
[[ -n "$out" ]] && cp "$results" "$out"
true
