#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs examples/memory_concepts and checks every section's output (seeds/001): short-term cuts
# and summary, then long-term memory on the store: tools, the debounced writer, the profile, the
# collection, the instructions and the few-shot examples.
set -eu
prog=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$prog" > "$out"
fail() { echo "FAIL: $*" >&2; cat "$out" >&2; exit 1; }
line() { grep -qxF -- "$1" "$out" || fail "missing line: $1"; }
count() { [ "$(grep -cxF -- "$2" "$out")" -eq "$1" ] || fail "expected $1 times: $2"; }

# 1, 2: keep-slice and RemoveMessage forget the same way: the name is gone.
count 2 'kept after "I live in Lisbon.": I live in Lisbon. | Noted: I live in Lisbon.'
count 2 "kept after \"What is my name?\": What is my name? | I don't know that yet."
# 3: the summary remembers what the cut messages said.
line 'summary: My name is Ada. I live in Lisbon. I like green tea.'
line 'kept: I like green tea. | Noted: I like green tea. | What is my name? | You told me: my name is Ada.'
# 4: hot path.
line 'search_memory found: Ada prefers green tea in (memories.ada)'
line "without user_id, the tool answered: Error: namespace template (memories, {user_id}): missing key 'user_id'"
# 5: background writer: the replies did not wait; one write saw the whole thread.
line 'replies waited for a write: no; writes so far: 0'
line 'writer: one write for thread trip, 4 messages, 2 submissions'
line 'after 500 ms of quiet: written 1, superseded 1'
line 'memory: Ada plans a trip to Japan in April'
# 6: profile.
line 'profile after 2 model calls: {"age":36,"likes":["green tea"],"name":"Ada"}'
line 'rejected: the patched profile (unchanged) does not match its schema: /age: -1 is less than the minimum 0'
grep -q "^rejected: profile patch does not apply, the profile is unchanged: .*'email' not found" "$out" \
  || fail "a patch removing a missing key was not rejected"
line 'profile unchanged: {"age":36,"likes":["green tea"],"name":"Ada"}'
# 7: collection.
line 'update: "Ada lives in Porto"'
line 'remove: pet'
line 'insert: "Ada is learning Japanese"'
line 'memories now: [Ada is learning Japanese] [Ada lives in Porto]'
# 8: instructions.
line 'after:  Summarize papers for Twitter in a single tweet, without hashtags.'
line 'stored: {"instructions":"Summarize papers for Twitter in a single tweet, without hashtags."}'
# 9: few-shot: the most similar example only.
line "Input: Translate 'thank you' into Japanese"
grep -q "haiku" "$out" && fail "an unrelated few-shot example was chosen"
echo "memory_concepts: ok"
