/** Storage volumes read for the API: listed, one by name or id, who uses one; their URL and name rule. */
import { and, asc, eq, isNull } from 'drizzle-orm';
import type { DbOrTx } from '../db/types.ts';
import { NotFoundError } from './errors.ts';
import { validateName } from './names.ts';
import { type StoragePoolRow, type StorageVolumeRow, storageVolumes } from './schema/index.ts';
import { readPool } from './storage-pools.ts';
import { requireUsablePool } from './pool-pending.ts';
import { usedByReader } from './used-by.ts';

export function volumeUrl(v: { pool: string; type: string; name: string; project: string }): string {
  const q = v.project === 'default' ? '' : `?project=${encodeURIComponent(v.project)}`;
  return `/1.0/storage-pools/${encodeURIComponent(v.pool)}/volumes/${v.type}/${encodeURIComponent(v.name)}${q}`;
}

export function validateVolumeName(name: unknown): string {
  return validateName('Storage volume', name);
}

/** A usable (not deleting) pool. */
export async function livePool(db: DbOrTx, name: string): Promise<StoragePoolRow> {
  return requireUsablePool(await readPool(db, name));
}

export async function listVolumes(
  db: DbOrTx,
  pool: string,
  project: string,
  type?: string,
): Promise<StorageVolumeRow[]> {
  await livePool(db, pool);
  const conds = [eq(storageVolumes.pool, pool), eq(storageVolumes.project, project), isNull(storageVolumes.deletingAt)];
  if (type) conds.push(eq(storageVolumes.type, type));
  return db
    .select()
    .from(storageVolumes)
    .where(and(...conds))
    .orderBy(asc(storageVolumes.type), asc(storageVolumes.name));
}

export async function readVolume(
  db: DbOrTx,
  pool: string,
  project: string,
  type: string,
  name: string,
): Promise<StorageVolumeRow> {
  const [row] = await db
    .select()
    .from(storageVolumes)
    .where(
      and(
        eq(storageVolumes.pool, pool),
        eq(storageVolumes.project, project),
        eq(storageVolumes.type, type),
        eq(storageVolumes.name, name),
        isNull(storageVolumes.deletingAt),
      ),
    );
  if (!row) throw new NotFoundError(`Storage volume "${name}" not found`);
  return row;
}

export async function readVolumeById(db: DbOrTx, id: string): Promise<StorageVolumeRow | undefined> {
  const [row] = await db.select().from(storageVolumes).where(eq(storageVolumes.id, id));
  return row;
}

/** Containers (their profiles count) and profiles whose disk devices attach this custom volume (see used-by.ts). */
export async function volumeUsedBy(db: DbOrTx, v: StorageVolumeRow): Promise<string[]> {
  return usedByReader(db).volume(v);
}
