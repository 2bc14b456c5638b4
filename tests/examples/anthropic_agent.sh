#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs examples/anthropic_agent against the loopback Anthropic server (sg-loopback-anthropic, the
# second argument), which checks every request as the API does and calls find_lines first. The
# first run, from the repository's root with the defaults (docs/models.md): the thinking whole on
# one line, the call once, the tool's lines (checked against grep), the answer, and the usage:
# the first call writes the document to the cache, the second reads it. A second run (another
# question) reads it from its first call. Then bad input: no key or base URL, a missing
# document, a server that is gone.
set -eu
prog=$1
model=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
doc=$root/docs/models.md
dir=$(mktemp -d)
model_pid=
cleanup() {
  [ -n "$model_pid" ] && kill "$model_pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$dir/out" ] && cat "$dir/out" >&2; exit 1; }
. "$(dirname "$0")/loopback.sh"
start_loopback "$model" "$dir" --call-tool find_lines --tool-args '{"word": "retry-after"}'
export ANTHROPIC_BASE_URL="$model_url" ANTHROPIC_API_KEY=test

# "W R": the tokens written to and read from the cache by model call $1.
cache_of() {
  sed -n "s/^model call $1: [0-9]* input tokens (\([0-9]*\) written to the cache, \([0-9]*\) read from it), [0-9]* output tokens$/\1 \2/p" "$dir/out"
}

(cd "$root" && "$prog") > "$dir/out" || fail "exit status $?"
question="Which lines of the document mention retry-after, and what do they say?"
grep -qxF "user: $question (about docs/models.md, $(wc -l < "$doc" | tr -d ' ') lines)" "$dir/out" ||
  fail "no user line"
grep -qxF "thinking: The question is \"$question\". The find_lines tool can answer it: I call it first." \
  "$dir/out" || fail "the thinking is not one whole line"
[ "$(grep -c '^calls ' "$dir/out")" = 1 ] || fail "not one 'calls' line"
grep -qxF 'calls find_lines {"word":"retry-after"}' "$dir/out" || fail "the call is not whole"
# The tool's lines: those grep finds, numbered, at most 8.
grep -inF 'retry-after' "$doc" | head -n 8 | sed 's/^\([0-9]*\):/\1: /' > "$dir/expected"
found=$(grep -ciF 'retry-after' "$doc")
[ "$found" -gt 0 ] || fail "docs/models.md does not mention retry-after"
[ "$found" -gt 8 ] && echo "(and $((found - 8)) more lines)" >> "$dir/expected"
sed -n '/^tool find_lines:$/,/^[^ ]/p' "$dir/out" | sed -n 's/^  //p' > "$dir/tool"
cmp -s "$dir/expected" "$dir/tool" || fail "the tool's lines differ: $(diff "$dir/expected" "$dir/tool")"
grep -q '^assistant: the tools said: ' "$dir/out" || fail "no answer"
[ "$(grep -c '^model call ' "$dir/out")" = 2 ] || fail "not two model calls"
written=$(cache_of 1 | cut -d' ' -f1)
[ "$(cache_of 1)" = "$written 0" ] || fail "call 1 read from the cache"
[ "$written" -gt "$(wc -w < "$doc")" ] || fail "the document was not written to the cache"
[ "$(cache_of 2)" = "0 $written" ] || fail "call 2 did not read the document from the cache"

# Another question on the same document and server: read from the cache at once.
(cd "$dir" && "$prog" "$doc" "Where is retry-after honoured?") > "$dir/out" ||
  fail "exit status $?"
grep -qxF 'thinking: The question is "Where is retry-after honoured?". The find_lines tool can answer it: I call it first.' \
  "$dir/out" || fail "no thinking in the second run"
[ "$(cache_of 1)" = "0 $written" ] || fail "the second run's first call missed the cache"
[ "$(cache_of 2)" = "0 $written" ] || fail "the second run's second call missed the cache"

# The loopback refuses what the API refuses with thinking on, so the runs above show that the
# client sent the thinking back as it came: a tampered thinking text (its signature no longer
# matches), a final tool_use turn that does not start with its thinking.
post() {  # BODY: prints the status, the reply in $dir/reply
  curl -s -o "$dir/reply" -w '%{http_code}' -H 'x-api-key: test' \
    -H 'anthropic-version: 2023-06-01' -H 'content-type: application/json' \
    -d "$1" "$model_url/v1/messages"
}
head='"model": "m", "max_tokens": 2048, "thinking": {"type": "enabled", "budget_tokens": 1024}'
[ "$(post "{$head, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}")" = 200 ] ||
  fail "a plain request was refused: $(cat "$dir/reply")"
signature=$(sed -n 's/.*"signature":"\(loopback-sig-[0-9a-f]*\)".*/\1/p' "$dir/reply")
[ -n "$signature" ] || fail "no signed thinking in: $(cat "$dir/reply")"
thought='The question is \"hi\". I can answer it directly.'
turns() {  # THINKING: a conversation that sends THINKING back with its signature
  echo "{$head, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"},
    {\"role\": \"assistant\", \"content\": [{\"type\": \"thinking\", \"thinking\": \"$1\",
      \"signature\": \"$signature\"}, {\"type\": \"text\", \"text\": \"echo: hi\"}]},
    {\"role\": \"user\", \"content\": \"again\"}]}"
}
[ "$(post "$(turns "$thought")")" = 200 ] || fail "its own thinking refused: $(cat "$dir/reply")"
[ "$(post "$(turns "$thought!")")" = 400 ] || fail "a tampered thinking accepted"
grep -q 'Invalid `signature`' "$dir/reply" || fail "not the signature error: $(cat "$dir/reply")"
[ "$(post "{$head, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"},
  {\"role\": \"assistant\", \"content\": [{\"type\": \"tool_use\", \"id\": \"t1\",
    \"name\": \"find_lines\", \"input\": {}}]},
  {\"role\": \"user\", \"content\": [{\"type\": \"tool_result\", \"tool_use_id\": \"t1\",
    \"content\": \"none\"}]}]}")" = 400 ] || fail "a tool_use turn without thinking accepted"
grep -q 'must start with a thinking block' "$dir/reply" || fail "not the thinking error: $(cat "$dir/reply")"

# Bad input: a clear error and a failed exit status.
if env -u ANTHROPIC_BASE_URL -u ANTHROPIC_API_KEY "$prog" "$doc" > "$dir/out" 2>&1; then
  fail "ran with no key and no base URL"
fi
grep -q 'ANTHROPIC_API_KEY' "$dir/out" || fail "the error does not name ANTHROPIC_API_KEY"
if "$prog" "$dir/missing.md" > "$dir/out" 2>&1; then fail "ran on a missing document"; fi
grep -qF "cannot read $dir/missing.md" "$dir/out" || fail "the error does not name the file"
kill "$model_pid"
wait "$model_pid" 2>/dev/null || true
model_pid=
if "$prog" "$doc" > "$dir/out" 2>&1; then fail "ran with the server gone"; fi
grep -q '^the agent failed: ' "$dir/out" || fail "no clear error with the server gone"
echo "ok"
