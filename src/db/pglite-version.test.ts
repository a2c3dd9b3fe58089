import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { PGLITE_PATCHED_VERSION } from './pglite-prepared.ts';

/** The version of the installed @electric-sql/pglite (its package.json is not exported: found beside its entry). */
async function installedPgliteVersion(): Promise<string> {
  const entry = fileURLToPath(import.meta.resolve('@electric-sql/pglite'));
  const manifest = `${entry.slice(0, entry.lastIndexOf('/dist/'))}/package.json`;
  const { name, version } = JSON.parse(await readFile(manifest, 'utf8')) as { name: string; version: string };
  assert.equal(name, '@electric-sql/pglite', `${manifest} is not PGlite's manifest`);
  return version;
}

test('the installed PGlite is the release pglite-prepared.ts patches, and package.json pins exactly it', async () => {
  const installed = await installedPgliteVersion();
  assert.equal(
    installed,
    PGLITE_PATCHED_VERSION,
    `PGlite ${installed} is installed but src/db/pglite-prepared.ts reaches into the private methods of ${PGLITE_PATCHED_VERSION}: check them, then update PGLITE_PATCHED_VERSION and the pin`,
  );
  const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  assert.equal(
    pkg.dependencies['@electric-sql/pglite'],
    PGLITE_PATCHED_VERSION,
    'package.json must pin PGlite exactly (no ^ or ~)',
  );
});
