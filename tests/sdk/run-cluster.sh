#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Three `stategraph serve` processes on one throwaway PostgreSQL 15 database, driven by the
# official JS SDK (cluster.test.mjs, docs/scale-out.md): mixed multitask strategies on 50
# threads spread over the processes, one running run per thread at every instant, and final
# states equal to those of one process (a fourth server, on a second database of the cluster).
#   usage: tests/sdk/run-cluster.sh PATH/TO/stategraph
# Needs node, npm (the suite installs @langchain/langgraph-sdk from npm with `npm ci`) and
# postgresql-15.
set -euo pipefail
if [[ $# -ne 1 ]]; then
  echo "usage: $0 PATH/TO/stategraph" >&2
  exit 2
fi
cli="$1"
here="$(cd "$(dirname "$0")" && pwd)"
port=54331  # names the socket file in $work only (no TCP)
work="$(mktemp -d /tmp/sg-cluster-XXXXXX)"
servers=()
source "$here/../../scripts/lib/throwaway-postgres.sh"
source "$here/../../scripts/lib/serve-url.sh"
cleanup() {
  for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${servers[@]}"; do wait "$pid" 2>/dev/null || true; done
  pg_throwaway_stop
  rm -rf "$work"
}
trap cleanup EXIT

pg_throwaway_start "$work" "$port" -c fsync=off -c synchronous_commit=off || exit 1
"${pg_as[@]}" "$pg_bin/createdb" -h "$work" -p "$port" -U postgres sgcluster
"${pg_as[@]}" "$pg_bin/createdb" -h "$work" -p "$port" -U postgres sgsingle
db_url() { echo "postgresql:///$1?host=$work&port=$port&user=postgres"; }

# Servers 1-3 share sgcluster; server 4 has sgsingle to itself.
for i in 1 2 3 4; do
  db=sgcluster
  [[ $i -eq 4 ]] && db=sgsingle
  "$cli" serve --port 0 --db "$(db_url $db)" --run-lease 2 >"$work/out$i" 2>"$work/err$i" &
  servers+=($!)
done
urls=()
for i in 1 2 3 4; do
  urls+=("$(serve_url "$work/out$i" "${servers[$((i - 1))]}")")
done

export LG_CLUSTER_URLS="${urls[0]},${urls[1]},${urls[2]}"
# The server processes' pids, in the order of the URLs (sg_run.worker is host:pid:tag).
export LG_CLUSTER_PIDS="${servers[0]},${servers[1]},${servers[2]}"
export LG_SINGLE_URL="${urls[3]}"
# psql on the shared database: a command prefix, split on blanks.
export LG_PG_PSQL="$pg_bin/psql -X -q -h $work -p $port -U postgres -d sgcluster"
status=0
start=$SECONDS
"$here/run.sh" "${urls[0]}" cluster.test.mjs >"$work/log" 2>&1 || status=$?
# The TAP summary, and every failure in full.
grep -E '^# (tests|pass|fail|skipped)' "$work/log" || true
echo "# cluster suite: $((SECONDS - start)) s"
if [[ $status -ne 0 ]]; then
  cat "$work/log"
  for i in 1 2 3 4; do
    echo "--- server $i (${urls[$((i - 1))]}) stderr" && cat "$work/err$i"
  done
fi
exit $status
