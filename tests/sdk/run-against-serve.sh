#!/usr/bin/env bash
# Starts `stategraph serve` on a free port (in memory, or on RocksDB in a temp dir with
# --rocksdb) and runs the official JS SDK's conformance suite against it (run.sh).
#   usage: tests/sdk/run-against-serve.sh PATH/TO/stategraph [--rocksdb]
# Needs node and npm (the suite installs @langchain/langgraph-sdk from npm with `npm ci`).
set -euo pipefail
if [[ $# -lt 1 ]]; then
  echo "usage: $0 PATH/TO/stategraph [--rocksdb]" >&2
  exit 2
fi
cli="$1"
here="$(cd "$(dirname "$0")" && pwd)"
for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "sdk tests: $tool is missing (scripts/install-deps installs Node.js)" >&2
    exit 1
  fi
done
work="$(mktemp -d /tmp/sg-sdk-XXXXXX)"
storage=(--in-memory)
if [[ "${2:-}" == "--rocksdb" ]]; then storage=(--db "$work/db"); fi
"$cli" serve --port 0 "${storage[@]}" >"$work/out" 2>"$work/err" &
server=$!
cleanup() {
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
url=""
for _ in $(seq 1 300); do
  url="$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$work/out" || true)"
  [[ -n "$url" ]] && break
  if ! kill -0 "$server" 2>/dev/null; then
    echo "sdk tests: stategraph serve exited:" >&2
    cat "$work/out" "$work/err" >&2
    exit 1
  fi
  sleep 0.1
done
[[ -n "$url" ]] || { echo "sdk tests: the server did not start" >&2; exit 1; }
status=0
"$here/run.sh" "$url" >"$work/log" 2>&1 || status=$?
# The TAP summary, and every failure in full.
grep -E '^# (tests|pass|fail|skipped)' "$work/log" || true
if [[ $status -ne 0 ]]; then
  cat "$work/log"
  echo "--- server stderr" && cat "$work/err"
fi
exit $status
