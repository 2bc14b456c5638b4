# SPDX-License-Identifier: MIT
# Installs a folder's npm packages from its package-lock.json with `npm ci`, only when its
# node_modules is missing or was installed from another lock file (sourced by bash scripts).
#   source scripts/lib/npm-ci.sh
#   npm_ci_once DIR      # npm's own messages go to stderr; fails when npm ci fails
npm_ci_once() {
  local dir="$1" stamp want
  stamp="$dir/node_modules/.stategraph-lock.sha256"
  want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    return 0
  fi
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2) || return 1
  echo "$want" >"$stamp"
}
