#!/usr/bin/env bash
# A throw-away PostgreSQL for tests: Debian's server binaries, initdb in DIR,
# listening on 127.0.0.1 on a free port (and a socket in DIR), trust auth,
# UTF8, fsync off (an OS crash is not survived; a server restart is). Runs as the postgres user when called as root (initdb
# refuses root).
#   pg-test-server.sh start DIR    prints postgresql://floe@127.0.0.1:PORT/postgres
#   pg-test-server.sh stop DIR     stops it (immediate) and removes DIR
#   pg-test-server.sh restart DIR  immediate stop, start again on the same port
#   pg-test-server.sh halt DIR     immediate stop, keeping DIR (resume starts it again)
# PG_TEST_SERVER_OPTS (at start): more server options, e.g. "-c shared_preload_libraries=pg_stat_statements"
# (kept in DIR/opts for restart and resume).
# Exit status 3: no server binaries here (apt-get install postgresql).
set -euo pipefail
cmd=${1:?start|stop|restart}; dir=${2:?directory}
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "no PostgreSQL server binaries under /usr/lib/postgresql (apt-get install postgresql)" >&2
  exit 3
fi
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
pg_start() {
  as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $(cat "$dir/port") -k $dir -c fsync=off -c full_page_writes=off -c max_connections=300 $(cat "$dir/opts" 2>/dev/null)" \
    start >/dev/null
}
case $cmd in
start)
  mkdir -p "$dir"
  [ "$(id -u)" = 0 ] && chown postgres "$dir"
  as_pg "$bindir/initdb" -D "$dir/data" -U floe -A trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
    as_pg "$bindir/initdb" -D "$dir/data" -U floe -A trust -E UTF8 --locale=C >"$dir/initdb.log" 2>&1
  printf '%s' "${PG_TEST_SERVER_OPTS:-}" >"$dir/opts"
  python3 "$(dirname "$0")/../tests/free_port.py" >"$dir/port"
  pg_start
  echo "postgresql://floe@127.0.0.1:$(cat "$dir/port")/postgres"
  ;;
restart)
  as_pg "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  pg_start
  ;;
halt)
  as_pg "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  ;;
resume)
  pg_start
  ;;
stop)
  as_pg "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
  ;;
*) echo "usage: $0 start|stop|restart|halt|resume DIR" >&2; exit 2 ;;
esac
