#!/usr/bin/env bash
# Run bench/api-bench.ts against svcd and, when it can run here, Debian's LXD 5.0.2, then print both
# side by side with the target verdicts (bench/compare-report.ts).
#
#   bash bench/compare.sh [--counts 0,50,200] [--engines embedded,pglite,postgres] [--no-lxd] [--database-url URL] [--no-fresh-fs] [--no-level] [--iterations 30] [--rest SECONDS]
#                         [--networks|--networks-only] [--proxy|--proxy-only] [--scale N [--scale-pools dir,btrfs] [--scale-lxd]]
#                         [--remote-images|--remote-images-only [--remote-rounds 3] [--remote-concurrent 50] [--remote-kind squashfs]]
#                         [-- <more api-bench options>]
#
# --networks also runs bench/network-bench.ts (a managed bridge, containers with a nic on it, leases,
# repair) against each daemon after api-bench; --networks-only runs only that. Each daemon then also
# gets a mount namespace whose /sys/class/net shows its own network namespace. --proxy also runs
# bench/proxy-bench.ts (a proxy device on 127.0.0.1 to busybox httpd and a sink in a container) in each
# daemon's network namespace, with its loopback up; --proxy-only runs only that. --scale N runs only
# bench/scale-bench.ts (N running busybox containers per pool: launch wall time, list p95, idle CPU and
# RSS of the daemon's tree, one resync pass) against svcd (log level info, for the resync line), and
# against lxd only with --scale-lxd; `-- <options>` then go to scale-bench (e.g. `-- --cpu-window 60`).
# --remote-images also runs bench/remote-image-bench.ts (launches from a simplestreams server it starts on
# 127.0.0.1 of the daemon's network namespace: uncached, cached, N concurrent) in that namespace, with its
# loopback up; --remote-images-only runs only that.
#
# --engines: svcd runs once per database engine, in this order (default all three): embedded (its private
# PostgreSQL server, the default: the main table shows it), pglite (PGlite in the daemon:
# SVCD_EMBEDDED_DATABASE=pglite, the engines table's reference) and postgres (DATABASE_URL), a throw-away database made for the run on the local PostgreSQL ($PG_ADMIN_URL, default
# postgres://svcd_test:svcd_test@127.0.0.1:5432/postgres; dropped after). The daemon's network namespace
# cannot reach 127.0.0.1 of the host, so it connects to the server's unix socket (peer authentication as
# root, Debian's way for local clients), or, for a server elsewhere, through a socat relay of the server's
# TCP port (bench/lib/local-postgres.sh). With DATABASE_URL set (or --database-url URL), the postgres
# engine runs on that database instead, as an operator's daemon would: it is neither created nor dropped,
# so what earlier runs left in it stays (a TCP URL goes through the socat relay; `?host=/dir` directly).
# The network and proxy benches run on the first engine only.
#
# Each daemon's state directory (database, containers, its dir pool) is a fresh ext4 made on a sparse
# 16 GiB loop file for its run (--no-fresh-fs: a plain directory on the temp dir's filesystem instead).
# Both daemons then start from the same clean filesystem, whatever this machine's disk went through.
#
# Before each daemon's run the page cache is written back and dropped (see level_host; --no-level: not).
# --iterations: the single-container rounds of api-bench (default 30: medians of 10 moved by 10-40% between
# runs).
#
# --rest waits that long before each daemon's run (default 0). On ext4 without a journal (this dev
# machine's root filesystem) an inode deleted in the last 60 s (300 s while its inode table block is
# dirty) is skipped by the allocator, so file creation slows down after mass deletes: with
# --no-fresh-fs, resting 300 s lets neither daemon inherit the other's (or an earlier run's) deletes.
#
# As root. Each daemon runs on a throw-away state directory under one temp dir, one daemon at a time
# (svcd on each engine first, then LXD), each in its own network namespace (loopback only, and down), so neither can
# send anything off the machine; the bench talks to them only through their unix sockets. LXD is installed with apt if missing and initialized from a preseed
# that defines only a `dir` storage pool named default and a default profile with a root disk: no
# network, no bridge, no NAT. Both get the same busybox image file. At the end (also on Ctrl-C or
# failure) both daemons are stopped, processes and mounts they left under the temp dir are cleaned up
# and the temp dir is removed.
set -uo pipefail

usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; }
rest() {
  if [ "$REST" -gt 0 ] 2>/dev/null; then log "resting ${REST} s before $1 (see --rest)"; sleep "$REST"; fi
  level_host "$1"
}
# What one daemon's run leaves on the host is billed to the next run unless it is cleared first: dirty page
# cache (PGlite never calls fsync; deleted containers' trees) that the kernel writes back while the next
# daemon runs, delaying its fsyncs and its I/O, and the memory cgroups of deleted containers, which linger
# (dying) while page cache is charged to them. Before each daemon's run (lxd's too) the page cache is
# written back and dropped: every daemon starts as cold as the others, with the dying cgroups of none
# (--no-level: skip this). It does not settle every order effect: svcd's delete on PostgreSQL ÷ PGlite
# measured 1.62x (PostgreSQL run second) and 1.07x (first) without it; 1.11x, 1.03x (second) and 1.51x
# (third of three engines) with it.
memcgs() { awk '$1 == "memory" {print $3}' /proc/cgroups; }
level_host() { # label
  [ "$LEVEL" = 1 ] || return 0
  local before after
  before=$(memcgs)
  sync
  echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || { log "cannot drop the page cache (not root?): $1 runs on what the last run left"; return 0; }
  sleep 1
  after=$(memcgs)
  log "before $1: page cache dropped, memory cgroups ${before:-?} -> ${after:-?}"
}

COUNTS=0,50,200
WANT_LXD=1
REST=0
LEVEL=1
ITERATIONS=30
FRESH_FS=1
FRESH_FS_SIZE=16G
NETWORKS=0
API_BENCH=1
PROXY=0
REMOTE=0
REMOTE_ROUNDS=3
REMOTE_CONCURRENT=50
REMOTE_KIND=squashfs
ENGINES=embedded,pglite,postgres
PG_ADMIN_URL=${PG_ADMIN_URL:-postgres://svcd_test:svcd_test@127.0.0.1:5432/postgres}
PG_EXISTING_URL=${DATABASE_URL:-}
# Only the postgres engine gets it (run_svcd): the embedded and pglite daemons must not inherit it.
unset DATABASE_URL
SCALE=""
SCALE_POOLS=dir,btrfs
SCALE_LXD=0
EXTRA=()
while [ $# -gt 0 ]; do
  case $1 in
    --counts) COUNTS=${2:?--counts needs a value}; shift 2 ;;
    --no-lxd) WANT_LXD=0; shift ;;
    --engines) ENGINES=${2:?--engines needs a value}; shift 2 ;;
    --database-url) PG_EXISTING_URL=${2:?--database-url needs a value}; shift 2 ;;
    --rest) REST=${2:?--rest needs a value}; shift 2 ;;
    --no-fresh-fs) FRESH_FS=0; shift ;;
    --no-level) LEVEL=0; shift ;;
    --iterations) ITERATIONS=${2:?--iterations needs a value}; shift 2 ;;
    --networks) NETWORKS=1; shift ;;
    --networks-only) NETWORKS=1; API_BENCH=0; shift ;;
    --proxy) PROXY=1; shift ;;
    --proxy-only) PROXY=1; API_BENCH=0; shift ;;
    --remote-images) REMOTE=1; shift ;;
    --remote-images-only) REMOTE=1; API_BENCH=0; shift ;;
    --remote-rounds) REMOTE_ROUNDS=${2:?--remote-rounds needs a value}; shift 2 ;;
    --remote-concurrent) REMOTE_CONCURRENT=${2:?--remote-concurrent needs a value}; shift 2 ;;
    --remote-kind) REMOTE_KIND=${2:?--remote-kind needs a value}; shift 2 ;;
    --scale) SCALE=${2:?--scale needs a count}; API_BENCH=0; shift 2 ;;
    --scale-pools) SCALE_POOLS=${2:?--scale-pools needs a value}; shift 2 ;;
    --scale-lxd) SCALE_LXD=1; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) echo "compare.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done

for e in ${ENGINES//,/ }; do
  case $e in pglite | embedded | postgres) ;; *) echo "compare.sh: unknown engine $e (pglite, embedded, postgres)" >&2; exit 2 ;; esac
done

