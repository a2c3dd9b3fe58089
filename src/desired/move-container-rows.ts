import { and, eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../db/types.ts';
import { ConflictError } from './errors.ts';
import { containers, storageVolumes, type ContainerRow } from './schema/index.ts';

/**
 * A container moved to another member: its one row (the same id, name and snapshots) is held by `to` from
 * now on, and so is its root volume's row, in the caller's transaction. Applied only if the row is still
 * where the move began and unchanged since (`generation`): a write during the transfer (a start, an edit)
 * fails the move instead of being lost.
 */
export async function moveContainerRows(
  tx: DbOrTx,
  m: { id: string; from: string; to: string; generation: number },
): Promise<ContainerRow> {
  const [row] = await tx
    .update(containers)
    .set({ location: m.to, generation: sql`${containers.generation} + 1` })
    .where(and(eq(containers.id, m.id), eq(containers.location, m.from), eq(containers.generation, m.generation)))
    .returning();
  if (!row) throw new ConflictError('The container changed while it was being moved: the move was not applied');
  await tx
    .update(storageVolumes)
    .set({ location: m.to })
    .where(and(eq(storageVolumes.id, m.id), eq(storageVolumes.type, 'container')));
  return row;
}

/** Containers held by member `from` are held by `to` (`from` '': rows written before members existed). */
export async function relocateContainers(tx: DbOrTx, from: string, to: string): Promise<number> {
  const rows = await tx
    .update(containers)
    .set({ location: to })
    .where(eq(containers.location, from))
    .returning({ id: containers.id });
  return rows.length;
}
