#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Makes the MCP tests' peers ready: installs this folder's npm packages when they are missing or
# stale (npm ci from package-lock.json) and the tests' Node.js 22, then prints that node's path.
# Safe to run from several tests at once (one installs, the others wait).
#   usage: tests/mcp/setup.sh    -> /path/to/node
set -euo pipefail
dir="$(cd "$(dirname "$0")" && pwd)"
source "$dir/../../scripts/lib/npm-ci.sh"
source "$dir/../../scripts/lib/test-node.sh"
exec {lock}<"$dir/package.json"
flock "$lock"
npm_ci_once "$dir" || { echo "tests/mcp: npm ci failed" >&2; exit 1; }
exec {lock}<&-
use_test_node >&2
command -v node
