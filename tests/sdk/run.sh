#!/usr/bin/env bash
# Runs the SDK conformance suite against a LangGraph Server API server.
#   usage: tests/sdk/run.sh URL      e.g. tests/sdk/run.sh http://127.0.0.1:2024
# Env passed through: LG_API_KEY, LG_GRAPH_ID, LG_INTERRUPT_GRAPH_ID, LG_REFERENCE=1 (the
# server is the official JS dev server, bench/server/reference/start.sh).
# Exit code: the tests'.
set -euo pipefail
if [[ $# -ne 1 ]]; then
  echo "usage: $0 URL" >&2
  exit 2
fi
cd "$(dirname "$0")"

# Install when node_modules is missing or was installed from another lock file.
stamp=node_modules/.stategraph-lock.sha256
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
  npm ci --no-audit --no-fund --loglevel=error >/dev/null
  echo "$want" >"$stamp"
fi

export LG_API_URL="$1"
# --test-concurrency and --test-force-exit came with Node 20 (Debian 12 has 18: one file runs
# alone there anyway).
flags=()
if (( $(node -p 'process.versions.node.split(".")[0]') >= 20 )); then
  flags=(--test-concurrency=1 --test-force-exit)
fi
exec node --test "${flags[@]}" conformance.test.mjs
