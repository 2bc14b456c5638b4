#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs examples/long_term_memory as separate processes: what one conversation thread stored is
# known to the next thread, after a restart; the profile is updated in place.
set -eu
prog=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$prog" "$dir/store" t1 "Hi, my name is Bob." "I like green tea." > "$dir/1"
grep -qx "t1 ai: Noted." "$dir/1" || fail "t1: $(cat "$dir/1")"

"$prog" "$dir/store" t2 "I enjoy hiking in the alps." "What do you know about me?" > "$dir/2"
grep -q "^t2 ai: You are Bob. I remember:" "$dir/2" || fail "t2 did not see t1's memories: $(cat "$dir/2")"
grep -q "I like green tea;" "$dir/2" || fail "t2 lost the first memory: $(cat "$dir/2")"
grep -q "I enjoy hiking in the alps;" "$dir/2" || fail "t2 lost its own memory: $(cat "$dir/2")"

"$prog" "$dir/store" t3 "Actually my name is Robert." "Do you remember my tea?" > "$dir/3"
grep -q "^t3 ai: You are Robert. I remember: I like green tea;" "$dir/3" \
  || fail "profile not updated in place, or tea not ranked first: $(cat "$dir/3")"
echo "long_term_memory: ok"
