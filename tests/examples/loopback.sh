# SPDX-License-Identifier: MIT
# Sourced by the example scripts that start servers.
#   wait_for_url FILE SED_SCRIPT WHAT: waits up to 10 s for `sed -n SED_SCRIPT FILE` to print an
#     address (a server's start-up line), sets url_found to it, or calls the script's fail().
#   start_loopback SG_LOOPBACK_BIN DIR [ARGS...]: starts a loopback model (tests/support:
#     sg-loopback-openai or sg-loopback-anthropic) with ARGS, its output in DIR/model.out, and
#     sets model_pid and model_url (the address it prints: OpenAI's /v1, Anthropic's root).
wait_for_url() {
  url_found=
  for _ in $(seq 1 200); do
    # The file may not exist yet (the server's shell has not opened it): not a failure.
    url_found=$(sed -n "$2" "$1" 2>/dev/null || true)
    [ -n "$url_found" ] && return 0
    sleep 0.05
  done
  fail "$3 did not start"
}

start_loopback() {
  loopback_bin=$1
  loopback_dir=$2
  shift 2
  "$loopback_bin" "$@" > "$loopback_dir/model.out" 2>&1 &
  model_pid=$!
  wait_for_url "$loopback_dir/model.out" 's/^listening on \(http:.*\)$/\1/p' "the loopback model"
  model_url=$url_found
}
