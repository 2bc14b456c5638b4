#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks the request bodies AnthropicChatModel sends against the official Anthropic SDK's
# TypeScript types. Runs the Anthropic cases of the models suite (tests/models/test_anthropic.cpp)
# with SG_ANTHROPIC_BODIES_TS set: they write every body they sent to the loopback server into a
# .ts file, each typed as the SDK's MessageCreateParamsNonStreaming or ...Streaming; then
# `tsc --noEmit` compiles it, so a field sent wrong, or one the API does not have, fails (object
# literals get TypeScript's excess property checks). Bodies known to be wrong must fail too.
#   usage: tests/anthropic/run.sh PATH/TO/sg_models_tests
# Needs npm (npm ci installs the SDK and TypeScript from package-lock.json) and the tests'
# Node.js (scripts/lib/test-node.sh). Exit code 0 when both checks hold.
set -euo pipefail
if [[ $# -ne 1 ]]; then
  echo "usage: $0 PATH/TO/sg_models_tests" >&2
  exit 2
fi
tests="$(realpath "$1")"
cd "$(dirname "$0")"
here="$PWD"
source ../../scripts/lib/npm-ci.sh
source ../../scripts/lib/test-node.sh
npm_ci_once .
use_test_node
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/bodies" "$work/wrong"
for dir in "$work/bodies" "$work/wrong"; do
  ln -s "$here/node_modules" "$dir/node_modules"
  cp tsconfig.json "$dir/"
done
tsc="$here/node_modules/typescript/bin/tsc"

# 1. The bodies sent: every one must compile.
if ! SG_ANTHROPIC_BODIES_TS="$work/bodies/bodies.ts" "$tests" --test-case='anthropic: *' \
    >"$work/test.log" 2>&1; then
  cat "$work/test.log"
  echo "anthropic sdk types: the C++ cases failed" >&2
  exit 1
fi
grep -o '[0-9]* request bodies written' "$work/test.log"
if ! node "$tsc" -p "$work/bodies/tsconfig.json"; then
  echo "anthropic sdk types: a request body does not match the SDK's MessageCreateParams" >&2
  exit 1
fi

# 2. The check has teeth: each of these bodies has one mistake an OpenAI-shaped client makes.
cat >"$work/wrong/wrong.ts" <<'TS'
import type Anthropic from '@anthropic-ai/sdk';
type Body = Anthropic.MessageCreateParamsNonStreaming;
const user = { role: 'user', content: 'x' } as const;
export const stop: Body = { model: 'm', max_tokens: 1, messages: [user], stop: ['x'] };
export const role: Body = { model: 'm', max_tokens: 1, messages: [{ role: 'tool', content: 'x' }] };
export const choice: Body = { model: 'm', max_tokens: 1, messages: [user], tool_choice: 'auto' };
export const result: Body = {
  model: 'm', max_tokens: 1,
  messages: [{ role: 'user', content: [{ type: 'tool_result', tool_call_id: 'x', content: 'y' }] }],
};
export const tools: Body = {
  model: 'm', max_tokens: 1, messages: [user],
  tools: [{ name: 't', parameters: { type: 'object' } }],
};
export const tokens: Body = { model: 'm', messages: [user] };
TS
errors="$(node "$tsc" -p "$work/wrong/tsconfig.json" | grep -c 'error TS' || true)"
if [[ "$errors" -ne 6 ]]; then
  node "$tsc" -p "$work/wrong/tsconfig.json" || true
  echo "anthropic sdk types: expected 6 errors in the wrong bodies, got $errors" >&2
  exit 1
fi
echo "the SDK's types accept every body sent and refuse the 6 wrong ones"