[ -n "$SCALE" ] && WANT_LXD=$SCALE_LXD
# Without api-bench (--networks-only, --proxy-only, --scale) only the first engine has anything to run.
[ "$API_BENCH" = 1 ] || ENGINES=${ENGINES%%,*}
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO" || exit 2
# pg_up / pg_down: a throw-away database on the local PostgreSQL and how the daemon reaches it (bench/lib/local-postgres.sh).
# shellcheck source=bench/lib/local-postgres.sh
. "$REPO/bench/lib/local-postgres.sh"
log() { printf '[compare] %s\n' "$*" >&2; }

if [ "$(id -u)" != 0 ]; then log "needs root (both daemons run containers)"; exit 2; fi
for tool in node unshare setsid nsenter lxc-start; do
  command -v "$tool" >/dev/null || { log "$tool is missing (svcd needs lxc; see scripts/start.sh)"; exit 2; }
done

# Short path: unix socket paths are limited to 108 bytes.
WORK=$(mktemp -d /tmp/bench-compare.XXXXXX)
chmod 0711 "$WORK"
SVCD_STATE=$WORK/svcd
PG_DB=""
PG_RELAY_PID=""
PG_ROLE_MADE=0
LXD_STATE=$WORK/lxd
SVCD_PID=""
LXD_PID=""
LXD_NOTE=""

# GET <path> on a unix socket; prints the body; exit 0 on HTTP 200.
api_get() {
  node -e '
    const http = require("node:http");
    const req = http.get({ socketPath: process.argv[1], path: process.argv[2], agent: false }, (r) => {
      let b = "";
      r.on("data", (c) => (b += c));
      r.on("end", () => { process.stdout.write(b); process.exit(r.statusCode === 200 ? 0 : 1); });
    });
    req.on("error", () => process.exit(1));
    req.setTimeout(5000, () => req.destroy());
  ' "$1" "$2"
}
server_pid() {
  api_get "$1" /1.0 | node -e 'let s="";process.stdin.on("data",c=>s+=c).on("end",()=>{try{process.stdout.write(String(JSON.parse(s).metadata.environment.server_pid??""))}catch{}})'
}
wait_answer() { # socket, seconds, pid
  local i
  for ((i = 0; i < $2 * 5; i++)); do
    alive "$3" || return 1
    api_get "$1" /1.0 >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  return 1
}
alive() { # a live (not zombie) process
  [ -n "$1" ] || return 1
  local st
  st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "${st:0:1}" != Z ]
}
stop_pid() { # pid, seconds to wait after SIGTERM
  local pid=$1 i
  alive "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null
  for ((i = 0; i < $2 * 5; i++)); do alive "$pid" || return 0; sleep 0.2; done
  log "pid $pid did not stop after SIGTERM: SIGKILL"
  kill -KILL "$pid" 2>/dev/null
  sleep 0.5
}
# Pids of processes whose command line names a path under the work dir (lxc-monitord, lxc monitors,
# lxd forkstart): processes the daemons this script started left behind.
pids_under() {
  local d p cmd
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [ "$p" = "$$" ] && continue
    cmd=$(tr '\0' ' ' 2>/dev/null <"$d/cmdline") || continue
    case $cmd in *"$WORK/"*) alive "$p" && echo "$p" ;; esac
  done
}
mounts_under() {
  awk '{print $5}' /proc/self/mountinfo | grep -E "^$WORK(/|\$)" | sort -r
}

stop_svcd() {
  if [ -n "$SVCD_PID" ]; then
    log "stopping svcd (pid $SVCD_PID)"
    stop_pid "$SVCD_PID" 30
    wait "$SVCD_PID" 2>/dev/null
    SVCD_PID=""
  fi
  stop_leftover_containers "$SVCD_STATE/containers"
}

# Containers a daemon left running under an lxc path (there should be none: api-bench deletes what
# it made). They are found by their `[lxc monitor] <lxcpath> <name>` process; lxc-stop runs in that
# monitor's network namespace, where the container's abstract command socket lives.
stop_leftover_containers() {
  local p cmd name
  for p in $(pids_under); do
    cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline") || continue
    case $cmd in
      "[lxc monitor] $1 "*)
        name=${cmd#"[lxc monitor] $1 "}
        name=${name%% *}
        log "container $name was left running under $1: lxc-stop -k"
        nsenter --net="/proc/$p/ns/net" lxc-stop -k -P "$1" -n "$name" >/dev/null 2>&1
        ;;
    esac
  done
}

