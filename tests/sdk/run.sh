#!/usr/bin/env bash
# Runs the SDK conformance suite (or another suite of this directory) against a LangGraph Server
# API server.
#   usage: tests/sdk/run.sh URL [SUITE.test.mjs]   e.g. tests/sdk/run.sh http://127.0.0.1:2024
# Env passed through: LG_API_KEY, LG_GRAPH_ID, LG_INTERRUPT_GRAPH_ID, LG_REFERENCE=1 (the
# server is the official JS dev server, bench/server/reference/start.sh).
# Exit code: the tests'.
set -euo pipefail
if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 URL [SUITE.test.mjs]" >&2
  exit 2
fi
cd "$(dirname "$0")"
for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "sdk tests: $tool is missing (scripts/install-deps installs Node.js)" >&2
    exit 1
  fi
done

source ../../scripts/lib/npm-ci.sh
npm_ci_once .

export LG_API_URL="$1"
# --test-concurrency and --test-force-exit came with Node 20 (Debian 12 has 18: one file runs
# alone there anyway).
flags=()
if (( $(node -p 'process.versions.node.split(".")[0]') >= 20 )); then
  flags=(--test-concurrency=1 --test-force-exit)
fi
exec node --test "${flags[@]}" "${2:-conformance.test.mjs}"
