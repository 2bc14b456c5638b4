#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs examples/support_chat and checks seeds/000's expected statistics, the pruning beyond the
# window (counted, and forgotten by the agent) and independent sessions.
set -eu
prog=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "FAIL: $*" >&2; cat "$out" >&2; exit 1; }
has() { grep -qxF -- "$1" "$out" || fail "missing line: $1"; }

"$prog" > "$out"
has "{'total_messages_seen': 4, 'current_history_size': 4, 'window_size': 10}"
has "Turn 2: What is my order number? -> You told me: my order number is 45678."
has "Turn 12: What is my order number? -> I don't know that yet."
has "Stats: {'total_messages_seen': 24, 'current_history_size': 10, 'window_size': 5}"
has "Ticket 456 stats: {'total_messages_seen': 2, 'current_history_size': 2, 'window_size': 5}"
has "Unknown ticket stats: {'total_messages_seen': 0, 'current_history_size': 0, 'window_size': 5}"
has "Active sessions: ['ticket-123', 'ticket-456']"
echo "support_chat: ok"