stop_lxd() {
  if [ -n "$LXD_PID" ]; then
    log "stopping lxd (pid $LXD_PID)"
    if alive "$LXD_PID"; then LXD_DIR=$LXD_STATE timeout 120 lxd shutdown >/dev/null 2>&1; fi
    stop_pid "$LXD_PID" 30
    wait "$LXD_PID" 2>/dev/null
    LXD_PID=""
  fi
  stop_leftover_containers "$LXD_STATE/containers"
}

cleanup_host() {
  local p m left
  left=$(pids_under)
  if [ -n "$left" ]; then
    for p in $left; do kill -TERM "$p" 2>/dev/null; done
    sleep 1
    for p in $(pids_under); do kill -KILL "$p" 2>/dev/null; done
  fi
  for m in $(mounts_under); do umount -l "$m" 2>/dev/null || log "could not unmount $m"; done
  if command -v losetup >/dev/null; then
    losetup -l -n -O NAME,BACK-FILE 2>/dev/null | awk -v w="$WORK/" 'index($2, w) == 1 {print $1}' | while read -r l; do losetup -d "$l"; done
  fi
}

# The state directory of a daemon: with FRESH_FS a new ext4 on a sparse loop file under the work
# dir, mounted there (cleanup_host unmounts it and detaches the loop device).
state_dir() { # dir
  if [ "$FRESH_FS" != 1 ]; then mkdir -m 0711 -p "$1"; return; fi
  if ! { truncate -s "$FRESH_FS_SIZE" "$1.img" && mkfs.ext4 -q -F "$1.img" && mkdir -p "$1" && mount -o loop "$1.img" "$1" && chmod 0711 "$1"; }; then
    log "could not make a fresh ext4 at $1 (try --no-fresh-fs)"
    exit 2
  fi
  log "fresh ext4 ($FRESH_FS_SIZE sparse loop file) mounted at $1"
}

finished=0
cleanup() {
  [ "$finished" = 1 ] && return
  finished=1
  set +e
  stop_svcd
  pg_down
  stop_lxd
  cleanup_host
  if [ -z "$(mounts_under)" ]; then
    rm -rf --one-file-system "$WORK"
  else
    log "mounts remain under $WORK; not removing it:"; mounts_under >&2
  fi
  local procs
  procs=$(pids_under)
  log "left behind: processes [${procs:-none}], mounts [$(mounts_under | tr '\n' ' ')], temp dir [$([ -e "$WORK" ] && echo "$WORK" || echo removed)]"
}
trap cleanup EXIT
# api-bench gets the same SIGINT (same process group) and deletes its containers; bash runs this
# trap once it has exited. The daemons are in their own sessions (setsid) and are stopped by cleanup.
trap 'log "interrupted"; exit 130' INT TERM

# How each daemon is started: in a network namespace of its own (loopback only, down); with --networks
# also in a mount namespace where a sysfs of that network namespace is bound over /sys/class/net and
# /sys/devices/virtual/net, so interfaces the daemon creates there show in /sys as they would on a host.
# There, a blackhole route to TEST-NET-1 (192.0.2.0/24, which drops what is sent to it) makes the main
# routing table exist, as it does on any host: LXD's network create flushes its static routes there and
# fails with "FIB table does not exist" on a namespace that has none.
# With --proxy (and no --networks) the namespace's loopback is brought up: the proxies listen on 127.0.0.1 there.
NS_WRAP=(unshare --net)
# shellcheck disable=SC2016
{ [ "$PROXY" = 1 ] || [ "$REMOTE" = 1 ]; } && NS_WRAP=(unshare --net sh -c 'ip link set lo up && exec "$@"' netns-lo)
if [ "$NETWORKS" = 1 ]; then
  # shellcheck disable=SC2016
  NS_WRAP=(unshare --net --mount --propagation private sh -c 'ip link set lo up && ip route add blackhole 192.0.2.0/24 && m=$(mktemp -d) && mount -t sysfs sysfs "$m" && mount --bind "$m/class/net" /sys/class/net && mount --bind "$m/devices/virtual/net" /sys/devices/virtual/net && exec "$@"' netns-sysfs)
fi

run_net_bench() { # label socket pid json
  [ "$NETWORKS" = 1 ] || return 0
  node --import tsx "$REPO/bench/network-bench.ts" --socket "$2" --pid "$3" --image-file "$IMAGE" --label "$1" --json "$4"
  local rc=$?
  [ $rc = 0 ] || log "network-bench against $1 exited with $rc"
  return 0
}

