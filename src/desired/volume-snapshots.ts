/** Custom volumes' snapshots (the volumeSnapshots table's one writer): reads, creation, rename, deletion. */
import { randomUUID } from 'node:crypto';
import { and, asc, eq, isNull } from 'drizzle-orm';
import type { DbOrTx } from '../db/types.ts';
import { ConflictError, NotFoundError, isUniqueViolation } from './errors.ts';
import { validateName } from './names.ts';
import { type StorageVolumeRow, type VolumeSnapshotRow, volumeSnapshots } from './schema/index.ts';

export async function listSnapshots(db: DbOrTx, volumeId: string): Promise<VolumeSnapshotRow[]> {
  return db
    .select()
    .from(volumeSnapshots)
    .where(and(eq(volumeSnapshots.volumeId, volumeId), isNull(volumeSnapshots.deletingAt)))
    .orderBy(asc(volumeSnapshots.createdAt), asc(volumeSnapshots.name));
}

/** Every snapshot row, including those being deleted (the reconciler's view). */
export async function listAllSnapshots(db: DbOrTx, volumeId: string): Promise<VolumeSnapshotRow[]> {
  return db
    .select()
    .from(volumeSnapshots)
    .where(eq(volumeSnapshots.volumeId, volumeId))
    .orderBy(asc(volumeSnapshots.createdAt));
}

export async function readSnapshot(db: DbOrTx, volumeId: string, name: string): Promise<VolumeSnapshotRow> {
  const [row] = await db
    .select()
    .from(volumeSnapshots)
    .where(
      and(eq(volumeSnapshots.volumeId, volumeId), eq(volumeSnapshots.name, name), isNull(volumeSnapshots.deletingAt)),
    );
  if (!row) throw new NotFoundError(`Storage volume snapshot "${name}" not found`);
  return row;
}

export async function insertSnapshot(
  tx: DbOrTx,
  v: StorageVolumeRow,
  name: string,
  description = '',
): Promise<VolumeSnapshotRow> {
  validateName('Snapshot', name);
  try {
    const [row] = await tx
      .insert(volumeSnapshots)
      .values({ id: randomUUID(), volumeId: v.id, name, description, config: {} })
      .returning();
    return row!;
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`Snapshot "${name}" already exists`);
    throw e;
  }
}

export async function renameSnapshot(tx: DbOrTx, s: VolumeSnapshotRow, newName: string): Promise<VolumeSnapshotRow> {
  validateName('Snapshot', newName);
  try {
    const [row] = await tx
      .update(volumeSnapshots)
      .set({ name: newName })
      .where(eq(volumeSnapshots.id, s.id))
      .returning();
    return row!;
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`Snapshot "${newName}" already exists`);
    throw e;
  }
}

export async function updateSnapshotDescription(
  db: DbOrTx,
  s: VolumeSnapshotRow,
  description: string,
): Promise<VolumeSnapshotRow> {
  const [row] = await db.update(volumeSnapshots).set({ description }).where(eq(volumeSnapshots.id, s.id)).returning();
  return row!;
}

export async function markSnapshotDeleting(tx: DbOrTx, s: VolumeSnapshotRow): Promise<void> {
  await tx.update(volumeSnapshots).set({ deletingAt: new Date() }).where(eq(volumeSnapshots.id, s.id));
}

export async function deleteSnapshotRow(db: DbOrTx, id: string): Promise<void> {
  await db.delete(volumeSnapshots).where(eq(volumeSnapshots.id, id));
}
