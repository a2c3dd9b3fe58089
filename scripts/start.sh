#!/usr/bin/env bash
# Start svcd on the embedded database (a private PostgreSQL server in $SVCD_DIR/postgres, started and
# supervised by svcd), installing what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh --if-stale
# exec: the daemon takes this shell's pid; bin/svcd runs the build with plain node (no npm, no tsx in its
# tree) and sets the daemon's V8 flags.
exec bin/svcd daemon
