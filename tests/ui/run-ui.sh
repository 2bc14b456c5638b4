#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Starts a loopback OpenAI-compatible model (model-server.mjs) and `stategraph serve` on it (in
# memory, with an API key, allowing the test page's origin) on free ports, then runs two real
# clients against it: a React page built on useStream in Debian's chromium, on another origin
# (use-stream.test.mjs), and LangGraph.js's RemoteGraph in Node (remote-graph.test.mjs).
#   usage: tests/ui/run-ui.sh PATH/TO/stategraph [EXTRA SERVE ARGS...]
# e.g. `--config stategraph.json` of a generated project; then say what its graph does with
# UI_ASSISTANT_ID, UI_REPLY_PREFIX and UI_SLOW_INPUT (lib.mjs), e.g. for `stategraph new`'s:
#   UI_ASSISTANT_ID=agent UI_REPLY_PREFIX='you said: ' UI_SLOW_INPUT= tests/ui/run-ui.sh ...
# Needs npm (npm ci installs the clients from the lock file, and the tests' Node.js:
# scripts/lib/test-node.sh) and chromium (scripts/install-deps installs it).
set -euo pipefail
if [[ $# -lt 1 ]]; then
  echo "usage: $0 PATH/TO/stategraph [EXTRA SERVE ARGS...]" >&2
  exit 2
fi
cli="$1"
shift
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../../scripts/lib/browser-test.sh"
browser_test_setup ui "$here"
# The port of the test page (http://ui.test:PORT), which the server must allow.
page_port="$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')"
browser_test_serve "$cli" --cors-allow-origin "http://ui.test:$page_port" "$@"
status=0
UI_URL="$url" UI_API_KEY="$key" UI_MODEL_URL="$model_url" UI_PAGE_PORT="$page_port" \
  node --test --test-concurrency=1 "$here/use-stream.test.mjs" "$here/remote-graph.test.mjs" >"$work/log" 2>&1 || status=$?
grep -E '^# (tests|pass|fail|skipped)' "$work/log" || true
if [[ $status -ne 0 ]]; then
  cat "$work/log"
  echo "--- server stderr" && cat "$work/err"
fi
exit $status
