import { randomUUID } from 'node:crypto';
import { and, asc, eq, inArray, lt } from 'drizzle-orm';
import type { DbOrTx } from '../db/types.ts';
import { ConflictError, NotFoundError, isUniqueViolation } from './errors.ts';
import { validateName } from './names.ts';
import { containerBackups, containers, type ContainerBackupRow } from './schema/index.ts';

export async function listBackups(db: DbOrTx, containerId: string): Promise<ContainerBackupRow[]> {
  return db
    .select()
    .from(containerBackups)
    .where(eq(containerBackups.containerId, containerId))
    .orderBy(asc(containerBackups.createdAt), asc(containerBackups.name));
}

/** Backups of many containers at once (recursion=2 lists: one query). */
export async function backupsOf(db: DbOrTx, ids: string[]): Promise<Map<string, ContainerBackupRow[]>> {
  const out = new Map<string, ContainerBackupRow[]>();
  if (ids.length === 0) return out;
  for (const b of await db.select().from(containerBackups).where(inArray(containerBackups.containerId, ids)))
    out.set(b.containerId, [...(out.get(b.containerId) ?? []), b]);
  return out;
}

export async function readBackup(db: DbOrTx, containerId: string, name: string): Promise<ContainerBackupRow> {
  const [row] = await db
    .select()
    .from(containerBackups)
    .where(and(eq(containerBackups.containerId, containerId), eq(containerBackups.name, name)));
  if (!row) throw new NotFoundError(`Backup "${name}" not found`);
  return row;
}

/** The next free `backupN` name. */
export async function nextBackupName(db: DbOrTx, containerId: string): Promise<string> {
  const taken = new Set((await listBackups(db, containerId)).map((b) => b.name));
  let i = 0;
  while (taken.has(`backup${i}`)) i++;
  return `backup${i}`;
}

export async function insertBackup(
  db: DbOrTx,
  row: Omit<typeof containerBackups.$inferInsert, 'id'>,
): Promise<ContainerBackupRow> {
  validateName('Backup', row.name);
  try {
    const [out] = await db
      .insert(containerBackups)
      .values({ id: randomUUID(), ...row })
      .returning();
    return out!;
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`Backup "${row.name}" already exists`);
    throw e;
  }
}

export async function renameBackup(db: DbOrTx, b: ContainerBackupRow, name: string): Promise<ContainerBackupRow> {
  validateName('Backup', name);
  try {
    const [out] = await db.update(containerBackups).set({ name }).where(eq(containerBackups.id, b.id)).returning();
    return out!;
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`Backup "${name}" already exists`);
    throw e;
  }
}

export async function deleteBackupRow(db: DbOrTx, id: string): Promise<void> {
  await db.delete(containerBackups).where(eq(containerBackups.id, id));
}

/** Expired backups of the containers `node` holds (their files are on its host); every one without `node`. */
export async function expiredBackups(db: DbOrTx, now: Date, node?: string): Promise<ContainerBackupRow[]> {
  const expired = lt(containerBackups.expiresAt, now);
  if (node === undefined) return db.select().from(containerBackups).where(expired);
  const held = db.select({ id: containers.id }).from(containers).where(eq(containers.location, node));
  return db
    .select()
    .from(containerBackups)
    .where(and(expired, inArray(containerBackups.containerId, held)));
}
