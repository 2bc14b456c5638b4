#!/usr/bin/env bash
# Starts a loopback OpenAI-compatible model (model-server.mjs) and `stategraph serve` on it (in
# memory, with an API key) on free ports, and drives the studio page in Debian's chromium with
# playwright-core (studio.test.mjs), then a page on another origin that calls the API as browser
# UIs do (cross-origin.test.mjs).
#   usage: tests/studio/run-studio.sh PATH/TO/stategraph [SCREENSHOT_DIR]
# Needs npm (npm ci installs playwright-core from the lock file, and the tests' Node.js:
# scripts/lib/test-node.sh) and chromium (scripts/install-deps installs it).
set -euo pipefail
if [[ $# -lt 1 ]]; then
  echo "usage: $0 PATH/TO/stategraph [SCREENSHOT_DIR]" >&2
  exit 2
fi
cli="$1"
here="$(cd "$(dirname "$0")" && pwd)"
for tool in node npm chromium; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "studio tests: $tool is missing (scripts/install-deps installs it)" >&2
    exit 1
  fi
done
work="$(mktemp -d /tmp/sg-studio-XXXXXX)"
server=""
model=""
source "$here/../../scripts/lib/serve-url.sh"
cleanup() {
  if [[ -n "$model" ]]; then kill "$model" 2>/dev/null || true; fi
  if [[ -n "$server" ]]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
source "$here/../../scripts/lib/npm-ci.sh"
source "$here/../../scripts/lib/test-node.sh"
npm_ci_once "$here"
use_test_node  # playwright-core needs Node.js 20 or newer
node "$here/model-server.mjs" >"$work/model" &
model=$!
for _ in $(seq 100); do [[ -s "$work/model" ]] && break; sleep 0.05; done
model_url="$(head -1 "$work/model")"
[[ -n "$model_url" ]] || { echo "studio tests: the loopback model did not start" >&2; exit 1; }
key="studio-test-$RANDOM$RANDOM"
OPENAI_BASE_URL="$model_url" OPENAI_API_KEY=loopback STATEGRAPH_API_KEY="$key" "$cli" serve --port 0 --in-memory >"$work/out" 2>"$work/err" &
server=$!
url="$(serve_url "$work/out" "$server")"
status=0
STUDIO_URL="$url" STUDIO_API_KEY="$key" STUDIO_SHOTS="${2:-$work/shots}" \
  node --test --test-concurrency=1 "$here/studio.test.mjs" "$here/cross-origin.test.mjs" >"$work/log" 2>&1 || status=$?
grep -E '^# (tests|pass|fail)' "$work/log" || true
if [[ $status -ne 0 ]]; then
  cat "$work/log"
  echo "--- server stderr" && cat "$work/err"
fi
exit $status
