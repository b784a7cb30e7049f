#!/usr/bin/env bash
# The ctest fixture "pg": one scratch PostgreSQL server for a whole test run, so that each test
# that needs one only creates a database on it (tests/cluster/pg_server.h uses the server whose
# directory C960_PG_SERVER_DIR names, when its port file is there).
#   pg_fixture.sh start DIR   initdb in DIR (as the postgres user when root), start it on a free
#                             loopback port and a socket in DIR, write DIR/port
#   pg_fixture.sh stop DIR    stop it (immediate) and remove DIR
# Without PostgreSQL, start writes no port file and succeeds: the tests that need it skip. A run
# that ends without the cleanup (interrupted) stops the server too: a watcher waits for ctest.
set -euo pipefail

cmd=${1:-} dir=${2:-}
if [[ -z "$dir" || ("$cmd" != start && "$cmd" != stop) ]]; then
  echo "usage: pg_fixture.sh start|stop DIR" >&2
  exit 2
fi
bin=${C960_PG_BIN:-/usr/lib/postgresql/15/bin}
as_server_user() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }

stop() {
  if [[ -d "$dir/data" ]]; then as_server_user "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true; fi
  rm -rf "$dir"
}

if [[ "$cmd" == stop ]]; then
  stop
  exit 0
fi

stop
if [[ ! -x "$bin/initdb" || ! -x "$bin/pg_ctl" ]]; then
  echo "pg_fixture: PostgreSQL is not installed ($bin): the tests that need it skip"
  exit 0
fi
mkdir -p "$dir"
if [[ $(id -u) -eq 0 ]]; then chown postgres: "$dir"; fi
chmod 777 "$dir"  # the tests, as the invoking user, write their psql files here
if ! as_server_user "$bin/initdb" -D "$dir/data" -U c960 --auth=trust -E UTF8 --no-locale --no-sync \
  >"$dir/log" 2>&1; then
  cat "$dir/log" >&2
  exit 1
fi
for _ in 1 2 3; do
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  if as_server_user "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
    start >>"$dir/log" 2>&1; then
    echo "$port" >"$dir/port.tmp"
    mv "$dir/port.tmp" "$dir/port"
    ctest_pid=$PPID
    setsid bash -c "while kill -0 $ctest_pid 2>/dev/null; do sleep 2; done; '$0' stop '$dir'" \
      </dev/null >/dev/null 2>&1 &
    echo "pg_fixture: PostgreSQL on 127.0.0.1:$port, in $dir"
    exit 0
  fi
done
cat "$dir/log" "$dir/server.log" >&2 || true
stop
exit 1
