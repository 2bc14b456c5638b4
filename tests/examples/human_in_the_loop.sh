#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs examples/human_in_the_loop: interrupt() in human_review_node stops each run before the
# tool runs; get_state shows the pending interrupt; Command{resume} approves the tool call on one
# thread and edits its arguments on another.
. "$(dirname "$0")/check.sh" "$1"
value='{"args":{"city":"San Francisco"},"question":"Is this correct?","tool":"weather_search"}'
cat > "$dir/want" <<WANT
== approve the tool call
interrupted: yes, value $value
get_state: next (human_review_node), 2 messages, 1 interrupt(s), from human_review_node: $value
resumed: done
  human: Use weather search for San Francisco.
  ai: [calls weather_search {"city":"San Francisco"}]
  tool: Sunny, 21 C in San Francisco.
  ai: The weather_search tool says: Sunny, 21 C in San Francisco.
== edit the tool call
interrupted: yes, value $value
get_state: next (human_review_node), 2 messages, 1 interrupt(s), from human_review_node: $value
resumed: done
  human: Use weather search for San Francisco.
  ai: [calls weather_search {"city":"Lisbon"}]
  tool: Sunny, 21 C in Lisbon.
  ai: The weather_search tool says: Sunny, 21 C in Lisbon.
get_state: next (), 4 messages, 0 interrupt(s)
WANT
diff "$dir/want" "$dir/out" >&2 || fail "unexpected output (diff above: - expected, + actual)"
echo "human_in_the_loop: ok"
