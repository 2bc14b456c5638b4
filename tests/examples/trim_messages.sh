#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs examples/trim_messages: the chat node sends the model the system prompt plus the latest
# messages within 64 tokens (strategy last, start_on human, include_system) while the thread
# keeps everything; the dog (in the window) is answered, the name (trimmed away) is not.
. "$(dirname "$0")/check.sh" "$1"
sys='[system: You are a helpful assistant.]'
# While the conversation fits, the model sees all of it.
has 'turn 1: My name is Ada. -> Noted: my name is Ada.'
has "  model sees  2 messages (20 tokens): $sys [human: My name is Ada.]"
has 'turn 3: My dog is called Rex. -> Noted: my dog is called Rex.'
has "  model sees  6 messages (62 tokens): $sys [human: My name is Ada.] [ai: Noted: my name is Ada.] [human: I live in Lisbon.] [ai: Noted: I live in Lisbon.] [human: My dog is called Rex.]"
# Then only the system prompt and the last turns, starting on a human message.
has 'turn 4: What is my dog called? -> You told me: my dog is called Rex.'
has "  model sees  4 messages (45 tokens): $sys [human: My dog is called Rex.] [ai: Noted: my dog is called Rex.] [human: What is my dog called?]"
has "turn 5: What is my name? -> I don't know that yet."
has "  model sees  4 messages (44 tokens): $sys [human: What is my dog called?] [ai: You told me: my dog is called Rex.] [human: What is my name?]"
# The state keeps every message.
for n in 3 5 7 9 11; do
  [ "$(grep -c "^  state keeps $n messages ([0-9]* tokens): \[system: " "$dir/out")" = 1 ] ||
    fail "no state line with $n messages"
done
grep -q "^  state keeps 11 messages (118 tokens): \[system: You are a helpful assistant.\] \[human: My name is Ada.\] .* \[ai: I don't know that yet.\]$" "$dir/out" ||
  fail "the last state is not the whole conversation"
has 'the thread still stores "My name is Ada." (message 2 of 11)'
# No window ever passes the budget.
sed -n 's/^  model sees  [0-9]* messages (\([0-9]*\) tokens).*/\1/p' "$dir/out" > "$dir/tokens"
[ "$(wc -l < "$dir/tokens")" = 5 ] || fail "expected five model windows"
while read -r t; do [ "$t" -le 64 ] || fail "a window of $t tokens"; done < "$dir/tokens"
echo "trim_messages: ok"
