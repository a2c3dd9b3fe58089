#!/usr/bin/env bash
# Compile src/ to dist/ (JavaScript plain node runs: tsc with rewriteRelativeImportExtensions,
# tsconfig.build.json). dist/ mirrors src/ one level below the checkout, as src/ does, so the paths
# the code resolves next to itself (drizzle/, .build/, package.json) hold
# from both. Built into dist.new/ and swapped in whole, so a running daemon's files are never half
# replaced. `--if-stale`: only when dist/ is missing or older than a source, a tsconfig, package.json
# or the lock file (scripts/start.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=dist/.built
if [ "${1:-}" = "--if-stale" ] && [ -f "$stamp" ] &&
  [ -z "$(find src tsconfig.json tsconfig.build.json package.json package-lock.json -newer "$stamp" -print -quit)" ]; then
  exit 0
fi
echo "svcd: building dist/" >&2
rm -rf dist.new dist.old
node node_modules/typescript/bin/tsc -p tsconfig.build.json --outDir dist.new
# The dashboard's bundle (src/ui/app, esbuild): served from dist/ui/assets/ by the daemon.
node dist.new/ui/build-ui-assets.js dist.new/ui/assets
# The bundle bin/svcd runs: svcd's own modules in a few files (its packages stay in node_modules), split where
# the CLI loads a verb. Node's loader then reads and links a handful of files at start instead of ~550.
node_modules/esbuild/bin/esbuild dist.new/cli/svcd.js --bundle --splitting --format=esm --platform=node \
  --target=node20 --packages=external --outdir=dist.new/bundle --log-level=warning
touch dist.new/.built
[ ! -d dist ] || mv dist dist.old
mv dist.new dist
rm -rf dist.old
