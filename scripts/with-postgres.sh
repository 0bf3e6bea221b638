#!/usr/bin/env bash
# with-postgres.sh COMMAND...: runs COMMAND with COPYDESK_TEST_DATABASE set
# to a throwaway PostgreSQL cluster (Debian's postgresql package, 15 or
# newer) in a temporary folder on a free port, stopped and removed at the
# end. The store and HTTP tests then run on PostgreSQL:
#
#   scripts/with-postgres.sh go test ./store/ ./server/
#
# The cluster trades durability for speed (fsync, synchronous_commit and
# full-page writes off): right for tests, wrong for measuring. Set
# COPYDESK_PG_SETTINGS to replace those settings ("" keeps PostgreSQL's
# defaults, as `make perf-engines` does).
set -euo pipefail
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$bin" ]; then
  echo "with-postgres.sh: no PostgreSQL server (apt-get install postgresql)" >&2
  exit 1
fi
dir=$(mktemp -d)
run=()
if [ "$(id -u)" -eq 0 ]; then
  # initdb and postgres refuse to run as root: the cluster is postgres's.
  chown postgres "$dir"
  run=(runuser -u postgres --)
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"${run[@]}" "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
"${run[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
  -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=300 ${COPYDESK_PG_SETTINGS--c fsync=off -c synchronous_commit=off -c full_page_writes=off}" start >/dev/null
stop() {
  "${run[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null || true
  rm -rf "$dir"
}
trap stop EXIT
COPYDESK_TEST_DATABASE="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable" "$@"
