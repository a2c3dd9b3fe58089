#!/usr/bin/env bash
# Start svcd on the embedded database (a private PostgreSQL server in $SVCD_DIR/postgres, started and
# supervised by svcd), installing what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh --if-stale
# exec: the daemon takes this shell's pid; plain node runs the build (no npm, no tsx in its tree). A 2 MiB
# young generation: V8's default semi-spaces grow to 16 MiB each in a burst and are never given back
# (docs/database.md, "Embedded database and idle memory").
exec node --max-semi-space-size=2 dist/cli/svcd.js daemon
