#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
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
source "$here/../../scripts/lib/browser-test.sh"
browser_test_setup studio "$here"
browser_test_serve "$cli"
status=0
STUDIO_URL="$url" STUDIO_API_KEY="$key" STUDIO_SHOTS="${2:-$work/shots}" \
  node --test --test-concurrency=1 "$here/studio.test.mjs" "$here/cross-origin.test.mjs" >"$work/log" 2>&1 || status=$?
grep -E '^# (tests|pass|fail)' "$work/log" || true
if [[ $status -ne 0 ]]; then
  cat "$work/log"
  echo "--- server stderr" && cat "$work/err"
fi
exit $status
