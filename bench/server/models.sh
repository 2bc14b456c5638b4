#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The model-wait benchmark: `stategraph serve` running graphs whose model answers slowly (the
# loopback OpenAI-compatible server sg-loopback-openai, answering after --delay-ms), side by side
# with the official LangGraph.js dev server on its echo graph with input "sleep:<delay>", in one
# run. For each storage and graph: client.mjs's wait scenario at each concurrency (every
# virtual client on a thread of its own, one runs.wait at a time), then model_streams (--streams
# runs.stream at once: time to the first token and to the end). Reports runs/s, p50/p99, errors,
# the model requests in flight at most (counted by the model server) and the servers' RSS.
#
#   bench/server/models.sh [--quick] [--delay-ms MS] [--concurrency 1,64,512,2000]
#       [--duration S] [--warmup S] [--streams N] [--graphs summarize_and_trim,react_agent]
#       [--storage rocksdb,postgres,postgres3] [--scenarios wait,streams]
#       [--only stategraph|reference]
#       [--stategraph PATH] [--loopback PATH] [--serve-args "ARGS"] [--out FILE]
#
# --quick       a smoke run: 64 and 512 clients, 3 s windows, 200 streams, rocksdb only
# --scenarios   wait (the concurrency levels), streams (model_streams); default both. The
#               10,000 runs on a 10 s model: --delay-ms 10000 --scenarios streams --streams 10000
# --storage     rocksdb: one process on RocksDB; postgres: one process on a throwaway PostgreSQL
#               15; postgres3: three processes on one database, the clients spread over them
# --stategraph  the binary (default build/cli/stategraph); --loopback: the model server
#               (default build/tests/support/sg-loopback-openai); both are copied first
# --serve-args  more options for every `stategraph serve` (e.g. "--max-runs 512")
# --out FILE    also write the JSON lines there
#
# Every (storage, graph) pair gets fresh server processes, so every memory figure starts from a
# fresh server. react_agent's model first calls the multiply tool, then answers: two model calls
# per run. Nothing is left running: an EXIT/INT/TERM trap stops every process it started.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

quick=0
delay_ms=1000
concurrency=1,64,512,2000
duration=10
warmup=3
streams=2000
scenarios=wait,streams
graphs=summarize_and_trim,react_agent
storage=rocksdb,postgres,postgres3
only=""
sg_src="$root/build/cli/stategraph"
loopback_src="$root/build/tests/support/sg-loopback-openai"
serve_args=""
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --delay-ms) delay_ms="$2"; shift 2 ;;
    --concurrency) concurrency="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --streams) streams="$2"; shift 2 ;;
    --scenarios) scenarios="$2"; shift 2 ;;
    --graphs) graphs="$2"; shift 2 ;;
    --storage) storage="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --stategraph) sg_src="$2"; shift 2 ;;
    --loopback) loopback_src="$2"; shift 2 ;;
    --serve-args) serve_args="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "models.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [[ $quick -eq 1 ]]; then
  concurrency=64,512
  duration=3
  warmup=2
  streams=200
  storage=rocksdb
fi
case "$only" in ""|stategraph|reference) ;; *) echo "models.sh: --only stategraph|reference" >&2; exit 2 ;; esac

# Thousands of connections: the client, the servers and the model server each hold one per run.
ulimit -n "$(ulimit -Hn)"
source "$root/scripts/lib/npm-ci.sh"
source "$root/scripts/lib/throwaway-postgres.sh"
source "$root/scripts/lib/serve-url.sh"
npm_ci_once "$here"

