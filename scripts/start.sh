#!/usr/bin/env bash
# Start svcd on the embedded database (a private PostgreSQL server in $SVCD_DIR/postgres, started and
# supervised by svcd), installing what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
exec node --import tsx src/main.ts
