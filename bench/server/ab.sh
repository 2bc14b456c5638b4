#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A/B of stategraph binaries on the echo graph without delay (the CPU-bound case): each binary's
# `stategraph serve --in-memory` in turn, ROUNDS times, each measured by client.mjs's wait
# scenario at 1, 16 and 256 clients; one line per binary and round (runs/s and the server's CPU
# per run). Rounds on a 2-core machine vary widely: compare medians.
#
#   bench/server/ab.sh ROUNDS LABEL=BINARY[:SERVE ARGS] ...
#   bench/server/ab.sh 3 old=/tmp/sg-old:"--workers 2" new=build/cli/stategraph
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../../scripts/lib/npm-ci.sh"
source "$here/lib.sh"
work="$(mktemp -d)"
trap 'stop_server; rm -rf "$work"' EXIT INT TERM
npm_ci_once "$here"

rounds="$1"
shift
measure() {
  local label="$1" bin="$2" args="$3" port
  port="$(free_port)"
  # shellcheck disable=SC2086  # the serve args split into words
  "$bin" serve --port "$port" --in-memory $args >"$work/server.out" 2>"$work/server.err" &
  server_pid=$!
  url="http://127.0.0.1:$port"
  for _ in $(seq 100); do
    grep -q "$url" "$work/server.out" 2>/dev/null && break
    sleep 0.1
  done
  node "$here/client.mjs" "$url" --pid "$server_pid" --scenarios wait --concurrency 1,16,256 \
    --duration 6 --warmup 2 --label "$label" 2>/dev/null |
    node -e 'const r = JSON.parse(require("fs").readFileSync(0, "utf8"));
      console.log(process.argv[1], r.levels.map((l) =>
        `c${l.concurrency}=${l.runs_per_s} (server ${l.cpu.server_ms_per_run} ms/run)`).join("  "))' "$label"
  stop_server
}
for _ in $(seq "$rounds"); do
  for spec in "$@"; do
    label="${spec%%=*}"
    rest="${spec#*=}"
    bin="${rest%%:*}"
    args=""
    [[ "$rest" == *:* ]] && args="${rest#*:}"
    measure "$label" "$bin" "$args"
  done
done
