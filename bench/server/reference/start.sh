#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Starts the official LangGraph.js dev server (in memory) on 127.0.0.1:PORT serving
# langgraph.json's graphs, waits until GET /ok answers, prints the URL and stays in
# the foreground until killed (SIGTERM/SIGINT stop the server and everything it started).
#   usage: bench/server/reference/start.sh [PORT]   (default 2024)
set -euo pipefail
cd "$(dirname "$0")"
port="${1:-2024}"

source ../../../scripts/lib/npm-ci.sh
npm_ci_once .

url="http://127.0.0.1:$port"
if curl -fsS -o /dev/null --max-time 2 "$url/ok" 2>/dev/null; then
  echo "start.sh: something already answers on $url" >&2
  exit 1
fi

# The dev server keeps its state in .langgraph_api/ and reloads it on start: wipe it
# so every start is a fresh in-memory server.
rm -rf .langgraph_api

export LANGGRAPH_CLI_NO_ANALYTICS=1 # no usage report over the network
export BROWSER=none                  # never open Studio
export LANGSMITH_TRACING=false LANGCHAIN_TRACING_V2=false

# Its own session (process group), so that stopping this script stops the CLI, the
# tsx loader and the server process it spawns.
setsid node_modules/.bin/langgraphjs dev --port "$port" --host 127.0.0.1 \
  --no-browser --no-reload --config langgraph.json &
server_pid=$!
stop() {
  trap - EXIT INT TERM
  kill -TERM -- "-$server_pid" 2>/dev/null || true
  for _ in $(seq 50); do
    kill -0 -- "-$server_pid" 2>/dev/null || exit 0
    sleep 0.1
  done
  kill -KILL -- "-$server_pid" 2>/dev/null || true
  exit 0
}
trap stop EXIT INT TERM

for _ in $(seq 600); do
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "start.sh: the dev server exited" >&2
    exit 1
  fi
  if curl -fsS -o /dev/null --max-time 2 "$url/ok" 2>/dev/null; then
    echo "$url"
    wait "$server_pid" || true
    exit 0
  fi
  sleep 0.2
done
echo "start.sh: no answer on $url/ok after 120 s" >&2
exit 1
