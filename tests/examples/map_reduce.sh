#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs examples/map_reduce: one Send per subject fans out to generate_joke (three tasks of one
# superstep), sg::concat joins their jokes in Send order, best_joke reduces them.
. "$(dirname "$0")/check.sh" "$1"
has 'step 1 generate_topics: {"subjects":["lions","elephants","penguins"]}'
# The three workers run in the same superstep (their updates stream in completion order).
[ "$(grep -c '^step 2 generate_joke: {"jokes":\["Why did the ' "$dir/out")" = 3 ] ||
  fail "expected three generate_joke tasks in step 2"
for s in lions elephants penguins; do
  has "step 2 generate_joke: {\"jokes\":[\"Why did the $s cross the road? To get to the other $s!\"]}"
done
has 'step 3 best_joke: {"best_selected_joke":"Why did the elephants cross the road? To get to the other elephants!"}'

# The reducer joined them in Send order, whatever order the workers finished in.
sed -n '/^jokes (3, in Send order):$/,/^best joke/p' "$dir/out" > "$dir/jokes"
cat > "$dir/want" <<'WANT'
jokes (3, in Send order):
  Why did the lions cross the road? To get to the other lions!
  Why did the elephants cross the road? To get to the other elephants!
  Why did the penguins cross the road? To get to the other penguins!
best joke: Why did the elephants cross the road? To get to the other elephants!
WANT
cmp -s "$dir/jokes" "$dir/want" || fail "joined list: $(cat "$dir/jokes")"
echo "map_reduce: ok"
