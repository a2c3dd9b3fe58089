import { randomUUID } from 'node:crypto';
import { and, eq, isNull, ne, sql } from 'drizzle-orm';
import type { Db, DbOrTx, Tx } from '../db/types.ts';
import { validateConfig } from './config-keys.ts';
import { ConflictError, NotFoundError, StaleWriteError, ValidationError, isUniqueViolation } from './errors.ts';
import { describeUsers } from './used-by.ts';
import { validateName } from './names.ts';
import { storageVolumes, volumeSnapshots, type StoragePoolRow, type StorageVolumeRow } from './schema/index.ts';
import { volumeKeyTable } from './volume-keys.ts';
import { listSnapshots } from './volume-snapshots.ts';
import { livePool, validateVolumeName, volumeUsedBy } from './volume-reads.ts';
import { containers } from './schema/index.ts';

export const VOLUME_KIND = 'storage-volume';
export const VOLUME_TYPES = ['custom', 'container', 'image'] as const;

// The key table, the reads and the snapshots are files of their own; their importers find them here too.
export {
  listVolumes,
  readVolume,
  readVolumeById,
  validateVolumeName,
  volumeUrl,
  volumeUsedBy,
} from './volume-reads.ts';
export { volumeKeyTable } from './volume-keys.ts';
export {
  deleteSnapshotRow,
  insertSnapshot,
  listAllSnapshots,
  listSnapshots,
  markSnapshotDeleting,
  readSnapshot,
  renameSnapshot,
  updateSnapshotDescription,
} from './volume-snapshots.ts';

export interface VolumeCreate {
  pool: string;
  project: string;
  type: string;
  name: string;
  description?: string | undefined;
  config?: Record<string, string> | undefined;
  /** Copy from this volume (or one of its snapshots), and with `snapshots`, its snapshots too. */
  source?: { volumeId: string; snapshotId?: string } | undefined;
  copySnapshots?: boolean | undefined;
  /** Received from another server (src/migration): the volume and these snapshots are already on the pool. */
  received?: {
    id: string;
    snapshots: { id: string; name: string; description: string; config: Record<string, string>; createdAt: Date }[];
  };
  /** The member that will hold it (its name): only that member reconciles it. */
  location?: string | undefined;
}

/** Validate and insert a volume (its generation is 1); the reconciler creates it on the host. */
export async function insertVolume(
  db: DbOrTx,
  input: VolumeCreate,
  checkSize?: (pool: StoragePoolRow) => Promise<void>,
): Promise<StorageVolumeRow> {
  validateVolumeName(input.name);
  if (input.type !== 'custom')
    throw new ValidationError(`Only custom volumes can be created directly (got type "${input.type}")`);
  const pool = await livePool(db, input.pool);
  const config = { ...(input.config ?? {}) };
  validateConfig('storage volume', config, volumeKeyTable(pool.driver));
  if (!config.size && pool.config['volume.size']) config.size = pool.config['volume.size'];
  if (config.size && checkSize) await checkSize(pool);
  const id = input.received?.id ?? randomUUID();
  // A copy of a whole volume keeps its snapshots (as LXD does unless volume_only): new rows, mapped to the source's.
  const srcSnaps =
    input.source && !input.source.snapshotId && input.copySnapshots
      ? await listSnapshots(db, input.source.volumeId)
      : [];
  const mapped = srcSnaps.map((s) => ({ row: s, to: randomUUID() }));
  const source = input.source
    ? { ...input.source, ...(mapped.length ? { snapshots: mapped.map((m) => ({ from: m.row.id, to: m.to })) } : {}) }
    : null;
  try {
    const [row] = await db
      .insert(storageVolumes)
      .values({
        id,
        pool: input.pool,
        project: input.project,
        type: input.type,
        name: input.name,
        description: input.description ?? '',
        config,
        source,
        location: input.location ?? '',
      })
      .returning();
    const received = input.received?.snapshots ?? [];
    for (const r of received) validateName('Snapshot', r.name);
    if (received.length) await db.insert(volumeSnapshots).values(received.map((r) => ({ ...r, volumeId: id })));
    if (mapped.length)
      await db.insert(volumeSnapshots).values(
        mapped.map((m) => ({
          id: m.to,
          volumeId: id,
          name: m.row.name,
          description: m.row.description,
          config: m.row.config,
          createdAt: m.row.createdAt,
        })),
      );
    return row!;
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`Storage volume "${input.name}" already exists`);
    throw e;
  }
}

/** Bump a volume's generation with other changes, inside the caller's transaction. */
export async function bumpVolume(
  tx: DbOrTx,
  id: string,
  set: Partial<typeof storageVolumes.$inferInsert> = {},
): Promise<StorageVolumeRow> {
  try {
    const [row] = await tx
      .update(storageVolumes)
      .set({ ...set, generation: sql`${storageVolumes.generation} + 1` })
      .where(eq(storageVolumes.id, id))
      .returning();
    if (!row) throw new NotFoundError('Storage volume not found');
    return row;
  } catch (e) {
    if (isUniqueViolation(e))
      throw new ConflictError(
        `Storage volume "${set.name ?? ''}" already exists${set.pool ? ` in pool "${set.pool}"` : ''}`,
      );
    throw e;
  }
}

/**
 * A client's edit based on the row it read (`v.generation`): applied only if nothing was written
 * since (nor the volume marked for deletion), else StaleWriteError (the caller reads again).
 */
