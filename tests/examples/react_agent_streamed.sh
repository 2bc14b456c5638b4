#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# examples/react_agent on an OpenAI-compatible server that streams its tool call in pieces (the
# loopback model, sg-loopback-openai): the call is printed once, whole, before its result.
# Usage: react_agent_streamed.sh REACT_AGENT SG_LOOPBACK_OPENAI
set -eu
prog=$1
model=$2
dir=$(mktemp -d)
model_pid=
cleanup() {
  [ -n "$model_pid" ] && kill "$model_pid" 2> /dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  cat "$dir/out" >&2 2> /dev/null || true
  exit 1
}
. "$(dirname "$0")/loopback.sh"
start_loopback "$model" "$dir" --chunks 12 --call-tool multiply --tool-args '{"a": 6, "b": 7}'
OPENAI_BASE_URL="$model_url" OPENAI_API_KEY=test "$prog" "Please multiply 6 and 7." > "$dir/out"
[ "$(grep -c '^calls ' "$dir/out")" = 1 ] || fail "not one 'calls' line"
grep -qx 'calls multiply {"a":6,"b":7}' "$dir/out" || fail "the call is not whole"
grep -A1 '^calls multiply' "$dir/out" | grep -q '^tool multiply: 42' || fail "no result after the call"
echo "ok"
