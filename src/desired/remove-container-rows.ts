import { eq } from 'drizzle-orm';
import type { Db } from '../db/types.ts';
import { containerRuntime, containers, storageVolumes } from './schema/index.ts';

/**
 * The last step of a container's removal, after its teardown on the host: its root volume's row, its
 * runtime row and its own row, in one transaction (one commit; on PostgreSQL the three deletes go out
 * together, pipelined on the transaction's connection). The container row is the level: while it is
 * there the removal is retried, so the others never outlive it.
 */
export async function removeContainerRows(db: Db, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    await Promise.all([tx.delete(storageVolumes).where(eq(storageVolumes.id, id)), tx.delete(containerRuntime).where(eq(containerRuntime.id, id)), tx.delete(containers).where(eq(containers.id, id))]);
  });
}