export async function bumpVolumeAt(
  tx: DbOrTx,
  v: StorageVolumeRow,
  set: Partial<typeof storageVolumes.$inferInsert>,
): Promise<StorageVolumeRow> {
  const [row] = await tx
    .update(storageVolumes)
    .set({ ...set, generation: sql`${storageVolumes.generation} + 1` })
    .where(
      and(eq(storageVolumes.id, v.id), eq(storageVolumes.generation, v.generation), isNull(storageVolumes.deletingAt)),
    )
    .returning();
  if (!row) throw new StaleWriteError(`Storage volume "${v.name}"`);
  return row;
}

/** Replace description and config of the volume as read (`v`): conditional on its generation (bumpVolumeAt). */
export async function updateVolumeConfig(
  db: Db,
  v: StorageVolumeRow,
  input: { description: string; config: Record<string, string> },
  checkSize?: (pool: StoragePoolRow) => Promise<void>,
): Promise<StorageVolumeRow> {
  const pool = await livePool(db, v.pool);
  validateConfig('storage volume', input.config, volumeKeyTable(pool.driver));
  if (input.config.size && input.config.size !== v.config.size && checkSize) await checkSize(pool);
  return bumpVolumeAt(db, v, { description: input.description, config: input.config });
}

async function assertUnused(db: DbOrTx, v: StorageVolumeRow, what: string): Promise<void> {
  const used = await volumeUsedBy(db, v);
  if (used.length)
    throw new ValidationError(`${what}: the storage volume "${v.name}" is still in use by ${describeUsers(used)}`);
}

export async function renameVolume(db: Db, v: StorageVolumeRow, newName: string): Promise<StorageVolumeRow> {
  validateVolumeName(newName);
  await assertUnused(db, v, 'Cannot rename');
  return bumpVolume(db, v.id, { name: newName });
}

/** Move to another pool (async: the reconciler moves the data). */
export async function moveVolume(
  tx: Tx,
  v: StorageVolumeRow,
  newPool: string,
  newName: string,
): Promise<StorageVolumeRow> {
  validateVolumeName(newName);
  const pool = await livePool(tx, newPool);
  validateConfig('storage volume', v.config, volumeKeyTable(pool.driver));
  await assertUnused(tx, v, 'Cannot move');
  return bumpVolume(tx, v.id, { pool: newPool, name: newName });
}

export async function markVolumeDeleting(db: DbOrTx, v: StorageVolumeRow): Promise<StorageVolumeRow> {
  await assertUnused(db, v, 'Cannot delete');
  return bumpVolume(db, v.id, { deletingAt: new Date() });
}

/**
 * Delete a pool's unpacked copy of an image (storage_images_delete): nothing uses it (containers are clones of
 * their own), so only the image-volume reconciler's removal follows.
 */
export async function markImageVolumeDeleting(db: DbOrTx, v: StorageVolumeRow): Promise<StorageVolumeRow> {
  if (v.type !== 'image') throw new ValidationError(`Storage volume "${v.name}" is not an image volume`);
  return bumpVolume(db, v.id, { deletingAt: new Date() });
}

export async function deleteVolumeRow(db: DbOrTx, id: string): Promise<void> {
  await db.delete(storageVolumes).where(eq(storageVolumes.id, id));
}

/** Volumes (live or deleting) on a pool — the pool reconciler's and observers' view. */
export async function volumesOnPool(db: DbOrTx, pool: string): Promise<StorageVolumeRow[]> {
  return db.select().from(storageVolumes).where(eq(storageVolumes.pool, pool));
}

/**
 * The row of an image unpacked on a pool (type `image`, named by its fingerprint, in `default`): inserted
 * if missing; returns its id. Written by the container reconciler (ensure-rootfs.ts), which alone makes them.
 */
export async function ensureImageVolumeRow(db: DbOrTx, pool: string, fingerprint: string): Promise<string> {
  await db
    .insert(storageVolumes)
    .values({ id: randomUUID(), pool, project: 'default', type: 'image', name: fingerprint, config: {} })
    .onConflictDoNothing();
  const [row] = await db
    .select({ id: storageVolumes.id })
    .from(storageVolumes)
    .where(
      and(
        eq(storageVolumes.pool, pool),
        eq(storageVolumes.project, 'default'),
        eq(storageVolumes.type, 'image'),
        eq(storageVolumes.name, fingerprint),
      ),
    );
  return row!.id;
}

/** The row listing a container's root volume (its id is the container's), following the container's name, project and pool. */
export async function recordContainerVolume(
  db: DbOrTx,
  v: { id: string; pool: string; project: string; name: string },
): Promise<void> {
  await db
    .insert(storageVolumes)
    .values({
      id: v.id,
      pool: v.pool,
      project: v.project,
      type: 'container',
      name: v.name,
      config: {},
      // Held where its container is.
      location: sql`(select ${containers.location} from ${containers} where ${containers.id} = ${v.id})`,
    })
    .onConflictDoUpdate({ target: storageVolumes.id, set: { name: v.name, project: v.project, pool: v.pool } });
}

/** The reconcile kind of image volumes (an image unpacked on a pool, shared by the containers made from it). */
export const IMAGE_VOLUME_KIND = 'image-volume';

/** The image volumes of an image, on every pool (to enqueue when the image is deleted). */
export async function imageVolumeIds(db: DbOrTx, fingerprint: string): Promise<string[]> {
  const rows = await db
    .select({ id: storageVolumes.id })
    .from(storageVolumes)
    .where(and(eq(storageVolumes.type, 'image'), eq(storageVolumes.name, fingerprint)));
  return rows.map((r) => r.id);
}

/** Custom and container volumes held by member `from` are held by `to` (image volumes are every member's). */
export async function relocateVolumes(tx: DbOrTx, from: string, to: string): Promise<void> {
  await tx
    .update(storageVolumes)
    .set({ location: to })
    .where(and(eq(storageVolumes.location, from), ne(storageVolumes.type, 'image')));
}
