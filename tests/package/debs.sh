#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks the installed Debian packages (scripts/package) on a machine that has nothing else of
# stategraph, as scripts/check-fresh-debian --debs runs it in a fresh Debian 12 root: the CLI,
# its man page, bash completion and systemd unit; `stategraph demo`; a consumer of the CMake
# package; and a `stategraph new` project built against it and served by the installed binary.
#   usage: tests/package/debs.sh   (from a clone: it builds tests/package/consumer)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
server=""
cleanup() {
  if [[ -n "$server" ]]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
# The test's own tools: curl talks to the server, systemd-analyze checks the unit.
tools=()
command -v curl >/dev/null || tools+=(curl)
command -v systemd-analyze >/dev/null || tools+=(systemd)
if [[ ${#tools[@]} -gt 0 ]]; then
  apt-get install -y -qq --no-install-recommends "${tools[@]}" >/dev/null
fi

version="$(dpkg-query -W -f='${Version}' stategraph)"
[[ "$(stategraph --version)" == "stategraph ${version%-*}" ]] || fail "stategraph --version: $(stategraph --version)"
[[ "$(command -v stategraph)" == /usr/bin/stategraph ]] || fail "stategraph is not /usr/bin/stategraph"
echo "ok: stategraph $version in /usr/bin"

man=/usr/share/man/man1/stategraph.1.gz
zcat "$man" | grep -q '^\.SH COMMANDS' || fail "no COMMANDS section in $man"
zcat "$man" | grep -q 'stategraph serve' || fail "$man does not describe serve"
echo "ok: man page $man"

completion=/usr/share/bash-completion/completions/stategraph
bash -c "source $completion && complete -p stategraph" | grep -q stategraph \
  || fail "$completion defines no completion"
echo "ok: bash completion $completion"

unit=/usr/lib/systemd/system/stategraph.service
grep -q '^ExecStart=/usr/bin/stategraph serve$' "$unit" || fail "$unit: ExecStart"
# (--man=no: man-db may be missing; the man page was checked above.)
systemd-analyze verify --man=no "$unit" || fail "systemd-analyze verify $unit"
echo "ok: systemd unit $unit (systemd-analyze verify)"

(cd "$work" && stategraph demo --turns 4 --fresh) > "$work/demo.log" || { cat "$work/demo.log"; fail "stategraph demo"; }
grep -q "^turn  4/40" "$work/demo.log" || { cat "$work/demo.log"; fail "stategraph demo: no turn 4"; }
echo "ok: stategraph demo --turns 4"

# A consumer of the CMake package: the core, the savers and stores, the model client.
cmake -S "$here/consumer" -B "$work/consumer" -DCMAKE_BUILD_TYPE=Release > "$work/consumer.log" \
  && cmake --build "$work/consumer" >> "$work/consumer.log" 2>&1 \
  || { cat "$work/consumer.log"; fail "the consumer did not build"; }
[[ "$("$work/consumer/consumer")" == $'Human: hello\nAI: hi there' ]] || fail "consumer output"
mkdir "$work/data"
"$work/consumer/storage_consumer" "$work/data" | grep -q "checkpoints 1 1, store Ann Ann" \
  || fail "storage_consumer output"
echo "ok: a find_package(stategraph) consumer builds and runs"

# A new project: built, tested, served.
stategraph new "$work/agent" > /dev/null
cmake -S "$work/agent" -B "$work/agent/build" -DCMAKE_BUILD_TYPE=Release > "$work/agent.log" \
  && cmake --build "$work/agent/build" >> "$work/agent.log" 2>&1 \
  && ctest --test-dir "$work/agent/build" >> "$work/agent.log" 2>&1 \
  || { cat "$work/agent.log"; fail "the stategraph new project did not build and pass its test"; }
port=$((20000 + RANDOM % 20000))
stategraph serve --config "$work/agent/stategraph.json" --in-memory --port "$port" \
  > "$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/ok" > /dev/null && break
  sleep 0.1
done
reply="$(curl -sf -X POST "http://127.0.0.1:$port/runs/wait" -H 'content-type: application/json' \
  -d '{"assistant_id":"agent","input":{"messages":[{"role":"user","content":"hi"}]}}')" \
  || { cat "$work/serve.log"; fail "POST /runs/wait"; }
[[ "$reply" == *'you said: hi'* ]] || fail "the served project answered: $reply"
echo "ok: stategraph new project built, tested and served (you said: hi)"
