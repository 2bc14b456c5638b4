#!/usr/bin/env bash
# Starts `stategraph serve` on a free port (in memory, on RocksDB in a temp dir with --rocksdb,
# or on a throwaway PostgreSQL 15 cluster with --postgres) and runs the official JS SDK's
# conformance suite against it (run.sh).
#   usage: tests/sdk/run-against-serve.sh PATH/TO/stategraph [--rocksdb|--postgres]
# Needs node and npm (the suite installs @langchain/langgraph-sdk from npm with `npm ci`).
set -euo pipefail
if [[ $# -lt 1 ]]; then
  echo "usage: $0 PATH/TO/stategraph [--rocksdb|--postgres]" >&2
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
server=""
pg_pid=""
cleanup() {
  if [[ -n "$server" ]]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  if [[ -n "$pg_pid" ]]; then  # the throwaway cluster, stopped by its pid
    kill -INT "$pg_pid" 2>/dev/null || true
    # (a zombie counts as gone: whatever reaps orphans here may take its time)
    while kill -0 "$pg_pid" 2>/dev/null && [[ "$(ps -o stat= -p "$pg_pid")" != Z* ]]; do sleep 0.1; done
  fi
  rm -rf "$work"
}
trap cleanup EXIT
storage=(--in-memory)
case "${2:-}" in
  --rocksdb) storage=(--db "$work/db") ;;
  --postgres)
    # design/server-and-postgres.md §5: initdb and pg_ctl refuse root, so they run as postgres.
    pgbin=/usr/lib/postgresql/15/bin
    if [[ ! -x "$pgbin/initdb" ]]; then
      echo "sdk tests: PostgreSQL 15 is not installed (scripts/install-deps installs it)" >&2
      exit 1
    fi
    as_pg=()
    if [[ $(id -u) -eq 0 ]]; then
      chown postgres:postgres "$work"
      as_pg=(runuser -u postgres --)
    fi
    "${as_pg[@]}" "$pgbin/initdb" -D "$work/pg" -U postgres -A trust -E UTF8 --locale=C.UTF-8 \
      --no-sync >"$work/initdb.log" 2>&1 || { cat "$work/initdb.log" >&2; exit 1; }
    "${as_pg[@]}" "$pgbin/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w -t 30 -s \
      -o "-c listen_addresses='' -p 54329 -k $work -c fsync=off -c synchronous_commit=off" \
      start || { cat "$work/pg.log" >&2; exit 1; }
    pg_pid="$(head -1 "$work/pg/postmaster.pid")"
    "${as_pg[@]}" "$pgbin/createdb" -h "$work" -p 54329 -U postgres sgtest
    storage=(--db "postgresql:///sgtest?host=$work&port=54329&user=postgres")
    ;;
esac
"$cli" serve --port 0 "${storage[@]}" >"$work/out" 2>"$work/err" &
server=$!
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
