#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs examples/short_term_memory: seeds/002's usage example (context and utilization), then
# pruning, attention windows, compression and context switching.
set -eu
prog=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$prog" > "$dir/out"
has() { grep -qxF "$1" "$dir/out" || fail "missing line: $1"; }

# The seed's usage example: every message in the context, utilization = tokens / max_tokens.
has 'Context for the next call (5 messages):'
has '  system: You are a helpful AI assistant.'
has '  ai: A common example is email spam filtering...'
stats=$(sed -n 's/^Memory stats: 5 entries, \([0-9]*\) of 8000 tokens, 0 contexts$/\1/p' "$dir/out")
[ -n "$stats" ] || fail "no stats line"
want=$(awk -v t="$stats" 'BEGIN { printf "Memory utilization: %.1f%%", t / 8000 * 100 }')
has "$want"

# Pruning keeps the system prompt; FIFO loses the name, importance and hybrid keep it.
has '  fifo keeps: sys a1 h2 a2 h3'
has '  importance keeps: sys h1 a1 h2 h3'
has '  hybrid keeps: sys h1 h2 a2 h3'

# The attention window is about the dinner.
has '  human: Finally we planned a dinner with friends on Friday.'
has '  human: Dinner will be at the Italian place near the station.'
grep -q 'weather in Paris' "$dir/out" && fail "the weather entry is not relevant"

# Compression: the oldest third became a summary that keeps its facts.
grep -q '^Compression at [0-9]* of 100 tokens: yes, now 7 entries$' "$dir/out" || fail "no compression"
grep -q '^  system: \[Previous conversation summary\]: .*My name is Ada' "$dir/out" || fail "no summary"

# Contexts.
has 'Active context: work, stack: trip'
has 'Back to: trip, last entry importance 0.9'
has 'After merging work into trip: 1 context, 2 entries'
echo "short_term_memory: ok"
