#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Where a PostgresSaver workload's time goes: runs stategraph-bench units on a throwaway
# PostgreSQL 15 (fsync on) and prints, per unit, its result line and the transactions and WAL
# flushes (fsyncs) the database counted while it ran (pg_stat_database, pg_stat_wal; they include
# the unit's set-up and its final reads).
#   bench/postgres/commits.sh [--bench PATH] [--pg "-c synchronous_commit=off"] UNIT...
# e.g. bench/postgres/commits.sh summarize_trim:postgres summarize_trim:postgres_exclusive
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bench="$root/build-bench/bench/stategraph-bench"
pg_options=""
while [[ $# -gt 0 && "$1" == --* ]]; do
  case "$1" in
    --bench) bench="$2"; shift 2 ;;
    --pg) pg_options="$2"; shift 2 ;;
    *) echo "commits.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ $# -gt 0 ]] || { echo "commits.sh: name at least one unit" >&2; exit 2; }
[[ -x "$bench" ]] || { echo "commits.sh: no $bench (make bench builds it)" >&2; exit 1; }
source "$root/scripts/lib/throwaway-postgres.sh"
work="$(mktemp -d /tmp/sg-bench-pgc-XXXXXX)"
trap 'pg_throwaway_stop; rm -rf "$work"' EXIT
# shellcheck disable=SC2086  # the options are words
pg_throwaway_start "$work" 54331 $pg_options
"${pg_as[@]}" "$pg_bin/createdb" -h "$work" -p 54331 -U postgres bench
counters() {
  "${pg_as[@]}" "$pg_bin/psql" -h "$work" -p 54331 -U postgres -d bench -Atc \
    "SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = 'bench'), wal_sync FROM pg_stat_wal" |
    tr '|' ' '
}
for unit in "$@"; do
  read -r commits_before syncs_before < <(counters)
  SG_BENCH_POSTGRES="host=$work port=54331 user=postgres dbname=bench" "$bench" "$unit" --json | tail -1
  sleep 0.6  # the statistics collector reports every 500 ms
  read -r commits_after syncs_after < <(counters)
  echo "{\"unit\":\"$unit\",\"transactions\":$((commits_after - commits_before)),\"wal_syncs\":$((syncs_after - syncs_before))}"
done
