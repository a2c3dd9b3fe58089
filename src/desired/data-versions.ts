import { inArray } from 'drizzle-orm';
import { localWrites } from '../db/local-writes.ts';
import type { DbOrTx } from '../db/types.ts';
import { dataVersions } from './schema/index.ts';

/** Tables whose writes bump a counter (migration 0006 installs the triggers). */
export type VersionedTable = 'containers' | 'container_runtime' | 'profiles' | 'projects' | 'storage_pools' | 'storage_volumes';

/**
 * The combined version of `tables`: it changes whenever a committed write touched one of them. Read it
 * before the data it guards (see schema/data-versions.ts).
 */
export async function readDataVersion(db: DbOrTx, tables: readonly VersionedTable[]): Promise<string> {
  // An embedded database written only by this process: asked again only after a write (local-writes.ts).
  const writes = localWrites(db);
  if (!writes) return queryDataVersion(db, tables);
  const key = tables.join(',');
  let known = lastRead.get(db);
  if (!known) lastRead.set(db, (known = new Map()));
  const hit = known.get(key);
  if (hit && hit.count === writes.count) return hit.version;
  const count = writes.count;
  const version = await queryDataVersion(db, tables);
  known.set(key, { count, version });
  return version;
}

/** The last version read per database and table list, with the write count it was read at. */
const lastRead = new WeakMap<object, Map<string, { count: number; version: string }>>();

async function queryDataVersion(db: DbOrTx, tables: readonly VersionedTable[]): Promise<string> {
  const rows = await db.select().from(dataVersions).where(inArray(dataVersions.name, [...tables]));
  return rows
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .map((r) => `${r.name}:${r.version}`)
    .join(',');
}
