# SPDX-License-Identifier: MIT
# The Node.js the tests run on: Node.js 22 from npm (the node-linux-<cpu> package pinned in
# tests/node/package-lock.json), whatever node the machine has. Debian 12's is 18, which neither
# playwright-core nor the SDK's dependencies run on. npm itself stays the machine's (sourced by
# bash scripts; needs scripts/lib/npm-ci.sh sourced first).
#   source scripts/lib/npm-ci.sh; source scripts/lib/test-node.sh
#   use_test_node   # installs it once (under a lock: ctest runs suites in parallel), then puts
#                   # it first on PATH; fails, saying why, when it cannot
use_test_node() {
  local dir bin fd
  dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../tests/node" && pwd)"
  exec {fd}<"$dir/package.json"
  flock "$fd"
  npm_ci_once "$dir" || { exec {fd}<&-; echo "test-node: npm ci in $dir failed" >&2; return 1; }
  exec {fd}<&-
  # The package's own bin/ (npm 9, Debian 12's, links no node_modules/.bin/node).
  for bin in "$dir"/node_modules/node-linux-*/bin; do
    [[ -x "$bin/node" ]] && break
  done
  if [[ ! -x "$bin/node" ]]; then
    echo "test-node: npm has no Node.js build for this machine ($(uname -m)) in $dir" >&2
    return 1
  fi
  PATH="$bin:$PATH"
  export PATH
}
