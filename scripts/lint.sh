#!/usr/bin/env bash
# The house checks, run by scripts/test.sh: Biome (format and lint of the TypeScript, biome.jsonc) and
# clang-format plus warnings-as-errors for the C helpers (.clang-format). `--fix` rewrites instead of checking.
set -euo pipefail
cd "$(dirname "$0")/.."
c_files=(src/host/native/*.c)
if [ "${1:-}" = "--fix" ]; then
  npx biome check --write .
  clang-format -i "${c_files[@]}"
  exit 0
fi
npx biome ci --error-on-warnings --colors=off .
clang-format --dry-run --Werror "${c_files[@]}"
for f in "${c_files[@]}"; do
  cc -Wall -Wextra -Werror -fsyntax-only "$f"
done
echo "lint: biome and clang-format clean, C helpers compile without a warning"
