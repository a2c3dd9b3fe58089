#!/usr/bin/env bash
# Run the whole test suite: type-check, unit and component tests, then the integration tests
# against a real PostgreSQL 15 (started here), PGlite, real LXC and the real lxc CLI / pylxd.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test

# PostgreSQL 15 for the database suite: a role that may create throw-away databases.
# (scripts/start.sh installs postgresql-15 without its system cluster: svcd runs a private one.)
pg_lsclusters -h 2>/dev/null | awk '$1=="15" && $2=="main"' | grep -q . || pg_createcluster 15 main >/dev/null
if ! pg_lsclusters -h 2>/dev/null | awk '$1=="15" && $2=="main"' | grep -q online; then
  pg_ctlcluster 15 main start
fi
for _ in $(seq 1 50); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 0.2; done
su postgres -c "psql -q -v ON_ERROR_STOP=1" <<'SQL'
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'svcd_test') THEN
    CREATE ROLE svcd_test LOGIN CREATEDB PASSWORD 'svcd_test';
  END IF;
END $$;
-- No pg_signal_backend for svcd_test: with it, the connection-loss suite's terminated backends behave otherwise.
REVOKE pg_signal_backend FROM svcd_test;
SQL
export SVCD_TEST_PG_URL="postgres://svcd_test:svcd_test@127.0.0.1:5432/postgres"

npx tsc --noEmit
# The dashboard's browser code has its own settings (DOM, JSX): src/ui/app/tsconfig.json.
npx tsc --noEmit -p src/ui/app
bash scripts/lint.sh

mapfile -t files < <(find src integration -name '*.test.ts' | sort)
exec node --import tsx --test --test-reporter=spec --test-timeout=300000 "${files[@]}"
