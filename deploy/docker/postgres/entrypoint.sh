#!/bin/sh
# The entry point of deploy/docker/postgres/Dockerfile: makes the cluster in $PGDATA on the first
# start, then runs the server on every address, port 5432, with the arguments given (-c NAME=VALUE).
set -eu
user="${POSTGRES_USER:-c960}" db="${POSTGRES_DB:-c960}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  [ -n "${POSTGRES_PASSWORD_FILE:-}" ] && [ -s "$POSTGRES_PASSWORD_FILE" ] ||
    { echo "c960-postgres: POSTGRES_PASSWORD_FILE must name a file with the password" >&2; exit 2; }
  initdb -D "$PGDATA" -U "$user" --pwfile="$POSTGRES_PASSWORD_FILE" -E UTF8 --no-locale \
    --auth-local=peer --auth-host=scram-sha-256 >/dev/null
  # Other hosts (the coordinators' containers) too, with the password.
  printf 'host all all 0.0.0.0/0 scram-sha-256\nhost all all ::/0 scram-sha-256\n' >>"$PGDATA/pg_hba.conf"
  echo "CREATE DATABASE \"$db\" OWNER \"$user\";" | postgres --single -D "$PGDATA" postgres >/dev/null
  echo "c960-postgres: made the cluster in $PGDATA: user $user, database $db"
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c port=5432 "$@"
