import { databaseStateOf, localWrites, notifiedVersion } from '../db/database-state.ts';
import { localVersion } from '../db/local-writes.ts';
import type { DbOrTx } from '../db/types.ts';

/** Tables whose writes notify (migrations 0006, 0007, 0009 and 0010 install the triggers; 0011 leaves only the notification). */
export const VERSIONED_TABLES = [
  'containers',
  'container_runtime',
  'profiles',
  'projects',
  'storage_pools',
  'storage_volumes',
  'images',
  'image_aliases',
  'container_snapshots',
  'networks',
] as const;
export type VersionedTable = (typeof VERSIONED_TABLES)[number];

/** Versions handed out while no version can be known: each is new, so nothing is answered from a cache. */
let unknownVersions = 0;

/**
 * The combined version of `tables`: it changes whenever a committed write touched one of them. Read it
 * before the data it guards. When it cannot be known (PostgreSQL while svcd's LISTEN connection is lost;
 * inside a transaction) every call gets a new one: callers keeping data per version read it again.
 */
export async function readDataVersion(db: DbOrTx, tables: readonly VersionedTable[]): Promise<string> {
  // An embedded database written only by this process: its own count of writes is the version (Database.localWrites).
  const writes = localWrites(db);
  if (writes) return localVersion(writes, tables);
  // PostgreSQL: notified commits and this process's own writes, while the listener hears every commit.
  return notifiedVersion(databaseStateOf(db)?.notified, tables) ?? `unknown ${++unknownVersions}`;
}