run_proxy_bench() { # label socket pid json
  [ "$PROXY" = 1 ] || return 0
  nsenter --net="/proc/$3/ns/net" node --import tsx "$REPO/bench/proxy-bench.ts" --socket "$2" --image-file "$IMAGE" --label "$1" --json "$4"
  local rc=$?
  [ $rc = 0 ] || log "proxy-bench against $1 exited with $rc"
  return 0
}

run_remote_bench() { # label socket pid json
  [ "$REMOTE" = 1 ] || return 0
  nsenter --net="/proc/$3/ns/net" node --import tsx "$REPO/bench/remote-image-bench.ts" --socket "$2" --label "$1" --json "$4" \
    --rounds "$REMOTE_ROUNDS" --concurrent "$REMOTE_CONCURRENT" --kind "$REMOTE_KIND"
  local rc=$?
  [ $rc = 0 ] || log "remote-image-bench against $1 exited with $rc"
  return 0
}

run_scale_bench() { # label socket pid json [daemon log]
  [ -n "$SCALE" ] || return 0
  node --import tsx "$REPO/bench/scale-bench.ts" --socket "$2" --pid "$3" --image-file "$IMAGE" --n "$SCALE" --pools "$SCALE_POOLS" \
    --label "$1" --json "$4" ${5:+--log "$5"} ${EXTRA[@]+"${EXTRA[@]}"}
  local rc=$?
  [ $rc = 0 ] || log "scale-bench against $1 exited with $rc"
  return 0
}

run_bench() { # label socket pid json
  [ "$API_BENCH" = 1 ] || return 0
  node --import tsx "$REPO/bench/api-bench.ts" --socket "$2" --pid "$3" --image-file "$IMAGE" --counts "$COUNTS" \
    --iterations "$ITERATIONS" --label "$1" --json "$4" ${EXTRA[@]+"${EXTRA[@]}"}
  local rc=$?
  [ $rc = 0 ] || log "api-bench against $1 exited with $rc"
  return 0
}

# ---------------------------------------------------------------------------------------------
log "work dir $WORK"
read -r L1 L5 L15 _ </proc/loadavg
log "load average $L1 $L5 $L15 on $(nproc) cores"
case $L1 in 0.* | 1.[0-4]*) ;; *) log "warning: the machine is busy; the figures of both daemons will be noisy" ;; esac
log "building the busybox image (one file for both servers)"
IMAGE=$(node --import tsx "$REPO/bench/build-image.ts" "$WORK/image" | tail -n 1)
[ -f "$IMAGE" ] || { log "could not build the image"; exit 1; }

# --- svcd -------------------------------------------------------------------------------------
# The built daemon (dist/), as scripts/start.sh runs it.
(cd "$REPO" && bash scripts/build.sh --if-stale) || { log "could not build svcd"; exit 1; }
FIRST_ENGINE=""
run_svcd() { # engine
  rest "svcd ($1)"
  SVCD_STATE=$WORK/svcd-$1
  local env=(SVCD_DIR="$SVCD_STATE" SVCD_LOG_LEVEL="$([ -n "$SCALE" ] && echo "${SCALE_LOG_LEVEL:-info}" || echo warn)") what
  case $1 in
    pglite) env+=(SVCD_EMBEDDED_DATABASE=pglite) what=PGlite ;;
    embedded) env+=(SVCD_EMBEDDED_DATABASE=postgres) what="its private PostgreSQL server (the default)" ;;
    postgres)
      pg_up || return 0
      env+=(DATABASE_URL="$PG_URL")
      what="PostgreSQL database ${PG_DB:-of DATABASE_URL}" ;;
  esac
  state_dir "$SVCD_STATE"
  log "starting svcd on $SVCD_STATE ($what), in a network namespace of its own"
  # The built daemon, started as scripts/start.sh and the systemd unit start it (bin/svcd: its V8 flags).
  env "${env[@]}" setsid "${NS_WRAP[@]}" "$REPO/bin/svcd" daemon >"$WORK/svcd-$1.log" 2>&1 &
  SVCD_PID=$!
  if ! wait_answer "$SVCD_STATE/unix.socket" 90 "$SVCD_PID"; then
    log "svcd ($1) did not answer on $SVCD_STATE/unix.socket:"; tail -n 20 "$WORK/svcd-$1.log" >&2
    stop_svcd; pg_down; cleanup_host
    return 0
  fi
  pid=$(server_pid "$SVCD_STATE/unix.socket")
  [ -n "$pid" ] && [ "$pid" != "$SVCD_PID" ] && log "svcd says its pid is $pid (started as $SVCD_PID)" && SVCD_PID=$pid
  echo
  run_bench "svcd-$1" "$SVCD_STATE/unix.socket" "$SVCD_PID" "$WORK/svcd-$1.json"
  if [ -z "$FIRST_ENGINE" ]; then
    FIRST_ENGINE=$1
    run_net_bench svcd "$SVCD_STATE/unix.socket" "$SVCD_PID" "$WORK/svcd-net.json"
    run_proxy_bench svcd "$SVCD_STATE/unix.socket" "$SVCD_PID" "$WORK/svcd-proxy.json"
    run_remote_bench svcd "$SVCD_STATE/unix.socket" "$SVCD_PID" "$WORK/svcd-remote.json"
    run_scale_bench svcd "$SVCD_STATE/unix.socket" "$SVCD_PID" "$WORK/svcd-scale.json" "$WORK/svcd-$1.log"
  fi
  # What svcd logged at warn level or above during the run, by message (its log goes with the temp dir).
