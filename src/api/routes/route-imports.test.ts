/**
 * Route files parse, call one service or src/desired function, and render: they never reach the host
 * (src/host, node:fs) or query tables themselves (drizzle-orm, table objects of src/desired/schema).
 * The host is reached through ApiDeps (src/api/host-service.ts); types of rows may be imported.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { listImports, type ImportStatement } from '../../test-support/list-imports.ts';

export { listImports, type ImportStatement };

/** Why a route file may not make this import, or undefined when it may (pure). */
export function forbiddenImport(imp: ImportStatement): string | undefined {
  const s = imp.source;
  if (/(^|\/)host(\/|$)/.test(s) && s.startsWith('.'))
    return 'route files reach the host only through ApiDeps (src/api/host-service.ts)';
  if (s === 'node:fs' || s === 'node:fs/promises' || s === 'fs' || s === 'fs/promises')
    return 'route files do not touch host paths';
  if (/(^|\/)reconcilers(\/|$)/.test(s) && s.startsWith('.'))
    return 'route files only enqueue (ApiDeps.reconcile); kinds and their reads live in src/desired';
  if (s === 'drizzle-orm' || s.startsWith('drizzle-orm/')) return 'queries belong in src/desired';
  if (/(^|\/)desired\/schema(\/|$)/.test(s) && !imp.typeOnly)
    return 'only row types may come from src/desired/schema (queries belong in src/desired)';
  return undefined;
}

/** `file: import` for every forbidden import of every non-test .ts file in `dir`. */
export function routeImportViolations(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    if (!name.endsWith('.ts') || name.endsWith('.test.ts')) continue;
    for (const imp of listImports(readFileSync(path.join(dir, name), 'utf8'))) {
      const why = forbiddenImport(imp);
      if (why) out.push(`${name}: ${imp.text} (${why})`);
    }
  }
  return out;
}

const routesDir = path.dirname(fileURLToPath(import.meta.url));

test('no route file imports src/host, src/reconcilers, node:fs, drizzle-orm or a table of src/desired/schema', () => {
  assert.deepEqual(routeImportViolations(routesDir), []);
});

test('the check names what it refuses, and lets row types and services through', () => {
  const code = [
    "import fs from 'node:fs';",
    "import { readFile } from 'node:fs/promises';",
    "import { eq } from 'drizzle-orm';",
    "import { containers, type ContainerRow } from '../../desired/schema/index.ts';",
    "import type { ImageRow } from '../../desired/schema/index.ts';",
    "import { type ProfileRow } from '../../desired/schema/index.ts';",
    "import { containerState } from '../../host/lxc/lifecycle.ts';",
    "import type { ImageStore } from '../../host/images/create-image-store.ts';",
    "export { poolSpecOf } from '../../host/layout.ts';",
    "import type { ContainerHost } from '../host-service.ts';",
    "import { readContainer } from '../../desired/containers.ts';",
    "import { Readable } from 'node:stream';",
    "import { IMAGE_VOLUME_KIND } from '../../reconcilers/container/ensure-rootfs.ts';",
  ].join('\n');
  const refused = listImports(code)
    .filter((i) => forbiddenImport(i))
    .map((i) => i.source);
  assert.deepEqual(refused, [
    'node:fs',
    'node:fs/promises',
    'drizzle-orm',
    '../../desired/schema/index.ts',
    '../../host/lxc/lifecycle.ts',
    '../../host/images/create-image-store.ts',
    '../../host/layout.ts',
    '../../reconcilers/container/ensure-rootfs.ts',
  ]);
});
