# Sourced by bench/compare.sh (uses its log, WORK, PG_ADMIN_URL, PG_DB, PG_RELAY_PID, PG_ROLE_MADE).
# shellcheck shell=bash
# A throw-away database on the local PostgreSQL, and a DATABASE_URL for it that the daemon's network
# namespace can use.
#
# The daemon's namespace has only its own loopback, so it cannot reach the server's 127.0.0.1 port. It can
# reach the server's unix socket (a path: no network namespace applies), which is how Debian's local
# clients connect: peer authentication, as the OS user. So when the admin URL names this machine and the
# server's socket is in $PG_SOCKET_DIR (default /var/run/postgresql), the database is owned by a role named
# root (made for the run when there is none, through the postgres OS user, and dropped after) and the
# daemon connects straight to that socket.
#
# Otherwise (another server, or no socket there) the daemon reaches the server's TCP port through a unix
# socket under the temp dir that socat (in the host's namespace) relays, with the admin URL's password.
# That relay is a process hop on every message (~0.1 ms per round trip against ~0.03 ms direct on the dev
# machine): the figures of such a run are the relay's as much as svcd's. Its listen backlog is 512: at
# socat's default of 5, a burst that opens svcd's overflow connections at once had some refused (EAGAIN),
# and the request behind each failed with a 500.
pg_up() {
  if [ -n "${PG_EXISTING_URL:-}" ]; then pg_existing; return; fi
  command -v psql >/dev/null || { log "psql is missing (apt-get install postgresql-client)"; return 1; }
  PG_DB=svcd_bench_$(basename "$WORK" | tr -dc 'a-zA-Z0-9' | tr 'A-Z' 'a-z')
  local hostport=${PG_ADMIN_URL#*@}
  hostport=${hostport%%/*}
  local host=${hostport%%:*} port=${hostport##*:}
  [ "$port" = "$hostport" ] && port=5432
  local dir=${PG_SOCKET_DIR:-/var/run/postgresql}
  if { [ "$host" = 127.0.0.1 ] || [ "$host" = localhost ]; } && [ -S "$dir/.s.PGSQL.$port" ] &&
    runuser -u postgres -- psql -qAt -h "$dir" -p "$port" -d postgres -c 'select 1' >/dev/null 2>&1; then
    local as_postgres=(runuser -u postgres -- psql -qAt -h "$dir" -p "$port" -d postgres -v ON_ERROR_STOP=1)
    if [ "$("${as_postgres[@]}" -c "select count(*) from pg_roles where rolname = 'root'")" = 0 ]; then
      "${as_postgres[@]}" -c "create role root login" || { log "cannot create role root"; PG_DB=""; return 1; }
      PG_ROLE_MADE=1
    fi
    "${as_postgres[@]}" -c "create database $PG_DB owner root" || { log "cannot create database $PG_DB"; PG_DB=""; return 1; }
    PG_URL="postgres://root@localhost:$port/$PG_DB?host=$dir"
    log "database $PG_DB on the local server, reached through its unix socket $dir/.s.PGSQL.$port (peer authentication as root)"
    return 0
  fi
  if ! command -v socat >/dev/null; then
    log "socat is not installed: apt-get install -y socat"
    DEBIAN_FRONTEND=noninteractive apt-get install -y socat >"$WORK/apt-socat.log" 2>&1 || { log "could not install socat"; return 1; }
  fi
  psql -q "$PG_ADMIN_URL" -c "create database $PG_DB" || { log "cannot create database $PG_DB on $PG_ADMIN_URL"; PG_DB=""; return 1; }
  mkdir -p "$WORK/pg"
  socat "UNIX-LISTEN:$WORK/pg/.s.PGSQL.5432,fork,mode=0777,backlog=512" "TCP:$hostport" &
  PG_RELAY_PID=$!
  local creds=${PG_ADMIN_URL#*://}
  creds=${creds%%@*}
  PG_URL="postgres://$creds@localhost/$PG_DB?host=$WORK/pg"
  log "database $PG_DB on $hostport, reached through $WORK/pg/.s.PGSQL.5432 (socat relay, pid $PG_RELAY_PID: a process hop per message)"
}
# An existing database (DATABASE_URL, an operator's server): used as it is, never created nor dropped. A URL
# naming a socket directory (`?host=/dir`) is passed on unchanged (the daemon's namespace can reach a path);
# a TCP one goes through the socat relay, with the URL's credentials, database and other parameters.
pg_existing() {
  PG_DB=""
  case $PG_EXISTING_URL in
    *'?host=/'* | *'&host=/'*)
      PG_URL=$PG_EXISTING_URL
      log "existing database of DATABASE_URL, through the socket directory it names (not dropped after)"
      return 0 ;;
  esac
  if ! command -v socat >/dev/null; then
    log "socat is not installed: apt-get install -y socat"
    DEBIAN_FRONTEND=noninteractive apt-get install -y socat >"$WORK/apt-socat.log" 2>&1 || { log "could not install socat"; return 1; }
  fi
  local rest=${PG_EXISTING_URL#*://} creds="" query=""
  case $rest in *@*) creds=${rest%%@*}@; rest=${rest#*@} ;; esac
  case $rest in *\?*) query=${rest#*\?}; rest=${rest%%\?*} ;; esac
  local hostport=${rest%%/*} db=${rest#*/}
  [ "$db" = "$rest" ] && db=""
  case $hostport in *:*) ;; *) hostport=$hostport:5432 ;; esac
  mkdir -p "$WORK/pg"
  socat "UNIX-LISTEN:$WORK/pg/.s.PGSQL.5432,fork,mode=0777,backlog=512" "TCP:$hostport" &
  PG_RELAY_PID=$!
  PG_URL="postgres://${creds}localhost/$db?host=$WORK/pg${query:+&$query}"
  log "existing database of DATABASE_URL on $hostport, reached through $WORK/pg/.s.PGSQL.5432 (socat relay, pid $PG_RELAY_PID; not dropped after)"
}
pg_down() {
  if [ -n "$PG_RELAY_PID" ]; then kill "$PG_RELAY_PID" 2>/dev/null; wait "$PG_RELAY_PID" 2>/dev/null; PG_RELAY_PID=""; fi
  local dir=${PG_SOCKET_DIR:-/var/run/postgresql}
  if [ -n "$PG_DB" ]; then
    if [ -z "${PG_URL##postgres://root@*}" ]; then
      runuser -u postgres -- psql -q -h "$dir" -d postgres -c "drop database if exists $PG_DB with (force)" || log "could not drop database $PG_DB"
    else
      psql -q "$PG_ADMIN_URL" -c "drop database if exists $PG_DB with (force)" || log "could not drop database $PG_DB"
    fi
    PG_DB=""
  fi
  if [ "${PG_ROLE_MADE:-0}" = 1 ]; then
    runuser -u postgres -- psql -q -h "$dir" -d postgres -c "drop role if exists root" || log "could not drop role root"
    PG_ROLE_MADE=0
  fi
}