node -e '
  const lines = require("node:fs").readFileSync(process.argv[1], "utf8").split("\n");
  const seen = new Map();
  for (const l of lines) {
    let j; try { j = JSON.parse(l); } catch { if (l.trim()) j = { level: 50, msg: l }; else continue; }
    if (!(j.level >= 40)) continue;
    const text = `${j.level >= 50 ? "error" : "warn"}: ${j.msg ?? ""}${j.err?.message ? ` — ${j.err.message}` : ""}`
      .replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, "<id>").replace(/\/tmp\/bench-compare\.[^/ ]+/g, "$WORK").slice(0, 700);
    seen.set(text, (seen.get(text) ?? 0) + 1);
  }
  if (seen.size) console.error(`[compare] svcd (${process.argv[2]}) logged ${[...seen.values()].reduce((a, b) => a + b, 0)} warning/error line(s):`);
  for (const [t, n] of [...seen].sort((a, b) => b[1] - a[1]).slice(0, 8)) console.error(`  ${n}x ${t}`);
' "$WORK/svcd-$1.log" "$1"
  stop_svcd
  pg_down
  cleanup_host
}
for engine in ${ENGINES//,/ }; do run_svcd "$engine"; done

# --- lxd --------------------------------------------------------------------------------------
if [ "$WANT_LXD" = 1 ]; then
  rest lxd
  if ! command -v lxd >/dev/null; then
    log "lxd is not installed: apt-get install -y lxd (may pull dependencies)"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y lxd >"$WORK/apt.log" 2>&1; then
      LXD_NOTE="apt-get install -y lxd failed: $(tail -n 1 "$WORK/apt.log")"
    fi
  fi
  if [ -z "$LXD_NOTE" ] && ! command -v lxd >/dev/null; then LXD_NOTE="no lxd binary after installing"; fi
  if [ -z "$LXD_NOTE" ]; then
    LXD_VERSION=$(lxd --version 2>/dev/null)
    case $LXD_VERSION in 5.0.2*) ;; *) log "note: lxd is $LXD_VERSION, the comparison is meant for Debian's 5.0.2" ;; esac
    state_dir "$LXD_STATE"
    log "starting lxd $LXD_VERSION on $LXD_STATE, in a network namespace of its own"
    LXD_DIR=$LXD_STATE setsid "${NS_WRAP[@]}" lxd --group root --logfile "$WORK/lxd.log" >"$WORK/lxd.out" 2>&1 &
    LXD_PID=$!
    if ! LXD_DIR=$LXD_STATE timeout 90 lxd waitready --timeout 60 >/dev/null 2>&1 || ! alive "$LXD_PID"; then
      LXD_NOTE="lxd did not start: $(tail -n 3 "$WORK/lxd.out" "$WORK/lxd.log" 2>/dev/null | tr '\n' ' ' | cut -c1-300)"
    fi
  fi
  if [ -z "$LXD_NOTE" ]; then
    # Only a dir pool and a default profile with a root disk: no network of any kind.
    if ! LXD_DIR=$LXD_STATE lxd init --preseed >"$WORK/lxd-init.log" 2>&1 <<'EOF'
