#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs examples/session_history twice on one RocksDB database: histories keyed by session id or
# by user id + conversation id remember within a session and not across sessions, and the second
# process resumes what the first stored. Then once without a path (a temporary database).
set -eu
prog=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $1" >&2; cat "$2" >&2; exit 1; }
has() { grep -qxF -- "$1" "$2" || fail "missing line: $1" "$2"; }

"$prog" "$dir/db" > "$dir/1"
has "session 1 holds 0 messages before this run" "$dir/1"
[ "$(grep -c '^\[session 1\] ai: ' "$dir/1")" = 3 ] || fail "expected three turns in session 1" "$dir/1"
grep -A1 -m1 -F '[session 1] human: whats my name?' "$dir/1" | grep -qxF "[session 1] ai: I don't know that yet." \
  || fail "a fresh session knew the name" "$dir/1"
has "[session 1] ai: You told me: my name is bob." "$dir/1"
has "[session 1a] ai: I don't know that yet." "$dir/1"
has "[user 123, conversation 1] ai: You told me: my name is bob." "$dir/1"
has "[user 456, conversation 1] ai: I don't know that yet." "$dir/1"
grep -q '^error: Missing keys \["user_id"\] in config.configurable' "$dir/1" || fail "no missing-key error" "$dir/1"
has "history/conversation_id=1/user_id=123: 4 messages" "$dir/1"
has "history/session_id=1: 6 messages" "$dir/1"

# A second process resumes the stored histories: its first question is answered from them.
"$prog" "$dir/db" > "$dir/2"
has "session 1 holds 6 messages before this run" "$dir/2"
grep -A1 -m1 -F '[session 1] human: whats my name?' "$dir/2" | grep -qxF "[session 1] ai: You told me: my name is bob." \
  || fail "the second process did not resume session 1" "$dir/2"
has "[session 1a] ai: I don't know that yet." "$dir/2"
has "[user 456, conversation 1] ai: I don't know that yet." "$dir/2"
has "history/session_id=1: 12 messages" "$dir/2"
has "history/conversation_id=1/user_id=123: 8 messages" "$dir/2"

"$prog" > "$dir/3"
has "session 1 holds 0 messages before this run" "$dir/3"
echo "session_history: ok"
