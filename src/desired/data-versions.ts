import { inArray } from 'drizzle-orm';
import { localWrites } from '../db/database-state.ts';
import { localVersion } from '../db/local-writes.ts';
import type { DbOrTx } from '../db/types.ts';
import { dataVersions } from './schema/index.ts';

/** Tables whose writes bump a counter (migration 0006 installs the triggers). */
export type VersionedTable = 'containers' | 'container_runtime' | 'profiles' | 'projects' | 'storage_pools' | 'storage_volumes';

/**
 * The combined version of `tables`: it changes whenever a committed write touched one of them. Read it
 * before the data it guards (see schema/data-versions.ts).
 */
export async function readDataVersion(db: DbOrTx, tables: readonly VersionedTable[]): Promise<string> {
  // An embedded database written only by this process: its own count of writes is the version (Database.localWrites).
  const writes = localWrites(db);
  return writes ? localVersion(writes, tables) : queryDataVersion(db, tables);
}

async function queryDataVersion(db: DbOrTx, tables: readonly VersionedTable[]): Promise<string> {
  const rows = await db.select().from(dataVersions).where(inArray(dataVersions.name, [...tables]));
  return rows
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .map((r) => `${r.name}:${r.version}`)
    .join(',');
}