config: {}
networks: []
storage_pools:
- name: default
  driver: dir
  config: {}
profiles:
- name: default
  description: api-bench profile (root disk only, no network)
  config: {}
  devices:
    root:
      type: disk
      path: /
      pool: default
EOF
    then
      LXD_NOTE="lxd init --preseed failed: $(tail -n 2 "$WORK/lxd-init.log" | tr '\n' ' ')"
    fi
  fi
  if [ -z "$LXD_NOTE" ]; then
    pid=$(server_pid "$LXD_STATE/unix.socket")
    [ -n "$pid" ] && [ "$pid" != "$LXD_PID" ] && log "lxd says its pid is $pid (started as $LXD_PID)" && LXD_PID=$pid
    echo
    run_bench lxd "$LXD_STATE/unix.socket" "$LXD_PID" "$WORK/lxd.json"
    run_net_bench lxd "$LXD_STATE/unix.socket" "$LXD_PID" "$WORK/lxd-net.json"
    run_proxy_bench lxd "$LXD_STATE/unix.socket" "$LXD_PID" "$WORK/lxd-proxy.json"
    run_remote_bench lxd "$LXD_STATE/unix.socket" "$LXD_PID" "$WORK/lxd-remote.json"
    run_scale_bench lxd "$LXD_STATE/unix.socket" "$LXD_PID" "$WORK/lxd-scale.json"
    [ "$API_BENCH" = 0 ] || [ -s "$WORK/lxd.json" ] || LXD_NOTE="api-bench against lxd produced no results"
  fi
  [ -n "$LXD_NOTE" ] && log "lxd: $LXD_NOTE"
  stop_lxd
  cleanup_host
else
  LXD_NOTE="skipped (--no-lxd)"
fi

# --- report -----------------------------------------------------------------------------------
echo
# The main table shows svcd's first engine (the default, its private server); with two or more, the engines table follows.
MAIN=""
for e in ${ENGINES//,/ }; do [ -z "$MAIN" ] && [ -s "$WORK/svcd-$e.json" ] && MAIN=$WORK/svcd-$e.json; done
REPORT=()
engine_name() { case $1 in pglite) echo PGlite ;; embedded) echo "private server" ;; postgres) echo PostgreSQL ;; esac; }
n_engines=0
# PGlite first: the reference of the engines table.
for e in pglite ${ENGINES//,/ }; do
  case " ${REPORT[*]} " in *"$WORK/svcd-$e.json"*) continue ;; esac
  [[ ",$ENGINES," == *",$e,"* ]] && [ -s "$WORK/svcd-$e.json" ] && REPORT+=(--engine "$(engine_name "$e")=$WORK/svcd-$e.json") && n_engines=$((n_engines + 1))
done
[ "$n_engines" -ge 2 ] || REPORT=()
if [ -n "$MAIN" ]; then
  if [ -s "$WORK/lxd.json" ]; then
    node --import tsx "$REPO/bench/compare-report.ts" "$MAIN" "$WORK/lxd.json" "${REPORT[@]}"
  else
    node --import tsx "$REPO/bench/compare-report.ts" "$MAIN" --lxd-note "$LXD_NOTE" "${REPORT[@]}"
  fi
elif [ "$API_BENCH" = 1 ]; then
  log "no svcd results (see above)"
fi
if [ "$NETWORKS" = 1 ] && [ -s "$WORK/svcd-net.json" ]; then
  node --import tsx "$REPO/bench/network-report.ts" "$WORK/svcd-net.json" "$WORK/lxd-net.json"
fi
if [ -n "$SCALE" ] && [ -s "$WORK/svcd-scale.json" ]; then
  node --import tsx "$REPO/bench/scale-report.ts" "$WORK/svcd-scale.json" "$WORK/lxd-scale.json"
fi
if [ "$PROXY" = 1 ] && [ -s "$WORK/svcd-proxy.json" ]; then
  node --import tsx "$REPO/bench/proxy-report.ts" "$WORK/svcd-proxy.json" "$WORK/lxd-proxy.json"
fi
if [ "$REMOTE" = 1 ] && { [ -s "$WORK/svcd-remote.json" ] || [ -s "$WORK/lxd-remote.json" ]; }; then
  node --import tsx "$REPO/bench/remote-image-report.ts" "$WORK/svcd-remote.json" "$WORK/lxd-remote.json"
fi
