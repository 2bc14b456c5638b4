#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs examples/delete_messages: a node that removes all but the last two messages (the fact of
# turn 1 is answered at turn 2 and forgotten at turn 3), then update_state removing one message
# by id, then every message (REMOVE_ALL), then an unknown id (an error; nothing changes).
. "$(dirname "$0")/check.sh" "$1"
cat > "$dir/want" <<'WANT'
== delete_messages node (keeps the last two)
turn 1: My name is Ada. -> Noted: my name is Ada.
  state (2 messages): [human: My name is Ada.] [ai: Noted: my name is Ada.]
turn 2: What is my name? -> You told me: my name is Ada.
  state (2 messages): [human: What is my name?] [ai: You told me: my name is Ada.]
turn 3: What is my name? -> I don't know that yet.
  state (2 messages): [human: What is my name?] [ai: I don't know that yet.]
== update_state: remove_message("h3"), the first message
  state (1 messages): [ai: I don't know that yet.]
== update_state: remove_message(kRemoveAllMessages)
  state (0 messages):
turn 4: Where do I live? -> I don't know that yet.
  state (2 messages): [human: Where do I live?] [ai: I don't know that yet.]
== update_state: remove_message("no-such-id")
  error: Attempting to delete a message with an ID that doesn't exist ('no-such-id')
  state (2 messages): [human: Where do I live?] [ai: I don't know that yet.]
WANT
diff "$dir/want" "$dir/out" >&2 || fail "unexpected output (diff above: - expected, + actual)"
echo "delete_messages: ok"
