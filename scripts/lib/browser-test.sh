# SPDX-License-Identifier: MIT
# What the browser suites share (tests/studio, tests/ui; sourced by their bash scripts): the
# tools they need, a work directory, a loopback model and `stategraph serve` on it, all cleaned
# up at exit.
#   source scripts/lib/browser-test.sh
#   browser_test_setup NAME DIR   # node, npm and chromium present; npm ci in DIR; Node.js 20+;
#                                 # $work made; DIR/model-server.mjs started: $model_url
#   browser_test_serve CLI ARGS   # CLI serve --port 0 --in-memory ARGS on the model, with a new
#                                 # STATEGRAPH_API_KEY: $key and $url
lib_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$lib_dir/serve-url.sh"
source "$lib_dir/npm-ci.sh"
source "$lib_dir/test-node.sh"
work=""
server=""
model=""

browser_test_cleanup() {
  if [[ -n "$model" ]]; then kill "$model" 2>/dev/null || true; fi
  if [[ -n "$server" ]]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  if [[ -n "$work" ]]; then rm -rf "$work"; fi
}

browser_test_setup() {
  local name="$1" dir="$2"
  for tool in node npm chromium; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      echo "$name tests: $tool is missing (scripts/install-deps installs it)" >&2
      exit 1
    fi
  done
  work="$(mktemp -d "/tmp/sg-$name-XXXXXX")"
  trap browser_test_cleanup EXIT
  npm_ci_once "$dir"
  use_test_node  # playwright-core and LangGraph.js need Node.js 20 or newer
  node "$dir/model-server.mjs" >"$work/model" &
  model=$!
  for _ in $(seq 100); do [[ -s "$work/model" ]] && break; sleep 0.05; done
  model_url="$(head -1 "$work/model")"
  [[ -n "$model_url" ]] || { echo "$name tests: the loopback model did not start" >&2; exit 1; }
}

browser_test_serve() {
  local cli="$1"
  shift
  key="browser-test-$RANDOM$RANDOM"
  OPENAI_BASE_URL="$model_url" OPENAI_API_KEY=loopback STATEGRAPH_API_KEY="$key" \
    "$cli" serve --port 0 --in-memory "$@" >"$work/out" 2>"$work/err" &
  server=$!
  url="$(serve_url "$work/out" "$server")"
}
