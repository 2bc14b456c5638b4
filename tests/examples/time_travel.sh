#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs examples/time_travel: a thread's checkpoint history, a replay from the checkpoint before
# write_joke (only write_joke runs again, on a new branch) and a fork made with update_state at
# that checkpoint (the changed topic reaches the joke); checks the checkpoint ids link up.
. "$(dirname "$0")/check.sh" "$1"
# The output with every checkpoint id replaced by ID.
uuid='[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
sed -E "s/$uuid/ID/g" "$dir/out" > "$dir/plain"
hasp() { grep -qxF "$1" "$dir/plain" || fail "missing line: $1
--- output:
$(cat "$dir/plain")"; }
# The id in field $1 of the first line of stdin matching $2.
id_of() { grep -E "$2" | head -1 | awk -v f="$1" '{ print $f }'; }

has 'run: topic=cats joke=Why do cats never win at cards? Too many cats in the deck.'
# The first run: input, START's step, generate_topic, write_joke.
sed -n '/^history (newest first):$/,/^selected/p' "$dir/plain" > "$dir/h1"
cat > "$dir/want" <<'WANT'
history (newest first):
  ID  step 2  loop  next ()  parent ID  topic=cats
  ID  step 1  loop  next (write_joke)  parent ID  topic=cats
  ID  step 0  loop  next (generate_topic)  parent ID  topic=-
  ID  step -1  input  next (__start__)  parent -  topic=-
selected ID: next (write_joke), topic=cats, joke=-
WANT
cmp -s "$dir/h1" "$dir/want" || fail "first history: $(cat "$dir/h1")"

selected=$(sed -n 's/^selected \([^:]*\):.*/\1/p' "$dir/out")
step1=$(sed -n '/^history (newest first):$/,/^selected/p' "$dir/out" | id_of 1 'step 1  loop')
if [ -z "$selected" ] || [ "$selected" != "$step1" ]; then
  fail "selected '$selected', not the step-1 checkpoint $step1"
fi

# Replay: write_joke alone ran again, with the same topic.
has 'replay: write_joke ran 1 time(s), joke=Why do cats never win at cards? Too many cats in the deck.'

# Fork: an update checkpoint whose parent is the selected one; the new topic reaches the joke.
hasp 'fork ID: source update, parent ID, next (write_joke), topic=chickens'
grep -qx "fork [^:]*: source update, parent $selected, next (write_joke), topic=chickens" "$dir/out" ||
  fail "the fork's parent is not the selected checkpoint"
fork=$(sed -n 's/^fork \([^:]*\):.*/\1/p' "$dir/out")
has 'continued: topic=chickens joke=Why do chickens never win at cards? Too many chickens in the deck.'
has 'latest: topic=chickens joke=Why do chickens never win at cards? Too many chickens in the deck.'

# The history keeps all three branches from the selected checkpoint: the original run, the
# replay (a fork checkpoint, then write_joke) and the update (then write_joke).
sed -n '/^history after replay and fork (newest first):$/,$p' "$dir/plain" > "$dir/h2"
cat > "$dir/want" <<'WANT'
history after replay and fork (newest first):
  ID  step 3  loop  next ()  parent ID  topic=chickens
  ID  step 2  update  next (write_joke)  parent ID  topic=chickens
  ID  step 2  loop  next ()  parent ID  topic=cats
  ID  step 1  fork  next (write_joke)  parent ID  topic=cats
  ID  step 2  loop  next ()  parent ID  topic=cats
  ID  step 1  loop  next (write_joke)  parent ID  topic=cats
  ID  step 0  loop  next (generate_topic)  parent ID  topic=-
  ID  step -1  input  next (__start__)  parent -  topic=-
WANT
cmp -s "$dir/h2" "$dir/want" || fail "history after: $(cat "$dir/h2")"
sed -n '/^history after/,$p' "$dir/out" > "$dir/h2ids"
[ "$(id_of 1 'step 2  update' < "$dir/h2ids")" = "$fork" ] || fail "the update checkpoint is not the fork"
[ "$(id_of 8 'step 3  loop' < "$dir/h2ids")" = "$fork" ] || fail "the continued run is not a child of the fork"
[ "$(id_of 8 'step 1  fork' < "$dir/h2ids")" = "$selected" ] || fail "the replay did not branch from the selected checkpoint"
[ "$(id_of 8 'step 2  update' < "$dir/h2ids")" = "$selected" ] || fail "the update did not branch from the selected checkpoint"
echo "time_travel: ok"
