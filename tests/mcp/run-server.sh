#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Starts `stategraph serve` (the built-in graphs, in memory, with an API key, offline, with
# `--mcp`: the tools of the reference server-everything over stdio for react_agent) on a free
# port and drives its /mcp with the official MCP clients from npm (server.test.mjs): the
# TypeScript SDK's Client over Streamable HTTP and the inspector's CLI mode.
#   usage: tests/mcp/run-server.sh PATH/TO/stategraph
# Needs npm (setup.sh installs tests/mcp's packages from the lock file when they are missing, and
# the tests' Node.js). Exit code: the tests'.
set -euo pipefail
if [[ $# -ne 1 ]]; then
  echo "usage: $0 PATH/TO/stategraph" >&2
  exit 2
fi
cli="$1"
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../../scripts/lib/serve-url.sh"
for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "mcp tests: $tool is missing (scripts/install-deps installs Node.js)" >&2
    exit 1
  fi
done
work="$(mktemp -d /tmp/sg-mcp-server-XXXXXX)"
server=""
cleanup() {
  if [[ -n "$server" ]]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
# The npm packages and the tests' Node.js (installed when missing, one installer at a time).
node_bin="$("$here/setup.sh")"
PATH="$(dirname "$node_bin"):$PATH"
key="mcp-test-$RANDOM$RANDOM"
cat >"$work/mcp.json" <<EOF
{"mcpServers": {"everything": {"command": "$(command -v node)", "stderr": "ignore",
  "args": ["$here/node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"]}}}
EOF
# The graphs that call a model run on the offline LocalModel: no key of a provider reaches them.
env -u OPENAI_API_KEY -u OPENAI_BASE_URL -u ANTHROPIC_API_KEY -u ANTHROPIC_BASE_URL \
  STATEGRAPH_API_KEY="$key" "$cli" serve --port 0 --in-memory --mcp "$work/mcp.json" >"$work/out" 2>"$work/err" &
server=$!
url="$(serve_url "$work/out" "$server")"
status=0
SG_MCP_URL="$url/mcp" SG_API_KEY="$key" \
  node --test --test-concurrency=1 --test-force-exit "$here/server.test.mjs" >"$work/log" 2>&1 ||
  status=$?
# The TAP summary and the measurement, and every failure in full.
grep -E '^# (tests|pass|fail|cancelled|skipped) |concurrent tools/call' "$work/log" || true
if [[ $status -ne 0 ]]; then
  cat "$work/log"
  echo "--- server stderr" && tail -50 "$work/err"
fi
exit $status
