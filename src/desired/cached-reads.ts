import { eq } from 'drizzle-orm';
import { PgTransaction } from 'drizzle-orm/pg-core';
import { databaseStateOf, localWrites, notifiedVersion } from '../db/database-state.ts';
import { localVersion } from '../db/local-writes.ts';
import type { DbOrTx } from '../db/types.ts';
import { readDataVersion, VERSIONED_TABLES, type VersionedTable } from './data-versions.ts';
import { resolveImage, type ImageSelector } from './images.ts';
import { readProject } from './projects.ts';
import { allContainerSnapshots } from './container-snapshots.ts';
import { containerSnapshots, networks, profiles, storagePools, type ContainerSnapshotRow } from './schema/index.ts';

/**
 * Reads of small, rarely written tables (profiles, pools), kept by the database until the data version
 * of what they read changes: a reconcile of each of 200 new containers then reads its profiles and
 * pool from memory. On PGlite the version is this process's own count of writes (no query); on
 * PostgreSQL the notified commits and its own writes (no query either; one small query instead of the
 * read while notifications cannot be trusted). Never inside a transaction, which must see
 * its own writes. The values are shared: callers must not change them. The cache is the database's
 * own (DatabaseState.reads, database-state.ts).
 */
export async function cachedRead<T>(
  db: DbOrTx,
  key: string,
  tables: readonly VersionedTable[],
  read: () => PromiseLike<T>,
): Promise<T> {
  if (db instanceof PgTransaction) return read();
  return remembered(db, key, await readDataVersion(db, tables), read);
}

/**
 * As cachedRead for any tables, on an embedded database (its own count of writes is the version); on
 * PostgreSQL only while notifications are heard and every table has a counter, else it just reads.
 */
export async function cachedLocalRead<T>(
  db: DbOrTx,
  key: string,
  tables: readonly string[],
  read: () => PromiseLike<T>,
): Promise<T> {
  if (db instanceof PgTransaction) return read();
  const writes = localWrites(db);
  const version = writes
    ? localVersion(writes, tables)
    : tables.every(isVersioned)
      ? notifiedVersion(databaseStateOf(db)?.notified, tables)
      : undefined;
  return version === undefined ? read() : remembered(db, key, version, read);
}

const isVersioned = (t: string): t is VersionedTable => (VERSIONED_TABLES as readonly string[]).includes(t);

function remembered<T>(db: DbOrTx, key: string, version: string, read: () => PromiseLike<T>): Promise<T> {
  const reads = databaseStateOf(db)?.reads;
  return reads ? (reads.get(key, version, read) as Promise<T>) : Promise.resolve(read());
}

/** All storage pools (a handful), read again only after a write of them. */
export const cachedPools = (db: DbOrTx) =>
  cachedRead(db, 'storage_pools', ['storage_pools'], () => db.select().from(storagePools));

/** All managed networks (a handful), read again only after a write of them. */
export const cachedNetworks = (db: DbOrTx) =>
  cachedRead(db, 'networks', ['networks'], () => db.select().from(networks));

/** All profiles of a (profile) project, read again only after a write of profiles or projects. */
export const cachedProfiles = (db: DbOrTx, project: string) =>
  cachedRead(db, `profiles\0${project}`, ['profiles', 'projects'], () =>
    db.select().from(profiles).where(eq(profiles.project, project)),
  );

/** A project's row (NotFoundError if there is none), read again only after a write of projects. */
export const cachedProject = (db: DbOrTx, name: string) =>
  cachedRead(db, `project\0${name}`, ['projects'], () => readProject(db, name));

/**
 * A container's snapshot rows (those marked for deletion too), oldest first. The containers that have any
 * are known per version of container_snapshots (on PostgreSQL: while notifications are heard): most containers have none,
 * and a reconcile of one costs no query.
 */
export async function cachedContainerSnapshots(db: DbOrTx, containerId: string): Promise<ContainerSnapshotRow[]> {
  if (
    (!localWrites(db) && !notifiedVersion(databaseStateOf(db)?.notified, ['container_snapshots'])) ||
    db instanceof PgTransaction
  )
    return allContainerSnapshots(db, containerId);
  const owners = await cachedLocalRead(db, 'snapshot owners', ['container_snapshots'], async () => {
    const rows = await db.selectDistinct({ id: containerSnapshots.containerId }).from(containerSnapshots);
    return new Set(rows.map((r) => r.id));
  });
  return owners.has(containerId) ? allContainerSnapshots(db, containerId) : [];
}

/**
 * The image an image source (alias, fingerprint or properties) picks in a project, its fingerprint and
 * properties, read again only after a write of images, aliases or projects (on PostgreSQL: while
 * notifications are heard).
 */
export const cachedImageChoice = (
  db: DbOrTx,
  project: string,
  sel: ImageSelector,
): Promise<{ fingerprint: string; properties: Record<string, string> }> =>
  cachedLocalRead(
    db,
    `image source\0${project}\0${JSON.stringify([sel.alias, sel.fingerprint, sel.properties])}`,
    ['images', 'image_aliases', 'projects'],
    async () => {
      const img = await resolveImage(db, project, sel);
      return { fingerprint: img.fingerprint, properties: img.properties };
    },
  );