work="$(mktemp -d /tmp/sg-bench-models-XXXXXX)"
source "$here/lib.sh"
sg_pids=()
model_pid=""
client_pid=""
stop_stategraph() {
  local pid
  for pid in "${sg_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${sg_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  sg_pids=()
}
cleanup() {
  trap - EXIT INT TERM
  [[ -n "$client_pid" ]] && kill -TERM "$client_pid" 2>/dev/null
  stop_stategraph
  stop_server
  [[ -n "$model_pid" ]] && kill -TERM "$model_pid" 2>/dev/null && wait "$model_pid" 2>/dev/null
  pg_throwaway_stop
  rm -rf "$work"
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

sg_bin="$work/stategraph"
loopback_bin="$work/sg-loopback-openai"
if [[ "$only" != "reference" ]]; then
  for pair in "$sg_src:$sg_bin" "$loopback_src:$loopback_bin"; do
    if [[ ! -x "${pair%%:*}" ]]; then
      echo "models.sh: no binary at ${pair%%:*} (make build, or pass --stategraph/--loopback)" >&2
      exit 1
    fi
    cp "${pair%%:*}" "${pair##*:}"
  done
  "$loopback_bin" --delay-ms "$delay_ms" --call-tool multiply --tool-args '{"a":6,"b":7}' \
    >"$work/model.out" 2>"$work/model.err" &
  model_pid=$!
  model_url=""
  for _ in $(seq 100); do
    model_url="$(grep -o 'http://127\.0\.0\.1:[0-9]*/v1' "$work/model.out" || true)"
    [[ -n "$model_url" ]] && break
    sleep 0.05
  done
  [[ -n "$model_url" ]] || { echo "models.sh: the loopback model did not start" >&2; exit 1; }
  if [[ ",$storage," == *",postgres"* ]]; then
    pg_throwaway_start "$work" 54351 -c max_connections=400 -c fsync=off || exit 1
  fi
fi

# Starts `stategraph serve` processes on a fresh database for STORAGE; sets urls and pids.
db_count=0
start_stategraph_on() {
  local kind="$1" n=1 db i u
  db_count=$((db_count + 1))
  case "$kind" in
    rocksdb) db="$work/rocksdb-$db_count" ;;
    postgres|postgres3)
      "${pg_as[@]}" "$pg_bin/createdb" -h "$work" -p 54351 -U postgres "bench$db_count" || return 1
      db="postgresql:///bench$db_count?host=$work&port=54351&user=postgres"
      [[ "$kind" == postgres3 ]] && n=3
      ;;
    *) echo "models.sh: unknown storage $kind" >&2; return 1 ;;
  esac
  urls=()
  for ((i = 0; i < n; i++)); do
    # shellcheck disable=SC2086  # --serve-args is split into options on purpose
    OPENAI_BASE_URL="$model_url" OPENAI_API_KEY=bench "$sg_bin" serve --port 0 --db "$db" \
      $serve_args >"$work/serve$i.out" 2>"$work/serve$i.err" &
    sg_pids+=($!)
    u="$(serve_url "$work/serve$i.out" "${sg_pids[-1]}")" || return 1
    urls+=("$u")
  done
}

results="$work/results.jsonl"
: >"$results"
# Runs client.mjs against URLS (comma-separated) with PIDS; appends its JSON lines, each with
# the server, storage and graph, to the results.
run_client() {
  local server="$1" store="$2" graph="$3" urls_csv="$4" pids_csv="$5"
  shift 5
  local status=0
  node "$here/client.mjs" "$urls_csv" --pid "$pids_csv" --label "$server/$store/$graph" \
    --assistant "$graph" "$@" >"$work/client.jsonl" &
  client_pid=$!
  wait "$client_pid" || status=$?
  client_pid=""
  [[ $status -ne 0 ]] && echo "{\"scenario\":\"client_failed\",\"exit\":$status}" >>"$work/client.jsonl"
  node -e '
    const [server, storage, graph, delay] = process.argv.slice(1);
    for (const line of require("fs").readFileSync(0, "utf8").split("\n").filter(Boolean)) {
      console.log(JSON.stringify({ server, storage, graph, model_delay_ms: Number(delay), ...JSON.parse(line) }));
    }' "$server" "$store" "$graph" "$delay_ms" <"$work/client.jsonl" | tee -a "$results"
}

wait_args=(--scenarios wait --concurrency "$concurrency" --duration "$duration" --warmup "$warmup"
           --turns-per-thread 0)
stream_args=(--scenarios model_streams --streams "$streams")
if [[ "$only" != "reference" ]]; then
  for store in ${storage//,/ }; do
    for graph in ${graphs//,/ }; do
      echo "models.sh: stategraph on $store, $graph" >&2
      if ! start_stategraph_on "$store"; then
        echo "{\"server\":\"stategraph\",\"storage\":\"$store\",\"graph\":\"$graph\",\"scenario\":\"start_failed\"}" | tee -a "$results"
        stop_stategraph
        continue
      fi
      urls_csv="$(IFS=,; echo "${urls[*]}")"
      pids_csv="$(IFS=,; echo "${sg_pids[*]}")"
      if [[ ",$scenarios," == *",wait,"* ]]; then
        run_client stategraph "$store" "$graph" "$urls_csv" "$pids_csv" "${wait_args[@]}" \
          --model-stats "$model_url"
      fi
      if [[ ",$scenarios," == *",streams,"* ]]; then
        run_client stategraph "$store" "$graph" "$urls_csv" "$pids_csv" "${stream_args[@]}" \
          --model-stats "$model_url"
      fi
      stop_stategraph
    done
  done
fi
if [[ "$only" != "stategraph" ]]; then
  echo "models.sh: the official dev server, echo graph with sleep:$delay_ms" >&2
  for args in ${scenarios//,/ }; do
    if ! start_reference; then
      echo '{"server":"reference","scenario":"start_failed"}' | tee -a "$results"
      break
    fi
    if [[ "$args" == wait ]]; then
      run_client reference memory agent "$url" "$measured_pid" "${wait_args[@]}" \
        --input "sleep:$delay_ms" --pgid "$server_pgid"
    else
      run_client reference memory agent "$url" "$measured_pid" "${stream_args[@]}" \
        --input "sleep:$delay_ms" --pgid "$server_pgid"
    fi
    stop_server
  done
fi
[[ -n "$out" ]] && cp "$results" "$out"
node "$here/report.mjs" models "$results"
