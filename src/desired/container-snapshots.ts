import { randomUUID } from 'node:crypto';
import { and, asc, eq, inArray, isNull } from 'drizzle-orm';
import type { DbOrTx } from '../db/types.ts';
import { ConflictError, NotFoundError, isUniqueViolation } from './errors.ts';
import { validateName } from './names.ts';
import { containerSnapshots, type ContainerRow, type ContainerSnapshotRow } from './schema/index.ts';

export function validateSnapshotName(name: unknown): string {
  return validateName('Snapshot', name);
}

/** Live snapshots (not being deleted), oldest first. */
export async function listContainerSnapshots(db: DbOrTx, containerId: string): Promise<ContainerSnapshotRow[]> {
  return db
    .select()
    .from(containerSnapshots)
    .where(and(eq(containerSnapshots.containerId, containerId), isNull(containerSnapshots.deletingAt)))
    .orderBy(asc(containerSnapshots.createdAt), asc(containerSnapshots.name));
}

/** Live snapshots of many containers at once (for recursion=2 lists: one query). */
export async function snapshotsOf(db: DbOrTx, containerIds: string[]): Promise<Map<string, ContainerSnapshotRow[]>> {
  const out = new Map<string, ContainerSnapshotRow[]>();
  if (containerIds.length === 0) return out;
  const rows = await db
    .select()
    .from(containerSnapshots)
    .where(and(inArray(containerSnapshots.containerId, containerIds), isNull(containerSnapshots.deletingAt)))
    .orderBy(asc(containerSnapshots.createdAt));
  for (const r of rows) out.set(r.containerId, [...(out.get(r.containerId) ?? []), r]);
  return out;
}

/** Every snapshot row, including those being deleted (the reconciler's view). */
export async function allContainerSnapshots(db: DbOrTx, containerId: string): Promise<ContainerSnapshotRow[]> {
  return db
    .select()
    .from(containerSnapshots)
    .where(eq(containerSnapshots.containerId, containerId))
    .orderBy(asc(containerSnapshots.createdAt));
}

export async function readContainerSnapshot(
  db: DbOrTx,
  containerId: string,
  name: string,
): Promise<ContainerSnapshotRow> {
  const [row] = await db
    .select()
    .from(containerSnapshots)
    .where(
      and(
        eq(containerSnapshots.containerId, containerId),
        eq(containerSnapshots.name, name),
        isNull(containerSnapshots.deletingAt),
      ),
    );
  if (!row) throw new NotFoundError(`Snapshot "${name}" not found`);
  return row;
}

export async function nextSnapshotName(db: DbOrTx, containerId: string): Promise<string> {
  const taken = new Set((await allContainerSnapshots(db, containerId)).map((s) => s.name));
  let i = 0;
  while (taken.has(`snap${i}`)) i++;
  return `snap${i}`;
}

/** Record a snapshot of the container's current configuration (the reconciler snapshots the volume). */
export async function insertContainerSnapshot(
  tx: DbOrTx,
  c: ContainerRow,
  name: string,
): Promise<ContainerSnapshotRow> {
  validateSnapshotName(name);
  try {
    const [row] = await tx
      .insert(containerSnapshots)
      .values({
        id: randomUUID(),
        containerId: c.id,
        name,
        architecture: c.architecture,
        ephemeral: c.ephemeral,
        profiles: c.profiles,
        config: c.config,
        devices: c.devices,
      })
      .returning();
    return row!;
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`Snapshot "${name}" already exists`);
    throw e;
  }
}

/**
 * Snapshot rows for a copy of container `fromId` (its live snapshots, oldest first, with their names,
 * configuration and creation times): the ids they will have under the copy, before it exists.
 */
export async function plannedSnapshotCopies(
  tx: DbOrTx,
  fromId: string,
): Promise<{ from: ContainerSnapshotRow; to: string }[]> {
  const snaps = (await allContainerSnapshots(tx, fromId)).filter((s) => !s.deletingAt);
  return snaps
    .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())
    .map((from) => ({ from, to: randomUUID() }));
}

type Devices = Record<string, Record<string, string>>;

/**
 * A snapshot's own devices with its root disk on `pool`: a copied snapshot follows its new container's
 * pool (as LXD does), so restoring it keeps the container where it is. The root disk is the one of the
 * snapshot's expanded devices (`expanded`); a profile's root disk becomes a local one with the new pool.
 */
export function withRootPool(local: Devices, expanded: Devices, pool: string): Devices {
  const root = Object.entries(expanded).find(([, d]) => d.type === 'disk' && d.path === '/');
  if (!root || root[1].pool === pool) return local;
  const [key, dev] = root;
  return { ...local, [key]: { ...(local[key] ?? dev), pool } };
}

/**
 * Insert the planned snapshot rows under the new container `toId` (the reconciler copies their data),
 * their root disks on `pool`, the new container's (`expand` gives a snapshot's expanded devices).
 */
export async function insertSnapshotCopies(
  tx: DbOrTx,
  toId: string,
  planned: { from: ContainerSnapshotRow; to: string }[],
  pool: string,
  expand: (s: ContainerSnapshotRow) => Promise<Devices>,
): Promise<void> {
  if (planned.length === 0) return;
  const rows = [];
  for (const { from, to } of planned) {
    rows.push({
      id: to,
      containerId: toId,
      name: from.name,
      architecture: from.architecture,
      ephemeral: from.ephemeral,
      profiles: from.profiles,
      config: from.config,
      devices: withRootPool(from.devices, await expand(from), pool),
      createdAt: from.createdAt,
    });
  }
  await tx.insert(containerSnapshots).values(rows);
}

export async function renameContainerSnapshot(tx: DbOrTx, s: ContainerSnapshotRow, name: string): Promise<void> {
  validateSnapshotName(name);
  try {
    await tx.update(containerSnapshots).set({ name }).where(eq(containerSnapshots.id, s.id));
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`Snapshot "${name}" already exists`);
    throw e;
  }
}

export async function markContainerSnapshotDeleting(tx: DbOrTx, s: ContainerSnapshotRow): Promise<void> {
  await tx.update(containerSnapshots).set({ deletingAt: new Date() }).where(eq(containerSnapshots.id, s.id));
}

export async function deleteContainerSnapshotRow(db: DbOrTx, id: string): Promise<void> {
  await db.delete(containerSnapshots).where(eq(containerSnapshots.id, id));
}

/** Snapshot rows restored from a backup under container `containerId` (the reconciler unpacks their data). */
export async function insertRestoredSnapshots(
  tx: DbOrTx,
  containerId: string,
  snaps: {
    id: string;
    name: string;
    architecture: string;
    ephemeral: boolean;
    profiles: string[];
    config: Record<string, string>;
    devices: Devices;
    createdAt: Date;
  }[],
): Promise<void> {
  if (snaps.length === 0) return;
  for (const s of snaps) validateSnapshotName(s.name);
  await tx.insert(containerSnapshots).values(snaps.map((s) => ({ ...s, containerId })));
}
