#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs examples/summarize_and_trim: sg::summarize_and_trim_graph on LocalModel over nine turns of
# one thread. The thread is summarized and cut twice (turns 5 and 8); the facts of turns 1-3 then
# live only in the summary, and the last turns' questions about them are answered from it.
. "$(dirname "$0")/check.sh" "$1"
has 'turn 1: Hi! My name is Ada. -> Noted: my name is Ada.'
has 'turn 4: On Monday I repaired a pump. -> Noted: on Monday I repaired a pump.'
has '  model read 6 messages (67 tokens); thread keeps 8 messages (89 tokens)'
# Past 96 tokens the thread is summarized and cut to the last two messages.
has 'turn 5: On Tuesday I read a book. -> Noted: on Tuesday I read a book.'
has '  model read 6 messages (71 tokens); thread keeps 2 messages (25 tokens); summarized'
[ "$(grep -c '; summarized$' "$dir/out")" = 2 ] || fail "expected two summaries"
grep -q '^  model read .*; thread keeps 2 messages (21 tokens); summarized$' "$dir/out" ||
  fail "no second summary"
# The name was deleted from the messages at turn 5; the summary still answers it.
has 'turn 8: What is my name? -> You told me: my name is Ada.'
has 'turn 9: What is my dog called? -> You told me: my dog is called Rex.'
# At the end of every turn the thread keeps at most the 96 tokens that trigger a summary.
sed -n 's/^  model read .*; thread keeps [0-9]* messages (\([0-9]*\) tokens).*/\1/p' "$dir/out" > "$dir/kept"
[ "$(wc -l < "$dir/kept")" = 9 ] || fail "expected nine turns"
while read -r t; do [ "$t" -le 96 ] || fail "the thread kept $t tokens"; done < "$dir/kept"

cat > "$dir/want" <<'WANT'
messages kept (4):
  human: What is my name?
  ai: You told me: my name is Ada.
  human: What is my dog called?
  ai: You told me: my dog is called Rex.
summary: Hi. My name is Ada. I live in Lisbon. My dog is called Rex. On Monday I repaired a pump. On Tuesday I read a book. On Friday I cooked bacalhau. On Sunday I walked by the sea.
turns: 9, checkpoints: 29
"My name is Ada" in the messages: no, in the summary: yes
WANT
sed -n '/^messages kept/,$p' "$dir/out" > "$dir/tail"
diff "$dir/want" "$dir/tail" >&2 || fail "final state (diff above: - expected, + actual)"
echo "summarize_and_trim: ok"
