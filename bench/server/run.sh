#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The server benchmark: `stategraph serve` against the official LangGraph.js dev server
# (reference/start.sh), both serving the echo graph `agent` in memory, driven by the same
# client (client.mjs). Prints one JSON object per server (one line each), then a table of
# stategraph / reference ratios.
#
#   bench/server/run.sh [--quick] [--only stategraph|reference] [--stategraph PATH]
#                       [--serve-args "ARGS"] [--client http|sdk] [--turns-per-thread N]
#                       [--reference-log-level LEVEL] [--out FILE]
#
# --quick           a smoke run: 2 s per concurrency, 20 streams, 1,000 threads, 100 open streams
# --stategraph PATH the binary (default build/cli/stategraph); it is copied first, so a rebuild
#                   during the run changes nothing
# --serve-args ARGS more options for `stategraph serve` (e.g. "--max-runs 64")
# --client          client.mjs's client: http (undici, default) or sdk (@langchain/langgraph-sdk)
# --turns-per-thread N  runs.wait turns before a virtual client moves to a fresh thread
#                   (default 20; 0 = one thread per client for the whole run, see README.md)
# --reference-log-level LEVEL  LOG_LEVEL for the dev server (default: unset, i.e. its own
#                   default, debug, which logs every request; warn made no measurable difference)
# --out FILE        also write the JSON objects there
#
# Every server gets a fresh process per scenario group (wait + first_event, idle_threads,
# open_streams), so that each memory figure starts from a fresh server. Nothing is left
# running: an EXIT/INT/TERM trap stops whatever server is up.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

quick=0
only=""
sg_src="$root/build/cli/stategraph"
serve_args=""
client_kind="http"
turns=20
ref_log_level=""
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --only) only="$2"; shift 2 ;;
    --stategraph) sg_src="$2"; shift 2 ;;
    --serve-args) serve_args="$2"; shift 2 ;;
    --client) client_kind="$2"; shift 2 ;;
    --turns-per-thread) turns="$2"; shift 2 ;;
    --reference-log-level) ref_log_level="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$only" in ""|stategraph|reference) ;; *) echo "run.sh: --only stategraph|reference" >&2; exit 2 ;; esac

if [[ $quick -eq 1 ]]; then
  wait_args=(--duration 2 --warmup 0.5 --concurrency 1,16,256)
  first_args=(--first-events 20)
  idle_args=(--idle-threads 1000)
  open_args=(--streams 100 --stream-timeout 10)
else
  wait_args=(--duration 10 --warmup 2 --concurrency 1,16,256)
  first_args=(--first-events 200)
  idle_args=(--idle-threads 10000)
  open_args=(--streams 1000 --stream-timeout 60)
fi
common_args=(--client "$client_kind" --turns-per-thread "$turns")

# The client's pinned packages.
source "$root/scripts/lib/npm-ci.sh"
npm_ci_once "$here"

work="$(mktemp -d /tmp/sg-bench-server-XXXXXX)"
source "$here/lib.sh"
client_pid=""
cleanup() {
  trap - EXIT INT TERM
  if [[ -n "$client_pid" ]]; then
    kill -TERM "$client_pid" 2>/dev/null || true
    wait "$client_pid" 2>/dev/null || true
  fi
  stop_server
  rm -rf "$work"
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

# The binary under test, copied so that a rebuild during the run does not swap it.
sg_bin="$work/stategraph"
if [[ "$only" != "reference" ]]; then
  if [[ ! -x "$sg_src" ]]; then
    echo "run.sh: no stategraph binary at $sg_src (build it, or pass --stategraph PATH)" >&2
    exit 1
  fi
  cp "$sg_src" "$sg_bin"
fi

# Starts a server; sets url, server_pid, measured_pid (the process whose memory is reported)
# and server_pgid (reference only).
start_stategraph() {
  # shellcheck disable=SC2086  # --serve-args is split into options on purpose
  "$sg_bin" serve --port 0 --in-memory $serve_args >"$work/server.out" 2>"$work/server.err" &
  server_pid=$!
  measured_pid=$server_pid
  url=""
  for _ in $(seq 300); do
    url="$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$work/server.out" 2>/dev/null || true)"
    [[ -n "$url" ]] && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "run.sh: stategraph serve did not start:" >&2
  cat "$work/server.out" "$work/server.err" >&2
  return 1
}

# Runs client.mjs scenarios against a fresh server; appends the JSON lines to $2.
run_group() {
  local name="$1" file="$2"
  shift 2
  if ! "start_$name"; then
    echo "{\"scenario\":\"start_failed\",\"server\":\"$name\"}" >>"$file"
    stop_server
    return 1
  fi
  echo "run.sh: $name at $url (pid $measured_pid): $*" >&2
  local pgid_args=()
  [[ -n "$server_pgid" ]] && pgid_args=(--pgid "$server_pgid")
  local status=0
  # In the background, so that a signal to this script is handled at once (bash runs traps
  # only between foreground commands, but interrupts `wait`).
  node "$here/client.mjs" "$url" --pid "$measured_pid" "${pgid_args[@]}" --label "$name" \
    "${common_args[@]}" "$@" >>"$file" &
  client_pid=$!
  wait "$client_pid" || status=$?
  client_pid=""
  if ! kill -0 "$measured_pid" 2>/dev/null; then
    echo "run.sh: the $name server process exited during the run" >&2
    echo "{\"scenario\":\"server_exited\",\"server\":\"$name\",\"during\":\"$*\",\"stderr_tail\":$(tail -c 2000 "$work/server.err" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.stringify(s)))')}" >>"$file"
  fi
  if [[ $status -ne 0 ]]; then
    echo "{\"scenario\":\"client_failed\",\"server\":\"$name\",\"during\":\"$*\",\"exit\":$status}" >>"$file"
  fi
  stop_server
}

servers=(stategraph reference)
[[ -n "$only" ]] && servers=("$only")
results="$work/results.jsonl"
: >"$results"
for name in "${servers[@]}"; do
  file="$work/$name.jsonl"
  : >"$file"
  run_group "$name" "$file" --scenarios wait,first_event "${wait_args[@]}" "${first_args[@]}"
  run_group "$name" "$file" --scenarios idle_threads "${idle_args[@]}"
  run_group "$name" "$file" --scenarios open_streams "${open_args[@]}"
  info=(--server "$name" --quick "$quick" --client "$client_kind" --turns "$turns")
  if [[ "$name" == stategraph ]]; then
    info+=(--command "stategraph serve --port 0 --in-memory${serve_args:+ $serve_args}" --binary "$sg_src")
  else
    info+=(--command "${ref_log_level:+LOG_LEVEL=$ref_log_level }bench/server/reference/start.sh PORT")
  fi
  node "$here/report.mjs" combine "$file" "${info[@]}" >>"$results"
done
cat "$results"
[[ -n "$out" ]] && cp "$results" "$out"
node "$here/report.mjs" table "$results"
