#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs examples/composable_memory and checks its output against seeds/004 (LlamaIndex's "Simple
# Composable Memory" notebook): the injected system messages byte for byte, then the agent flow.
set -eu
prog=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$prog" > "$dir/out"
# The text printed by print(msgs[0]) for a label.
block() { sed -n "/^--- print(msgs\[0\]) $1 ---\$/,/^--- end ---\$/p" "$dir/out" | sed '1d;$d'; }
intro='Below are a set of relevant dialogues retrieved from potentially several memory sources:'
outro='This is the end of the retrieved message dialogues.'

# The notebook's outputs (its cells' stdout).
printf 'system: You are a REALLY helpful assistant.\n\n%s\n\n=====Relevant messages from memory source 1=====\n\n\tUSER: Bob likes burgers.\n\tASSISTANT: Indeed, Bob likes apples.\n\n=====End of relevant messages from memory source 1======\n\n%s\n' \
  "$intro" "$outro" > "$dir/bob"
printf 'system: You are a REALLY helpful assistant.\n\n%s\n\n=====Relevant messages from memory source 1=====\n\n\tUSER: Alice likes apples.\n\n=====End of relevant messages from memory source 1======\n\n%s\n' \
  "$intro" "$outro" > "$dir/alice"
block Bob > "$dir/got_bob"
block Alice > "$dir/got_alice"
cmp -s "$dir/bob" "$dir/got_bob" || fail "Bob: $(diff "$dir/bob" "$dir/got_bob")"
cmp -s "$dir/alice" "$dir/got_alice" || fail "Alice: $(diff "$dir/alice" "$dir/got_alice")"

# The seed's web page shows the same text with the "=====" headers' text lost in its rendering
# (their line breaks stay): that is exactly what the page prints.
printf 'system: You are a REALLY helpful assistant.\n\n%s\n\n\n\n\tUSER: Bob likes burgers.\n\tASSISTANT: Indeed, Bob likes apples.\n\n\n\n%s\n' \
  "$intro" "$outro" > "$dir/seed_bob"
sed 's/^=====.*=====$//' "$dir/got_bob" > "$dir/got_seed_bob"
cmp -s "$dir/seed_bob" "$dir/got_seed_bob" || fail "Bob (seed page): $(diff "$dir/seed_bob" "$dir/got_seed_bob")"

# Messages already in the primary memory are not injected; resets.
grep -A2 -x '>>> composable_memory.get("What does Jerry like?")' "$dir/out" > "$dir/jerry"
printf '%s\n%s\n%s\n' '>>> composable_memory.get("What does Jerry like?")' \
  '[0] system: You are a REALLY helpful assistant.' '[1] user: Jerry likes juice.' > "$dir/want_jerry"
cmp -s "$dir/jerry" "$dir/want_jerry" || fail "Jerry: $(cat "$dir/jerry")"
[ "$(grep -A1 -x '>>> composable_memory.primary_memory.get()' "$dir/out" | grep -cx '\[\]')" = 2 ] \
  || fail "primary reset"
grep -A1 -x '>>> secondary_memory_sources\[0\].get("What does Alice like?")' "$dir/out" > "$dir/alice_after"
grep -qx '\[0\] user: Alice likes apples.' "$dir/alice_after" || fail "a primary reset emptied the secondary"
grep -qx '\[\]' "$dir/alice_after" || fail "reset() did not empty the secondary"

# The agent: tools called, then recalled by a new session through the vector memory only.
grep -qF 'Calling function: mystery with args: {"a": 5, "b": 6}' "$dir/out" || fail "no mystery call"
grep -qF 'Calling function: multiply with args: {"a": 2, "b": 3}' "$dir/out" || fail "no multiply call"
grep -A3 -F '>>> agent_without_memory.chat' "$dir/out" | grep -qx "I don't know that yet." \
  || fail "the agent without memory knew"
grep -A3 -F '>>> agent_with_memory.chat(' "$dir/out" | head -4 \
  | grep -qx 'You told me: ASSISTANT: The mystery tool says: -11.' || fail "the agent with memory did not recall"
block "under the hood" > "$dir/hood"
printf 'system: You are a helpful assistant.\n\n%s\n\n=====Relevant messages from memory source 1=====\n\n\tUSER: What is the mystery function on 5 and 6?\n\tASSISTANT: None\n\tTOOL: -11\n\tASSISTANT: The mystery tool says: -11\n' \
  "$intro" > "$dir/want_hood"
head -10 "$dir/hood" | cmp -s "$dir/want_hood" - || fail "under the hood: $(cat "$dir/hood")"
tail -1 "$dir/hood" | grep -qx "$outro" || fail "under the hood: no outro"
echo "composable_memory: ok"
