import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as schema from './index.ts';

/**
 * One writer per table (DESIGN.md): the modules that may insert, update or delete each table. A second
 * module is listed only where the table's doc comment (in this folder) says why it is safe.
 */
const WRITERS: Record<string, string[]> = {
  clusterMembers: ['cluster/members.ts'],
  containerBackups: ['desired/container-backups.ts'],
  certificates: ['desired/certificates.ts'],
  containers: ['desired/containers.ts', 'desired/move-container-rows.ts', 'desired/profiles.ts'],
  containerRuntime: ['desired/container-runtime.ts'],
  containerSnapshots: ['desired/container-snapshots.ts', 'desired/profiles.ts'],
  images: ['desired/images.ts'],
  imageAliases: ['desired/image-aliases.ts'],
  networks: ['desired/network-pending.ts', 'desired/networks.ts'],
  networkRuntime: ['observers/network-observer.ts'],
  operations: ['operations/operation-store.ts'],
  profiles: ['desired/profiles.ts', 'desired/projects.ts', 'desired/storage-pools.ts'],
  projects: ['desired/projects.ts'],
  reconcileStatus: ['desired/reconcile-facts.ts'],
  memberStatus: ['desired/member-status.ts'],
  poolRuntime: ['observers/pool-observer.ts', 'reconcilers/storage-pool/reconcile.ts'],
  serverConfig: ['desired/server-config.ts'],
  storagePools: ['desired/pool-pending.ts', 'desired/storage-pools.ts'],
  storageVolumes: ['desired/move-container-rows.ts', 'desired/storage-volumes.ts'],
  volumeSnapshots: ['desired/storage-volumes.ts', 'desired/volume-snapshots.ts'],
  uiLoginTokens: ['ui/ui-sessions.ts'],
  uiSessions: ['ui/ui-sessions.ts'],
};

const src = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const sources = (readdirSync(src, { recursive: true }) as string[]).filter(
  (f) =>
    f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.startsWith('test-support') && !f.includes('/component-suite/'),
);

test('every table is written only by the modules listed for it', () => {
  const tables = Object.entries(schema)
    .filter(([, v]) => typeof v === 'object' && v !== null && Symbol.for('drizzle:IsDrizzleTable') in v)
    .map(([k]) => k);
  assert.deepEqual(tables.toSorted(), Object.keys(WRITERS).toSorted(), 'every table has a writers entry');
  const found: Record<string, string[]> = Object.fromEntries(tables.map((t) => [t, []]));
  for (const f of sources) {
    const text = readFileSync(path.join(src, f), 'utf8');
    for (const t of tables) if (new RegExp(`\\.(insert|update|delete)\\(\\s*${t}\\b`).test(text)) found[t]!.push(f);
  }
  for (const t of tables) assert.deepEqual(found[t]!.toSorted(), WRITERS[t]!.toSorted(), `writers of ${t}`);
});
