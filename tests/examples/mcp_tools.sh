#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs examples/mcp_tools offline (LocalModel) with an mcpServers file naming
# @modelcontextprotocol/server-everything from tests/mcp (installed by tests/mcp/setup.sh when
# missing): the agent calls its get-sum tool and answers with the result. Then bad input: a
# missing file, a configuration with a bad field, a server that cannot start.
set -eu
prog=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
node=$("$root/tests/mcp/setup.sh")
everything=$root/tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$dir/out" ] && cat "$dir/out" >&2; exit 1; }
unset OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL

cat >"$dir/servers.json" <<JSON
{"mcpServers": {"everything": {"command": "$node", "args": ["$everything"], "stderr": "ignore"}}}
JSON
"$prog" "$dir/servers.json" "get-sum 19 and 23" >"$dir/out" 2>&1 || fail "the example failed"
grep -q '^[0-9][0-9]* tools from 1 MCP servers$' "$dir/out" || fail "no tool count"
grep -qx 'calls get-sum {"a":19.0,"b":23.0}' "$dir/out" || fail "no get-sum call"
grep -qx 'tool get-sum (success): The sum of 19 and 23 is 42.' "$dir/out" || fail "no tool result"
grep -qx 'assistant: The get-sum tool says: The sum of 19 and 23 is 42.' "$dir/out" ||
  fail "no answer"

if "$prog" "$dir/missing.json" >"$dir/out" 2>&1; then fail "a missing file succeeded"; fi
grep -q "mcp_tools: cannot read $dir/missing.json" "$dir/out" || fail "missing file: no message"

echo '{"mcpServers": {"everything": {"command": "node", "args": "index.js"}}}' >"$dir/bad.json"
if "$prog" "$dir/bad.json" >"$dir/out" 2>&1; then fail "a bad configuration succeeded"; fi
grep -qx 'mcp_tools: mcpServers.everything.args: expected an array of strings, got "index.js"' \
  "$dir/out" || fail "bad configuration: no message naming the field"

echo '{"mcpServers": {"gone": {"command": "sg-no-such-mcp-server"}}}' >"$dir/gone.json"
if "$prog" "$dir/gone.json" >"$dir/out" 2>&1; then fail "a missing server succeeded"; fi
grep -q "mcp_tools: MCP server 'gone': command 'sg-no-such-mcp-server' was not found on PATH" \
  "$dir/out" || fail "missing server: no message"
echo "ok"
