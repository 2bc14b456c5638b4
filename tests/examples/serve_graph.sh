#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs examples/serve_graph (sg::serve_main) on a free port, drives it over HTTP (a thread, a
# run, the thread's state), stops it with SIGTERM, restarts it on the same directory and checks
# the thread is still there. Then its command line: --graph, --help and a bad option. With the loopback model (sg-loopback-openai, the second argument) as its
# OpenAI-compatible server, the "chat" graph's coroutine node answers a run too.
set -eu
prog=$1
model=$2
dir=$(mktemp -d)
pid=
model_pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null
  [ -n "$model_pid" ] && kill "$model_pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$dir/out" ] && cat "$dir/out" >&2; exit 1; }
. "$(dirname "$0")/loopback.sh"
start() {
  "$prog" --db "$dir/data" --port 0 "$@" > "$dir/out" 2>&1 &
  pid=$!
  wait_for_url "$dir/out" 's/^serve_graph: \(http:[^ ]*\) .*$/\1/p' "the server"
  url=$url_found
}
stop() {
  kill -TERM "$pid"
  wait "$pid" || fail "exit status $?"
  pid=
  grep -qx "serve_graph: stopping" "$dir/out" || fail "no 'stopping' line"
}
start_loopback "$model" "$dir" --delay-ms 50
export OPENAI_BASE_URL="$model_url" OPENAI_API_KEY=test
start
grep -q "(graphs: agent, chat; data in $dir/data)" "$dir/out" || fail "not both graphs"
thread=$(curl -sf -X POST "$url/threads" -d '{}' | sed -n 's/.*"thread_id":"\([^"]*\)".*/\1/p')
[ -n "$thread" ] || fail "no thread id"
reply=$(curl -sf -X POST "$url/threads/$thread/runs/wait" \
  -d '{"assistant_id":"agent","input":{"messages":[{"role":"user","content":"hello"}]}}')
echo "$reply" | grep -q '"content":"echo: hello"' || fail "no echo in: $reply"
reply=$(curl -sf -X POST "$url/runs/wait" \
  -d '{"assistant_id":"chat","input":{"messages":[{"role":"user","content":"hi model"}]}}')
echo "$reply" | grep -q '"type":"ai"' || fail "no model reply in: $reply"
echo "$reply" | grep -q 'echo: hi model' || fail "not the model's reply: $reply"
stop
start
state=$(curl -sf "$url/threads/$thread/state")
echo "$state" | grep -q '"content":"echo: hello"' || fail "the thread did not survive: $state"
stop
start --graph agent
grep -q "(graphs: agent; data" "$dir/out" || fail "--graph agent served more"
stop
"$prog" --help | grep -q -- "--config" || fail "no --config in --help"
status=0
"$prog" --port > "$dir/out" 2>&1 || status=$?
[ "$status" -eq 2 ] || fail "a bad option exits $status, not 2"
grep -q "^serve_graph: .*(see --help)$" "$dir/out" || fail "no usage error line"
status=0
"$prog" --db "$dir/data" --graph nope > "$dir/out" 2>&1 || status=$?
[ "$status" -eq 1 ] || fail "an unknown graph exits $status, not 1"
grep -q "no built-in graph 'nope' (there are: agent, chat)" "$dir/out" || fail "no unknown-graph error"
echo "serve_graph: ok"
