#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the official MCP conformance checks' client scenarios (suite "core" of
# @modelcontextprotocol/conformance) against stategraph's MCP client: the runner starts a test
# server per scenario and runs CLIENT with its URL. initialize, tools_call and sse-retry must
# pass; what the client does not implement is listed in conformance-baseline.yml.
#   usage: tests/mcp/conformance.sh path/to/sg-mcp-conformance-client
set -euo pipefail
if [[ $# -ne 1 ]]; then
  echo "usage: $0 CLIENT" >&2
  exit 2
fi
client="$(realpath "$1")"
dir="$(cd "$(dirname "$0")" && pwd)"
node="$("$dir/setup.sh")"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cd "$out"
"$node" "$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js" client \
  --command "$client" --suite core --expected-failures "$dir/conformance-baseline.yml" \
  -o "$out/results" 2>&1 | grep -v '^\(trace\|debug\) '
