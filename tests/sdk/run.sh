#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the SDK conformance suite (or another suite of this directory) against a LangGraph Server
# API server.
#   usage: tests/sdk/run.sh URL [SUITE.test.mjs]   e.g. tests/sdk/run.sh http://127.0.0.1:2024
# Env passed through: LG_API_KEY, LG_GRAPH_ID, LG_INTERRUPT_GRAPH_ID, LG_REFERENCE=1 (the
# server is the official JS dev server, bench/server/reference/start.sh).
# Runs on the tests' Node.js (scripts/lib/test-node.sh). Exit code: the tests'.
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
source ../../scripts/lib/test-node.sh
npm_ci_once .
use_test_node

export LG_API_URL="$1"
exec node --test --test-concurrency=1 --test-force-exit "${2:-conformance.test.mjs}"
