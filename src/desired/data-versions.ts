import { inArray } from 'drizzle-orm';
import { databaseStateOf, localWrites, notifiedVersion } from '../db/database-state.ts';
import { localVersion } from '../db/local-writes.ts';
import type { DbOrTx } from '../db/types.ts';
import { dataVersions } from './schema/index.ts';

/** Tables whose writes bump a counter and notify (migrations 0006, 0007 and 0009 install the triggers). */
export const VERSIONED_TABLES = ['containers', 'container_runtime', 'profiles', 'projects', 'storage_pools', 'storage_volumes', 'images', 'image_aliases', 'container_snapshots', 'networks'] as const;
export type VersionedTable = (typeof VERSIONED_TABLES)[number];

/**
 * The combined version of `tables`: it changes whenever a committed write touched one of them. Read it
 * before the data it guards (see schema/data-versions.ts).
 */
export async function readDataVersion(db: DbOrTx, tables: readonly VersionedTable[]): Promise<string> {
  // An embedded database written only by this process: its own count of writes is the version (Database.localWrites).
  const writes = localWrites(db);
  if (writes) return localVersion(writes, tables);
  // PostgreSQL: notified commits and this process's own writes, while the listener hears every commit.
  return notifiedVersion(databaseStateOf(db)?.notified, tables) ?? queryDataVersion(db, tables);
}

async function queryDataVersion(db: DbOrTx, tables: readonly VersionedTable[]): Promise<string> {
  const rows = await db.select().from(dataVersions).where(inArray(dataVersions.name, [...tables]));
  return rows
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .map((r) => `${r.name}:${r.version}`)
    .join(',');
}
