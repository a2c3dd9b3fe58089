#!/usr/bin/env bash
# Start svcd on the embedded database (PGlite in $SVCD_DIR/database), installing what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh --if-stale
# exec: the daemon takes this shell's pid; plain node runs the build (no npm, no tsx in its tree).
exec node dist/cli/svcd.js daemon
