# SPDX-License-Identifier: MIT
# The URL a `stategraph serve --port 0` process prints once it listens (sourced by bash scripts).
#   source scripts/lib/serve-url.sh
#   url="$(serve_url OUT_FILE PID)"   # waits up to 30 s; fails, printing OUT_FILE and the
#                                     # ERR_FILE beside it (OUT_FILE with out -> err), if the
#                                     # process exits or never listens
serve_url() {
  local out="$1" pid="$2" url=""
  for _ in $(seq 1 300); do
    url="$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$out" || true)"
    if [[ -n "$url" ]]; then
      echo "$url"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "stategraph serve (pid $pid) did not start:" >&2
  cat "$out" "${out%out*}err${out##*out}" >&2 2>/dev/null || true
  return 1
}
