# SPDX-License-Identifier: MIT
# What bench/server's scripts share (sourced by bash scripts; needs `here` (bench/server) and
# `work` (a temp dir) set): free ports, the official LangGraph.js dev server, stopping a server.
#   start_reference        # sets url, server_pid, measured_pid and server_pgid; fails, printing
#                          # why, when it does not start (ref_log_level: its LOG_LEVEL, or
#                          # unset)
#   stop_server            # stops whatever start_* started (TERM, then KILL), and waits
server_pid=""     # stategraph serve, or reference/start.sh
server_pgid=""    # the reference's process group (its start.sh runs it under setsid)

stop_server() {
  [[ -z "$server_pid" ]] && return 0
  kill -TERM "$server_pid" 2>/dev/null || true
  for _ in $(seq 100); do
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  if [[ -n "$server_pgid" ]]; then
    # start.sh stops its group on TERM; make sure, then force.
    for _ in $(seq 50); do
      kill -0 -- "-$server_pgid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL -- "-$server_pgid" 2>/dev/null || true
  fi
  server_pid=""
  server_pgid=""
}

# A free TCP port on 127.0.0.1.
free_port() {
  node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# Starts the official dev server on a free port (reference/start.sh).
start_reference() {
  local port
  port="$(free_port)"
  if [[ -n "${ref_log_level:-}" ]]; then export LOG_LEVEL="$ref_log_level"; fi
  "$here/reference/start.sh" "$port" >"$work/server.out" 2>"$work/server.err" &
  server_pid=$!
  url="http://127.0.0.1:$port"
  for _ in $(seq 600); do
    if grep -q "^$url\$" "$work/server.out" 2>/dev/null; then break; fi
    if ! kill -0 "$server_pid" 2>/dev/null; then
      echo "bench/server: the reference server did not start:" >&2
      tail -20 "$work/server.out" "$work/server.err" >&2
      return 1
    fi
    sleep 0.2
  done
  # The process that listens on the port is the one that holds the graph state (the dev CLI
  # spawns tsx, which spawns the server); check that it belongs to this start.sh's session.
  measured_pid="$(ss -ltnpH "sport = :$port" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)"
  if [[ -z "$measured_pid" ]]; then
    echo "bench/server: nothing listens on $url" >&2
    return 1
  fi
  server_pgid="$(ps -o pgid= -p "$measured_pid" | tr -d ' ')"
  if ! ps -o args= -p "$server_pgid" 2>/dev/null | grep -q -- "langgraphjs dev --port $port "; then
    echo "bench/server: the listener $measured_pid is not in the group of start.sh's langgraphjs dev" >&2
    return 1
  fi
}

