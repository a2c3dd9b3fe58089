# Sourced by bench/compare.sh (uses its log, WORK, PG_ADMIN_URL, PG_DB, PG_RELAY_PID).
# shellcheck shell=bash
# A throw-away database on the local PostgreSQL and a unix-socket relay to it the daemon's namespace can
# reach; DATABASE_URL names both.
pg_up() {
  command -v psql >/dev/null || { log "psql is missing (apt-get install postgresql-client)"; return 1; }
  if ! command -v socat >/dev/null; then
    log "socat is not installed: apt-get install -y socat"
    DEBIAN_FRONTEND=noninteractive apt-get install -y socat >"$WORK/apt-socat.log" 2>&1 || { log "could not install socat"; return 1; }
  fi
  PG_DB=svcd_bench_$(basename "$WORK" | tr -dc 'a-zA-Z0-9' | tr 'A-Z' 'a-z')
  psql -q "$PG_ADMIN_URL" -c "create database $PG_DB" || { log "cannot create database $PG_DB on $PG_ADMIN_URL"; PG_DB=""; return 1; }
  local hostport=${PG_ADMIN_URL#*@}
  hostport=${hostport%%/*}
  mkdir -p "$WORK/pg"
  socat "UNIX-LISTEN:$WORK/pg/.s.PGSQL.5432,fork,mode=0777" "TCP:$hostport" &
  PG_RELAY_PID=$!
  local creds=${PG_ADMIN_URL#*://}
  creds=${creds%%@*}
  PG_URL="postgres://$creds@localhost/$PG_DB?host=$WORK/pg"
  log "database $PG_DB on $hostport, reached through $WORK/pg/.s.PGSQL.5432 (socat, pid $PG_RELAY_PID)"
}
pg_down() {
  if [ -n "$PG_RELAY_PID" ]; then kill "$PG_RELAY_PID" 2>/dev/null; wait "$PG_RELAY_PID" 2>/dev/null; PG_RELAY_PID=""; fi
  if [ -n "$PG_DB" ]; then
    psql -q "$PG_ADMIN_URL" -c "drop database if exists $PG_DB with (force)" || log "could not drop database $PG_DB"
    PG_DB=""
  fi
}

