#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `stategraph dev` on a project from `stategraph new`, built against the installed package
# (tests/package/run.cmake): it serves the project's graph; after an edit of the graph's source
# it rebuilds the project and restarts the server, and a thread made before is still there;
# SIGTERM stops it and its server.
#   usage: tests/package/dev.sh STATEGRAPH PROJECT_DIR
set -euo pipefail
cli="$1"
project="$2"
port="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
url="http://127.0.0.1:$port"
log="$(mktemp)"
"$cli" dev --config "$project/stategraph.json" --port "$port" --poll 0.2 >"$log" 2>&1 &
dev=$!
cleanup() {
  if [[ -n "$dev" ]]; then kill "$dev" 2>/dev/null || true; wait "$dev" 2>/dev/null || true; fi
  sed -i 's/you wrote: /you said: /' "$project/src/agent.cpp"
  rm -f "$log"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  cat "$log" >&2
  exit 1
}
ask() {
  curl -sf -X POST "$url/runs/wait" -H 'content-type: application/json' \
    -d "{\"assistant_id\":\"agent\",\"input\":{\"messages\":[{\"role\":\"user\",\"content\":\"$1\"}]}}"
}
# Waits up to $2 seconds for the graph's reply to "hi" to contain $1.
wait_for_reply() {
  for _ in $(seq $(($2 * 5))); do
    if ask hi 2>/dev/null | grep -q "$1"; then return 0; fi
    kill -0 "$dev" 2>/dev/null || fail "stategraph dev exited"
    sleep 0.2
  done
  fail "no reply with '$1' within $2 s"
}
wait_for_reply "you said: hi" 300
thread="$(curl -sf -X POST "$url/threads" -d '{}' | sed -n 's/.*"thread_id":"\([^"]*\)".*/\1/p')"
[[ -n "$thread" ]] || fail "no thread"
sed -i 's/you said: /you wrote: /' "$project/src/agent.cpp"
wait_for_reply "you wrote: hi" 300
curl -sf "$url/threads/$thread" >/dev/null || fail "the thread did not survive the restart"
[[ "$(grep -c 'stategraph dev: building' "$log")" -ge 2 ]] || fail "not rebuilt"
kill -TERM "$dev"
wait "$dev" || fail "stategraph dev exited with $?"
dev=""
grep -q "stategraph dev: stopped" "$log" || fail "no 'stopped' line"
if curl -sf "$url/ok" >/dev/null 2>&1; then fail "its server still answers"; fi
echo "stategraph dev: rebuilt and restarted on an edit"
