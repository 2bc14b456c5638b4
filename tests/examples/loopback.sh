# SPDX-License-Identifier: MIT
# Sourced by the example scripts that talk to a model: start_loopback SG_LOOPBACK_OPENAI DIR
# [ARGS...] starts the loopback model (tests/support) with ARGS, its output in DIR/model.out, and
# sets model_pid and model_url (its /v1 address), or calls the script's fail().
start_loopback() {
  loopback_bin=$1
  loopback_dir=$2
  shift 2
  "$loopback_bin" "$@" > "$loopback_dir/model.out" 2>&1 &
  model_pid=$!
  model_url=
  for _ in $(seq 1 200); do
    model_url=$(sed -n 's/^listening on \(http:.*\)$/\1/p' "$loopback_dir/model.out")
    [ -n "$model_url" ] && return 0
    sleep 0.05
  done
  fail "the loopback model did not start"
}
