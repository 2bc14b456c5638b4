#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs examples/resume_thread as separate processes: each turn resumes the thread the previous
# process stored; a turn from an older checkpoint forks.
set -eu
prog=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
db=$dir/db
fail() { echo "FAIL: $*" >&2; exit 1; }

"$prog" "$db" "hi! I'm bob" > "$dir/1"
grep -qx 'ai: You said "hi! I'"'"'m bob"' "$dir/1" || fail "first turn: $(cat "$dir/1")"
first=$(sed -n 's/^checkpoint //p' "$dir/1")

"$prog" "$db" "what's my name?" > "$dir/2"
grep -q "before that: \"hi! I'm bob\"" "$dir/2" || fail "the second process did not resume: $(cat "$dir/2")"
[ "$(grep -c '^human:' "$dir/2")" = 2 ] || fail "expected two human messages"

"$prog" "$db" --checkpoint "$first" "i like the celtics" > "$dir/3"
grep -q "before that: \"hi! I'm bob\"$" "$dir/3" || fail "fork did not start from the first turn: $(cat "$dir/3")"
[ "$(grep -c '^human:' "$dir/3")" = 2 ] || fail "the fork kept the other branch's messages"

"$prog" "$db" --history > "$dir/h"
# Three turns of three checkpoints each (input, START, chat).
[ "$(wc -l < "$dir/h")" = 9 ] || fail "history: $(cat "$dir/h")"
echo "resume_thread: ok"
