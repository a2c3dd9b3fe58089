#!/usr/bin/env bash
# Install what svcd needs on a Debian 12 host, idempotently (root). `--test` adds what the test
# suite needs (PostgreSQL 15, pylxd, lxd-tools, tmux, clang-format for scripts/lint.sh, Debian's LXD 5.0.2
# as the other side of migration and apply tests, and chromium for the dashboard's browser tests).
set -euo pipefail
cd "$(dirname "$0")/.."

# gcc and libc6-dev build the C helpers in src/host/native/: the spawn helper (svcd-spawn.c), the mount
# helper (svcd-mountns.c), the proxy forwarder (svcd-proxy.c) and sd_notify (svcd-notify.c). No npm
# module has native code.
# lxd-client is the `lxc` command-line client that talks to svcd (the README's first commands): the
# client alone, it depends on libc6 only and brings no LXD daemon. postgresql-15 provides the server
# binaries of svcd's embedded database (a private server in $SVCD_DIR/postgres, started by svcd).
# openssl makes svcd's certificate at its first start (src/tls/ensure-server-certificate.ts).
packages=(postgresql-15 lxc lxd-client busybox-static btrfs-progs dnsmasq-base nftables uidmap iproute2 acl rsync socat util-linux squashfs-tools xz-utils zstd bzip2 openssl gcc libc6-dev python3)
if [ "${1:-}" = "--test" ]; then
  packages+=(python3-pylxd lxd-tools ansible tmux curl clang-format lxd chromium)
fi
command -v node >/dev/null 2>&1 || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# svcd runs its own server: Debian's system cluster (15/main on port 5432) is made only for the test
# suite (test.sh creates it when it is missing).
if [ "${1:-}" != "--test" ] && ! dpkg-query -W -f='${Status}' postgresql-common 2>/dev/null | grep -q "install ok installed" && [ ! -e /etc/postgresql-common/createcluster.conf ]; then
  mkdir -p /etc/postgresql-common
  echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.conf
fi
# Unprivileged containers map their root to a range of the host's ids owned by root. Written before any
# package is installed: Debian's lxd (its preinst) gives root a range of its own after the existing ones,
# and svcd uses root's first range.
for f in /etc/subuid /etc/subgid; do
  grep -q '^root:' "$f" 2>/dev/null || echo 'root:1000000:1000000000' >> "$f"
done

if [ "${#missing[@]}" -gt 0 ]; then
  echo "svcd: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi


# The mount helper: adds and removes devices in running containers (node cannot enter a mount namespace).
if [ ! -x .build/svcd-mountns ] || [ src/host/native/svcd-mountns.c -nt .build/svcd-mountns ]; then
  mkdir -p .build
  cc -O2 -Wall -Wextra -Werror -o .build/svcd-mountns.tmp src/host/native/svcd-mountns.c
  mv .build/svcd-mountns.tmp .build/svcd-mountns
fi
if [ ! -x .build/svcd-proxy ] || [ src/host/native/svcd-proxy.c -nt .build/svcd-proxy ]; then
  mkdir -p .build
  cc -O2 -Wall -Wextra -Werror -o .build/svcd-proxy.tmp src/host/native/svcd-proxy.c
  mv .build/svcd-proxy.tmp .build/svcd-proxy
fi
# The spawn helper: runs every host command, so that svcd's own large process is never forked for one.
if [ ! -x .build/svcd-spawn ] || [ src/host/native/svcd-spawn.c -nt .build/svcd-spawn ]; then
  mkdir -p .build
  cc -O2 -Wall -Wextra -Werror -o .build/svcd-spawn.tmp src/host/native/svcd-spawn.c -lutil
  mv .build/svcd-spawn.tmp .build/svcd-spawn
fi
# The id shifter: a root filesystem received from another host moves from its map to svcd's (container ids).
if [ ! -x .build/svcd-shift ] || [ src/host/native/svcd-shift.c -nt .build/svcd-shift ]; then
  mkdir -p .build
  cc -O2 -Wall -Wextra -Werror -o .build/svcd-shift.tmp src/host/native/svcd-shift.c
  mv .build/svcd-shift.tmp .build/svcd-shift
fi
# sd_notify for systemd's Type=notify (node cannot send unix datagrams with credentials).
if [ ! -x .build/svcd-notify ] || [ src/host/native/svcd-notify.c -nt .build/svcd-notify ]; then
  mkdir -p .build
  cc -O2 -Wall -Wextra -Werror -o .build/svcd-notify.tmp src/host/native/svcd-notify.c
  mv .build/svcd-notify.tmp .build/svcd-notify
fi

# Node modules: install when missing, or when the lock file or a patch of patches/ (applied by npm ci's
# postinstall, patch-package) changed since the last install. A symlinked node_modules is another checkout's (a
# worktree sharing the main one's): never reinstall through it, npm ci would empty the shared directory under
# every checkout using it.
patched_since() { [ -n "$(find patches -type f -newer node_modules/.package-lock.json -print -quit 2>/dev/null)" ]; }
if [ -L node_modules ]; then
  [ ! package-lock.json -nt node_modules/.package-lock.json ] || echo "svcd: node_modules is a symlink to $(readlink node_modules): not reinstalling it" >&2
elif [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ] || patched_since; then
  npm ci --no-audit --no-fund --loglevel=error
fi
