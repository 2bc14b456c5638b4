# SPDX-License-Identifier: MIT
# A throwaway PostgreSQL 15 cluster in a directory, for tests and benchmarks (sourced by bash
# scripts). initdb and pg_ctl refuse root, so as root they run as postgres, in DIR (a directory
# that user can enter, such as a mktemp -d under /tmp: the caller's may not be). It listens on a
# unix socket in the directory only.
#   source scripts/lib/throwaway-postgres.sh
#   pg_throwaway_start DIR PORT [POSTGRES -c OPTIONS...]   # e.g. "-c fsync=off"
#   "${pg_as[@]}" "$pg_bin/createdb" -h DIR -p PORT -U postgres NAME
#   pg_throwaway_stop                                      # in the caller's EXIT trap
# Sets pg_bin, pg_as (the command prefix to run as postgres) and pg_pid.
pg_bin=/usr/lib/postgresql/15/bin
pg_as=()
pg_pid=""

pg_throwaway_start() {
  local dir="$1" port="$2"
  shift 2
  if [[ ! -x "$pg_bin/initdb" ]]; then
    echo "PostgreSQL 15 is not installed (scripts/install-deps installs it)" >&2
    return 1
  fi
  if [[ $(id -u) -eq 0 ]]; then
    chown postgres:postgres "$dir"
    pg_as=(runuser -u postgres -- env -C "$dir")
  fi
  "${pg_as[@]}" "$pg_bin/initdb" -D "$dir/pg" -U postgres -A trust -E UTF8 --locale=C.UTF-8 \
    --no-sync >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; return 1; }
  "${pg_as[@]}" "$pg_bin/pg_ctl" -D "$dir/pg" -l "$dir/pg.log" -w -t 30 -s \
    -o "-c listen_addresses='' -p $port -k $dir $*" start || { cat "$dir/pg.log" >&2; return 1; }
  pg_pid="$(head -1 "$dir/pg/postmaster.pid")"
}

# Stops the cluster by its pid and waits (a zombie counts as gone: whatever reaps orphans here
# may take its time).
pg_throwaway_stop() {
  [[ -n "$pg_pid" ]] || return 0
  kill -INT "$pg_pid" 2>/dev/null || true
  while kill -0 "$pg_pid" 2>/dev/null && [[ "$(ps -o stat= -p "$pg_pid")" != Z* ]]; do sleep 0.1; done
  pg_pid=""
}
