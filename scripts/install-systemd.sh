#!/usr/bin/env bash
# Install svcd as a systemd service from this checkout (root): install what is missing, build dist/
# when stale, link the `svcd` command and the ExecStop script under the prefix, write
# packaging/svcd.service with the real paths, then `systemctl daemon-reload` and `enable`.
#   --prefix DIR      where bin/svcd and lib/svcd/ are linked (default /usr/local)
#   --unit-dir DIR    where the unit is written (default /etc/systemd/system)
#   --state-dir DIR   the unit's SVCD_DIR (default /var/lib/svcd)
#   --no-deps         skip scripts/install-deps.sh
#   --no-systemctl    write the files only (also what happens when systemd is not running)
#   --now             also start (or restart) the service
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
prefix=/usr/local unit_dir=/etc/systemd/system state_dir=/var/lib/svcd deps=1 systemctl=1 now=0
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=$2; shift ;;
    --unit-dir) unit_dir=$2; shift ;;
    --state-dir) state_dir=$2; shift ;;
    --no-deps) deps=0 ;;
    --no-systemctl) systemctl=0 ;;
    --now) now=1 ;;
    *) echo "usage: $0 [--prefix DIR] [--unit-dir DIR] [--state-dir DIR] [--no-deps] [--no-systemctl] [--now]" >&2; exit 2 ;;
  esac
  shift
done
for d in "$prefix" "$unit_dir" "$state_dir"; do
  case "$d" in /*) ;; *) echo "svcd: $d is not an absolute path" >&2; exit 2 ;; esac
done

[ "$deps" = 0 ] || bash scripts/install-deps.sh
bash scripts/build.sh --if-stale
install -d "$prefix/bin" "$prefix/lib/svcd" "$unit_dir"
ln -sfn "$root/bin/svcd" "$prefix/bin/svcd"
ln -sfn "$root/packaging/svcd-host-shutdown" "$prefix/lib/svcd/svcd-host-shutdown"
sed -e "s#^ExecStart=/usr/local/#ExecStart=$prefix/#" -e "s#^ExecStop=/usr/local/#ExecStop=$prefix/#" \
  -e "s#^Environment=SVCD_DIR=.*#Environment=SVCD_DIR=$state_dir#" packaging/svcd.service >"$unit_dir/svcd.service.tmp"
mv "$unit_dir/svcd.service.tmp" "$unit_dir/svcd.service"
echo "svcd: wrote $unit_dir/svcd.service (ExecStart=$prefix/bin/svcd daemon, SVCD_DIR=$state_dir)" >&2

if [ "$systemctl" = 1 ] && [ -d /run/systemd/system ]; then
  systemctl daemon-reload
  systemctl enable svcd.service
  [ "$now" = 0 ] || systemctl restart svcd.service
elif [ "$systemctl" = 1 ]; then
  echo "svcd: systemd is not running here: skipped daemon-reload and enable" >&2
fi
