#!/usr/bin/env bash
# Start svcd on the embedded database (PGlite in $SVCD_DIR/database), installing what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
exec node --import tsx src/main.ts
