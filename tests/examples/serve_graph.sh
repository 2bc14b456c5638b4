#!/bin/sh
# Runs examples/serve_graph on a free port, drives it over HTTP (a thread, a run, the thread's
# state), stops it with SIGTERM, restarts it on the same directory and checks the thread is
# still there.
set -eu
prog=$1
dir=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$dir/out" ] && cat "$dir/out" >&2; exit 1; }
start() {
  "$prog" "$dir/data" 0 > "$dir/out" 2>&1 &
  pid=$!
  for _ in $(seq 1 200); do
    url=$(sed -n 's/^serving graph .agent. on \(http:.*\)$/\1/p' "$dir/out")
    [ -n "$url" ] && return 0
    sleep 0.05
  done
  fail "the server did not start"
}
stop() {
  kill -TERM "$pid"
  wait "$pid" || fail "exit status $?"
  pid=
  grep -qx stopped "$dir/out" || fail "no 'stopped' line"
}
start
thread=$(curl -sf -X POST "$url/threads" -d '{}' | sed -n 's/.*"thread_id":"\([^"]*\)".*/\1/p')
[ -n "$thread" ] || fail "no thread id"
reply=$(curl -sf -X POST "$url/threads/$thread/runs/wait" \
  -d '{"assistant_id":"agent","input":{"messages":[{"role":"user","content":"hello"}]}}')
echo "$reply" | grep -q '"content":"echo: hello"' || fail "no echo in: $reply"
stop
start
state=$(curl -sf "$url/threads/$thread/state")
echo "$state" | grep -q '"content":"echo: hello"' || fail "the thread did not survive: $state"
stop
echo "serve_graph: ok"
