# SPDX-License-Identifier: MIT
# Sourced by the example checks: `. "$(dirname "$0")/check.sh" "$1"` runs the example given as
# the first argument, its output in "$dir/out" ($dir is removed on exit). Then:
#   fail MESSAGE   stops the check with MESSAGE
#   has LINE       fails unless LINE is a whole line of the output
set -eu
prog=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
has() { grep -qxF "$1" "$dir/out" || fail "missing line: $1
--- output:
$(cat "$dir/out")"; }
"$prog" > "$dir/out" || fail "exit status $?: $(cat "$dir/out")"
