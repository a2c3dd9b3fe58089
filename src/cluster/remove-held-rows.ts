import { and, eq } from 'drizzle-orm';
import type { Db } from '../db/types.ts';
import { deleteContainerRows } from '../desired/delete-container-rows.ts';
import { containers, storageVolumes } from '../desired/schema/index.ts';
import { deleteVolumeRow } from '../desired/storage-volumes.ts';

/**
 * A dead member is removed with force: the rows of the containers and custom volumes it held go (with their
 * snapshots, backups and runtime rows), in one transaction, as LXD drops a force-removed member's instances.
 * Nothing is done on any host: the member's host is gone, or will be wiped by whoever rebuilds it.
 */
export async function removeHeldRows(db: Db, member: string): Promise<void> {
  await db.transaction(async (tx) => {
    const held = await tx.select({ id: containers.id }).from(containers).where(eq(containers.location, member));
    for (const c of held) await deleteContainerRows(tx, c.id);
    const vols = await tx
      .select({ id: storageVolumes.id })
      .from(storageVolumes)
      .where(and(eq(storageVolumes.location, member), eq(storageVolumes.type, 'custom')));
    for (const v of vols) await deleteVolumeRow(tx, v.id);
  });
}
