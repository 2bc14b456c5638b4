#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Starts `stategraph serve` on a free port (in memory, on RocksDB in a temp dir with --rocksdb,
# or on a throwaway PostgreSQL 15 cluster with --postgres) and runs the official JS SDK's
# conformance suite (or SUITE.test.mjs of this directory) against it (run.sh).
#   usage: tests/sdk/run-against-serve.sh PATH/TO/stategraph [--rocksdb|--postgres] [SUITE.test.mjs]
# Needs node and npm (the suite installs @langchain/langgraph-sdk from npm with `npm ci`).
set -euo pipefail
if [[ $# -lt 1 ]]; then
  echo "usage: $0 PATH/TO/stategraph [--rocksdb|--postgres] [SUITE.test.mjs]" >&2
  exit 2
fi
cli="$1"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d /tmp/sg-sdk-XXXXXX)"
server=""
source "$here/../../scripts/lib/throwaway-postgres.sh"
source "$here/../../scripts/lib/serve-url.sh"
cleanup() {
  if [[ -n "$server" ]]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  pg_throwaway_stop
  rm -rf "$work"
}
trap cleanup EXIT
storage=(--in-memory)
suite=conformance.test.mjs
for arg in "${@:2}"; do
  [[ "$arg" == *.test.mjs ]] && suite="$arg"
done
case "${2:-}" in
  --rocksdb) storage=(--db "$work/db") ;;
  --postgres)
    pg_throwaway_start "$work" 54329 -c fsync=off -c synchronous_commit=off || exit 1
    "${pg_as[@]}" "$pg_bin/createdb" -h "$work" -p 54329 -U postgres sgtest
    storage=(--db "postgresql:///sgtest?host=$work&port=54329&user=postgres")
    ;;
esac
"$cli" serve --port 0 "${storage[@]}" >"$work/out" 2>"$work/err" &
server=$!
url="$(serve_url "$work/out" "$server")"
status=0
"$here/run.sh" "$url" "$suite" >"$work/log" 2>&1 || status=$?
# The TAP summary, and every failure in full.
grep -E '^# (tests|pass|fail|skipped)' "$work/log" || true
if [[ $status -ne 0 ]]; then
  cat "$work/log"
  echo "--- server stderr" && cat "$work/err"
fi
exit $status
